"""No output format leaks a secret, runs a terminal escape, or names what the sharer hid.

End to end through the command line: evidence with planted secrets, escape
sequences, invisible characters, hostile file names, hosts and users goes
through ``parse`` (text, json) and ``diagnose`` (text, json, markdown, html).
"""

from __future__ import annotations

import json
import re
import shutil
import stat
from pathlib import Path

import pytest

from nccl_doctor.cli import main
from tests.run._fr_dumps import real_dump, write

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "examples" / "h200-cuda-999"
XML = ROOT / "tests/fixtures/formats/nvidia-smi-xml/rtx4000-sff-ada-595.84-v13-procs.txt"

#: Planted secrets, and the part of each that must never be printed.
SECRETS = {
    "redis://:hunter2pw@cache-7:6379/0": "hunter2pw",
    "--api-key ab12cd34ef": "ab12cd34ef",
    "GITLAB=glpat-Ab1Cd2Ef3Gh4Ij5Kl6Mn": "glpat-Ab1Cd2",
    "AccountKey=Zm9vYmFyYmF6cXV4MTIzNDU2Nzg5MA+/==;": "Zm9vYmFyYmF6",
    "https://a.blob.core.windows.net/c?sv=2022&sig=AbC0dE1fG2x": "AbC0dE1fG2x",
}
ENV = {
    "HF_TOKEN": "hf_AbCdEfGhIjKlMnOpQrStUvWxYz0123456789",
    "WANDB_API_KEY": "0123456789abcdef0123456789abcdef",
    "DB_PASS": "pw-in-clear",
    "SIGNING_KEY": "sk-signing-material",
}
#: Terminal escapes and invisible characters planted in the same line.
HOSTILE = "\x1b]0;pwned-title\x07\x1b]52;c;cm0gLXJmIH4K\x07\x1b[2J\u202eevil\u2066\u200b"
FORMATS = ("text", "json", "markdown", "html")


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def _planted(tmp_path: Path) -> Path:
    """The example's evidence with secrets and escapes in the first failure's line, and env."""
    folder = tmp_path / "evidence"
    shutil.copytree(EXAMPLE, folder, ignore=shutil.ignore_patterns("SOURCE.md"))
    log = folder / "train.log"
    lines = log.read_text(encoding="utf-8").split("\n")
    assert lines[91].startswith("torch.distributed.DistBackendError: NCCL error")
    lines[91] += " (while loading " + " ".join(SECRETS) + f") {HOSTILE}"
    log.write_text("\n".join(lines), encoding="utf-8")
    env = "".join(f"{k}={v}\n" for k, v in ENV.items())
    (folder / "env.txt").write_text(f"NCCL_DEBUG=INFO\n{env}", encoding="utf-8")
    return folder


def _assert_clean(out: str, fmt: str) -> None:
    for leaked in [*SECRETS.values(), *ENV.values()]:
        assert leaked not in out, (fmt, leaked)
    for mark in ("\x1b", "\\u001b", "pwned-title", "cm0gLXJmIH4K", "\u202e", "\u2066", "\u200b"):
        assert mark not in out, (fmt, mark)


def test_parse_redacts_every_fact_and_strips_escapes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Item 11: ``parse`` printed HF_TOKEN=hf_... and WANDB_API_KEY in clear."""
    folder = _planted(tmp_path)
    for fmt in ("text", "json"):
        code, out, _ = _run(capsys, "parse", str(folder), "--format", fmt)
        assert code == 0
        _assert_clean(out, f"parse {fmt}")
        assert "HF_TOKEN" in out
        assert "WANDB_API_KEY" in out
        assert "[REDACTED]" in out
    data = json.loads(_run(capsys, "parse", str(folder), "--format", "json")[1])
    said = {
        f["text"]
        for s in data["sections"]
        if s["source"].endswith("/env.txt")
        for f in s["facts"]
        if "text" in f
    }
    assert said == {f"{name}=[REDACTED]" for name in ENV}


@pytest.mark.parametrize("fmt", FORMATS)
def test_diagnose_never_shows_a_planted_secret_or_escape(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], fmt: str
) -> None:
    """Items 12 and 14: the first failure's line carries them; every format shows that line."""
    folder = _planted(tmp_path)
    code, out, _ = _run(capsys, "diagnose", str(folder), "--format", fmt, "--color", "never")
    assert code == 1
    _assert_clean(out, fmt)
    assert "[REDACTED]" in out
    assert "GITLAB=[REDACTED]" in out or fmt == "text"  # text wraps the long line


def test_terminal_colours_stay_but_no_other_escape(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = _planted(tmp_path)
    _, out, _ = _run(capsys, "diagnose", str(folder), "--color", "always")
    assert "\x1b[" in out  # our own colours
    assert "\x1b]" not in out
    assert "\x1b[2J" not in out
    assert set(re.findall(r"\x1b\[[0-9;]*([A-Za-z])", out)) == {"m"}


def test_process_names_in_nvidia_smi_xml_are_redacted(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Item 12: ``--password x`` in an XML process name reached text, json and markdown."""
    planted = (
        "python train.py --hf-token hf_AbCdEfGhIjKlMnOpQrStUvWxYz0123456789 --password hunter2x"
    )
    xml = XML.read_text(encoding="utf-8")
    assert "<process_name>python</process_name>" in xml
    folder = tmp_path / "smi"
    folder.mkdir()
    (folder / "nvidia-smi.xml").write_text(
        xml.replace(
            "<process_name>python</process_name>", f"<process_name>{planted}</process_name>"
        ),
        encoding="utf-8",
    )
    outputs = {
        f"parse {fmt}": _run(capsys, "parse", str(folder), "--format", fmt)[1]
        for fmt in ("text", "json")
    }
    for fmt in FORMATS:
        outputs[fmt] = _run(capsys, "diagnose", str(folder), "--format", fmt, "--color", "never")[1]
    for fmt, out in outputs.items():
        assert "hunter2x" not in out, fmt
        assert "hf_AbCdEfGh" not in out, fmt
    for fmt in ("parse text", "parse json", "html"):
        assert "--password [REDACTED]" in outputs[fmt], fmt


def _outside_code(markdown: str) -> str:
    """Markdown without its fenced blocks and code spans: what GitHub would interpret."""
    text = re.sub(r"(?ms)^(`{3,})[^\n]*\n.*?^\1\s*$", "", markdown)
    return re.sub(r"(`+)(?:(?!\1).)+\1", "", text)


def test_hostile_file_names_are_inert(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Item 14: a file name must not inject a heading, an HTML tag or a terminal escape."""
    folder = tmp_path / "logs"
    folder.mkdir()
    name = "rank0\x1b]0;pwned-title\x07 <img src=x onerror=alert(1)>\n# Owned \u202e.log"
    (folder / name).write_text(
        "[W socket.cpp:601] [c10d] The client socket has failed to connect to [node0]:29500 "
        "(errno: 110 - Connection timed out).\n",
        encoding="utf-8",
    )
    outs = {
        fmt: _run(capsys, "diagnose", str(folder), "--format", fmt, "--color", "never")[1]
        for fmt in FORMATS
    }
    for fmt, out in outs.items():
        assert "pwned-title" not in out, fmt
        assert "\x1b" not in out, fmt
        assert "\u202e" not in out, fmt
        assert "Owned" in out, fmt  # the name is shown, made harmless
    assert "<img" not in outs["html"]
    assert "&lt;img src=x onerror=alert(1)&gt;" in outs["html"]
    shown = _outside_code(outs["markdown"])
    assert "<img" not in shown
    assert not [line for line in outs["markdown"].splitlines() if line.startswith("# ")]
    assert json.loads(outs["json"])["first_failure"]["source"]["source"].endswith(
        "rank0 <img src=x onerror=alert(1)> # Owned .log"
    )


# -- pseudonyms and the sharer's choice (item 13) -------------------------------------
STORE_LOG = """\
[rank1]: Traceback (most recent call last):
[rank1]:   File "/workspace/alice/train.py", line 40, in <module>
[rank1]:     load(args.ckpt)
[rank1]: FileNotFoundError: [Errno 2] No such file or directory: '/lustre/bob/ckpt/step-100.pt'
[rank0]: [W socket.cpp:601] [c10d] The client socket has failed to connect to [node0]:29500 \
(errno: 110 - Connection timed out).
[rank0]: NCCL WARN socketStartConnect: Connect to server 10.38.10.112.
[rank0]: torch.distributed.DistNetworkError: The client socket has timed out after 1800000ms \
while trying to connect to (node0, 29500).
"""
#: What the shared formats must hide: a store peer, a user in a /lustre path, a server's address.
REAL = ("node0", "bob", "10.38.10.112")


def _store_log(tmp_path: Path) -> Path:
    path = tmp_path / "store.log"
    path.write_text(STORE_LOG, encoding="utf-8")
    return path


@pytest.mark.parametrize("fmt", ["markdown", "html"])
def test_shared_formats_pseudonymise_peers_and_users(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], fmt: str
) -> None:
    log = _store_log(tmp_path)
    code, out, _ = _run(capsys, "diagnose", str(log), "--format", fmt)
    assert code == 1
    for real in REAL:
        assert real not in out, real
    assert "host-1" in out
    kept = _run(capsys, "diagnose", str(log), "--format", fmt, "--keep-names")[1]
    assert "node0:29500" in kept
    assert "/lustre/bob/ckpt" in kept
    if fmt == "html":
        assert "server 10.38.10.112." in kept  # the raw evidence shows every fact's line
        assert "real host names, addresses and users kept" in kept
        assert "hosts, addresses and users pseudonymised" in out


def test_pseudonym_key_maps_back_and_is_private(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    log = _store_log(tmp_path)
    key = tmp_path / "key.json"
    key.write_text("old", encoding="utf-8")
    key.chmod(0o644)
    report = tmp_path / "report.html"
    code, _, err = _run(
        capsys,
        "diagnose",
        str(log),
        "--format",
        "html",
        "-o",
        str(report),
        "--pseudonym-key",
        str(key),
    )
    assert code == 1
    assert f"wrote {key}" in err
    assert stat.S_IMODE(key.stat().st_mode) == 0o600
    mapping = json.loads(key.read_text(encoding="utf-8"))
    page = report.read_text(encoding="utf-8")
    assert mapping["host-1"] == "node0"
    assert set(mapping.values()) >= set(REAL)
    for fake in mapping:
        assert fake in page, fake


@pytest.mark.parametrize("extra", [["--format", "text"], ["--format", "html", "--keep-names"]])
def test_a_pseudonym_key_without_pseudonyms_is_a_usage_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], extra: list[str]
) -> None:
    key = tmp_path / "key.json"
    code, out, err = _run(
        capsys, "diagnose", str(_store_log(tmp_path)), "--pseudonym-key", str(key), *extra
    )
    assert (code, out) == (2, "")
    assert err.startswith("error: --pseudonym-key needs pseudonymised output (hint: ")
    assert not key.exists()


def test_flight_recorder_strings_pass_the_gate(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A dump is read whole, not line by line: its strings go through the same gate."""
    dump = real_dump()
    dump["entries"][0]["profiling_name"] = "nccl:all_reduce \x1b]0;pwned-title\x07token=abc123sec"
    path = tmp_path / "fr_dump_rank0"
    write(path, dump)
    for fmt in ("text", "json"):
        out = _run(capsys, "parse", str(path), "--format", fmt)[1]
        assert "abc123sec" not in out
        assert "pwned-title" not in out
        assert "nccl:all_reduce token=[REDACTED]" in out
