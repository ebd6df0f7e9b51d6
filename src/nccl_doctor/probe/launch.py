"""The parent side: start fresh workers, enforce deadlines, kill what is stuck.

:func:`launch` starts one worker process per spec (multiprocessing,
``forkserver`` with torch preloaded so a fresh worker costs milliseconds, or
``spawn``), then reads their pipes. Each worker has one deadline at a time:
``startup_s`` until it announces its first step, then ``step_timeout_s`` from
each ``enter``. A worker past its deadline is killed, and its step becomes a
``hung`` record naming the step and the ranks; in a *coupled* launch (one
process group) every other worker is killed with it, since its peers wait in
the same collective. A worker that cannot be killed (stuck in the driver) is
abandoned, counted, and never waited for; the tool still exits.
"""

from __future__ import annotations

import multiprocessing
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from multiprocessing.connection import Connection, wait
from typing import Any

#: workers not reaped after SIGKILL within this many seconds are abandoned
_REAP_S = 3.0
_contexts: dict[str, Any] = {}


def mp_context(method: str = "forkserver") -> Any:
    """The multiprocessing context; the forkserver preloads torch once per run."""
    if method not in _contexts:
        ctx = multiprocessing.get_context(method)
        if method == "forkserver":
            ctx.set_forkserver_preload(["torch", "torch.distributed", "nccl_doctor.probe.worker"])
        _contexts[method] = ctx
    return _contexts[method]


@contextmanager
def _no_main_fixup() -> Iterator[None]:
    """Start workers without re-running ``__main__`` (a script, stdin, a notebook).

    The workers' code lives in nccl_doctor modules; multiprocessing would
    otherwise re-import the caller's main module in every worker, which fails
    for stdin and re-runs scripts that lack a ``__main__`` guard.
    """
    main = sys.modules.get("__main__")
    saved = dict(vars(main)) if main is not None else {}
    try:
        if main is not None:
            vars(main).pop("__file__", None)
            main.__spec__ = None
        yield
    finally:
        if main is not None:
            for key in ("__file__", "__spec__"):
                if key in saved:
                    setattr(main, key, saved[key])


@dataclass
class LaunchResult:
    """What one launch produced: step records (merged over ranks), bandwidth, extras."""

    steps: list[dict[str, Any]] = field(default_factory=list)
    bandwidth: list[dict[str, Any]] = field(default_factory=list)
    matrix: dict[str, bool] = field(default_factory=dict)
    meta: dict[str, Any] = field(default_factory=dict)
    abandoned: int = 0
    seconds: float = 0.0

    @property
    def ok(self) -> bool:
        """Whether every step of every rank succeeded."""
        return all(s["ok"] for s in self.steps)

    def failed(self) -> list[dict[str, Any]]:
        """The steps that failed or hung."""
        return [s for s in self.steps if not s["ok"]]


@dataclass
class _Worker:
    spec: dict[str, Any]
    proc: Any
    conn: Connection
    step: str = "start"
    deadline: float = 0.0
    done: bool = False
    records: dict[str, dict[str, Any]] = field(default_factory=dict)


def _merge(workers: list[_Worker], env: dict[str, str]) -> list[dict[str, Any]]:
    """One record per (group, step): ranks, GPUs, ok only if every rank was ok, the first error."""
    order: list[tuple[Any, str]] = []
    for w in workers:
        group = w.spec.get("group", 0)
        order.extend((group, s) for s in w.records if (group, s) not in order)
    out = []
    for group, step in order:
        mine = [
            (w, w.records[step])
            for w in workers
            if step in w.records and w.spec.get("group", 0) == group
        ]
        bad = [(w, r) for w, r in mine if not r["ok"]]
        hung = any(r.get("status") == "hung" for _, r in mine)
        first = bad[0][1] if bad else mine[0][1]
        out.append(
            {
                "step": step,
                "group": group,
                "ranks": sorted(w.spec.get("rank", 0) for w, _ in mine),
                "gpus": sorted({g for w, _ in mine for g in _gpus(w.spec, step)}),
                "ok": not bad,
                "status": "hung" if hung else ("failed" if bad else "ok"),
                "error": (
                    f"rank {bad[0][0].spec.get('rank', 0)}: {first.get('error')}" if bad else None
                ),
                "bad_ranks": sorted(w.spec.get("rank", 0) for w, _ in bad),
                "seconds": round(max(float(r.get("seconds") or 0) for _, r in mine), 6),
                "detail": first.get("detail"),
                "transport_env": dict(env),
            }
        )
    return out


def _gpus(spec: dict[str, Any], step: str) -> list[int]:
    if step.startswith("p2p ") and "->" in step:
        a, _, b = step[4:].partition("->")
        return [int(a), int(b)] if a.isdigit() and b.isdigit() else list(spec.get("devices", []))
    if spec.get("task") == "p2p":
        return list(spec.get("devices", []))
    return [spec.get("device", 0)]


def _kill(w: _Worker, reason: str, now: float) -> int:
    """Kill a worker and mark its current step hung; returns 1 if it could not be reaped."""
    if w.proc.is_alive():
        w.proc.kill()
        w.proc.join(_REAP_S)
    w.done = True
    w.records[w.step] = {
        "ok": False,
        "status": "hung",
        "error": reason,
        "seconds": now - (w.deadline - w.spec.get("_timeout", 0.0)),
    }
    return 1 if w.proc.is_alive() else 0


def _receive(w: _Worker, result: LaunchResult, timeout_s: float) -> dict[str, Any] | None:
    try:
        msg: dict[str, Any] = w.conn.recv()
    except (EOFError, OSError):
        w.done = True
        if w.proc.is_alive():
            w.proc.join(_REAP_S)
        if w.step not in w.records or w.records[w.step].get("ok"):
            code = w.proc.exitcode
            w.records[w.step] = {"ok": False, "error": f"worker died (exit code {code})"}
        return None
    kind = msg.get("t")
    if kind == "enter":
        w.step = msg["step"]
        w.deadline = time.monotonic() + timeout_s
    elif kind == "step":
        w.records[msg["step"]] = msg
    elif kind == "bw":
        rec = {k: v for k, v in msg.items() if k not in ("t", "device")}
        rec["transport_env"] = dict(w.spec.get("env") or {})
        result.bandwidth.append(rec)
    elif kind == "meta":
        result.meta.update({k: v for k, v in msg.items() if k not in ("t", "rank", "device")})
    elif kind == "matrix":
        result.matrix.update(msg["matrix"])
    elif kind == "end":
        w.done = True
    return msg


def launch(
    specs: list[dict[str, Any]],
    *,
    step_timeout_s: float,
    startup_s: float = 60.0,
    coupled: bool = True,
    method: str = "forkserver",
    on_msg: Callable[[dict[str, Any]], None] | None = None,
) -> LaunchResult:
    """Run one worker per spec under the watchdog; never blocks past the deadlines."""
    ctx = mp_context(method)
    t0 = time.monotonic()
    result = LaunchResult()
    workers: list[_Worker] = []
    for spec in specs:
        spec["_timeout"] = step_timeout_s
        recv, send = ctx.Pipe(duplex=False)
        proc = ctx.Process(target=_entry, args=(send, spec), daemon=True)
        with _no_main_fixup():
            proc.start()
        send.close()
        workers.append(_Worker(spec, proc, recv, deadline=time.monotonic() + startup_s))
    env = dict(specs[0].get("env") or {}) if specs else {}
    while live := [w for w in workers if not w.done]:
        now = time.monotonic()
        expired = [w for w in live if now >= w.deadline]
        if expired:
            groups = {w.spec.get("group", 0) for w in expired}
            stuck = (
                expired if not coupled else [w for w in live if w.spec.get("group", 0) in groups]
            )
            names = sorted({w.step for w in expired})
            for w in stuck:
                why = (
                    f"no progress within {step_timeout_s:g} s in step {w.step}"
                    if w in expired
                    else f"killed with the group after {', '.join(names)} hung"
                )
                result.abandoned += _kill(w, why, now)
            continue
        ready = wait([w.conn for w in live], timeout=max(0.0, min(w.deadline for w in live) - now))
        for w in live:
            if w.conn in ready:
                msg = _receive(w, result, step_timeout_s)
                if on_msg is not None and msg is not None:
                    on_msg(msg)
    for w in workers:
        w.conn.close()
        if w.proc.is_alive():
            w.proc.join(_REAP_S)
    result.steps = _merge(workers, env)
    result.seconds = time.monotonic() - t0
    return result


def _entry(conn: Any, spec: dict[str, Any]) -> None:
    """The process target: quiet the worker's output into its log, then run it."""
    import os  # noqa: PLC0415 -- only the child needs it

    if log := spec.get("log"):
        fd = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        os.dup2(fd, 1)
        os.dup2(fd, 2)
    from nccl_doctor.probe.worker import worker_main  # noqa: PLC0415

    worker_main(conn, spec)
