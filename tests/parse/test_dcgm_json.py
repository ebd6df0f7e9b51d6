"""``dcgmi diag -j`` read into one DcgmReport per message (DCGM 3 and 4 layouts).

The documents are laid out as dcgmi writes them (dcgmi/Diag.cpp HelperJsonBuildOutput at
v4.6.0 and v3.3.9, keys from NvvsJsonStrings.h, jsoncpp's styled output: keys sorted,
three-space indents, ``" : "``), with dcgm_errors.h's messages and codes
(DCGM_FR_ROW_REMAP_FAILURE 80, DCGM_FR_XID_ERROR 101, DCGM_FR_PERSISTENCE_MODE 29).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from nccl_doctor.evidence.reader import read_paths
from nccl_doctor.facts.gpu import DcgmReport
from nccl_doctor.facts.host import XidEvent
from nccl_doctor.parse.dcgm_json import DcgmJsonParser
from nccl_doctor.pipeline import diagnose_paths, facts_of
from tests.helpers import critical_ids, of_type

ROW_REMAP = "GPU 2 had uncorrectable memory errors and row remapping failed."
XID = "Detected XID 79 for GPU 1"
PERSISTENCE = "Persistence mode for GPU 1 is disabled."


def _styled(value: Any) -> str:
    """As jsoncpp's StyledWriter lays a value out (toStyledString)."""
    return json.dumps(value, indent=3, sort_keys=True, separators=(",", " : ")) + "\n"


def _warning(text: str, code: int) -> dict[str, Any]:
    return {"warning": text, "error_id": code, "error_category": 1, "error_severity": 2}


def _gpu(index: int, status: str, *warnings: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {
        "entity_group": "GPU",
        "entity_group_id": 1,
        "entity_id": index,
        "status": status,
    }
    if warnings:
        out["warnings"] = list(warnings)
    return out


def _test(name: str, results: list[dict[str, Any]], status: str) -> dict[str, Any]:
    warnings = [w for r in results for w in r.get("warnings", [])]
    summary: dict[str, Any] = {"status": status}
    if warnings:
        summary["warnings"] = warnings
    return {"name": name, "results": results, "test_summary": summary}


def dcgm4(failing: bool = True) -> dict[str, Any]:
    """DCGM 4.6's document: the software test fails on GPU2, memory on GPU1 with Xid 79."""
    bad = "Fail" if failing else "Pass"
    software = [
        _gpu(0, "Pass"),
        _gpu(1, "Pass"),
        _gpu(2, bad, *([_warning(ROW_REMAP, 80)] if failing else [])),
    ]
    memory = [
        _gpu(0, "Pass"),
        _gpu(1, bad, *([_warning(XID, 101)] if failing else [])),
        _gpu(2, "Skip"),
    ]
    pcie = [_gpu(0, "Pass"), _gpu(1, "Warn", _warning(PERSISTENCE, 29)), _gpu(2, "Pass")]
    return {
        "DCGM Diagnostic": {
            "test_categories": [
                {"category": "Deployment", "tests": [_test("software", software, bad)]},
                {"category": "Hardware", "tests": [_test("memory", memory, bad)]},
                {"category": "Integration", "tests": [_test("pcie", pcie, "Warn")]},
            ]
        },
        "entity_groups": [
            {
                "entities": [{"device_id": "2330", "entity_id": i} for i in range(3)],
                "entity_group": "GPU",
                "entity_group_id": 1,
            }
        ],
        "metadata": {"version": "4.6.0", "Driver Version Detected": "580.126.16"},
    }


#: DCGM 3.3's document: the GPU id as a string, no test summary
DCGM3 = {
    "DCGM GPU Diagnostic": {
        "test_categories": [
            {
                "category": "Deployment",
                "tests": [
                    {
                        "name": "software",
                        "results": [
                            {"gpu_id": "2", "status": "Fail", "warnings": [_warning(ROW_REMAP, 80)]}
                        ],
                    }
                ],
            }
        ],
        "version": "3.3.9",
    }
}


def _write(tmp_path: Path, value: Any, name: str = "diag.json") -> Path:
    path = tmp_path / name
    path.write_text(_styled(value))
    return path


def test_each_message_is_a_report_once_with_its_gpu_and_line(tmp_path: Path) -> None:
    path = _write(tmp_path, dcgm4())
    facts = facts_of(read_paths([str(path)]))
    reports = facts.of(DcgmReport)
    assert [(r.test, r.entity, r.result, r.failed, r.signature) for r in reports] == [
        ("software", "GPU2", "Fail", True, "driver.dcgm.row_remap_failure"),
        ("memory", "GPU1", "Fail", True, "driver.dcgm.xid_error"),
        ("pcie", "GPU1", "Warn", False, None),  # a setting, no failure: not catalogued
    ]
    lines = path.read_text().splitlines()
    assert all(r.message in lines[r.cite.line - 1] for r in reports)
    (xid,) = facts.of(XidEvent)
    assert (xid.xid, xid.gpu_label) == (79, "GPU1")


def test_a_failed_diagnostic_names_the_memory_and_the_lost_gpu(tmp_path: Path) -> None:
    report = diagnose_paths([str(_write(tmp_path, dcgm4()))])
    assert {"gpu.ecc", "gpu.lost"} <= set(critical_ids(report))
    ecc = next(f for f in report.findings if f.id == "gpu.ecc")
    assert "'software' check failed on GPU2" in ecc.summary


def test_dcgm3s_layout_is_read_too() -> None:
    facts, notes = DcgmJsonParser().parse(_styled(DCGM3).encode(), "diag3.json", None)
    (report,) = of_type(facts, DcgmReport)
    assert (report.test, report.entity, report.result, report.message) == (
        "software",
        "GPU2",
        "Fail",
        ROW_REMAP,
    )
    assert notes == []


def test_a_passing_diagnostic_is_no_failure(tmp_path: Path) -> None:
    report = diagnose_paths([str(_write(tmp_path, dcgm4(failing=False)))])
    assert critical_ids(report) == []
    assert report.first_failure is None


def test_other_json_and_broken_json_are_not_read_as_a_diagnostic() -> None:
    assert not DcgmJsonParser.sniff(b'{"nccl_version": "2.28.9", "communicators": []}')
    assert DcgmJsonParser.sniff(_styled(dcgm4()).encode()[:512])
    facts, notes = DcgmJsonParser().parse(b'{\n   "DCGM Diagnostic" : {\n', "cut.json", None)
    assert facts == []
    assert notes[0].startswith("dcgmi diag JSON: not valid JSON")


# dcgmi health -c -j: DCGM's own output code (dcgmi/Health.cpp, DcgmiOutput.cpp, dcgm_errors.c at
# v4.6.0 and v3.3.9) built outside the repository and run on health responses made as the
# hostengine makes them; each JSON beside the table dcgmi prints for the same response
HEALTH = Path(__file__).resolve().parents[1] / "fixtures" / "constructed" / "dcgmi-health"


def _health_reports(name: str) -> list[tuple[str | None, str | None, str | None, str, str]]:
    facts = facts_of(read_paths([str(HEALTH / name)]))
    return [(r.entity, r.test, r.result, r.kind, r.message) for r in facts.of(DcgmReport)]


@pytest.mark.parametrize("name", ["fail-4.6.0", "lost-nvlink-4.6.0", "xid95-3.3.9", "healthy"])
def test_health_json_gives_the_reports_its_table_gives(name: str) -> None:
    # (jsoncpp sorts the keys: the JSON lists a GPU's systems alphabetically, the table by bit)
    as_json = _health_reports(f"{name}.json")
    assert sorted(as_json, key=str) == sorted(_health_reports(f"{name}.txt"), key=str)
    assert as_json[0] == (
        None,
        "Overall Health",
        "Healthy" if name == "healthy" else "Failure",
        "Info",
        f"Overall Health: {'Healthy' if name == 'healthy' else 'Failure'}",
    )


def test_health_json_pieces_are_one_message_per_system_cited_at_its_first_piece() -> None:
    facts = facts_of(read_paths([str(HEALTH / "fail-4.6.0.json")]))
    reports = [r for r in facts.of(DcgmReport) if r.entity]
    assert [(r.entity, r.test, r.result, r.cite.line) for r in reports] == [
        ("GPU0", "Memory system", "Warning", 20),
        ("GPU1", "Internal error", "Failure", 43),
        ("GPU1", "Memory system", "Failure", 53),
    ]
    assert reports[2].message.endswith(
        "Detected 2 volatile double-bit ECC error(s) in GPU 1. Drain the GPU and reset it or "
        "reboot the node."
    )
    assert [(x.xid, x.gpu_label) for x in facts.of(XidEvent)] == [(43, "GPU0"), (48, "GPU1")]


def test_health_json_failure_names_the_ecc_error_once() -> None:
    report = diagnose_paths([str(HEALTH / "fail-4.6.0.json")])
    assert critical_ids(report) == ["gpu.ecc"]
    assert "Xid 48" in report.findings[0].summary
    assert "GPU1" in report.findings[0].summary


def test_health_json_lost_gpu_stands_above_the_nvlink_it_took_down() -> None:
    # GPU2 fell off the bus (Xid 79, reported first); GPU3's link and the switch's port failed
    report = diagnose_paths([str(HEALTH / "lost-nvlink-4.6.0.json")])
    assert critical_ids(report) == ["gpu.lost"]
    assert report.findings[0].subjects.gpus == ("GPU2",)
    assert "gpu.nvlink" in report.findings[0].explains
    facts = facts_of(read_paths([str(HEALTH / "lost-nvlink-4.6.0.txt")]))
    assert [r.entity for r in facts.of(DcgmReport)][-1] == "Switch0"  # not a GPU of that number


@pytest.mark.parametrize("name", ["healthy.json", "healthy.txt"])
def test_a_healthy_health_check_is_read_and_healthy(name: str) -> None:
    report = diagnose_paths([str(HEALTH / name)])
    assert report.verdict.value == "healthy"
    assert report.findings == ()
    assert report.hypotheses == ()


def test_other_dcgmi_json_and_a_cut_health_report() -> None:
    assert DcgmJsonParser.sniff((HEALTH / "healthy.json").read_bytes()[:512])
    assert DcgmJsonParser.sniff((HEALTH / "fail-4.6.0.json").read_bytes()[:512])
    assert not DcgmJsonParser.sniff(b'{\n\t"body" : \n\t{\n\t\t"message" : "hello"\n\t}\n}\n')
    facts, notes = DcgmJsonParser().parse(b'{\n\t"body" : \n\t{\n\t\t"GPU" : \n', "cut.json", None)
    assert facts == []
    assert notes[0].startswith("dcgmi health JSON: not valid JSON")
    body = b'{"body": {"GPU": {"children": {}}}}'
    facts, notes = DcgmJsonParser().parse(body, "odd.json", None)
    assert facts == []
    assert notes == ["dcgmi JSON: neither a diagnostic (diag -j) nor a health report (health -j)"]
