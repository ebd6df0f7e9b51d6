"""Lines that read like errors and are notices: named, with why, and never a failure's line.

Every case runs the whole pipeline on lines as the libraries print them: c10d's
per-address socket warnings on a host without IPv6 (torch 2.2), NCCL's INFO lines
as it probes for a network plugin (2.20) and falls back from IB (2.28, H200).
"""

from __future__ import annotations

import json
from pathlib import Path

from nccl_doctor.pipeline import diagnose_paths
from nccl_doctor.render.html import report_html
from nccl_doctor.render.markdown import report_markdown
from nccl_doctor.render.report_json import report_json
from nccl_doctor.render.text import report_text
from nccl_doctor.report import NOTICES_HEADING, Verdict
from tests.helpers import diagnose_text

ROOT = Path(__file__).resolve().parents[2]

#: The reporter's failure, then c10d's warnings for the IPv6 addresses it could not use.
NO_IPV6 = (
    "hello; the job fails to start; errno: 97 - Address family not supported by protocol\n"
    "(Runner pid=10922) [W socket.cpp:697] [c10d] The client socket cannot be initialized to "
    "connect to [gpu-node-7.cluster]:50704 (errno: 97 - Address family not supported by "
    "protocol).\n"
    "(Runner pid=10896) [W socket.cpp:464] [c10d] The server socket cannot be initialized on "
    "[::]:50704 (errno: 97 - Address family not supported by protocol).\n"
    "(Runner pid=10922) [W socket.cpp:697] [c10d] The client socket cannot be initialized to "
    "connect to [gpu-node-7.cluster]:50704 (errno: 97 - Address family not supported by "
    "protocol).\n"
)
#: NCCL 2.20 looking for a network plugin's newer ABI symbols, then its version line.
PLUGIN_PROBE = (
    "gpu-node-7:4242:4242 [0] NCCL INFO NET/Plugin: Failed to find ncclNetPlugin_v8 symbol.\n"
    "gpu-node-7:4242:4242 [0] NCCL INFO NET/Plugin: Failed to find ncclNetPlugin symbol (>= "
    "v5). ncclNetPlugin symbols v4 and lower are not supported.\n"
    "gpu-node-7:4242:4242 [0] NCCL INFO cudaDriverVersion 12040\n"
    "NCCL version 2.20.3+cuda12.4\n"
)
CHATTER = (
    "gpu-node-7:4242:4242 [0] NCCL INFO Bootstrap : Using eth0:10.1.0.7<0>\n"
    "gpu-node-7:4242:4242 [0] NCCL INFO cudaDriverVersion 12040\n"
    "NCCL version 2.20.3+cuda12.4\n"
)


def test_c10ds_warnings_for_a_missing_address_family_are_named_notices(tmp_path: Path) -> None:
    report = diagnose_text(tmp_path, NO_IPV6)
    notices = {n.signature: n for n in report.notices}
    assert sorted(notices) == ["torch.c10d.socket_client_init", "torch.c10d.socket_server_init"]
    client = notices["torch.c10d.socket_client_init"]
    assert (client.cite.line, client.count, client.level) == (2, 2, "warning")
    assert "errno 97 is a host without IPv6" in notices["torch.c10d.socket_server_init"].why
    assert [n.cite.line for n in report.notices] == [2, 3]  # reading order
    text = report_text(report, width=100)
    assert NOTICES_HEADING in text
    assert text.index(NOTICES_HEADING) < text.index("Possible causes")
    assert "(2 lines)" in text
    markdown = report_markdown(report, lambda s: s)
    assert f"### {NOTICES_HEADING}" in markdown
    page = report_html(report, None, lambda s: s)
    assert page.index('<section id="notices">') < page.index('<section id="hypotheses">')
    assert "errno 97 is a host without IPv6" in page


def test_ncclss_plugin_probe_is_a_notice_of_its_level(tmp_path: Path) -> None:
    report = diagnose_text(tmp_path, PLUGIN_PROBE)
    assert [n.level for n in report.notices] == ["info", "info"]
    assert all(
        n.why == "NCCL prints it at INFO level: a notice, not an error" for n in report.notices
    )
    assert report.verdict is Verdict.HEALTHY
    payload = json.loads(json.dumps(report_json(report, lambda s: s)))
    assert [n["evidence"]["line"] for n in payload["notices"]] == [1, 2]


def test_lines_with_no_alarming_word_are_no_notices(tmp_path: Path) -> None:
    report = diagnose_text(tmp_path, CHATTER)
    assert report.notices == ()
    assert NOTICES_HEADING not in report_text(report)


def test_a_failures_line_is_never_a_notice() -> None:
    """A device-side assert on the H200: the failure's line reads as NCCL's INFO-level "Cuda
    failure '%s'" too; it is the failure, and only the exit warning is a notice."""
    log = ROOT / "tests/fixtures/captured/zoo-h200/device_assert.log"
    report = diagnose_paths([str(log)])
    assert report.first_failure is not None
    assert [n.signature for n in report.notices] == ["torch.pgnccl.destroy_not_called"]
    # beside a root cause the text report keeps to it; the JSON still lists the notice
    assert report.explained
    assert NOTICES_HEADING not in report_text(report)
    assert report_json(report, lambda s: s)["notices"][0]["level"] == "warning"


def test_a_findings_evidence_is_no_notice(tmp_path: Path) -> None:
    """c10d's IPv6 warning cited by the finding it helps prove (its connect failed too)."""
    text = (
        "[W socket.cpp:601] [c10d] The IPv6 network addresses of (trainer-0, 29500) cannot be "
        "retrieved (gai error: -2 - Name or service not known).\n"
        "[E socket.cpp:957] [c10d] The client socket has timed out after 900s while trying to "
        "connect to (trainer-0, 29500).\n"
    )
    report = diagnose_text(tmp_path, text)
    assert [f.id for f in report.findings][:1] == ["net.unreachable"]
    cited = {c for f in report.findings for c in f.evidence}
    assert not any(n.cite in cited for n in report.notices)


def test_a_name_the_resolver_could_not_look_up_is_a_clue_not_a_notice(tmp_path: Path) -> None:
    resolve = (
        "It does not train, and returns the following errors:\n"
        "[W socket.cpp:601] [c10d] The IPv6 network addresses of (trainbox, 53821) cannot be "
        "retrieved (gai error: -3 - Temporary failure in name resolution).\n"
    )
    assert diagnose_text(tmp_path, resolve).notices == ()
    routine = resolve.replace(
        "-3 - Temporary failure in name resolution", "-2 - Name or service not known"
    )
    assert [n.signature for n in diagnose_text(tmp_path, routine).notices] == [
        "torch.c10d.socket_resolve"
    ]


def test_a_title_that_repeats_a_notice_is_no_failure_in_words(tmp_path: Path) -> None:
    """The reporter's title is the notice's own words (nccl-1292's shape): nothing failed."""
    report = diagnose_text(
        tmp_path, "Title: Failed to find ncclNetPlugin_v8 symbol\n\n" + PLUGIN_PROBE
    )
    assert report.verdict is Verdict.HEALTHY
    assert report.hypotheses == ()
    assert len(report.notices) == 2


def test_a_title_that_says_more_than_the_notice_still_counts(tmp_path: Path) -> None:
    title = "Title: training fails at init after Failed to find ncclNetPlugin_v8 symbol\n\n"
    report = diagnose_text(tmp_path, title + PLUGIN_PROBE)
    assert report.verdict is Verdict.INCONCLUSIVE
    assert report.hypotheses
    assert len(report.notices) == 2
