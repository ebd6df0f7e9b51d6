"""The record type of the environment-variable tables (see :mod:`nccl_doctor.knowledge.nccl_env`).

Kept apart from the tables so that the data modules and the lookup module can
both import it without a cycle.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

Kind = Literal["bool", "int", "enum", "list", "string", "size"]
"""How a variable's value is read: ``bool`` 0/1, ``int`` a number, ``size``
a byte count, ``enum`` one of ``values``, ``list`` several of them, ``string``
free text (paths, names, addresses)."""

Syntax = Literal["plain", "iflist", "bitset", "funclist", "pipelist"]
"""How a ``list`` value is written: ``plain`` comma-separated ``values``;
``iflist`` interface/HCA prefixes (``^`` excludes, ``=`` matches exactly, both
only at the very start; items may carry ``:port``); ``bitset`` comma-separated
``values`` with an optional leading ``^`` that inverts the set (NCCL_DEBUG_SUBSYS);
``funclist`` NCCL_ALGO/NCCL_PROTO lists (``^`` excludes, since 2.24 also
``function:list`` entries joined by ``;``); ``pipelist`` ``|``-separated values."""

Origin = Literal["nccl", "nccl-plugin", "nccl-tests", "torch", "launcher", "cuda", "gloo"]
"""Who reads the variable: libnccl itself, a plugin shipped in NCCL's tree
(example profiler, inspector, tuner), nccl-tests, PyTorch, a launcher
(torchrun/torchelastic set these), the CUDA driver/runtime, or Gloo."""


@dataclass(frozen=True, slots=True, kw_only=True)
class NcclVar:
    """One environment variable a job's communication stack reads.

    ``default`` is the value used when the variable is unset, as text; ``None``
    means NCCL decides at run time (auto-detection) or nothing is set.
    ``since_version``/``removed_in`` are release numbers of the reading project
    (NCCL for ``nccl`` variables: the first NVIDIA/nccl release tag whose source
    reads it, ``None`` when already read by 2.3.5, the oldest 2.x tag kept; PyTorch
    for ``torch`` ones where known). ``harmful_values`` are values (compared without
    case) that usually hurt a job, explained by ``harmful_when``. ``debug_only``
    marks switches meant for debugging or as a temporary workaround, that should
    not stay in production settings.
    """

    name: str
    kind: Kind
    default: str | None = None
    values: tuple[str, ...] = ()
    syntax: Syntax = "plain"
    case_sensitive: bool = False
    since_version: str | None = None
    removed_in: str | None = None
    deprecated: bool = False
    replacement: str | None = None
    harmful_values: tuple[str, ...] = ()
    harmful_when: str | None = None
    debug_only: bool = False
    origin: Origin = "nccl"
    note: str = ""
