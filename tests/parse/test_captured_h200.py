"""Real outputs captured on the project's H200 machine (tests/fixtures/captured/h200-580)."""

from __future__ import annotations

from nccl_doctor.evidence.reader import read_paths
from nccl_doctor.facts.gpu import DriverInfo, Gpu, GpuProcessTable
from nccl_doctor.facts.nccl import NcclCommInit, NcclCommLayout, NcclNet, NcclVersion
from nccl_doctor.facts.text import TextLine
from nccl_doctor.facts.topology import TopoGpu
from tests.helpers import FIXTURES

H200 = FIXTURES / "captured" / "h200-580"


def test_the_three_nvidia_smi_formats_agree() -> None:
    result = read_paths(
        [str(H200 / n) for n in ("nvidia-smi.txt", "nvidia-smi-q.txt", "nvidia-smi-q-x.xml")]
    )
    assert [s.kind for s in result.sections if s.kind != "text"] == [
        "nvidia-smi",
        "nvidia-smi-q",
        "nvidia-smi-xml",
    ]
    drivers = [f for f in result.facts if isinstance(f, DriverInfo)]
    assert {(d.driver_version, d.cuda_version) for d in drivers} == {("580.159.04", "13.0")}
    gpus = [f for f in result.facts if isinstance(f, Gpu)]
    assert len(gpus) == 3
    assert {(g.name, g.bus_id) for g in gpus} == {("NVIDIA H200", "00000000:00:06.0")}
    table = gpus[0]
    assert (table.index, table.memory_total_mib, table.power_limit_w) == (0, 143771, 700.0)
    assert all(g.mig_mode in (False, None) for g in gpus)
    tables = [f for f in result.facts if isinstance(f, GpuProcessTable)]
    assert [t.none_found for t in tables] == [True, True, True]


def test_topo_with_ansi_underline() -> None:
    gpus = [f for f in read_paths([str(H200 / "topo.txt")]).facts if isinstance(f, TopoGpu)]
    assert [(g.gpu, g.cpu_affinity, g.cpu_count, g.numa_node) for g in gpus] == [
        ("GPU0", "0-15", 16, 0)
    ]


def test_nccl_2_28_info_log_of_a_one_gpu_job() -> None:
    facts = read_paths([str(H200 / "torchrun-nccl-info-1gpu.log")]).facts
    (version,) = [f for f in facts if isinstance(f, NcclVersion)]
    assert (version.version, version.cuda_version) == ("2.28.9", "13.0")
    inits = [f for f in facts if isinstance(f, NcclCommInit)]
    assert [(i.phase, i.comm_rank, i.nranks, i.bus_id) for i in inits] == [
        ("start", 0, 1, "00000000:00:06.0"),
        ("complete", 0, 1, "00000000:00:06.0"),
        ("destroy", 0, 1, "00000000:00:06.0"),
    ]
    assert {(i.host, i.pid) for i in inits} == {("vm", 472)}
    (layout,) = [f for f in facts if isinstance(f, NcclCommLayout)]
    assert (layout.n_nodes, layout.local_ranks) == (1, 1)
    selected = [f.net for f in facts if isinstance(f, NcclNet) and f.role == "selected"]
    assert selected == ["Socket"]
    # NCCL's unclaimed INFO lines are detail, not free text; the job's own print is
    texts = [f.text for f in facts if isinstance(f, TextLine)]
    assert "rank 0 sum 1.0" in texts
    assert not any(t.startswith("NCCL INFO") for t in texts)
