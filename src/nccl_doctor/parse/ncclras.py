"""NCCL RAS status reports -> RAS facts (kind ``ncclras``): the text, and the JSON of 2.28.7+.

Both formats are printed by ``rasClientRunComms`` and its helpers in
src/ras/client_support.cc of NVIDIA/nccl (read at the master of 2026-12):

* Text: ``NCCL version 2.28.9 compiled with CUDA 13.0``, a ``Job summary``
  table, the ``Communicators...`` table (one row per group of alike
  communicators: ``Group  Comms in group  Nodes per comm  Ranks per node
  Ranks per comm  Ranks in group  Status  Errors``), then ``Errors``
  (``INCOMPLETE``: ``Missing communicator data from N job processes``;
  ``DEAD``: ``N job processes considered dead``; per communicator
  ``#G-C (hash) INCOMPLETE`` / ``ERROR`` with ``Rank R -- GPU g managed by
  process P on node H`` lines) and ``Warnings`` (``TIMEOUT``; ``#G-C (hash)
  MISMATCH`` with ``Communicator ranks have different status`` / ``different
  AllReduce operation counts``, ``N ranks have launched up to operation X``,
  ``Rank R has launched up to operation X -- GPU ...``, ``Rank R has not
  launched any operations``, ``Rank R has status ABORT``, ``Rank R reported
  Remote process error``). Per-rank lines appear only for outliers.
* JSON (``SET FORMAT json``, ``ncclras -f json``): ``nccl_version``,
  ``communicators`` (each ``hash``, ``size``, ``ranks`` with ``status``
  flags and ``collective_counts``, ``missing_ranks`` with ``unresponsive``
  and ``considered_dead``) and ``ras`` (``timeouts_count``). It is read as a
  whole file; only ranks that differ from their communicator (missing, an
  error, a status other than RUNNING, op counts off the majority) become
  :class:`~nccl_doctor.facts.ras.RasRank` facts, so a healthy 4,096-rank
  report costs a few facts.
"""

from __future__ import annotations

import itertools
import re
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

from nccl_doctor.evidence.lines import Line
from nccl_doctor.facts.base import Cite, Fact
from nccl_doctor.facts.ras import RasComm, RasOpCount, RasProcess, RasRank, RasReport
from nccl_doctor.parse._blocktext import trailing_blanks
from nccl_doctor.parse._lazy import LazyPattern
from nccl_doctor.parse._values import cite, json_document
from nccl_doctor.parse.base import BlockParser, FileParser

KIND = "ncclras"
#: A RAS report of a 4,000-rank job in verbose JSON is a few MB.
MAX_BYTES = 32 << 20
#: Communicators, and ranks per communicator, read from a JSON report.
MAX_COMMS = 10_000
MAX_RANKS = 1 << 17
#: ``ncclFuncStr`` of NCCL (the first NCCL_NUM_FUNCTIONS): the keys of ``collective_counts``.
OPS = ("Broadcast", "Reduce", "AllGather", "ReduceScatter", "AllReduce")
#: ``ncclErrorToString`` of client_support.cc, by ``ncclResult_t`` code.
ERRORS = {
    1: "Unhandled CUDA error",
    2: "System error",
    3: "Internal error",
    4: "Invalid argument",
    5: "Invalid usage",
    6: "Remote process error",
}
_IN_PROGRESS = 7
_STATUSES = ("NOCOMM", "INIT", "RUNNING", "FINALIZE", "ABORT")

_VERSION = LazyPattern(r"^NCCL version (?P<v>\S{1,40}) compiled with CUDA")
_HEADINGS = LazyPattern(
    r"^(?:Job summary|Errors|Warnings|INCOMPLETE|DEAD|TIMEOUT|=+|Communicators\.\.\..*"
    r"|CUDA runtime version -?\d+, driver version -?\d+|Gathering data about .*"
    r"|Group\s+Comms\s+Nodes.*|\s+#\s+in group.*|\s*Nodes\s+Processes.*|\(total\).*"
    r"|\s+per (?:node|process).*|\s+Processes\s+GPUs|No communicator data collected!"
    r"|The outlier nodes?:)\s*$"
)
_ROW = LazyPattern(r"^\s*\d{1,12}(?:\s+[\w,-]{1,40}){1,9}\s*$")
_COMM_ROW = LazyPattern(
    r"^\s*(?P<group>\d{1,9})\s+(?P<comms>\d{1,9})\s+(?P<nodes>\d{1,9})\s+(?P<per_node>[\d-]{1,20})"
    r"\s+(?P<size>\d{1,9})\s+(?P<total>\d{1,9})\s+(?P<status>[A-Z]{4,8})\s+(?P<errors>[A-Z,]{2,40})\s*$"
)
_JOB_ROW = LazyPattern(r"^\s*(?P<n>\d{1,9}(?:\s+\d{1,12}){1,4})\s*$")
_SECTION = LazyPattern(
    r"^#(?P<group>\d{1,9})-(?P<idx>\d{1,9}) \((?P<hash>[0-9a-fA-F]{1,16})\) "
    r"(?P<what>INCOMPLETE|ERROR|MISMATCH)\s*$"
)
_DETAIL = LazyPattern(
    r"^  (?:Missing |Process |Rank |\d{1,9} (?:ranks|job process)|Encountered |Communicator ranks "
    r"|Initialization error|Asynchronous error|\[could not find|Node )"
)
_WHO = LazyPattern(
    r"^GPU (?P<gpu>\d{1,4})(?: \(NVML \d{1,4}\))? managed by process (?P<pid>\d{1,10}) "
    r"on node (?P<host>\S{1,256})\s*$"
)
_RANK_LINE = LazyPattern(r"^  Rank (?P<rank>\d{1,9})(?P<rest>.{0,600})$")
_PROCESS = LazyPattern(
    r"^  Process (?P<pid>\d{1,10}) on node (?P<host>\S{1,256}) "
    r"managing GPUs? (?P<gpus>[\d,]{1,300})"
)
_MISSING_PROCS = LazyPattern(r"^  Missing communicator data from (?P<n>\d{1,9}) job process")
_DEAD_PROCS = LazyPattern(r"^  (?P<n>\d{1,9}) job process(?:es are| is) considered dead")
_TIMEOUTS = LazyPattern(r"^  Encountered (?P<n>\d{1,9}) communication timeouts?")
_DIFF_OPS = LazyPattern(r"^  Communicator ranks have different (?P<op>\w{1,40}) operation counts")
_DIFF_STATUS = LazyPattern(r"^  Communicator ranks have different status")
_N_LAUNCHED = LazyPattern(
    r"^  (?P<n>\d{1,9}) ranks have (?:launched up to operation (?P<count>\d{1,20})"
    r"|not launched any operations)"
)
_N_STATUS = LazyPattern(r"^  (?P<n>\d{1,9}) ranks have status (?P<status>[A-Z]{4,8})")
_N_REPORTED = LazyPattern(r"^  (?P<n>\d{1,9}) ranks reported (?P<error>.{1,80})$")
_ERROR_KIND = LazyPattern(r"^  (?P<kind>Initialization|Asynchronous) errors? on \d{1,9} ranks?")
_LAUNCHED = LazyPattern(r"^ has (?:launched up to operation (?P<count>\d{1,20})|not launched any)")
_HAS_STATUS = LazyPattern(r"^ has status (?P<status>[A-Z]{4,8})")
_REPORTED = LazyPattern(r"^ reported (?P<error>.{1,80})$")
_MAX_BLANKS = 2


def comm_id(hex_hash: str) -> str:
    """A communicator hash as both formats can be matched on: ``0x`` and no leading zeros."""
    try:
        return hex(int(hex_hash, 16))
    except ValueError:
        return hex_hash


def _is_ras_line(text: str) -> bool:
    return bool(
        _VERSION.match(text)
        or _HEADINGS.match(text)
        or _SECTION.match(text)
        or _DETAIL.match(text)
        or _ROW.match(text)
    )


@dataclass(slots=True)
class _Text:
    """What the text read so far says, for the lines that follow."""

    sizes: dict[int, int] = field(default_factory=dict)  # group -> ranks per comm
    section: str = ""  # "errors" | "warnings" | ""
    heading: str = ""  # INCOMPLETE | DEAD | TIMEOUT | a comm's INCOMPLETE/ERROR/MISMATCH
    comm: str | None = None
    comm_size: int | None = None
    op: str | None = None  # the collective whose counts differ
    count: int | None = None  # the count of the group being listed (0: none launched)
    status: str | None = None
    error: str | None = None
    error_kind: str | None = None  # "init" | "async"
    job_header: str = ""


class RasTextParser(BlockParser):
    """Reads the text ``ncclras`` prints (or the RAS socket answers without ``SET FORMAT``)."""

    kind: ClassVar[str] = KIND
    anchors: ClassVar[tuple[str, ...]] = (" compiled with CUDA ", "Job summary", "Communicators...")

    def starts(self, line: Line) -> bool:
        """The version line, or the job summary or communicators heading of a report cut above."""
        text = line.text.rstrip()
        return (
            bool(_VERSION.match(text))
            or text == "Job summary"
            or text.startswith("Communicators...")
        )

    def accepts(self, line: Line, block: Sequence[Line]) -> bool:
        """Headings, tables, sections and their indented details, and a few blank lines."""
        text = line.text.rstrip()
        if not text.strip():
            return trailing_blanks(block) < _MAX_BLANKS
        return _is_ras_line(text) and not (_VERSION.match(text) and len(block) > 1)

    def parse(self, block: Sequence[Line]) -> list[Fact]:
        """A report fact, the communicator rows, and one fact per rank or process line."""
        state = _Text()
        report: dict[str, Any] = {}
        facts: list[Fact] = []
        for line in block:
            text = line.text.rstrip()
            if m := _VERSION.match(text):
                report["nccl_version"] = m["v"]
            elif text in ("Errors", "Warnings"):
                state.section, state.heading, state.comm = text.lower(), "", None
            elif text in ("INCOMPLETE", "DEAD", "TIMEOUT"):
                state.heading, state.comm = text, None
            elif m := _SECTION.match(text):
                _section(state, m)
            elif text.startswith(("(total)", "Group ")):
                state.job_header = text
            elif not state.section and (m := _COMM_ROW.match(text)):
                facts.append(_comm_row(line, m, state))
            elif not state.section and (m := _JOB_ROW.match(text)):
                numbers = [int(n) for n in m["n"].split()]
                if "per node" in state.job_header and len(numbers) == 5:
                    report["processes"] = numbers[3]
                elif "(total)    (total)" in state.job_header and len(numbers) == 3:
                    report["processes"] = numbers[1]
            else:
                facts.extend(_detail(line, text, state, report))
        head = RasReport(cite=cite(block[0]), format="text", **report)
        report_comms = sum(f.count for f in facts if isinstance(f, RasComm))
        if report_comms:
            head = RasReport(cite=head.cite, format="text", communicators=report_comms, **report)
        return [head, *facts]


def _section(state: _Text, m: re.Match[str]) -> None:
    state.heading = m["what"]
    state.comm = comm_id(m["hash"])
    state.comm_size = state.sizes.get(int(m["group"]))
    state.op = state.count = state.status = state.error = state.error_kind = None


def _comm_row(line: Line, m: re.Match[str], state: _Text) -> RasComm:
    group, size = int(m["group"]), int(m["size"])
    state.sizes[group] = size
    return RasComm(
        cite=cite(line),
        comm=f"group {group}",
        size=size,
        count=int(m["comms"]),
        status=m["status"],
        errors=m["errors"],
    )


def _detail(line: Line, text: str, state: _Text, report: dict[str, Any]) -> list[Fact]:
    """One indented line of the Errors or Warnings sections."""
    if m := _MISSING_PROCS.match(text):
        report["missing_processes"] = int(m["n"])
    elif m := _DEAD_PROCS.match(text):
        report["dead_processes"] = int(m["n"])
    elif m := _TIMEOUTS.match(text):
        report["timeouts"] = int(m["n"])
    elif m := _PROCESS.match(text):
        state_word = "dead" if state.heading == "DEAD" else "missing"
        gpus = tuple(int(g) for g in m["gpus"].split(",") if g.isdigit())
        return [
            RasProcess(
                cite=cite(line), host=m["host"], state=state_word, pid=int(m["pid"]), gpus=gpus
            )
        ]
    elif m := _DIFF_OPS.match(text):
        state.op, state.count, state.status, state.error = m["op"], None, None, None
    elif _DIFF_STATUS.match(text):
        state.op, state.count, state.status, state.error = None, None, None, None
    elif m := _ERROR_KIND.match(text):
        state.error_kind = "init" if m["kind"] == "Initialization" else "async"
        state.error = None
    elif m := _N_LAUNCHED.match(text):
        state.count = int(m["count"] or 0)
        if state.comm is not None and state.op is not None:
            return [
                RasOpCount(
                    cite=cite(line),
                    comm=state.comm,
                    comm_size=state.comm_size,
                    op=state.op,
                    count=state.count,
                    n_ranks=int(m["n"]),
                )
            ]
    elif m := _N_STATUS.match(text):
        state.status = m["status"]
    elif m := _N_REPORTED.match(text):
        state.error = m["error"].strip()
    elif m := _RANK_LINE.match(text):
        return _rank_line(line, m, state)
    return []


def _rank_line(line: Line, m: re.Match[str], state: _Text) -> list[Fact]:
    """``Rank R ...``: what it is listed for follows from the heading and the group above it."""
    if state.comm is None:
        return []
    rank = int(m["rank"])
    what, _, tail = m["rest"].partition(" -- ")
    who = _WHO.match(tail)
    fields: dict[str, Any] = {
        "cite": cite(line),
        "rank": rank,
        "host": who["host"] if who else None,
        "comm": state.comm,
        "comm_size": state.comm_size,
        "pid": int(who["pid"]) if who else None,
        "gpu": int(who["gpu"]) if who else None,
    }
    out: list[Fact] = []
    if state.heading == "INCOMPLETE":
        fields["state"] = "missing"
    elif state.heading == "ERROR":
        error = (r["error"].strip() if (r := _REPORTED.match(what)) else None) or state.error
        fields["async_error" if state.error_kind == "async" else "init_error"] = error
    elif state.op is not None:
        launched = _LAUNCHED.match(what)
        count = int(launched["count"] or 0) if launched else state.count
        if count is None:
            return []
        fields["op_counts"] = ((state.op, count),)
        if launched:  # a group of one: its own count line
            out.append(
                RasOpCount(
                    cite=cite(line),
                    comm=state.comm,
                    comm_size=state.comm_size,
                    op=state.op,
                    count=count,
                    n_ranks=1,
                    ranks=(rank,),
                )
            )
    else:
        status = (s["status"] if (s := _HAS_STATUS.match(what)) else None) or state.status
        if status is None:
            return []
        fields["status"] = status
        if status == "NOCOMM":
            fields["state"] = "nocomm"
    out.insert(0, RasRank(**fields))
    return out


class RasJsonParser(FileParser):
    """Reads a JSON RAS report as a whole file."""

    kind: ClassVar[str] = KIND
    max_bytes: ClassVar[int] = MAX_BYTES

    @classmethod
    def sniff(cls, head: bytes) -> bool:
        """A JSON object that opens with the RAS report's keys."""
        return (
            head.lstrip().startswith(b"{")
            and b'"nccl_version"' in head
            and (b'"communicators_count"' in head or b'"communicators"' in head)
        )

    def parse(self, data: bytes, source: str, rank: int | None) -> tuple[list[Fact], list[str]]:
        """Facts of one report, and coverage notes. Never raises."""
        value, text, why = json_document(data, "NCCL RAS report", MAX_BYTES)
        if why is not None:
            return [], [why]
        if not isinstance(value, Mapping) or not isinstance(value.get("communicators"), list):
            return [], ["NCCL RAS report: no communicators list"]
        lines = _rank_lines(text)
        comms = [c for c in itertools.islice(value["communicators"], MAX_COMMS) if _is_map(c)]
        facts: list[Fact] = []
        for comm in comms:
            facts.extend(_json_comm(comm, source, lines))
        ras = _map(value.get("ras"))
        head = RasReport(
            cite=Cite.of(
                source, 1, f"NCCL RAS report (JSON), NCCL {_str(value.get('nccl_version'))}"
            ),
            format="json",
            nccl_version=_str(value.get("nccl_version")),
            communicators=len(comms),
            timeouts=_int(ras.get("timeouts_count")),
        )
        notes = []
        if len(value["communicators"]) > MAX_COMMS:
            notes.append(f"NCCL RAS report: read the first {MAX_COMMS} communicators")
        return [head, *facts], notes


def _is_map(value: object) -> bool:
    return isinstance(value, Mapping)


def _int(value: object) -> int | None:
    if isinstance(value, int) and not isinstance(value, bool) and -(1 << 63) <= value < 1 << 64:
        return value
    return None


def _str(value: object) -> str | None:
    return value[:256] if isinstance(value, str) else None


def _rank_lines(text: str) -> list[int]:
    """Line numbers of every ``"rank": N`` line, in order (NCCL prints one per line)."""
    return [n for n, ln in enumerate(text.splitlines()[: 4 * MAX_RANKS], 1) if '"rank":' in ln]


def _json_comm(comm: Mapping[str, Any], source: str, lines: list[int]) -> list[Fact]:
    name = comm_id(_str(comm.get("hash")) or "?")
    size = _int(comm.get("size"))
    ranks = [r for r in itertools.islice(_list(comm.get("ranks")), MAX_RANKS) if _is_map(r)]
    missing = [
        r for r in itertools.islice(_list(comm.get("missing_ranks")), MAX_RANKS) if _is_map(r)
    ]
    at = iter(lines)

    def cite_of(rank: Mapping[str, Any], what: str) -> Cite:
        line = next(at, 1)
        return Cite.of(source, line, f"RAS comm {name} rank {_int(rank.get('rank'))}: {what}")

    rows = [(r, cite_of(r, "reported")) for r in ranks]
    gone = [(r, cite_of(r, "missing")) for r in missing]
    counts = {id(r): _op_counts(r) for r, _ in rows}
    majority = {
        op: Counter(dict(c).get(op) for c in counts.values()).most_common(1)[0][0]
        for op in OPS
        if counts
    }
    statuses = [_status(r) for r, _ in rows]
    facts: list[Fact] = []
    for (rank, c), status in zip(rows, statuses, strict=True):
        flags = _map(rank.get("status"))
        async_error = ERRORS.get(_int(flags.get("async_error")) or 0)
        init_error = ERRORS.get(_int(flags.get("init_state")) or 0)
        off = tuple((op, n) for op, n in counts[id(rank)] if majority.get(op) != n)
        if status == "RUNNING" and not async_error and not init_error and not off:
            continue
        text = f"status {status}" + (f", async error {async_error}" if async_error else "")
        text += "".join(f", {op} {n} (most ranks {majority.get(op)})" for op, n in off)
        facts.append(
            RasRank(
                cite=Cite.of(c.source, c.line, c.text.replace("reported", text)),
                rank=_int(rank.get("rank")),
                host=_str(rank.get("host")),
                comm=name,
                comm_size=size,
                pid=_int(rank.get("pid")),
                gpu=_int(rank.get("cuda_dev")),
                status=status,
                init_error=init_error,
                async_error=async_error,
                op_counts=counts[id(rank)],
            )
        )
    words = []
    for rank, c in gone:
        flags = _map(rank.get("status"))
        word = (
            "dead"
            if flags.get("considered_dead") is True
            else "unresponsive"
            if flags.get("unresponsive") is True
            else "nocomm"
        )
        words.append(word)
        facts.append(
            RasRank(
                cite=Cite.of(c.source, c.line, c.text.replace("missing", f"missing ({word})")),
                rank=_int(rank.get("rank")),
                host=_str(rank.get("host")),
                comm=name,
                comm_size=size,
                state=word,
                pid=_int(rank.get("pid")),
                gpu=_int(rank.get("cuda_dev")),
                status="NOCOMM" if word == "nocomm" else None,
            )
        )
    facts.extend(_op_groups(name, size, rows, counts, source))
    flagged = {
        "INCOMPLETE": any(w in ("dead", "unresponsive") for w in words),
        "ERROR": any(isinstance(f, RasRank) and (f.async_error or f.init_error) for f in facts),
        "MISMATCH": any(isinstance(f, RasOpCount) for f in facts)
        or len(set(statuses)) > 1
        or "nocomm" in words,
    }
    errors = [word for word, on in flagged.items() if on]
    top = max((_STATUSES.index(s) for s in statuses), default=2)
    head = RasComm(
        cite=Cite.of(source, 1, f"RAS comm {name}: size {size}, {len(ranks)} ranks reported"),
        comm=name,
        size=size,
        ranks_reported=_int(comm.get("ranks_count")),
        missing=_int(comm.get("missing_ranks_count")),
        status=_STATUSES[top],
        errors=",".join(errors) or "OK",
    )
    return [head, *facts]


def _op_groups(
    name: str,
    size: int | None,
    rows: list[tuple[Mapping[str, Any], Cite]],
    counts: dict[int, tuple[tuple[str, int], ...]],
    source: str,
) -> list[Fact]:
    """Per collective type whose counts differ: one fact per count, with its ranks."""
    out: list[Fact] = []
    for op in OPS:
        groups: dict[int, list[int]] = {}
        first: dict[int, Cite] = {}
        for rank, c in rows:
            n = dict(counts[id(rank)]).get(op)
            r = _int(rank.get("rank"))
            if n is None or r is None:
                continue
            groups.setdefault(n, []).append(r)
            first.setdefault(n, c)
        if len(groups) < 2:
            continue
        for n, ranks in sorted(groups.items(), key=lambda kv: -len(kv[1])):
            where = first[n]
            out.append(
                RasOpCount(
                    cite=Cite.of(
                        source, where.line, f"RAS comm {name}: {len(ranks)} ranks launched {n} {op}"
                    ),
                    comm=name,
                    comm_size=size,
                    op=op,
                    count=n,
                    n_ranks=len(ranks),
                    ranks=tuple(sorted(ranks)),
                )
            )
    return out


def _list(value: object) -> list[Any]:
    return value if isinstance(value, list) else []


def _map(value: object) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _op_counts(rank: Mapping[str, Any]) -> tuple[tuple[str, int], ...]:
    counts = _map(rank.get("collective_counts"))
    return tuple((op, n) for op in OPS if (n := _int(counts.get(op))) is not None)


def _status(rank: Mapping[str, Any]) -> str:
    """As client_support.cc derives it: abort, then finalize/destroy, then init state."""
    flags = _map(rank.get("status"))
    if flags.get("abort_flag") is True:
        return "ABORT"
    if flags.get("finalize_called") is True or flags.get("destroy_flag") is True:
        return "FINALIZE"
    return "RUNNING" if _int(flags.get("init_state")) in (0, None) else "INIT"
