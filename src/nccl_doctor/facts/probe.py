"""Facts of an active probe run (``nccl-doctor probe``), read back from its result JSON.

A :class:`ProbeStep` is one step on some GPUs/ranks of one host (``context``,
``kernel``, ``p2p 0->1``, ``all_reduce``...) and how it ended; ``status`` is
``ok``, ``failed`` (an error or a wrong result) or ``hung`` (the watchdog
killed it). A :class:`ProbeBandwidth` is one measured bandwidth with what the
GPU model should reach. A :class:`ProbeIsolation` is what isolation
concluded: a transport that cures the fault, or the GPU / link that bisection
named. ``transport_env`` holds ``NAME=VALUE`` strings of the switches in
force (empty for the default run).
"""

from __future__ import annotations

from dataclasses import dataclass

from nccl_doctor.facts.base import Fact


@dataclass(frozen=True, slots=True, kw_only=True)
class ProbeStep(Fact):
    """One probe step and how it ended."""

    step: str
    phase: str | None = None
    gpus: tuple[int, ...] = ()
    ranks: tuple[int, ...] = ()
    ok: bool = True
    status: str = "ok"
    error: str | None = None
    seconds: float | None = None
    transport_env: tuple[str, ...] = ()

    @property
    def message(self) -> str:
        """The error text, for searches."""
        return self.error or ""


@dataclass(frozen=True, slots=True, kw_only=True)
class ProbeBandwidth(Fact):
    """One bandwidth measurement of the probe, in GB/s (:mod:`nccl_doctor.knowledge.units`)."""

    kind: str
    phase: str | None = None
    gpus: tuple[int, ...] = ()
    size_bytes: int | None = None
    algbw_gbytes_s: float | None = None
    busbw_gbytes_s: float | None = None
    expected_gbytes_s: float | None = None
    gpu_model: str | None = None
    world: int | None = None
    transport_env: tuple[str, ...] = ()

    @property
    def ratio(self) -> float | None:
        """Measured busbw over expected, when both are known."""
        if self.busbw_gbytes_s is None or not self.expected_gbytes_s:
            return None
        return self.busbw_gbytes_s / self.expected_gbytes_s


@dataclass(frozen=True, slots=True, kw_only=True)
class ProbeIsolation(Fact):
    """What isolation concluded for a failing or short collective."""

    method: str
    step: str
    conclusion: str
    transport: str | None = None
    env: tuple[str, ...] = ()
    gpus: tuple[int, ...] = ()
    other_gpus: tuple[int, ...] = ()
    rounds: int | None = None


#: collectives whose shortfall is the network's or the GPUs' links', not one copy engine's
TRANSFER_KINDS = ("h2d", "d2h")
SHORT_FRACTION = 0.5


def far_below(bw: ProbeBandwidth) -> bool:
    """Whether a measurement is far below what its GPU model should reach."""
    ratio = bw.ratio
    return ratio is not None and ratio < SHORT_FRACTION and bw.phase != "isolation"
