"""The network and host rules read signs: what each sign captures, and the pipeline on them.

The rules under ``rules/net`` and ``rules/host/resources.py`` hold no
pattern; these tests pin the parts of their signs that carry a decision (a
named capture, a bound that keeps a pattern linear, one sign per variable)
and run the whole pipeline on evidence that goes through them.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from nccl_doctor.evidence.reader import read_paths
from nccl_doctor.facts.net import virtual_interface
from nccl_doctor.facts.settings import env_values
from nccl_doctor.facts.span import span_of
from nccl_doctor.facts.store import Facts
from nccl_doctor.findings import Finding
from nccl_doctor.pipeline import facts_of
from nccl_doctor.rules.net import ib_config, socket_interface
from nccl_doctor.signs.host import NCCL_OWN, SHM_EXHAUSTED, SIGKILL
from nccl_doctor.signs.net import NO_SOCKET_INTERFACE


def _facts(tmp_path: Path, text: str, name: str = "job.log") -> Facts:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return facts_of(read_paths([str(path)]))


def _only(findings: list[Finding]) -> Finding:
    assert len(findings) == 1, findings
    return findings[0]


def test_one_line_setting_several_variables_gives_each_its_value(tmp_path: Path) -> None:
    facts = _facts(
        tmp_path,
        "$ NCCL_DEBUG=INFO NCCL_SOCKET_IFNAME=enp6s0 NCCL_IB_HCA=mlx5_0,mlx5_1 "
        "GLOO_SOCKET_IFNAME=enp6s0 torchrun --nnodes 2 --nproc-per-node 8 train.py\n",
    )
    assert [v for v, _ in env_values(facts, "NCCL_SOCKET_IFNAME")] == ["enp6s0"]
    assert [v for v, _ in env_values(facts, "NCCL_IB_HCA")] == ["mlx5_0,mlx5_1"]
    assert [v for v, _ in env_values(facts, "GLOO_SOCKET_IFNAME")] == ["enp6s0"]
    assert env_values(facts, "NCCL_IB_GID_INDEX") == []
    span = span_of(facts)
    assert (span.multi, span.machine, span.why) == (True, True, "launched with --nnodes 2")


def test_a_variable_whose_name_ends_another_is_not_read_as_it(tmp_path: Path) -> None:
    facts = _facts(tmp_path, "export MY_NCCL_IB_HCA=mlx5_9 XNCCL_SOCKET_IFNAME=eth9\n")
    assert env_values(facts, "NCCL_IB_HCA") == []
    assert env_values(facts, "NCCL_SOCKET_IFNAME") == []


def test_machine_values_leave_out_a_sentence_naming_the_setting(tmp_path: Path) -> None:
    """A sentence that names a setting is a person's account (a workaround that worked);
    the job's own value is what its command, export or NCCL's echo sets."""
    facts = _facts(
        tmp_path,
        "It works when I set NCCL_CUMEM_ENABLE=0 by hand.\n"
        "mpirun -np 16 -x NCCL_CUMEM_ENABLE=1 ./build/alltoall_perf -b 8 -e 1G\n",
    )
    assert [(v, c.line) for v, c in env_values(facts, "NCCL_CUMEM_ENABLE")] == [
        ("1", 2),
        ("0", 1),
    ]
    assert [(v, c.line) for v, c in env_values(facts, "NCCL_CUMEM_ENABLE", machine=True)] == [
        ("1", 2)
    ]


def test_the_gid_index_comes_from_the_warning_when_no_setting_names_it(tmp_path: Path) -> None:
    facts = _facts(
        tmp_path,
        "node-a:1120:1187 [0] NCCL INFO NET/IB : Using [0]mlx5_0:1/RoCE ; OOB ens3:10.20.0.11<0>\n"
        "node-a:1120:1187 [0] NCCL INFO comm 0x55d1c3a0 rank 0 nRanks 16 nNodes 2 localRanks 8 "
        "localRank 0 MNNVL 0\n"
        "node-a:1120:1203 [0] misc/ibvwrap.cc:376 NCCL WARN Call to ibv_modify_qp failed with 22 "
        "Invalid argument, on dev mlx5_0:1, curr state INIT, next state RTR, local GID index 3, "
        "local GID ::ffff:10.20.0.11, remote GID ::ffff:10.20.0.12\n",
    )
    found = _only(ib_config.check(facts))
    assert "in most cases the wrong GID index (GID index 3)" in found.summary
    assert "on node-a" in found.summary


def test_an_init_error_reason_on_a_pinned_multi_host_job(tmp_path: Path) -> None:
    facts = _facts(
        tmp_path,
        "nodeA:2101:2101 [0] NCCL INFO Bootstrap : Using enp6s0:10.0.0.11<0>\n"
        "nodeB:3302:3302 [0] NCCL INFO NCCL_SOCKET_IFNAME set by environment to enp6s0\n"
        "[rank8]: Traceback (most recent call last):\n"
        '[rank8]:   File "/work/train.py", line 40, in <module>\n'
        "[rank8]:     dist.barrier()\n"
        "[rank8]: torch.distributed.DistBackendError: NCCL error in: "
        "../torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:1970, internal error - please "
        "report this issue to the NCCL developers, NCCL version 2.19.3\n",
    )
    found = _only(socket_interface.check(facts))
    assert found.summary.startswith("NCCL_SOCKET_IFNAME=enp6s0 pins NCCL's bootstrap")
    assert "'internal error - please report this issue to the NCCL developers'" in found.summary


def test_gloo_is_named_by_the_unable_capture(tmp_path: Path) -> None:
    facts = _facts(
        tmp_path,
        "[rank1]: RuntimeError: [enforce fail at ../third_party/gloo/gloo/transport/tcp/"
        "device.cc:83] ifa != nullptr. Unable to find address for: eth7\n",
    )
    hit = facts.seen(NO_SOCKET_INTERFACE)[0]
    assert (hit.match["unable"], hit.match["gloo"]) == ("Unable to find address for: eth7", "eth7")
    found = _only(socket_interface.check(facts))
    assert found.summary.startswith("Gloo found no usable socket interface (GLOO_SOCKET_IFNAME")
    nccl = _facts(
        tmp_path,
        "nodeB:3302:3302 [0] bootstrap.cc:51 NCCL WARN Bootstrap : no socket interface found\n",
        "nccl.log",
    )
    assert nccl.seen(NO_SOCKET_INTERFACE)[0].match["unable"] is None
    assert _only(socket_interface.check(nccl)).summary.startswith("NCCL found no usable")


@pytest.mark.parametrize(
    ("name", "virtual"),
    [
        ("lo", True),
        ("docker0", True),
        ("virbr0", True),
        ("veth3a9c1f2", True),
        ("br-1f2e3d4c5b6a", True),
        ("enp6s0", False),
        ("ib0", False),
        ("lo0x", False),
        ("eth0", False),
    ],
)
def test_virtual_interfaces_are_told_from_routable_ones(name: str, virtual: bool) -> None:
    assert virtual_interface(name) is virtual


@pytest.mark.parametrize(
    "line",
    [
        "    exitcode  : -9 (pid: 31337)",
        "Process 3 terminated with exit code -9",
        "subprocess exit code:-9",
        "Signal 9 (SIGKILL) received by PID 4242",
    ],
)
def test_a_kill_by_sigkill_is_seen_in_each_form(tmp_path: Path, line: str) -> None:
    assert len(_facts(tmp_path, line + "\n").seen(SIGKILL)) == 1


def test_a_full_dev_shm_is_seen_and_an_nccl_line_is_set_apart(tmp_path: Path) -> None:
    facts = _facts(
        tmp_path,
        "ERROR: write to /dev/shm/torch_8812_3396 failed: No space left on device\n"
        "node1:77:77 [0] NCCL WARN Error while creating shared memory segment "
        "/dev/shm/nccl-Ab12Cd (size 9637888): No space left on device\n",
    )
    shm = facts.seen(SHM_EXHAUSTED)
    assert {h.cite.line for h in shm} == {1, 2}
    assert {h.cite.line for h in shm if h.said not in facts.lines_of(NCCL_OWN)} == {1}


@pytest.mark.parametrize(
    ("said", "value"),
    [
        ("No tuning except NCCL_SOCKET_IFNAME=ib0. nnodes=64 in Slurm.", "ib0"),
        ("We pinned it (NCCL_SOCKET_IFNAME=eth0) on both nodes.", "eth0"),
        ("export NCCL_SOCKET_IFNAME=^docker0,lo", "^docker0,lo"),
        ("NCCL_IB_HCA=mlx5_0:1,mlx5_1:1; then it ran", "mlx5_0:1,mlx5_1:1"),
    ],
)
def test_a_sentences_stop_is_not_part_of_the_value(tmp_path: Path, said: str, value: str) -> None:
    name = said.split("=", maxsplit=1)[0].rsplit(maxsplit=1)[-1].lstrip("(")
    assert [v for v, _ in env_values(_facts(tmp_path, said + "\n"), name)] == [value]


_GRAPH_FAILURE = (
    "nid001873:91233:91590 [0] NCCL INFO comm 0x55f1e7a0 rank 256 nRanks 512 nNodes 64 "
    "localRanks 8 localRank 0 MNNVL 0\n"
    "nid001873:91233:91590 [0] NCCL WARN Internal error : tree already has 3 children\n"
    "nid001873:91233:91590 [0] NCCL INFO {site} -> 3\n"
    "nid001873:91233:91590 [0] NCCL INFO init.cc:1102 -> 3\n"
    "[rank256]: torch.distributed.DistBackendError: NCCL error in: ../torch/csrc/distributed/"
    "c10d/ProcessGroupNCCL.cpp:1970, internal error - please report this issue to the NCCL "
    "developers, NCCL version 2.20.3\n"
    "No NCCL_* tuning env vars except NCCL_DEBUG and NCCL_SOCKET_IFNAME=ib0.\n"
)


def test_a_pinned_interface_is_no_cause_of_a_failure_past_bootstrap(tmp_path: Path) -> None:
    # the chain starts in graph/connect.cc: the ranks had met over the interface
    facts = _facts(tmp_path, _GRAPH_FAILURE.format(site="graph/connect.cc:291"))
    assert socket_interface.check(facts) == []


def test_a_pinned_interface_stays_where_bootstrap_failed(tmp_path: Path) -> None:
    facts = _facts(tmp_path, _GRAPH_FAILURE.format(site="bootstrap.cc:256"))
    found = _only(socket_interface.check(facts))
    assert found.summary.startswith("NCCL_SOCKET_IFNAME=ib0 pins NCCL's bootstrap")
