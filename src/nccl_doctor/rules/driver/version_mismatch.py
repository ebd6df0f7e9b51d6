"""The NVIDIA kernel module and the user-space driver libraries differ.

What it means
-------------
The driver is two halves that must be the same build: the kernel module
(``nvidia.ko``, ``/proc/driver/nvidia/version``) and the user-space
libraries (``libcuda``, ``libnvidia-ml``, ``nvidia-smi``). After a driver
package upgrade (often unattended-upgrades) the new libraries are on disk
while the old module is still loaded, or an upgrade left the new module
unbuilt, so a reboot brings back the old one.

Why it matters
--------------
NVML refuses to start (``Failed to initialize NVML: Driver/library version
mismatch``), ``nvidia-smi`` cannot talk to the driver, CUDA fails with error
803 ``system has unsupported display driver / cuda driver combination`` and
no rank of a job can use a GPU on that node.

Evidence
--------
``Driver/library version mismatch`` from nvidia-smi/NVML, the kernel's
``NVRM: API mismatch: the client has the version X, but this kernel module
has the version Y``, CUDA error 803, a ``/proc/driver/nvidia/version`` module
version that differs from the installed packages (``dpkg -l``), or an apt /
dpkg log that upgraded NVIDIA packages before nvidia-smi stopped working.

Fix
---
Reboot the node (or stop every GPU process and reload the modules). If a
reboot does not help, the module matching the libraries is not installed:
finish the package install (``apt install --fix-broken``, check ``dkms
status``) so module and libraries are one version, and hold the driver
packages against unattended upgrades.
"""

from __future__ import annotations

from nccl_doctor.facts.base import Cite, Fact
from nccl_doctor.facts.gpu import SmiError
from nccl_doctor.facts.host import KernelGpuMessage
from nccl_doctor.facts.run import CudaError
from nccl_doctor.facts.store import Facts, Hit
from nccl_doctor.findings import Confidence, Finding, Severity
from nccl_doctor.rules.base import Rule
from nccl_doctor.signs.driver import (
    MISMATCH_MESSAGE,
    MODULE_VERSION,
    NVML_VERSION,
    PACKAGE_MOVE,
    PACKAGE_VERSION,
    REBOOTED,
    UNATTENDED,
    UPGRADE,
)

RULE = Rule(
    id="driver.version_mismatch",
    title="NVIDIA kernel module and driver libraries are different versions",
    severity=Severity.CRITICAL,
    explains=(
        "gpu.lost",
        "driver.cuda_mismatch",
        "cuda.unknown_error",
        "cuda.device_visibility",
        "launch.rank_crash",
    ),
)


def _direct(facts: Facts) -> list[Fact | Cite]:
    """Lines where a tool says module and libraries differ."""
    found: list[Fact | Cite] = [s for s in facts.of(SmiError) if s.error == "version_mismatch"]
    found += [k for k in facts.of(KernelGpuMessage) if k.kind == "api_mismatch"]
    found += [e for e in facts.of(CudaError) if e.code == 803]
    seen = {f.cite if isinstance(f, Fact) else f for f in found}
    for hit in facts.seen(MISMATCH_MESSAGE, prose=False):
        if hit.cite not in seen:
            seen.add(hit.cite)
            found.append(hit.cite)
    return found


def _module(facts: Facts) -> tuple[str, Cite] | None:
    for msg in facts.of(KernelGpuMessage):
        if msg.kind == "api_mismatch" and msg.version:
            return msg.version, msg.cite
    for hit in facts.seen(MODULE_VERSION):
        return hit.match["version"], hit.cite
    for msg in facts.of(KernelGpuMessage):
        if msg.kind == "module_version" and msg.version:
            return msg.version, msg.cite
    return None


def _library(facts: Facts) -> tuple[str, str, Cite] | None:
    """The user-space version: (version, what says it, citation)."""
    for msg in facts.of(KernelGpuMessage):
        if msg.kind == "api_mismatch" and msg.client_version:
            return msg.client_version, "the user-space client", msg.cite
    for smi in facts.of(SmiError):
        if smi.nvml_version:
            return smi.nvml_version, "the NVML library", smi.cite
    for hit in facts.seen(NVML_VERSION):
        return hit.match["version"], "the NVML library", hit.cite
    for hit in facts.seen(PACKAGE_VERSION):
        return hit.match["version"], f"the installed package {hit.match['package']}", hit.cite
    return None


def _upgrades(facts: Facts) -> list[Hit]:
    """NVIDIA packages a package manager moved: a move after the line's upgrade keyword."""
    keyword = {h.said: h.match.end() for h in facts.seen(UPGRADE, prose=False)}
    return [
        h
        for h in facts.seen(PACKAGE_MOVE, prose=False)
        if h.said in keyword and keyword[h.said] <= h.match.start()
    ]


def _fix(rebooted: bool) -> list[str]:
    reboot = "Reboot the node (or stop every GPU process and run `rmmod nvidia_uvm nvidia_drm "
    reboot += "nvidia_modeset nvidia && modprobe nvidia`) so the module matches the libraries"
    finish = (
        "Finish the driver install so kernel module and libraries are one version: "
        "`apt update && apt install --fix-broken` (check `dkms status` and "
        "`cat /proc/driver/nvidia/version` against `dpkg -l | grep nvidia`)"
    )
    hold = "Hold the driver packages (`apt-mark hold`) or exclude them from unattended-upgrades"
    steps = [finish, reboot] if rebooted else [reboot, finish]
    return [*steps, hold, "Check with `nvidia-smi` before starting the job again"]


def check(facts: Facts) -> list[Finding]:
    """A version-mismatch message, or a module/library version pair that differ."""
    direct = _direct(facts)
    module, library = _module(facts), _library(facts)
    differ = module is not None and library is not None and module[0] != library[0]
    versions = ""
    cites: list[Fact | Cite] = []
    if differ and module and library:
        versions = f"the loaded kernel module is {module[0]} but {library[1]} is {library[0]}"
        cites += [module[1], library[2]]
    rebooted = facts.saw(REBOOTED)
    if direct:
        summary = f"'{_text(direct[0])}'"
        summary += f": {versions}" if versions else ": kernel module and user-space driver differ"
        if rebooted:
            summary += "; a reboot was tried, so the matching kernel module is not installed"
        return [RULE.finding(summary=summary, fix=_fix(rebooted), evidence=[*direct[:2], *cites])]
    firmware = [k for k in facts.of(KernelGpuMessage) if k.kind == "no_firmware"]
    if firmware:
        summary = (
            f"'{_text(firmware[0])}': the loaded kernel module found no GSP firmware of its own "
            "version (/lib/firmware/nvidia/<version>/gsp_*.bin): the module and the driver "
            "package's files are not one install" + (f"; {versions}" if versions else "")
        )
        fix = [
            (
                "Install the firmware of the loaded module's version (the driver package's "
                "firmware files, e.g. nvidia-firmware-<branch>-<version>, or reinstall the "
                "driver) so /lib/firmware/nvidia/$(cat /sys/module/nvidia/version) holds "
                "gsp_*.bin; rebuild the initramfs if the module loads from it"
            ),
            *_fix(rebooted)[1:],
        ]
        return [RULE.finding(summary=summary, fix=fix, evidence=[*firmware[:1], *cites])]
    no_driver = [s for s in facts.of(SmiError) if s.error in ("no_driver", "nvml_init")]
    upgrades = _upgrades(facts)
    if no_driver and upgrades:
        up = upgrades[0].match
        how = "a package upgrade"
        if facts.saw(UNATTENDED, prose=False):
            how = "an unattended upgrade"
        summary = (
            f"'{no_driver[0].message.split('. ')[0][:100]}' after {how} moved {up['package']} "
            f"from {up['old']} to {up['new']}: the libraries no longer match the loaded "
            "kernel module"
        )
        return [
            RULE.finding(
                summary=summary,
                fix=_fix(rebooted),
                evidence=[no_driver[0], upgrades[0].cite, *cites],
                confidence=Confidence.MEDIUM,
            )
        ]
    if differ:
        return [
            RULE.finding(
                summary=f"Driver versions differ on this node: {versions}",
                fix=_fix(rebooted),
                evidence=cites,
                severity=Severity.WARNING,
                confidence=Confidence.MEDIUM,
            )
        ]
    return []


def _text(item: Fact | Cite) -> str:
    cite = item.cite if isinstance(item, Fact) else item
    return cite.text.strip().lstrip("$> ")[:120]
