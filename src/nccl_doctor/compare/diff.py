"""What changed between a run and a reference run, read from two JSON reports' fingerprints.

Only differences are listed, by section: the NCCL init picture, the
environment, the versions, the nodes and GPUs, and the error set. A part one
side does not show is not a difference: it goes to ``not_compared`` with why
(a run that failed before NCCL printed its init, a reference without an
environment dump). When one run passed and the other failed,
:mod:`nccl_doctor.compare.retry` ranks the differences by how plausibly they
explain it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from nccl_doctor.knowledge.topics import variable_topics
from nccl_doctor.knowledge.workarounds import mask_of

Json = Mapping[str, Any]
SECTIONS = ("nccl", "environment", "versions", "nodes", "errors")
_VERSION_NAMES = {
    "nccl": "NCCL version",
    "driver": "driver version",
    "cuda_driver": "CUDA (driver) version",
    "cuda_torch": "CUDA (torch build) version",
    "torch": "torch version",
    "python": "Python version",
}
_VERSION_TOPICS = {
    "nccl": ("nccl",),
    "driver": ("driver", "fabric"),
    "cuda_driver": ("cuda", "driver"),
    "cuda_torch": ("cuda", "torch"),
    "torch": ("torch", "nccl"),
    "python": (),
}
_SHOWN = 6


@dataclass(frozen=True, slots=True)
class Change:
    """One difference. ``before`` is the reference's side, ``after`` this run's.

    ``form`` ``value``: a value on each side (``None``: ``absent`` there, such
    as ``unset``); ``set``: ``before``/``after`` list what only that side has;
    ``list``: ``after`` lists the items that differ (``rank 3 A on n1 -> B on n2``).
    ``masks`` is set when one side sets a switch that masks a cause (what it
    trades), ``masked_in`` says which side (``reference`` or ``this``).
    """

    section: str
    key: str
    before: str | None
    after: str | None
    form: str = "value"
    absent: str = "not shown"
    topics: tuple[str, ...] = ()
    masks: str | None = None
    masked_in: str | None = None

    def phrase(self, ref: str = "the reference", this: str = "this run") -> str:
        """The change in words, naming the sides ``ref`` and ``this``."""
        if self.form == "list":
            return f"{self.key}: {self.after}"
        if self.form == "set":
            parts = []
            if self.before:
                parts.append(f"only in {ref}: {self.before}")
            if self.after:
                parts.append(f"only in {this}: {self.after}")
            return f"{self.key}: " + "; ".join(parts)
        before = self.before if self.before is not None else self.absent
        after = self.after if self.after is not None else self.absent
        return f"{self.key}: {before} in {ref}, {after} in {this}"

    def as_json(self, clean: Callable[[str], str]) -> dict[str, Any]:
        """The change as ``docs/against.md`` spells it."""
        return {
            "section": self.section,
            "key": self.key,
            "reference": clean(self.before) if self.before is not None else None,
            "this": clean(self.after) if self.after is not None else None,
            "form": self.form,
            "text": clean(self.phrase()),
            "masks": self.masks,
            "masked_in": self.masked_in,
        }


@dataclass(frozen=True, slots=True)
class Reason:
    """A difference the passing run had, as a plausible reason it passed."""

    change: Change
    relates_to: tuple[str, ...]
    text: str
    score: float


@dataclass(frozen=True, slots=True)
class Retry:
    """Why one run passed and the other failed: ``passed`` is ``reference`` or ``this``."""

    passed: str
    summary: str
    reasons: tuple[Reason, ...] = ()


@dataclass(frozen=True, slots=True)
class Comparison:
    """A run against a reference: the reference, the changes, what could not be compared."""

    reference: str
    reference_verdict: str
    reference_tool: str
    verdict: str
    changes: tuple[Change, ...]
    not_compared: tuple[str, ...] = ()
    retry: Retry | None = None
    hosts: tuple[str, ...] = ()

    def section(self, name: str) -> tuple[Change, ...]:
        """The changes of one section, in order."""
        return tuple(c for c in self.changes if c.section == name)

    def as_json(self, clean: Callable[[str], str]) -> dict[str, Any]:
        """The ``against`` object of the JSON report (``docs/against.md``)."""
        retry = self.retry
        return {
            "reference": {
                "source": clean(self.reference),
                "verdict": self.reference_verdict,
                "tool_version": self.reference_tool,
            },
            "changes": [c.as_json(clean) for c in self.changes],
            "not_compared": [clean(n) for n in self.not_compared],
            "retry": None
            if retry is None
            else {
                "passed": retry.passed,
                "summary": clean(retry.summary),
                "reasons": [
                    {
                        "text": clean(r.text),
                        "relates_to": list(r.relates_to),
                        "section": r.change.section,
                        "key": r.change.key,
                        "masks": r.change.masks,
                    }
                    for r in retry.reasons
                ],
            },
        }


def _listed(items: Iterable[str]) -> str | None:
    items = list(items)
    if not items:
        return None
    shown = ", ".join(items[:_SHOWN])
    return shown + (f" and {len(items) - _SHOWN} more" if len(items) > _SHOWN else "")


def _set_change(
    section: str, key: str, ref: Iterable[str], this: Iterable[str], topics: tuple[str, ...]
) -> list[Change]:
    ref_set, this_set = list(dict.fromkeys(ref)), list(dict.fromkeys(this))
    gone = [x for x in ref_set if x not in this_set]
    new = [x for x in this_set if x not in ref_set]
    if not gone and not new:
        return []
    return [Change(section, key, _listed(gone), _listed(new), form="set", topics=topics)]


def _text(value: object) -> str | None:
    if value is None:
        return None
    if isinstance(value, bool):
        return "on" if value else "off"
    if isinstance(value, list | tuple):
        return ", ".join(str(v) for v in value) or None
    return str(value)


def _environment(
    this: Json, ref: Json, this_nccl: bool, ref_nccl: bool
) -> tuple[list[Change], list[str]]:
    """Variables set, unset or changed, where both sides' evidence covers the name."""
    mine, theirs = this.get("vars") or {}, ref.get("vars") or {}
    this_scope, ref_scope = this.get("scope", "none"), ref.get("scope", "none")

    def covers(scope: str, name: str, nccl_seen: bool) -> bool:
        return scope == "all" or (scope == "nccl" and nccl_seen and name.startswith("NCCL_"))

    changes: list[Change] = []
    unknown: list[str] = []
    for name in sorted(set(mine) | set(theirs)):
        a, b = mine.get(name), theirs.get(name)
        if name in mine and name in theirs:
            if a == b:
                continue
        elif name in mine and not covers(ref_scope, name, ref_nccl):
            unknown.append(f"{name} (set in this run)")
            continue
        elif name in theirs and not covers(this_scope, name, this_nccl):
            unknown.append(f"{name} (set in the reference)")
            continue
        mask_here = mask_of(name, a) if name in mine else None
        mask_there = mask_of(name, b) if name in theirs else None
        mask = mask_there or mask_here
        side = "reference" if mask_there is not None else "this" if mask_here else None
        topics = variable_topics(name) + (mask.topics if mask is not None else ())
        changes.append(
            Change(
                "environment",
                name,
                b if name in theirs else None,
                a if name in mine else None,
                absent="unset",
                topics=tuple(dict.fromkeys(topics)),
                masks=mask.reason if mask is not None else None,
                masked_in=side,
            )
        )
    notes = []
    if this_scope == "none" or ref_scope == "none":
        side = "this run" if this_scope == "none" else "the reference"
        notes.append(
            f"environment: {side} shows no variables (attach `env` output, or rerun with "
            "NCCL_DEBUG=INFO, which echoes the NCCL variables set)"
        )
    if unknown and this_scope != "none" and ref_scope != "none":
        notes.append(
            f"environment: {_listed(unknown)} - the other run's evidence does not say whether "
            "it was set"
        )
    return changes, notes


def _versions(this: Json, ref: Json) -> tuple[list[Change], list[str]]:
    changes, notes = [], []
    for key, name in _VERSION_NAMES.items():
        a, b = this.get(key), ref.get(key)
        if a and b:
            if sorted(a) != sorted(b):
                topics = _VERSION_TOPICS[key]
                changes.append(Change("versions", name, _text(b), _text(a), topics=topics))
        elif a or b:
            side = "the reference" if a else "this run"
            notes.append(f"{name}: not in {side}'s evidence")
    return changes, notes


def _gpu_names(fp: Json) -> list[str]:
    """Each GPU once: ``<bus id> (<UUID>) on <host>``, as far as the evidence names it."""
    out = []
    known = set()
    for gpu in fp.get("gpus") or []:
        bus, uuid = gpu.get("bus_id"), gpu.get("uuid")
        ident = f"{bus} ({uuid})" if bus and uuid else bus or uuid
        if ident is None and gpu.get("index") is not None:
            ident = f"GPU {gpu['index']}"
        if ident:
            where = f" on {gpu['host']}" if gpu.get("host") else ""
            out.append(f"{ident}{where}")
            known.add((gpu.get("host"), bus))
    for place in fp.get("ranks") or []:
        if place.get("bus_id") and (place.get("host"), place["bus_id"]) not in known:
            known.add((place.get("host"), place["bus_id"]))
            where = f" on {place['host']}" if place.get("host") else ""
            out.append(f"{place['bus_id']}{where}")
    return out


def _bus_ids(fp: Json) -> set[tuple[str | None, str]]:
    found = {(g.get("host"), g["bus_id"]) for g in fp.get("gpus") or [] if g.get("bus_id")}
    found |= {(p.get("host"), p["bus_id"]) for p in fp.get("ranks") or [] if p.get("bus_id")}
    return found


def _nodes(this: Json, ref: Json) -> tuple[list[Change], list[str]]:
    changes: list[Change] = []
    notes: list[str] = []
    if this.get("hosts") and ref.get("hosts"):
        changes += _set_change("nodes", "hosts", ref["hosts"], this["hosts"], ("nodes",))
    elif this.get("hosts") or ref.get("hosts"):
        notes.append("hosts: one run's evidence names none")
    a_ws, b_ws = this.get("world_size"), ref.get("world_size")
    if a_ws and b_ws and a_ws != b_ws:
        changes.append(Change("nodes", "world size", str(b_ws), str(a_ws), topics=("world",)))
    mine, theirs = _bus_ids(this), _bus_ids(ref)
    if mine and theirs:
        uuids_a = {g.get("uuid") for g in this.get("gpus") or [] if g.get("uuid")}
        uuids_b = {g.get("uuid") for g in ref.get("gpus") or [] if g.get("uuid")}
        same_gpus = mine == theirs and (not (uuids_a and uuids_b) or uuids_a == uuids_b)
        if not same_gpus:
            changes += _set_change("nodes", "GPUs", _gpu_names(ref), _gpu_names(this), ("gpus",))
        moved = _moved(this, ref) if same_gpus else []  # else the GPUs' change says it
        if moved:
            changes.append(Change("nodes", "ranks moved", None, _listed(moved),
                                  form="list", topics=("gpus", "nodes", "world")))  # fmt: skip
    elif mine or theirs:
        side = "the reference" if mine else "this run"
        notes.append(f"GPUs: {side} names none (attach nvidia-smi -q, or NCCL_DEBUG=INFO logs)")
    return changes, notes


def _moved(this: Json, ref: Json) -> list[str]:
    """Ranks whose host or GPU differs, where both runs place them."""
    theirs = {p["rank"]: p for p in ref.get("ranks") or [] if "rank" in p}
    out = []
    for place in this.get("ranks") or []:
        other = theirs.get(place.get("rank"))
        if other is None:
            continue
        here = (place.get("host"), place.get("bus_id"))
        there = (other.get("host"), other.get("bus_id"))
        if all(here) and all(there) and here != there:
            out.append(f"rank {place['rank']} {there[1]} on {there[0]} -> {here[1]} on {here[0]}")
    return out


_TRANSPORT_TOPICS = {"P2P": ("p2p", "nvlink"), "SHM": ("shm",), "COLLNET": ("net", "plugin")}


def _transport_topics(name: str) -> tuple[str, ...]:
    kind = name.split("/", 1)[0]
    if kind == "NET":
        return ("net", "ib") if "/IB" in name else ("net", "socket")
    return _TRANSPORT_TOPICS.get(kind, ())


def _nccl(this: Json, ref: Json) -> tuple[list[Change], list[str]]:
    if not (this.get("seen") and ref.get("seen")):
        if this.get("seen") or ref.get("seen"):
            side = "this run" if ref.get("seen") else "the reference"
            return [], [
                (
                    f"NCCL init: {side} printed no NCCL init lines (it failed before NCCL set up, "
                    "or ran without NCCL_DEBUG=INFO)"
                )
            ]
        return [], ["NCCL init: neither run printed NCCL init lines (rerun with NCCL_DEBUG=INFO)"]
    changes: list[Change] = []
    a_tr, b_tr = this.get("transports") or {}, ref.get("transports") or {}
    for name in sorted(set(a_tr) | set(b_tr)):
        a, b = a_tr.get(name), b_tr.get(name)
        if (a is None) != (b is None):
            changes.append(
                Change("nccl", f"transport {name}", _procs(b), _procs(a), absent="not used",
                       topics=_transport_topics(name))
            )  # fmt: skip
    a_ch, b_ch = this.get("channels") or {}, ref.get("channels") or {}
    for kind in sorted(set(a_ch) & set(b_ch)):
        if sorted(a_ch[kind]) != sorted(b_ch[kind]):
            topics = ("nvls", "channels") if kind == "nvls" else ("channels",)
            changes.append(
                Change("nccl", f"{kind.replace('_', ' ')} channels", _text(b_ch[kind]),
                       _text(a_ch[kind]), topics=topics)
            )  # fmt: skip
    scalar = (
        ("nvls", "NVLS", ("nvls", "fabric")),
        ("nvls_support", "NVLS support", ("nvls", "fabric")),
        ("collnet", "CollNet", ("net", "plugin")),
        ("network", "network", ("net",)),
        ("gdr", "GPUDirect RDMA", ("gdr", "net")),
        ("nodes", "nodes NCCL counted", ("nodes", "world")),
        ("local_ranks", "local ranks", ("world",)),
        ("mnnvl", "multi-node NVLink", ("nvlink", "fabric")),
        ("rings", "rings", ("algo",)),
        ("p2p_disabled", "P2P disabled between GPUs", ("p2p",)),
    )
    for key, name, topics in scalar:
        a, b = this.get(key), ref.get(key)
        if a is not None and b is not None and a != b:
            changes.append(Change("nccl", name, _text(b), _text(a), topics=topics))
    a_pl, b_pl = this.get("plugins") or {}, ref.get("plugins") or {}
    for kind in sorted(set(a_pl) | set(b_pl)):
        changes += _set_change(
            "nccl", f"{kind} plugin", b_pl.get(kind, []), a_pl.get(kind, []), ("plugin", "net")
        )
    if this.get("ib_devices") or ref.get("ib_devices"):
        changes += _set_change("nccl", "IB devices", ref.get("ib_devices") or [],
                               this.get("ib_devices") or [], ("ib", "net"))  # fmt: skip
    if this.get("bootstrap") and ref.get("bootstrap"):
        changes += _set_change(
            "nccl", "bootstrap interfaces", ref["bootstrap"], this["bootstrap"], ("socket", "net")
        )
    return changes, []


def _procs(count: object) -> str | None:
    if not isinstance(count, int):
        return None
    return f"used by {count} process" + ("es" if count != 1 else "")


def _errors(this: Json, ref: Json) -> list[Change]:
    a = [f"{f['id']} ({f['severity']})" for f in this.get("findings") or [] if "id" in f]
    b = [f"{f['id']} ({f['severity']})" for f in ref.get("findings") or [] if "id" in f]
    changes = _set_change("errors", "findings", b, a, ())
    changes += _set_change(
        "errors", "failure messages", ref.get("signatures") or [], this.get("signatures") or [], ()
    )
    return changes


def compare(this: Json, reference: Json, *, label: str) -> Comparison:
    """This run's JSON report against the reference's (both carry a ``fingerprint``).

    The retry explanation is :func:`nccl_doctor.compare.retry.explain`'s, added by
    :func:`nccl_doctor.fleet.against.compared`.
    """
    a, b = this.get("fingerprint") or {}, reference.get("fingerprint") or {}
    an, bn = a.get("nccl") or {}, b.get("nccl") or {}
    changes: list[Change] = []
    notes: list[str] = []
    for found, said in (
        _nccl(an, bn),
        _environment(a.get("environment") or {}, b.get("environment") or {},
                     bool(an.get("seen")), bool(bn.get("seen"))),
        _versions(a.get("versions") or {}, b.get("versions") or {}),
        _nodes(a, b),
    ):  # fmt: skip
        changes += found
        notes += said
    changes += _errors(a.get("errors") or {}, b.get("errors") or {})
    hosts = tuple(sorted({*(a.get("hosts") or ()), *(b.get("hosts") or ())}))
    return Comparison(
        reference=label,
        reference_verdict=str(reference.get("verdict", "")),
        reference_tool=str((reference.get("tool") or {}).get("version", "")),
        verdict=str(this.get("verdict", "")),
        changes=tuple(changes),
        not_compared=tuple(notes),
        hosts=hosts,
    )
