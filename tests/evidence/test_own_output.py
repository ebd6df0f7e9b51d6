"""What nccl-doctor wrote itself is never read back as evidence (reports, run bookkeeping)."""

from __future__ import annotations

import io
import shutil
import sys
from pathlib import Path

import pytest

from nccl_doctor import GENERATOR
from nccl_doctor.cli import main
from nccl_doctor.evidence.own_output import GATE_STATUSES, GIVE_EVIDENCE, VERDICTS, report_format
from nccl_doctor.evidence.reader import read_paths
from nccl_doctor.facts.run import WorkerExit
from nccl_doctor.fleet.names import KINDS
from nccl_doctor.gate.verdict import ORDER
from nccl_doctor.pipeline import diagnose_with_facts
from nccl_doctor.render import FORMATS, render_report
from nccl_doctor.report import Verdict
from nccl_doctor.run.runner import run
from nccl_doctor.run.setup import write_manifest

ROOT = Path(__file__).resolve().parents[2]
#: Evidence whose report, read again, used to add a critical driver.uvm root cause.
CASE = ROOT / "tests" / "cases" / "gpu" / "contention" / "h200-cuda-999"
CAPTURED = ROOT / "tests" / "fixtures" / "captured"


def _skipped(notes: list[str], folder: Path) -> list[str]:
    return sorted(n for n in notes if "nccl-doctor" in n and n.startswith(str(folder)))


def test_reports_saved_next_to_the_evidence_are_not_read_again(tmp_path: Path) -> None:
    folder = tmp_path / "case"
    shutil.copytree(CASE, folder)
    report, facts = diagnose_with_facts(read_paths([str(folder)]))
    ids = [(f.id, f.root_cause) for f in report.findings]
    assert "driver.uvm" not in [i for i, _ in ids]
    for fmt in FORMATS:  # names say nothing: the content decides
        shown = facts if fmt == "html" else None
        (folder / f"saved-{fmt}.out").write_text(render_report(report, fmt, facts=shown))
    (folder / "coloured.out").write_text(render_report(report, "text", color=True))

    result = read_paths([str(folder)])
    again, _ = diagnose_with_facts(result)

    assert [(f.id, f.root_cause) for f in again.findings] == ids
    assert not [s for s in result.sources if Path(s.source).suffix == ".out"]
    assert _skipped([f"{n.source}: {n.message}" for n in result.notes], folder) == [
        f"{folder / 'coloured.out'}: a report nccl-doctor wrote (text), not evidence: skipped",
        f"{folder / 'saved-html.out'}: a report nccl-doctor wrote (html), not evidence: skipped",
        f"{folder / 'saved-json.out'}: a report nccl-doctor wrote (json), not evidence: skipped",
        (
            f"{folder / 'saved-markdown.out'}: a report nccl-doctor wrote (markdown), "
            "not evidence: skipped"
        ),
        f"{folder / 'saved-text.out'}: a report nccl-doctor wrote (text), not evidence: skipped",
    ]


def test_a_report_named_on_its_own_is_refused_with_the_reason(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    saved = tmp_path / "report.md"
    assert main(["diagnose", str(CASE), "--format", "markdown", "-o", str(saved)]) == 1
    capsys.readouterr()
    assert main(["diagnose", str(saved)]) == 2
    err = capsys.readouterr().err
    assert f"{saved}: a report nccl-doctor wrote (markdown), not evidence: skipped" in err
    assert err.rstrip().endswith(f"(hint: {GIVE_EVIDENCE})")


@pytest.mark.parametrize(
    ("text", "fmt"),
    [
        (f"{GENERATOR}: HEALTHY  (0 findings, 0 root causes)\n", "text"),
        (f"## {GENERATOR}: **failed**\n\n", "markdown"),
        ('{\n "schema_version": 1,\n "tool": {\n  "name": "nccl-doctor",', "json"),
        ('{"sections": [{"kind": "text", "source": "x"', "parse json"),
        ("driver.uvm — The nvidia_uvm module is missing (default severity: critical)\n", "explain"),
        ("gpu.contention             critical Other processes are using the job's GPUs\n", "rules"),
        # an HTML report written before the generator tag: its title still says so
        ("<!DOCTYPE html>\n<html><head><title>nccl-doctor: failed — x</title>", "html"),
    ],
)
def test_every_kind_of_output_is_known_by_its_start(text: str, fmt: str) -> None:
    assert report_format(text.encode()) == fmt


@pytest.mark.parametrize(
    "path",
    [
        # captured console output with a report further down is read (the report passed
        # over: test_own_output_in_streams.py)
        CAPTURED / "probe-h200" / "quick.txt",
        CAPTURED / "probe-h200" / "inject_corrupt.txt",
        CAPTURED / "probe-h200" / "probe-full.json",
    ],
)
def test_a_file_with_a_report_further_down_is_not_skipped_whole(path: Path) -> None:
    assert report_format(path.read_bytes()) is None


def test_text_headings_know_every_verdict() -> None:
    assert sorted(VERDICTS) == sorted(v.value for v in Verdict)


def test_run_folder_bookkeeping_is_skipped_but_its_records_are_read(tmp_path: Path) -> None:
    folder = tmp_path / "run"
    code = run(
        [sys.executable, "-c", "import sys; print('hello'); sys.exit(3)"],
        folder,
        terminal=io.BytesIO(),
        err=io.StringIO(),
    )
    assert code == 3
    (folder / "report.txt").write_text(
        render_report(diagnose_with_facts(read_paths([str(folder)]))[0], "text")
    )
    result = read_paths([str(folder)])
    read = {str(Path(s.source).relative_to(folder)) for s in result.sources}
    assert {"MANIFEST.json", "console.log", "environment.txt"} <= read
    assert {"node-before/host.json", "node-after/host.json"} <= read
    assert not read & {"command.txt", "report.txt", "node-before/MANIFEST.json"}
    skipped = {str(Path(n.source).relative_to(folder)): n.message for n in result.notes}
    # the wrapper's own records are skipped without a note (every report of the folder
    # carried two); a report someone may have meant as evidence is said to be skipped
    assert not skipped.keys() & {"command.txt", "node-before/MANIFEST.json"}
    assert skipped["report.txt"].startswith("a report nccl-doctor wrote (text)")
    (exit_fact,) = [f for f in result.facts if isinstance(f, WorkerExit)]
    assert (exit_fact.source, exit_fact.exitcode) == ("wrapper", 3)


def test_the_manifest_of_a_job_that_still_runs_is_skipped_without_a_note(tmp_path: Path) -> None:
    """On the H200 every pre-mortem said 'MANIFEST.json: no known evidence kind recognised':
    while the job runs its manifest holds no exit yet, and nothing else is evidence."""
    folder = tmp_path / "run"
    folder.mkdir()
    manifest = {
        "command": "torchrun --nproc-per-node 1 watchdog.py",
        "launcher": "torchrun",
        "on_hang": "wait",
        "stall_s": 5.0,
        "started": "2026-12-04T20:41:50+0000",
        "status": "running",
        "tool": "nccl-doctor run",
    }
    write_manifest(folder / "MANIFEST.json", manifest)
    (folder / "console.log").write_text("rank 0 warm-up done; queueing the long kernel\n")
    result = read_paths([str(folder)])
    assert [n.source for n in result.notes if n.source.endswith("MANIFEST.json")] == []
    assert [Path(s.source).name for s in result.sources] == ["console.log"]
    # once the job ended, the same manifest is read: how it ended is evidence
    write_manifest(folder / "MANIFEST.json", {**manifest, "status": "exited", "exit_code": 1})
    result = read_paths([str(folder)])
    assert sorted(Path(s.source).name for s in result.sources) == ["MANIFEST.json", "console.log"]
    (ended,) = [f for f in result.facts if isinstance(f, WorkerExit)]
    assert (ended.source, ended.exitcode) == ("wrapper", 1)


def test_a_command_file_outside_a_run_folder_is_evidence(tmp_path: Path) -> None:
    (tmp_path / "command.txt").write_text("torchrun --nproc-per-node 8 train.py\n")
    result = read_paths([str(tmp_path)])
    assert [s.source for s in result.sources] == [str(tmp_path / "command.txt")]


def test_every_commands_output_read_back_is_skipped(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Saved next to the logs, the fleet's and the gate's listings were read as evidence:
    ``history --id 1 --format json`` gave a critical driver.version_mismatch, ``check --gate
    --format text`` a critical cuda.unknown_error, the rest ranked causes of nothing."""
    db = f"sqlite:///{tmp_path / 'history.db'}"
    assert main(["diagnose", str(CASE), "--record", "--node", "node17", "--db", db, "-q"]) == 1
    verdicts = tmp_path / "verdicts"
    verdicts.mkdir()
    gate = ["check", "--gate", "--from", str(CASE), "--gate-node", "node17"]
    commands = {
        "history": ["history", "--db", db],
        "history json": ["history", "--id", "1", "--format", "json", "--db", db],
        "history one": ["history", "--id", "1", "--db", db],
        "history none": ["history", "--node", "node99", "--db", db],
        "nodes": ["nodes", "--db", db],
        "nodes json": ["nodes", "--gpu", "node17:0", "--format", "json", "--db", db],
        "parse": ["parse", str(CASE)],
        "gate verdict": [*gate, "--format", "text"],
        "gate json": gate,
    }
    saved: dict[str, Path] = {}
    for name, argv in commands.items():
        capsys.readouterr()
        main(argv)
        saved[name] = tmp_path / f"{name.replace(' ', '-')}.out"
        saved[name].write_text(capsys.readouterr().out)
    (verdicts / "node17.json").write_text(saved["gate json"].read_text())
    for name, argv in {
        "gate plan": ["gate", "plan", str(verdicts)],
        "gate plan json": ["gate", "plan", str(verdicts), "--format", "json"],
    }.items():
        capsys.readouterr()
        main(argv)
        saved[name] = tmp_path / f"{name.replace(' ', '-')}.out"
        saved[name].write_text(capsys.readouterr().out)

    found = {name: report_format(path.read_bytes()) for name, path in saved.items()}
    assert found == {
        "history": "history",
        "history json": "history json",
        "history one": "history",
        "history none": "history",
        "nodes": "nodes",
        "nodes json": "nodes json",
        "parse": "parse",
        "gate verdict": "gate verdict",
        "gate json": "json",
        "gate plan": "gate plan",
        "gate plan json": "gate-plan json",
    }
    result = read_paths([str(p) for p in saved.values()])
    assert result.facts == []
    assert len(result.notes) == len(saved)


@pytest.mark.parametrize(
    "text",
    [
        "node gpu-07: PASS all checks green\n",  # someone's own health script
        "ID   NAME   STATUS\n1    train  failed\n",
        "run 3: loss diverged at step 200\n",
        '{"history": [1, 2], "runs": 3}\n',
        '{"kind": "pod-event", "reason": "OOMKilled"}\n',
    ],
)
def test_look_alikes_of_the_listings_are_evidence(text: str) -> None:
    assert report_format(text.encode()) is None


def test_gate_headings_know_every_status() -> None:
    assert sorted(GATE_STATUSES) == sorted((*ORDER, "UNKNOWN"))
    for kind in KINDS:
        assert (
            report_format(f"run 7: {kind}, failed (not good), recorded x\n".encode()) == "history"
        )
