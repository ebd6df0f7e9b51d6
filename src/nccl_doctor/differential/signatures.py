"""Which catalogued message a failure's text is, from the signature catalogue.

The catalogue (:mod:`nccl_doctor.knowledge.signatures`) holds what NCCL,
PyTorch, gloo, CUDA, the driver and the kernel print, mined from their own
source, each with the symptom class it signals and the ids it points to. A
failure fact whose type does not say its class (an NCCL WARN, a c10d error, a
traceback's message, an error line no parser claims) is looked up here. Each
signature is indexed by the words every match of its pattern holds, anywhere
in it (:func:`~nccl_doctor.facts.literals.required_words`: CUDA's messages
follow one of several prefixes), so a line costs a few substring tests per
signature and a regex only where the words are there.
"""

from __future__ import annotations

import functools

from nccl_doctor.facts.literals import Clause, holds, required_words
from nccl_doctor.knowledge.signatures import Signature, load_signatures

#: The C library's error texts (strerror, gai_strerror): what many messages quote.
_GENERIC = ("system.errno.", "system.gai.")
#: The levels a harmless (class ``info``) message is printed at.
_HARMLESS_LEVELS = frozenset({"info", "warning"})
#: A signature whose longest required word is shorter than this anchors too little to index.
_MIN_WORD = 8


def harmless(sig: Signature) -> bool:
    """A message the catalogue knows to be harmless: class ``info`` printed at level ``info``
    or ``warning`` (c10d's per-address socket warnings, the OMP_NUM_THREADS notice, a
    corrected PCIe error). A line that holds it is no failure, whatever error it quotes; a row
    of class ``info`` at level ``error`` (c10d's ``NCCL error in:`` wrapper, whose cause a
    typed fact reads) still says something failed."""
    return sig.symptom == "info" and sig.level in _HARMLESS_LEVELS


def _specificity(clauses: tuple[Clause, ...]) -> int:
    """The length of the longest word a match must hold (a one-word clause)."""
    return max((len(c[0]) for c in clauses if len(c) == 1), default=0)


@functools.cache
def _index() -> tuple[tuple[tuple[Clause, ...], Signature], ...]:
    indexed = []
    for sig in load_signatures():
        if sig.symptom == "info" and not harmless(sig):
            continue
        clauses = required_words(sig.pattern)
        if clauses and _specificity(clauses) >= _MIN_WORD:
            indexed.append((clauses, sig))
    # a library's own message (a harmless warning too) before the C library's error text it
    # may quote, and both before a message that only relays another's text; then the
    # longest required word first: the most specific message wins
    return tuple(
        sorted(
            indexed,
            key=lambda item: (
                item[1].relays,
                item[1].id.startswith(_GENERIC),
                -_specificity(item[0]),
            ),
        )
    )


def signature_of(text: str) -> Signature | None:
    """The most specific catalogued failure message in ``text``, if any.

    ``None`` as well when the most specific message is a harmless warning
    (:func:`harmless`). Patterns compile on first use (cached), so a diagnosis
    pays only for the messages its lines could be.
    """
    lowered = text.lower()
    for clauses, sig in _index():
        if holds(lowered, clauses) and sig.compiled().search(text):
            return None if harmless(sig) else sig
    return None


def harmless_message(text: str) -> Signature | None:
    """The catalogued harmless message ``text`` holds, if any (:func:`harmless`).

    What the stack prints when nothing failed but people worry (a corrected
    PCIe error, a monitoring query the GPU does not offer): such a line is
    never the reporter's words for a failure.
    """
    lowered = text.lower()
    for clauses, sig in _index():
        if harmless(sig) and holds(lowered, clauses) and sig.compiled().search(text):
            return sig
    return None
