"""Rank lists as people write them: ``rank 3``, ``ranks 0-3, 5-511``."""

from __future__ import annotations

from collections.abc import Iterable


def ranges(ranks: Iterable[int]) -> str:
    """``0-3, 5, 7-511``: runs of consecutive ranks joined, sorted, each rank once."""
    parts: list[str] = []
    run: list[int] = []
    for rank in sorted(set(ranks)):
        if run and rank == run[-1] + 1:
            run.append(rank)
            continue
        if run:
            parts.append(_run(run))
        run = [rank]
    if run:
        parts.append(_run(run))
    return ", ".join(parts)


def _run(run: list[int]) -> str:
    if len(run) == 1:
        return str(run[0])
    if len(run) == 2:
        return f"{run[0]}, {run[1]}"
    return f"{run[0]}-{run[-1]}"


def ranks_text(ranks: Iterable[int]) -> str:
    """``rank 3`` or ``ranks 0-3, 5-511``."""
    found = set(ranks)
    return ("rank " if len(found) == 1 else "ranks ") + ranges(found)


def ranks_listed(text: str) -> tuple[int, ...]:
    """The ranks of a printed list (``0, 1, 3``, ``2 3``), each once, in order."""
    return tuple(dict.fromkeys(int(r) for r in text.replace(",", " ").split() if r.isdigit()))
