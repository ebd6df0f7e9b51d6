"""Python's own exception named in the reporter's words: the job's code raised it (or an import
failed), where no machine line says more."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.helpers import diagnose_text

#: A rank's traceback cut before its exception line, as people paste it.
CUT = (
    "[rank1]: Traceback (most recent call last):\n"
    '[rank1]:   File "/home/u/det/train.py", line 5, in <module>\n'
    "[rank1]:     model.train(\n"
    '[rank1]:   File "/home/u/det/main.py", line 483, in train\n'
    "[rank1]:     best = torch.load(output_dir / 'checkpoint_best.pth', map_location='cpu')\n"
    "[...]\n"
)


def _report(tmp_path: Path, text: str) -> list[str]:
    report = diagnose_text(tmp_path, text)
    assert report.hypotheses
    return [h.id for h in report.hypotheses[:3]]


def test_a_builtin_exception_named_in_the_title_is_the_jobs_own_error(tmp_path: Path) -> None:
    top = _report(
        tmp_path,
        "Title: Distributed training fails at the end: FileNotFoundError for the best "
        "checkpoint\n\nWith 2 GPUs, training completes but the test phase crashes:\n\n" + CUT,
    )
    assert top[0] == "launch.rank_crash"
    assert "nccl.p2p" not in top


def test_an_import_error_named_is_a_library_problem(tmp_path: Path) -> None:
    top = _report(
        tmp_path,
        "Title: torchrun with 4 GPUs fails right away with ModuleNotFoundError on every rank\n",
    )
    assert top[0] == "nccl.version_mismatch"  # library_missing's first prior


@pytest.mark.parametrize(
    "said",
    [
        # denied: the exception is what did not happen
        "Title: NCCL error on 2 nodes (no KeyError or anything in our code)\n",
        # a generic failure in words, no name: the generic failure's causes
        "Title: Distributed training fails at the end with 2 GPUs\n",
    ],
)
def test_no_exception_name_no_app_error(tmp_path: Path, said: str) -> None:
    report = diagnose_text(tmp_path, said)
    assert report.hypotheses
    assert not report.hypotheses[0].symptom.startswith("the job's own code")
    assert [h.id for h in report.hypotheses[:1]] != ["launch.rank_crash"]


def test_the_exception_line_itself_outranks_the_name_in_words(tmp_path: Path) -> None:
    """Machine output first: a watchdog timeout printed is the symptom, whatever the title
    names."""
    report = diagnose_text(
        tmp_path,
        "Title: KeyError after the first epoch, then the job hangs\n\n"
        "[rank0]:[E ProcessGroupNCCL.cpp:616] [Rank 0] Watchdog caught collective operation "
        "timeout: WorkNCCL(SeqNum=5, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000)"
        " ran for 600012 milliseconds before timing out.\n",
    )
    top = [h.id for h in report.hypotheses[:3]]
    assert report.hypotheses[0].symptom.startswith("a collective timed out")
    assert top[0] != "launch.rank_crash"
