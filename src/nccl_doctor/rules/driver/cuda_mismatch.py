"""The CUDA runtime needs a newer driver than the one installed.

What it means
-------------
Every CUDA runtime (the one a PyTorch wheel bundles, a toolkit, a container
image's ``/usr/local/cuda``) needs a driver at least as new as its release.
When the driver is older, CUDA refuses to start (error 35 ``CUDA driver
version is insufficient for CUDA runtime version``, PyTorch's ``The NVIDIA
driver on your system is too old``), or it tries the forward-compatibility
``cuda-compat`` libcuda, which only data-centre GPUs support, and fails with
error 804 ``forward compatibility was attempted on non supported HW``.
Within one CUDA major version a slightly newer runtime still runs (minor
version compatibility) but PTX JIT and new APIs fail (errors 222 and 36).

Why it matters
--------------
No CUDA call succeeds: ``torch.cuda.is_available()`` is ``False``, NCCL
cannot create a communicator, every rank dies at start-up. The usual
reading of "CUDA version 12.1 on both sides" is misleading: ``nvidia-smi``
prints the newest CUDA the driver supports, not what the job needs.

Evidence
--------
CUDA errors 35, 36, 222 and 804 (from torch, NCCL or ``cudaGetDeviceCount``),
``driver on your system is too old``, ``nvidia-container-cli: requirement
error: unsatisfied condition: cuda>=X``; the CUDA version PyTorch was built
with (collect_env, ``+cu121``) against the driver's (nvidia-smi ``CUDA
Version``, NCCL ``cudaDriverVersion``, the driver branch). Error 35 alone in a
container shown to have no driver at all (an NGC image's ``The
NVIDIA Driver was not detected``, no libcuda) is the runtime reaching none:
``driver.container``'s story, not this one.

Fix
---
Upgrade the host driver to at least the minimum for the runtime's CUDA
release (the CUDA release notes list it), or install a PyTorch wheel or
container image built for a CUDA the driver supports. On GeForce/RTX cards
do not use the ``cuda-compat`` forward-compatibility package.
"""

from __future__ import annotations

from nccl_doctor.facts.base import Cite, Fact
from nccl_doctor.facts.driver import parse_cuda, parse_version
from nccl_doctor.facts.nccl import NcclWarn
from nccl_doctor.facts.run import CudaError
from nccl_doctor.facts.software import SoftwareVersions
from nccl_doctor.facts.store import Facts
from nccl_doctor.findings import Confidence, Finding, Severity
from nccl_doctor.knowledge import cuda_errors
from nccl_doctor.rules.base import Rule
from nccl_doctor.rules.driver._common import (
    MAJOR_FLOOR,
    driver_cuda,
    driver_version,
    machine_hit,
    max_cuda,
    min_driver,
    runtime_cuda,
    show,
    show_cuda,
)
from nccl_doctor.signs.driver import (
    COMPAT_WORD,
    CONTAINER_CUE,
    FOUND_VERSION,
    NEED_CUDA,
    NO_DRIVER,
    PROSE_CUDA,
    PROSE_DRIVER,
    PTX_WORD,
    TOO_OLD,
)

RULE = Rule(
    id="driver.cuda_mismatch",
    title="The CUDA runtime needs a newer NVIDIA driver",
    severity=Severity.CRITICAL,
    explains=(
        "driver.container",
        "cuda.device_visibility",
        "cuda.unknown_error",
        "launch.rank_crash",
        "nccl.internal",
    ),
)

_CODES = frozenset({35, 36, 222, 804})


def _code(printed: int | None, message: str | None) -> int | None:
    """A CUDA error's number: as printed, else the enum row its message names."""
    if printed is not None:
        return printed
    known = cuda_errors.by_message(message or "")
    return known.code if known is not None else None


def _code_of(err: CudaError) -> int | None:
    code = _code(err.code, err.error)
    if code is not None:
        return code
    if (
        err.kind == "driver"
        and err.error
        and ("too old" in err.error or "insufficient" in err.error)
    ):
        return 35
    return None


def _errors(facts: Facts) -> tuple[list[Fact | Cite], set[int], bool]:
    """Failing lines, the CUDA codes they carry, whether any is machine output."""
    cites: list[Fact | Cite] = []
    codes: set[int] = set()
    for err in facts.of(CudaError):
        code = _code_of(err)
        if code in _CODES:
            cites.append(err)
            codes.add(code)
    for warn in facts.of(NcclWarn):  # NCCL's own "Cuda failure 'X'" (its enqueue, its init)
        code = _code(warn.cuda_error_code, warn.cuda_error)
        if code in _CODES:
            cites.append(warn)
            codes.add(code)
    machine = bool(cites)
    seen = {c.cite if isinstance(c, Fact) else c for c in cites}
    for hit in facts.seen(TOO_OLD):
        if hit.cite not in seen:
            seen.add(hit.cite)
            cites.append(hit.cite)
            machine = machine or machine_hit(facts, hit)
            if hit.said in facts.lines_of(NEED_CUDA):
                continue
            compat, ptx = facts.lines_of(COMPAT_WORD), facts.lines_of(PTX_WORD)
            codes.add(804 if hit.said in compat else 222 if hit.said in ptx else 35)
    return cites, codes, machine


def _versions(facts: Facts) -> tuple[list[str], list[Cite], tuple[int, int] | None]:
    """What the evidence says of the two sides, the citations, and the CUDA needed."""
    parts: list[str] = []
    cites: list[Cite] = []
    need: tuple[int, int] | None = None
    runtime = runtime_cuda(facts)
    if runtime:
        need = runtime[0]
        parts.append(f"{runtime[2]} needs a driver >= {show(min_driver(need) or (0,))}")
        cites.append(runtime[1])
    for hit in facts.seen(NEED_CUDA):
        need = parse_cuda(hit.match["cuda"])
        parts.append(f"the container requires CUDA >= {hit.match['cuda']}")
        cites.append(hit.cite)
        break
    found = driver_version(facts)
    dcuda = driver_cuda(facts)
    if found:
        supported = max_cuda(found[0])
        upto = f" (supports CUDA up to {show_cuda(supported)})" if supported else ""
        parts.append(f"the installed driver is {show(found[0])}{upto}")
        cites.append(found[1])
    elif dcuda:
        parts.append(f"the driver supports CUDA up to {show_cuda(dcuda[0])}")
        cites.append(dcuda[1])
    for hit in facts.seen(FOUND_VERSION):
        cuda = parse_cuda(hit.match["version"])
        if cuda:
            parts.append(f"torch found a driver for CUDA {show_cuda(cuda)}")
            cites.append(hit.cite)
        break
    if not found and not dcuda:
        # the oldest driver the words name: a driver too old is the one the complaint is about
        # ("newer nodes (driver 550) work ... the older nodes: driver 470.182.03")
        named = [
            (v, h) for h in facts.seen(PROSE_DRIVER) if (v := parse_version(h.match["version"]))
        ]
        for parsed, hit in sorted(named, key=lambda n: n[0])[:1]:
            supported = max_cuda(parsed)
            if supported:
                parts.append(
                    f"the reported driver {hit.match['version']} supports CUDA up to "
                    f"{show_cuda(supported)}"
                )
                cites.append(hit.cite)
    if need is None:
        # the newest CUDA the words name: the runtime that asks more than the driver gives
        # ("a cuda12.4 image" beside nvidia-smi's "CUDA Version: 11.4")
        said = ""
        for hit in facts.seen(PROSE_CUDA):
            cuda = parse_cuda(hit.match["version"])
            if cuda is not None and (need is None or cuda > need):
                need, said = cuda, hit.match["version"]
        if said:
            parts.append(f"the reported CUDA is {said}")
    return parts, cites, need


def _fix(need: tuple[int, int] | None, codes: set[int]) -> list[str]:
    steps = []
    want = min_driver(need) if need else None
    if want and need:
        steps.append(
            f"Upgrade the host NVIDIA driver to {show(want)} or newer (the minimum for CUDA "
            f"{show_cuda(need)}), then reboot or reload the kernel module"
        )
    else:
        steps.append("Upgrade the host NVIDIA driver to one that supports the job's CUDA release")
    steps.append(
        "Or install a PyTorch wheel / container image built for a CUDA the driver supports "
        "(`nvidia-smi` prints the newest in its header)"
    )
    if 804 in codes:
        steps.append(
            "Do not load the cuda-compat forward-compatibility libcuda on this GPU: remove "
            "/usr/local/cuda/compat from LD_LIBRARY_PATH or the image (GeForce/RTX cards do not "
            "support it)"
        )
    steps.append("Check with `python -c 'import torch; print(torch.cuda.is_available())'`")
    return steps


def _from_versions(facts: Facts) -> list[Finding]:
    """No error printed: compare the runtime's CUDA with the driver's."""
    runtime, dcuda = runtime_cuda(facts), driver_cuda(facts)
    if not runtime or not dcuda or runtime[0] <= dcuda[0]:
        return []
    need, have = runtime[0], dcuda[0]
    found = driver_version(facts)
    floor = MAJOR_FLOOR.get(need[0])
    hard = need[0] > have[0] or (found is not None and floor is not None and found[0] < floor)
    unavailable = any(s.is_cuda_available is False for s in facts.of(SoftwareVersions))
    evidence = [runtime[1], dcuda[1]]
    if hard:
        severity = Severity.CRITICAL if unavailable else Severity.WARNING
        summary = (
            f"{runtime[2]} needs a driver for CUDA {show_cuda(need)}, but the driver supports "
            f"only up to CUDA {show_cuda(have)}"
            + ("; CUDA is not available" if unavailable else ": CUDA will not initialise")
        )
        return [
            RULE.finding(
                summary=summary,
                fix=_fix(need, set()),
                evidence=evidence,
                severity=severity,
                confidence=Confidence.HIGH if unavailable else Confidence.MEDIUM,
            )
        ]
    return [
        RULE.finding(
            summary=(
                f"{runtime[2]} is newer than the driver's CUDA {show_cuda(have)}; it runs through "
                "minor-version compatibility, but PTX JIT and newer CUDA APIs will fail"
            ),
            fix=_fix(need, set()),
            evidence=evidence,
            severity=Severity.INFO,
            confidence=Confidence.MEDIUM,
            cause=False,
        )
    ]


def check(facts: Facts) -> list[Finding]:
    """CUDA errors 35/36/222/804 or a runtime newer than the driver."""
    errors, codes, machine = _errors(facts)
    if not errors:
        return _from_versions(facts)
    # error 35 is also what the runtime says where it reaches no driver at all: in a container
    # shown to have none (an NGC image's "The NVIDIA Driver was not detected",
    # no libcuda), the container was started without its GPUs (driver.container's story)
    if codes == {35} and facts.seen(NO_DRIVER) and facts.seen(CONTAINER_CUE):
        return []
    parts, cites, need = _versions(facts)
    names = []
    for code in sorted(codes):
        known = cuda_errors.by_code(code)
        names.append(f"error {code} '{known.message}'" if known and known.message else str(code))
    summary = "The host driver is too old for the CUDA the job needs"
    if names and machine:
        summary = f"CUDA failed with {', '.join(names)}"
    elif names:
        summary = f"The reporter tells of CUDA's {', '.join(names)}"
    if 804 in codes:
        summary += (
            ": the CUDA runtime is newer than the driver, so CUDA tried the forward-compatibility "
            "libcuda, which this GPU does not support"
        )
    if parts:
        summary += "; " + "; ".join(parts)
    ranks = [e.rank for e in errors if isinstance(e, Fact) and e.rank is not None]
    return [
        RULE.finding(
            summary=summary,
            fix=_fix(need, codes),
            evidence=[*errors[:3], *cites[:3]],
            severity=Severity.CRITICAL if machine else Severity.WARNING,
            confidence=Confidence.HIGH if machine else Confidence.LOW,
            ranks=ranks,
        )
    ]
