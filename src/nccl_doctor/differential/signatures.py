"""Which catalogued message a failure's text is, from the signature catalogue.

The catalogue (:mod:`nccl_doctor.knowledge.signatures`) holds what NCCL,
PyTorch, gloo, CUDA, the driver and the kernel print, mined from their own
source, each with the symptom class it signals and the ids it points to. A
failure fact whose type does not say its class (an NCCL WARN, a c10d error, a
traceback's message, an error line no parser claims) is looked up here. Each
signature is indexed by the literal its pattern starts with, so a line costs
one substring test per signature and a regex only where the literal is there.
"""

from __future__ import annotations

import functools

from nccl_doctor.knowledge.signatures import Signature, load_signatures

#: Characters that end a pattern's leading literal.
_META = frozenset(".^$*+?{}[]|()")
#: A leading literal shorter than this anchors too little to index by.
_MIN_LITERAL = 8


def leading_literal(pattern: str) -> str:
    """The literal text every match of ``pattern`` starts with (escapes resolved)."""
    out: list[str] = []
    i = 0
    while i < len(pattern):
        ch = pattern[i]
        if ch == "\\":
            nxt = pattern[i + 1 : i + 2]
            if not nxt or nxt.isalnum():
                break  # \d, \s, \b...: a class, not a literal
            out.append(nxt)
            i += 2
            continue
        if ch in _META:
            # a quantifier applies to the character before it: that one is not certain
            if ch in "*+?{" and out:
                out.pop()
            break
        out.append(ch)
        i += 1
    return "".join(out)


@functools.cache
def _index() -> tuple[tuple[str, Signature], ...]:
    indexed = []
    for sig in load_signatures():
        if sig.symptom == "info":
            continue
        literal = leading_literal(sig.pattern)
        if len(literal) >= _MIN_LITERAL:
            indexed.append((literal, sig))
    # the longest literal first: the most specific message wins
    return tuple(sorted(indexed, key=lambda item: -len(item[0])))


def signature_of(text: str) -> Signature | None:
    """The most specific catalogued failure message in ``text``, if any.

    Patterns compile on first use (cached), so a diagnosis pays only for the
    messages its lines could be.
    """
    for literal, sig in _index():
        if literal in text and sig.compiled().search(text):
            return sig
    return None
