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


def test_a_window_is_scanned_once_whatever_the_budgets(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Per-rank files: each window of lines is scanned once for the parsers' anchors and the
    informational lines still budgeted together (a kind whose budget lasts through many files
    is no second scan of each); besides it, a source scans its windows for its floor (who its
    processes are) until it is found and, past a budget, whether it holds that kind's lines
    until it does."""
    from nccl_doctor.evidence import anchors, source
    from nccl_doctor.evidence.prefilter import Prefilter

    folder = _log(tmp_path, 40, per_rank=True)
    reader.read_paths([str(folder)])  # compiled once, before counting
    calls = {"windows": 0, "scan": 0, "floor": 0, "first": 0, "other": 0}
    windows = source.SourceReader._spans
    kinds = {type(p) for p in (*anchors._SCANS.values(), *anchors._FLOORS.values())}
    assert len(kinds) == 1  # one engine (the fastest here) for all
    (kind,) = kinds
    tagged, groups_in = kind.tagged_spans, kind.groups_in

    def role(prefilter: Prefilter) -> str:
        if prefilter in anchors._SCANS.values():
            return "scan"
        if prefilter in anchors._FLOORS.values():
            return "floor"
        return "first" if prefilter in anchors._FIRSTS.values() else "other"

    def counting_windows(self: Any, *args: Any) -> Any:
        calls["windows"] += 1
        return windows(self, *args)

    inside: list[bool] = []  # a fallback engine's groups_in reads tagged_spans: one scan

    def counting_tagged(self: Prefilter, *args: Any, **kwargs: Any) -> Any:
        calls[role(self)] += not inside
        return tagged(self, *args, **kwargs)

    def counting_groups(self: Prefilter, *args: Any) -> Any:
        calls[role(self)] += 1
        inside.append(True)
        try:
            return groups_in(self, *args)
        finally:
            inside.pop()

    monkeypatch.setattr(kind, "tagged_spans", counting_tagged)
    monkeypatch.setattr(kind, "groups_in", counting_groups)
    monkeypatch.setattr(source.SourceReader, "_spans", counting_windows)
    result = reader.read_paths([str(folder)])
    files = len(result.sources)
    assert files == RANKS + 1  # the ranks' files and the launcher's
    assert calls["windows"] >= files
    assert calls["scan"] == calls["windows"]
    assert calls["floor"] <= calls["windows"]  # a window until a source's floor is found
    assert calls["first"] <= calls["windows"]  # past a budget, until the kind's first line
    assert calls["other"] == 0
    # the option lists' budget lasted through many files (each scanned for them, in its scan)
    options = [f for f in result.facts if isinstance(f, PgInitOptions)]
    assert len({f.cite.source for f in options}) > 8


def test_a_source_makes_only_the_block_parsers_its_lines_ask_for(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A thousand per-rank logs hold no tool's table: no block parser is made for them; a
    source holding an nvidia-smi table makes that parser alone, once."""
    from nccl_doctor.parse import BLOCK_PARSERS

    made: list[str] = []
    for cls in BLOCK_PARSERS:

        def init(self: Any, _cls: Any = cls, _init: Any = cls.__init__) -> None:
            made.append(_cls.kind)
            _init(self)

        monkeypatch.setattr(cls, "__init__", init)
    folder = _log(tmp_path, 40, per_rank=True)
    result = reader.read_paths([str(folder)])
    assert len(result.sources) == RANKS + 1
    assert made == []
    table = Path(__file__).parents[1] / "fixtures" / "formats" / "nvidia-smi"
    smi = min(p for p in table.iterdir() if p.suffix in (".txt", ".log"))
    text = smi.read_text() + "\n" + smi.read_text()
    (tmp_path / "two-tables.log").write_text(text)
    result = reader.read_paths([str(tmp_path / "two-tables.log")])
    assert [s.kind for s in result.sections].count("nvidia-smi") == 2
    assert made == ["nvidia-smi"]
