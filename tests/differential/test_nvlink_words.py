"""The reporter's words that the GPUs' NVLink is down or unused: the slow class, NVLink first."""

from __future__ import annotations

from pathlib import Path

from tests.helpers import diagnose_text

SLOW = "the job or a benchmark is slow, with no error (the reporter's words)"


def test_links_said_inactive_lead_with_nvlink(tmp_path: Path) -> None:
    report = diagnose_text(
        tmp_path,
        "Title: NVLink inactive on our 8x A100 SXM node after the driver update\n\n"
        "Since the update, nvidia-smi nvlink -s shows the links as inactive on GPU 3 and the\n"
        "all_reduce_perf bus bandwidth dropped from 230 GB/s to 18 GB/s.\n",
    )
    assert report.hypotheses[0].symptom == SLOW
    assert report.top(1) == ["gpu.nvlink"]
    assert not any(f.severity.value == "critical" for f in report.findings)


def test_nvlink_unused_with_no_other_complaint_is_no_longer_an_empty_report(
    tmp_path: Path,
) -> None:
    # the two GPUs of a VM talk over PCIe where their NVLink bridge should carry it: no error,
    # no word of speed, only the link
    report = diagnose_text(
        tmp_path,
        "Title: NC80adis_H100_v5: NV links inactive\n\n"
        "The 2 GPUs were not using NVLink but communicating via PCIe; nvidia-smi topo -m shows\n"
        "SYS between GPU0 and GPU1.\n",
    )
    assert report.hypotheses[0].symptom == SLOW
    assert "gpu.nvlink" in report.top(3)


def test_links_said_active_do_not_point_at_nvlink(tmp_path: Path) -> None:
    report = diagnose_text(
        tmp_path,
        "Title: all_reduce_perf is slow between our two A100 nodes\n\n"
        "nvidia-smi nvlink -s shows every link active at 25 GB/s, yet the all_reduce_perf bus\n"
        "bandwidth is 18 GB/s between the two nodes over InfiniBand.\n",
    )
    assert report.hypotheses[0].symptom == SLOW
    assert report.top(1) != ["gpu.nvlink"]
    nvlink = [h for h in report.hypotheses if h.id == "gpu.nvlink"]
    assert all("reporter says the GPUs' NVLink" not in " ".join(h.for_) for h in nvlink)


def test_a_machine_said_to_have_no_nvlink_does_not_point_at_it(tmp_path: Path) -> None:
    # PCIe cards: there is no link to be down
    report = diagnose_text(
        tmp_path,
        "Title: ncclAllReduce deadlocks on 2x RTX 5880 Ada (PCIe PHB topology, no NVLink)\n\n"
        "ncclCommInitRank completes, then the first all-reduce never returns.\n",
    )
    nvlink = [h for h in report.hypotheses if h.id == "gpu.nvlink"]
    assert all("reporter says the GPUs' NVLink" not in " ".join(h.for_) for h in nvlink)
    assert report.top(1) == ["nccl.p2p"]
