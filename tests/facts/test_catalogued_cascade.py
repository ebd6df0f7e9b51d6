"""A failure the catalogue reads as a survivor's report (a peer gone, a wait given up) is not
the first failure, whatever its time: the rank whose own error it reports is."""

from __future__ import annotations

from pathlib import Path

from nccl_doctor.evidence.reader import read_paths
from nccl_doctor.facts.failures import first_failure
from nccl_doctor.pipeline import diagnose_paths, facts_of

#: SGLang --tp 2: rank 0 loaded its weights and reports that rank 1 never finished; rank 1's
#: own error is printed later (it was stuck in its loader, then ran out of memory)
_LOG = (
    "[2025-03-01 10:11:12 TP0] Scheduler hit an exception: Traceback (most recent call last):\n"
    '  File "/sgl/python/sglang/srt/model_executor/model_runner.py", line 612, in load_model\n'
    "ValueError: TP rank 0 could finish the model loading, but there are other ranks that "
    "didn't finish loading. It is likely due to unexpected failures (e.g., OOM) or a slow node.\n"
    "\n"
    "[2025-03-01 10:11:40 TP1] Scheduler hit an exception: Traceback (most recent call last):\n"
    '  File "/sgl/python/sglang/srt/model_loader/loader.py", line 390, in load_weights\n'
    "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.96 GiB. GPU 1 has a total "
    "capacity of 79.10 GiB of which 1.02 GiB is free.\n"
)


def test_the_rank_a_survivor_reports_missing_fails_first(tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    log.write_text(_LOG)
    failure, _ = first_failure(facts_of(read_paths([str(log)])))
    assert failure is not None
    assert (failure.rank, failure.fact.cite.line) == (1, 7)
    top = diagnose_paths([str(log)]).findings[0]
    assert top.id == "gpu.oom"


def test_the_survivors_report_alone_names_no_rank_crash(tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    log.write_text(_LOG.split("\n\n", maxsplit=1)[0] + "\n")
    report = diagnose_paths([str(log)])
    assert [f.id for f in report.findings] == []
    assert [h.id for h in report.hypotheses][:2] == ["launch.rank_crash", "host.resources"]
