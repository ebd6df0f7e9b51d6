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
from nccl_doctor.differential.context import Context, context_of
from nccl_doctor.differential.phases import WHERE
from nccl_doctor.differential.priors import PRIORS
from nccl_doctor.differential.prose import prose_symptom
from nccl_doctor.differential.shifts import SHIFTS, shifted
from nccl_doctor.differential.symptoms import (
    ROUTINE_STOPS,
    SAID,
    TERMINATED,
    Symptom,
    symptoms_of,
)
from nccl_doctor.facts.bandwidth import network_shortfall
from nccl_doctor.facts.base import Cite, Fact
from nccl_doctor.facts.catalogue import message_of
from nccl_doctor.facts.failures import DUMP_NOTICES
from nccl_doctor.facts.gpu import SmiError
from nccl_doctor.facts.host import KernelGpuMessage
from nccl_doctor.facts.last_error import last_error_lines
from nccl_doctor.facts.nccl import NcclTestFailure
from nccl_doctor.facts.notices import notices_of
from nccl_doctor.facts.run import DistributedError, PythonTraceback
from nccl_doctor.facts.store import Facts, is_prose
from nccl_doctor.facts.text import TextLine
from nccl_doctor.facts.told import told_over
from nccl_doctor.knowledge.cuda_errors import CUDA_CLASSES
from nccl_doctor.knowledge.signatures import by_id

#: Unclaimed lines looked up in the catalogue: those that say something failed, the first few.
_ERRORISH = re.compile(
    r"(?i)error|fail|warn|abort|timed? ?out|refused|killed|denied|xid|unable"
    r"|fault|core dumped|signal"  # the shell's and the C library's lines for a fatal signal
    r"|blocked for more than"  # the kernel's hung-task warning (INFO: task ... blocked ...)
    # words of messages that end a call without saying "error" (NCCL's "Could not find NET
    # with id 0", "... exceeds device/fn maxSharedMem ..."): the catalogue decides
    r"|could not|cannot|not found|no such|exceeds|invalid|mismatch|not supported"
    r"|undefined symbol"  # the dynamic loader: a library older or other than the caller needs
    r"|\bwrong\b"  # NCCL's refusals that say no error: "socketFinalizeAccept: wrong type 3 != 4"
    # the C library's texts that say no error word ("Name or service not known", "No route to
    # host", "Network is unreachable", "Connection reset by peer", "No space left on device")
    r"|not known|no route|unreachable|reset by peer|broken pipe|no space left|too many open"
    r"|got completion"  # an RDMA completion in error, printed as its status name (IBV_WC_...)
    r"|exception"  # a binding's exception quoting its library's status (JUCX's UcxException)
    r"|deadline.?exceeded"  # gRPC's and absl's timeout status (XLA's coordination service)
    r"|\bdied\b|\bdead\b|\bterminated\b"  # a supervisor's line for a process that exited
    r"|non-zero status|NULL value"  # NVSHMEM's error macros: a call that failed, or gave nothing
    r"|skipping transport"  # NVSHMEM's word for a transport it cannot start (GPUDirect missing)
    r"|no available|do not agree"  # vLLM's stalled message queue, its failed P2P test
    # SGLang's subprocess monitor, its ports, its decode server's health checks of a prefill one
    r"|\bcrashed\b|already in use|not available|lost connection"
    # DCGM's health reports that say no error word (dcgm_errors.h): a retired page, a row
    # remap, a link down or fewer up than expected, a violation, a width below the minimum
    r"|retire|remap|currently down|is down\b|violation|below the minimum|corrupt|uncontained"
    r"|links are up out of|fabric state"
)
_MAX_LINES = 300
#: How many hypotheses a report shows.
SHOWN = 4
#: A shift this strong brings an id in even when the class's prior does not name it.
STRONG = 5.0
_ENTRY_WEIGHT = 0.05
#: An id a strong shift brings in starts at this share of the class's top prior.
_ENTRY_SHARE = 0.2
#: Classes that only wrap a more specific one, when the evidence shows it too.
#: NCCL's ncclUnhandledCudaError carries whichever CUDA error it met: that error's class says
#: more (an unknown error, an out-of-memory, a device-side assertion, a fault).
_WRAPPERS = {"nccl_unhandled_cuda": frozenset({"gpu_oom", *CUDA_CLASSES})}


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


#: How much more likely an id is when the catalogued message itself points at it: the ids a
#: message's row names come from what the library's source does where it prints it, which
#: says more than the class's prior and a setting's shift (NCCL's "socketStartConnect:
#: Connect to ... failed" in a container is a connection that failed, not /dev/shm). The
#: development corpora gain from 3 to 4.5-6 and lose one at 10.
_HINTED = 6.0
#: Each later id a row of the generic class names weighs this much of the one before it.
_ROW_ORDER = 0.9


def _where(symptom: Symptom, ctx: Context) -> str | None:
    """Where the message comes from: in the release the evidence names, where it names one."""
    sig = by_id().get(symptom.signature) if symptom.signature else None
    return sig.location(ctx.release(sig.library)) if sig is not None else symptom.where


def _candidates(symptom: Symptom, ctx: Context) -> dict[str, tuple[float, str]]:
    weights = {p.id: (p.weight, p.why) for p in PRIORS[symptom.cls]}
    top = max((w for w, _ in weights.values()), default=_ENTRY_WEIGHT)
    sig = by_id().get(symptom.signature) if symptom.signature else None
    said = f": {sig.note}" if sig is not None and sig.note else ", which points at it"
    for place, rule_id in enumerate(symptom.hints):
        why = f"the message is {symptom.signature} ({_where(symptom, ctx)}){said}"
        if symptom.cls == "failure":
            # the generic class's prior knows nothing of this message: each id its row names
            # weighs as the class's likeliest one would, in the row's order
            weight = max(weights[rule_id][0] if rule_id in weights else 0.0, top)
            weight *= _ROW_ORDER**place
        else:  # an id the class's prior lacks enters at the top, hinted
            weight = weights[rule_id][0] if rule_id in weights else top / _HINTED
        weights[rule_id] = (weight * _HINTED, why)
    for shift in SHIFTS:
        if shift.factor >= STRONG and shift.id not in weights and shift.holds(ctx, symptom.cls):
            weights[shift.id] = (top * _ENTRY_SHARE, shift.why)
    return weights


def rank(symptom: Symptom, ctx: Context, known: Iterable[str] = ()) -> list[Hypothesis]:
    """The hypotheses for one symptom, most likely first, without the ``known`` ids."""
    scored = []
    for rule_id, (weight, why) in _candidates(symptom, ctx).items():
        factor, pro, con = shifted(ctx, rule_id, symptom.cls)
        if symptom.cls in WHERE:  # a phase: the frame that shows where it failed
            pro = [f"it failed in {symptom.signature}, {WHERE[symptom.cls]}", *pro]
        elif symptom.cls == "slow_network" and symptom.where:  # the measurement itself
            pro = [symptom.where, *pro]
        pro = [p for p in pro if p != why]  # a strong shift that brought the id in says it once
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


def _quotes_as_failing(text: str) -> bool:
    """Whether a sentence that holds a catalogued message says it happens: not denied ("we no
    longer see Too many open files"), not over ("No route to host is gone since ..."), the
    same checks as the reporter's other words (:mod:`.prose`)."""
    sig = message_of(text)
    found = sig.compiled().search(text) if sig is not None else None
    found = found or _ERRORISH.search(text)  # (a message the catalogue does not hold)
    return found is None or not told_over(text, found.start(), found.end())


def _error_lines(facts: Facts) -> tuple[Fact, ...]:
    """Lines no parser claimed that say something failed (a bounded number).

    Machine output first; then the node's own driver lines that a parser
    typed but that are no rank's failure (nvidia-smi's errors, NVRM's kernel
    lines: ``RmInitAdapter failed``, ``NVIDIA-SMI has failed because it
    couldn't communicate with the NVIDIA driver``), each read as the message
    it quotes; then the reporter's sentences, which often quote the message
    itself (``it fails with error while loading shared libraries:
    libnccl.so.2``): a catalogued message in a sentence is still that
    message, weighed after every line of machine output, unless the sentence
    denies it or says it is over (:func:`_quotes_as_failing`).
    """
    machine: list[Fact] = []
    quoted: list[Fact] = []
    for line in facts.of(TextLine):
        if _ERRORISH.search(line.text):
            if not is_prose(line.text):
                machine.append(line)
            elif _quotes_as_failing(line.text):
                quoted.append(line)
            if len(machine) + len(quoted) >= _MAX_LINES:
                break
    node = [*facts.of(SmiError), *facts.of(KernelGpuMessage)][:_MAX_LINES]
    return (*machine, *node, *quoted)


def _dumped(facts: Facts) -> Symptom | None:
    """A stall the job's own output shows: PyTorch dumped its flight recorder, and no failure
    came with it (:data:`~nccl_doctor.facts.failures.DUMP_NOTICES`).

    Someone asked for the state of the job's collectives: a watchdog or a peer
    at a timeout this evidence does not hold, or a person (or ``nccl-doctor
    run``'s pre-mortem) while it waits. Either way the job stalls in, or behind,
    a collective: the silent hang's causes.
    """
    dump = next((d for d in facts.of(DistributedError) if d.category in DUMP_NOTICES), None)
    if dump is None:
        return None
    return Symptom(
        "hang",
        dump.cite,
        dump.rank,
        signature="ProcessGroupNCCL preparing to dump debug info",
        where="torch ProcessGroupNCCL::dumpDebuggingInfo",
        named="the job stalls with no error: PyTorch dumped its flight recorder (a watchdog "
        "or a person asked for the state of its collectives)",
    )


def lead_symptom(facts: Facts, failures: tuple[Fact, ...]) -> Symptom | None:
    """The symptom the differential ranks causes for: the first failure's, or the evidence's."""
    # nccl-tests' own failure lines are failures too: the catalogue reads their result
    tests = tuple(facts.of(NcclTestFailure))
    symptoms = symptoms_of(
        (*failures, *tests),
        prose_symptom(facts),
        _error_lines(facts),
        facts.of(PythonTraceback),
        tuple(last_error_lines(facts)),
    )
    short = network_shortfall(facts)
    if short is not None and (not symptoms or symptoms[0].cls == "slow"):
        # measured against the ports, it says more than a reporter's "slow"
        return Symptom("slow_network", short.cite, where=short.measured)
    stall = _dumped(facts)
    if stall is not None and (not symptoms or symptoms[0].signature == SAID):
        return stall  # machine output: it outranks the reporter's words
    if not symptoms:
        return None
    lead = symptoms[0]
    if lead.cls == TERMINATED and any(n.signature in ROUTINE_STOPS for n in notices_of(facts)):
        return None  # the scheduler says why it stopped the job, and that it was routine
    if lead.cls in _WRAPPERS:  # NCCL's "unhandled CUDA error" wraps the CUDA error it names
        lead = next((s for s in symptoms if s.cls in _WRAPPERS[lead.cls]), lead)
    return lead


def differential(
    facts: Facts,
    failures: tuple[Fact, ...],
    known: Iterable[str] = (),
    confirmed: str | None = None,
) -> tuple[Hypothesis, ...]:
    """The ranked hypotheses for the first failure's symptom class (empty without a failure).

    ``confirmed`` is the id a rule found decisive evidence for: the
    hypotheses are then its alternatives, only where it is itself one of the
    symptom's candidates (a device-side assertion has no alternatives among
    the causes of the NCCL error that wraps it).
    """
    lead = lead_symptom(facts, failures)
    if lead is None:
        return ()
    ctx = context_of(facts)
    if confirmed is not None and confirmed not in _candidates(lead, ctx):
        return ()
    return tuple(rank(lead, ctx, known)[:SHOWN])
