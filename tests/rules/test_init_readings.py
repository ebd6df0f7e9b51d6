"""Three readings of a failed init: a bootstrap message of another size before any transport
(a peer on another NCCL release, not NCCL's bug), a duplicate GPU reported from two machines
(host identity, not two ranks on one GPU), and a launch's node count told in a sentence apart
from the launcher's. Each with the case where it must stay silent."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.helpers import critical_ids, diagnose_text

_TRUNCATED = (
    "gpua01:20417:20417 [0] NCCL INFO Bootstrap : Using ens1f0:10.1.4.21<0>\n"
    "NCCL version 2.19.3+cuda12.3\n"
    "gpua01:20417:20417 [0] bootstrap.cc:77 NCCL WARN Message truncated : received 96 bytes "
    "instead of 64\n"
    "{chain}"
    "torch.distributed.DistBackendError: NCCL error in: ../torch/csrc/distributed/c10d/"
    "ProcessGroupNCCL.cpp:1691, internal error - please report this issue to the NCCL "
    "developers, NCCL version 2.19.3\n"
    "ncclInternalError: Internal check failed.\n"
    "Last error:\n"
    "Message truncated : received 96 bytes instead of 64\n"
)


def test_a_truncated_bootstrap_message_at_init_is_another_release(tmp_path: Path) -> None:
    report = diagnose_text(tmp_path, _TRUNCATED.format(chain=""))
    assert "nccl.internal" not in critical_ids(report)
    assert report.top(1) == ["nccl.version_mismatch"]
    assert any("another size at init" in r for r in report.hypotheses[0].for_)


def test_a_truncated_message_while_transports_connect_stays_internal(tmp_path: Path) -> None:
    chain = (
        "gpua01:20417:6900 [0] NCCL INFO bootstrap.cc:554 -> 3\n"
        "gpua01:20417:6900 [0] NCCL INFO transport.cc:204 -> 3\n"
        "gpua01:20417:6900 [0] NCCL INFO group.cc:110 -> 3\n"
    )
    report = diagnose_text(tmp_path, _TRUNCATED.format(chain=chain))
    assert critical_ids(report) == ["nccl.internal"]


def _duplicate(second_host: str) -> str:
    return (
        "llm-pt-master-0:88:88 [0] NCCL INFO NCCL_HOSTID set by environment to $(POD_NAME)\n"
        "llm-pt-master-0:88:88 [0] init.cc:943 NCCL WARN Duplicate GPU detected : rank 0 and "
        "rank 8 both on CUDA device 18000\n"
        f"{second_host}:91:91 [0] init.cc:943 NCCL WARN Duplicate GPU detected : rank 8 and rank "
        "0 both on CUDA device 18000\n"
        "torch.distributed.DistBackendError: NCCL error in: ../torch/csrc/distributed/c10d/"
        "NCCLUtils.hpp:317, invalid usage (run with NCCL_DEBUG=WARN for details), NCCL version "
        "2.21.5\n"
    )


def test_a_duplicate_gpu_told_by_two_machines_is_host_identity(tmp_path: Path) -> None:
    report = diagnose_text(tmp_path, _duplicate("llm-pt-worker-0"))
    assert critical_ids(report) == ["nccl.host_identity"]
    [found] = report.findings
    assert "from processes on 2 machines (llm-pt-master-0, llm-pt-worker-0)" in found.summary
    assert "NCCL_HOSTID is set ('$(POD_NAME)')" in found.summary
    assert dict(report.folded)["nccl.host_identity"][0].id == "nccl.duplicate_gpu"


def test_a_duplicate_gpu_on_one_machine_stays_two_ranks_on_one_gpu(tmp_path: Path) -> None:
    report = diagnose_text(tmp_path, _duplicate("llm-pt-master-0"))
    assert critical_ids(report) == ["nccl.duplicate_gpu"]


def _one_refusal(second_id: str) -> str:
    return (
        "trainer-worker-0:231:231 [0] NCCL INFO NCCL_HOSTID set by environment to $(NODE_NAME)\n"
        f"trainer-worker-1:198:198 [0] NCCL INFO NCCL_HOSTID set by environment to {second_id}\n"
        "trainer-worker-1:198:318 [0] init.cc:916 NCCL WARN Duplicate GPU detected : rank 8 and "
        "rank 0 both on CUDA device 18000\n"
    )


def test_one_hostid_echoed_by_two_machines_makes_a_refusal_on_one_host_identity(
    tmp_path: Path,
) -> None:
    report = diagnose_text(tmp_path, _one_refusal("$(NODE_NAME)"))
    assert critical_ids(report) == ["nccl.host_identity"]
    assert "NCCL_HOSTID has one value on 2 machines (trainer-worker-0, trainer-worker-1)" in (
        report.findings[0].summary
    )
    # each machine its own value: the refusal is two ranks on one GPU of one machine
    report = diagnose_text(tmp_path, _one_refusal("h100-rc-09"))
    assert critical_ids(report) == ["nccl.duplicate_gpu"]


_TOGETHER = "Two nodes, 4 GPUs each, no IB. {said} NCCL error at init: unhandled system error.\n"


def test_a_launch_sentence_without_a_node_rank_is_a_warning(tmp_path: Path) -> None:
    said = "We start both with torchrun --nnodes 2 --nproc_per_node 4 train.py on each node."
    report = diagnose_text(tmp_path, _TOGETHER.format(said=said))
    assert any(
        f.id == "launch.rendezvous" and "gives no --node_rank" in f.summary for f in report.findings
    )


def test_a_node_count_in_another_sentence_is_no_launch(tmp_path: Path) -> None:
    said = (
        "Each node alone trains with torchrun --nproc_per_node 4. Together (--nnodes 2) it fails."
    )
    report = diagnose_text(tmp_path, _TOGETHER.format(said=said))
    assert all("gives no --node_rank" not in f.summary for f in report.findings)


_ONE_NAME = (
    "localhost:2011:2011 [0] NCCL INFO Bootstrap : Using eth0:10.2.0.11<0>\n"
    "localhost:1893:1893 [0] NCCL INFO Bootstrap : Using eth0:10.2.0.12<0>\n"
    "NCCL version 2.21.5+cuda12.4\n"
    "{dup}"
    "[rank8]: torch.distributed.DistBackendError: NCCL error in: /pytorch/torch/csrc/distributed/"
    "c10d/NCCLUtils.hpp:268, invalid usage (run with NCCL_DEBUG=WARN for details), NCCL "
    "version 2.21.5\n"
)


def test_one_hostname_on_two_addresses_beside_a_duplicate_gpu_is_the_cause(
    tmp_path: Path,
) -> None:
    dup = (
        "localhost:1893:2110 [0] NCCL WARN Duplicate GPU detected : rank 8 and rank 0 both on "
        "CUDA device 7000\n"
    )
    report = diagnose_text(tmp_path, _ONE_NAME.format(dup=dup))
    assert critical_ids(report) == ["nccl.host_identity"]
    assert "refuses the same GPU slot of two machines" in report.findings[0].summary


def test_one_hostname_on_two_addresses_alone_is_a_warning(tmp_path: Path) -> None:
    report = diagnose_text(tmp_path, _ONE_NAME.format(dup=""))
    [found] = [f for f in report.findings if f.id == "nccl.host_identity"]
    assert found.severity.value == "warning"


_PODS = (
    "Kubeflow PyTorchJob, 2 pods on 2 different H100 nodes. Each pod alone works.\n"
    "sft-worker-0:112:301 [0] NCCL INFO comm 0x55d0a4e1c2b0 rank 0 nRanks 16 nNodes 1 "
    "localRanks 16 localRank 0 MNNVL 0\n"
    "$ kubectl exec sft-worker-0 -- sh -c 'env | grep ^NCCL | sort'\n"
    "NCCL_DEBUG=INFO\n"
    "{hostid}"
    "NCCL_SOCKET_IFNAME=net1\n"
)


def test_nccl_hostid_set_beside_one_node_for_several_machines_is_the_cause(
    tmp_path: Path,
) -> None:
    report = diagnose_text(tmp_path, _PODS.format(hostid="NCCL_HOSTID=llm-sft\n"))
    assert critical_ids(report) == ["nccl.host_identity"]
    assert "NCCL_HOSTID is set ('llm-sft')" in report.findings[0].summary


def test_one_node_for_several_machines_in_words_alone_is_no_finding(tmp_path: Path) -> None:
    report = diagnose_text(tmp_path, _PODS.format(hostid=""))
    assert "nccl.host_identity" not in [f.id for f in report.findings]


_TWO_HOSTS = (
    "job-a-worker-0:88:201 [0] NCCL INFO comm 0x55d0c1e2f7a0 rank 0 nRanks 8 nNodes 1 "
    "localRanks 8 localRank 0 MNNVL 0\n"
    "job-a-worker-0:88:201 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] via P2P/CUMEM/read\n"
    "{other}:91:205 [0] NCCL INFO comm 0x5612e90a1b30 rank {rank} nRanks 8 nNodes 1 "
    "localRanks 8 localRank {rank} MNNVL 0\n"
    "Then nothing moves; the watchdog times out after 30 minutes.\n"
)


def test_one_world_printed_from_two_hosts_as_one_node_is_the_host_identity(
    tmp_path: Path,
) -> None:
    """No commId in the paste: the ranks each host prints (0 there, 4 here) are of one world of
    8, and both say nNodes 1."""
    report = diagnose_text(tmp_path, _TWO_HOSTS.format(other="job-a-worker-1", rank=4))
    assert critical_ids(report) == ["nccl.host_identity"]
    assert report.findings[0].summary == (
        "NCCL reports nNodes 1 for the communicator of 8 ranks whose processes run on 2 hosts "
        "(job-a-worker-0, job-a-worker-1)"
    )


@pytest.mark.parametrize(
    ("other", "rank"),
    [
        ("job-a-worker-1", 0),  # rank 0 on both: two single-node runs pasted together
        ("job-a-worker-0", 4),  # one host
    ],
)
def test_two_runs_or_one_host_are_no_world_across_hosts(
    tmp_path: Path, other: str, rank: int
) -> None:
    report = diagnose_text(tmp_path, _TWO_HOSTS.format(other=other, rank=rank))
    assert "nccl.host_identity" not in critical_ids(report)
