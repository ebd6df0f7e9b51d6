"""``diagnose EVIDENCE --against REF``: what changed, and why the retry passed, on real pairs.

The pairs (``tests/fixtures/captured/against-h200``: one job on the H200 as
is and with one variable changed; ``tests/fixtures/against``: captures
replayed with node names, see its SOURCE.md) run through the whole CLI: the
reference is written by ``diagnose --format json`` and read back.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from nccl_doctor import __version__
from nccl_doctor.cli import main

ROOT = Path(__file__).resolve().parents[2]
H200 = ROOT / "tests" / "fixtures" / "captured" / "against-h200"
PAIRS = ROOT / "tests" / "fixtures" / "against"
ZOO = ROOT / "tests" / "fixtures" / "captured" / "zoo-h200"
NIC = ROOT / "tests" / "cases" / "nccl" / "internal" / "internal_error_busid_nic"


def reference(tmp_path: Path, *paths: Path, name: str = "ref.json") -> Path:
    """A JSON report of ``paths``, written by the CLI as a user would."""
    out = tmp_path / name
    main(["diagnose", *map(str, paths), "--format", "json", "-o", str(out), "-q"])
    return out


def against(
    capsys: pytest.CaptureFixture[str], ref: Path | str, *paths: Path, fmt: str = "json"
) -> tuple[int, str]:
    capsys.readouterr()
    code = main(["diagnose", *map(str, paths), "--against", str(ref), "--format", fmt])
    return code, capsys.readouterr().out


def keyed(data: dict) -> dict[tuple[str, str], dict]:
    return {(c["section"], c["key"]): c for c in data["against"]["changes"]}


# -- the retry passed --------------------------------------------------------


def test_the_retry_passed_because_the_failed_run_set_a_bad_interface(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    ref = reference(tmp_path, H200 / "good")
    code, out = against(capsys, ref, H200 / "bad_ifname")
    assert code == 1  # the exit code is the diagnosis's, as without --against
    data = json.loads(out)["against"]
    assert data["reference"] == {"source": str(ref), "verdict": "healthy",
                                 "tool_version": __version__}  # fmt: skip
    env = {c["key"]: c for c in data["changes"] if c["section"] == "environment"}
    assert env == {
        "NCCL_SOCKET_IFNAME": {
            "section": "environment",
            "key": "NCCL_SOCKET_IFNAME",
            "reference": None,
            "this": "nosuch0",
            "form": "value",
            "text": "NCCL_SOCKET_IFNAME: unset in the reference, nosuch0 in this run",
            "masks": None,
            "masked_in": None,
        }
    }
    retry = data["retry"]
    assert retry["passed"] == "reference"
    assert retry["summary"].startswith(
        "The good run (the reference) passed where this failed run failed (net.socket_interface)"
    )
    first = retry["reasons"][0]
    assert first["key"] == "NCCL_SOCKET_IFNAME"
    assert first["relates_to"] == ["net.socket_interface"]
    assert first["text"] == (
        "a changed variable: NCCL_SOCKET_IFNAME: unset in the good run (the reference), "
        "nosuch0 in this failed run (bears on net.socket_interface)"
    )
    assert len(retry["reasons"]) == 1  # the same host, GPU and versions: nothing else differs
    assert (
        "NCCL init: this run printed no NCCL init lines (it failed before NCCL set up, "
        "or ran without NCCL_DEBUG=INFO)"
    ) in data["not_compared"]
    errors = {c["key"]: c for c in data["changes"] if c["section"] == "errors"}
    assert errors["findings"]["this"] == (
        "net.socket_interface (critical), launch.rank_crash (info)"
    )
    assert errors["findings"]["reference"] is None


def test_quiet_text_keeps_the_one_line_that_answers_why(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    ref = reference(tmp_path, H200 / "good")
    capsys.readouterr()
    main(["diagnose", str(H200 / "bad_ifname"), "--against", str(ref), "-q", "--width", "200"])
    lines = capsys.readouterr().out.splitlines()
    assert lines[-1] == (
        "retry    a changed variable: NCCL_SOCKET_IFNAME: unset in the good run (the reference), "
        "nosuch0 in this failed run (bears on net.socket_interface)"
    )


def test_the_other_way_round_this_run_passed_where_the_reference_failed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    ref = reference(tmp_path, H200 / "bad_ifname")
    code, out = against(capsys, ref, H200 / "good", fmt="text")
    assert code == 0
    assert "This good run passed where the failed run (the reference) failed" in out
    assert (
        "1. a changed variable: NCCL_SOCKET_IFNAME: nosuch0 in the failed run (the reference),"
        in " ".join(out.split())
    )


def test_a_masking_switch_in_the_good_run_ranks_first_for_a_p2p_failure(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    ref = reference(tmp_path, PAIRS / "p2p" / "retry")
    _, out = against(capsys, ref, PAIRS / "p2p" / "failed")
    data = json.loads(out)["against"]
    changes = keyed(json.loads(out))
    assert changes[("nccl", "transport P2P/IPC")]["text"] == (
        "transport P2P/IPC: not used in the reference, used by 2 processes in this run"
    )
    assert changes[("nccl", "transport SHM/direct/direct")]["reference"] == "used by 2 processes"
    p2p = changes[("environment", "NCCL_P2P_DISABLE")]
    assert (p2p["reference"], p2p["this"], p2p["masked_in"]) == ("1", None, "reference")
    assert "host memory" in p2p["masks"]
    reasons = data["retry"]["reasons"]
    assert [r["key"] for r in reasons] == ["NCCL_P2P_DISABLE", "transport P2P/IPC"]
    assert reasons[0]["relates_to"] == ["nccl.p2p"]
    assert reasons[0]["text"].startswith(
        "the good run (the reference) had NCCL_P2P_DISABLE=1: a workaround that masks what "
        "nccl.p2p is about (P2P off:"
    )


def test_other_nodes_and_gpus_explain_a_lost_gpu(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    ref = reference(tmp_path, PAIRS / "other-node" / "good")
    _, out = against(capsys, ref, PAIRS / "other-node" / "failed")
    data = json.loads(out)["against"]
    changes = keyed(json.loads(out))
    assert changes[("nodes", "hosts")]["text"] == (
        "hosts: only in the reference: gpu-node-03; only in this run: gpu-node-17"
    )
    assert changes[("nodes", "GPUs")]["this"] == (
        "00000000:00:06.0 (GPU-c24840ec-8de1-83d5-b126-08000173ae32) on gpu-node-17"
    )
    reasons = data["retry"]["reasons"]
    assert [(r["key"], r["relates_to"]) for r in reasons] == [
        ("hosts", ["gpu.lost"]),
        ("GPUs", ["gpu.lost"]),
    ]
    assert reasons[0]["text"].startswith("other nodes: hosts: only in the good run")
    assert not [c for c in data["changes"] if c["section"] in ("environment", "versions")]


def test_a_different_nccl_version_explains_an_internal_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    ref = reference(tmp_path, H200 / "good")
    _, out = against(capsys, ref, NIC)
    data = json.loads(out)["against"]
    assert keyed(json.loads(out))[("versions", "NCCL version")]["text"] == (
        "NCCL version: 2.28.9 in the reference, 2.18.6 in this run"
    )
    first = data["retry"]["reasons"][0]
    assert first["text"].startswith(
        "a different version: NCCL version: 2.28.9 in the good run (the reference), 2.18.6 in "
        "this failed run (bears on nccl.internal"
    )


def test_nothing_that_differs_bears_on_the_job_s_own_oom(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    ref = reference(tmp_path, ZOO / "busy_self.log", ZOO / "busy_self.nvidia-smi.txt")
    _, out = against(capsys, ref, ZOO / "oom_self.log", ZOO / "oom_self.nvidia-smi.txt")
    data = json.loads(out)["against"]
    assert data["retry"]["reasons"] == []
    assert "but nothing that differs between them bears on that" in data["retry"]["summary"]
    assert {c["section"] for c in data["changes"]} == {"errors"}


# -- what changed, when both runs passed --------------------------------------


@pytest.mark.parametrize(
    ("run", "name", "value", "trades"),
    [("good_p2p_off", "NCCL_P2P_DISABLE", "1", "host memory"),
     ("good_nvls_off", "NCCL_NVLS_ENABLE", "0", "NVSwitch multicast")],
)  # fmt: skip
def test_one_changed_variable_is_the_only_change_and_says_it_masks(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], run: str, name: str, value: str,
    trades: str,
) -> None:  # fmt: skip
    ref = reference(tmp_path, H200 / "good", H200 / "nvidia-smi-q.txt")
    code, out = against(capsys, ref, H200 / run, H200 / "nvidia-smi-q.txt")
    assert code == 0
    data = json.loads(out)["against"]
    assert data["retry"] is None  # both passed: nothing to explain
    assert data["not_compared"] == []
    [change] = data["changes"]
    assert (change["section"], change["key"], change["reference"], change["this"]) == (
        "environment", name, None, value
    )  # fmt: skip
    assert change["masked_in"] == "this"
    assert trades in change["masks"]
    _, text = against(capsys, ref, H200 / run, H200 / "nvidia-smi-q.txt", fmt="text")
    assert f"{name}: unset in the reference, {value} in this run - a workaround in this run" in (
        " ".join(text.split())
    )


def test_the_same_run_against_itself_changes_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    ref = reference(tmp_path, H200 / "good", H200 / "nvidia-smi-q.txt")
    _, out = against(capsys, ref, H200 / "good", H200 / "nvidia-smi-q.txt", fmt="text")
    assert "Nothing changed in what both runs show" in out
    assert (
        json.loads(against(capsys, ref, H200 / "good", H200 / "nvidia-smi-q.txt")[1])["against"][
            "changes"
        ]
        == []
    )


# -- every format ---------------------------------------------------------------


def test_markdown_and_html_carry_the_comparison_pseudonymised(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    ref = reference(tmp_path, PAIRS / "other-node" / "good")
    _, md = against(capsys, ref, PAIRS / "other-node" / "failed", fmt="markdown")
    assert "### Against " in md
    assert "gpu-node-17" not in md
    assert "gpu-node-03" not in md
    assert re.search(r"1\. other nodes: hosts: only in the good run \(the reference\): host-\d", md)
    _, html = against(capsys, ref, PAIRS / "other-node" / "failed", fmt="html")
    assert '<section id="against">' in html
    assert '<ol class="retry"><li>other nodes: hosts:' in html
    assert "gpu-node-17" not in html


# -- what cannot be a reference ----------------------------------------------------


def _error(capsys: pytest.CaptureFixture[str], ref: str, *paths: Path) -> str:
    capsys.readouterr()
    code = main(["diagnose", *(map(str, paths or (H200 / "good",))), "--against", ref])
    err = capsys.readouterr().err
    assert code == 2
    assert err.count("\n") == 1
    assert err.startswith("error: ")
    assert "Traceback" not in err
    return err


def test_a_missing_reference_is_a_one_line_error_before_the_evidence_is_read(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    err = _error(capsys, str(tmp_path / "nope.json"), tmp_path / "no-such-evidence")
    assert f"error: cannot read {tmp_path / 'nope.json'}: No such file or directory" in err
    assert "(hint: give a report written by `nccl-doctor diagnose EVIDENCE --format json" in err


def test_a_file_that_is_not_a_report(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    log = H200 / "good" / "train.log"
    assert f"error: {log} is not JSON" in _error(capsys, str(log))
    facts = tmp_path / "facts.json"
    main(["parse", str(H200 / "good"), "--format", "json", "-o", str(facts)])
    assert f"error: {facts} is not an nccl-doctor JSON report" in _error(capsys, str(facts))


def test_a_report_of_another_schema_or_without_a_fingerprint(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    ref = reference(tmp_path, H200 / "good")
    data = json.loads(ref.read_text())
    future = tmp_path / "future.json"
    future.write_text(json.dumps({**data, "schema_version": 2, "tool": {
        "name": "nccl-doctor", "version": "9.0.0"}}))  # fmt: skip
    err = _error(capsys, str(future))
    assert "is a report of schema_version 2 (nccl-doctor 9.0.0); this nccl-doctor" in err
    assert "reads schema_version 1" in err
    older = tmp_path / "older.json"
    older.write_text(json.dumps({k: v for k, v in data.items() if k != "fingerprint"}))
    assert "has no fingerprint: nccl-doctor" in _error(capsys, str(older))
    other = tmp_path / "other.json"
    other.write_text(json.dumps({**data, "tool": {"name": "dcgmi", "version": "3"}}))
    assert "is a report of 'dcgmi', not of nccl-doctor" in _error(capsys, str(other))


def test_last_good_and_run_ids_come_from_the_history(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A good run recorded with ``--record``, then a failure compared with ``last-good``."""
    db = f"sqlite:///{tmp_path / 'history.db'}"
    assert main(["diagnose", str(H200 / "good"), "--record", "--db", db, "-q"]) == 0
    capsys.readouterr()
    args = ["--against", "last-good", "--db", db, "--format", "json"]
    code = main(["diagnose", str(H200 / "bad_ifname"), *args])
    data = json.loads(capsys.readouterr().out)["against"]
    assert code == 1
    assert data["reference"]["source"] == "last good run 1"
    assert data["retry"]["reasons"][0]["key"] == "NCCL_SOCKET_IFNAME"
    capsys.readouterr()
    main(["diagnose", str(H200 / "bad_ifname"), "--against", "1", "--db", db, "--format", "json"])
    assert json.loads(capsys.readouterr().out)["against"]["reference"]["source"] == "run 1"
    code = main(["diagnose", str(H200 / "bad_ifname"), "--against", "404", "--db", db])
    assert code == 2
    assert "error: no run 404 in the history store" in capsys.readouterr().err


def test_last_good_with_nothing_recorded_is_a_one_line_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = f"sqlite:///{tmp_path / 'history.db'}"
    main(["diagnose", str(H200 / "bad_ifname"), "--record", "--db", db, "-q"])
    capsys.readouterr()
    code = main(["diagnose", str(H200 / "bad_ifname"), "--against", "last-good", "--db", db])
    err = capsys.readouterr().err
    assert code == 2
    assert err.startswith("error: no good run of these nodes is recorded"), err
