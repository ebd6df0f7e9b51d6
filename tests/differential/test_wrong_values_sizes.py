"""Wrong values only where sizes pass 2 GiB point at NCCL's arithmetic, not at the path.

A peer path that corrupts data (P2P through ACS or an IOMMU, GPUDirect RDMA without its
peer-memory module) corrupts every size; byte counts and offsets that overflow 32 bits
do so only from 2 GiB on (NCCL 2.4's all_gather of 4 GiB, fixed in 2.5). nccl-tests'
rows tell the two apart: wrong at 4 GiB and right at 1 GiB leads with nccl.internal;
wrong at every size keeps the path first. Every case runs the whole pipeline.
"""

from __future__ import annotations

from pathlib import Path

from tests.helpers import diagnose_text

_HEAD = (
    "# nThread 1 nGpus 8 minBytes {lo} maxBytes 4294967296 step: 2(factor) warmup iters: 5 "
    "iters: 100 validation: 1\n"
    "#\n# Using devices\n"
    + "".join(
        f"#   Rank  {i} Pid  52101 on   dgx-v100 device  {i} [0x{0x15 + i:02x}] "
        "Tesla V100-PCIE-32GB\n"
        for i in range(8)
    )
    + "#       size         count    type   redop     time   algbw   busbw  error     time   "
    "algbw   busbw  error\n"
)


def _row(size: int, error: str) -> str:
    return (
        f"  {size:>10}  {size // 4:>12}   float     sum    29122  129.05  129.05  {error}    "
        f"29169  128.84  128.84  {error}\n"
    )


def _log(rows: str, lo: int) -> str:
    return (
        _HEAD.format(lo=lo) + rows + "# Out of bounds values : 2 FAILED\n"
        "# Avg bus bandwidth    : 128.9\n"
    )


def test_wrong_only_at_4_gib_points_at_nccl(tmp_path: Path) -> None:
    text = _log(_row(1073741824, "0e+00") + _row(4294967296, "1e+00"), 1073741824)
    report = diagnose_text(tmp_path, text)
    first = report.hypotheses[0]
    assert first.id == "nccl.internal"
    assert any("only at sizes of 2 GiB or more" in why for why in first.for_)
    p2p = next(h for h in report.hypotheses if h.id == "nccl.p2p")
    assert any("a broken transfer path would corrupt every size" in w for w in p2p.against)


def test_wrong_at_every_size_keeps_the_path_first(tmp_path: Path) -> None:
    text = _log(_row(1073741824, "1e+00") + _row(4294967296, "1e+00"), 1073741824)
    report = diagnose_text(tmp_path, text)
    assert report.hypotheses[0].id == "nccl.p2p"
    assert all("2 GiB" not in " ".join(h.for_) for h in report.hypotheses)
