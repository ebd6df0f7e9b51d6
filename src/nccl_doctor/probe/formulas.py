"""Bandwidth arithmetic of the probe, and what each GPU model should reach.

Collective bandwidth follows nccl-tests (``doc/PERFORMANCE.md`` of
NVIDIA/nccl-tests), so the probe's numbers compare one to one with theirs:

* ``size`` is the buffer size nccl-tests prints in its ``size`` column: for
  ``all_reduce`` and ``broadcast`` the per-rank buffer (``count * typesize``);
  for ``all_gather`` the per-rank *output* buffer (``n`` chunks), for
  ``reduce_scatter`` the per-rank *input* buffer (``n`` chunks) and for
  ``all_to_all`` the per-rank send buffer (``n`` chunks): ``chunk * n``.
* ``algbw = size / time``.
* ``busbw = algbw * factor`` with ``factor`` = ``2(n-1)/n`` for all_reduce,
  ``(n-1)/n`` for all_gather, reduce_scatter and all_to_all, ``1`` for
  broadcast (and reduce, send/recv).

Copies (host<->device, device<->device, peer to peer) report bytes moved per
second, ``bytes / time``; device->device copies count the read and the write
(``2 * bytes / time``), as the CUDA samples' ``bandwidthTest`` does, so they
compare with the HBM peak. GB/s here are 10^9 bytes per second.

The expectations in :data:`GPU_SPECS` are approximate: HBM peaks and NVLink
per-direction rates are NVIDIA's datasheet figures; "effective PCIe" is the
usual ~85% of the link's raw rate that pinned copies reach (Gen3 x16 ~12,
Gen4 x16 ~25, Gen5 x16 ~55 GB/s); "collective" is a typical large-message
intra-node all_reduce busbw of nccl-tests on a full node of that model
(without NVLS). They are yardsticks for "far below", not pass marks: a
finding needs a measurement below :data:`SHORT_FRACTION` of them.
"""

from __future__ import annotations

from dataclasses import dataclass

from nccl_doctor.knowledge.units import gbytes_s

#: collectives the probe runs, in order
COLLECTIVES = ("all_reduce", "all_gather", "reduce_scatter", "all_to_all", "broadcast")
#: a measurement below this fraction of the expected value is "far below"
SHORT_FRACTION = 0.5


def bus_factor(collective: str, n: int) -> float:
    """nccl-tests' busbw / algbw ratio for ``collective`` over ``n`` ranks."""
    if n <= 0:
        raise ValueError("n must be positive")
    if collective == "all_reduce":
        return 2.0 * (n - 1) / n
    if collective in ("all_gather", "reduce_scatter", "all_to_all"):
        return (n - 1) / n
    if collective in ("broadcast", "reduce", "sendrecv"):
        return 1.0
    raise ValueError(f"unknown collective {collective!r}")


def chunks(collective: str, n: int) -> int:
    """How many rank-sized chunks the nccl-tests ``size`` of ``collective`` spans."""
    return n if collective in ("all_gather", "reduce_scatter", "all_to_all") else 1


def algbw_gbytes_s(size_bytes: int, seconds: float) -> float:
    """``size / time`` in GB/s (0 for a zero time)."""
    return gbytes_s(size_bytes, seconds)


def busbw_gbytes_s(collective: str, n: int, size_bytes: int, seconds: float) -> float:
    """nccl-tests' bus bandwidth in GB/s."""
    return algbw_gbytes_s(size_bytes, seconds) * bus_factor(collective, n)


@dataclass(frozen=True, slots=True)
class GpuSpec:
    """Approximate bandwidths of a GPU model, GB/s (``None`` where not applicable)."""

    hbm_gbytes_s: float
    pcie_gbytes_s: float
    nvlink_gbytes_s: float | None  # per direction, per GPU
    collective_gbytes_s: float  # intra-node all_reduce busbw, large messages


#: substrings of torch.cuda.get_device_name(), most specific first
GPU_SPECS: tuple[tuple[str, GpuSpec], ...] = (
    ("B200", GpuSpec(8000, 55, 900, 700)),
    ("H200", GpuSpec(4800, 55, 450, 360)),
    ("H100 PCIe", GpuSpec(2000, 55, None, 40)),
    ("H100 NVL", GpuSpec(3900, 55, 300, 40)),
    ("H100", GpuSpec(3350, 55, 450, 360)),
    ("H800", GpuSpec(3350, 55, 200, 160)),
    ("GH200", GpuSpec(4000, 55, 450, 360)),
    ("A100-SXM4-80GB", GpuSpec(2039, 25, 300, 230)),
    ("A100-SXM4-40GB", GpuSpec(1555, 25, 300, 230)),
    ("A100-SXM", GpuSpec(1555, 25, 300, 230)),
    ("A100 80GB PCIe", GpuSpec(1935, 25, None, 20)),
    ("A100-PCIE", GpuSpec(1555, 25, None, 20)),
    ("A800", GpuSpec(2039, 25, 200, 150)),
    ("L40S", GpuSpec(864, 25, None, 20)),
    ("L40", GpuSpec(864, 25, None, 20)),
    ("L4", GpuSpec(300, 25, None, 20)),
    ("A10", GpuSpec(600, 25, None, 20)),
    ("V100-SXM2", GpuSpec(900, 12, 150, 130)),
    ("V100", GpuSpec(900, 12, None, 10)),
    ("T4", GpuSpec(320, 12, None, 10)),
)


def spec_for(name: str | None) -> GpuSpec | None:
    """The spec of a GPU model by its device name, or ``None`` when unknown."""
    if not name:
        return None
    for key, spec in GPU_SPECS:
        if key.lower() in name.lower():
            return spec
    return None


def expected_gbytes_s(kind: str, name: str | None, n: int = 1) -> float | None:
    """What a measurement of ``kind`` should reach on GPU model ``name``; ``None`` if unknown."""
    spec = spec_for(name)
    if spec is None:
        return None
    if kind in ("h2d", "d2h"):
        return spec.pcie_gbytes_s
    if kind == "d2d":
        return spec.hbm_gbytes_s
    if kind == "p2p":
        return spec.nvlink_gbytes_s or spec.pcie_gbytes_s * 0.8
    if kind in COLLECTIVES:
        return spec.collective_gbytes_s if n >= 2 else None
    return None


def is_short(measured: float, expected: float | None) -> bool:
    """Whether ``measured`` is far below ``expected`` (never, when nothing is expected)."""
    return expected is not None and expected > 0 and measured < SHORT_FRACTION * expected
