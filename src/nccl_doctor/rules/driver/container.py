"""The driver stack inside the container is wrong or incomplete.

What it means
-------------
A container does not bring its own NVIDIA driver: the NVIDIA Container
Toolkit injects the host's user-space driver (``libcuda``, ``libnvidia-ml``,
``nvidia-smi``) and the device nodes (``/dev/nvidia*``, ``/dev/nvidia-uvm``)
when the container starts with ``--gpus`` / the ``nvidia`` runtime / a GPU
resource request. When that does not happen, or happens wrongly, CUDA inside
the container finds no driver, the toolkit's link stub (error 34 ``CUDA
driver is a stub library``), an image's forward-compatibility libcuda the
GPU cannot use (error 804), or loses access to the devices at run time
(``Failed to initialize NVML: Unknown Error`` after a systemd reload on
cgroup v2 hosts).

Why it matters
--------------
The host itself is healthy, so ``nvidia-smi`` on the host shows nothing
wrong while every rank inside the container fails at its first CUDA call.

Evidence
--------
``could not select device driver "" with capabilities: [[gpu]]``,
``nvidia-container-cli`` errors, the runtime's ``unresolvable CDI devices
nvidia.com/gpu=all`` (no CDI spec: ``nvidia-ctk cdi generate`` never ran, or
ran before the driver changed), error 34, and, where the evidence says the
job ran in a container (docker, Kubernetes, enroot, Singularity), ``Found no
NVIDIA driver``, ``libcuda.so.1: cannot open shared object file``, a missing
``/dev/nvidia-uvm``, NVML ``Unknown Error`` (printed alone or quoted in a sentence;
the devices lost at run time explain the job's CUDA error at that moment, an
``unspecified launch failure`` too, and its peers' timeouts), error 804, or a driver
version mismatch (error 803, NVML ``Driver/library version mismatch``: the
image's own libcuda shadows the host's; it explains ``driver.version_mismatch``,
unless the host's own nvidia-smi is said to fail too, or nvidia-container-cli, which
runs on the host, reports the mismatch: then the host's driver is mismatched,
``driver.version_mismatch``'s story).

Fix
---
Start the container with the GPUs passed in (``docker run --gpus all`` or
``--runtime=nvidia``, a ``nvidia.com/gpu`` resource in Kubernetes), with the
NVIDIA Container Toolkit installed and configured on the host (``nvidia-ctk
runtime configure``). Do not bake libcuda or ``cuda-compat`` into the
image; remove the stub directory from ``LD_LIBRARY_PATH``. For NVML
``Unknown Error`` after a while, restart the container and pass the device
nodes explicitly or use the toolkit's CDI mode.
"""

from __future__ import annotations

from nccl_doctor.facts.base import Cite, Fact
from nccl_doctor.facts.gpu import SmiError
from nccl_doctor.facts.live import DeviceNode, HostRuntime, KernelModule
from nccl_doctor.facts.run import CudaError
from nccl_doctor.facts.store import Facts
from nccl_doctor.findings import Confidence, Finding, Severity
from nccl_doctor.rules.base import Rule
from nccl_doctor.signs.driver import (
    CDI_UNRESOLVED,
    CONTAINER_CUE,
    DOCKER_RUN,
    GPU_FLAGS,
    HOST_SMI_FAILS,
    MISMATCH_MESSAGE,
    NO_DEVICE,
    NO_DRIVER,
    RANK_PREFIX,
    STUB_LIBRARY,
    TOOLKIT_ERROR,
)

RULE = Rule(
    id="driver.container",
    title="The container's NVIDIA driver stack is wrong or incomplete",
    severity=Severity.CRITICAL,
    explains=(
        "driver.uvm",
        "cuda.device_visibility",
        "cuda.unknown_error",
        "gpu.lost",
        "launch.rank_crash",
        "driver.version_mismatch",
    ),
)


def _gpus_flag_missing(facts: Facts) -> bool:
    """A docker run command is shown without --gpus / --runtime=nvidia / nvidia devices."""
    runs = facts.seen(DOCKER_RUN)
    flagged = facts.lines_of(GPU_FLAGS)
    return bool(runs) and not any(h.said in flagged for h in runs)


def _finding(
    summary: str,
    evidence: list[Fact | Cite],
    confidence: Confidence,
    *,
    severity: Severity = Severity.CRITICAL,
    extra: tuple[str, ...] = (),
    ranks: list[int] | None = None,
    explains: tuple[str, ...] = (),
) -> Finding:
    fix = [
        *extra,
        (
            "Start the container with the GPUs passed in: `docker run --gpus all ...` (or "
            "`--runtime=nvidia`; a `nvidia.com/gpu` resource limit in Kubernetes)"
        ),
        (
            "Install and configure the NVIDIA Container Toolkit on the host: "
            "`sudo nvidia-ctk runtime configure --runtime=docker && sudo systemctl restart docker`"
        ),
        "Inside the container, check `nvidia-smi` and `ls -l /dev/nvidia*` before the job",
    ]
    return RULE.finding(
        summary=summary,
        fix=fix,
        evidence=evidence,
        confidence=confidence,
        severity=severity,
        ranks=ranks or (),
        explains=(*RULE.explains, *explains),
    )


#: The runtime found no CDI spec naming the GPUs asked for.
_CDI_FIX = (
    "Generate the CDI spec on the host, again after every driver change: "
    "`sudo nvidia-ctk cdi generate --output=/etc/cdi/nvidia.yaml`; "
    "`nvidia-ctk cdi list` must name the device the container asks for"
)


def _ranks(facts: Facts, items: list[Fact | Cite]) -> list[int]:
    """The ranks of facts, and of cited lines the ``[rankN]`` prefix of their text names."""
    prefixed = {h.cite: h.match["rank"] for h in facts.seen_on(RANK_PREFIX, items)}
    ranks = [i.rank if isinstance(i, Fact) else prefixed.get(i) for i in items]
    return [int(r) for r in ranks if r is not None]


def check(facts: Facts) -> list[Finding]:
    """Container runtime errors, or driver failures of a job that ran in a container."""
    stub: list[Fact | Cite] = [e for e in facts.of(CudaError) if e.code == 34] or [
        h.cite for h in facts.seen(STUB_LIBRARY)
    ]
    if stub:
        return [
            _finding(
                "CUDA loaded the toolkit's link stub instead of the real driver (error 34 'CUDA "
                "driver is a stub library'): the host driver's libcuda is not on the library path",
                [*stub[:2]],
                Confidence.HIGH,
                extra=(
                    (
                        "Remove the CUDA stubs directory (…/lib64/stubs) from LD_LIBRARY_PATH and "
                        "from any ldconfig entry of the image"
                    ),
                ),
            )
        ]
    cdi = facts.seen(CDI_UNRESOLVED)
    # (nvidia-container-cli reads the host's NVML: its version mismatch is the host's driver,
    # driver.version_mismatch's story)
    mismatched = facts.lines_of(MISMATCH_MESSAGE)
    runtime_errors = facts.seen(TOOLKIT_ERROR)
    host_mismatch = [h for h in runtime_errors if h.said in mismatched]
    toolkit = cdi or [h for h in runtime_errors if h.said not in mismatched]
    if toolkit:
        return [
            _finding(
                "The container runtime could not give the container its GPUs"
                + (": no CDI spec names the GPUs asked for" if cdi else "")
                + f": '{toolkit[0].cite.text.strip()[:140]}'",
                [toolkit[0].cite],
                Confidence.HIGH,
                extra=(_CDI_FIX,) if cdi else (),
            )
        ]
    cues = facts.seen(CONTAINER_CUE)
    if not cues:
        return []
    cue = cues[0].cite
    machine_cue = any(not h.prose for h in cues)
    confidence = Confidence.HIGH if machine_cue else Confidence.MEDIUM
    nvml = [
        s
        for s in facts.of(SmiError)
        if s.error == "nvml_init" and (s.detail or "").lower().startswith("unknown")
    ]
    if nvml:
        detail = nvml[0].detail or "Unknown Error"
        return [
            _finding(
                f"Inside the container NVML fails with 'Failed to initialize NVML: {detail}': "
                "the container lost access to the GPU device nodes (a systemd/cgroup reload on "
                "the host), while the host driver is fine",
                [nvml[0], cue],
                Confidence.MEDIUM,
                # (a running job's CUDA calls fail once the nodes are gone: whatever error the
                # kernel launch or the next call reports, and the peers' timeouts after it)
                explains=("cuda.illegal_access", "app.hang"),
                extra=(
                    (
                        "Restart the container; to keep access, pass the device nodes explicitly "
                        "(--device /dev/nvidia0 ... /dev/nvidiactl /dev/nvidia-uvm) or use the "
                        "toolkit's CDI mode"
                    ),
                ),
            )
        ]
    absent = [n for n in facts.of(DeviceNode) if n.path == "/dev/nvidia-uvm" and not n.present]
    driver = any(m.name == "nvidia" and m.loaded for m in facts.of(KernelModule))
    if absent and driver and any(r.container for r in facts.of(HostRuntime)):
        return [
            _finding(
                "Inside this container /dev/nvidia-uvm is missing while the host loads the "
                "NVIDIA driver: CUDA's first call will fail (error 999 / no CUDA-capable "
                "device) until the node is passed in",
                [absent[0], cue],
                Confidence.MEDIUM,
                extra=(
                    (
                        "Pass the node into the container (--device /dev/nvidia-uvm, or the "
                        "NVIDIA container toolkit's --gpus / CDI), or create it on the host first "
                        "(`nvidia-modprobe -u -c=0`)"
                    ),
                ),
            )
        ]
    missing: list[Fact | Cite] = [
        e for e in facts.of(CudaError) if e.kind == "driver" and "found no" in (e.error or "")
    ]
    missing += [h.cite for h in facts.seen(NO_DRIVER) if h.cite not in missing]
    missing += [s for s in facts.of(SmiError) if s.error == "no_driver"]
    flag = _gpus_flag_missing(facts)
    if not missing and flag:
        missing = [h.cite for h in facts.seen(NO_DEVICE)]
    if missing:
        first = missing[0]
        text = (first.cite if isinstance(first, Fact) else first).text.strip()[:120]
        summary = f"The job ran in a container and CUDA found no GPU or driver there ('{text}')"
        summary += (
            ": the docker run command has no --gpus flag"
            if flag
            else ": the GPUs and driver libraries were not passed into the container"
        )
        ranks = _ranks(facts, missing)
        return [_finding(summary, [*missing[:2], cue], confidence, ranks=ranks)]
    mismatch: list[Fact] = [e for e in facts.of(CudaError) if e.code == 803]
    mismatch += [s for s in facts.of(SmiError) if s.error == "version_mismatch"]
    # a live capture reads the host itself (its runtime, modules and libraries): there the
    # module/library rule judges; a report only says where the job ran. The host's own
    # nvidia-smi failing the same way is the host's mismatch (driver.version_mismatch)
    host_too = host_mismatch or facts.seen(HOST_SMI_FAILS)
    if mismatch and not facts.of(HostRuntime) and not host_too:
        return [
            _finding(
                "Inside a container the driver's user-space libraries do not match the kernel "
                "module (error 803 / NVML 'Driver/library version mismatch'): the image brings a "
                "libcuda of its own (cuda-compat registered in ld.so.conf, or a driver installed "
                "inside the image) that shadows the one the container toolkit mounts from the host",
                [mismatch[0], cue],
                Confidence.MEDIUM if machine_cue else Confidence.LOW,
                extra=(
                    (
                        "Check the host first: if nvidia-smi fails there too, the host's driver "
                        "was upgraded without a reboot (driver.version_mismatch)"
                    ),
                    (
                        "Otherwise do not install a driver inside the image, and drop "
                        "/usr/local/cuda/compat from its ld.so.conf and LD_LIBRARY_PATH"
                    ),
                ),
            )
        ]
    compat = [e for e in facts.of(CudaError) if e.code == 804]
    if compat:
        return [
            _finding(
                "Error 804 inside a container: the image's CUDA forward-compatibility libcuda "
                "(cuda-compat) was used on a GPU that does not support it, because the host "
                "driver is older than the image's CUDA",
                [compat[0], cue],
                Confidence.MEDIUM,
                severity=Severity.WARNING,
                extra=(
                    (
                        "Use an image whose CUDA the host driver supports, or upgrade the host "
                        "driver; keep /usr/local/cuda/compat off LD_LIBRARY_PATH on GeForce/RTX"
                    ),
                ),
            )
        ]
    return []
