"""Messages of PyTorch's distributed layer, one line at a time -> typed facts.

Shared by the torchrun parser (glog/launcher lines) and the traceback parser
(the same messages quoted inside exceptions), so a message gives the same
facts whichever parser reads it. Every matcher is guarded by a cheap
substring test; patterns are searched, not anchored at the line start
(watchdog lines get glued to progress bars).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from nccl_doctor.evidence.lines import Line
from nccl_doctor.facts.base import Fact
from nccl_doctor.facts.catalogue import harmless_lead
from nccl_doctor.facts.run import CollectiveTimeout, PgEnvironment, PgInitOptions, WatchdogState
from nccl_doctor.parse import _launcher, _store
from nccl_doctor.parse._cuda import CUDA_KEYWORDS, cuda_facts
from nccl_doctor.parse._lazy import LazyPattern
from nccl_doctor.parse._nccl_report import nccl_report
from nccl_doctor.parse._runtext import Ctx, error_fact, pg_prefix, rank_of, to_int
from nccl_doctor.parse._values import cite

__all__ = ["CATEGORIES", "KEYWORDS", "classify", "context", "nccl_report", "options_facts"]

# -- watchdog ----------------------------------------------------------------
_TIMEOUT = LazyPattern(
    r"(?:[Ww]atchdog caught|Caught) collective operation timeout: WorkNCCL\((?P<work>.{0,2000}?)\)"
    r" ran for (?P<ran>\d{1,15}) milliseconds before timing out"
)
_TIMEOUT_CUT = LazyPattern(r"collective operation timeout: WorkNCCL\((?P<work>.*)")
_BLOCKING = LazyPattern(r"Work WorkNCCL\((?P<work>.{0,2000}?)\) timed out in blocking wait")
_SEQ = LazyPattern(r"SeqNum=(\d{1,15})")
_OP = LazyPattern(r"OpType=(\w{1,40})")
_NUMEL_IN = LazyPattern(r"NumelIn=(\d{1,19})")
_NUMEL_OUT = LazyPattern(r"NumelOut=(\d{1,19})")
_TMO = LazyPattern(r"Timeout\(ms\)=(\d{1,15})")
_SHAPE = LazyPattern(r"TensorShape=\[([^\]]{0,200})\]")
_ENQ = LazyPattern(r"[Ll]ast enqueued \w{1,10} work: (-?\d{1,15})")
_COMP = LazyPattern(r"[Ll]ast completed \w{1,10} work: (-?\d{1,15})")
_AT_WORK = LazyPattern(r"(?:detected by watchdog at work|Timeout at \w{1,10} work): (-?\d{1,15})")

# -- ProcessGroupNCCL option lists ----------------------------------------------
_OPTIONS = LazyPattern(r"ProcessGroupNCCL (?P<what>initialization options|environments):\s*")
#: The key ends in a non-space, so a run of spaces before ``:`` is matched one way only.
_ITEM = LazyPattern(r"(?P<k>[A-Za-z_](?:[\w ()./-]{0,79}[\w()./-])?)\s*[:=]\s*(?P<v>[^,]*)")

# -- everything else: (substring guard, category, pattern) --------------------------
_ERRORS: tuple[tuple[str, str, LazyPattern[str]], ...] = (
    (
        "eartbeat",
        "heartbeat_timeout",
        LazyPattern(r"Heartbeat monitor timed out|detects no heartbeat|detected no heartbeat"),
    ),
    (
        "got stuck for",
        "watchdog_stuck",
        LazyPattern(r"watchdog got stuck for (?P<d>\d{1,9}) seconds"),
    ),
    (
        "watchdog thread terminated",
        "watchdog_terminated",
        LazyPattern(
            r"(?:NCCL|Process group) watchdog thread terminated with exception: ?"
            r"(?P<d>[^\n]{0,300})"
        ),
    ),
    ("entire process down", "process_down", LazyPattern(r"taking the entire process down")),
    (
        # DeepEP's kernels (and its host side) give up waiting for a peer after ~100 s and
        # trap: what the framework raises next is that trap (scripts/signatures/mine_deepep.py)
        "DeepEP",
        "deepep_timeout",
        LazyPattern(
            r"DeepEP (?:\w{1,12} ){0,4}(?:\([A-Za-z ]{1,16}\) )?timeout\b"
            r"(?: for \w{1,12} \w{1,12}, rank (?P<r>\d{1,7})"
            r"(?:, \w{1,24} \d{1,7}, src_rank (?P<p>\d{1,7}))?)?"
            r"|DeepEP timeout check failed"
            r"|DeepEP error: (?:CPU recv timeout|timeout \(dispatch CPU\))"
        ),
    ),
    (
        "communicator was aborted",
        "comm_aborted",
        LazyPattern(r"NCCL communicator was aborted(?: on rank (?P<p>\d{1,7}))?"),
    ),
    (
        "dump signal due to",
        "dump_signal",
        LazyPattern(
            r"Received a dump signal due to a collective timeout from\s+"
            r"(?:rank\s+(?P<p>\d{1,7})|(?P<d>this local rank))"
        ),
    ),
    (
        "global timeout from another",
        "dump_global_timeout",
        LazyPattern(r"Received a global timeout from another rank"),
    ),
    (
        "flight recorder dump signal",
        "dump_signal_observed",
        LazyPattern(r"Observed flight recorder dump signal from another rank"),
    ),
    (
        "to signal dumping",
        "dump_signal_first",
        LazyPattern(r"First PG on this rank to signal dumping"),
    ),
    (
        "preparing to dump",
        "dump_preparing",
        LazyPattern(r"preparing to dump debug info(?:\. Include stack trace: (?P<d>\d))?"),
    ),
    (
        "Finished flight recorder",
        "dump_finished",
        LazyPattern(r"Finished flight recorder successfully"),
    ),
    ("FlightRecorder is disabled", "dump_disabled", LazyPattern(r"FlightRecorder is disabled")),
    (
        "ncclUniqueId from",
        "store_get_failed",
        LazyPattern(
            r"retrieving ncclUniqueId from \[(?P<p>\d{1,7})\] via c10d key-value store"
            r" by key '[^']{0,100}',"
            r" but store->get\('[^']{0,100}'\) got error: ?(?P<d>[^\n]{0,200})"
        ),
    ),
    (
        "closed",
        "connection_closed",
        LazyPattern(r"Connection closed by (?:remote )?peer|Connection was likely closed"),
    ),
    ("reset by peer", "connection_reset", LazyPattern(r"Connection reset by peer")),
    ("Broken pipe", "broken_pipe", LazyPattern(r"Broken pipe")),
    (
        "ecv",
        "recv_failed",
        LazyPattern(r"recvValue failed|Failed to recv, got 0 bytes|recvBytes failed"),
    ),
    ("Socket Timeout", "socket_timeout", LazyPattern(r"Socket Timeout")),
    (
        "mismatch between collectives",
        "collective_mismatch",
        LazyPattern(r"Detected mismatch between collectives on ranks"),
    ),
    (
        "no GPUs found",
        "no_gpus",
        LazyPattern(r"ProcessGroupNCCL is only supported with GPUs, no GPUs found"),
    ),
    (
        "Duplicate GPU",
        "duplicate_gpu",
        LazyPattern(
            r"Duplicate GPU detected(?: ?: rank \d{1,7} and rank (?P<p>\d{1,7})"
            r" both on CUDA device (?P<d>[0-9a-fA-F]{1,16}))?"
        ),
    ),
    (
        # NCCL 2.30's words for it (2.30.3-2.30.4 and 2.30.7)
        "same GPU",
        "duplicate_gpu",
        LazyPattern(r"Multiple [Rr]anks (?:are using|detected using) the same GPU"),
    ),
    (
        "param",
        "ddp_param_mismatch",
        LazyPattern(
            r"appears not to match (?:sizes|strides) of the same param in process (?P<p>\d{1,7})"
            r"|DDP expects same model across all ranks"
        ),
    ),
    (
        "finished reduction",
        "ddp_unused_params",
        LazyPattern(r"Expected to have finished reduction in the prior iteration"),
    ),
    ("RendezvousTimeout", "rendezvous_timeout", LazyPattern(r"RendezvousTimeoutError")),
    ("RendezvousClosed", "rendezvous_closed", LazyPattern(r"RendezvousClosedError")),
    (
        "Rendezvous",
        "rendezvous_connection",
        LazyPattern(r"RendezvousConnectionError|connection to the C10d store has failed"),
    ),
    ("Rendezvous", "rendezvous_error", LazyPattern(r"Rendezvous(?:State)?Error\b")),
    (
        "expected, but not set",
        "env_missing",
        LazyPattern(r"environment variable (?P<d>[A-Z_]{1,40}) expected, but not set"),
    ),
    (
        "has not been initialized",
        "pg_not_initialized",
        LazyPattern(r"Default process group has not been initialized"),
    ),
    ("Could not acquire GIL", "gil_hang", LazyPattern(r"Could not acquire GIL within \d{1,9} ms")),
)

#: Every ``DistributedError.category`` this module can produce.
CATEGORIES: tuple[str, ...] = (*dict.fromkeys(c for _, c, _ in _ERRORS), "address_in_use")

#: Substrings one of which a line holds when :func:`classify` can find anything in it.
KEYWORDS: tuple[str, ...] = (
    "WorkNCCL(",
    " work: ",
    "ProcessGroupNCCL initialization options",
    "ProcessGroupNCCL environments",
    "NCCL error",
    "NCCL Error",
    *_store.KEYWORDS,
    *_launcher.KEYWORDS,
    *(g for g, _, _ in _ERRORS),
    *CUDA_KEYWORDS,
)


def context(line: Line, text: str) -> Ctx:
    """The line with the rank, process group and group rank its text names."""
    pg, pg_rank, default = pg_prefix(text)
    return line, rank_of(line, pg_rank, default), pg, pg_rank


def classify(line: Line, text: str, nccl: bool = True) -> list[Fact]:
    """Every fact one message line holds (possibly several), ``[]`` when none.

    ``nccl=False`` leaves out the :class:`NcclErrorReport`, for callers that
    build it from the whole multi-line message with :func:`nccl_report`.
    """
    if not any(k in text for k in KEYWORDS):
        return []
    ctx = context(line, text)
    out: list[Fact] = []
    for handler in _HANDLERS:
        if nccl or handler is not _nccl:
            handler(ctx, text, out)
    return out


def _work(ctx: Ctx, work: str, ran: str | None, blocking: bool) -> CollectiveTimeout:
    line, rank, pg, pg_rank = ctx

    def grab(rx: LazyPattern[str]) -> str | None:
        m = rx.search(work)
        return m.group(1) if m else None

    return CollectiveTimeout(
        cite=cite(line),
        rank=rank,
        host=line.host,
        seq=to_int(grab(_SEQ)),
        op_type=grab(_OP),
        numel_in=to_int(grab(_NUMEL_IN)),
        numel_out=to_int(grab(_NUMEL_OUT)),
        tensor_shape=grab(_SHAPE),
        timeout_ms=to_int(grab(_TMO)),
        ran_ms=to_int(ran),
        blocking_wait=blocking,
        pg=pg,
        pg_rank=pg_rank,
    )


def _watchdog(ctx: Ctx, text: str, out: list[Fact]) -> None:
    if "WorkNCCL(" in text:
        if m := _TIMEOUT.search(text):
            out.append(_work(ctx, m["work"], m["ran"], blocking=False))
        elif m := _BLOCKING.search(text):
            out.append(_work(ctx, m["work"], None, blocking=True))
        elif m := _TIMEOUT_CUT.search(text):
            out.append(_work(ctx, m["work"], None, blocking=False))
    if " work: " not in text:
        return
    enq, comp = _ENQ.search(text), _COMP.search(text)
    if enq is None and comp is None:
        return
    at = _AT_WORK.search(text)
    if "detected by watchdog" in text:
        event = "exception"
    elif "Timeout at" in text:
        event = "timeout"
    elif "global timeout" in text:
        event = "global_timeout"
    else:
        event = "dump_signal"
    line, rank, pg, pg_rank = ctx
    out.append(
        WatchdogState(
            cite=cite(line),
            rank=rank,
            host=line.host,
            event=event,
            work_seq=to_int(at.group(1)) if at else None,
            last_enqueued=to_int(enq.group(1)) if enq else None,
            last_completed=to_int(comp.group(1)) if comp else None,
            pg=pg,
            pg_rank=pg_rank,
        )
    )


#: Distinct option lists (the text after ``ProcessGroupNCCL ...:``) and ``key: value`` parts
#: kept parsed: every rank prints the same environment list, and the same few parts
#: (``size: 8``, ``TIMEOUT(ms): 600000``) make up every rank's initialization options.
_OPTION_LISTS_KEPT = 512
_ITEMS_KEPT = 4096


@functools.lru_cache(maxsize=_ITEMS_KEPT)
def _item(part: str) -> tuple[str, str] | None:
    """One ``key: value`` part of an option list, stripped; ``None`` when it is none."""
    m = _ITEM.fullmatch(part.strip())
    return None if m is None else (m["k"].strip(), m["v"].strip())


def option_items(text: str) -> tuple[list[tuple[str, str]], bool]:
    """``key: value, key: value`` pairs, and whether the last one was cut."""
    items: list[tuple[str, str]] = []
    parts = text.split(", ")
    truncated = False
    for i, part in enumerate(parts[:400]):
        item = _item(part)
        if item is None:
            truncated = truncated or i == len(parts) - 1
            continue
        items.append(item)
    return items, truncated


@dataclass(frozen=True, slots=True)
class _OptionList:
    """What one printed option list says, whoever printed it (see :func:`options_facts`)."""

    items: tuple[tuple[str, str], ...]
    truncated: bool
    init: bool
    version: str | None
    env: tuple[tuple[str, str], ...]
    size: int | None
    global_rank: int | None
    timeout_ms: int | None
    pg_name: str | None
    pg_desc: str | None
    split_from: int | None
    split_color: int | None
    high_priority_stream: bool | None


def _option_list(items: Sequence[tuple[str, str]], truncated: bool, init: bool) -> _OptionList:
    values = {k.lower(): v for k, v in items}
    hp = values.get("use_high_priority_stream")
    return _OptionList(
        items=tuple(items),
        truncated=truncated,
        init=init,
        version=values.get("nccl version"),
        env=tuple((k, v) for k, v in items if k.startswith(("NCCL_", "TORCH_"))),
        size=to_int(values.get("size")),
        global_rank=to_int(values.get("global rank")),
        timeout_ms=to_int(values.get("timeout(ms)")),
        pg_name=values.get("pg name"),
        pg_desc=values.get("pg description", values.get("pg desc")),
        split_from=to_int(values.get("split_from")),
        split_color=to_int(values.get("split_color")),
        high_priority_stream=None if hp not in ("0", "1") else hp == "1",
    )


@functools.lru_cache(maxsize=_OPTION_LISTS_KEPT)
def _option_list_of(text: str, init: bool) -> _OptionList:
    """:func:`_option_list` of the list printed as ``text``, parsed once per distinct text."""
    return _option_list(*option_items(text), init)


def options_facts(
    ctx: Ctx, items: list[tuple[str, str]], truncated: bool, init: bool
) -> list[Fact]:
    """PgInitOptions and/or PgEnvironment for one printed option list."""
    return _option_facts(ctx, _option_list(items, truncated, init))


def _option_facts(ctx: Ctx, found: _OptionList) -> list[Fact]:
    line, rank, pg, pg_rank = ctx
    out: list[Fact] = []
    if found.init:
        out.append(
            PgInitOptions(
                cite=cite(line),
                rank=rank if rank is not None else found.global_rank,
                host=line.host,
                size=found.size,
                global_rank=found.global_rank,
                timeout_ms=found.timeout_ms,
                pg_name=found.pg_name,
                pg_desc=found.pg_desc,
                split_from=found.split_from,
                split_color=found.split_color,
                high_priority_stream=found.high_priority_stream,
                nccl_version=found.version,
                options=found.items,
                pg=pg,
                pg_rank=pg_rank,
                truncated=found.truncated,
            )
        )
    if not found.init or found.env:
        out.append(
            PgEnvironment(
                cite=cite(line),
                rank=rank,
                host=line.host,
                nccl_version=found.version,
                settings=found.env
                if found.init
                else tuple(i for i in found.items if i[0].lower() != "nccl version"),
                pg=pg,
                pg_rank=pg_rank,
                truncated=found.truncated,
            )
        )
    return out


def _options(ctx: Ctx, text: str, out: list[Fact]) -> None:
    if "ProcessGroupNCCL " not in text or (m := _OPTIONS.search(text)) is None:
        return
    init = m["what"] == "initialization options"
    out.extend(_option_facts(ctx, _option_list_of(text[m.end() :].rstrip(), init)))


def _nccl(ctx: Ctx, text: str, out: list[Fact]) -> None:
    if "NCCL error" in text or "NCCL Error" in text:
        report = nccl_report(ctx[0], text)
        if report is not None:
            out.append(report)


#: A lost connection's words, which a notice may quote as its own detail
_QUOTABLE = frozenset({"connection_closed", "connection_reset", "broken_pipe", "recv_failed"})


def _errors(ctx: Ctx, text: str, out: list[Fact]) -> None:
    for guard, category, rx in _ERRORS:
        if guard in text and (m := rx.search(text)):
            if category in _QUOTABLE and harmless_lead(text) is not None:
                continue  # a notice's quoted error is no failure of this rank
            out.append(error_fact(ctx, category, text, m))


def _cuda(ctx: Ctx, text: str, out: list[Fact]) -> None:
    out.extend(cuda_facts(ctx[0], text, ctx[1]))


_HANDLERS: tuple[Callable[[Ctx, str, list[Fact]], None], ...] = (
    _watchdog,
    _options,
    _store.store_facts,
    _nccl,
    _launcher.launcher_facts,
    _errors,
    _cuda,
)
