"""What a rule is: an id from the catalogue, its doc, and ``check(facts)``.

A rule module is named by its id (``rules/gpu/contention.py`` is
``gpu.contention``). Its docstring is its documentation, in four fixed
sections (What it means / Why it matters / Evidence / Fix), shown by
``nccl-doctor explain ID``. It defines ``RULE = Rule(...)`` and
``check(facts) -> Iterable[Finding]``, building findings with
:meth:`Rule.finding` so the id, title and default severity stay in one place.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable, Sequence
from dataclasses import dataclass
from typing import TypeVar

from nccl_doctor.facts.base import Cite, Fact
from nccl_doctor.findings import Confidence, Finding, Severity, Subjects
from nccl_doctor.knowledge.workarounds import ordered

DOC_SECTIONS = ("What it means", "Why it matters", "Evidence", "Fix")

T = TypeVar("T")


def first_distinct(
    items: Iterable[T], limit: int | None = None, *, key: Callable[[T], Hashable] | None = None
) -> list[T]:
    """The first ``limit`` items (all if ``None``) with distinct ``key`` (default: the item).

    The one way rules pick the lines to cite: a set of the keys seen and a stop
    at the limit, so 40,000 copies of one error line cost one pass at most,
    never the quadratic time of a list-membership test.
    """
    out: list[T] = []
    if limit is not None and limit <= 0:
        return out
    seen: set[Hashable] = set()
    for item in items:
        k = item if key is None else key(item)
        if k in seen:
            continue
        seen.add(k)
        out.append(item)
        if limit is not None and len(out) >= limit:
            break
    return out


@dataclass(frozen=True, slots=True)
class Rule:
    """A catalogue entry: its id, a title, the default severity, what it can explain."""

    id: str
    title: str
    severity: Severity
    explains: tuple[str, ...] = ()

    def finding(
        self,
        *,
        summary: str,
        fix: Sequence[str],
        evidence: Iterable[Cite | Fact],
        severity: Severity | None = None,
        confidence: Confidence = Confidence.HIGH,
        ranks: Iterable[int] = (),
        gpus: Iterable[str] = (),
        hosts: Iterable[str] = (),
        cause: bool = True,
        explains: Sequence[str] | None = None,
        defers_to: Sequence[str] = (),
        detail: Sequence[str] = (),
        title: str | None = None,
    ) -> Finding:
        """A finding of this rule; evidence may be given as facts or citations.

        The fix steps keep their order, except that every workaround (a switch
        that masks the cause) moves after the steps that check or repair it.
        """
        cites: list[Cite] = []
        seen: set[tuple[str, int]] = set()
        for item in evidence:
            cite = item.cite if isinstance(item, Fact) else item
            if (cite.source, cite.line) not in seen:  # one line, cited once
                seen.add((cite.source, cite.line))
                cites.append(cite)
        return Finding(
            id=self.id,
            severity=severity or self.severity,
            confidence=confidence,
            title=title or self.title,
            summary=summary,
            fix=ordered(tuple(fix)),
            evidence=tuple(cites),
            subjects=Subjects(
                ranks=tuple(sorted(set(ranks))),
                gpus=tuple(dict.fromkeys(gpus)),
                hosts=tuple(sorted(set(hosts))),
            ),
            cause=cause,
            explains=tuple(self.explains if explains is None else explains),
            defers_to=tuple(defers_to),
            detail=tuple(detail),
        )


def doc_sections(doc: str) -> dict[str, str]:
    """The fixed sections of a rule docstring, by heading (missing ones absent)."""
    sections: dict[str, str] = {}
    current: str | None = None
    body: list[str] = []
    for raw in doc.splitlines():
        line = raw.strip()
        if line in DOC_SECTIONS:
            if current is not None:
                sections[current] = "\n".join(body).strip()
            current, body = line, []
        elif current is not None and not (line and set(line) == {"-"}):
            body.append(line)
    if current is not None:
        sections[current] = "\n".join(body).strip()
    return sections
