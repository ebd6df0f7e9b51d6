"""The reporter's words that tell causes apart: what they tried, where and when it fails.

"Works with NCCL_P2P_DISABLE=1", "works with gloo", "only on node 3", "after
a driver update", "fails on a single GPU too": an expert's first questions
are these, and their answers weigh one cause against another. :data:`CUES`
holds the sentences, each with the reason it discriminates;
:mod:`.context` reads them once (:func:`cues_of`) and :mod:`.shifts` says
how each moves the weights. Written with :mod:`.prose`'s vocabulary, and,
like it, read on prose lines only.
"""

from __future__ import annotations

from nccl_doctor.differential.cues.base import Cue
from nccl_doctor.differential.cues.builds import BUILDS
from nccl_doctor.differential.cues.place import PLACE
from nccl_doctor.differential.cues.tried import TRIED
from nccl_doctor.differential.cues.when import WHEN
from nccl_doctor.differential.prose import FLAGS
from nccl_doctor.facts.base import Cite
from nccl_doctor.facts.store import Facts

__all__ = ["CUES", "Cue", "cues_of", "said"]

#: Discriminating sentences: name -> the words. Read by :func:`cues_of`. A gap between a
#: cue's words stays inside one sentence (a prose line can hold a paragraph).
CUES: dict[str, Cue] = {**TRIED, **PLACE, **BUILDS, **WHEN}


def said(facts: Facts, name: str) -> Cite | None:
    """The first prose line that says cue ``name``."""
    cue = CUES[name]
    return next(
        (
            h.cite
            for h in facts.prose_search(cue.pattern.pattern, FLAGS)
            if cue.says(h.cite.text, h.match)
        ),
        None,
    )


def cues_of(facts: Facts) -> dict[str, Cite]:
    """Every cue the reporter's sentences hold, with the first line that holds it."""
    out: dict[str, Cite] = {}
    for name in CUES:
        cite = said(facts, name)
        if cite is not None:
            out[name] = cite
    return out
