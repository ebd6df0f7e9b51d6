"""Signs: the named patterns of text the rules read, declared once as data.

A rule never scans text. Where a parser left only words (an error line no
parser claims, a sentence of a bug report, a launch command), what the rule
needs from them is a *sign*: an id, a pattern and the fields it captures,
declared in a table under :mod:`nccl_doctor.signs`. The facts store reads
each sign over the cited lines once, on first ask, and hands the rule typed,
cited hits (:meth:`nccl_doctor.facts.store.Facts.seen`); a second rule that
asks for the same sign gets the same hits without a second scan.

Every sign is registered by its id when its table is imported, so the
patterns the rules depend on can be listed, documented and tested (each is
held to linear time by ``tests/test_regex_linear.py``) in one place.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from nccl_doctor.facts.literals import analysis, known

#: A sign id: dotted lower-case words, the first naming the table (``nccl.shm_error``).
_ID = re.compile(r"[a-z][a-z0-9_]*(?:\.[a-z0-9_]+)+")


class SignError(ValueError):
    """A sign declared twice, or with an id or pattern that is not valid."""


@dataclass(frozen=True, slots=True, eq=False)
class Sign:
    """A named pattern of text, read over every cited line.

    ``pattern`` is matched case-insensitively unless ``case`` is set.
    ``about`` says what the sign tells a rule (shown by ``docs``/tests).
    The pattern is compiled when first needed (:attr:`regex`): most signs of
    a run find no line holding their words (:mod:`nccl_doctor.facts.literals`)
    and are never compiled; whether it compiles is known when it is declared.
    """

    id: str
    pattern: str
    about: str
    case: bool = False
    _regex: re.Pattern[str] | None = field(default=None, init=False, repr=False)

    def __post_init__(self) -> None:
        if not _ID.fullmatch(self.id):
            raise SignError(f"sign {self.id!r} is not dotted lower-case words")
        if not known(self.pattern, self.flags):  # else an earlier run compiled it
            analysis(self.regex.pattern, self.flags)  # compiled now: SignError if it does not

    @property
    def flags(self) -> int:
        """The flags the pattern is compiled with."""
        return 0 if self.case else re.IGNORECASE

    @property
    def regex(self) -> re.Pattern[str]:
        """The compiled pattern."""
        compiled = self._regex
        if compiled is None:
            try:
                compiled = re.compile(self.pattern, self.flags)
            except re.error as exc:
                raise SignError(f"sign {self.id}: {exc}") from None
            object.__setattr__(self, "_regex", compiled)
        return compiled


_REGISTRY: dict[str, Sign] = {}


def sign(sign_id: str, pattern: str, about: str, *, case: bool = False) -> Sign:
    """Declare a sign (once per id) and return it."""
    made = Sign(sign_id, pattern, about, case=case)
    if sign_id in _REGISTRY:
        raise SignError(f"sign {sign_id} is declared twice")
    _REGISTRY[sign_id] = made
    return made


def registered() -> tuple[Sign, ...]:
    """Every sign declared so far, in declaration order."""
    return tuple(_REGISTRY.values())
