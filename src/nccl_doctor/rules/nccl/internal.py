"""NCCL failed inside itself: ncclInternalError, or a crash of NCCL code (an NCCL bug).

What it means
-------------
An internal consistency check of NCCL failed (``ncclInternalError``, result
3, ``internal error - please report this issue to the NCCL developers``), or
a process running NCCL died from memory corruption or a segfault inside
libnccl (``free(): corrupted unsorted chunks``, ``double free or
corruption``, SIGSEGV with libnccl frames). Either is most often a bug of the
NCCL release in use, or a release too old for the hardware (GB200/B200 need
NCCL 2.25.1 or later), occasionally state corrupted by an earlier error.

Why it matters
--------------
Nothing in the job's configuration fixes it; retrying fails the same way,
often only above some scale or on some topologies. Upgrading NCCL usually
does.

Evidence
--------
``ncclInternalError`` in PyTorch's NCCL error, an NCCL error chain ending in
result 3 with its WARN line, glibc heap-corruption aborts or segfaults in an
NCCL process (nccl-tests, libnccl or an NCCL function in the backtrace, the shell's
``Segmentation fault (core dumped)``); the NCCL version against
the table of releases with known crashes, and against the first release that
supports the GPU named (RTX 5090 needs 2.26.2: an older one notes
``ncclMaxSharedMem 82240 exceeds device/fn maxSharedMem 79856``). A hang on a
release with a known hang bug, where the bug's condition holds: none, or
one the evidence shows (cuMem's all-to-all deadlock of 2.19-2.20.2 bites in
an all-to-all unless the job sets ``NCCL_CUMEM_ENABLE=0``).

Fix
---
Read the WARN line before the error chain; upgrade NCCL to the newest release
(at least the minimum for the GPU generation), check that every rank runs the
same version, and report the failure to NVIDIA/nccl with the
``NCCL_DEBUG=INFO`` log if it persists on the newest release.
"""

from __future__ import annotations

from nccl_doctor.facts.base import Cite, Fact
from nccl_doctor.facts.catalogue import blames_elsewhere
from nccl_doctor.facts.failures import failures_of
from nccl_doctor.facts.last_error import last_error_lines, truncated_at_init
from nccl_doctor.facts.nccl import NcclEvent, NcclTestFailure, error_chains
from nccl_doctor.facts.run import CollectiveTimeout, NcclErrorReport
from nccl_doctor.facts.settings import env_values
from nccl_doctor.facts.store import Facts
from nccl_doctor.facts.versions import nccl_versions
from nccl_doctor.findings import Confidence, Finding, Severity
from nccl_doctor.knowledge.nccl_results import from_message
from nccl_doctor.knowledge.nccl_versions import (
    MIN_NCCL_FOR_GPU,
    KnownIssue,
    compare_versions,
    known_issues,
)
from nccl_doctor.rules.base import Rule
from nccl_doctor.rules.nccl._common import machine
from nccl_doctor.signs.common import HANG_WORDS
from nccl_doctor.signs.nccl import (
    HEAP_CORRUPTION,
    INTERNAL_ERROR,
    NCCL_LIBRARY,
    NCCL_PROCESS,
    NCCL_TESTS,
    NEW_GPUS,
    OPERATIONS,
    SEGFAULT,
    TIMED_OUT,
    VERSION_SAID,
)
from nccl_doctor.signs.net import NO_SOCKET_INTERFACE_RETOLD

RULE = Rule(
    id="nccl.internal",
    title="NCCL internal error or crash (NCCL bug)",
    severity=Severity.CRITICAL,
    explains=("launch.rank_crash", "app.hang", "host.resources"),
)


#: ncclInternalError's code
_INTERNAL = 3


def _result_code(message: str | None) -> int | None:
    """The ncclResult_t whose error string nccl-tests quoted (``'internal error - please
    report this issue to the NCCL developers'``)."""
    found = from_message(message or "")
    return found.code if found else None


def _version(facts: Facts) -> str | None:
    seen = nccl_versions(facts)
    return seen[0].version if seen else None


def _known(version: str | None, *, crash: bool = False) -> list[str]:
    """Known NCCL bugs of ``version`` this rule can blame (crashes only, for a crash)."""
    if not version:
        return []
    return [
        f"NCCL {version} has a known bug: {i.summary} (fixed in {i.fixed_in or 'a later release'})"
        for i in known_issues(version)
        if i.diagnosis_id == RULE.id
        and (
            any(word in f"{i.summary} {i.symptom}" for word in ("crash", "segfault", "corrupt"))
            if crash
            else i.affected_from is not None
        )
    ]


def _gpu_floor(facts: Facts, version: str | None) -> tuple[str, str, bool | None] | None:
    """(GPU, minimum NCCL, whether the version is too old) for a GPU named in the evidence."""
    for gpu, floor in MIN_NCCL_FOR_GPU.items():
        if facts.saw(NEW_GPUS[gpu]):
            old = None if version is None else (compare_versions(version, floor) or 0) < 0
            return gpu, floor, old
    return None


def _fix(version: str | None, floor: tuple[str, str, bool | None] | None) -> list[str]:
    steps = []
    if floor is not None:
        steps.append(
            f"Check the NCCL version (NCCL_DEBUG=VERSION): {floor[0]} needs NCCL "
            f"{floor[1]} or later"
        )
    steps += [
        "Upgrade NCCL to the newest release"
        + (f" (this run uses {version})" if version else "")
        + " on every node, and rerun",
        "Rerun with NCCL_DEBUG=INFO and read the NCCL WARN line printed before the failure",
        (
            "If it persists on the newest release, report it to NVIDIA/nccl with the INFO log, "
            "the command and the scale at which it starts"
        ),
    ]
    return steps


def _bites(facts: Facts, issue: KnownIssue) -> bool:
    """Whether a known bug's condition holds here: it has none, or it is a setting the job
    leaves on and an operation the evidence names (cuMem's all-to-all deadlock: unless
    NCCL_CUMEM_ENABLE=0, in an alltoall)."""
    if issue.off_with is None:
        return issue.condition is None
    # the job's own setting (a command, an export, NCCL's echo), not a sentence: "works with
    # NCCL_CUMEM_ENABLE=0" is the workaround, which speaks for the bug
    name, off = issue.off_with
    if any(value == off for value, _ in env_values(facts, name, machine=True)):
        return False
    return issue.operation is None or facts.saw(OPERATIONS[issue.operation])


def _known_hang(facts: Facts, version: str | None) -> list[Finding]:
    """A hang on an NCCL release with a known hang bug: upgrade before debugging."""
    said = facts.seen(VERSION_SAID)
    if version is None and said:
        version = said[0].match["version"]
    hangs = facts.seen(HANG_WORDS) or facts.seen(TIMED_OUT, prose=False)
    if version is None or not hangs:
        return []
    # only regressions of a bounded range with no special condition: "every release
    # before X hangs when <condition>" says nothing about this job
    issues = [
        i
        for i in known_issues(version)
        if "hang" in f"{i.summary} {i.symptom}" and i.affected_from is not None and _bites(facts, i)
    ]
    if not issues:
        return []
    issue = issues[0]
    fixed = f", fixed in {issue.fixed_in}" if issue.fixed_in else ""
    workaround = [f"Until then: {issue.workaround}"] if issue.workaround else []
    # the collective that timed out is the bug's own operation, on the release NCCL itself
    # printed: the bug is the likeliest reading of this hang, not a note beside it
    op = (issue.operation or "").upper()
    stalled = [
        t
        for t in facts.of(CollectiveTimeout)
        if op and (t.op_type or "").upper().replace("_", "").startswith(op)
    ]
    own = bool(stalled) and _version(facts) == version
    where = f"; the collective that timed out is one ({stalled[0].op_type})" if own else ""
    return [
        RULE.finding(
            summary=f"The job hangs on NCCL {version}, a release with a known hang bug: "
            f"{issue.summary}{fixed}{where}",
            fix=[
                f"Upgrade NCCL past {version} (to {issue.fixed_in} or later)"
                if issue.fixed_in
                else f"Upgrade NCCL past {version}",
                *workaround,
                "If the hang remains, find the stuck rank (py-spy dump, NCCL_DEBUG=INFO)",
            ],
            evidence=[*(h.cite for h in said[:1]), *(t.cite for t in stalled[:1]), hangs[0].cite],
            severity=Severity.CRITICAL if own else Severity.WARNING,
            confidence=Confidence.MEDIUM,
            detail=[f"{issue.id}: {issue.symptom} ({issue.source})"],
        )
    ]


def check(facts: Facts) -> list[Finding]:
    """Fire on ncclInternalError, crashes inside NCCL processes, hangs on buggy releases.

    An internal error whose WARN (or ``Last error:``) the catalogue reads as another cause's
    message (:func:`~nccl_doctor.facts.catalogue.blames_elsewhere`) is not claimed.
    """
    found = _check(facts)
    version = _version(facts)
    if found is None:
        return _known_hang(facts, version) or _too_old(facts, version)
    return found or _quoted(facts) or _known_hang(facts, version) or _too_old(facts, version)


def _too_old(facts: Facts, version: str | None) -> list[Finding]:
    """The job's NCCL predates its GPU: the release has no kernels fitted to it.

    Critical beside a failure, a hang, or NCCL's own note that its kernels need more
    shared memory than the GPU offers; a warning otherwise (nothing ran yet to fail).
    """
    said = version is None
    version = version or _said_version(facts)
    floor = _gpu_floor(facts, version)
    if floor is None or floor[2] is not True or version is None:
        return []
    gpu, least, _ = floor
    smem = [e for e in facts.of(NcclEvent) if e.event == "shared-mem-exceeds"]
    failed = (
        bool(smem)
        or bool(failures_of(facts))
        or bool(facts.of(NcclTestFailure))
        or bool(facts.seen(HANG_WORDS))
    )
    detail = dict(smem[0].detail) if smem else {}
    kernels = (
        f"; its kernels ask {detail['need']} bytes of shared memory, the GPU allows {detail['max']}"
        if detail
        else ""
    )
    gpus = [h.cite for h in facts.seen(NEW_GPUS[gpu])][:1]
    versions = [v.cite for v in nccl_versions(facts)][:1] or [
        h.cite for h in facts.seen(VERSION_SAID) if h.prose
    ][:1]
    return [
        RULE.finding(
            summary=f"The job runs NCCL {version}{' (as the report says)' if said else ''} on "
            f"{gpu} GPUs, which need NCCL {least} or later{kernels}: this release predates the "
            "GPU and its kernels do not fit it.",
            fix=_fix(version, floor),
            evidence=[*(e.cite for e in smem[:1]), *versions, *gpus],
            severity=Severity.CRITICAL if failed else Severity.WARNING,
            confidence=Confidence.HIGH if smem else (Confidence.LOW if said else Confidence.MEDIUM),
        )
    ]


def _said_version(facts: Facts) -> str | None:
    """The one NCCL release a person's words name (``NCCL_DEBUG=VERSION reports NCCL 2.21.5``),
    or ``None`` where they name none or several (an upgrade from one to another)."""
    named = {h.match["version"] for h in facts.every(VERSION_SAID) if h.prose}
    return next(iter(named)) if len(named) == 1 else None


def _quoted(facts: Facts) -> list[Finding]:
    """Only words carry it (a title quoting nccl-tests or torch): still NCCL's internal error."""
    hits = facts.seen(INTERNAL_ERROR)
    if not hits or any(blames_elsewhere(line, RULE.id) for line in last_error_lines(facts)):
        return []
    # the bootstrap's "no socket interface found", retold: the interface setting's error
    if facts.told(NO_SOCKET_INTERFACE_RETOLD):
        return []
    version = _version(facts) or next((h.match["version"] for h in facts.seen(VERSION_SAID)), None)
    v218 = version is not None and version.startswith("2.18.")
    note = (
        "; NCCL 2.18 reports network and peer failures as internal errors, so check the "
        "network first"
        if v218
        else ""
    )
    return [
        RULE.finding(
            summary="NCCL reported an internal error ('internal error - please report this "
            "issue to the NCCL developers')" + (f" on NCCL {version}" if version else "") + note,
            fix=_fix(version, _gpu_floor(facts, version)),
            evidence=[hits[0].cite],
            confidence=Confidence.LOW,
        )
    ]


def _check(facts: Facts) -> list[Finding] | None:
    """The internal error's finding; ``None`` where its message is another cause's."""
    version = _version(facts)
    floor = _gpu_floor(facts, version)
    known = _known(version)
    reports = [r for r in facts.of(NcclErrorReport) if r.reports("ncclInternalError")]
    chains = [c for c in error_chains(facts) if c.result_code == 3]
    tests = [t for t in facts.of(NcclTestFailure) if _result_code(t.message) == _INTERNAL]
    if reports or chains or tests:
        warn = next((c.warn_message for c in chains if c.warn_message), None)
        last = next((r.last_error[0] for r in reports if r.last_error), None)
        last = last or next(iter(last_error_lines(facts)), None)
        why = warn or last
        if why and (blames_elsewhere(why, RULE.id) or truncated_at_init(facts)):
            # NCCL returns ncclInternalError for what its source shows is the environment
            # (a malformed topology file, an interface that matched nothing): the catalogue's
            # reading of that message names the causes, and the differential weighs them
            return None
        items: list[Cite | Fact] = [*reports[:1], *chains[:2], *tests[:1]]
        v218 = version is not None and version.startswith("2.18.")
        note = (
            "; NCCL 2.18 reports network and peer failures as internal errors, so check the "
            "network and the other ranks first"
            if v218
            else ""
        )
        return [
            RULE.finding(
                summary="NCCL failed an internal check (ncclInternalError)"
                + (f": '{why.strip()[:140]}'" if why else "")
                + (f"; NCCL {version}" if version else "")
                + (f"; {known[0]}" if known else "")
                + note,
                fix=_fix(version, floor),
                evidence=items,
                confidence=Confidence.LOW
                if v218 or not why
                else (Confidence.HIGH if known else Confidence.MEDIUM),
                ranks=[f.rank for f in items if isinstance(f, Fact) and f.rank is not None],
                detail=known,
            )
        ]
    crash = list(machine(facts, HEAP_CORRUPTION)) or list(machine(facts, SEGFAULT))
    if not crash:
        return []
    in_nccl = facts.seen(NCCL_PROCESS)
    if not in_nccl:
        return []
    heap = bool(machine(facts, HEAP_CORRUPTION))
    frames = machine(facts, NCCL_LIBRARY)
    known = _known(version, crash=True)
    kind = "heap corruption" if heap else "a segfault"
    text = crash[0].said.text.strip()[:80]
    too_old = ""
    if floor is not None and floor[2]:
        too_old = f"; NCCL {version} predates {floor[0]} support ({floor[1]})"
    elif floor is not None and floor[2] is None:
        too_old = f" on {floor[0]}, which needs NCCL {floor[1]} or later"
    ver = f" {version}" if version else ""
    return [
        RULE.finding(
            summary=f"A process running NCCL{ver} died from {kind} ('{text}'){too_old}: a bug of "
            "the NCCL release in use, not of the job's settings",
            fix=_fix(version, floor),
            evidence=[crash[0].cite, *[h.cite for h in (frames or in_nccl)[:1]]],
            confidence=Confidence.MEDIUM
            if known or frames or (floor and floor[2]) or (heap and facts.saw(NCCL_TESTS))
            else Confidence.LOW,
            hosts=[],
            detail=known,
        )
    ]
