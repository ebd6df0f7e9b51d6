"""What a new user meets first: help, exit gates, width, colour, verbosity, explain, flags."""

from __future__ import annotations

import fcntl
import json
import os
import pty
import struct
import subprocess
import sys
import termios
from pathlib import Path

import pytest

from nccl_doctor import live_check
from nccl_doctor.cli import build_parser, main
from nccl_doctor.cli_output import text_width, use_color

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "examples" / "h200-cuda-999"  # critical findings
WARNINGS_ONLY = ROOT / "tests/fixtures/captured/check-h200/bundle-bad-env.tgz"  # nccl.env warning
HEALTHY = ROOT / "tests/fixtures/captured/check-h200/bundle-healthy.tgz"
COMMANDS = ("diagnose", "check", "capture", "parse", "rules", "run", "probe", "explain")


@pytest.fixture(autouse=True)
def _plain_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for var in ("COLUMNS", "NO_COLOR", "FORCE_COLOR", "TERM"):
        monkeypatch.delenv(var, raising=False)


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def _help(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    with pytest.raises(SystemExit) as done:
        main([*argv, "--help"])
    assert done.value.code == 0
    return capsys.readouterr().out


# --- help ---------------------------------------------------------------------------------


def test_root_help_opens_with_the_purpose_not_a_developer_note(
    capsys: pytest.CaptureFixture[str],
) -> None:
    text = _help(capsys)
    assert "argv ->" not in text
    purpose = text.split("\n\n")[1]
    assert purpose.startswith("Name the root cause of a failed or hung distributed")
    assert "examples:\n  nccl-doctor diagnose train.log nvidia-smi.txt" in text
    assert "exit codes:\n  0  ran; no finding at or above --fail-on" in text
    assert "  2  could not run" in text
    for command in COMMANDS:
        assert f"\n    {command} " in text  # each command listed with its one-line purpose


@pytest.mark.parametrize("command", COMMANDS)
def test_each_command_help_has_purpose_examples_and_exit_codes(
    command: str, capsys: pytest.CaptureFixture[str]
) -> None:
    text = _help(capsys, command)
    usage, purpose = text.split("\n\n")[:2]
    assert usage.startswith(f"usage: nccl-doctor {command}")
    assert purpose[0].isupper()
    assert len(purpose) > 30
    assert max(len(line) for line in purpose.splitlines()) <= 88  # wrapped, not one long line
    assert "example" in text
    assert "exit codes:" in text
    assert f"nccl-doctor {command}" in text.split("example", 1)[1]


def test_gate_options_where_findings_decide_the_exit_code() -> None:
    subs = next(a for a in build_parser()._actions if a.dest == "command").choices
    assert isinstance(subs, dict)
    for command in ("diagnose", "check", "probe"):
        flags = {f for a in subs[command]._actions for f in a.option_strings}
        assert {"--fail-on", "--exit-zero"} <= flags, command
    for command in ("parse", "run", "capture"):
        flags = {f for a in subs[command]._actions for f in a.option_strings}
        assert "--fail-on" not in flags, command


# --- exit codes ------------------------------------------------------------------------------


def test_fail_on_and_exit_zero_on_real_evidence(capsys: pytest.CaptureFixture[str]) -> None:
    assert _run(capsys, "diagnose", str(EXAMPLE))[0] == 1
    assert _run(capsys, "diagnose", str(EXAMPLE), "--exit-zero")[0] == 0
    assert _run(capsys, "diagnose", str(EXAMPLE), "--fail-on", "warning")[0] == 1
    # a warning alone passes by default, fails with --fail-on warning
    code, out, _ = _run(capsys, "diagnose", str(WARNINGS_ONLY), "--format", "json")
    assert code == 0
    assert {f["severity"] for f in json.loads(out)["findings"]} == {"warning"}
    assert _run(capsys, "diagnose", str(WARNINGS_ONLY), "--fail-on", "warning")[0] == 1
    assert _run(capsys, "diagnose", str(WARNINGS_ONLY), "--fail-on=warning", "--exit-zero")[0] == 0
    assert _run(capsys, "diagnose", str(HEALTHY), "--fail-on", "warning")[0] == 0


def test_exit_zero_keeps_2_for_could_not_run(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    code, _, err = _run(capsys, "diagnose", str(tmp_path / "absent.log"), "--exit-zero")
    assert code == 2
    assert err.startswith("error: no readable evidence")
    with pytest.raises(SystemExit) as done:
        main(["diagnose", str(EXAMPLE), "--fail-on", "info"])
    assert done.value.code == 2
    assert "invalid choice: 'info'" in capsys.readouterr().err


def test_probe_gate_on_a_failed_step(monkeypatch: pytest.MonkeyPatch) -> None:
    """A failed probe step exits 1 like a critical finding; --exit-zero makes it 0."""
    from nccl_doctor.probe import cli as probe_cli

    result = json.loads((ROOT / "tests/fixtures/captured/probe-cpu/probe-full.json").read_text())
    parser = build_parser()
    args = parser.parse_args(["probe", "--device", "cpu", "--format", "json"])
    assert probe_cli.report(result, args) == 0
    result["summary"]["ok"] = False
    assert probe_cli.report(result, args) == 1
    args = parser.parse_args(["probe", "--device", "cpu", "--format", "json", "--exit-zero"])
    assert probe_cli.report(result, args) == 0


# --- width --------------------------------------------------------------------------------


def _widest(text: str) -> int:
    return max(len(line) for line in text.splitlines())


def test_width_flag_and_columns(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    _, narrow, _ = _run(capsys, "diagnose", str(EXAMPLE))
    assert _widest(narrow) <= 80
    assert "…" in narrow  # long evidence lines are cut at 80
    _, wide, _ = _run(capsys, "diagnose", str(EXAMPLE), "--width", "200")
    assert 120 < _widest(wide) <= 200
    assert wide.count("…") < narrow.count("…")
    monkeypatch.setenv("COLUMNS", "150")
    _, cols, _ = _run(capsys, "diagnose", str(EXAMPLE))
    assert 100 < _widest(cols) <= 150
    _, flag, _ = _run(capsys, "diagnose", str(EXAMPLE), "--width", "100")  # the flag wins
    assert 80 < _widest(flag) <= 100


@pytest.mark.parametrize("bad", ["5", "abc", "100000"])
def test_width_out_of_range_is_a_usage_error(bad: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as done:
        main(["diagnose", str(EXAMPLE), "--width", bad])
    assert done.value.code == 2
    err = capsys.readouterr().err
    assert err.startswith("error: argument --width:")
    assert "hint:" in err


def test_width_follows_a_real_terminal() -> None:
    """Through a pseudo-terminal 200 columns wide, with no COLUMNS: lines use the room."""
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 50, 200, 0, 0))
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "NO_COLOR", "FORCE_COLOR")}
    env["PYTHONPATH"] = str(ROOT / "src")
    argv = [sys.executable, "-m", "nccl_doctor", "diagnose", str(EXAMPLE), "--color", "never"]
    proc = subprocess.run(
        argv, check=False, stdout=slave, stderr=subprocess.PIPE, env=env, timeout=120
    )
    os.close(slave)
    chunks = []
    while True:
        try:
            chunk = os.read(master, 65536)
        except OSError:
            break
        if not chunk:
            break
        chunks.append(chunk)
    os.close(master)
    out = b"".join(chunks).decode().replace("\r\n", "\n")
    assert proc.returncode == 1, proc.stderr
    assert out.startswith("nccl-doctor: FAILED")
    assert 120 < _widest(out) <= 200


def test_text_width_resolution_order() -> None:
    class Tty:
        def isatty(self) -> bool:
            return False

        def fileno(self) -> int:
            return -1

    assert text_width(None, Tty(), {}) == 80
    assert text_width(None, Tty(), {"COLUMNS": "132"}) == 132
    assert text_width(None, Tty(), {"COLUMNS": "junk"}) == 80
    assert text_width(None, Tty(), {"COLUMNS": "10"}) == 40  # clamped to a readable minimum
    assert text_width(90, Tty(), {"COLUMNS": "132"}) == 90


# --- colour -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("env", "flag", "ansi"),
    [
        ({}, "auto", False),  # not a terminal
        ({"FORCE_COLOR": "1"}, "auto", True),
        ({"NO_COLOR": "1"}, "always", True),  # the flag wins over the environment
        ({"NO_COLOR": "1", "FORCE_COLOR": "1"}, "auto", False),  # NO_COLOR first, as CPython
        ({"FORCE_COLOR": "1"}, "never", False),
        ({"FORCE_COLOR": ""}, "auto", False),  # set but empty: not set
    ],
)
def test_color_from_flag_and_environment(
    env: dict[str, str],
    flag: str,
    ansi: bool,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    _, out, _ = _run(capsys, "diagnose", str(EXAMPLE), "--color", flag)
    assert ("\x1b[" in out) is ansi
    if ansi:
        assert "\x1b[1;31mFAILED" in out  # colour, not bold alone


def test_no_color_in_a_terminal_and_dumb_terminals() -> None:
    class Tty:
        def isatty(self) -> bool:
            return True

        def fileno(self) -> int:
            return 1

    assert use_color("auto", Tty(), {}) is True
    assert use_color("auto", Tty(), {"NO_COLOR": "1"}) is False
    assert use_color("auto", Tty(), {"TERM": "dumb"}) is False
    assert use_color("auto", Tty(), {"TERM": "dumb", "FORCE_COLOR": "1"}) is True


def test_color_never_goes_into_a_file(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("FORCE_COLOR", "1")
    _run(capsys, "diagnose", str(EXAMPLE), "-o", str(tmp_path / "r.txt"))
    assert "\x1b[" not in (tmp_path / "r.txt").read_text(encoding="utf-8")


# --- quiet / verbose ----------------------------------------------------------------------


def test_quiet_and_verbose(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    _, normal, _ = _run(capsys, "diagnose", str(EXAMPLE))
    code, quiet, err = _run(capsys, "diagnose", str(EXAMPLE), "--quiet")
    assert code == 1
    lines = quiet.splitlines()
    assert lines[0] == normal.splitlines()[0]
    assert lines[1].startswith("CRITICAL gpu.contention  Other processes")
    report = json.loads(_run(capsys, "diagnose", str(EXAMPLE), "--format", "json")[1])
    assert len(lines) == 1 + len(report["findings"])
    _, verbose, _ = _run(capsys, "diagnose", str(EXAMPLE), "-v")
    assert "…" not in verbose  # every evidence line whole
    assert "more lines" not in verbose
    assert _widest(verbose) <= 80
    assert len(verbose) > len(normal)
    _, _, err = _run(capsys, "diagnose", str(EXAMPLE), "-q", "-o", str(tmp_path / "r.md"))
    assert err == ""  # no "wrote ..." note
    _, _, err = _run(capsys, "diagnose", str(EXAMPLE), "-o", str(tmp_path / "r.md"))
    assert err == f"wrote {tmp_path / 'r.md'}\n"
    with pytest.raises(SystemExit):
        main(["diagnose", str(EXAMPLE), "-q", "-v"])
    assert "not allowed with argument" in capsys.readouterr().err


#: One rank's DDP start-up failure (no cause in it) and the node's ibstatus, one port down:
#: the only finding is context (an INFO note on the ports of a one-node job).
_UNEXPLAINED_LOG = """\
node1:1234:1234 [0] NCCL INFO Bootstrap : Using eth0:10.0.0.1<0>
node1:1234:1234 [0] NCCL INFO NET/IB : Using [0]mlx5_0:1/IB ; OOB eth0:10.0.0.1<0>
Traceback (most recent call last):
  File "train.py", line 10, in <module>
    model = DDP(model, device_ids=[rank])
torch.distributed.DistBackendError: NCCL error in: ../torch/csrc/distributed/c10d/\
ProcessGroupNCCL.cpp:1970, unhandled system error (run with NCCL_DEBUG=INFO for details), \
NCCL version 2.21.5
"""
_PORTS = """\
Infiniband device 'mlx5_0' port 1 status:
\tstate:\t 4: ACTIVE
\tphys state:\t 5: LinkUp
\trate:\t 200 Gb/sec (4X HDR)
\tlink_layer:\t InfiniBand

Infiniband device 'mlx5_1' port 1 status:
\tstate:\t 1: DOWN
\tphys state:\t 3: Disabled
\trate:\t 10 Gb/sec (4X SDR)
\tlink_layer:\t InfiniBand
"""


def test_a_failure_only_context_explains_leads_with_its_possible_causes(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    (tmp_path / "rank0.log").write_text(_UNEXPLAINED_LOG, encoding="utf-8")
    (tmp_path / "ibstatus.txt").write_text(_PORTS, encoding="utf-8")
    report = json.loads(_run(capsys, "diagnose", str(tmp_path), "--format", "json")[1])
    assert [(f["id"], f["severity"], f["root_cause"]) for f in report["findings"]] == [
        ("net.ib_link", "info", False)
    ]
    first = report["hypotheses"][0]["id"]
    code, quiet, _ = _run(capsys, "diagnose", str(tmp_path), "--quiet")
    assert code == 0  # no critical finding (the exit codes' contract), though it failed
    lines = quiet.splitlines()
    assert lines[0] == "nccl-doctor: INCONCLUSIVE  (1 findings, 0 root causes)"
    assert lines[1].startswith("INFO     net.ib_link")
    assert lines[2].startswith(f"possible {first}  (")  # the note does not hide the answer
    assert len(lines) == 2 + len(report["hypotheses"])
    heading = "Possible causes of NCCL reported a system error (ncclSystemError) (ranked)"
    text = _run(capsys, "diagnose", str(tmp_path), "--width", "200")[1]
    assert f"\n{heading}:\n" in text
    assert "Other possible causes" not in text
    markdown = _run(capsys, "diagnose", str(tmp_path), "--format", "markdown")[1]
    assert f"### {heading}" in markdown
    html = _run(capsys, "diagnose", str(tmp_path), "--format", "html")[1]
    assert f"<h2>{heading}</h2>" in html
    # beside a root cause the same differential is the alternatives, and --quiet names the cause
    _, normal, _ = _run(capsys, "diagnose", str(EXAMPLE))
    assert "\nOther possible causes of " in normal
    assert "possible " not in _run(capsys, "diagnose", str(EXAMPLE), "--quiet")[1]


# --- explain ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("term", "head", "ids"),
    [
        (["999"], 'CUDA error 999: cudaErrorUnknown / CUDA_ERROR_UNKNOWN "unknown error"', 1),
        (["cudaErrorUnknown"], "CUDA error 999: cudaErrorUnknown", 1),
        (["CUDA_ERROR_UNKNOWN"], "CUDA error 999: cudaErrorUnknown", 1),
        (["cuda", "30"], 'CUDA error 30 before CUDA 10.1: cudaErrorUnknown "unknown error"', 1),
        (["xid", "79"], "Xid 79: GPU has fallen off the bus", 1),
        (["Xid79"], "Xid 79: GPU has fallen off the bus", 1),
        (["ncclRemoteError"], "NCCL result 6: ncclRemoteError", 1),
        (["nccl", "6"], "NCCL result 6: ncclRemoteError", 1),
        (["unhandled", "system", "error"], "NCCL result 2: ncclSystemError", 0),
    ],
)
def test_explain_codes(
    term: list[str], head: str, ids: int, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = _run(capsys, "explain", *term)
    assert (code, err) == (0, "")
    assert " ".join(out.split()).startswith(head)
    want = {
        "999": "cuda.unknown_error",
        "cudaErrorUnknown": "cuda.unknown_error",
        "CUDA_ERROR_UNKNOWN": "cuda.unknown_error",
        "cuda": "cuda.unknown_error",
        "xid": "gpu.lost",
        "Xid79": "gpu.lost",
        "ncclRemoteError": "launch.rank_crash",
        "nccl": "launch.rank_crash",
    }.get(term[0])
    if ids:
        assert f"Diagnosis: {want} (nccl-doctor explain {want})" in out
    else:
        assert "Diagnosis: no catalogue id by itself" in out


def test_explain_a_bare_number_gives_every_reading(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = _run(capsys, "explain", "30")
    assert code == 0
    flat = " ".join(out.split())
    assert flat.startswith("30 is a number of several kinds; each reading follows")
    assert "CUDA error 30 before CUDA 10.1: cudaErrorUnknown" in flat
    assert "(CUDA 10.1 renumbered it 999)" in flat
    assert "Xid 30: GPU semaphore access error" in flat
    _, out, _ = _run(capsys, "explain", "4")
    flat = " ".join(out.split())
    assert "CUDA error 4: cudaErrorCudartUnloading" in flat
    assert "CUDA error 4 before CUDA 10.1: cudaErrorLaunchFailure" in flat
    assert "NCCL result 4: ncclInvalidArgument" in flat
    assert "the message printed beside the number tells which" in flat


def test_explain_keeps_catalogue_ids_and_rejects_the_unknown(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, out, _ = _run(capsys, "explain", "gpu.contention")
    assert code == 0
    assert out.startswith("gpu.contention — ")
    code, _, err = _run(capsys, "explain", "gpu.contension")
    assert code == 2
    assert err == "error: no diagnosis 'gpu.contension' (hint: did you mean gpu.contention?)\n"
    code, _, err = _run(capsys, "explain", "xid", "99999")
    assert code == 2
    assert err.startswith("error: nothing to explain for 'xid 99999'")


# --- one output flag, install hints --------------------------------------------------------


def test_output_flag_is_o_everywhere_and_probe_keeps_out(tmp_path: Path) -> None:
    parser = build_parser()
    subs = next(a for a in parser._actions if a.dest == "command").choices
    assert isinstance(subs, dict)
    for command in ("diagnose", "check", "capture", "parse", "probe"):
        flags = {f for a in subs[command]._actions for f in a.option_strings}
        assert {"-o", "--output"} <= flags, command
    assert parser.parse_args(["probe", "-o", "a.json"]).out == "a.json"
    assert parser.parse_args(["probe", "--output", "b.json"]).out == "b.json"
    assert parser.parse_args(["probe", "--out", "c.json"]).out == "c.json"  # the old spelling
    assert "--out " not in subs["probe"].format_help()  # hidden


def test_parse_writes_to_o(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    target = tmp_path / "facts.json"
    code, out, err = _run(capsys, "parse", str(EXAMPLE / "nvidia-smi.txt"), "--format", "json",
                          "-o", str(target))  # fmt: skip
    assert (code, out, err) == (0, "", f"wrote {target}\n")
    assert json.loads(target.read_text(encoding="utf-8"))["sections"][0]["kind"] == "nvidia-smi"


def test_install_hints_work_without_a_published_package(monkeypatch: pytest.MonkeyPatch) -> None:
    line = live_check.headline({"outcome": "not_installed", "gpus": []})
    assert line is not None
    assert "pip install 'nvidia-ml-py>=12'" in line
    assert "pip install -e '.[live]'" in line
    assert "nccl-doctor[live]" not in line
    from nccl_doctor.errors import UsageError
    from nccl_doctor.probe import cli as probe_cli

    real = probe_cli.importlib.util.find_spec
    monkeypatch.setattr(
        probe_cli.importlib.util,
        "find_spec",
        lambda name, *a: None if name == "torch" else real(name, *a),
    )
    args = build_parser().parse_args(["probe", "--device", "cpu"])
    with pytest.raises(UsageError) as caught:
        probe_cli.options(args)
    assert "this Python has none" in caught.value.message
    assert "pip install 'torch>=2.1'" in caught.value.hint
    assert "pip install -e '.[probe]'" in caught.value.hint
