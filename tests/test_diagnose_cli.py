"""``nccl-doctor diagnose``, ``rules`` and ``explain`` end to end."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from nccl_doctor.cli import main
from nccl_doctor.rules import CATALOGUE

if TYPE_CHECKING:
    import pytest

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "examples" / "h200-cuda-999"
CAPTURED = ROOT / "tests" / "fixtures" / "captured"


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_example_json_names_contention_on_rank_2s_gpu(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = _run(capsys, "diagnose", str(EXAMPLE), "--format", "json")
    assert (code, err) == (1, "")
    data = json.loads(out)
    assert data["schema_version"] == 1
    assert data["verdict"] == "failed"
    ids = [f["id"] for f in data["findings"]]
    roots = [f["id"] for f in data["findings"] if f["root_cause"]]
    # one root cause: the 999 checklist follows the contention its first step names
    assert roots == ["gpu.contention"]
    assert ids[:2] == ["gpu.contention", "cuda.unknown_error"]
    contention = data["findings"][ids.index("gpu.contention")]
    # the mapping is assumed and rank 0's more crowded GPU did not fail first: not high
    assert contention["confidence"] == "medium"
    assert any("rank 0 on GPU 0 shared it with more (78816 MiB" in d for d in contention["detail"])
    assert any("rank 2's GPU is assumed" in d for d in contention["detail"])
    assert "694989" in contention["summary"]
    assert "tritonserver" in contention["summary"]
    assert "2" in contention["subjects"]["gpus"]
    assert 2 in contention["subjects"]["ranks"]
    first = data["first_failure"]
    assert first["rank"] == 2
    assert first["source"]["line"] == 92
    unknown = data["findings"][ids.index("cuda.unknown_error")]
    assert unknown["follows"] == ["gpu.contention"]
    checklist = " ".join(unknown["fix"]).lower()
    order = [checklist.find(w) for w in ("694989", "fabric", "nvidia_uvm", "dmesg")]
    assert -1 not in order
    assert order == sorted(order)
    # an mp.spawn job: keeping each rank's output is said the mp.spawn way, not torchrun's
    steps = " ".join(data["coverage"]["next_steps"])
    assert "torchrun" not in steps
    assert "mp.spawn shows only the first failing process's error" in steps
    assert "output of rank 3 (world size 4)" in data["coverage"]["missing"]


def test_example_pasted_as_one_blob_keeps_the_process_table(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    # the traceback right above the nvidia-smi output, no blank line between
    blob = tmp_path / "issue.txt"
    blob.write_text(
        (EXAMPLE / "train.log").read_text(encoding="utf-8")
        + (EXAMPLE / "nvidia-smi.txt").read_text(encoding="utf-8"),
        encoding="utf-8",
    )
    code, out, _ = _run(capsys, "diagnose", str(blob), "--format", "json")
    assert code == 1
    data = json.loads(out)
    roots = [f for f in data["findings"] if f["root_cause"]]
    assert [f["id"] for f in roots] == ["gpu.contention"]
    assert "Rank 2 failed on a GPU it shared" in roots[0]["summary"]
    assert not data["first_failure"]["message"].endswith("N/A")


def test_example_ib_ports_are_information_not_cause(capsys: pytest.CaptureFixture[str]) -> None:
    _, out, _ = _run(capsys, "diagnose", str(EXAMPLE), "--format", "json")
    data = json.loads(out)
    for finding in data["findings"]:
        if finding["id"] == "net.ib_link":
            assert finding["severity"] == "info"
            assert finding["root_cause"] is False


def test_example_text_fits_80_columns(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("COLUMNS", raising=False)  # not a terminal, no COLUMNS: 80
    monkeypatch.delenv("FORCE_COLOR", raising=False)
    code, out, _ = _run(capsys, "diagnose", str(EXAMPLE))
    assert code == 1
    assert out.startswith("nccl-doctor: FAILED")
    assert "First failure: rank 2" in out
    assert max(len(line) for line in out.splitlines()) <= 80
    assert "\x1b[" not in out


def test_markdown_pseudonymises_hosts_and_redacts_secrets(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    log = tmp_path / "train.log"
    token = "hf_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7"
    log.write_text(
        "gpu-node-17:4242:4242 [0] NCCL INFO Bootstrap : Using eth0:10.20.30.40<0>\n"
        f"HF_TOKEN={token}\n"
        "gpu-node-17:4242:4242 [0] misc/socket.cc:484 NCCL WARN socketStartConnect: "
        "Connect to 10.20.30.41<43857> failed : Software caused connection abort\n",
        encoding="utf-8",
    )
    for fmt in ("text", "json", "markdown"):
        _, out, _ = _run(capsys, "diagnose", str(log), "--format", fmt)
        assert token not in out
    _, out, _ = _run(capsys, "diagnose", str(log), "--format", "markdown")
    assert "gpu-node-17" not in out
    assert "10.20.30.41" not in out
    assert re.search(r"host-1|10\.0\.0\.\d", out)


def test_healthy_info_log_gets_no_critical(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = _run(capsys, "diagnose", str(CAPTURED / "h200-580"), "--format", "json")
    data = json.loads(out)
    assert code == 0
    assert [f["id"] for f in data["findings"] if f["severity"] == "critical"] == []
    assert data["verdict"] in ("healthy", "degraded")


def test_rules_lists_the_catalogue_in_order(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = _run(capsys, "rules")
    assert code == 0
    assert [line.split()[0] for line in out.splitlines()] == list(CATALOGUE)


def test_explain_prints_the_four_sections(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = _run(capsys, "explain", "gpu.contention")
    assert code == 0
    for heading in ("What it means", "Why it matters", "Evidence", "Fix"):
        assert heading in out


def test_explain_unknown_id_is_a_one_line_error(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = _run(capsys, "explain", "gpu.contentoin")
    assert (code, out) == (2, "")
    assert err.startswith("error: no diagnosis 'gpu.contentoin'")
    assert "gpu.contention" in err
    assert err.count("\n") == 1


def test_diagnose_missing_file_is_a_one_line_error(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = _run(capsys, "diagnose", "/nonexistent/x.log")
    assert (code, out) == (2, "")
    assert err.startswith("error: ")
    assert err.count("\n") == 1


def test_diagnose_does_not_import_torch() -> None:
    code = (
        "import sys, contextlib, io\n"
        "from nccl_doctor.cli import main\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n"
        f"    main(['diagnose', {str(EXAMPLE)!r}, '--format', 'json'])\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('torch', 'numpy')))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout
    assert out.strip() == "[]"
