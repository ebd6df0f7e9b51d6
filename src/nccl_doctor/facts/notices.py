"""Lines that read like failures and are notices: what the stack prints when nothing failed.

People quote such a line as "the error": c10d's warning for one address family it could
not use, NCCL's INFO lines as it probes for a network plugin, torchrun's OMP_NUM_THREADS
notice. The signature catalogue marks each such message harmless (class ``info``, printed
at ``info`` or ``warning`` level in the library's source; :func:`.catalogue.harmless`),
often with a note that says why. :func:`notices_of` finds the lines that hold one
and carry an alarming word, once per message: an expert's first answer to "is this the
error?".
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from nccl_doctor.facts.base import Cite
from nccl_doctor.facts.catalogue import FRAME_ROWS, harmless_lead
from nccl_doctor.facts.failures import failures_of
from nccl_doctor.facts.run import C10dSocketError
from nccl_doctor.facts.store import Facts
from nccl_doctor.signs.common import ALARMING

#: The notices a report names at most (distinct messages, the first seen first).
MOST = 5
#: The lines after a failure's that its message may still fill (info-level text there is
#: read as part of it).
_RUNS_ON = 3
#: How the libraries of the catalogue are named in a sentence.
_NAMES = {"nccl": "NCCL", "torch": "PyTorch", "cuda": "CUDA", "driver": "The NVIDIA driver"}


@dataclass(frozen=True, slots=True)
class Notice:
    """One harmless catalogued message the evidence shows: where first, how often, why."""

    signature: str
    library: str
    level: str
    why: str
    cite: Cite
    count: int


def notices_of(facts: Facts) -> tuple[Notice, ...]:
    """The harmless messages the lines hold that read like a failure, first seen first (a
    person quoting one in a sentence quotes it too)."""
    return facts.derived("notices", _notices)


def _notices(facts: Facts) -> tuple[Notice, ...]:
    # a failure's own line is never a notice, whatever else it holds (NCCL prints "Cuda
    # failure '%s'" at INFO level where it ignores the error, at WARN where it fails); the
    # info-level lines just after one may be its message running on (PyTorch's CUDA errors
    # end with "CUDA kernel errors might be asynchronously reported...", harmless alone),
    # while a record of its own there (a warning at exit) is still a notice
    failed = {(f.fact.cite.source, f.fact.cite.line) for f in failures_of(facts)}
    after = {(src, line + n) for src, line in failed for n in range(1, _RUNS_ON + 1)}
    # c10d's warning for a name the resolver could not look up at all is a clue, not routine
    clues = {(e.cite.source, e.cite.line) for e in facts.of(C10dSocketError) if e.resolver_failed}
    skip = failed | clues
    first: dict[str, Notice] = {}
    for hit in facts.seen(ALARMING):
        where = (hit.cite.source, hit.cite.line)
        if where in skip:
            continue
        skip.add(where)  # (a line two facts cite counts once)
        # the line's most specific message must be the harmless one (a title can quote a
        # version line and a WARN), and an error code's string is no notice: whether it is
        # harmless depends on who prints it (NVML's "Function Not Found")
        sig = harmless_lead(hit.cite.text)
        if sig is None or sig.result is not None:
            continue
        if sig.level == "warn" and sig.hint_ids:
            # a WARN NCCL goes on after that still points at a cause (no interface in the
            # peer's subnet, no NVML handle for a GPU): a clue the rules read, not a notice
            continue
        if sig.level == "info" and where in after:
            continue
        seen = first.get(sig.id)
        if seen is not None:
            first[sig.id] = replace(seen, count=seen.count + 1)
        elif len(first) < MOST:
            # (a frame row's note describes the frame, not this message: the level says why)
            why = (sig.note if sig.id not in FRAME_ROWS else "") or _why(sig.library, sig.level)
            first[sig.id] = Notice(sig.id, sig.library, sig.level, why, hit.cite, 1)
    return tuple(sorted(first.values(), key=lambda n: (n.cite.source, n.cite.line)))


def _why(library: str, level: str) -> str:
    """Why a harmless row with no note of its own is a notice: the level it is printed at."""
    name = _NAMES.get(library, library)
    if level == "warn":  # NCCL's WARNs of class info: it goes on after them
        return f"{name} warns of it and goes on: a notice, not the failure"
    return f"{name} prints it at {level.upper()} level: a notice, not an error"
