"""A setting someone says made the job work, or did not help, and what it points at.

"Works with ``NCCL_P2P_DISABLE=1``", "setting ``NCCL_IB_DISABLE=1`` fixed
it", "solved by ``NCCL_SOCKET_IFNAME=eth0``": a switch that changed the
outcome names the part of NCCL it steers (:func:`nccl_doctor.knowledge.topics.variable_topics`:
P2P, shared memory, InfiniBand, sockets...), and that part is where the
cause is, whether the switch masks it (``knowledge.workarounds``) or sets it
right. One sign reads those sentences for every reader (the P2P rule, the
settings rule, the differential); a sentence that negates or doubts (``did
not help``, ``still hangs``, ``works, but the first allreduce hangs``) is not
one.

The converse is read too: "tried ``NCCL_P2P_DISABLE=1``, same error", "even
with ``NCCL_IB_DISABLE=1`` it hangs". A switch that turns a path off and
leaves the failure as it was says the cause is not on that path
(:func:`settings_that_did_not_help`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from nccl_doctor.facts.base import Cite
from nccl_doctor.facts.signs import sign
from nccl_doctor.facts.store import Facts, Hit, Said, unasserted
from nccl_doctor.facts.text import CJK
from nccl_doctor.facts.told import sentence_of
from nccl_doctor.knowledge.topics import variable_topics
from nccl_doctor.signs.common import NAME_START
from nccl_doctor.signs.languages import WORKED_OTHER

_NAME = r"(?:TORCH_)?(?:NCCL_|GLOO_)[A-Z0-9_]{2,40}"
#: A value, taken whole by the look-ahead and back-reference (so a long run of digits is not
#: split again for every gap the search tries after it).
_VALUE = r"(?=(?P<{0}>[\^A-Za-z0-9_.,:+-]{{1,40}}))(?P={0})"
#: A character between the setting and its outcome, in one sentence: not a sentence's end (a
#: dot in a path or a version, "docs.nvidia.com", stays).
_GAP = r"(?:[^.!?\n]|\.(?!\s))"
#: Where a word starts: a word boundary, or right after a Chinese, Japanese or Korean character
#: (whose words have no boundary between them: "以后还是卡住", "就能正常训练").
_CJK_EDGE = rf"(?:\b|(?<=[{CJK}]))"
_WORKED = (
    # (not "nothing helps", "nothing works": the outcome denied)
    r"(?:(?<!nothing )(?=[wfshrdnua就解可正跑能])(?:work(?:s|ed)? ?around|works?\b|worked"
    r"|fix(?:es|ed)?\b"
    r"|solv(?:es|ed)\b"
    # Chinese: "then it was fine", "solved", "it works", "back to normal", "it runs"
    # (and "then it went straight through", "it started running")
    r"|就(?:直接)?(?:好了|行了|可以了|正常了|能跑了|跑通了|通了)|解决了|可以(?:了|跑了|正常)|正常了"
    r"|跑通了|能跑了|跑起来了"
    # "can run to the end normally", "runs through normally"
    r"|能正常(?:跑|训练|运行|结束)|正常跑完"
    r"|avoid(?:s|ed)? (?:it|the (?:error|hang|crash|problem|issue))\b"
    # (not a command's run: "docker run -e NCCL_...", "run --gpus")
    r"|help(?:s|ed)?\b|resolv(?:es|ed)\b|(?<![.\w])(?<!docker )(?<!podman )runs?\b(?!\s?-)"
    r"|fine\b(?!-)|succeed\w{0,4}"
    r"|start(?:s|ed)?\b(?! (?:with|from|at|to)\b)"
    r"|did the trick|no (?:longer|more) hang"
    # it failed until the setting was made ("fails with IB errors until we set ...=3")
    r"|until (?:we |I |you |they )?(?:set|export|add|specif|chang|pass)\w*)"
    # Japanese, Korean, Russian and other languages (signs.languages)
    rf"|{WORKED_OTHER})"
)

#: The job gets through, said after the setting ("with that it actually trains", "the run
#: completes", "the test passes", "it goes through"; before it, "passed NCCL_IB_DISABLE=1 to
#: the container" is how it was given)
_THROUGH = r"(?:trains|complet(?:es|ed)|pass(?:es|ed)|(?:goes|went) through)\b"
SETTING_WORKED = sign(
    "settings.worked",
    # (a Chinese verb follows a Chinese word with no word boundary between: "都能正常跑完")
    rf"{NAME_START}(?P<name>{_NAME})\s{{0,3}}=\s{{0,3}}{_VALUE.format('value')}{_GAP}{{0,100}}?"
    rf"{_CJK_EDGE}(?:{_WORKED}|{_THROUGH})"
    rf"|\b{_WORKED}{_GAP}{{0,80}}?{NAME_START}(?P<name2>{_NAME})\s{{0,3}}=\s{{0,3}}"
    rf"{_VALUE.format('value2')}",
    "someone says the job works with an NCCL/gloo setting (NCCL_P2P_DISABLE=1 fixed it)",
)
#: Another person's case, or advice to try ("we had a similar issue, NCCL_P2P_LEVEL=NVL fixed
#: it", "you can try NCCL_IB_DISABLE=1", Chinese "我遇到过类似的 ... 就好了，可以试试"): in a
#: thread, a setting that worked for someone else is no outcome of the reporter's job
OTHERS_CASE = sign(
    "settings.others_case",
    r"\b(?:I|we) (?:had|have had|met|ran into|faced|hit|saw) (?:a |the )?(?:very )?"
    r"(?:similar|same)\b|\byou (?:can|could|might|may|should) (?:try|set)\b"
    r"|我(?:也|之前|以前)?遇到过(?:类似|同样|一样)|可以试试|试试看|你可以试",
    "a person telling of their own similar case, or advising the reporter to try something",
)
NEGATED = sign(
    "settings.negated",
    # ("n't" ends a word: "didn't", "doesn't" have no word boundary before it)
    r"\b(?:not|never|still|even|neither|nor|without success)\b|n't\b",
    "a line that negates or doubts what it says (a workaround that did NOT work)",
)
#: Right after the hit, in its sentence: it worked *but* still fails ("the bootstrap works,
#: but the first allreduce hangs"); a contrast about speed ("but it is slower") keeps it.
_CONTRAST = re.compile(
    r"^[^.;]{0,20}\bbut\b[^.;]{0,60}\b(?:hangs?|hung|fails?|failed|crash\w{0,4}|errors?"
    r"|stuck|freez\w{0,4}|not (?:always|every time|reliably)|only (?:sometimes|once))\b",
    re.IGNORECASE,
)
#: Where the clause that tells a setting's outcome ends and the reporter goes on about
#: something else (", but I'd rather not...", "because I thought..."): a negation past it is
#: not about the setting (a failure after "but" is :data:`_CONTRAST`'s).
_CLAUSE_BREAK = re.compile(r",?\s(?:but|because|although|though|whereas)\s", re.IGNORECASE)


#: Between the setting and its outcome: the outcome is another machine's ("NCCL_P2P_DISABLE=1
#: ..., same as on the old machine where everything was fine"), not this one's with it.
_ELSEWHERE = re.compile(
    r"\b(?:old|previous|former|other|last|older) (?:machine|box|server|cluster|node|system"
    r"|setup|hardware)s?\b|\bwhere everything\b",
    re.IGNORECASE,
)
#: Right after the setting: the program's own advice, not an outcome ("unhandled system error
#: (run with NCCL_DEBUG=INFO for details)": PyTorch's and CuPy's NCCL errors end so).
_FOR_DETAILS = re.compile(r"^\s{0,3}for (?:more )?(?:details|info(?:rmation)?)\b", re.IGNORECASE)


#: The topics of a variable that only says how much is logged (NCCL_DEBUG, NCCL_DEBUG_SUBSYS).
_LOGGING = frozenset({"debug", "ncclvar"})


@dataclass(frozen=True, slots=True)
class SaidSetting:
    """A setting (``name=value``) a line says made the job work, or did not help; what it
    steers."""

    name: str
    value: str
    topics: tuple[str, ...]
    cite: Cite
    #: whether a person wrote it (a sentence), not a program's output or a command line
    prose: bool


def _said(hit: Hit) -> SaidSetting:
    """The setting a hit of either sign names (each spells it before or after its words)."""
    name = (hit.match["name"] or hit.match["name2"] or "").upper()
    value = (hit.match["value"] or hit.match["value2"] or "").strip(".,:;")
    return SaidSetting(name, value, variable_topics(name), hit.cite, hit.prose)


def settings_that_worked(facts: Facts) -> tuple[SaidSetting, ...]:
    """Every setting a line says made the job work, leaving out lines that negate it or tell
    another person's case."""
    hits = facts.seen(SETTING_WORKED)
    if not hits:
        return ()
    others = facts.lines_of(OTHERS_CASE)
    # a negation or doubt in the setting's own sentence (a line may hold a paragraph: "X=1,
    # everything works. With Y=1 alone it still hangs.")
    doubts: dict[Said, list[int]] = {}
    for neg in facts.seen(NEGATED):
        doubts.setdefault(neg.said, []).append(neg.match.start())
    out: list[SaidSetting] = []
    for hit in hits:
        start, end = sentence_of(hit.cite.text, hit.match)
        # (up to the outcome's clause: "X=1 helps, and with it it trains, but I'd rather not
        # give up the bandwidth" - the reporter's reluctance after "but" is no doubt of it)
        if later := _CLAUSE_BREAK.search(hit.cite.text, hit.match.end(), end):
            end = later.start()
        if hit.said in others or any(start <= at < end for at in doubts.get(hit.said, ())):
            continue
        after = hit.cite.text[hit.match.end() :]
        if _CONTRAST.search(after) or _FOR_DETAILS.match(after) or _ELSEWHERE.search(hit.match[0]):
            continue
        # asked, planned or advised: "does NCCL_P2P_DISABLE=1 help?", "I will try X and see"
        if unasserted(hit.cite.text, hit.match):
            continue
        said = _said(hit)
        # a logging switch changes what is printed, not the path ("When I run with
        # NCCL_DEBUG=INFO, the healthy nodes say Using network IB"): no outcome of its own
        if set(said.topics) <= _LOGGING:
            continue
        out.append(said)
    return tuple(out)


#: The words around a setting that say it changed nothing: after it ("NCCL_P2P_DISABLE=1 did
#: not help", "... with the same error", "... still hangs"), or before it ("tried ... and",
#: "even with NCCL_IB_DISABLE=1", "with or without NCCL_P2P_DISABLE=1").
_NO_HELP_AFTER = (
    r"(?:did(?:n'?t| not) (?:help|work|change|fix|solve)|does(?:n'?t| not) (?:help|work|change"
    r"|fix|solve)|no (?:luck|effect|difference|change|help)\b|(?:the )?same (?:result|error"
    r"|issue|problem|behaviou?r|hang|crash)|still (?:hangs?|hung|fails?|failed|crash\w{0,4}"
    r"|stuck|freez\w{0,4}|errors?|the same|happen\w{0,4}|occur\w{0,4}|slow\w{0,3})"
    r"|not (?:help|work|solve|fix)\w{0,3}|without (?:any )?(?:success|luck|effect|change)"
    r"|to no avail|nothing (?:changed|changes|helps|helped|works|worked)"
    r"|also tried|tried (?:both|all|every)|changes? nothing|(?:makes?|made) no difference"
    # Chinese: "still the same", "still no good", "still stuck", "no use", "no effect"
    r"|还是(?:一样|不行|卡|报错|会|没用)|(?:也|都)?没(?:有)?用|无效|不管用|没(?:有)?效果)"
)
_NO_HELP_BEFORE = r"(?:even with|with or without|regardless of|no matter)"
SETTING_NO_HELP = sign(
    "settings.no_help",
    rf"{NAME_START}(?P<name>{_NAME})(?:\s{{0,3}}=\s{{0,3}}{_VALUE.format('value')})?.{{0,80}}?"
    rf"{_CJK_EDGE}{_NO_HELP_AFTER}"
    rf"|\b{_NO_HELP_BEFORE}\s(?:the |setting |exporting |`)?(?P<name2>{_NAME})"
    rf"(?:\s{{0,3}}=\s{{0,3}}{_VALUE.format('value2')})?",
    "someone says an NCCL/gloo setting changed nothing (tried NCCL_P2P_DISABLE=1, same error)",
)


def settings_that_did_not_help(facts: Facts) -> tuple[SaidSetting, ...]:
    """Every setting a sentence says left the failure as it was (``value`` empty where unsaid).

    A line that also says a setting worked is not one ("tried NCCL_P2P_DISABLE=1 and it
    works"): whichever it says, the two readings would contradict each other.
    """
    hits = [h for h in facts.seen(SETTING_NO_HELP) if h.prose]
    if not hits:
        return ()
    worked = facts.lines_of(SETTING_WORKED) - facts.lines_of(NEGATED)
    out: list[SaidSetting] = []
    for hit in hits:
        if hit.said in worked:
            continue
        out.append(_said(hit))
    return tuple(out)


#: An NCCL, torch or gloo variable a sentence names, with the value it gives if any. Upper
#: case only (the names are read case-sensitively; "nccl_debug" in a sentence is a way of
#: writing, not a setting), and not a family written with a wildcard (``NCCL_IB_*``).
SETTING_NAMED = sign(
    "settings.named",
    rf"{NAME_START}(?P<name>{_NAME})(?![A-Za-z0-9_*])(?:\s{{0,3}}=\s{{0,3}}"
    rf"{_VALUE.format('value')})?",
    "an NCCL/gloo variable a sentence names, and the value it gives",
    case=True,
)


def settings_said(facts: Facts) -> tuple[SaidSetting, ...]:
    """Every variable a person's sentence names (``value`` empty where none is given), each
    (name, value) once, whatever the sentence says of it (set, tried, asked about)."""
    out: dict[tuple[str, str], SaidSetting] = {}
    for hit in facts.seen_prose(SETTING_NAMED):
        for m in SETTING_NAMED.regex.finditer(hit.cite.text):
            name, value = m["name"], (m["value"] or "").strip(".,:;")
            if name.endswith("_"):
                continue  # a family's prefix ("the NCCL_IB_ variables")
            key = (name, value)
            if key not in out:
                out[key] = SaidSetting(name, value, variable_topics(name), hit.cite, prose=True)
    return tuple(out.values())
