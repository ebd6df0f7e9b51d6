"""Python stacks of live processes (faulthandler or py-spy dumps), and where each rank is.

A dump is evidence like a log: :class:`ThreadStack` is one thread's stack as
printed, :class:`StackCapture` one process that the ``nccl-doctor run``
pre-mortem tried to dump (dumped, gone, or silent), :class:`CollectiveTrace` the
stack that issued the collective a watchdog gave up on. :func:`positions` says,
per rank, where its main thread is: waiting in a ``torch.distributed``
collective (which one, called from where), elsewhere (the innermost frame),
or gone; :func:`verdict` compares the ranks and names the ones that are
behind. Both are pure functions over facts, usable by rules and by the
wrapper alike.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from nccl_doctor.facts.base import Cite, Fact
from nccl_doctor.facts.ranks import ranks_text

#: (file, line, function) of one frame, as printed.
Frame = tuple[str, int | None, str | None]

#: The folder a pre-mortem capture writes into (``<run>/hang-<n>/``).
_CAPTURE_FOLDER = re.compile(r"(?:^|[/\\])hang-(?P<n>\d{1,6})[/\\]")


def capture_of(source: str) -> int | None:
    """The pre-mortem capture a file belongs to (``.../hang-3/fr_rank0`` -> 3), else ``None``."""
    found = _CAPTURE_FOLDER.search(source)
    return int(found["n"]) if found else None


@dataclass(frozen=True, slots=True, kw_only=True)
class ThreadStack(Fact):
    """One thread's Python stack; ``frames`` outermost first (innermost is the last).

    ``tool`` is ``faulthandler`` or ``py-spy``; ``capture`` the pre-mortem's
    number (``hang-<n>``) when the wrapper wrote it, else ``None``.
    """

    pid: int | None = None
    thread_id: str | None = None
    thread_name: str | None = None
    current: bool = False
    frames: tuple[Frame, ...] = ()
    truncated: bool = False
    tool: str = "faulthandler"
    capture: int | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class StackCapture(Fact):
    """One process the pre-mortem tried to dump: ``state`` is ``dumped``, ``gone`` or ``silent``.

    ``gone``: the process had registered but had exited before the capture;
    ``silent``: it was alive but no dump came back in time.
    """

    pid: int | None = None
    local_rank: int | None = None
    world_size: int | None = None
    state: str = "dumped"
    tool: str = "faulthandler"
    capture: int | None = None
    stalled_s: float | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class CollectiveTrace(Fact):
    """The Python stack that issued the collective a rank's watchdog gave up on, outermost first.

    ProcessGroupNCCL keeps it in the flight recorder when the collective is
    enqueued and prints it when the watchdog catches its timeout (``Stack
    trace of the failed collective:`` then ``#0 all_reduce from
    <file>:<line>`` ..., innermost first; torch 2.4 and later, with the
    flight recorder on). The collective runs asynchronously, so this is
    where the rank *was* when it asked for it, not where it waits now.
    """

    frames: tuple[Frame, ...] = ()


#: ``torch.distributed`` functions that wait for other ranks (the API a user calls).
COLLECTIVES = frozenset(
    {
        "all_reduce", "all_reduce_coalesced", "all_gather", "all_gather_into_tensor",
        "all_gather_object", "all_gather_coalesced", "reduce_scatter", "reduce_scatter_tensor",
        "all_to_all", "all_to_all_single", "broadcast", "broadcast_object_list", "reduce",
        "gather", "gather_object", "scatter", "scatter_object_list", "barrier",
        "monitored_barrier", "send", "recv", "send_object_list", "recv_object_list",
        "batch_isend_irecv", "init_process_group", "new_group", "new_subgroups",
        "destroy_process_group", "_store_based_barrier", "rendezvous",
        "_sync_module_states", "_verify_param_shape_across_processes",
    }
)  # fmt: skip
_DISTRIBUTED = ("/torch/distributed/", "/torch/nn/parallel/distributed.py")
_THIRD_PARTY = ("/site-packages/", "/dist-packages/")


@dataclass(frozen=True, slots=True)
class Position:
    """Where one rank (or unranked process) is: ``kind`` is ``collective``, ``elsewhere``, ``gone``.

    ``op`` is the collective (``all_reduce``), ``call`` the frame that called
    it (the user's line), ``at`` the innermost frame, ``user`` the innermost
    frame outside libraries.
    """

    rank: int | None
    pid: int | None
    host: str | None
    kind: str
    cite: Cite
    op: str | None = None
    call: Frame | None = None
    at: Frame | None = None
    user: Frame | None = None
    world_size: int | None = None


def _path(frame: Frame) -> str:
    """The frame's file with ``/`` separators, rooted: py-spy prints a module's path relative to
    its ``sys.path`` entry (``torch/distributed/distributed_c10d.py``), faulthandler in full."""
    path = frame[0].replace("\\", "/")
    return path if path.startswith(("/", "<")) or path[1:3] == ":/" else "/" + path


def _is_distributed(frame: Frame) -> bool:
    return any(part in _path(frame) for part in _DISTRIBUTED)


def _is_user(frame: Frame) -> bool:
    path = _path(frame)
    if any(part in path for part in _THIRD_PARTY) or path.startswith(("<", "/torch/")):
        return False
    return "/lib/python3" not in path or "/site-packages/" in path


def main_thread(threads: Sequence[ThreadStack]) -> ThreadStack | None:
    """The main thread of one process's dump: named so, or the one started by ``<module>``."""
    if not threads:
        return None
    for thread in threads:
        if thread.thread_name == "MainThread":
            return thread
    for thread in threads:
        if thread.frames and (thread.frames[0][2] == "<module>" or "runpy" in thread.frames[0][0]):
            return thread
    return threads[-1]  # faulthandler lists the main thread last


def call_of(frames: Sequence[Frame]) -> tuple[str | None, Frame | None]:
    """The ``torch.distributed`` collective ``frames`` (outermost first) are in, and the frame
    outside torch that called it; ``(None, None)`` when they are in none."""
    for index, frame in enumerate(frames):
        if _is_distributed(frame) and frame[2] in COLLECTIVES:
            outer = [f for f in frames[:index] if not _is_torch(f)]
            return frame[2], outer[-1] if outer else None
    return None, None


def where(thread: ThreadStack) -> tuple[str, str | None, Frame | None]:
    """``(kind, op, call)`` of one thread: in a collective (which, called from where) or not."""
    op, call = call_of(thread.frames)
    return ("collective", op, call) if op is not None else ("elsewhere", None, None)


def issued_at(frames: Sequence[Frame]) -> Frame | None:
    """The line that issued a collective whose stack (outermost first) the flight recorder
    kept: the caller of the ``torch.distributed`` function, else (a collective issued inside
    torch, such as DDP's bucket all-reduce during ``backward()``) the innermost frame of the
    job's own code."""
    _, call = call_of(frames)
    return call or next((f for f in reversed(frames) if _is_user(f)), None)


def _is_torch(frame: Frame) -> bool:
    return "/torch/" in _path(frame)


def _latest(
    facts: Iterable[Fact],
) -> tuple[list[StackCapture], dict[tuple[str | None, int], list[ThreadStack]]]:
    captures = [f for f in facts if isinstance(f, StackCapture)]
    threads = [f for f in facts if isinstance(f, ThreadStack)]
    last = max((c.capture or 0 for c in captures), default=None)
    if last is not None:
        captures = [c for c in captures if (c.capture or 0) == last]
        threads = [t for t in threads if (t.capture or 0) == last or t.capture is None]
    by_proc: dict[tuple[str | None, int], list[ThreadStack]] = {}
    for thread in threads:
        key = (thread.host, thread.pid if thread.pid is not None else -(thread.rank or 0) - 1)
        by_proc.setdefault(key, []).append(thread)
    return captures, by_proc


def positions(facts: Iterable[Fact]) -> list[Position]:
    """Where each captured process is, from the latest capture (ranked processes first)."""
    captures, by_proc = _latest(list(facts))
    out: list[Position] = []
    seen: set[tuple[str | None, int]] = set()
    for cap in captures:
        if cap.state == "gone" and cap.pid is not None:
            seen.add((cap.host, cap.pid))
            out.append(
                Position(cap.rank, cap.pid, cap.host, "gone", cap.cite, world_size=cap.world_size)
            )
    sizes = {(c.host, c.pid): c.world_size for c in captures}
    for key, threads in by_proc.items():
        if key in seen:
            continue
        main = main_thread(threads)
        if main is None:
            continue
        kind, op, call = where(main)
        user = next((f for f in reversed(main.frames) if _is_user(f)), None)
        out.append(
            Position(
                main.rank,
                main.pid,
                main.host,
                kind,
                main.cite,
                op=op,
                call=call,
                at=main.frames[-1] if main.frames else None,
                user=user,
                world_size=sizes.get((main.host, main.pid)),
            )
        )
    return sorted(out, key=lambda p: (p.rank is None, p.rank or 0, p.pid or 0))


@dataclass(frozen=True, slots=True)
class Verdict:
    """The ranks compared: ``named`` are behind (or odd); ``hung``: some rank waits on others."""

    hung: bool
    named: tuple[int, ...]
    summary: str
    lines: tuple[str, ...]
    cites: tuple[Cite, ...]
    positions: tuple[Position, ...] = ()


def frame_text(frame: Frame | None) -> str:
    """``file:line in func`` (the file's last two path parts)."""
    if frame is None:
        return "?"
    short = "/".join(frame[0].replace("\\", "/").split("/")[-2:])
    line = f":{frame[1]}" if frame[1] is not None else ""
    return f"{short}{line} in {frame[2] or '?'}"


def describe(pos: Position) -> str:
    """One line: where this rank is."""
    who = f"rank {pos.rank}" if pos.rank is not None else f"pid {pos.pid} (no rank)"
    if pos.kind == "gone":
        return f"{who}: its process (pid {pos.pid}) is gone - it exited before the capture"
    if pos.kind == "collective":
        return f"{who}: waits in {pos.op}, called at {frame_text(pos.call)}"
    where_text = frame_text(pos.at)
    if pos.user is not None and pos.user != pos.at:
        where_text += f" (from {frame_text(pos.user)})"
    return f"{who}: not in any collective, at {where_text}"


def verdict(found: Sequence[Position]) -> Verdict:
    """Which ranks are behind, from where every captured rank is."""
    ranked = [p for p in found if p.rank is not None] or list(found)
    lines = tuple(describe(p) for p in ranked)
    cites = tuple(p.cite for p in ranked)
    gone = [p for p in ranked if p.kind == "gone"]
    waiting = [p for p in ranked if p.kind == "collective"]
    elsewhere = [p for p in ranked if p.kind == "elsewhere"]
    key = [p.rank if p.rank is not None else -1 for p in ranked]

    def named(group: Sequence[Position]) -> tuple[int, ...]:
        return tuple(sorted(p.rank for p in group if p.rank is not None))

    if gone:
        text = f"{ranks_text(named(gone))} {'is' if len(gone) == 1 else 'are'} gone while " + (
            f"{ranks_text(named(waiting))} {'waits' if len(waiting) == 1 else 'wait'} for "
            f"{'it' if len(gone) == 1 else 'them'}"
            if waiting
            else "the others run on"
        )
        return Verdict(True, named(gone), text, lines, cites, tuple(ranked))
    if waiting and elsewhere:
        ops = sorted({p.op or "?" for p in waiting})
        one = len(elsewhere) == 1
        text = (
            f"{ranks_text(named(elsewhere))} {'is' if one else 'are'} not in any collective while "
            f"{ranks_text(named(waiting))} {'waits' if len(waiting) == 1 else 'wait'} in "
            f"{', '.join(ops)}: {'it is' if one else 'they are'} behind"
        )
        return Verdict(True, named(elsewhere), text, lines, cites, tuple(ranked))
    if waiting:
        counts = Counter(p.op for p in waiting)
        if len(counts) > 1:
            top = max(counts.values())
            odd = [p for p in waiting if counts[p.op] < top] or waiting
            text = "the ranks wait in different collectives: " + "; ".join(
                f"{ranks_text(named([p for p in waiting if p.op == op]))} in {op}"
                for op in sorted(counts, key=lambda o: (counts[o], o or ""))
            )
            return Verdict(True, named(odd), text, lines, cites, tuple(ranked))
        op = next(iter(counts))
        size = max((p.world_size or 0 for p in waiting), default=0)
        missing = sorted(set(range(size)) - set(key)) if size else []
        text = f"every captured rank waits in {op}"
        if missing:
            text += f"; {ranks_text(missing)} were not captured (another node?): look there"
            return Verdict(True, tuple(missing), text, lines, cites, tuple(ranked))
        text += (
            ": the rank that is behind was not captured (another node), or their "
            "collective cannot start (a GPU still busy with work queued before it)"
        )
        return Verdict(True, (), text, lines, cites, tuple(ranked))
    text = "no captured rank waits in a collective: the job looks busy (or stuck outside torch)"
    return Verdict(False, (), text, lines, cites, tuple(ranked))
