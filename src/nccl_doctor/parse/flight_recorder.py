"""PyTorch flight-recorder dumps -> flight facts (kind ``flight-recorder``).

ProcessGroupNCCL writes a dump as a pickle of plain data (dicts, lists,
tuples, strings, numbers) or, when asked, as JSON of the same shape:
``version``, ``comm_lib_version``, ``pg_config`` (group name -> name, desc,
ranks), ``pg_status`` (group name -> last enqueued/started/completed
collective) and ``entries`` (one per recorded operation).

A dump is untrusted input. It is never given to ``pickle.load``: the
bounded loader of :mod:`nccl_doctor.parse._pickle` builds only builtin
containers and scalars (nothing in the file can run) and bounds its opcodes,
nesting and lengths. What it gives is read only through the accessors below,
which take a field only of the type and range it has in a real dump and cut
every list and text to a bound: a dump of shared references (one entry
listed a million times) or of 5,000-digit numbers costs no more than a
real one, and every number in a fact has at most 20 digits. A file that is
more than plain data, or over a bound, is reported in a coverage note.
"""

from __future__ import annotations

import dataclasses
import itertools
import json
from collections.abc import Mapping
from typing import Any, ClassVar

from nccl_doctor.facts.base import Cite, Fact
from nccl_doctor.facts.flight import FlightDump, FlightEntry, FlightGroup, entry_text
from nccl_doctor.facts.stacks import Frame
from nccl_doctor.parse import _pickle
from nccl_doctor.parse._lazy import LazyPattern
from nccl_doctor.parse.base import FileParser

#: The evidence kind.
KIND = "flight-recorder"
#: Larger dumps are not loaded (a 2000-entry buffer with stacks is a few MiB).
MAX_BYTES = 64 << 20
_PICKLE_PROTOCOLS = (b"\x80\x02", b"\x80\x03", b"\x80\x04", b"\x80\x05")
_JSON_KEYS = (b'"pg_status"', b'"pg_config"', b'"comm_lib_version"')
#: Entries read from one dump, the most recent (torch keeps 2,000 by default).
MAX_ENTRIES = 5_000
#: Process groups read from one dump.
MAX_GROUPS = 10_000
#: Ranks read from one group's list.
MAX_RANKS = 1 << 17
#: Tensors per entry, and dimensions per tensor.
MAX_TENSORS = 64
MAX_DIMS = 16
#: Characters kept of one text field.
MAX_TEXT = 1024
#: Frames kept of the stack of an operation that did not complete (its innermost ones); a
#: completed operation's stack is not kept: no diagnosis asks where a finished one came from
MAX_FRAMES = 64
_DIGITS = LazyPattern(r"-?\d{1,20}")
#: A number in a dump is an int64 or uint64 (sequence ids, sizes, times).
_INT_MIN, _INT_END = -(1 << 63), 1 << 64


def looks_like_dump(head: bytes) -> bool:
    """Whether a file's first bytes are a pickle header or a JSON dump's opening."""
    if head.startswith(_PICKLE_PROTOCOLS):
        return True
    return head.lstrip().startswith(b"{") and any(k in head for k in _JSON_KEYS)


def load_dump(data: bytes) -> tuple[dict[str, Any] | None, str | None]:
    """The dump as plain data, or ``None`` and why it could not be read safely."""
    if data.startswith(_PICKLE_PROTOCOLS):
        try:
            value = _pickle.loads(data)
        except _pickle.RefusedError as exc:
            return None, f"pickle not loaded ({exc}): only plain data is read"
        except _pickle.CorruptError as exc:
            return None, f"truncated or corrupt pickle, or over a bound: not loaded ({exc})"
    else:
        try:
            value = json.loads(data.decode("utf-8", "replace"))
        except (ValueError, RecursionError) as exc:
            return None, f"not valid JSON ({exc})"
    if not isinstance(value, dict) or not ({"entries", "pg_status"} & value.keys()):
        return None, "not a flight-recorder dump (no entries or pg_status)"
    return value, None


def _int(value: object) -> int | None:
    """An int64/uint64, as a number or decimal text; anything else (or larger) is ``None``."""
    if isinstance(value, str) and len(value) <= 64 and _DIGITS.fullmatch(value.strip()):
        value = int(value)
    if isinstance(value, int) and not isinstance(value, bool) and _INT_MIN <= value < _INT_END:
        return value
    return None


def _seq(value: object) -> int | None:
    """A sequence id; ``-1`` (none yet) is ``None``."""
    found = _int(value)
    return found if found is not None and found >= 0 else None


def _str(value: object) -> str | None:
    """Text, cut to MAX_TEXT characters."""
    if not isinstance(value, str):
        return None
    return value if len(value) <= MAX_TEXT else value[:MAX_TEXT] + "..."


def _name(value: object) -> str | None:
    """A group's name or id: text, or a number written as one."""
    found = _int(value) if not isinstance(value, str) else None
    return str(found) if found is not None else _str(value)


def _first(value: object, n: int) -> list[Any]:
    """The first ``n`` items of a list or tuple; ``[]`` for anything else."""
    return list(itertools.islice(value, n)) if isinstance(value, list | tuple) else []


def _sizes(value: object) -> tuple[tuple[int, ...], ...]:
    return tuple(
        tuple(d for d in map(_int, _first(dims, MAX_DIMS)) if d is not None)
        for dims in _first(value, MAX_TENSORS)
        if isinstance(dims, list | tuple)
    )


def _strs(value: object) -> tuple[str, ...]:
    return tuple(s for s in map(_str, _first(value, MAX_TENSORS)) if s is not None)


def _ranks(value: object) -> tuple[int, ...]:
    if isinstance(value, str):
        found = itertools.islice(_DIGITS.finditer(value), MAX_RANKS)
        return tuple(r for r in (_int(m[0]) for m in found) if r is not None)
    return tuple(r for r in map(_int, _first(value, MAX_RANKS)) if r is not None)


class FlightRecorderParser(FileParser):
    """Reads one whole dump file; not a line parser (the file is binary)."""

    kind: ClassVar[str] = KIND
    max_bytes: ClassVar[int] = MAX_BYTES

    @classmethod
    def sniff(cls, head: bytes) -> bool:
        """A pickle header or a JSON dump's opening."""
        return looks_like_dump(head)

    def parse(self, data: bytes, source: str, rank: int | None) -> tuple[list[Fact], list[str]]:
        """Facts of one dump, and coverage notes. Never raises."""
        if len(data) > MAX_BYTES:
            return [], [f"flight-recorder dump over {MAX_BYTES >> 20} MiB: not read"]
        dump, why = load_dump(data)
        if dump is None:
            return [], [f"flight-recorder: {why}"]
        config = dump.get("pg_config")
        status = dump.get("pg_status")
        config = config if isinstance(config, Mapping) else {}
        status = status if isinstance(status, Mapping) else {}
        entries = dump.get("entries")
        entries = entries if isinstance(entries, list) else []
        recent, notes = _recent(entries)
        descs: dict[str, str | None] = {}
        facts: list[Fact] = []
        confs, stats = _groups(config), _groups(status)
        for name in dict.fromkeys([*confs, *stats]):
            conf = confs.get(name, {})
            stat = stats.get(name, {})
            descs[name] = _str(conf.get("desc"))
            group = FlightGroup(
                cite=Cite(source, 1, ""),
                rank=rank,
                pg_id=name,
                desc=descs[name],
                group_ranks=_ranks(conf.get("ranks")),
                last_enqueued=_seq(stat.get("last_enqueued_collective")),
                last_started=_seq(stat.get("last_started_collective")),
                last_completed=_seq(stat.get("last_completed_collective")),
            )
            text = (
                f"flight recorder pg {name} {group.desc or ''} ranks {list(group.group_ranks)}: "
                f"last enqueued {group.last_enqueued}, started {group.last_started}, "
                f"completed {group.last_completed}"
            )
            facts.append(dataclasses.replace(group, cite=Cite.of(source, 1, text)))
        for index, raw in recent:
            facts.append(_entry(raw, index, source, rank, descs))
        head = FlightDump(
            cite=Cite.of(
                source,
                1,
                f"flight recorder dump version {_str(dump.get('version'))} "
                f"(NCCL {_str(dump.get('comm_lib_version'))}): {len(entries)} entries",
            ),
            rank=rank,
            version=_str(dump.get("version")),
            comm_lib_version=_str(dump.get("comm_lib_version")),
            entry_count=len(entries),
            group_count=len(descs),
        )
        return [head, *facts], notes


def _groups(value: Mapping[Any, Any]) -> dict[str, Mapping[str, Any]]:
    """Process groups by name: the first MAX_GROUPS whose name and value are readable."""
    found: dict[str, Mapping[str, Any]] = {}
    for key, item in itertools.islice(value.items(), MAX_GROUPS):
        name = _name(key)
        if name is not None and isinstance(item, Mapping):
            found.setdefault(name, item)
    return found


def _recent(entries: list[Any]) -> tuple[list[tuple[int, Mapping[str, Any]]], list[str]]:
    """The last MAX_ENTRIES entries with their indexes, each object once; and notes.

    A real dump holds each entry once; a pickle can list one object a million
    times by reference, which costs it two bytes a time and the reader a fact
    each: such repeats are read once.
    """
    seen: set[int] = set()
    found: list[tuple[int, Mapping[str, Any]]] = []
    repeats = 0
    for index, raw in enumerate(entries):
        if type(raw) is dict:
            if id(raw) in seen:
                repeats += 1
            else:
                seen.add(id(raw))
                found.append((index, raw))
    notes = []
    if repeats:
        notes.append(
            f"flight-recorder: {repeats} entries repeat an earlier one by reference "
            "(never so in a real dump): each read once"
        )
    if len(found) > MAX_ENTRIES:
        notes.append(
            f"flight-recorder: read the last {MAX_ENTRIES} of {len(found)} entries "
            "(the most recent)"
        )
    return found[-MAX_ENTRIES:], notes


def _frames(value: object) -> tuple[Frame, ...]:
    """An entry's stack, outermost first (the dump lists it innermost first); frames that
    are not ``{name, filename, line}`` are left out."""
    kept = [raw for raw in _first(value, MAX_FRAMES) if isinstance(raw, Mapping)]
    out: list[Frame] = [
        (path, _int(raw.get("line")), _str(raw.get("name")))
        for raw in kept
        if (path := _str(raw.get("filename"))) is not None
    ]
    return tuple(reversed(out))


def _entry(
    raw: Mapping[str, Any], index: int, source: str, rank: int | None, descs: dict[str, str | None]
) -> FlightEntry:
    group = _first(raw.get("process_group"), 2)
    pg_id = _name(group[0]) if group else None
    pg_desc = _name(group[1]) if len(group) > 1 else None
    if pg_id is None and (found := _int(raw.get("pg_id"))) is not None:
        pg_id = str(found)
    if pg_desc is None and pg_id is not None:
        pg_desc = descs.get(pg_id)
    name = _str(raw.get("profiling_name"))
    entry = FlightEntry(
        cite=Cite(source, index + 1, ""),
        rank=rank,
        index=index,
        seq=_int(raw.get("collective_seq_id")),
        p2p_seq=_int(raw.get("p2p_seq_id")),
        pg_id=pg_id,
        pg_desc=pg_desc,
        op=name.split(":", 1)[-1] if name else None,
        profiling_name=name,
        state=_str(raw.get("state")),
        is_p2p=raw.get("is_p2p") is True,
        input_sizes=_sizes(raw.get("input_sizes")),
        output_sizes=_sizes(raw.get("output_sizes")),
        input_dtypes=_strs(raw.get("input_dtypes")),
        output_dtypes=_strs(raw.get("output_dtypes")),
        timeout_ms=_int(raw.get("timeout_ms")),
        time_created_ns=_int(raw.get("time_created_ns")),
        frames=_frames(raw.get("frames")) if raw.get("state") != "completed" else (),
    )
    text = f"flight recorder entry {index}: {entry_text(entry)}"
    if entry.timeout_ms is not None:
        text += f", timeout {entry.timeout_ms} ms"
    return dataclasses.replace(entry, cite=Cite.of(source, index + 1, text))
