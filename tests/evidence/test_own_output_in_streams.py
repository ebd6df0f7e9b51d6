"""nccl-doctor's own output among a job's lines (a report tee-d into a log, ``run``'s terminal
output) is passed over from its first line to its last; the job's lines around it are read."""

from __future__ import annotations

from pathlib import Path

import pytest

from nccl_doctor.cli import main
from nccl_doctor.evidence.own_output import GIVE_EVIDENCE, STRETCH_MAX_LINES, stretch_at
from nccl_doctor.evidence.reader import read_paths
from nccl_doctor.facts.text import TextLine
from nccl_doctor.pipeline import diagnose_with_facts
from nccl_doctor.redact import scrub
from nccl_doctor.render.markdown import report_markdown
from nccl_doctor.render.text import report_text
from nccl_doctor.report import Report

ROOT = Path(__file__).resolve().parents[2]
CASE = ROOT / "tests" / "cases" / "gpu" / "contention" / "h200-cuda-999"
CAPTURED = ROOT / "tests" / "fixtures" / "captured"
#: The job's lines around the report: an NCCL warning before, a traceback after.
BEFORE = [
    "[rank1]:node-a:2211:2290 [1] NCCL INFO Channel 00/0 : 1[1] -> 0[0] via P2P/IPC",
    "node-a:2211:2290 [1] enqueue.cc:1466 NCCL WARN Cuda failure 'out of memory'",
]
AFTER = [
    "Traceback (most recent call last):",
    '  File "/job/train.py", line 41, in <module>',
    "    dist.all_reduce(t)",
    (
        "torch.distributed.DistBackendError: NCCL error in: ProcessGroupNCCL.cpp:3356, "
        "unhandled cuda error (run with NCCL_DEBUG=INFO for details), NCCL version 2.21.5"
    ),
]


@pytest.fixture(scope="module")
def report() -> Report:
    found, _ = diagnose_with_facts(read_paths([str(CASE)]))
    # every part of a report is rendered
    assert found.findings
    assert found.hypotheses
    return found


def _renderings(report: Report) -> dict[str, str]:
    return {
        "text": report_text(report),
        "narrow text": report_text(report, width=50),
        "wide text": report_text(report, width=140),
        "quiet text": report_text(report, verbosity=-1),
        "whole text": report_text(report, verbosity=1),
        "markdown": report_markdown(report, scrub),
    }


def _read(path: Path) -> list[tuple[int, str]]:
    return sorted((f.cite.line, type(f).__name__) for f in read_paths([str(path)]).facts)


@pytest.mark.parametrize(
    "variant", ["text", "narrow text", "wide text", "quiet text", "whole text", "markdown"]
)
def test_a_report_in_a_log_is_passed_over_and_the_log_around_it_read(
    tmp_path: Path, report: Report, variant: str
) -> None:
    body = _renderings(report)[variant].rstrip("\n").split("\n")
    alone = tmp_path / "alone.log"
    alone.write_text("\n".join(BEFORE + AFTER) + "\n")
    mixed = tmp_path / "mixed.log"
    mixed.write_text("\n".join(BEFORE + body + AFTER) + "\n")

    shifted = [(n + len(body) if n > len(BEFORE) else n, kind) for n, kind in _read(alone)]
    assert _read(mixed) == shifted
    assert {"NcclWarn", "PythonTraceback"} <= {kind for _, kind in shifted}
    what = "Markdown report" if variant == "markdown" else "text report"
    notes = [n.message for n in read_paths([str(mixed)]).notes if n.source == str(mixed)]
    assert notes == [
        f"{len(body)} line(s) of nccl-doctor's own output ({what} at line 3), not evidence: skipped"
    ]


def test_a_report_in_a_large_log_is_found_by_the_scan(tmp_path: Path, report: Report) -> None:
    """Past the free-text size only lines holding an anchor are decoded: the heading is one,
    and the report's quoted errors are not read as the job's."""
    info = "node-a:2211:2290 [1] NCCL INFO Channel %02d/0 : 1[1] -> 0[0] via P2P/IPC\n"
    filler = "".join(info % (i % 32) for i in range(40_000))  # ~2.9 MB
    log = tmp_path / "big.log"
    log.write_text(filler + report_text(report) + "\n".join(AFTER) + "\n")
    start = filler.count("\n") + 1
    end = start + report_text(report).count("\n")
    result = read_paths([str(log)])
    inside = [f for f in result.facts if start <= f.cite.line < end]
    assert inside == []
    # the traceback after it, cited at its last line, keeps its line number
    assert [f.cite.line for f in result.facts if type(f).__name__ == "PythonTraceback"] == [
        end + len(AFTER) - 1
    ]


def test_run_terminal_output_leaves_the_jobs_lines() -> None:
    """``run``'s stderr on the H100: its own lines, four pre-mortems with their reports, and the
    job's own output between them."""
    path = CAPTURED / "premortem-h100" / "premortem.stderr"
    lines = path.read_text().split("\n")
    result = read_paths([str(path)])
    read = sorted({f.cite.line for f in result.facts})
    own = ("nccl-doctor", "where each rank is", "=> ", "diagnosis of the run folder", "Read: ")
    assert [n for n in read if lines[n - 1].startswith(own)] == []
    assert [n for n in read if not lines[n - 1].startswith("[rank0]:")][:3] == [215, 216, 217]
    assert lines[214].startswith("Exception raised from checkTimeout at ")  # the job's C++ stack
    assert {68, 213, 214, 225, 242, 271} <= set(read)  # the watchdog, the exit, torchrun's end
    (note,) = [n.message for n in result.notes]
    assert note.startswith("269 line(s) of nccl-doctor's own output (run's progress at line 1, ")


def test_the_pre_mortems_reports_add_no_second_node() -> None:
    """The pre-mortems' reports said 'the job spans several nodes' of a hypothesis; read
    back as prose they made the job span several nodes."""
    report, _ = diagnose_with_facts(read_paths([str(CAPTURED / "premortem-h100")]))
    assert report.top(1) == ["app.hang"]
    assert not [h for h in report.hypotheses if "several nodes" in " ".join(h.for_)]


def test_a_probe_console_with_its_report_is_not_its_own_evidence() -> None:
    """The report's own finding (gpu.lost, from the probe's JSON) came back as prose."""
    path = CAPTURED / "probe-h200" / "inject_corrupt.txt"
    result = read_paths([str(path)])
    report, _ = diagnose_with_facts(result)
    assert [f.id for f in report.findings] == []
    assert sorted({f.cite.line for f in result.facts}) == [48]  # the capture script's line
    assert [n.message for n in result.notes] == [
        "47 line(s) of nccl-doctor's own output (probe's progress at line 1), not evidence: skipped"
    ]


@pytest.mark.parametrize(
    ("name", "own", "verdict"),
    [
        (
            "premortem.stderr",
            (203, "run's progress at line 1, run's progress at line 18, "),
            "failed",
        ),
        ("probe-inject-text.txt", (44, "probe's progress at line 1)"), "inconclusive"),
        ("probe-quick-text.txt", (20, "probe's progress at line 1)"), "inconclusive"),
    ],
)
def test_consoles_captured_on_the_h100_leave_only_what_is_not_ours(
    name: str, own: tuple[int, str], verdict: str
) -> None:
    path = CAPTURED / "console-h100" / name
    lines = path.read_text().split("\n")
    result = read_paths([str(path)])
    read = sorted({f.cite.line for f in result.facts})
    theirs = [
        n for n, line in enumerate(lines, 1) if line.startswith(("[rank0]:", "E1206", "W1206"))
    ]
    assert read
    assert set(theirs) <= set(read) | set(range(146, 157))  # (a C++ stack: one fact, its head)
    for n in read:  # every line read is the job's, the script's, or torchrun's report
        assert not lines[n - 1].startswith(("nccl-doctor", "probe", "where each", "=> ", "Read:"))
    (note,) = [n.message for n in result.notes]
    lines_, first = own
    assert note.startswith(f"{lines_} line(s) of nccl-doctor's own output ({first}")
    report, _ = diagnose_with_facts(result)
    assert report.verdict.value == verdict
    assert report.top(1) == (["app.hang"] if verdict == "failed" else [])


@pytest.mark.parametrize(
    "line",
    [
        "$ nccl-doctor run -- torchrun --nproc-per-node 8 train.py",
        "I ran nccl-doctor: it said HEALTHY (0 findings) but the job still hangs",
        "nccl-doctor: FAILED and then the node rebooted",
        "## nccl-doctor: **failed** on node 3 only",
    ],
)
def test_a_line_naming_the_tool_is_the_users(tmp_path: Path, line: str) -> None:
    assert stretch_at(line, 1) is None
    log = tmp_path / "notes.txt"
    log.write_text(f"{line}\nthe job hangs at step 200\n")
    result = read_paths([str(log)])
    assert [f.text for f in result.facts if isinstance(f, TextLine)] == [
        line,
        "the job hangs at step 200",
    ]
    assert result.notes == []


def test_a_stretch_is_bounded() -> None:
    stretch = stretch_at("nccl-doctor run: run folder /tmp/run", 1)
    assert stretch is not None
    taken = [stretch.takes("nccl-doctor run: waiting", n) for n in range(2, STRETCH_MAX_LINES + 5)]
    assert taken.count(True) == STRETCH_MAX_LINES - 1
    assert (stretch.first, stretch.last, stretch.lines) == (1, STRETCH_MAX_LINES, STRETCH_MAX_LINES)


def test_a_console_of_nothing_but_ours_is_refused_with_what_to_give(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    lines = (CAPTURED / "console-h100" / "probe-inject-text.txt").read_text().split("\n")
    alone = tmp_path / "probe.txt"
    alone.write_text("\n".join(lines[:-2]) + "\n")  # without the capture script's rc= line
    assert main(["diagnose", str(alone)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"error: no known evidence kind in {alone} ({alone}: 44 line(s) of ")
    assert err.rstrip().endswith(f"(hint: {GIVE_EVIDENCE})")
    # beside a log of the job's, the same console is a note and the log is read
    (tmp_path / "train.log").write_text("\n".join(AFTER) + "\n")
    result = read_paths([str(tmp_path)])
    assert {(Path(f.cite.source).name, type(f).__name__) for f in result.facts} == {
        ("train.log", "PythonTraceback"),
        ("train.log", "NcclErrorReport"),
    }
    assert [Path(n.source).name for n in result.notes] == ["probe.txt"]


def test_a_node_verdict_in_a_job_log_is_passed_over(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A batch script that gates the node before its job (``srun nccl-doctor check --gate
    --format text; srun torchrun ...``) leaves the verdict and its stderr line in the log."""
    capsys.readouterr()
    main(["check", "--gate", "--from", str(CASE), "--gate-node", "node17", "--format", "text"])
    said = capsys.readouterr()
    verdict = said.out.rstrip("\n").split("\n") + said.err.rstrip("\n").split("\n")
    assert verdict[0].startswith("node node17: ")
    assert verdict[-1].startswith("gate: node17 ")
    log = tmp_path / "slurm-812345.out"
    log.write_text("\n".join(["+ srun nccl-doctor check --gate", *verdict, *AFTER]) + "\n")
    result = read_paths([str(log)])
    assert sorted({f.cite.line for f in result.facts}) == [1, len(verdict) + 1 + len(AFTER)]
    said_of = f"{len(verdict)} line(s) of nccl-doctor's own output (check --gate's verdict"
    assert [n.message for n in result.notes] == [f"{said_of} at line 2), not evidence: skipped"]


def test_its_one_line_errors_in_a_job_log_are_passed_over(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A batch script's `nccl-doctor check --gate` that could not run left its error in the
    log; read as the job's, it made a healthy job 'a rank failed with an error'."""
    capsys.readouterr()
    assert main(["check", "--gate", "--from", str(CASE)]) == 2  # no node name to give
    assert main(["history", "--db", str(tmp_path / "none.db")]) == 2
    errors = capsys.readouterr().err.rstrip("\n").split("\n")
    assert [e.startswith("error: ") and "(hint: " in e for e in errors] == [True, True]
    log = tmp_path / "slurm-812346.out"
    log.write_text("\n".join([*errors, "step 200 loss 1.93", *AFTER]) + "\n")
    result = read_paths([str(log)])
    assert sorted({f.cite.line for f in result.facts}) == [3, 2 + len(AFTER) + 1]
    said = "its error message at line 1, its error message at line 2"
    assert [n.message for n in result.notes] == [
        f"2 line(s) of nccl-doctor's own output ({said}), not evidence: skipped"
    ]


@pytest.mark.parametrize(
    "line",
    [
        "error: subprocess-exited-with-error",
        "error: RPC failed; curl 56 (hint: see the server log) and more",
        "RuntimeError: NCCL error: unhandled system error (hint: none)",
        (
            "/opt/nvshmem/src/mem.cpp:420: nvshmem malloc failed (hint: check if total "
            "allocation has exceeded NVSHMEM symmetric size)"
        ),
    ],
)
def test_other_tools_errors_are_evidence(tmp_path: Path, line: str) -> None:
    assert stretch_at(line, 1) is None
    log = tmp_path / "job.log"
    log.write_text(line + "\n")
    result = read_paths([str(log)])
    assert [f.cite.line for f in result.facts] == [1]
    assert result.notes == []
