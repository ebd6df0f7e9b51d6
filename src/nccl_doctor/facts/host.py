"""Facts of the host: kernel messages of the NVIDIA driver, and environment variables.

``xid`` facts: :class:`XidEvent` for ``NVRM: Xid (PCI:0000:3b:00): 79, ...``
(and NVSwitch ``SXid``), :class:`KernelGpuMessage` for the other driver
lines that matter (a GPU fallen off the bus without an Xid, an API
mismatch, the loaded module version, GSP timeouts, module load errors).
Bus ids are normalised to the nvidia-smi form ``00000000:3B:00.0``.

``env`` facts: one :class:`EnvVar` per ``KEY=VALUE`` the evidence sets.
"""

from __future__ import annotations

from dataclasses import dataclass

from nccl_doctor.facts.base import Fact


@dataclass(frozen=True, slots=True, kw_only=True)
class XidEvent(Fact):
    """One ``NVRM: Xid (PCI:0000:3b:00): 79, pid=1234, name=python, <message>`` line.

    ``xid`` is the error number, ``bus_id`` the GPU (``00000000:3B:00.0``),
    ``pid``/``process_name`` the process the driver named (``None`` for
    ``<unknown>``), ``channel`` the ``Ch 00000008`` number (hex as printed),
    ``message`` the text after those fields and ``detail`` everything after
    the number, raw. ``caused_by_xid`` is the Xid of ``caused by previous
    Xid 149``. ``uuid`` is filled from an earlier ``GPU at PCI:...: GPU-...``
    line of the same bus. ``nvswitch`` marks an NVSwitch ``SXid``
    (``nvidia-nvswitch3: SXid (PCI:0000:88:00.0): 20034, Fatal, ...``), whose
    ``bus_id`` is the switch's. DCGM's report of one (``Detected XID 79 for GPU
    1``, dcgmi diag or health) is one too, cited at DCGM's line, its GPU a label.
    """

    xid: int | None
    bus_id: str | None = None
    pid: int | None = None
    process_name: str | None = None
    channel: str | None = None
    message: str | None = None
    detail: str = ""
    caused_by_xid: int | None = None
    uuid: str | None = None
    nvswitch: bool = False
    #: the driver's own name for the GPU (``GPU5``), where a line gives no bus id
    gpu_label: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class KernelGpuMessage(Fact):
    """A kernel line of the NVIDIA driver stack other than an Xid.

    ``kind``: ``gpu_identity`` (``GPU at PCI:...: GPU-<uuid>``),
    ``board_serial``, ``fallen_off_bus`` (``GPU has fallen off the bus`` /
    ``The NVIDIA GPU ... has fallen off the bus``), ``unsupported_gpu``,
    ``init_failed`` (``RmInitAdapter failed`` and the stages under it),
    ``probe_failed``, and why an init failed where the driver says it:
    ``no_power`` (power cables), ``bar_invalid`` (a BAR with no address),
    ``reset_needed`` (WPR2 up, GFW boot not done), ``no_firmware`` (no GSP
    firmware for the module),
    ``api_mismatch`` (client ``client_version`` vs kernel module
    ``version``), ``module_version`` (``loading NVIDIA UNIX ... Kernel Module
    535.104.05``; ``open_module`` for the open modules), ``gsp_timeout``,
    ``gsp_heartbeat_timeout``, ``gsp_error``, ``crash_dump``,
    ``memory_error``, ``driver_timeout``, ``detached`` (RM's check finds the GPU
    no longer attached, or a register read returns all ones), ``reboot_required``
    (nvidia-uvm's fatal error only a reboot clears), ``module_load_error`` and
    ``module_loaded`` (``module`` is ``nvidia_uvm``, ``nvidia_peermem``...),
    ``module_runtime_error`` (a loaded module's own error report: nvidia-peermem's
    ``<function>:<line> ERROR``),
    ``other`` (another driver line naming a GPU or an error). ``gpu_label``
    is a ``GPU6`` name where the driver gave no bus id; ``pci_device_id``
    the ``10de:26b5`` vendor:device. A multi-line message cites its first line.
    """

    kind: str
    bus_id: str | None = None
    gpu_label: str | None = None
    uuid: str | None = None
    serial: str | None = None
    version: str | None = None
    client_version: str | None = None
    open_module: bool | None = None
    module: str | None = None
    pci_device_id: str | None = None
    #: the driver status the line names (``NV_ERR_RESET_REQUIRED``), where
    #: :mod:`~nccl_doctor.knowledge.nv_status` keeps it
    status: str | None = None
    message: str = ""
    #: the message after the GPU's name (``GPU0 `` or ``GPU 0000:3b:00.0: ``), where the line
    #: gives one
    detail: str = ""


@dataclass(frozen=True, slots=True, kw_only=True)
class EnvVar(Fact):
    """An environment variable the evidence sets, with how it was set.

    ``form``: ``dump`` (a ``KEY=VALUE`` line of ``env``/``printenv``),
    ``export`` (``export KEY=VALUE``, ``declare -x``, ``setenv``, a
    Dockerfile ``ENV``), ``inline`` (``KEY=VALUE cmd ...`` before a command,
    ``env KEY=VALUE``, ``mpirun -x KEY=VALUE``, ``docker -e KEY=VALUE``),
    ``python`` (``os.environ["KEY"] = "VALUE"``, ``setdefault``, ``putenv``)
    ``yaml`` (a Kubernetes ``- name: KEY`` / ``value: VALUE`` pair) or ``echo``
    (``echo $KEY`` and the value it printed on the next line, cited there).
    ``value`` has shell/Python quotes removed; ``None`` when it is an
    expression that cannot be read (``str(port)``).
    """

    name: str
    value: str | None
    form: str


@dataclass(frozen=True, slots=True, kw_only=True)
class ShellVariable(Fact):
    """A variable a shell statement sets without exporting it, before no command
    (``CUDA_VISIBLE_DEVICES=1,2,3 ; python train.py``, ``$ NCCL_DEBUG=INFO``): the shell keeps
    it, and the programs it starts do not see it (unless the name was exported before, or an
    ``export NAME`` follows, which the env parser reads as an :class:`EnvVar`)."""

    name: str
    value: str | None
