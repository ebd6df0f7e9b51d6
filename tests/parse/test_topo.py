"""nvidia-smi topo -m: every fixture, old and ANSI layouts, fragments and negatives."""

from __future__ import annotations

import pytest

from nccl_doctor.facts.base import Fact
from nccl_doctor.facts.topology import TopoGpu, TopoLink, TopoMatrix, TopoNic
from nccl_doctor.parse.topo import TopoParser
from tests.helpers import blocks, fixture_text, of_type, parse_blocks


def _facts(relative: str) -> list[Fact]:
    return parse_blocks(TopoParser(), fixture_text(relative), relative)


def _link(facts: list[Fact], a: str, b: str) -> TopoLink:
    found = [f for f in of_type(facts, TopoLink) if {f.a, f.b} == {a, b}]
    assert len(found) == 1, (a, b, found)
    return found[0]


def _gpu(facts: list[Fact], name: str) -> TopoGpu:
    return next(f for f in of_type(facts, TopoGpu) if f.gpu == name)


def test_rtx5090_raw_tabs_empty_field_before_gpu_numa_id() -> None:
    facts = _facts("topo/2x-rtx5090-phb-raw-tabs-consumer.txt")
    (matrix,) = of_type(facts, TopoMatrix)
    assert matrix.devices == ("GPU0", "GPU1")
    assert (matrix.gpu_count, matrix.nic_count) == (2, 0)
    assert matrix.links == (("GPU0", "GPU1", "PHB"), ("GPU1", "GPU0", "PHB"))
    assert matrix.cite.line == 1
    link = _link(facts, "GPU0", "GPU1")
    assert (link.link, link.nvlinks, link.cite.line) == ("PHB", None, 2)
    gpu0 = _gpu(facts, "GPU0")
    assert (gpu0.index, gpu0.cpu_affinity, gpu0.cpu_count) == (0, "0-63", 64)
    assert (gpu0.numa_affinity, gpu0.numa_node, gpu0.gpu_numa_id) == ("0", 0, None)
    assert of_type(facts, TopoNic) == []


def test_four_gpus_all_sys_two_nics_trailing_space() -> None:
    facts = _facts("topo/4gpu-sys-only-0-127-2nic-trailing-space.txt")
    (matrix,) = of_type(facts, TopoMatrix)
    assert (matrix.gpu_count, matrix.nic_count) == (4, 2)
    assert matrix.nic_names == (("NIC0", "mlx5_0"), ("NIC1", "mlx5_1"))
    gpu_pairs = [
        f for f in of_type(facts, TopoLink) if f.a.startswith("GPU") and f.b.startswith("GPU")
    ]
    assert len(gpu_pairs) == 6
    assert {f.link for f in gpu_pairs} == {"SYS"}
    nics = _link(facts, "NIC0", "NIC1")
    assert (nics.link, nics.a_nic, nics.b_nic, nics.cite.line) == ("PIX", "mlx5_0", "mlx5_1", 7)
    assert _link(facts, "GPU3", "NIC1").b_nic == "mlx5_1"
    assert {g.cpu_count for g in of_type(facts, TopoGpu)} == {128}
    assert len(of_type(facts, TopoLink)) == 15


def test_a100_nv12_with_17_nics_and_bond_legend() -> None:
    facts = _facts("topo/a100-nv12-17nic-bond-mlx5-legend.txt")
    (matrix,) = of_type(facts, TopoMatrix)
    assert (matrix.gpu_count, matrix.nic_count) == (8, 17)
    assert matrix.devices[-1] == "NIC16"
    assert len(matrix.links) == 25 * 24
    nv = _link(facts, "GPU0", "GPU7")
    assert (nv.link, nv.nvlinks) == ("NV12", 12)
    gpu_nic = _link(facts, "GPU0", "NIC0")
    assert (gpu_nic.link, gpu_nic.b_nic) == ("PXB", "mlx5_2")
    assert _link(facts, "NIC15", "NIC16").b_nic == "mlx5_bond_0"
    names = {n.nic: n.name for n in of_type(facts, TopoNic)}
    assert names["NIC8"] == "mlx5_10"
    assert names["NIC16"] == "mlx5_bond_0"
    assert len(of_type(facts, TopoLink)) == 300
    assert _gpu(facts, "GPU7").cpu_count == 104


def test_b200_nv18_collapsed_numa_columns() -> None:
    facts = _facts("topo/b200-a4-nv18-8nic-nic-legend.txt")
    (matrix,) = of_type(facts, TopoMatrix)
    assert (matrix.gpu_count, matrix.nic_count) == (8, 8)
    assert _link(facts, "GPU3", "GPU4").nvlinks == 18
    assert _link(facts, "GPU0", "NIC0").link == "PIX"
    assert _link(facts, "GPU0", "NIC2").link == "NODE"
    assert _link(facts, "GPU0", "NIC7").link == "SYS"
    gpu4 = _gpu(facts, "GPU4")
    assert (gpu4.cpu_affinity, gpu4.cpu_count, gpu4.numa_node) == ("56-111,168-223", 112, 1)
    assert gpu4.gpu_numa_id is None
    assert [n.name for n in of_type(facts, TopoNic)] == [f"mlx5_{i}" for i in range(8)]


def test_two_hosts_from_run_cmd_wrapper() -> None:
    relative = "topo/v100-pcie-2hosts-run-cmd-prefix-tabs-rocep-vs-mlx5.txt"
    found = blocks(TopoParser(), fixture_text(relative))
    assert [(b[0].number, b[-1].number) for b in found] == [(1, 27), (30, 54)]
    facts = _facts(relative)
    first, second = of_type(facts, TopoMatrix)
    assert (first.host, second.host) == ("s114", "s116")
    assert first.nic_names[0] == ("NIC0", "rocep4s0f0")
    assert second.nic_names[0] == ("NIC0", "mlx5_0")
    gpus = of_type(facts, TopoGpu)
    assert [(g.host, g.gpu, g.numa_node) for g in gpus] == [
        ("s114", "GPU0", 0),
        ("s114", "GPU1", 1),
        ("s116", "GPU0", 0),
        ("s116", "GPU1", 1),
    ]
    assert gpus[1].cpu_affinity == "14-27,42-55"
    links = [f for f in of_type(facts, TopoLink) if {f.a, f.b} == {"GPU1", "NIC2"}]
    assert [(f.link, f.b_nic, f.host) for f in links] == [
        ("PHB", "rocep137s0f0", "s114"),
        ("PHB", "mlx5_2", "s116"),
    ]


def test_legend_fragment_before_ibstatus_yields_nic_names_only() -> None:
    relative = "ibstatus/roce-100g-edr-after-topo-legend.txt"
    found = blocks(TopoParser(), fixture_text(relative))
    assert [(b[0].number, b[-1].number) for b in found] == [(1, 14)]
    facts = _facts(relative)
    assert of_type(facts, TopoMatrix) == []
    assert [(n.nic, n.name) for n in of_type(facts, TopoNic)] == [
        (f"NIC{i}", f"mlx5_{i}") for i in range(5)
    ]


def test_old_driver_nic_named_columns() -> None:
    text = (
        "$ nvidia-smi topo -m\n"
        "        GPU0    GPU1    GPU2    GPU3    mlx4_0  CPU Affinity\n"
        "GPU0     X      PIX     PHB     SOC     PHB     0-9,20-29\n"
        "GPU1    PIX      X      PHB     SOC     PHB     0-9,20-29\n"
        "GPU2    PHB     PHB      X      SOC     PHB     0-9,20-29\n"
        "GPU3    SOC     SOC     SOC      X      SOC     10-19,30-39\n"
        "mlx4_0  PHB     PHB     PHB     SOC      X\n"
        "\n"
        "Legend:\n"
        "\n"
        "  X   = Self\n"
        "  SOC  = Connection traversing PCIe as well as the SMP link between CPU sockets\n"
        "  PHB  = Connection traversing PCIe as well as a PCIe Host Bridge (typically the CPU)\n"
        "  PXB  = Connection traversing multiple PCIe switches\n"
        "  PIX  = Connection traversing a single PCIe switch\n"
        "  NV#  = Connection traversing a bonded set of # NVLinks\n"
    )
    facts = parse_blocks(TopoParser(), text)
    (matrix,) = of_type(facts, TopoMatrix)
    assert matrix.devices[-1] == "mlx4_0"
    assert (matrix.gpu_count, matrix.nic_count) == (4, 1)
    assert [(n.nic, n.name) for n in of_type(facts, TopoNic)] == [("mlx4_0", "mlx4_0")]
    link = _link(facts, "GPU3", "mlx4_0")
    assert (link.link, link.b_nic) == ("SOC", "mlx4_0")
    gpu3 = _gpu(facts, "GPU3")
    assert (gpu3.cpu_affinity, gpu3.cpu_count, gpu3.numa_affinity) == ("10-19,30-39", 20, None)


def test_ansi_underlined_header_and_grace_numa_id() -> None:
    text = (
        "\t\x1b[4mGPU0\tGPU1\tNIC0\tCPU Affinity\tNUMA Affinity\tGPU NUMA ID\x1b[0m\n"
        "GPU0\t X \tNV18\tSYS\t0-71\t0\t\t4\n"
        "GPU1\tNV18\t X \tSYS\t72-143\t1\t\t12\n"
        "NIC0\tSYS\tSYS\t X \t\t\t\t\n"
        "\n"
        "NIC Legend:\n"
        "\n"
        "  NIC0: mlx5_0\n"
    )
    facts = parse_blocks(TopoParser(), text)
    (matrix,) = of_type(facts, TopoMatrix)
    assert matrix.devices == ("GPU0", "GPU1", "NIC0")
    assert [(g.gpu, g.numa_node, g.gpu_numa_id) for g in of_type(facts, TopoGpu)] == [
        ("GPU0", 0, 4),
        ("GPU1", 1, 12),
    ]
    assert _link(facts, "GPU0", "GPU1").nvlinks == 18


def test_pdsh_host_prefix_and_prompt_host() -> None:
    text = (
        "node7:         GPU0    GPU1    CPU Affinity    NUMA Affinity\n"
        "node7: GPU0     X      NV4     0-31    0\n"
        "node7: GPU1    NV4      X      0-31    0\n"
    )
    facts = parse_blocks(TopoParser(), text)
    (matrix,) = of_type(facts, TopoMatrix)
    assert matrix.host == "node7"
    assert _link(facts, "GPU0", "GPU1").host == "node7"
    prompt = "root@gpu-a01:~# nvidia-smi topo -m\n\tGPU0\tGPU1\tCPU Affinity\nGPU0\t X \tSYS\t0-7\n"
    (matrix,) = of_type(parse_blocks(TopoParser(), prompt), TopoMatrix)
    assert matrix.host == "gpu-a01"


def test_p2p_matrix_after_topo_is_not_swallowed() -> None:
    text = (
        "\tGPU0\tGPU1\tCPU Affinity\n"
        "GPU0\t X \tPHB\t0-63\n"
        "GPU1\tPHB\t X \t0-63\n"
        "\n"
        "Legend:\n"
        "\n"
        "  X    = Self\n"
        " \tGPU0\tGPU1\t\n"
        " GPU0\tX\tGNS\t\n"
        " GPU1\tGNS\tX\t\n"
    )
    found = blocks(TopoParser(), text)
    assert [(b[0].number, b[-1].number) for b in found] == [(1, 7)]
    assert len(of_type(parse_blocks(TopoParser(), text), TopoLink)) == 1


def test_truncated_row_keeps_read_cells_only() -> None:
    text = "\tGPU0\tGPU1\tGPU2\tCPU Affinity\nGPU0\t X \tNV2\tNV\n"
    facts = parse_blocks(TopoParser(), text)
    assert [(f.a, f.b, f.link) for f in of_type(facts, TopoLink)] == [("GPU0", "GPU1", "NV2")]
    assert _gpu(facts, "GPU0").cpu_affinity is None


@pytest.mark.parametrize(
    "relative",
    [
        "nvlink/a100-sxm4-80gb-12links-tab-indent-elided.txt",
        "ibstat/cx6dx-mt4125-roce-100g-2port.txt",
        "ibv_devinfo/mixed-cx6dx-cx7-roce-partial-middle.txt",
        "collect_env/vllm-wsl2-rtx4070-laptop-driver-551.txt",
    ],
)
def test_other_kinds_do_not_start_a_block(relative: str) -> None:
    assert blocks(TopoParser(), fixture_text(relative)) == []


def test_prose_mentioning_the_command_starts_nothing() -> None:
    text = "Please run nvidia-smi topo -m and paste the output.\nThanks!\n"
    assert blocks(TopoParser(), text) == []
