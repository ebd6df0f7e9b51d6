"""PyTorch flight-recorder dumps -> flight facts (kind ``flight-recorder``).

ProcessGroupNCCL writes a dump as a pickle of plain data (dicts, lists,
tuples, strings, numbers) or, when asked, as JSON of the same shape:
``version``, ``comm_lib_version``, ``pg_config`` (group name -> name, desc,
ranks), ``pg_status`` (group name -> last enqueued/started/completed
collective) and ``entries`` (one per recorded operation).

A dump is untrusted input. It is never given to ``pickle.load``: the
:class:`_PlainUnpickler` refuses every global (class, function) a pickle
names, so only builtin containers and scalars can be built and nothing in
the file can run. A file that needs more is reported in a coverage note.
"""

from __future__ import annotations

import dataclasses
import io
import json
import pickle
import re
from collections.abc import Mapping
from typing import Any, ClassVar

from nccl_doctor.facts.base import Cite, Fact
from nccl_doctor.facts.flight import FlightDump, FlightEntry, FlightGroup, entry_text

#: The evidence kind.
KIND = "flight-recorder"
#: Larger dumps are not loaded (a 2000-entry buffer with stacks is a few MiB).
MAX_BYTES = 64 << 20
_PICKLE_PROTOCOLS = (b"\x80\x02", b"\x80\x03", b"\x80\x04", b"\x80\x05")
_JSON_KEYS = (b'"pg_status"', b'"pg_config"', b'"comm_lib_version"')
_DIGITS = re.compile(r"-?\d+")


def looks_like_dump(head: bytes) -> bool:
    """Whether a file's first bytes are a pickle header or a JSON dump's opening."""
    if head.startswith(_PICKLE_PROTOCOLS):
        return True
    return head.lstrip().startswith(b"{") and any(k in head for k in _JSON_KEYS)


class _Refused(pickle.UnpicklingError):
    """The pickle names something other than plain data."""


class _PlainUnpickler(pickle.Unpickler):
    """An unpickler that can build only builtin containers and scalars."""

    def find_class(self, module: str, name: str) -> Any:
        raise _Refused(f"refused global {module}.{name}")

    def persistent_load(self, pid: Any) -> Any:
        raise _Refused("refused persistent id")


def load_dump(data: bytes) -> tuple[dict[str, Any] | None, str | None]:
    """The dump as plain data, or ``None`` and why it could not be read safely."""
    if data.startswith(_PICKLE_PROTOCOLS):
        try:
            value = _PlainUnpickler(io.BytesIO(data)).load()
        except _Refused as exc:
            return None, f"pickle not loaded ({exc}): only plain data is read"
        except (
            pickle.UnpicklingError,
            EOFError,
            ValueError,
            TypeError,
            IndexError,
            KeyError,
            MemoryError,
            RecursionError,
        ) as exc:
            return None, f"truncated or corrupt pickle ({type(exc).__name__}: {exc})"
    else:
        try:
            value = json.loads(data.decode("utf-8", "replace"))
        except (ValueError, RecursionError) as exc:
            return None, f"not valid JSON ({exc})"
    if not isinstance(value, dict) or not ({"entries", "pg_status"} & value.keys()):
        return None, "not a flight-recorder dump (no entries or pg_status)"
    return value, None


def _int(value: object) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, str) and _DIGITS.fullmatch(value.strip()):
        return int(value)
    return None


def _seq(value: object) -> int | None:
    """A sequence id; ``-1`` (none yet) is ``None``."""
    found = _int(value)
    return found if found is not None and found >= 0 else None


def _str(value: object) -> str | None:
    return value if isinstance(value, str) else None


def _sizes(value: object) -> tuple[tuple[int, ...], ...]:
    if not isinstance(value, list | tuple):
        return ()
    return tuple(
        tuple(d for d in map(_int, dims) if d is not None)
        for dims in value
        if isinstance(dims, list | tuple)
    )


def _strs(value: object) -> tuple[str, ...]:
    if not isinstance(value, list | tuple):
        return ()
    return tuple(v for v in value if isinstance(v, str))


def _ranks(value: object) -> tuple[int, ...]:
    if isinstance(value, str):
        return tuple(int(v) for v in _DIGITS.findall(value))
    if isinstance(value, list | tuple):
        return tuple(r for r in map(_int, value) if r is not None)
    return ()


class FlightRecorderParser:
    """Reads one whole dump file; not a line parser (the file is binary)."""

    kind: ClassVar[str] = KIND

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
        descs: dict[str, str | None] = {}
        facts: list[Fact] = []
        for name in dict.fromkeys([*map(str, config), *map(str, status)]):
            conf = config.get(name)
            conf = conf if isinstance(conf, Mapping) else {}
            stat = status.get(name)
            stat = stat if isinstance(stat, Mapping) else {}
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
        for index, raw in enumerate(entries):
            if isinstance(raw, Mapping):
                facts.append(_entry(raw, index, source, rank, descs))
        head = FlightDump(
            cite=Cite.of(
                source,
                1,
                f"flight recorder dump version {dump.get('version')} "
                f"(NCCL {dump.get('comm_lib_version')}): {len(entries)} entries",
            ),
            rank=rank,
            version=_str(dump.get("version")),
            comm_lib_version=_str(dump.get("comm_lib_version")),
            entry_count=len(entries),
            group_count=len(descs),
        )
        return [head, *facts], []


def _entry(
    raw: Mapping[str, Any], index: int, source: str, rank: int | None, descs: dict[str, str | None]
) -> FlightEntry:
    group = raw.get("process_group")
    pg_id = str(group[0]) if isinstance(group, list | tuple) and group else None
    pg_desc = str(group[1]) if isinstance(group, list | tuple) and len(group) > 1 else None
    if pg_id is None and _int(raw.get("pg_id")) is not None:
        pg_id = str(raw.get("pg_id"))
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
    )
    text = f"flight recorder entry {index}: {entry_text(entry)}"
    if entry.timeout_ms is not None:
        text += f", timeout {entry.timeout_ms} ms"
    return dataclasses.replace(entry, cite=Cite.of(source, index + 1, text))
