"""The differential: what an expert ranks when no rule has decisive evidence.

For each failure's symptom class (:mod:`.symptoms`) a prior over catalogue
ids (:mod:`.priors`) is multiplied by the shifts the discriminating facts
allow (:mod:`.context`); the ids are ranked, each with the reasons for and
against, and the one check that would tell it apart (:mod:`.checks`).
Hypotheses are never findings: they carry no severity and never make a
report critical. Ids a rule already reported are left out.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from nccl_doctor.differential.checks import NEXT_CHECK
from nccl_doctor.differential.context import SHIFTS, Context, context_of, shifted
from nccl_doctor.differential.priors import PRIORS
from nccl_doctor.differential.symptoms import Symptom, symptoms_of
from nccl_doctor.facts.base import Cite, Fact
from nccl_doctor.facts.store import Facts, is_prose
from nccl_doctor.facts.text import TextLine

#: Unclaimed lines looked up in the catalogue: those that say something failed, the first few.
_ERRORISH = re.compile(r"(?i)error|fail|warn|abort|timed? ?out|refused|killed|denied|xid|unable")
_MAX_LINES = 300
#: How many hypotheses a report shows.
SHOWN = 4
#: A shift this strong brings an id in even when the class's prior does not name it.
_STRONG = 5.0
_ENTRY_WEIGHT = 0.05
#: Classes that only wrap a more specific one, when the evidence shows it too.
_WRAPPERS = {"nccl_unhandled_cuda": ("cuda_unknown", "gpu_oom")}


@dataclass(frozen=True, slots=True)
class Hypothesis:
    """One ranked candidate cause: how likely, why, why not, and what to check."""

    id: str
    probability: float
    symptom: str
    for_: tuple[str, ...]
    against: tuple[str, ...]
    check: str
    tells: str
    cite: Cite


#: How much more likely an id is when the catalogued message itself points at it.
_HINTED = 3.0


def _candidates(symptom: Symptom, ctx: Context) -> dict[str, tuple[float, str]]:
    weights = {p.id: (p.weight, p.why) for p in PRIORS[symptom.cls]}
    top = max((w for w, _ in weights.values()), default=_ENTRY_WEIGHT)
    for rule_id in symptom.hints:
        why = f"the message is {symptom.signature} ({symptom.where}), which points at it"
        weight = weights[rule_id][0] if rule_id in weights else top / _HINTED
        weights[rule_id] = (weight * _HINTED, why)
    for shift in SHIFTS:
        if shift.factor >= _STRONG and shift.id not in weights and shift.applies(ctx):
            weights[shift.id] = (_ENTRY_WEIGHT, shift.why)
    return weights


def rank(symptom: Symptom, ctx: Context, known: Iterable[str] = ()) -> list[Hypothesis]:
    """The hypotheses for one symptom, most likely first, without the ``known`` ids."""
    scored = []
    for rule_id, (weight, why) in _candidates(symptom, ctx).items():
        factor, pro, con = shifted(ctx, rule_id)
        scored.append((weight * factor, rule_id, why, pro, con))
    total = sum(s[0] for s in scored) or 1.0
    skip = set(known)
    out = []
    for score, rule_id, why, pro, con in sorted(scored, key=lambda s: (-s[0], s[1])):
        if rule_id in skip:
            continue
        command, tells = NEXT_CHECK.get(rule_id, ("", ""))
        out.append(
            Hypothesis(
                id=rule_id,
                probability=round(score / total, 2),
                symptom=symptom.label,
                for_=(why, *pro),
                against=tuple(con),
                check=command,
                tells=tells,
                cite=symptom.cite,
            )
        )
    return out


def _error_lines(facts: Facts) -> tuple[Fact, ...]:
    """Machine-output lines no parser claimed that say something failed (a bounded number)."""
    out: list[Fact] = []
    for line in facts.of(TextLine):
        if _ERRORISH.search(line.text) and not is_prose(line.text):
            out.append(line)
            if len(out) >= _MAX_LINES:
                break
    return tuple(out)


def differential(
    facts: Facts, failures: tuple[Fact, ...], known: Iterable[str] = ()
) -> tuple[Hypothesis, ...]:
    """The ranked hypotheses for the first failure's symptom class (empty without a failure)."""
    ctx = context_of(facts)
    symptoms = symptoms_of(failures, ctx.hang_said, _error_lines(facts))
    if not symptoms:
        return ()
    lead = symptoms[0]
    if lead.cls in _WRAPPERS:  # NCCL's "unhandled CUDA error" wraps the CUDA error it names
        lead = next((s for s in symptoms if s.cls in _WRAPPERS[lead.cls]), lead)
    return tuple(rank(lead, ctx, known)[:SHOWN])
