"""Facts carry their cited line's timestamp, so failures can be ordered across ranks."""

from __future__ import annotations

from pathlib import Path

from nccl_doctor.evidence.reader import read_paths
from nccl_doctor.facts.run import CollectiveTimeout

LOG = """\
[rank1]:[E626 06:24:44.903881913 ProcessGroupNCCL.cpp:616] [Rank 1] Watchdog caught collective \
operation timeout: WorkNCCL(SeqNum=808, OpType=ALLREDUCE, NumelIn=9801523, NumelOut=9801523, \
Timeout(ms)=600000) ran for 600020 milliseconds before timing out.
[rank0]:[E626 06:24:43.159932949 ProcessGroupNCCL.cpp:616] [Rank 0] Watchdog caught collective \
operation timeout: WorkNCCL(SeqNum=808, OpType=ALLREDUCE, NumelIn=9801523, NumelOut=9801523, \
Timeout(ms)=600000) ran for 600030 milliseconds before timing out.
"""


def test_watchdog_timeouts_carry_their_glog_times(tmp_path: Path) -> None:
    path = tmp_path / "job.log"
    path.write_text(LOG)
    timeouts = [f for f in read_paths([str(path)]).facts if isinstance(f, CollectiveTimeout)]
    assert [(t.rank, t.clock) for t in timeouts] == [(1, "glog"), (0, "glog")]
    first, second = timeouts
    assert first.time_s is not None
    assert second.time_s is not None
    # rank 0's line is later in the file but 1.744 s earlier on the clock
    assert round(first.time_s - second.time_s, 3) == 1.744
