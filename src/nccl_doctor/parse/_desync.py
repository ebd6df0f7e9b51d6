"""ProcessGroupNCCL's desync report, read line by line into one :class:`DesyncReport`.

With ``TORCH_NCCL_DESYNC_DEBUG=1`` every rank records the number and name of
each collective it starts and ends in the store; when one times out, its rank
reads the others' entries back and logs, under its ``[PG ... Rank r]`` prefix,
one statement per line (torch/csrc/distributed/c10d/TraceUtils.h:
``retrieveDesyncReport``, ``analyzeMissingRanks``, ``analyzeLaggingRanks``,
``dumpSnapshot``; the same words from 1.11 to 2.11)::

     - [0] Timeout at collective: ALLREDUCE, #5
     - To our best knowledge, ranks [1, 3] are the lagging ranks that caused this
       timeout. They never joined any collectives

or, when every rank has an entry::

     - To our best knowledge, the lagging/dead/mismatched ranks that caused the desync are:
       - [2] joined but didn't finish collective #5 (count from 1)
         [0, 1, 3] finished collective #5, but didn't join collective #6 (count from 1)
     - Snapshot of ranks' latest states:
       #5 started ranks:
         [2] started ALLREDUCE
       #6 started ranks:
         [0, 1, 3] started ALLREDUCE

A report is one rank's: its lines are collected per attributed rank and the
report ends at the first line that is none of these.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from nccl_doctor.evidence.lines import Line
from nccl_doctor.facts.ranks import ranks_listed
from nccl_doctor.facts.run import DesyncReport, SnapshotRow
from nccl_doctor.parse._lazy import LazyPattern
from nccl_doctor.parse._runtext import to_int
from nccl_doctor.parse._values import cite

_RANKS = r"\[(?P<ranks>[\d, ]{0,20000})\]"
_TIMEOUT_AT = LazyPattern(
    r"\[(?P<rank>\d{1,7})\] Timeout at collective: (?P<op>[^,\n]{1,80}), #(?P<seq>\d{1,15})"
)
_NEVER = LazyPattern(r"ranks " + _RANKS + r" are the lagging ranks that caused this timeout")
_UNFINISHED = LazyPattern(_RANKS + r" joined but didn't finish collective #(?P<seq>\d{1,15})")
_NOT_NEXT = LazyPattern(
    _RANKS + r" finished collective #(?P<seq>\d{1,15}), but didn't join collective #"
)
_GROUP = LazyPattern(r"#(?P<seq>\d{1,15}) (?P<state>started|finished) ranks:")
_ROW = LazyPattern(_RANKS + r" (?P<state>started|finished) (?P<op>\S{1,80})")
_HEADER = "lagging/dead/mismatched ranks that caused the desync"
_SNAPSHOT = "Snapshot of ranks' latest states"
_NEVER_TAIL = "They never joined any collectives"

#: Literals one of which the first line of a report holds (a paste may start mid-report).
STARTS: tuple[str, ...] = (
    "Timeout at collective: ",
    "are the lagging ranks that caused",
    _HEADER,
)
#: Rows of a snapshot kept: one per (collective, state, name) - a few in any real report.
_MAX_ROWS = 64


def starts(text: str) -> bool:
    """Whether ``text`` is a line a desync report can start with."""
    return any(s in text for s in STARTS)


@dataclass(slots=True)
class DesyncBlock:
    """One rank's desync report being read."""

    head: Line
    last: int
    op: str | None = None
    seq: int | None = None
    #: the timed-out rank as the report names it (``- [0] Timeout at ...``)
    rank: int | None = None
    never_joined: tuple[int, ...] = ()
    lag_seq: int | None = None
    unfinished: tuple[int, ...] = ()
    not_next: tuple[int, ...] = ()
    rows: list[SnapshotRow] = field(default_factory=list)
    #: the snapshot's current ``#N started|finished ranks:`` heading
    group: tuple[int, str] | None = None

    def take(self, line: Line, text: str) -> bool:
        """Read one line of the report; ``False`` when it is none of the report's."""
        if m := _TIMEOUT_AT.search(text):
            if self.op is not None:
                return False  # a second report of the same rank begins
            self.op, self.seq, self.rank = m["op"].strip(), to_int(m["seq"]), to_int(m["rank"])
            self.head = line
        elif m := _NEVER.search(text):
            self.never_joined = ranks_listed(m["ranks"])
        elif m := _UNFINISHED.search(text):
            self.unfinished, self.lag_seq = ranks_listed(m["ranks"]), to_int(m["seq"])
        elif m := _NOT_NEXT.search(text):
            self.not_next, self.lag_seq = ranks_listed(m["ranks"]), to_int(m["seq"])
        elif m := _GROUP.search(text):
            seq = to_int(m["seq"])
            self.group = (seq, m["state"]) if seq is not None else None
        elif m := _ROW.search(text):
            group = self.group
            if group is not None and group[1] == m["state"] and len(self.rows) < _MAX_ROWS:
                self.rows.append((group[0], m["state"], m["op"], ranks_listed(m["ranks"])))
        elif not any(s in text for s in (_HEADER, _SNAPSHOT, _NEVER_TAIL)):
            return False
        self.last = line.number
        return True

    def report(self) -> DesyncReport:
        """The report read so far, cited at its ``Timeout at collective`` line."""
        return DesyncReport(
            cite=cite(self.head),
            rank=self.head.rank if self.head.rank is not None else self.rank,
            host=self.head.host,
            op=self.op,
            seq=self.seq,
            never_joined=self.never_joined,
            lag_seq=self.lag_seq,
            unfinished=self.unfinished,
            not_next=self.not_next,
            snapshot=tuple(self.rows),
        )
