"""app.hang's title says what the evidence shows: a timeout, or a job that stopped moving.

On the H200 (tests/fixtures/captured/premortem-h200), ``nccl-doctor run`` took its
pre-mortem captures while the second all_reduce waited, long before the 60 s
watchdog; the whole run folder holds the watchdog's timeout too. Before, both said
"A collective timed out".
"""

from __future__ import annotations

from pathlib import Path

from nccl_doctor.pipeline import diagnose_paths

RUN = Path(__file__).resolve().parents[2] / "tests/fixtures/captured/premortem-h200/premortem"


def _hang_title(paths: list[str]) -> str:
    report = diagnose_paths(paths)
    return next(f.title for f in report.findings if f.id == "app.hang")


def test_a_capture_before_any_timeout_is_a_stall() -> None:
    assert _hang_title([str(RUN / "hang-2")]) == "The job stopped making progress"


def test_the_run_whose_watchdog_fired_is_a_timeout() -> None:
    assert _hang_title([str(RUN)]) == "A collective timed out"


def test_a_barrier_that_waited_for_one_ranks_preprocessing() -> None:
    case = RUN.parents[3] / "cases/app/hang/socket_timeout_after_30min_tokenizer"
    assert _hang_title([str(case / "evidence.txt")]) == "A store-based barrier timed out"
