"""The job runs under Windows Subsystem for Linux (WSL2) and meets its limits.

What it means
-------------
Under WSL2 the GPU belongs to the Windows driver; Linux sees it through
``/dev/dxg`` and the ``libcuda`` the Windows driver puts in
``/usr/lib/wsl/lib``. No Linux NVIDIA driver may be installed inside the
distribution, the WSL kernel must be new enough (CUDA on WSL needs kernel
5.10.43.3 or later), and several features are missing: GPU peer-to-peer and
CUDA IPC between processes, NVLink, InfiniBand/RDMA, and pinned memory is
limited. Such hosts are often named ``DESKTOP-*``, a hint that is not
evidence by itself.

Why it matters
--------------
With an old WSL kernel or a Linux driver installed over the WSL one, CUDA
finds no driver at all (``Found no NVIDIA driver on your system``). Multi-GPU
NCCL jobs fail or hang on the P2P/IPC transports that WSL does not provide.

Evidence
--------
A ``microsoft-standard-WSL2`` kernel (collect_env's platform, ``uname -r``,
``/proc/version``), libcuda under ``/usr/lib/wsl``, together with a CUDA
driver failure or an NCCL P2P/IPC/shared-memory failure, or a hang while NCCL's
channels run over P2P/IPC or SHM (shown by the machine's own output to be WSL), or
the job said to work only with ``NCCL_P2P_DISABLE=1`` on a machine whose WSL
kernel or libcuda is shown, or NCCL's unhandled CUDA error in a job of several
GPUs there (low confidence); an NCCL hang told in words where the WSL kernel is
shown, or the job said to run under WSL and to work with P2P off, is a warning.

Fix
---
Update WSL (``wsl --update`` in Windows, then ``wsl --shutdown``) and the
Windows NVIDIA driver; do not install a Linux NVIDIA driver inside WSL; make
sure ``/usr/lib/wsl/lib`` is on the library path. For multi-GPU NCCL, set
``NCCL_P2P_DISABLE=1`` (and ``NCCL_SHM_DISABLE=1`` if shared memory fails)
or run on native Linux.
"""

from __future__ import annotations

from nccl_doctor.facts.base import Cite, Fact
from nccl_doctor.facts.driver import wsl_kernel
from nccl_doctor.facts.job import world_size
from nccl_doctor.facts.nccl import NcclTransport
from nccl_doctor.facts.run import CollectiveTimeout, CudaError, NcclErrorReport
from nccl_doctor.facts.software import SoftwareVersions
from nccl_doctor.facts.store import Facts
from nccl_doctor.findings import Confidence, Finding, Severity
from nccl_doctor.knowledge.workarounds import mask_of
from nccl_doctor.rules.base import Rule
from nccl_doctor.signs.common import HANG_WORDS
from nccl_doctor.signs.driver import MICROSOFT, WSL, WSL_KERNEL, WSL_NO_DRIVER, WSL_P2P
from nccl_doctor.signs.launch import NCCL_NAMED
from nccl_doctor.signs.settings import settings_that_worked

RULE = Rule(
    id="driver.wsl",
    title="Windows Subsystem for Linux limits the GPU stack",
    severity=Severity.CRITICAL,
    explains=(
        "driver.cuda_mismatch",
        "cuda.device_visibility",
        "cuda.unknown_error",
        "nccl.p2p",
        "nccl.shm",
        "launch.rank_crash",
    ),
)

#: The oldest WSL kernel CUDA on WSL supports.
MIN_KERNEL = (5, 10, 43, 3)


def _rerun_without_p2p(when: str) -> list[str]:
    """The fix where NCCL took a path WSL lacks: P2P off (SHM too ``when`` ...), or native
    Linux."""
    return [
        f"Rerun with NCCL_P2P_DISABLE=1 (and NCCL_SHM_DISABLE=1 if {when})",
        "For real multi-GPU training, run on native Linux",
    ]


def _wsl(facts: Facts) -> tuple[list[Cite], bool]:
    """Lines that show WSL, and whether any is machine output."""
    cites: list[Cite] = [s.cite for s in facts.of(SoftwareVersions) if s.wsl]
    machine = bool(cites)
    seen = set(cites)
    for hit in facts.seen(WSL):
        if hit.cite not in seen:
            seen.add(hit.cite)
            cites.append(hit.cite)
            machine = machine or (not hit.prose and hit.said in facts.lines_of(MICROSOFT))
    return cites, machine


def _kernel(facts: Facts) -> tuple[tuple[int, ...], str, Cite] | None:
    for soft in facts.of(SoftwareVersions):
        release = wsl_kernel(soft.python_platform)
        if release:
            return tuple(int(p) for p in release.split(".")), release, soft.cite
    for hit in facts.seen(WSL_KERNEL):
        text = hit.match["version"]
        return tuple(int(p) for p in text.split(".")), text, hit.cite
    return None


def check(facts: Facts) -> list[Finding]:
    """WSL evidence, weighed by the failure it explains."""
    cues, machine = _wsl(facts)
    if not cues:
        return []
    kernel = _kernel(facts)
    old = kernel is not None and kernel[0] < MIN_KERNEL
    kernel_text = f"WSL kernel {kernel[1]}" if kernel else "WSL"
    evidence: list[Fact | Cite] = [kernel[2] if kernel else cues[0]]
    no_driver: list[Fact | Cite] = [
        e for e in facts.of(CudaError) if e.kind == "driver" and "found no" in (e.error or "")
    ]
    no_driver += [h.cite for h in facts.seen(WSL_NO_DRIVER) if h.cite not in no_driver]
    update = [
        "Update WSL from Windows: `wsl --update`, then `wsl --shutdown` and reopen it",
        "Update the Windows NVIDIA driver; do not install a Linux NVIDIA driver inside WSL",
        (
            "Check that `ls /usr/lib/wsl/lib/libcuda.so*` exists and /usr/lib/wsl/lib is on "
            "LD_LIBRARY_PATH, then `nvidia-smi` inside WSL"
        ),
    ]
    if no_driver:
        first = no_driver[0]
        text = (first.cite if isinstance(first, Fact) else first).text.strip()[:100]
        reason = (
            f"{kernel_text} is older than {'.'.join(map(str, MIN_KERNEL))}, the minimum CUDA on "
            "WSL needs"
            if old
            else f"under {kernel_text} CUDA reaches the GPU only through the Windows driver's "
            "libcuda in /usr/lib/wsl/lib"
        )
        return [
            RULE.finding(
                summary=f"CUDA finds no driver ('{text}'): {reason}",
                fix=update,
                evidence=[*no_driver[:1], *evidence],
                severity=Severity.CRITICAL if old or machine else Severity.WARNING,
                confidence=Confidence.MEDIUM,
            )
        ]
    p2p = facts.seen(WSL_P2P, prose=False)
    if p2p:
        return [
            RULE.finding(
                summary=(
                    f"NCCL failed on a peer-to-peer/IPC/shared-memory path under {kernel_text}, "
                    f"which WSL does not provide: '{p2p[0].cite.text.strip()[:100]}'"
                ),
                fix=_rerun_without_p2p("shared memory fails"),
                evidence=[p2p[0].cite, *evidence],
                # (machine output that shows WSL beside NCCL's own failure on that path)
                severity=Severity.CRITICAL if machine else Severity.WARNING,
                confidence=Confidence.MEDIUM,
            )
        ]
    # NCCL's own CUDA call failed (ncclUnhandledCudaError) in a job of several ranks, on a
    # machine its output shows to be WSL: NCCL's set-up between the GPUs (CUDA IPC, peer
    # access) is what WSL lacks, whatever error code the Windows driver returns for it
    unhandled = [r for r in facts.of(NcclErrorReport) if r.reports("ncclUnhandledCudaError")]
    if (machine or kernel is not None) and unhandled and world_size(facts) != 1:
        return [
            RULE.finding(
                summary=f"NCCL's CUDA call failed (unhandled cuda error) in a multi-GPU job "
                f"under {kernel_text}, which has no GPU peer-to-peer or CUDA IPC between "
                "processes: NCCL's set-up between the GPUs needs what WSL lacks",
                fix=_rerun_without_p2p("it still fails"),
                evidence=[unhandled[0], *evidence],
                confidence=Confidence.LOW,
            )
        ]
    # a hang with NCCL's GPUs talking over P2P/IPC or SHM, on a machine shown to be WSL: the
    # paths NCCL chose are ones WSL does not provide, so the hang is theirs
    intra = [t for t in facts.of(NcclTransport) if t.kind.upper() in ("P2P", "SHM")]
    hung = facts.told(HANG_WORDS) or facts.of(CollectiveTimeout)
    if machine and intra and hung:
        first = intra[0]
        return [
            RULE.finding(
                summary=f"The job hangs while NCCL connects its GPUs over {first.kind} under "
                f"{kernel_text}, which has no GPU peer-to-peer, CUDA IPC or shared-memory path "
                "between processes' GPUs: NCCL waits on a path that never carries data",
                fix=_rerun_without_p2p("it still hangs"),
                evidence=[first.cite, *evidence],
                confidence=Confidence.MEDIUM,
            )
        ]
    # P2P turned off said to make the job work, on a machine shown to be WSL (its kernel or
    # its libcuda): the path NCCL took by default is the peer-to-peer one WSL lacks
    off = [
        w.cite
        for w in settings_that_worked(facts)
        if w.name == "NCCL_P2P_DISABLE" and mask_of(w.name, w.value) is not None
    ]
    if off and (machine or kernel is not None):
        return [
            RULE.finding(
                summary="The job works only with GPU peer-to-peer off "
                f"('{off[0].text.strip()[:90]}') under {kernel_text}, which provides no GPU "
                "peer-to-peer or CUDA IPC between processes: the P2P path NCCL takes by "
                "default does not exist there",
                fix=[
                    "Keep NCCL_P2P_DISABLE=1 under WSL (and NCCL_SHM_DISABLE=1 if it still hangs)",
                    "For full-speed multi-GPU training, run on native Linux",
                ],
                evidence=[off[0], *evidence],
                confidence=Confidence.MEDIUM,
            )
        ]
    # the same said in words: the reporter runs the job under WSL and it works with P2P off
    # ("moved everything into WSL2 ... if I set NCCL_P2P_DISABLE=1 it runs")
    told = [h.cite for h in facts.told(WSL) if h.prose]
    if off and told:
        return [
            RULE.finding(
                summary="The job works only with GPU peer-to-peer off (NCCL_P2P_DISABLE), "
                "and the report says it runs under WSL, which provides no GPU peer-to-peer or "
                "CUDA IPC between processes: the P2P path NCCL takes by default does not exist "
                "there",
                fix=[
                    (
                        "Check with `uname -r` (a microsoft-standard-WSL2 kernel) that the job "
                        "runs under WSL"
                    ),
                    "Keep NCCL_P2P_DISABLE=1 under WSL (and NCCL_SHM_DISABLE=1 if it still hangs)",
                    "For full-speed multi-GPU training, run on native Linux",
                ],
                evidence=[off[0], told[0]],
                severity=Severity.WARNING,
                confidence=Confidence.LOW,
            )
        ]
    # the same hang told in words, on a machine whose WSL kernel is shown, with NCCL named:
    # its GPUs' traffic has no path there but the ones WSL lacks
    if hung and kernel is not None and facts.saw(NCCL_NAMED):
        return [
            RULE.finding(
                summary=f"An NCCL job hangs under {kernel_text}, which has no GPU "
                "peer-to-peer, CUDA IPC or shared-memory path between processes' GPUs: NCCL's "
                "default paths between the GPUs of one machine are the ones WSL lacks",
                fix=_rerun_without_p2p("it still hangs"),
                evidence=[hung[0].cite, *evidence],
                severity=Severity.WARNING,
                confidence=Confidence.LOW,
            )
        ]
    if old:
        return [
            RULE.finding(
                summary=f"{kernel_text} is older than the {'.'.join(map(str, MIN_KERNEL))} CUDA "
                "on WSL needs",
                fix=update,
                evidence=evidence,
                severity=Severity.WARNING,
                confidence=Confidence.MEDIUM,
            )
        ]
    return [
        RULE.finding(
            summary=(
                f"The job runs under {kernel_text}: no GPU peer-to-peer, CUDA IPC, NVLink or "
                "InfiniBand, and limited pinned memory"
            ),
            fix=[
                "Run multi-GPU NCCL jobs on native Linux",
                "Under WSL, set NCCL_P2P_DISABLE=1 (WSL has no GPU peer-to-peer; slower)",
            ],
            evidence=evidence,
            severity=Severity.INFO,
            confidence=Confidence.HIGH if machine else Confidence.LOW,
            cause=False,
        )
    ]
