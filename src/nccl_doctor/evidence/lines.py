"""One line of evidence, with the rank/host/time its prefixes told.

Real logs carry prefixes that say who printed a line: torchrun's
``[default3]:``, PyTorch's ``[rank3]:``, NCCL's ``host:pid:tid [dev]``,
Slurm ``srun -l``'s ``3: ``, mpirun ``--tag-output``'s ``[1,3]<stdout>:``
(horovodrun's ``[3]<stdout>:``), Ray's ``(RayWorker pid=123, ip=10.0.0.1)``, pdsh's ``worker-1: ``
(a collector's ``[worker-1] ``),
timestamps, syslog and Kubernetes collectors. :class:`Attributor` peels them
off, so parsers see the text the tool printed, and remembers context that
spans lines (mp.spawn's ``-- Process 2 terminated with the following error:``).
"""

from __future__ import annotations

import calendar
import functools
import re
from dataclasses import dataclass
from datetime import datetime, timezone


@dataclass(frozen=True, slots=True)
class Line:
    """A line as parsers see it.

    ``number`` is 1-based in the original source; ``raw`` is the line as
    read (for citations); ``text`` is the line with attribution prefixes
    removed. ``device`` is NCCL's ``[dev]`` (the CUDA device of the process),
    ``time_s`` a sortable time in seconds and ``clock`` the family of the
    timestamp it came from (``iso``, ``glog``, ``syslog``, ``uptime``):
    times are only comparable within one clock family.
    """

    source: str
    number: int
    raw: str
    text: str
    rank: int | None = None
    host: str | None = None
    pid: int | None = None
    device: int | None = None
    time_s: float | None = None
    clock: str | None = None


_MONTHS = {m: i for i, m in enumerate(calendar.month_abbr) if m}

_CRI = re.compile(
    r"(?P<ts>\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?(?:Z|[+-]\d\d:?\d\d)?) (?:stdout|stderr) [FP] "
)
_ISO = re.compile(
    r"\[?(?P<ts>\d{4}-\d\d-\d\d[T ]\d\d:\d\d:\d\d(?:[.,]\d+)?(?:Z|[+-]\d\d:?\d\d)?)\]?(?:\s+|$)"
)
_SYSLOG_FIRST = frozenset("JFMASOND")
_SYSLOG = re.compile(
    r"(?P<mon>Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec) +(?P<day>\d{1,2}) "
    r"(?P<hms>\d\d:\d\d:\d\d)(?:\.\d+)? (?P<host>[\w.-]+) (?:kernel|[\w./-]+(?:\[\d+\])?): "
)
_DMESG_T = re.compile(
    r"\[(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun) (?P<mon>\w{3}) +(?P<day>\d{1,2}) "
    r"(?P<hms>\d\d:\d\d:\d\d) (?P<year>\d{4})\] "
)
_DMESG = re.compile(r"\[ *(?P<up>\d+\.\d+)\] ")
#: Ray's and vLLM's process tags: ``(RayWorker pid=4242, ip=10.1.2.3) ``, ``(VllmWorker rank=1
#: pid=4888) ``, ``(VllmWorker TP1 pid=2100) ``; a tensor-parallel rank is the rank only in a
#: name without a data- or pipeline-parallel one
_RAY = re.compile(
    r"\((?:(?P<who>[\w.:-]+)(?: rank=(?P<rank>\d{1,6})| TP(?P<tp>\d{1,6}))? )?"
    r"pid=(?P<pid>\d+)(?:, ip=(?P<host>[\w.:-]+))?\) "
)
_KUBECTL = re.compile(r"\[pod/(?P<host>[\w.-]+)/[\w.-]+\] ")
_COMPOSE = re.compile(r"(?P<host>[\w.-]+-\d+) +\| ")
#: pdsh (DeepSpeed's multi-node launcher) puts ``host: `` before each line; a
#: host name here must hold a dash or dot and end in a digit (``worker-1``,
#: ``gpu-dev006``, ``ip-10-0-0-1``), so ``RuntimeError: `` or ``step10: `` is no host.
_PDSH = re.compile(r"(?P<host>[a-z][a-z0-9]*(?:[-.][a-z0-9]+)+): (?=\S)")
#: kernel drivers print ``nvidia-nvswitch3: `` or ``mlx5-core: `` the same way
_NOT_HOSTS = ("nvidia", "mlx", "nv-", "nv_", "ib-", "ib_", "kernel")


#: a collector's or parallel shell's bracketed host (``[node-b-gpu09] ``), the same host names
_BRACKET_HOST = re.compile(r"\[(?P<host>[a-z][a-z0-9]*(?:[-.][a-z0-9]+)+)\] (?=\S)")


def _pdsh_host(name: str) -> bool:
    return name[-1].isdigit() and not name.startswith(_NOT_HOSTS)


#: mpirun --tag-output's [job,rank] and horovodrun's [rank] before <stdout>/<stderr>
_MPI_TAG = re.compile(r"\[(?:\d+,)?(?P<rank>\d+)\]<(?:stdout|stderr|stddiag)>: ?")
#: The tag before the rank ends in a non-digit, so the rank is the trailing digits in one
#: way only (a lazy tag before ``\d+`` would retry every split of a long digit run).
_TORCHRUN = re.compile(r"\[(?:default|[A-Za-z_](?:[\w-]*[A-Za-z_-])?)(?P<rank>\d+)\]: ?")
_RANK = re.compile(r"\[rank(?P<rank>\d+)\]: ?")
_SRUN = re.compile(r" *(?P<rank>\d{1,6}): ")
_BRACKET_RANK = re.compile(r"\[(?P<rank>\d+)\] (?=[\w.-]+:\d+:\d+ \[\d+\] )")
_NCCL = re.compile(r"(?P<host>[\w.-]+):(?P<pid>\d+):(?P<tid>\d+) \[(?P<dev>\d+)\] ")
_GLOG_CPP = re.compile(r"\[?[IWEF](?P<md>\d{3,4}) (?P<hms>\d\d:\d\d:\d\d(?:\.\d+)?)[ \]]")
#: the start of a bracketed glog line (PyTorch's C++ log): no prefix below starts so (the
#: line tests say which), so the prefixes of such a line are not tried one by one
_GLOG_START = re.compile(r"\[[IWEF]\d{3,4} ")
#: SGLang's scheduler prefix after its time stamp (``[2025-03-01 10:00:01 TP3] ``): the
#: tensor-parallel rank is the process's rank only when no data- or pipeline-parallel rank
#: comes before it (each replica of a DP job numbers its TP ranks from 0 again)
_SGLANG = re.compile(
    r"(?P<outer>(?:DP|PP|ATTN_CP|MOE_DP)\d{1,6} )*TP(?P<rank>\d{1,6})(?: EP\d{1,6})?\] "
)
_SGLANG_FIRST = ("TP", "DP", "PP", "ATTN_CP", "MOE_DP")
_OUTER_PARALLEL = re.compile(r"(?:DP|PP)\d")
#: a runner's per-task stream tag: ``opt-1_3b.0 [stderr] `` (milabench/voir and the like)
_TASK_STREAM = re.compile(r"[\w.-]{1,80} \[(?:stderr|stdout)\] ")
#: vLLM/Ray-style logging: ``ERROR 04-07 00:57:46 ray_utils.py:45] ``
_PYLOG = re.compile(
    r"(?:DEBUG|INFO|WARNING|WARN|ERROR|CRITICAL) (?P<mo>\d\d)-(?P<d>\d\d) "
    r"(?P<hms>\d\d:\d\d:\d\d)(?:\.\d+)? [\w.-]+:\d+\] "
)
#: TensorRT-LLM's C++ logger (``[TensorRT-LLM][ERROR][3] ``, the MPI rank where it knows it),
#: its newer form (``12-06-2025 07:09:01.123456 [TRT-LLM] [E] [3] ``) and its Python logger
#: (``[12/06/2025-07:09:01] [TRT-LLM] [RANK 3] [E] ``; ``[MPI_Rank 3]`` before)
_TRTLLM_CPP = re.compile(
    r"\[TensorRT-LLM\]\[(?:ERROR|WARNING|INFO|DEBUG|TRACE|VERBOSE)\](?:\[(?P<rank>\d{1,6})\])? "
)
_TRTLLM_DATED = re.compile(
    r"\[?(?P<mo>\d\d)[-/](?P<d>\d\d)[-/](?P<y>\d{4})[- ](?P<hms>\d\d:\d\d:\d\d(?:\.\d{1,6})?)\]? "
    r"\[TRT-LLM\] (?:\[(?:RANK|MPI_Rank) (?P<prank>\d{1,6})\] )?\[[FEWIDV]\] "
    r"(?:\[(?P<rank>\d{1,6})\] )?"
)
_TRACEBACK = "Traceback (most recent call last):"
_SPAWN = re.compile(r"-- Process (?P<rank>\d+) terminated with the following error:")


def _iso_seconds(ts: str) -> float | None:
    text = ts.replace(",", ".").replace("Z", "+00:00")
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        return None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=timezone.utc)
    return moment.timestamp()


def _month_day_seconds(month: int, day: int, hms: str) -> float | None:
    """Seconds since 1 January of an unknown year (glog and syslog have none)."""
    try:
        h, m, s = hms.split(":")
    except ValueError:
        return None
    start = _day_seconds(month, day)
    if start is None:
        return None
    return start + int(h) * 3600 + int(m) * 60 + float(s)


@functools.lru_cache(maxsize=512)
def _day_seconds(month: int, day: int) -> float | None:
    """Seconds from 1 January to the start of ``day`` of ``month`` (in 2000, a leap year:
    29 February is a day), ``None`` for no such day; a timestamp a line asks for once."""
    try:
        moment = datetime(2000, month, day, tzinfo=timezone.utc)
    except ValueError:
        return None
    return (moment - datetime(2000, 1, 1, tzinfo=timezone.utc)).total_seconds()


def _rank_prefix(text: str, *, srun: bool) -> re.Match[str] | None:
    """A prefix naming the rank: mpirun's tag, ``[rank3]:``, torchrun's, ``[155] ``, srun's."""
    return (
        _MPI_TAG.match(text)
        or _RANK.match(text)
        or _TORCHRUN.match(text)
        or _BRACKET_RANK.match(text)
        or (_SRUN.match(text) if srun else None)
    )


class Attributor:
    """Peels attribution prefixes off lines of one source, keeping context.

    ``default_rank`` is the rank the source as a whole belongs to (a per-rank
    log file), used when a line names none.
    """

    def __init__(self, source: str, default_rank: int | None = None) -> None:
        self.source = source
        self.default_rank = default_rank
        self._spawn_rank: int | None = None
        self._last = 0

    def line(self, number: int, raw: str) -> Line:
        """Attribute one line (``raw`` without its line terminator).

        Lines must come in increasing order; a gap (lines the reader skipped)
        ends any context carried from line to line.
        """
        if number != self._last + 1:
            self._spawn_rank = None
        self._last = number
        text = raw
        rank: int | None = None
        host: str | None = None
        pid: int | None = None
        device: int | None = None
        time_s: float | None = None
        clock: str | None = None
        explicit = False
        for _ in range(8):
            first = text[:1]
            if not first or text.startswith("NCCL "):
                break  # no prefix starts so: NCCL's own message (the most common line) begins
            if text.startswith(_SGLANG_FIRST) and (m := _SGLANG.match(text)):
                # SGLang's scheduler prefix, whatever its first letter (D and M open months too)
                if m["outer"] is None:
                    rank, explicit = int(m["rank"]), True
                text = text[m.end() :]
                continue
            if first.isalpha() and first not in _SYSLOG_FIRST:
                # most log lines: only a host-like prefix (NCCL's, compose's) can start here
                if m := _NCCL.match(text):
                    host, pid, device = m["host"], int(m["pid"]), int(m["dev"])
                    explicit = True
                elif m := _COMPOSE.match(text):
                    host = host or m["host"]
                elif host is None and (m := _PDSH.match(text)) and _pdsh_host(m["host"]):
                    host = m["host"]
                elif m := _TASK_STREAM.match(text):
                    pass
                elif m := _PYLOG.match(text):
                    seconds = _month_day_seconds(int(m["mo"]), int(m["d"]), m["hms"])
                    if seconds is not None:
                        time_s, clock = seconds, "glog"
                else:
                    break
                text = text[m.end() :]
                continue
            if first == "[" and _GLOG_START.match(text):
                break  # the C++ log's own head: no prefix (the common line of PyTorch's logs)
            if m := _CRI.match(text):
                time_s, clock = _iso_seconds(m["ts"]), "iso"
            elif m := _SYSLOG.match(text):
                host = host or m["host"]
                time_s = _month_day_seconds(_MONTHS[m["mon"]], int(m["day"]), m["hms"])
                clock = "syslog"
            elif m := _DMESG_T.match(text):
                month = _MONTHS.get(m["mon"])
                if month is not None:
                    time_s = _iso_seconds(f"{m['year']}-{month:02d}-{int(m['day']):02d} {m['hms']}")
                    clock = "iso"
            elif m := _DMESG.match(text):
                time_s, clock = float(m["up"]), "uptime"
            elif m := _ISO.match(text):
                time_s, clock = _iso_seconds(m["ts"]), "iso"
            elif m := _KUBECTL.match(text) or _COMPOSE.match(text):
                host = host or m["host"]
            elif host is None and (m := _BRACKET_HOST.match(text)) and _pdsh_host(m["host"]):
                host = m["host"]
            elif m := _RAY.match(text):
                pid = int(m["pid"])
                host = host or m["host"]
                if m["rank"] or (m["tp"] and not _OUTER_PARALLEL.search(m["who"])):
                    rank, explicit = int(m["rank"] or m["tp"]), True
            elif m := _rank_prefix(text, srun=rank is None):
                rank, explicit = int(m["rank"]), True
            elif m := _NCCL.match(text):
                host, pid, device = m["host"], int(m["pid"]), int(m["dev"])
                explicit = True
            elif text.startswith("[TensorRT-LLM][") and (m := _TRTLLM_CPP.match(text)):
                if m["rank"]:
                    rank, explicit = int(m["rank"]), True
                break  # its level stays in the text: "[ERROR]" is what says the line failed
            elif "[TRT-LLM] [" in text[:48] and (m := _TRTLLM_DATED.match(text)):
                stamp = f"{m['y']}-{m['mo']}-{m['d']} {m['hms']}"
                time_s, clock = _iso_seconds(stamp), "iso"
                if m["rank"] or m["prank"]:
                    rank, explicit = int(m["rank"] or m["prank"]), True
            else:
                break
            text = text[m.end() :]
        if time_s is None and (g := _GLOG_CPP.match(text)):
            md = g["md"]
            time_s = _month_day_seconds(int(md[:-2]), int(md[-2:]), g["hms"])
            clock = "glog" if time_s is not None else None
        if "-- Process " in text and (spawn := _SPAWN.search(text)):  # the literal: ~5x faster
            self._spawn_rank = int(spawn["rank"])
            rank = self._spawn_rank
        elif explicit and text.endswith(_TRACEBACK):
            # a ranked line that opens a traceback (SGLang's "Scheduler hit an exception:
            # Traceback ..."): its frames and message follow without the prefix
            self._spawn_rank = rank
        elif explicit or not text.strip():
            self._spawn_rank = None
        elif rank is None:
            rank = self._spawn_rank
        if rank is None:
            rank = self.default_rank
        if text.endswith("`") or text.startswith("`"):
            text = _unquoted(text)
        return Line(self.source, number, raw, text, rank, host, pid, device, time_s, clock)


def _unquoted(text: str) -> str:
    """``text`` without the one backtick of markdown inline code its line holds no pair of.

    A log pasted into an issue keeps what the markdown around it left behind:
    ``...NCCL version 2.21.5` `` (the quote closed on the next line) would
    otherwise hide the message's end from the parsers. So does the closing
    backtick of a message quoted at the end of the reporter's sentence
    (``it fails with `NCCL error in: ..., NCCL version 2.19.3` ``). A pair
    around the whole line, a fence, or a backtick inside the message stays as
    it is.
    """
    if text.startswith("``") or text.endswith("``"):
        return text
    if text.count("`") % 2 == 0:
        return text[:-1] if text.endswith("`") and not text.startswith("`") else text
    return text[1:] if text.startswith("`") else text[:-1]


def lines_of(text: str, source: str = "<text>", default_rank: int | None = None) -> list[Line]:
    """Attribute every line of ``text`` (a convenience for small inputs and tests)."""
    attributor = Attributor(source, default_rank)
    return [attributor.line(i, raw) for i, raw in enumerate(text.splitlines(), 1)]
