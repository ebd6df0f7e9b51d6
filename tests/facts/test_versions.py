"""The NCCL releases the evidence names, from one home (facts/versions.py): who printed each."""

from __future__ import annotations

from pathlib import Path

from nccl_doctor.evidence.reader import read_paths
from nccl_doctor.facts.versions import VLLM_BINDING, nccl_versions, versions_of
from nccl_doctor.pipeline import facts_of
from tests.helpers import critical_ids, diagnose_text

TORCH = (
    "[I702 14:20:12.021734 ProcessGroupNCCL.cpp:914] [PG ID 0 PG GUID 0(default_pg) Rank 1] "
    "ProcessGroupNCCL environments: NCCL version: 2.21.5, TORCH_NCCL_ASYNC_ERROR_HANDLING: 3\n"
)
VLLM = "INFO 07-02 14:20:12 pynccl.py:63] vLLM is using nccl==2.18.1\n"
CAPTURED = "INFO 07-02 14:20:31 model_runner.py:1106] Graph capturing finished in 12 secs.\n"


def test_each_release_is_listed_with_who_printed_it(tmp_path: Path) -> None:
    log = tmp_path / "serve.log"
    log.write_text(TORCH + VLLM + CAPTURED)
    facts = facts_of(read_paths([str(log)]))
    seen = [(s.version, s.where, s.cite.line) for s in nccl_versions(facts, runtime=True)]
    assert seen == [("2.21.5", "ProcessGroupNCCL", 1), ("2.18.1", VLLM_BINDING, 2)]
    # the report's one version per library: torch's own line first
    assert dict(versions_of(facts))["nccl"] == "2.21.5"


def test_vllms_own_pinned_release_beside_torchs_is_no_fault(tmp_path: Path) -> None:
    # vLLM 0.4 loaded a libnccl 2.18 of its own beside torch's on purpose: a run that captured
    # its graphs and served has two releases in one process and nothing wrong
    report = diagnose_text(tmp_path, TORCH + VLLM + CAPTURED)
    assert "nccl.version_mismatch" not in {f.id for f in report.findings}
    assert critical_ids(report) == []
    # two releases printed by torch itself (two hosts' banners) still are
    other = TORCH.replace("2.21.5", "2.19.3").replace("Rank 1", "Rank 9")
    mixed = diagnose_text(tmp_path, TORCH + other + CAPTURED)
    assert "nccl.version_mismatch" in {f.id for f in mixed.findings}


def test_two_banners_retold_in_a_sentence_are_two_releases(tmp_path: Path) -> None:
    report = diagnose_text(
        tmp_path,
        "Two nodes in two NGC containers. With NCCL_DEBUG=INFO the ranks on node 1 print NCCL "
        "version 2.20.3+cuda12.4 and the ranks on node 2 print NCCL version 2.19.3+cuda12.2, "
        "and then all of them hang in the first all_reduce.\n",
    )
    found = [f for f in report.findings if f.id == "nccl.version_mismatch"]
    assert [f.summary for f in found] == [
        "The job loads 2 NCCL versions (2.20.3, 2.19.3); all ranks must run the same NCCL"
    ]
    assert report.top(1) == ["nccl.version_mismatch"]


def test_the_second_banner_retold_by_its_suffix_alone_is_a_release(tmp_path: Path) -> None:
    report = diagnose_text(
        tmp_path,
        "With NCCL_DEBUG=INFO, PC1's rank 0 prints NCCL version 2.18.1+cuda12.1 and PC2 prints "
        "2.20.5+cuda12.4 in its lines.\n",
    )
    found = [f for f in report.findings if f.id == "nccl.version_mismatch"]
    assert [f.summary for f in found] == [
        "The job loads 2 NCCL versions (2.18.1, 2.20.5); all ranks must run the same NCCL"
    ]
    # a before-and-after told in another sentence of the paragraph does not undo them
    report = diagnose_text(
        tmp_path,
        "On PC2 I did a fresh pip install because the old env was broken. With NCCL_DEBUG=INFO, "
        "PC1 prints NCCL version 2.18.1+cuda12.1 and PC2 prints 2.20.5+cuda12.4.\n",
    )
    assert "nccl.version_mismatch" in [f.id for f in report.findings]
    # an apt package's version (2.18.1-1+cuda12.1) beside the banner is no second banner
    report = diagnose_text(
        tmp_path,
        "Every rank prints NCCL version 2.18.1+cuda12.1; dpkg shows libnccl2 2.18.1-1+cuda12.1.\n",
    )
    assert "nccl.version_mismatch" not in [f.id for f in report.findings]


def test_one_banner_or_an_upgrade_told_is_one_release(tmp_path: Path) -> None:
    for said in (
        "Every rank prints NCCL version 2.20.3+cuda12.4 and then the first all_reduce hangs.",
        (
            "After upgrading from NCCL version 2.18.1+cuda12.1 to NCCL version 2.20.3+cuda12.4 the "
            "first all_reduce hangs."
        ),
    ):
        report = diagnose_text(tmp_path, said + "\n")
        assert "nccl.version_mismatch" not in [f.id for f in report.findings], said


def test_a_second_banner_past_a_long_lines_citation_is_read(tmp_path: Path) -> None:
    """A paragraph on one line: its citation holds the first 400 characters, and the sentence
    that retells two banners runs on past them into the line's next piece."""
    lead = "We compared every node of the cluster with pdsh, and everything else matches on all. "
    said = (
        lead + "The only differences on gpu-b07 and gpu-b08: they have an extra file in "
        "/etc/profile.d from an old benchmarking campaign that prepends /opt/nccl-2.18.3/lib "
        "to LD_LIBRARY_PATH, and "
        "when I launch the job with NCCL_DEBUG=VERSION the ranks on those two nodes print NCCL "
        "version 2.18.3+cuda12.2 while all the others print 2.21.5+cuda12.4 (the one that "
        "ships with our torch 2.4 wheel). Jobs with those nodes hang at init.\n"
    )
    assert said.index("2.21.5+cuda12.4") > 400
    facts = facts_of(read_paths([str(_write(tmp_path, said))]))
    assert [s.version for s in nccl_versions(facts)] == ["2.18.3", "2.21.5"]
    # one banner retold, the sentence ending within the piece: one release
    one = said.replace(" while all the others print 2.21.5+cuda12.4", "")
    facts = facts_of(read_paths([str(_write(tmp_path, one))]))
    assert [s.version for s in nccl_versions(facts)] == ["2.18.3"]


def _write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "report.txt"
    path.write_text(text)
    return path
