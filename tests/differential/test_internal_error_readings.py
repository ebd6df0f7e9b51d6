"""An ncclInternalError whose WARN NCCL's source shows to be the environment, not a bug.

NCCL returns ``ncclInternalError`` for some failures its own code traces to what it was
given: a CPU node of a topology XML without the ``arch`` its detection always writes (the
node came from NCCL_TOPO_FILE, which network plugins and images set), a socket address
whose family is neither IPv4 nor IPv6 (the interface lookup matched nothing, so the
address was never filled in). The catalogue's reading of such a WARN names those causes;
nccl.internal does not claim the failure, and the differential leads with them. A WARN
with no such reading (a NIC node without its bus id, which NCCL's own detection of
virtual NICs produced in 2.18) stays NCCL's bug. Every case runs the whole pipeline.
"""

from __future__ import annotations

from pathlib import Path

from nccl_doctor.report import Report
from tests.helpers import diagnose_text

#: A p5 node whose AWS plugin set NCCL_TOPO_FILE (NCCL_DEBUG_SUBSYS without ENV: no echo of
#: it), NCCL 2.21.5 under torch 2.4.
_TOPO_LOG = (
    "ip-10-1-7-21:2196:2196 [1] NCCL INFO cudaDriverVersion 12040\n"
    "ip-10-1-7-21:2196:2196 [1] NCCL INFO NCCL_SOCKET_IFNAME set by environment to ^docker,lo\n"
    "ip-10-1-7-21:2196:2196 [1] NCCL INFO Bootstrap : Using ens32:10.1.7.21<0>\n"
    "ip-10-1-7-21:2196:2275 [1] NCCL INFO NET/OFI Using aws-ofi-nccl 1.9.1-aws\n"
    "ip-10-1-7-21:2196:2275 [1] graph/xml.h:101 NCCL WARN Attribute {attr} of node cpu not "
    "found\n"
    "ip-10-1-7-21:2196:2275 [1] NCCL INFO graph/topo.cc:493 -> 3\n"
    "ip-10-1-7-21:2196:2275 [1] NCCL INFO graph/topo.cc:623 -> 3\n"
    "ip-10-1-7-21:2196:2275 [1] NCCL INFO init.cc:896 -> 3\n"
    "ip-10-1-7-21:2196:2275 [1] NCCL INFO init.cc:1540 -> 3\n"
    "[rank1]: torch.distributed.DistBackendError: NCCL error in: "
    "../torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:1970, internal error - please report "
    "this issue to the NCCL developers, NCCL version 2.21.5\n"
    "[rank1]: ncclInternalError: Internal check failed.\n"
    "[rank1]: Last error:\n"
    "[rank1]: Attribute {attr} of node cpu not found\n"
)


def _ids(report: Report) -> list[str]:
    return [f.id for f in report.findings]


def test_a_cpu_node_without_arch_is_the_topology_file_not_an_nccl_bug(tmp_path: Path) -> None:
    report = diagnose_text(tmp_path, _TOPO_LOG.replace("{attr}", "arch"))
    assert "nccl.internal" not in _ids(report)
    assert report.verdict.value == "inconclusive"
    first, second = report.hypotheses[:2]
    assert first.id == "nccl.env"
    assert first.symptom == "NCCL reported an internal error (ncclInternalError)"
    assert first.for_[0].startswith(
        "the message is nccl.warn.xml.attribute_of_node_cpu_not_found (src/graph/xml.h:101"
        "@v2.21.5-1): NCCL's own detection gives every CPU node it creates these attributes"
    )
    assert second.id == "nccl.internal"


def test_with_the_file_named_nccl_env_finds_it(tmp_path: Path) -> None:
    """NCCL's echo of the setting makes it a finding of nccl.env's; still no NCCL bug."""
    echo = (
        "ip-10-1-7-21:2196:2275 [1] NCCL INFO NCCL_TOPO_FILE set by environment to "
        "/opt/amazon/efa/share/aws-ofi-nccl/xml/p5.48xl-topo.xml\n"
    )
    text = _TOPO_LOG.replace("{attr}", "vendor")
    at = text.index("ip-10-1-7-21:2196:2275 [1] graph")
    report = diagnose_text(tmp_path, text[:at] + echo + text[at:])
    assert _ids(report) == ["nccl.env"]
    assert "NCCL_TOPO_FILE=/opt/amazon/efa/share/aws-ofi-nccl/xml/p5.48xl-topo.xml" in (
        report.findings[0].summary
    )


def test_a_nic_without_its_bus_id_stays_an_nccl_bug(tmp_path: Path) -> None:
    """NCCL's detection made that node itself (a virtual NIC): no reading, the rule fires."""
    text = _TOPO_LOG.replace("of node cpu", "of node nic").replace("{attr}", "busid")
    report = diagnose_text(tmp_path, text)
    assert report.top(1) == ["nccl.internal"]
    assert "Attribute busid of node nic not found" in report.findings[0].summary


def test_an_address_never_filled_in_is_the_interface_setting(tmp_path: Path) -> None:
    """NCCL 2.27 goes on when NCCL_SOCKET_IFNAME matches nothing, then refuses to connect to
    the zeroed address (family 59936 is neither AF_INET nor AF_INET6)."""
    text = (
        "trainer3:1958:1958 [3] NCCL INFO NCCL_SOCKET_IFNAME set by environment to eth2\n"
        "trainer3:1958:1958 [3] NCCL INFO NCCL version 2.27.7+cuda12.8\n"
        "[trainer0|0]:torch.distributed.DistBackendError: NCCL error in: "
        "/pytorch/torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:3356, internal error - "
        "please report this issue to the NCCL developers, NCCL version 2.27.7\n"
        "[trainer0|0]:ncclInternalError: Internal check failed.\n"
        "[trainer0|0]:Last error:\n"
        "[trainer0|0]:ncclSocketInit: connecting to address  with family 59936 is neither "
        "AF_INET(2) nor AF_INET6(10)\n"
    )
    report = diagnose_text(tmp_path, text)
    assert "nccl.internal" not in _ids(report)
    assert [h.id for h in report.hypotheses[:2]] == ["net.socket_interface", "nccl.env"]
    assert "matched nothing on this host" in report.hypotheses[0].for_[0]
