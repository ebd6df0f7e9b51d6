"""Ranks or libraries run different NCCL builds, or a libnccl that does not fit the CUDA stack.

What it means
-------------
Every rank of a job must load the same NCCL release, built for the CUDA the
application uses. It goes wrong when machines have different packages (one
node with pip ``nvidia-nccl-cu12`` 2.20, another with 2.19), when a system
libnccl found through ``LD_LIBRARY_PATH``/``LD_PRELOAD`` shadows the one the
framework ships, when a second binding (vLLM's pynccl, CuPy) loads its own
libnccl, or when the installed libnccl was built for another CUDA major
version (``libnccl2 ... +cuda9.0`` under an application built with CUDA 8.0).

Why it matters
--------------
NCCL's bootstrap and connection messages change between releases: mixed
versions fail in odd places (``address with family 0``, ``internal error``,
``invalid usage``) or hang. A libnccl built for another CUDA fails at its
first CUDA call with ``unhandled cuda error``.

Evidence
--------
Different ``NCCL version`` lines across hosts or processes, or against the
version PyTorch reports; NCCL package rows next to the framework (two releases
in the listings of a job across nodes whose NCCL failed, in its own lines or
as its reporter tells it); ``libnccl``
in ``LD_LIBRARY_PATH``/``LD_PRELOAD`` (not on an nccl-tests command line: the
library nccl-tests loads is the release under test); an NCCL error raised
through pynccl;
an ``unhandled cuda error`` at init without a ``Cuda failure`` detail while the
application prints its CUDA version; a process that dies of SIGBUS or SIGSEGV right after
vLLM's binding names the libnccl file of its own it loads (a truncated download: the
loader maps the file, and touching a page past its end is a bus error).

Fix
---
Install one NCCL version everywhere (``pip install nvidia-nccl-cu12==X`` on
every node, or the same container image), built for the CUDA of the
framework. Remove stray ``libnccl`` paths from ``LD_LIBRARY_PATH``/
``LD_PRELOAD``; point vLLM at the intended library (``VLLM_NCCL_SO_PATH``).
Check with ``NCCL_DEBUG=VERSION`` on every rank, ``ldd``/``ldconfig -p | grep
nccl`` and ``dpkg -l | grep nccl``.
"""

from __future__ import annotations

from nccl_doctor.facts.base import Cite, Fact
from nccl_doctor.facts.host import EnvVar
from nccl_doctor.facts.nccl import NcclTestCommand, NcclVersion, NcclWarn
from nccl_doctor.facts.run import NcclErrorReport
from nccl_doctor.facts.span import span_of
from nccl_doctor.facts.store import Facts
from nccl_doctor.facts.versions import VLLM_BINDING, nccl_versions
from nccl_doctor.findings import Confidence, Finding, Severity
from nccl_doctor.knowledge.nccl_versions import parse_version
from nccl_doctor.rules.base import Rule
from nccl_doctor.rules.nccl._common import nccl_packages
from nccl_doctor.signs.nccl import (
    CUDA_DRIVER_VERSION,
    CUDA_FAILURE_DETAIL,
    CUDA_RUNTIME_VERSION,
    FATAL_SIGNAL,
    INSTALLED_NCCL,
    NCCL_FILE,
    PRIVATE_NCCL,
    SECOND_BINDING,
    SHM_ERROR,
    TORCH_NCCL,
    UNHANDLED_CUDA,
    VLLM_NCCL,
)
from nccl_doctor.signs.net import INIT_ERROR

RULE = Rule(
    id="nccl.version_mismatch",
    title="Mismatched NCCL versions or builds",
    severity=Severity.CRITICAL,
    explains=(
        "nccl.internal",
        "net.socket_interface",
        "launch.rank_crash",
        "app.hang",
        "nccl.shm",  # a bus error in the library file itself, not in /dev/shm
    ),
)

_FIX = [
    (
        "Print the NCCL each rank loads: NCCL_DEBUG=VERSION (or torch.cuda.nccl.version()) on "
        "every node"
    ),
    (
        "Install one NCCL version on every machine, built for the framework's CUDA (same "
        "container image, or pip install nvidia-nccl-cuXX==<version> everywhere)"
    ),
    (
        "Remove other libnccl copies from LD_LIBRARY_PATH / LD_PRELOAD; check ldconfig -p | grep "
        "nccl and dpkg -l | grep nccl"
    ),
]


def _cuda_of(code: str) -> str:
    """``8000`` -> ``8.0``, ``12020`` -> ``12.2``."""
    value = int(code)
    return f"{value // 1000}.{value % 1000 // 10}"


def _mixed(facts: Facts, failed: bool) -> list[Finding]:
    # vLLM's binding may load a libnccl of its own beside torch's on purpose (vLLM 0.4 pinned
    # 2.18): a second release there is no fault by itself (the second-binding check reads it)
    seen = [s for s in nccl_versions(facts, runtime=True) if s.where != VLLM_BINDING]
    distinct: dict[tuple[int, int, int], list[Cite]] = {}
    hosts: dict[tuple[int, int, int], set[str]] = {}
    for s in seen:
        v = parse_version(s.version)
        if v is not None:
            distinct.setdefault(v, []).append(s.cite)
            if s.host:
                hosts.setdefault(v, set()).add(s.host)
    if len(distinct) < 2:
        return []
    names = [".".join(map(str, v)) for v in distinct]
    per_host = [f"{'.'.join(map(str, v))} on {', '.join(sorted(h))}" for v, h in hosts.items()]
    across_hosts = len(hosts) >= 2 and all(
        not (hosts[a] & hosts[b]) for a in hosts for b in hosts if a != b
    )
    severity = Severity.CRITICAL if across_hosts or failed else Severity.WARNING
    return [
        RULE.finding(
            summary=f"The job loads {len(distinct)} NCCL versions ({', '.join(names)})"
            + (f": {'; '.join(per_host)}" if per_host else "")
            + "; all ranks must run the same NCCL",
            fix=_FIX,
            evidence=[cites[0] for cites in distinct.values()][:4],
            severity=severity,
            confidence=Confidence.HIGH if across_hosts else Confidence.MEDIUM,
            hosts=sorted({h for hs in hosts.values() for h in hs}),
        )
    ]


def _shadowing(facts: Facts, failed: bool) -> list[Finding]:
    # nccl-tests has no NCCL of its own: the libnccl its command line preloads is the one
    # under test (how people compare releases), not a shadow of a framework's
    tests = {(c.cite.source, c.cite.line) for c in facts.of(NcclTestCommand)}
    envs = [
        e
        for e in facts.of(EnvVar)
        if e.name in ("LD_PRELOAD", "LD_LIBRARY_PATH", "VLLM_NCCL_SO_PATH")
        and "nccl" in (e.value or "").lower()
        and (e.cite.source, e.cite.line) not in tests
    ]
    if not envs:
        return []
    e = envs[0]
    return [
        RULE.finding(
            summary=f"{e.name}={e.value} points the job at a separate libnccl, which can "
            "shadow the NCCL the framework was built with",
            fix=_FIX,
            evidence=envs[:2],
            severity=Severity.CRITICAL if failed else Severity.WARNING,
            confidence=Confidence.MEDIUM if failed else Confidence.LOW,
        )
    ]


def _second_binding(facts: Facts, reports: list[NcclErrorReport]) -> list[Finding]:
    second = list(facts.seen(SECOND_BINDING, prose=False))
    packages = nccl_packages(facts)
    if not second or not (packages or facts.saw(VLLM_NCCL)):
        return []
    bad = [r for r in reports if r.result_name in _SUSPECT]
    if not bad or any(w.cuda_error_code is not None for w in facts.of(NcclWarn)):
        return []
    # (PyTorch's own report, with its source position, before a relay of it)
    bad.sort(key=lambda r: (r.result_name is None, r.torch_file is None))
    pkg = packages[0] if packages else None
    what = f" ({pkg.name} {pkg.version})" if pkg else ""
    return [
        RULE.finding(
            summary=f"{bad[0].result_name} raised through {second[0].match.group(0)}, which "
            f"loads its own libnccl{what} apart from torch's; a libnccl that does not fit this "
            "CUDA/driver stack fails like this at its first collective",
            fix=[
                (
                    "Find the library the binding loads (vLLM logs 'vLLM is using nccl==...'; "
                    "VLLM_NCCL_SO_PATH overrides it) and compare with torch.cuda.nccl.version()"
                ),
                (
                    "Use an NCCL built for the installed CUDA/driver (or build NCCL from source "
                    "against the local CUDA) and point the binding at it"
                ),
                "Rerun with NCCL_DEBUG=WARN to get NCCL's own reason",
            ],
            evidence=[bad[0], second[0].cite, *packages[:1]],
            confidence=Confidence.MEDIUM,
            ranks=[r.rank for r in bad if r.rank is not None],
        )
    ]


#: Where the pip wheel torch loads keeps its libnccl: a binding pointed there loads torch's own.
_WHEEL_NCCL = "/nvidia/nccl/lib/"


def _private_copy_crash(facts: Facts) -> list[Finding]:
    """A process died of SIGBUS/SIGSEGV after vLLM's binding named the libnccl file of its
    own it opens, with no NCCL error or shared-memory failure in between: the library file
    itself (a truncated or corrupt download, or a build for another CUDA) is what it touched."""
    loads = [h for h in facts.seen(PRIVATE_NCCL, prose=False) if _WHEEL_NCCL not in h.match["path"]]
    if not loads or facts.of(NcclWarn) or facts.saw(SHM_ERROR):
        return []
    load = loads[0].cite
    crash = next(
        (
            h.cite
            # (a shell's job line reads as words: "[1]  842586 bus error  python3 ...")
            for h in facts.seen(FATAL_SIGNAL)
            if h.cite.source == load.source and h.cite.line > load.line
        ),
        None,
    )
    if crash is None:
        return []
    path = loads[0].match["path"]
    return [
        RULE.finding(
            summary=f"The process died of a fatal signal right after vLLM's NCCL binding loaded "
            f"its own libnccl ({path}), not torch's: what it touched is the library file "
            "itself, truncated or corrupt (an interrupted download of vllm-nccl-cu12), or a "
            "build that does not fit this CUDA/driver",
            fix=[
                f"Check the file: ls -l {path}; ldd {path} (short or unreadable: confirmed)",
                (
                    "Delete it (rm -rf ~/.config/vllm/nccl) and reinstall; vLLM 0.4.1 and later "
                    "use the NCCL torch ships, or point VLLM_NCCL_SO_PATH at torch's libnccl "
                    "(site-packages/nvidia/nccl/lib/libnccl.so.2)"
                ),
            ],
            evidence=[load, crash],
            confidence=Confidence.MEDIUM,
        )
    ]


_SUSPECT = ("ncclInvalidUsage", "ncclInternalError", "ncclUnhandledCudaError", "ncclSystemError")


def _cuda_build(facts: Facts) -> list[Finding]:
    unhandled = facts.seen(UNHANDLED_CUDA)
    if not unhandled or facts.saw(CUDA_FAILURE_DETAIL):
        return []
    nccl_cuda = next((v.cuda_version for v in facts.of(NcclVersion) if v.cuda_version), None)
    app = facts.seen(CUDA_RUNTIME_VERSION, prose=False)
    driver = facts.seen(CUDA_DRIVER_VERSION, prose=False)
    if not app or not driver:
        return []
    app_cuda = _cuda_of(app[0].match["code"])
    if int(app[0].match["code"]) >= int(driver[0].match["code"]) and not nccl_cuda:
        return []
    evidence: list[Cite | Fact] = [unhandled[0].cite, app[0].cite, *[d.cite for d in driver[:1]]]
    if nccl_cuda:
        if nccl_cuda.split(".")[0] == app_cuda.split(".")[0]:
            return []
        summary = (
            f"NCCL failed at its first CUDA call (unhandled cuda error); it was built for CUDA "
            f"{nccl_cuda} but the application uses CUDA {app_cuda}"
        )
        confidence = Confidence.HIGH
    else:
        drv = f" under a CUDA {_cuda_of(driver[0].match['code'])} driver"
        summary = (
            f"NCCL failed with 'unhandled cuda error' and no CUDA error detail in an "
            f"application built with CUDA {app_cuda}{drv}: the installed libnccl is most "
            "likely built for another CUDA version"
        )
        confidence = Confidence.LOW
    return [
        RULE.finding(
            summary=summary,
            fix=[
                (
                    "List the NCCL packages: dpkg -l | grep nccl (or rpm -qa | grep nccl, "
                    "pip list | grep nccl) and check their +cudaX.Y suffix"
                ),
                (
                    f"Install the NCCL build for CUDA {app_cuda} (e.g. libnccl2=<ver>+cuda"
                    f"{app_cuda} libnccl-dev=<ver>+cuda{app_cuda}) and rebuild the application"
                ),
                "Rerun with NCCL_DEBUG=INFO to see NCCL's CUDA error",
            ],
            evidence=evidence,
            confidence=confidence,
        )
    ]


def _bundled(facts: Facts) -> list[Finding]:
    """torch reports one NCCL while another is installed: torch's own copy wins."""
    torch_hits = facts.seen(TORCH_NCCL)
    if not torch_hits:
        return []
    m = torch_hits[0].match
    torch_version = f"{m['major']}.{m['minor']}.{m['patch']}"
    others = [
        h
        for h in facts.seen(INSTALLED_NCCL)
        if h.match["version"] != torch_version and h.cite != torch_hits[0].cite
    ]
    if not others:
        return []
    system = others[0].match["version"]
    prose = torch_hits[0].prose and others[0].prose
    return [
        RULE.finding(
            summary=f"torch runs NCCL {torch_version} (its own copy, bundled or linked in) "
            f"while NCCL {system} is installed beside it: installing a system NCCL does not "
            "change what torch loads",
            fix=[
                (
                    f"To run NCCL {system}, install a torch build that ships it (the nvidia-nccl "
                    "wheel of the matching CUDA) or one linked dynamically against the system NCCL"
                ),
                (
                    "Check what a job really loads: python -c 'import torch; "
                    "print(torch.cuda.nccl.version())' and NCCL_DEBUG=VERSION"
                ),
                "Remove the unused NCCL so the two cannot be confused",
            ],
            evidence=[torch_hits[0].cite, others[0].cite],
            severity=Severity.WARNING,
            confidence=Confidence.LOW if prose else Confidence.MEDIUM,
        )
    ]


def _packages_apart(facts: Facts, failed: bool) -> list[Finding]:
    """Package listings (pip list, dpkg -l) of two NCCL releases in a job across nodes whose NCCL
    failed: each node's environment has its own, so the nodes run different NCCL."""
    found: dict[str, Cite] = {}
    for hit in facts.seen(INSTALLED_NCCL, prose=False):
        found.setdefault(hit.match["version"], hit.cite)
    if len(found) < 2 or span_of(facts).multi is not True:
        return []
    if not failed:
        return []
    names = ", ".join(found)
    return [
        RULE.finding(
            summary=f"The package listings show NCCL {names}, and the job across nodes failed in "
            "NCCL: where each node's environment holds its own, the nodes run different NCCL "
            "releases, whose ranks cannot agree on their messages",
            fix=_FIX,
            evidence=list(found.values())[:3],
            confidence=Confidence.MEDIUM,
        )
    ]


def _installed_twice(facts: Facts) -> list[Finding]:
    """Two NCCL releases on one machine: the loader takes whichever libnccl.so.2 points to."""
    found: dict[str, Cite] = {}
    cudas: dict[str, str] = {}
    for hit in facts.seen(NCCL_FILE):
        version = hit.match["v"]
        found.setdefault(version, hit.cite)
        if hit.match["cuda"]:
            cudas.setdefault(version, hit.match["cuda"])
    if len(found) < 2:
        return []
    names = [f"{v} (CUDA {cudas[v]})" if v in cudas else v for v in found]
    return [
        RULE.finding(
            summary=f"Several NCCL releases are installed: {', '.join(names)}; a process "
            "loads whichever libnccl.so.2 the loader finds first, which need not be the "
            "one that was installed for this CUDA",
            fix=[
                (
                    "See what is loaded: NCCL_DEBUG=VERSION (or `ldd` on the binary / "
                    "`ldconfig -p | grep nccl`)"
                ),
                (
                    "Remove the stray library (or fix the libnccl.so.2 link / LD_LIBRARY_PATH) so "
                    "only the release built for your CUDA is found"
                ),
            ],
            evidence=list(found.values())[:3],
            severity=Severity.WARNING,
            confidence=Confidence.MEDIUM,
        )
    ]


def check(facts: Facts) -> list[Finding]:
    """Fire on mixed NCCL versions, shadowing libraries and CUDA-mismatched builds."""
    reports = list(facts.of(NcclErrorReport))
    failed = bool(reports or facts.of(NcclWarn))
    return (
        _mixed(facts, failed)
        or _second_binding(facts, reports)
        or _private_copy_crash(facts)
        or _cuda_build(facts)
        or _shadowing(facts, failed)
        or _bundled(facts)
        # (NCCL's failure told in words counts here: the listings themselves are machine output)
        or _packages_apart(facts, failed or bool(facts.seen(INIT_ERROR)))
        or _installed_twice(facts)
    )
