"""Isolation: which transport, and which GPU or link, makes a collective fail or fall short.

Both run the failing collective again in *fresh* worker processes (NCCL reads
its environment when a process first creates a communicator):

* **transports** — once per switch of :data:`SWITCHES`, one at a time
  (``NCCL_P2P_DISABLE=1``, ``NCCL_SHM_DISABLE=1``, ``NCCL_NVLS_ENABLE=0``,
  ``NCCL_IB_DISABLE=1``). A failure that one switch cures, or a shortfall that
  one switch lifts above the mark, names that transport.
* **bisection** — split the GPU set in halves and test both halves at once
  (one round: disjoint GPUs run concurrently); recurse into the failing half.
  A bad GPU is named in ``ceil(log2 n)`` rounds, not ``n(n-1)/2`` pair tests.
  When both halves pass while their union fails, the fault needs GPUs of both
  halves: a link between them (for two GPUs, the link of that pair).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

#: (transport name, environment that switches it off)
SWITCHES: tuple[tuple[str, dict[str, str]], ...] = (
    ("P2P", {"NCCL_P2P_DISABLE": "1"}),
    ("SHM", {"NCCL_SHM_DISABLE": "1"}),
    ("NVLS", {"NCCL_NVLS_ENABLE": "0"}),
    ("IB", {"NCCL_IB_DISABLE": "1"}),
)

#: a round: groups of devices to test concurrently -> for each group (passed, busbw)
RoundFn = Callable[[list[list[int]]], list[tuple[bool, float | None]]]
#: a rerun of the whole set under extra environment -> (passed, busbw)
EnvFn = Callable[[dict[str, str]], tuple[bool, float | None]]


@dataclass
class Bisection:
    """What bisection found: ``gpu`` (one GPU), ``link`` (between two sets) or ``none``."""

    conclusion: str
    gpus: list[int]
    rounds: int
    trail: list[dict[str, Any]] = field(default_factory=list)
    other: list[int] = field(default_factory=list)

    def record(self, step: str) -> dict[str, Any]:
        """The isolation record of the probe result."""
        return {
            "method": "bisection",
            "step": step,
            "conclusion": self.conclusion,
            "gpus": self.gpus,
            "other_gpus": self.other,
            "rounds": self.rounds,
            "trail": self.trail,
        }


def bisect(devices: Sequence[int], test_round: RoundFn) -> Bisection:
    """Find the device (or the link between two halves) that makes the set fail."""
    current = list(devices)
    rounds = 0
    trail: list[dict[str, Any]] = []
    while len(current) > 1:
        half = len(current) // 2
        a, b = current[:half], current[half:]
        (ok_a, _), (ok_b, _) = test_round([a, b])
        rounds += 1
        trail.append({"round": rounds, "groups": [a, b], "passed": [ok_a, ok_b]})
        if not ok_a:
            current = a
        elif not ok_b:
            current = b
        else:
            return Bisection("link", a, rounds, trail, other=b)
    if not current:
        return Bisection("none", [], rounds, trail)
    return Bisection("gpu", current, rounds, trail)


def isolate_transport(
    rerun: EnvFn,
    *,
    failed: bool,
    baseline_gbytes_s: float | None,
    mark_gbytes_s: float | None,
    names: Sequence[str] = ("P2P", "SHM", "NVLS"),
) -> dict[str, Any]:
    """Rerun with each transport switched off; the record names the one that cures it."""
    tried: list[dict[str, Any]] = []
    found: str | None = None
    env_found: dict[str, str] = {}
    for name, env in SWITCHES:
        if name not in names:
            continue
        ok, busbw = rerun(env)
        tried.append({"transport": name, "env": env, "passed": ok, "busbw_GBps": busbw})
        if failed and ok:
            found, env_found = name, env
            break
        lifted = (
            not failed
            and ok
            and busbw is not None
            and mark_gbytes_s is not None
            and busbw >= mark_gbytes_s
            and (baseline_gbytes_s is None or busbw > 1.5 * baseline_gbytes_s)
        )
        if lifted:
            found, env_found = name, env
            break
    return {
        "method": "transport",
        "conclusion": "transport" if found else "none",
        "transport": found,
        "env": env_found,
        "tried": tried,
    }
