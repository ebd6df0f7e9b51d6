"""The ``nccl-tests`` kind: what ``all_reduce_perf`` and its siblings print.

A block is a run of consecutive nccl-tests lines: the command line, the
``# nThread ...`` header, the ``#  Rank  0 Group  0 Pid ...`` device lines,
the column headers, the data rows and the ``# Out of bounds values`` /
``# Avg bus bandwidth`` footer, plus failure lines (``host: Test NCCL
failure common.cu:959 '...'``). NCCL's own log lines (``NCCL_DEBUG=INFO``,
the ``NCCL version`` banner) end a block so the nccl-log parser reads them;
the table then goes on in a new block (a column header or a data row starts
one). What a block does not say (the test name, the rank count, whether the
old ``error`` column is in use) is carried from the earlier blocks of the
same source, until a new command or header line starts another run.

Old builds print a maximum error instead of ``#wrong`` and no ``root``
column; pastes without a code fence lose the leading ``#``; both are read.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import ClassVar, NamedTuple

from nccl_doctor.evidence.lines import Line
from nccl_doctor.facts.base import Fact
from nccl_doctor.facts.host import EnvVar
from nccl_doctor.facts.nccl import (
    NcclTestCommand,
    NcclTestConfig,
    NcclTestFailure,
    NcclTestRank,
    NcclTestRow,
    NcclTestSummary,
    to_hex,
)
from nccl_doctor.parse._blocktext import StatefulBlockParser
from nccl_doctor.parse._lazy import LazyPattern
from nccl_doctor.parse._nccl_common import to_float, to_int
from nccl_doctor.parse._values import cite
from nccl_doctor.parse.env import shell_assignments

_TEST = LazyPattern(
    r"(?<![\w-])(?P<test>(?:all_reduce|all_gather|alltoallv?|broadcast|reduce_scatter|reduce|gather"
    r"|scatter|sendrecv|hypercube)_perf(?:_mpi)?)(?![\w-])"
)
_CONFIG_KV = LazyPattern(
    r"\b(?P<k>nThread|nGpus|minBytes|maxBytes|step:|warmup iters:|agg iters:|iters:"
    r"|validation:|graph:)"
    r" ?(?P<v>\d{1,20})(?:\((?P<unit>factor|bytes)\))?"
)
_VERSION = LazyPattern(
    r"nccl-tests version (?P<v>\S+)(?: nccl-headers=\d+)?(?: nccl-library=(?P<lib>\d+))?"
)
_STARTING = LazyPattern(r"Collective test starting: (?P<name>\S+)")
_RANK = LazyPattern(
    r"Rank\s+(?P<rank>\d{1,7})(?:\s+Group\s+(?P<group>\d{1,7}))?\s+Pid\s+(?P<pid>\d{1,10})\s+on\s+"
    r"(?P<host>\S+)\s+device\s+(?P<dev>\d{1,4})\s+\[(?P<bus>[^\]]*)\]\s*(?P<name>(?:\S(?:.*\S)?)?)\s*$"
)
_BUS = LazyPattern(
    r"(?P<dom>[0-9a-fA-F]{1,8}):(?P<bus>[0-9a-fA-F]{1,2}):(?P<dev>[0-9a-fA-F]{1,2})(?:\.(?P<fn>[0-7]))?"
)
_OOB = LazyPattern(r"Out of bounds values\s*:\s*(?P<n>\d{1,20})\s*(?P<ok>OK|FAILED)?")
_AVG = LazyPattern(r"Avg bus bandwidth\s*:\s*(?P<v>\S+)\s*(?P<ok>OK|FAILED)?")
_FAILURE = LazyPattern(
    r"(?:(?<!\S)(?P<host>\S+): )?Test (?P<kind>CUDA|NCCL) failure (?P<file>[^\s:]+):"
    r"(?P<line>\d{1,7})\s*(?P<msg>(?:\S(?:.*\S)?)?)\s*$"
)
_RELAY = LazyPattern(
    r"\.\. (?P<host>\S+) pid (?P<pid>\d{1,10}): Test failure (?P<file>[^\s:]+):(?P<line>\d{1,7})"
)
_COLHEAD = LazyPattern(r"out-of-place(?: \(\+ per-iteration\))?\s{3,}in-place")
_NA = "N/A"
_WORD = LazyPattern(r"[a-z][a-z0-9_]{0,15}")
_REDOPS = frozenset({"sum", "prod", "max", "min", "avg", "mulsum", "none"})
_LAUNCHERS = frozenset(
    {"mpirun", "mpiexec", "srun", "kubectl", "torchrun", "orterun", "prun", "jsrun"}
)
_NP_FLAGS = frozenset({"-np", "-n", "--np", "--ntasks"})


def _strip_hash(text: str) -> tuple[bool, str]:
    """Whether the line starts with ``#``, and its text without it (and without the
    backticks of a line pasted as inline code: `` `# Avg bus bandwidth : 3.9` ``)."""
    t = text.strip().strip("`").strip()
    if t.startswith("#"):
        return True, t[1:].strip()
    return False, t


class _RowTokens(NamedTuple):
    size: str
    elements: str
    dtype: str
    redop: str | None
    values: list[str]


def _row_tokens(text: str) -> _RowTokens | None:
    """The tokens of a data row (``size count type redop [root] values...``), else ``None``.

    Builds before 2.x printed no redop column for the collectives without one
    (all_gather's ``size count type time algbw busbw error ...``): their rows have
    ``redop`` ``None``.
    """
    tokens = text.split()
    if len(tokens) < 7 or len(tokens) > 64:
        return None
    if to_int(tokens[0]) is None or to_int(tokens[1]) is None or not _WORD.fullmatch(tokens[2]):
        return None
    redop: str | None = tokens[3]
    values = tokens[4:]
    if not _WORD.fullmatch(tokens[3]):
        redop, values = None, tokens[3:]  # no redop column
    if len(values) < 4 or to_float(values[0]) is None:
        return None
    return _RowTokens(tokens[0], tokens[1], tokens[2], redop, values)


def classify(text: str) -> str | None:
    """The kind of one nccl-tests line, or ``None`` when it is not one."""
    hashed, t = _strip_hash(text)
    if not t:
        return "hash" if hashed else "blank"
    if t.startswith("nThread ") and "nGpus" in t:
        return "config"
    if t.startswith("Rank ") and _RANK.match(t):
        return "rank"
    if t == "Using devices":
        return "using"
    if _COLHEAD.search(t) or (t.startswith("size") and "count" in t and "busbw" in t):
        return "colhead"
    if t.startswith("(B)") and "(elements)" in t:
        return "colhead"
    if t.startswith("Out of bounds values"):
        return "oob"
    if t.startswith("Avg bus bandwidth"):
        return "avg"
    if t.startswith("nccl-tests version"):
        return "version"
    if t.startswith("Collective test starting"):
        return "starting"
    if t.startswith("Collective test concluded"):
        return "concluded"
    if "Test CUDA failure" in t or "Test NCCL failure" in t or ": Test failure" in t:
        return "failure"
    if hashed:
        return "error" if t.startswith("error:") else "comment"
    if _row_tokens(t) is not None:
        return "row"
    m = _TEST.search(t)
    if m is not None and (not t[m.end() :].strip() or t[m.end() :].lstrip().startswith("-")):
        return "command"
    return None


_STARTS = frozenset(
    {
        "config",
        "rank",
        "using",
        "colhead",
        "oob",
        "avg",
        "version",
        "starting",
        "failure",
        "command",
    }
)


@dataclass(slots=True)
class _Context:
    """What earlier blocks of the source said about the current run."""

    test: str | None = None
    ranks: set[int] = field(default_factory=set)
    rows: int = 0
    old_error_column: bool | None = None
    tests_version: str | None = None
    nccl_version_code: int | None = None

    @property
    def collective(self) -> str | None:
        """The test's collective (``all_reduce``)."""
        if self.test is None:
            return None
        return self.test.removesuffix("_mpi").removesuffix("_perf")


class NcclTestsParser(StatefulBlockParser[tuple[bool, bool]]):
    """Reads nccl-tests output: config, ranks, rows, summary, failures."""

    kind: ClassVar[str] = "nccl-tests"
    anchors: ClassVar[tuple[str, ...]] = (
        "nThread",
        "Using devices",
        " Pid ",
        "out-of-place",
        "busbw",
        "(elements)",
        "Out of bounds values",
        "Avg bus bandwidth",
        "nccl-tests version",
        "Collective test",
        "Test NCCL failure",
        "Test CUDA failure",
        ": Test failure",
        "_perf",
        "     sum ",
        "    prod ",
        "     max ",
        "     min ",
        "     avg ",
        "  mulsum ",
        "    none ",
    )

    def __init__(self) -> None:
        super().__init__()
        self._ctx = _Context()

    # -- block boundaries ------------------------------------------------
    def starts(self, line: Line) -> bool:
        """Whether ``line`` begins nccl-tests output (a data row only with a known redop)."""
        kind = classify(line.text)
        if kind == "row":
            tokens = line.text.split()
            return tokens[3] in _REDOPS
        return kind in _STARTS

    def _initial(self, first: Line) -> tuple[bool, bool]:
        kind = classify(first.text)
        return kind == "config", kind not in ("command", "config", "version", "starting", None)

    def _step(self, state: tuple[bool, bool], line: Line) -> tuple[bool, bool] | None:
        has_config, has_body = state
        kind = classify(line.text)
        if kind is None or kind == "command":
            return None
        if kind in ("config", "version", "starting") and (
            has_body or (kind == "config" and has_config)
        ):
            return None
        if kind == "config":
            return True, has_body
        if kind in ("rank", "row", "colhead", "oob", "avg", "using"):
            return has_config, True
        return state

    # -- facts -----------------------------------------------------------
    def parse(self, block: Sequence[Line]) -> list[Fact]:
        """The facts of one block; never raises."""
        facts: list[Fact] = []
        ctx = self._ctx
        version: tuple[str | None, int | None] = (None, None)
        oob: tuple[Line, re.Match[str]] | None = None
        avg: tuple[Line, re.Match[str]] | None = None
        for line in block:
            kind = classify(line.text)
            _, t = _strip_hash(line.text)
            if kind == "command":
                m = _TEST.search(t)
                if m is not None:
                    self._ctx = ctx = _Context(test=m["test"])
                    facts.append(_command(line, t, m))
                    facts.extend(_settings(line, t))
            elif kind == "version" and (m := _VERSION.search(t)):
                version = (m["v"], to_int(m["lib"]))
            elif kind == "starting" and (m := _STARTING.search(t)):
                if ctx.rows or ctx.ranks:
                    self._ctx = ctx = _Context()
                ctx.test = m["name"]
            elif kind == "config":
                if ctx.rows:
                    self._ctx = ctx = _Context(test=ctx.test)
                ctx.tests_version, ctx.nccl_version_code = version
                facts.append(_config(line, t, ctx))
            elif kind == "rank" and (m := _RANK.match(t)):
                fact = _rank(line, m)
                if fact.rank is not None:
                    ctx.ranks.add(fact.rank)
                facts.append(fact)
            elif kind == "colhead" and "busbw" in t:
                ctx.old_error_column = "#wrong" not in t and "error" in t
            elif kind == "row":
                row = _row(line, ctx)
                if row is not None:
                    ctx.rows += 1
                    facts.append(row)
            elif kind == "oob":
                if avg is not None:  # another footer: each process of a run printed its own
                    facts.append(_summary(avg[0], oob, avg, ctx))
                    avg = None
                oob = (line, m) if (m := _OOB.search(t)) else oob
            elif kind == "avg":
                if avg is not None:
                    facts.append(_summary(avg[0], oob, avg, ctx))
                    oob = None
                avg = (line, m) if (m := _AVG.search(t)) else avg
            elif kind == "failure":
                if failure := _failure(line, t):
                    facts.append(failure)
            elif kind == "error":
                message = t[len("error:") :].strip() or None
                facts.append(
                    NcclTestFailure(
                        cite=cite(line),
                        rank=line.rank,
                        host=line.host,
                        kind="error",
                        message=message,
                    )
                )
        if oob is not None or avg is not None:
            where = avg[0] if avg is not None else oob[0] if oob is not None else block[0]
            facts.append(_summary(where, oob, avg, ctx))
        return facts


def _settings(line: Line, text: str) -> list[EnvVar]:
    """The variables the command line sets (``-x NCCL_P2P_DISABLE=1``, ``NCCL_DEBUG=INFO
    ./all_reduce_perf``): this parser claims the line, so the env parser never sees it."""
    return [
        EnvVar(cite=cite(line), rank=line.rank, host=line.host, name=k, value=v, form=form)
        for k, v, form in shell_assignments(text)
        if form not in ("shell", "export_name")  # the line's own shell, not the test's
    ]


def _command(line: Line, text: str, m: re.Match[str]) -> NcclTestCommand:
    """The command line that ran a test."""
    words = text.split()
    launcher: str | None = None
    n_procs: int | None = None
    args: list[tuple[str, str]] = []
    seen_test = False
    for i, word in enumerate(words):
        if _TEST.search(word):
            seen_test = True
            continue
        nxt = words[i + 1] if i + 1 < len(words) else ""
        if not seen_test:
            base = word.rsplit("/", 1)[-1]
            if launcher is None and base in _LAUNCHERS:
                launcher = base
            elif word in _NP_FLAGS and n_procs is None:
                n_procs = to_int(nxt)
            elif word.startswith("--ntasks="):
                n_procs = to_int(word.split("=", 1)[1])
        elif word.startswith("-") and len(args) < 32:
            flag, eq, value = word.partition("=")
            if not eq:
                value = nxt if nxt and not nxt.startswith("-") else ""
            args.append((flag, value.strip("'\";")))
    return NcclTestCommand(
        cite=cite(line),
        rank=line.rank,
        host=line.host,
        test=m["test"],
        launcher=launcher,
        n_procs=n_procs,
        args=tuple(args),
    )


def _config(line: Line, text: str, ctx: _Context) -> NcclTestConfig:
    """The ``nThread ... nGpus ... minBytes ...`` header."""
    kv: dict[str, int | None] = {}
    unit: str | None = None
    for m in _CONFIG_KV.finditer(text):
        kv.setdefault(m["k"], to_int(m["v"]))
        if m["k"] == "step:":
            unit = m["unit"]
    step = kv.get("step:")
    validation = kv.get("validation:")
    return NcclTestConfig(
        cite=cite(line),
        rank=line.rank,
        host=line.host,
        test=ctx.test,
        n_threads=kv.get("nThread"),
        n_gpus=kv.get("nGpus"),
        min_bytes=kv.get("minBytes"),
        max_bytes=kv.get("maxBytes"),
        step_factor=step if unit == "factor" else None,
        step_bytes=step if unit == "bytes" else None,
        warmup_iters=kv.get("warmup iters:"),
        iters=kv.get("iters:"),
        agg_iters=kv.get("agg iters:"),
        validation=None if validation is None else validation != 0,
        graph=kv.get("graph:"),
        tests_version=ctx.tests_version,
        nccl_version_code=ctx.nccl_version_code,
    )


def _rank(line: Line, m: re.Match[str]) -> NcclTestRank:
    """A ``Rank N [Group G] Pid P on HOST device D [BUS] NAME`` line."""
    raw = m["bus"].strip()
    bus_id: str | None = None
    pci_bus: int | None = None
    if b := _BUS.fullmatch(raw):
        dom, bus, dev = to_hex(b["dom"]), to_hex(b["bus"]), to_hex(b["dev"])
        fn = to_int(b["fn"]) or 0
        if dom is not None and bus is not None and dev is not None:
            bus_id = f"{dom:08X}:{bus:02X}:{dev:02X}.{fn:X}"
            pci_bus = bus
    else:
        pci_bus = to_hex(raw) if raw.lower().startswith("0x") else None
    return NcclTestRank(
        cite=cite(line),
        rank=to_int(m["rank"]),
        host=m["host"],
        group=to_int(m["group"]),
        pid=to_int(m["pid"]),
        device=to_int(m["dev"]),
        bus_id_raw=raw or None,
        bus_id=bus_id,
        pci_bus=pci_bus,
        gpu_name=m["name"] or None,
    )


def _side(
    values: list[str], old: bool | None
) -> tuple[float | None, float | None, float | None, int | None, float | None]:
    """(time, algbw, busbw, wrong, error) of one half of a row."""
    time, algbw, busbw = (to_float(v) for v in values[:3])
    last = values[3] if len(values) > 3 else _NA
    if last == _NA:
        return time, algbw, busbw, None, None
    number = to_float(last)
    if number is None:
        return time, algbw, busbw, None, None
    if old or (old is None and "e" in last.lower()):
        return time, algbw, busbw, None, number
    wrong = int(number) if number == int(number) and abs(number) < 1e18 else None
    return time, algbw, busbw, wrong, None


def _row(line: Line, ctx: _Context) -> NcclTestRow | None:
    """One data row, out-of-place then in-place."""
    tokens = _row_tokens(line.text)
    if tokens is None:
        return None
    nums: list[str] = []
    for value in tokens.values:
        if value != _NA and to_float(value) is None:
            break
        nums.append(value)
    root: int | None = None
    if len(nums) % 4 == 1:
        root = to_int(nums[0])
        nums = nums[1:]
    if not nums or len(nums) % 4:
        return None
    empty: tuple[float | None, float | None, float | None, int | None, float | None] = (
        None,
        None,
        None,
        None,
        None,
    )
    if len(nums) >= 8:
        half = len(nums) // 2
        o, i = _side(nums[:half], ctx.old_error_column), _side(nums[half:], ctx.old_error_column)
    elif _in_place_only(line.text):
        o, i = empty, _side(nums, ctx.old_error_column)
    else:
        o, i = _side(nums, ctx.old_error_column), empty
    return NcclTestRow(
        cite=cite(line),
        rank=line.rank,
        host=line.host,
        collective=ctx.collective,
        size_bytes=int(tokens.size),
        count=to_int(tokens.elements),
        dtype=tokens.dtype,
        redop=tokens.redop,
        root=None if root is None or root < 0 else root,
        time_us=o[0],
        algbw_gbytes_s=o[1],
        busbw_gbytes_s=o[2],
        wrong=o[3],
        error=o[4],
        in_place_time_us=i[0],
        in_place_algbw_gbytes_s=i[1],
        in_place_busbw_gbytes_s=i[2],
        in_place_wrong=i[3],
        in_place_error=i[4],
    )


def _in_place_only(text: str) -> bool:
    """Whether a one-sided row left the out-of-place columns blank (trace replay)."""
    return re.search(r"\S {24,}\S", text) is not None


def _failure(line: Line, text: str) -> NcclTestFailure | None:
    """A ``Test CUDA/NCCL failure`` or `` .. host pid N: Test failure`` line."""
    if m := _RELAY.search(text):
        return NcclTestFailure(
            cite=cite(line),
            rank=line.rank,
            host=m["host"],
            kind="test",
            file=m["file"],
            source_line=to_int(m["line"]),
            pid=to_int(m["pid"]),
        )
    if m := _FAILURE.search(text):
        message = m["msg"].strip().strip("'").strip() or None
        return NcclTestFailure(
            cite=cite(line),
            rank=line.rank,
            host=m["host"] or line.host,
            kind=m["kind"].lower(),
            file=m["file"],
            source_line=to_int(m["line"]),
            message=message,
        )
    return None


def _summary(
    where: Line,
    oob: tuple[Line, re.Match[str]] | None,
    avg: tuple[Line, re.Match[str]] | None,
    ctx: _Context,
) -> NcclTestSummary:
    """The footer of a table, citing ``where`` (the average line when present)."""
    oob_m = oob[1] if oob is not None else None
    avg_m = avg[1] if avg is not None else None
    return NcclTestSummary(
        cite=cite(where),
        rank=where.rank,
        host=where.host,
        test=ctx.test,
        avg_busbw_gbytes_s=to_float(avg_m["v"]) if avg_m else None,
        avg_busbw_ok=None if avg_m is None or avg_m["ok"] is None else avg_m["ok"] == "OK",
        out_of_bounds=to_int(oob_m["n"]) if oob_m else None,
        out_of_bounds_ok=None if oob_m is None or oob_m["ok"] is None else oob_m["ok"] == "OK",
        nranks=len(ctx.ranks) or None,
        rows=ctx.rows,
    )
