"""``nccl-doctor parse`` end to end: kinds found, JSON shape, bad input."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from nccl_doctor.cli import main
from nccl_doctor.evidence.reader import read_paths
from nccl_doctor.facts.text import TextLine
from tests.helpers import FORMATS

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "examples" / "h200-cuda-999"
FIXTURES = sorted(p for p in FORMATS.rglob("*.txt"))


def _kind_of_folder(path: Path) -> str:
    return path.parent.name


@pytest.mark.parametrize("path", FIXTURES, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_every_shared_fixture_is_recognised_as_its_folders_kind(path: Path) -> None:
    result = read_paths([str(path)])
    kinds = [s.kind for s in result.sections]
    assert _kind_of_folder(path) in kinds, kinds
    assert result.notes == []


def test_fixture_set_is_complete() -> None:
    assert len(FIXTURES) == 66


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_example_json_shape_and_kinds(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = _run(capsys, "parse", str(EXAMPLE), "--format", "json")
    assert (code, err) == (0, "")
    data = json.loads(out)
    assert set(data) == {"sections", "coverage"}
    by_source: dict[str, set[str]] = {}
    for section in data["sections"]:
        assert set(section) >= {"kind", "source", "lines", "facts"}
        a, b = section["lines"]
        assert 1 <= a <= b
        by_source.setdefault(Path(section["source"]).name, set()).add(section["kind"])
        for fact in section["facts"]:
            assert a <= fact["cite"]["line"] <= b or section["kind"] in {"traceback", "torchrun"}
    assert by_source["nvidia-smi.txt"] == {"nvidia-smi"}
    assert "ibstatus" in by_source["ibstatus.txt"]
    assert "collect_env" in by_source["collect_env.txt"]
    assert {"torchrun", "traceback"} <= by_source["train.log"]
    sources = {Path(s["source"]).name: s for s in data["coverage"]["sources"]}
    assert sources["train.log"]["lines"] == 95
    assert sources["nvidia-smi.txt"]["lines"] == 15


def test_mixed_paste_splits_into_sections(tmp_path: Path) -> None:
    smi = (FORMATS / "nvidia-smi" / "570.195-h100-slurm-srun-prompt-no-procs.txt").read_text()
    ib = (FORMATS / "ibstat" / "cx6dx-mt4125-roce-100g-2port.txt").read_text()
    paste = (
        "I run 2 nodes and training hangs at the first allreduce.\n\n"
        f"```\n{smi}```\n\nHere is ibstat:\n\n```\n{ib}```\n\n"
        "and the error:\n```\n"
        "Traceback (most recent call last):\n"
        '  File "train.py", line 3, in <module>\n'
        "    dist.all_reduce(t)\n"
        "RuntimeError: NCCL error in: ../torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:1269, "
        "unhandled system error, NCCL version 2.14.3\n"
        "```\n"
    )
    path = tmp_path / "issue.md"
    path.write_text(paste)
    result = read_paths([str(path)])
    got = [(s.kind, s.start, s.end) for s in result.sections]
    assert got == [
        ("text", 1, 1),
        ("text", 4, 6),  # the srun and prompt lines inside the fence
        ("nvidia-smi", 7, 25),
        ("text", 28, 28),
        ("ibstat", 31, 64),
        ("text", 67, 67),
        ("traceback", 69, 72),
    ]
    prose = [f for f in result.facts if isinstance(f, TextLine)]
    assert [(f.cite.line, f.fenced) for f in prose] == [
        (1, False),
        (4, True),
        (5, True),
        (6, True),
        (28, False),
        (67, False),
    ]
    assert prose[0].text == "I run 2 nodes and training hangs at the first allreduce."


def test_stdin_is_read(tmp_path: Path) -> None:
    data = (FORMATS / "xid" / "xid63-row-remapper-bare-line.txt").read_bytes()
    proc = subprocess.run(
        [sys.executable, "-m", "nccl_doctor", "parse", "-", "--format", "json"],
        input=data,
        capture_output=True,
        check=False,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    sections = json.loads(proc.stdout)["sections"]
    assert [s["kind"] for s in sections] == ["xid"]
    assert sections[0]["source"] == "<stdin>"


def test_nothing_usable_is_one_line_error_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = _run(capsys, "parse", str(tmp_path / "nope.log"))
    assert code == 2
    assert out == ""
    assert err.startswith("error: no readable evidence")
    assert err.count("\n") == 1
    assert "hint:" in err


def test_prose_alone_is_free_text(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "report.txt"
    path.write_text("Training hangs at init when I use two machines.\n\nIt works on one.\n")
    code, out, err = _run(capsys, "parse", str(path), "--format", "json")
    assert (code, err) == (0, "")
    (section,) = json.loads(out)["sections"]
    assert (section["kind"], section["lines"]) == ("text", [1, 3])
    assert [f["text"] for f in section["facts"]] == [
        "Training hangs at init when I use two machines.",
        "It works on one.",
    ]


def test_blank_text_is_error_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "blank.txt"
    path.write_text("\n   \n\t\n")
    code, _, err = _run(capsys, "parse", str(path))
    assert code == 2
    assert err.startswith("error: no known evidence kind")


def test_bad_inputs_give_partial_results_with_notes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    good = tmp_path / "good.log"
    good.write_bytes(
        b"\xff\xfe garbage \x80\n"
        + b"x" * (50 << 20)
        + b"\n"
        + (FORMATS / "xid" / "xid63-row-remapper-bare-line.txt").read_bytes()
    )
    (tmp_path / "core").write_bytes(b"\x00\x01\x02" * 100)
    (tmp_path / "empty").write_bytes(b"")
    (tmp_path / "dangling").symlink_to(tmp_path / "nowhere")
    (tmp_path / "cut.tgz").write_bytes(b"\x1f\x8b\x08\x00" + b"\x00" * 20)
    code, out, err = _run(capsys, "parse", str(tmp_path), "--format", "json")
    assert (code, err) == (0, "")
    data = json.loads(out)
    assert [s["kind"] for s in data["sections"]] == ["xid"]
    assert data["sections"][0]["lines"][0] == 3
    messages = " | ".join(n["message"] for n in data["coverage"]["notes"])
    for expected in ("longer than", "binary", "empty", "dangling", "corrupt"):
        assert expected in messages


def test_console_script_usage_error_exit_2() -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "nccl_doctor", "parse"], capture_output=True, text=True, check=False
    )
    assert proc.returncode == 2
    assert proc.stderr.startswith("error:")
    assert "Traceback" not in proc.stderr
