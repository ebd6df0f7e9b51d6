"""nccl-tests across nodes against what the nodes' active ports carry (facts/bandwidth.py):
far below opens the differential's slow_network class; near it, or on one node, nothing."""

from __future__ import annotations

from pathlib import Path

import pytest

from nccl_doctor.evidence.reader import read_paths
from nccl_doctor.facts.bandwidth import network_shortfall
from nccl_doctor.pipeline import facts_of
from tests.helpers import diagnose_text, fixture_text


def _ibstat(ports: int, rate: int, state: str = "Active") -> str:
    """ibstat of one node: ``ports`` single-port ConnectX-7 adapters."""
    return "".join(
        f"CA 'mlx5_{i}'\n\tCA type: MT4129\n\tNumber of ports: 1\n\tFirmware version: "
        f"28.39.1002\n\tHardware version: 0\n\tNode GUID: 0x946dae0300{i:02x}a1b2\n\t"
        f"System image GUID: 0x946dae0300{i:02x}a1b2\n\tPort 1:\n\t\tState: {state}\n\t\t"
        f"Physical state: LinkUp\n\t\tRate: {rate}\n\t\tBase lid: {i + 11}\n\t\tLMC: 0\n\t\t"
        f"SM lid: 1\n\t\tCapability mask: 0xa651e848\n\t\tPort GUID: 0x946dae0300{i:02x}a1b2\n"
        "\t\tLink layer: InfiniBand\n"
        for i in range(ports)
    )


def _all_reduce(hosts: int, gpus: int, busbw: float) -> str:
    """nccl-tests' all_reduce_perf table for ``hosts`` x ``gpus`` ranks, 64 MiB to 1 GiB."""
    ranks = "".join(
        f"#  Rank {h * gpus + g:2d} Group  0 Pid {4100 + g:6d} on node{h:02d} device  {g} "
        f"[0000:{0x18 + 0x10 * g:02x}:00] NVIDIA H100 80GB HBM3\n"
        for h in range(hosts)
        for g in range(gpus)
    )
    rows = "".join(
        f"{size:12d} {size // 4:13d}     float     sum      -1   {size / busbw / 1e3:8.1f}  "
        f"{busbw / 1.875:6.2f}  {busbw:6.2f}      0   {size / busbw / 1e3:8.1f}  "
        f"{busbw / 1.875:6.2f}  {busbw:6.2f}      0\n"
        for size in (64 << 20, 256 << 20, 1 << 30)
    )
    return (
        f"$ mpirun -np {hosts * gpus} -H {','.join(f'node{h:02d}:{gpus}' for h in range(hosts))} "
        "./build/all_reduce_perf "
        "-b 64M -e 1G -f 4 -g 1\n"
        "# nThread 1 nGpus 1 minBytes 67108864 maxBytes 1073741824 step: 4(factor) warmup "
        "iters: 5 iters: 20 agg iters: 1 validation: 1 graph: 0\n#\n# Using devices\n"
        + ranks
        + "#\n#                                                              out-of-place"
        "                       in-place\n#       size         count      type   redop    root"
        "     time   algbw   busbw #wrong     time   algbw   busbw #wrong\n"
        "#        (B)    (elements)                               (us)  (GB/s)  (GB/s)"
        "            (us)  (GB/s)  (GB/s)\n" + rows + "# Out of bounds values : 0 OK\n"
        f"# Avg bus bandwidth    : {busbw:.4f}\n#\n"
    )


def _shortfall(tmp_path: Path, text: str):  # type: ignore[no-untyped-def]
    path = tmp_path / "bench.txt"
    path.write_text(text, encoding="utf-8")
    return network_shortfall(facts_of(read_paths([str(path)])))


def test_two_nodes_far_below_eight_400g_ports_open_slow_network(tmp_path: Path) -> None:
    text = _all_reduce(2, 8, 9.8) + _ibstat(8, 400)
    short = _shortfall(tmp_path, text)
    assert short is not None
    assert (short.measured_gbytes_s, short.expected_gbytes_s) == (9.8, 400.0)
    assert (short.ports, short.port_gbits_s, short.gpus_per_node) == (8, 400.0, 8)
    report = diagnose_text(tmp_path, text)
    assert not [f for f in report.findings if f.severity.value == "critical"]
    lead = report.hypotheses[0]
    assert lead.symptom == (
        "nccl-tests across nodes moved far less than the nodes' active ports carry"
    )
    # 2.5% of the ports' rate: TCP sockets rather than IB leads, IB in use weighing it up (the
    # network's other causes follow, GPUDirect RDMA weighed like them for traffic between nodes)
    assert [h.id for h in report.hypotheses][:3] == ["net.ib_config", "net.gdr", "net.ib_link"]
    assert lead.for_[1] == (
        "best busbw 9.8 GB/s against about 400 GB/s for 8 GPU(s) and port(s) of 400 Gb/s per node"
    )
    assert lead.check


@pytest.mark.parametrize(
    ("text", "why"),
    [
        (_all_reduce(2, 8, 371.5) + _ibstat(8, 400), "near what the ports carry"),
        (_all_reduce(1, 8, 9.8) + _ibstat(8, 400), "one node: NVLink, not the network"),
        (_all_reduce(2, 8, 9.8), "no port rates shown"),
        (_all_reduce(2, 8, 9.8) + _ibstat(8, 400, "Down"), "no active port"),
        # one GPU per node drives about one 100G port (12.5 GB/s), not the node's four
        (_all_reduce(2, 1, 9.8) + _ibstat(4, 100), "one GPU a node"),
    ],
)
def test_no_shortfall(tmp_path: Path, text: str, why: str) -> None:
    assert _shortfall(tmp_path, text) is None, why


def test_a_real_one_gpu_one_nic_run_is_no_shortfall(tmp_path: Path) -> None:
    """The H200 dranet run (31.9 GB/s, one GPU a node) beside a 100G RoCE node's ibstat."""
    text = fixture_text("nccl-tests/h200-dranet-mpijob-allreduce-openmpi-warnings.txt")
    text += fixture_text("ibstat/cx6dx-mt4125-roce-100g-2port.txt")
    assert _shortfall(tmp_path, text) is None
