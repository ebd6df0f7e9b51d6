"""dcgmi's diag and health tables read into one DcgmReport per message (DCGM 2.x-4.x).

The tables are laid out as dcgmi lays them (dcgmi/Diag.cpp's DIAG_DATA stencil,
whose messages DisplayVerboseInfo cuts every 45 characters wherever that falls;
dcgmi/Health.cpp's tree, whose messages AddErrorMessage wraps at a word before
54), with messages of dcgm_errors.h. The border above a title is nvidia-smi's
parser's to start; the title ends it.
"""

from __future__ import annotations

from pathlib import Path

from nccl_doctor.facts.gpu import DcgmReport
from nccl_doctor.facts.host import XidEvent
from nccl_doctor.parse.dcgm import DcgmParser
from tests.helpers import critical_ids, diagnose_text, of_type, parse_blocks

DIAG = (
    "Successfully ran diagnostic for group.\n"
    "+---------------------------+------------------------------------------------+\n"
    "| Diagnostic                | Result                                         |\n"
    "+===========================+================================================+\n"
    "|-----  Metadata  ----------+------------------------------------------------|\n"
    "| DCGM Version              | 4.2.3                                          |\n"
    "| Driver Version Detected   | 570.148.08                                     |\n"
    "| GPU Device IDs Detected   | 2330, 2330, 2330, 2330                         |\n"
    "|-----  Deployment  --------+------------------------------------------------|\n"
    "| software                  | Fail                                           |\n"
    "|                           | GPU0: Pass                                     |\n"
    "|                           | GPU1: Pass                                     |\n"
    "|                           | GPU2: Fail                                     |\n"
    "| Warning: GPU2             | GPU 2 had uncorrectable memory errors and row  |\n"
    "|                           |  remapping failed. Drain the GPU and reset it  |\n"
    "|                           |  or reboot the node.                           |\n"
    "|                           | GPU3: Pass                                     |\n"
    "+-----  Hardware  ----------+------------------------------------------------+\n"
    "| memory                    | Pass                                           |\n"
    "|                           | GPU0: Pass                                     |\n"
    "|                           | GPU1: Pass                                     |\n"
    "|                           | GPU2: Skip                                     |\n"
    "|                           | GPU3: Pass                                     |\n"
    "+-----  Integration  -------+------------------------------------------------+\n"
    "| pcie                      | Warn                                           |\n"
    "|                           | GPU0: Pass                                     |\n"
    "|                           | GPU1: Warn                                     |\n"
    "| Warning: GPU1             | Persistence mode for GPU 1 is disabled. Enabl  |\n"
    '|                           | e persistence mode by running "nvidia-smi -i   |\n'
    '|                           | <gpuId> -pm 1 " as root.                       |\n'
    "|                           | GPU2: Skip                                     |\n"
    "|                           | GPU3: Pass                                     |\n"
    "+---------------------------+------------------------------------------------+\n"
)
HEALTH = (
    "+---------------------------+----------------------------------------------------------+\n"
    "| Health Monitor Report                                                                |\n"
    "+===========================+==========================================================+\n"
    "| Overall Health            | Failure                                                  |\n"
    "| GPU                       |                                                          |\n"
    "| -> 3                      | Failure                                                  |\n"
    "|    -> Errors              |                                                          |\n"
    "|       -> Memory system    | Failure                                                  |\n"
    "|                           | A pending retired page has been detected in GPU 3.       |\n"
    "|                           | Drain the GPU and reset it or reboot the node.           |\n"
    "|       -> Thermal system   | Warning                                                  |\n"
    "|                           | Detected clocks event due to thermal violation in GPU    |\n"
    "|                           | 3.                                                       |\n"
    "+---------------------------+----------------------------------------------------------+\n"
)


def _reports(text: str) -> list[DcgmReport]:
    return of_type(parse_blocks(DcgmParser(), text), DcgmReport)


def test_a_diag_message_cut_every_45_characters_is_whole_again() -> None:
    row_remap, persistence = _reports(DIAG)
    assert (row_remap.test, row_remap.entity, row_remap.result, row_remap.failed) == (
        "software",
        "GPU2",
        "Fail",
        True,
    )
    assert row_remap.message == (
        "GPU 2 had uncorrectable memory errors and row remapping failed. Drain the GPU and "
        "reset it or reboot the node."
    )
    assert (row_remap.signature, row_remap.points_at) == (
        "driver.dcgm.row_remap_failure",
        ("gpu.ecc",),
    )
    assert (persistence.entity, persistence.result, persistence.failed) == ("GPU1", "Warn", False)
    assert persistence.message.startswith("Persistence mode for GPU 1 is disabled. Enable ")


def test_a_health_message_wrapped_at_words_is_whole_again() -> None:
    overall, retired, thermal = _reports(HEALTH)
    assert (overall.test, overall.result, overall.kind, overall.failed) == (
        "Overall Health",
        "Failure",
        "Info",
        False,
    )
    assert (retired.test, retired.entity, retired.result) == ("Memory system", "GPU3", "Failure")
    assert retired.message == (
        "A pending retired page has been detected in GPU 3. Drain the GPU and reset it or "
        "reboot the node."
    )
    assert thermal.message == "Detected clocks event due to thermal violation in GPU 3."
    assert (thermal.result, thermal.failed) == ("Warning", False)


def test_a_failed_memory_check_is_the_gpus_memory(tmp_path: Path) -> None:
    for table, where in ((DIAG, "'software' check failed on GPU2"), (HEALTH, "on GPU3")):
        report = diagnose_text(tmp_path, table)
        top = report.findings[0]
        assert (top.id, top.root_cause) == ("gpu.ecc", True)
        assert where in top.summary


def test_warnings_alone_are_no_failure(tmp_path: Path) -> None:
    passing = DIAG.replace(
        "| software                  | Fail ", "| software                  | Pass "
    )
    passing = passing.replace("GPU2: Fail", "GPU2: Pass")
    report = diagnose_text(tmp_path, passing)
    assert critical_ids(report) == []
    assert report.first_failure is None


PCIE = (
    "+---------------------------+------------------------------------------------+\n"
    "| Diagnostic                | Result                                         |\n"
    "+===========================+================================================+\n"
    "+-----  Integration  -------+------------------------------------------------+\n"
    "| pcie                      | Fail                                           |\n"
    "|                           | GPU0: Pass                                     |\n"
    "|                           | GPU1: Fail                                     |\n"
    "| Warning: GPU1             | GPU 1 is running at PCI link width 8X, which   |\n"
    "|                           | is below the minimum allowed link generation   |\n"
    "|                           | of 16 (parameter 'pcie_width')                 |\n"
    "+---------------------------+------------------------------------------------+\n"
)


def test_a_failed_pcie_check_is_the_link(tmp_path: Path) -> None:
    report = diagnose_text(tmp_path, PCIE)
    found = next(f for f in report.findings if f.id == "gpu.pcie_degraded")
    assert "DCGM's 'pcie' check failed on GPU1: GPU 1 is running at PCI link width 8X" in (
        found.summary
    )
    assert found.subjects.gpus == ("GPU1",)


#: the memory test failing on GPU1 with DCGM_FR_XID_ERROR's message (the driver's Xid 79)
XID_DIAG = DIAG.replace(
    "| memory                    | Pass  ", "| memory                    | Fail  "
).replace(
    "|                           | GPU1: Pass                                     |\n"
    "|                           | GPU2: Skip ",
    "|                           | GPU1: Fail                                     |\n"
    "| Warning: GPU1             | Detected XID 79 for GPU 1                      |\n"
    "|                           | GPU2: Skip ",
    1,
)


def test_an_xid_dcgm_reports_is_that_xid(tmp_path: Path) -> None:
    facts = parse_blocks(DcgmParser(), XID_DIAG)
    (xid,) = of_type(facts, XidEvent)
    assert (xid.xid, xid.gpu_label, xid.cite.line) == (79, "GPU1", 22)
    report = diagnose_text(tmp_path, XID_DIAG)
    lost = next(f for f in report.findings if f.id == "gpu.lost")
    assert (lost.severity.value, lost.root_cause) == ("critical", True)
    assert "Xid 79 (GPU has fallen off the bus) on GPU1" in lost.summary


def test_a_table_without_an_xid_reports_none() -> None:
    assert of_type(parse_blocks(DcgmParser(), DIAG), XidEvent) == []
    assert of_type(parse_blocks(DcgmParser(), HEALTH), XidEvent) == []
