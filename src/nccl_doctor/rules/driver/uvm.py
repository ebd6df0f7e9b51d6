"""The NVIDIA unified-memory kernel module (nvidia_uvm) is missing or broken.

What it means
-------------
CUDA needs the ``nvidia_uvm`` kernel module and its device node
``/dev/nvidia-uvm`` besides the main ``nvidia`` module. When the module was
never loaded (no X server or persistence daemon loaded it, a headless boot,
``modprobe`` failed) or was left in a bad state by a suspend/resume or a
driver reload while processes held GPU memory, the first CUDA call of every
new process (``cuInit``, ``cudaGetDeviceCount``) fails with error 999
``unknown error``, while ``nvidia-smi`` (which does not use UVM) still looks
healthy.

Why it matters
--------------
No process on the node can use CUDA: ``torch.cuda.is_available()`` is
``False`` with the warning ``CUDA unknown error - this may be due to an
incorrectly set up environment``, JAX falls back to the CPU, NCCL cannot
start. The error looks like a GPU fault, but the GPU is fine.

Evidence
--------
A missing ``/dev/nvidia-uvm`` (said so, or a listing of ``/dev/nvidia*``, long or
plain, with the control node and no ``nvidia-uvm``; ``lsmod`` with ``nvidia`` and no
``nvidia_uvm``), ``modprobe`` or kernel errors naming ``nvidia_uvm``, or CUDA
error 999 at the very first CUDA call together with a suspend/resume of the
machine ("went to sleep over the weekend"). A missing module is the cause
(critical) beside a first-call 999, CUDA's unknown error, or a process that found
no GPU at all; alone it is a warning.

Fix
---
Stop every process that holds the GPU, then reload the module (``sudo rmmod
nvidia_uvm && sudo modprobe nvidia_uvm``) or create the node (``sudo
nvidia-modprobe -u -c=0``); reboot when that fails. Against suspend/resume
breakage, enable the driver's suspend services (``nvidia-suspend``/
``nvidia-resume``) or close GPU processes before suspending.
"""

from __future__ import annotations

from nccl_doctor.facts.base import Cite
from nccl_doctor.facts.host import KernelGpuMessage
from nccl_doctor.facts.live import DeviceNode, KernelModule
from nccl_doctor.facts.run import CudaError
from nccl_doctor.facts.store import Facts, Hit
from nccl_doctor.findings import Confidence, Finding, Severity
from nccl_doctor.rules.base import Rule, first_distinct
from nccl_doctor.rules.cuda._common import no_gpu_errors
from nccl_doctor.signs.cuda import NO_GPU
from nccl_doctor.signs.driver import (
    CONTAINER_CUE,
    DEV_LISTED,
    DEV_LISTED_BARE,
    FIRST_999,
    LSMOD_NVIDIA,
    SUSPEND,
    UVM_MISSING,
    UVM_MODULE,
    UVM_SAID_MISSING,
)

RULE = Rule(
    id="driver.uvm",
    title="The nvidia_uvm kernel module is missing or broken",
    severity=Severity.CRITICAL,
    explains=("cuda.unknown_error", "cuda.device_visibility", "launch.rank_crash"),
)


def _module_errors(facts: Facts) -> list[Cite]:
    cites = [
        k.cite
        for k in facts.of(KernelGpuMessage)
        if k.kind == "module_load_error" and k.module and "uvm" in k.module
    ]
    return first_distinct([*cites, *(h.cite for h in facts.seen(UVM_MODULE))])


def _first_call(facts: Facts) -> list[Cite]:
    """Error 999 at CUDA's very first call (cuInit / device count / is_available)."""
    cites = [e.cite for e in facts.of(CudaError) if e.kind == "init" and e.code == 999]
    return first_distinct([*cites, *(h.cite for h in facts.seen(FIRST_999))])


def _quote(facts: Facts, cite: Cite) -> str:
    """What the line says of error 999 (the sign's match: a sentence that quotes it goes on in
    its own words, "...set up environment」で始まる長い警告"), else the line's start."""
    span = next((h.match.span() for h in facts.seen(FIRST_999) if h.cite == cite), (0, 100))
    return cite.text[span[0] : span[1]].strip()[:100]


def _no_gpu(facts: Facts) -> bool:
    """Whether a process of the job found no GPU at all (CUDA error 100, ProcessGroupNCCL's
    'only supported with GPUs'): what every CUDA call makes of a node without the module."""
    return bool(no_gpu_errors(facts)) or facts.saw(NO_GPU)


def _ranks(facts: Facts) -> list[int]:
    return [e.rank for e in facts.of(CudaError) if e.rank is not None and e.unknown]


def _fix(missing: bool, suspended: bool) -> list[str]:
    steps = [
        (
            "Stop every process that holds the GPU (`nvidia-smi`, `sudo fuser -v /dev/nvidia*`), "
            "including idle notebooks and interpreters"
        ),
        "Reload the module: `sudo rmmod nvidia_uvm && sudo modprobe nvidia_uvm`",
    ]
    if missing:
        steps.append(
            "Create the device node if it is still absent: `sudo nvidia-modprobe -u -c=0` "
            "(and load nvidia_uvm at boot, e.g. via nvidia-persistenced or modules-load.d)"
        )
    if suspended:
        steps.append(
            "Before the next suspend, close GPU processes or enable the driver's "
            "nvidia-suspend/nvidia-resume services (NVreg_PreserveVideoMemoryAllocations=1)"
        )
    steps.append("Reboot the node if the module cannot be reloaded")
    steps.append("Check with `python -c 'import torch; print(torch.cuda.is_available())'`")
    return steps


def _live(facts: Facts) -> list[Cite]:
    """A live check's reads: nvidia_uvm not loaded, or /dev/nvidia-uvm absent, beside a driver."""
    driver = any(m.name == "nvidia" and m.loaded for m in facts.of(KernelModule))
    if not driver:
        return []
    out = [m.cite for m in facts.of(KernelModule) if m.name == "nvidia_uvm" and not m.loaded]
    out += [n.cite for n in facts.of(DeviceNode) if n.path == "/dev/nvidia-uvm" and not n.present]
    return out


def _pasted(facts: Facts) -> list[Cite]:
    """Pasted reads of the same: a listing of /dev/nvidia* that holds the driver's control node
    and no nvidia-uvm, or lsmod lines of the nvidia module and none of nvidia_uvm."""
    out: list[Cite] = []
    listed = facts.seen(DEV_LISTED, prose=False)
    bare = facts.seen(DEV_LISTED_BARE, prose=False)
    nodes = {h.match["node"] for h in listed}
    nodes |= {path.removeprefix("/dev/") for h in bare for path in h.match["nodes"].split()}
    if "nvidiactl" in nodes and "nvidia-uvm" not in nodes:
        out.append(next(h.cite for h in (*listed, *bare) if "nvidiactl" in h.match.group(0)))
    loaded = facts.seen(LSMOD_NVIDIA, prose=False)
    modules = {h.match["module"] for h in loaded}
    if "nvidia" in modules and "nvidia_uvm" not in modules:
        out.append(next(h.cite for h in loaded if h.match["module"] == "nvidia"))
    return out


def check(facts: Facts) -> list[Finding]:
    """UVM evidence: a missing node, module errors, or a first-call 999 after a suspend."""
    missing = [h.cite for h in facts.seen(UVM_MISSING)] + _live(facts) + _pasted(facts)
    # the reporter's words only ("lsmod lists nvidia and nvidia_drm, no nvidia_uvm"): the same
    # reading, less sure
    said = [] if missing else [h.cite for h in facts.told(UVM_SAID_MISSING)]
    missing = missing or said
    module = _module_errors(facts)
    first = _first_call(facts)
    suspend: tuple[Hit, ...] = facts.seen(SUSPEND) if first else ()
    in_container = facts.saw(CONTAINER_CUE)
    if missing and not module and in_container:
        return []  # the node was not passed into the container: driver.container
    if missing or module:
        what = "/dev/nvidia-uvm is missing" if missing else "the nvidia_uvm module failed to load"
        failing = f"; CUDA's first call fails with 999 ({_quote(facts, first[0])})" if first else ""
        return [
            RULE.finding(
                summary=f"{what}{failing}: CUDA cannot initialise on this node",
                fix=_fix(bool(missing), bool(suspend)),
                evidence=[*missing[:1], *module[:2], *first[:1]],
                # (CUDA's unknown error beside it is what a missing node makes of every call)
                severity=Severity.CRITICAL
                if first or module or any(e.unknown for e in facts.of(CudaError)) or _no_gpu(facts)
                else Severity.WARNING,
                confidence=Confidence.MEDIUM if said and not module else Confidence.HIGH,
                ranks=_ranks(facts),
            )
        ]
    if first and suspend:
        return [
            RULE.finding(
                summary=(
                    f"CUDA's first call fails with error 999 ('{_quote(facts, first[0])}') after "
                    "the machine was suspended and resumed: the nvidia_uvm module is left broken"
                ),
                fix=_fix(False, True),
                evidence=[*first[:2], suspend[0].cite],
                confidence=Confidence.MEDIUM,
                ranks=_ranks(facts),
            )
        ]
    return []
