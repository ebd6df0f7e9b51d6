"""Facts of NCCL RAS status reports (kind ``ncclras``): text, or JSON from NCCL 2.28.7.

NCCL's RAS thread (NCCL >= 2.24) answers ``ncclras`` (or any client of its
socket) with a job-wide status: the communicators, the ranks each one
reached, the ranks it did not (missing, unresponsive, dead), per-rank
errors and abort flags, and per-rank counts of launched collectives
(src/ras/client_support.cc in NVIDIA/nccl prints both formats).

``rank`` of a :class:`RasRank` is the rank *in its communicator* (for the
job's world communicator, the global rank; ``comm_size`` tells which one
it is); ``comm`` names the
communicator: its hash in JSON and in the text's per-communicator sections
(``#0-1 (00f1e2d3c4b5a697)`` -> ``0xf1e2d3c4b5a697``), or ``group N`` for a
row of the text's summary table (alike communicators counted together).
The text prints per-rank detail only for outliers (at most 10 ranks, and at
most a quarter of the communicator, unless verbose): the rest arrive as
counts in :class:`RasOpCount`.
"""

from __future__ import annotations

from dataclasses import dataclass

from nccl_doctor.facts.base import Fact


@dataclass(frozen=True, slots=True, kw_only=True)
class RasReport(Fact):
    """One status report: format, NCCL version, and the job-wide counts it printed.

    ``missing_processes``: processes RAS got no communicator data from (text:
    "Missing communicator data from N job processes"); ``dead_processes``:
    processes it considers dead ("N job processes considered dead");
    ``timeouts``: RAS's own communication timeouts while gathering. ``None``
    where the format does not print it.
    """

    format: str
    nccl_version: str | None = None
    communicators: int | None = None
    processes: int | None = None
    missing_processes: int | None = None
    dead_processes: int | None = None
    timeouts: int | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class RasComm(Fact):
    """A communicator (JSON, text sections) or a group of alike ones (the text's table row).

    ``status`` is the highest status of its ranks (``RUNNING``, ``INIT``,
    ``FINALIZE``, ``ABORT``; ``NOCOMM`` for a process without it), ``errors``
    what RAS flagged (``OK``, or ``MISMATCH``, ``ERROR``, ``INCOMPLETE``
    joined by commas); ``None`` where the format does not say.
    """

    comm: str
    size: int | None = None
    ranks_reported: int | None = None
    missing: int | None = None
    count: int = 1
    status: str | None = None
    errors: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class RasRank(Fact):
    """What RAS said of one rank of one communicator.

    ``state``: ``reported`` (its data arrived), ``missing`` (RAS got nothing
    from its process), ``unresponsive``, ``dead`` (considered dead:
    unreachable over the RAS network), or ``nocomm`` (its process answered
    but no longer has this communicator). ``status`` as in :class:`RasComm`;
    ``init_error`` and ``async_error`` as RAS words them (``Unhandled CUDA
    error``, ``Remote process error``, ...), ``None`` when none. ``op_counts``:
    ``(collective, launched count)`` pairs, all five in JSON, in text only the
    one whose counts differ.
    """

    comm: str
    comm_size: int | None = None
    state: str = "reported"
    pid: int | None = None
    gpu: int | None = None
    status: str | None = None
    init_error: str | None = None
    async_error: str | None = None
    op_counts: tuple[tuple[str, int], ...] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class RasOpCount(Fact):
    """Ranks of one communicator that launched the same number of one collective type.

    Printed (text) or derived (JSON) only where a communicator's ranks
    disagree: ``count`` operations of ``op`` (``AllReduce`` ...) launched by
    ``n_ranks`` ranks, ``ranks`` those of them the report lists (the text
    lists only outliers).
    """

    comm: str
    op: str
    count: int
    comm_size: int | None = None
    n_ranks: int
    ranks: tuple[int, ...] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class RasProcess(Fact):
    """A job process RAS lists as missing (no data) or dead, by pid, host and GPUs."""

    state: str
    pid: int | None = None
    gpus: tuple[int, ...] = ()
