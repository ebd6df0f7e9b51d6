"""Facts of PyTorch flight-recorder dumps (kind ``flight-recorder``).

A dump is one rank's ring buffer of recent collectives, written by
ProcessGroupNCCL on a watchdog timeout (``TORCH_NCCL_DUMP_ON_TIMEOUT=1``) to
``TORCH_NCCL_DEBUG_INFO_TEMP_FILE<rank>``. ``rank`` is the rank the file
name tells (``fr_rank3``); the dump itself does not say it.

Sequence ids count collectives per process group (``collective_seq_id``);
``-1`` in a group's status means "none yet", kept as ``None`` here.
Citations: the dump's file, line = entry index + 1 (the dump header and
group status cite line 1), text = a one-line rendering.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from nccl_doctor.facts.base import Fact
from nccl_doctor.facts.stacks import Frame, capture_of


@dataclass(frozen=True, slots=True, kw_only=True)
class FlightDump(Fact):
    """One dump file: its format version, NCCL version and how much it holds."""

    version: str | None
    comm_lib_version: str | None
    entry_count: int
    group_count: int


@dataclass(frozen=True, slots=True, kw_only=True)
class FlightGroup(Fact):
    """One process group of a dump: config and the watchdog's last sequence ids."""

    pg_id: str
    desc: str | None
    group_ranks: tuple[int, ...]
    last_enqueued: int | None
    last_started: int | None
    last_completed: int | None


@dataclass(frozen=True, slots=True, kw_only=True)
class FlightEntry(Fact):
    """One recorded collective or point-to-point operation.

    ``op`` is the profiling name without the backend prefix (``all_reduce``
    of ``nccl:all_reduce``); ``state`` is ``scheduled``, ``started`` or
    ``completed``. Sizes are per tensor (a list of dimensions each). ``frames``: the
    Python stack that issued it, outermost first, when the recorder kept stacks and the
    operation did not complete.
    """

    index: int
    seq: int | None
    p2p_seq: int | None
    pg_id: str | None
    pg_desc: str | None
    op: str | None
    profiling_name: str | None
    state: str | None
    is_p2p: bool
    input_sizes: tuple[tuple[int, ...], ...]
    output_sizes: tuple[tuple[int, ...], ...]
    input_dtypes: tuple[str, ...]
    output_dtypes: tuple[str, ...]
    timeout_ms: int | None
    time_created_ns: int | None
    frames: tuple[Frame, ...] = ()


def entry_text(entry: FlightEntry) -> str:
    """``all_reduce seq 1 (pg 0 default_pg) completed, in [[1048576]] Float``."""
    sizes = [list(s) for s in entry.input_sizes]
    group = f"pg {entry.pg_id}" + (f" {entry.pg_desc}" if entry.pg_desc else "")
    return (
        f"{entry.op or '?'} seq {entry.seq if entry.seq is not None else '?'} ({group}) "
        f"{entry.state or '?'}, in {sizes} {','.join(entry.input_dtypes) or '?'}"
    )


def latest(
    dumps: Iterable[FlightDump], groups: Iterable[FlightGroup], entries: Iterable[FlightEntry]
) -> tuple[list[FlightGroup], list[FlightEntry]]:
    """The groups and entries of each rank's latest dump, when a rank was dumped more than once.

    The pre-mortem dumps every rank once per capture (``hang-1/fr_rank0``,
    ``hang-2/fr_rank0`` ...) and the watchdog may dump it again when it
    fires: the same stall, N copies. Per rank, the dump whose newest entry is
    the newest wins; among equal ones, the one of the latest capture, and a
    dump outside any capture folder (written when the watchdog gave up)
    after every capture. Dumps without a rank are all kept.
    """
    groups, entries = list(groups), list(entries)
    newest: dict[str, int] = {}
    for entry in entries:
        if entry.time_created_ns is not None:
            src = entry.cite.source
            newest[src] = max(newest.get(src, 0), entry.time_created_ns)
    chosen: dict[int, str] = {}
    for dump in dumps:
        if dump.rank is None:
            continue
        src = dump.cite.source
        best = chosen.get(dump.rank)
        if best is None or _order(src, newest) > _order(best, newest):
            chosen[dump.rank] = src
    keep = set(chosen.values())

    def kept(fact: FlightGroup | FlightEntry) -> bool:
        return fact.rank is None or fact.rank not in chosen or fact.cite.source in keep

    return [g for g in groups if kept(g)], [e for e in entries if kept(e)]


def _order(source: str, newest: dict[str, int]) -> tuple[int, float]:
    number = capture_of(source)
    return newest.get(source, 0), float("inf") if number is None else number


def culprit_ranks(text: str) -> tuple[int, ...]:
    """The ranks the flight-recorder analyser's ``error msg:`` line names, in order (``Culprit
    rank 1; Error type: ..., Culprit rank 2; Error type: ...``)."""
    parts = text.split("Culprit rank ")[1:]
    found = (p.split(";", 1)[0].strip() for p in parts)
    return tuple(dict.fromkeys(int(r) for r in found if r.isdigit()))
