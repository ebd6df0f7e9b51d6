"""What an nccl-tests run says about the job: its world size, no application code, and a
network NCCL looked for and did not find. Whole pipeline on realistic output."""

from __future__ import annotations

from pathlib import Path

from nccl_doctor.differential.context import context_of
from nccl_doctor.evidence.reader import read_paths
from nccl_doctor.facts.job import world
from nccl_doctor.facts.store import Facts
from nccl_doctor.pipeline import facts_of
from tests.helpers import diagnose_text

#: nccl-tests' header line, as it prints it
_HEADER = (
    "# nThread 1 nGpus 1 minBytes 8 maxBytes 134217728 step: 2(factor) warmup iters: 5"
    " iters: 20 agg iters: 1 validation: 1 graph: 0\n"
)
_SOCKETS = (
    "box:69438:69444 [0] NCCL INFO NET/Socket : Using [0]enp3s0f0:10.50.56.33<0>"
    " [1]br-50a6a39f12ff:172.18.0.1<0>\n"
)

_ONE_GPU_HANG = f"""\
The test hangs on my 4-GPU machine, even when running with a single GPU.
```
$ ./build/all_reduce_perf -b 8 -e 128M -f 2 -g 1
{_HEADER}#
# Using devices
#  Rank  0 Group  0 Pid  69438 on     box device  0 [0x01] NVIDIA RTX A6000
box:69438:69438 [0] NCCL INFO Bootstrap : Using enp3s0f0:10.50.56.33<0>
NCCL version 2.21.5+cuda12.4
box:69438:69444 [0] NCCL INFO NET/IB : No device found.
{_SOCKETS}box:69438:69444 [0] NCCL INFO Using network Socket
```
"""

_FOUR_RANKS = f"""\
{_HEADER}#
# Using devices
#  Rank  0 Group  0 Pid  1001 on     box device  0 [0x01] NVIDIA A100-SXM4-80GB
#  Rank  1 Group  0 Pid  1002 on     box device  1 [0x41] NVIDIA A100-SXM4-80GB
#  Rank  2 Group  0 Pid  1003 on     box device  2 [0x81] NVIDIA A100-SXM4-80GB
#  Rank  3 Group  0 Pid  1004 on     box device  3 [0xc1] NVIDIA A100-SXM4-80GB
"""


def _facts(tmp_path: Path, text: str) -> Facts:
    path = tmp_path / "out.txt"
    path.write_text(text)
    return facts_of(read_paths([str(path)]))


def test_nccl_tests_device_list_gives_the_world_size(tmp_path: Path) -> None:
    assert world(_facts(tmp_path, _FOUR_RANKS)).size == 4
    assert world(_facts(tmp_path, _ONE_GPU_HANG)).size == 1


def test_a_one_gpu_benchmark_hang_is_neither_peer_transport_nor_application(
    tmp_path: Path,
) -> None:
    facts = _facts(tmp_path, _ONE_GPU_HANG)
    ctx = context_of(facts)
    assert (ctx.benchmark, ctx.local_ranks, ctx.ib) == (True, 1, False)
    top = diagnose_text(tmp_path, _ONE_GPU_HANG).top(3)
    assert top[0] == "net.socket_interface"
    assert not {"nccl.p2p", "nccl.shm", "app.hang", "app.collective_mismatch"} & set(top)


def test_a_training_hang_keeps_the_application_in_view(tmp_path: Path) -> None:
    report = diagnose_text(
        tmp_path, "Training with DDP on 4 GPUs always hangs at the end of the first epoch.\n"
    )
    assert report.top(1) == ["app.hang"]


_NO_ROUTE = (
    "torch.distributed.DistBackendError: NCCL error in: ../torch/csrc/distributed/c10d/"
    "ProcessGroupNCCL.cpp:1333, unhandled system error (run with NCCL_DEBUG=INFO for details),"
    " NCCL version 2.18.6\n"
    "ncclSystemError: System call (e.g. socket, malloc) or external library call failed or"
    " device error.\n"
    "Last error:\n"
    "socketStartConnect: Connect to 192.168.19.14<52822> failed : No route to host\n"
)


def test_an_interface_setting_that_made_it_work_is_the_interface(tmp_path: Path) -> None:
    report = diagnose_text(
        tmp_path, _NO_ROUTE + "\nSetting NCCL_SOCKET_IFNAME=em4 on both nodes fixed it.\n"
    )
    assert report.top(1) == ["net.socket_interface"]
    assert report.findings[0].severity.value == "critical"


def test_an_interface_setting_that_did_not_help_leaves_the_connect_failure(
    tmp_path: Path,
) -> None:
    report = diagnose_text(
        tmp_path, _NO_ROUTE + "\nI tried NCCL_SOCKET_IFNAME=em4 but it still fails.\n"
    )
    assert report.top(1) == ["net.unreachable"]


_NVLS_STALL = (
    "NCCL initialization hangs with 4 GPUs, but works with 2 GPUs, on an 8xH100 machine.\n"
    "We've successfully tried simpleP2P so all GPUs seem to be working.\n\n"
    "c2ce1c877ea3:1023:1032 [0] NCCL INFO NVLS multicast support is available on dev 0\n"
    "c2ce1c877ea3:1023:1032 [0] NCCL INFO NVLS Bind mem 0xac0000000 UC handle 0x7f3310ccb240"
    " MC handle 0x7f3310ccaa20 size 1073741824\n"
)


def test_a_hang_in_nvls_set_up_is_nvls_and_a_passing_p2p_test_is_not_p2p(
    tmp_path: Path,
) -> None:
    facts = _facts(tmp_path, _NVLS_STALL)
    ctx = context_of(facts)
    assert ctx.nvls_setup_unfinished
    assert ctx.says("p2p_test_passed")
    report = diagnose_text(tmp_path, _NVLS_STALL)
    assert report.top(1) == ["nccl.nvls"]
    assert "nccl.p2p" not in report.top(3)


def test_nvls_set_up_that_finished_is_no_nvls_stall(tmp_path: Path) -> None:
    done = _NVLS_STALL + (
        "c2ce1c877ea3:1023:1032 [0] NCCL INFO comm 0x5581e0 rank 0 nranks 4 cudaDev 0 nvmlDev 0"
        " busId 18000 commId 0x2b1c2a47 - Init COMPLETE\n"
    )
    assert not context_of(_facts(tmp_path, done)).nvls_setup_unfinished
    assert diagnose_text(tmp_path, done).top(1) != ["nccl.nvls"]


def _on_5090(version: str) -> str:
    return (
        "all_reduce_perf fails on two RTX 5090 cards.\n"
        f"GENOA-06:4766:4766 [0] NCCL INFO NCCL version {version}+cuda12.8\n"
        "GENOA-06: Test NCCL failure common.cu:1030 'unhandled cuda error (run with"
        " NCCL_DEBUG=INFO for details) / '\n"
    )


def test_an_nccl_older_than_the_gpu_weighs_for_an_nccl_bug(tmp_path: Path) -> None:
    ctx = context_of(_facts(tmp_path, _on_5090("2.25.1")))
    assert ctx.gpu_newer_than_nccl == ("RTX 5090", "2.26.2")
    report = diagnose_text(tmp_path, _on_5090("2.25.1"))
    assert report.top(1) == ["nccl.internal"]
    # the rule confirms it: the release predates the GPU, and the test failed
    first = report.findings[0]
    assert (first.id, first.severity.value) == ("nccl.internal", "critical")
    assert "NCCL 2.25.1 on RTX 5090 GPUs, which need NCCL 2.26.2" in first.summary


def test_an_nccl_that_knows_the_gpu_is_no_such_cue(tmp_path: Path) -> None:
    assert context_of(_facts(tmp_path, _on_5090("2.26.5"))).gpu_newer_than_nccl is None
    report = diagnose_text(tmp_path, _on_5090("2.26.5"))
    assert not any("predates" in r for h in report.hypotheses for r in h.for_)
    assert not any("predates" in f.summary for f in report.findings)


_TWO_NODE_HANG = (
    "when i run the shell on two node, the program hanging\n"
    "```\n"
    "torchrun --nproc_per_node=2 --nnodes=2 --node_rank=0 --master_addr='10.110.158.1'"
    " --master_port=3456 main.py\n"
    "```\n"
)


def test_the_launch_commands_node_count_makes_a_hang_multi_node(tmp_path: Path) -> None:
    ctx = context_of(_facts(tmp_path, _TWO_NODE_HANG))
    assert (ctx.nodes, ctx.multi_node) == (2, True)
    top = diagnose_text(tmp_path, _TWO_NODE_HANG).top(3)
    # the path between the nodes first; P2P (two ranks a node use it) after both
    assert top[:2] == ["net.socket_interface", "net.unreachable"]


def test_an_elastic_node_range_states_no_count(tmp_path: Path) -> None:
    text = _TWO_NODE_HANG.replace("--nnodes=2", "--nnodes=1:4").replace("two node", "my box")
    assert context_of(_facts(tmp_path, text)).nodes is None


_TOPO_FAILURE = (
    "vm:648288:648306 [0] NCCL INFO Bootstrap : Using eth0:10.0.0.4<0>\n"
    "vm:648288:648306 [0] NCCL INFO Loading topology file /opt/microsoft/ncv4/topo.xml\n"
    "vm:648288:648306 [0] NCCL INFO Loading unnamed topology\n"
    "RuntimeError: NCCL error in: ../torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:1333,"
    " unhandled system error (run with NCCL_DEBUG=INFO for details), NCCL version 2.18.6\n"
)


def test_a_topology_file_nccl_loads_weighs_for_its_settings(tmp_path: Path) -> None:
    assert context_of(_facts(tmp_path, _TOPO_FAILURE)).topology_file
    report = diagnose_text(tmp_path, _TOPO_FAILURE)
    env = next(h for h in report.hypotheses if h.id == "nccl.env")
    assert any("topology from a file" in r for r in env.for_)
    assert "nccl.env" in report.top(2)


def test_nccl_detecting_the_topology_itself_is_no_such_cue(tmp_path: Path) -> None:
    text = _TOPO_FAILURE.replace(
        "Loading topology file /opt/microsoft/ncv4/topo.xml", "Setting affinity for GPU 0 to ff"
    )
    assert not context_of(_facts(tmp_path, text)).topology_file
    assert "nccl.env" not in diagnose_text(tmp_path, text).top(2)
