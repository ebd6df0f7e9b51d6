"""A diagnosis costs the same per byte however many process groups the ranks print.

Issue 17's log: every rank prints PyTorch's ProcessGroupNCCL option list once
per process group it joins; a job of ~800 groups prints 400,000 of them. The
reader reads such informational lines up to a budget, so what follows the
scan (decoding, parsing, facts, rules, triage) stays a fixed part. This test
counts it in Python calls, not seconds (a loaded machine changes seconds, not
calls): two logs of the same size from ``bench/gen_pgs.py``, one with 40
groups a rank (2,560 option lists) and one with 320 (20,480), both past the
budget, cost the same calls within 10% (the second has fewer lines, longer
ones); without the budget the second costs several times more.
"""

from __future__ import annotations

import argparse
import importlib.util
import sys
from pathlib import Path
from types import FrameType, ModuleType
from typing import Any

import pytest

from nccl_doctor.evidence import budgets, reader
from nccl_doctor.facts.run import PgInitOptions
from nccl_doctor.pipeline import facts_of, run_rules
from nccl_doctor.triage import triage

BENCH = Path(__file__).resolve().parents[2] / "bench"
RANKS = 64
SIZE_MIB = 6.0


def _gen_pgs() -> ModuleType:
    spec = importlib.util.spec_from_file_location("gen_pgs", BENCH / "gen_pgs.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _log(folder: Path, pgs: int, *, per_rank: bool = False) -> Path:
    """A generated log (or folder of per-rank logs) of SIZE_MIB."""
    target = folder / (f"pgs{pgs}" if per_rank else f"pgs{pgs}.log")
    args = argparse.Namespace(
        out=None if per_rank else target,
        per_rank=target if per_rank else None,
        pgs=pgs,
        pg_layout="spread",
        size_mib=SIZE_MIB,
        ranks=RANKS,
        gpus_per_host=8,
        seed=7,
    )
    written, _ = _gen_pgs().generate(args)
    assert abs(written - SIZE_MIB * (1 << 20)) < 0.05 * SIZE_MIB * (1 << 20)  # per-rank: no prefix
    return target


def _diagnose_counting(path: Path) -> tuple[int, int, str]:
    """Python calls made by read, rules and triage; the option lists read; the top finding."""
    calls = 0

    def profile(_frame: FrameType, event: str, _arg: Any) -> None:
        nonlocal calls
        if event == "call":
            calls += 1

    sys.setprofile(profile)
    try:
        result = reader.read_paths([str(path)])
        facts = facts_of(result)
        report = triage(run_rules(facts), facts, result)
    finally:
        sys.setprofile(None)
    options = sum(1 for f in result.facts if isinstance(f, PgInitOptions))
    return calls, options, report.findings[0].id if report.findings else "(none)"


@pytest.mark.parametrize("per_rank", [False, True], ids=["one-file", "per-rank-files"])
def test_cost_does_not_grow_with_the_process_groups(tmp_path: Path, per_rank: bool) -> None:
    few = _log(tmp_path, 40, per_rank=per_rank)
    many = _log(tmp_path, 320, per_rank=per_rank)
    _diagnose_counting(few)  # imports, compiled patterns, caches: paid once, before counting
    few_calls, few_options, few_top = _diagnose_counting(few)
    many_calls, many_options, many_top = _diagnose_counting(many)
    assert few_top == many_top == "nccl.duplicate_gpu"  # the planted failure first
    # the budget's worth (and each per-rank file's floor) of 2,560 and of 20,480
    assert abs(few_options - many_options) <= budgets.INFO_BUDGET // 10
    assert many_options <= budgets.INFO_BUDGET + 2 * (RANKS + 1)
    assert many_calls < 1.1 * few_calls, (few_calls, many_calls)


def test_without_the_budget_the_process_groups_would_cost(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The measure above can fail: with no budget for option lists, 8x them cost far more."""
    few = _log(tmp_path, 40)
    many = _log(tmp_path, 320)
    limit = reader.Budgets.info_limit

    def unlimited(self: reader.Budgets, parser: Any) -> int:
        return 10**9 if parser.kind == "torchrun" else limit(self, parser)

    monkeypatch.setattr(reader.Budgets, "info_limit", unlimited)
    _diagnose_counting(few)
    few_calls, _, _ = _diagnose_counting(few)
    many_calls, many_options, _ = _diagnose_counting(many)
    assert many_options == 320 * RANKS
    assert many_calls > 2 * few_calls, (few_calls, many_calls)
