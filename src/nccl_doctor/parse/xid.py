"""The ``xid`` kind: kernel log lines of the NVIDIA driver (``NVRM:``, NVSwitch ``SXid``, modules).

The reader has removed dmesg/syslog stamps; a bare ``kernel: `` (journalctl
without date) or other text before ``NVRM:`` is skipped here. Xid lines of
every driver era are read: ``Xid (PCI:0000:3b:00): 79, pid=..., name=...,
GPU has fallen off the bus.``, the old ``Xid (0000:04:00): 13, ...`` without
``PCI:``, ``pid='<unknown>'``, ``Ch 00000008`` channels and ``caused by
previous Xid 149``. A ``GPU at PCI:...: GPU-<uuid>`` line names the UUID of
later Xids of the same bus, and the ``GPU Board Serial Number`` line after it.
Messages the driver spreads over several ``NVRM:`` lines (``The NVIDIA GPU
... has fallen off the bus``, ``API mismatch: the client has the version X,
but / this kernel module has the version Y``) become one fact citing the
first line.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import ClassVar

from nccl_doctor.evidence.lines import Line
from nccl_doctor.facts.base import Fact
from nccl_doctor.facts.host import KernelGpuMessage, XidEvent
from nccl_doctor.facts.store import is_prose
from nccl_doctor.knowledge.nv_status import status
from nccl_doctor.parse._lazy import LazyPattern
from nccl_doctor.parse._runtext import clip, to_int, who
from nccl_doctor.parse._values import cite
from nccl_doctor.parse.base import StreamParser

_BUS = r"[0-9a-fA-F]{1,8}:[0-9a-fA-F]{1,2}:[0-9a-fA-F]{1,2}(?:\.[0-7])?"
_XID = LazyPattern(rf"^Xid \((?:PCI:)?(?P<bus>{_BUS})\): (?P<xid>\d{{1,6}})(?:, ?(?P<detail>.*))?$")
_SXID = LazyPattern(
    rf"nvidia-nvswitch\d{{0,4}}: SXid \((?:PCI:)?(?P<bus>{_BUS})\): (?P<xid>\d{{1,6}})"
    r"(?:, ?(?P<detail>.*))?$"
)
_PID = LazyPattern(r"\bpid=(?:'?<unknown>'?|'?(?P<pid>\d{1,9})'?)")
_NAME = LazyPattern(r"\bname=(?P<name>[^,]{0,100})")
_CHANNEL = LazyPattern(r"\b(?:Ch|Channel ID|ChID) (?P<ch>[0-9a-fA-F]{2,8})\b")
_CAUSED = LazyPattern(r"caused by previous Xid (?P<x>\d{1,6})")
_LEADING = LazyPattern(
    r"^(?:pid=[^,]*|name=[^,]*|Ch [0-9a-fA-F]{2,8}|Channel ID [0-9a-fA-F]{2,8}"
    r"|intr [0-9a-fA-F]{1,8})[,.]?\s*"
)
_IDENTITY = LazyPattern(rf"^GPU at (?:PCI:)?(?P<bus>{_BUS}): (?P<uuid>GPU-[0-9a-fA-F-]{{8,40}})")
_SERIAL = LazyPattern(r"^GPU Board Serial Number: (?P<s>\S{1,40})")
_GPU_BUS = LazyPattern(rf"^GPU (?P<bus>{_BUS}): (?P<msg>.*)$")
_GPU_LABEL = LazyPattern(r"^(?P<label>GPU\d{1,4}) (?P<msg>.*)$")
_THE_GPU = LazyPattern(rf"^The NVIDIA GPU (?P<bus>{_BUS})(?P<rest>.*)$")
_PCI_ID = LazyPattern(r"PCI ID: (?P<id>[0-9a-fA-F]{4}:[0-9a-fA-F]{4})")
_CLIENT = LazyPattern(r"API mismatch: the client has the version (?P<v>[\w.-]{1,40}), but")
_MODULE_V = LazyPattern(r"this kernel module has the version (?P<v>\d[\w.-]{0,39}?)\.?(?:\s|$)")
_LOADING = LazyPattern(
    r"loading NVIDIA UNIX (?P<open>Open )?(?:\w{1,12} )?Kernel Module(?: for \w{1,12})?"
    r"\s+(?P<v>\d{2,4}\.\d{1,4}(?:\.\d{1,4})?)"
)
_MODULE = LazyPattern(r"nvidia[-_](?P<m>peermem|uvm)")
_MODULE_ERR = LazyPattern(
    r"Unknown symbol|disagrees|could not insert|not found|Invalid|ERROR|[Ee]rror|[Ff]ail"
)
#: robust-channel recovery tearing down every channel of a GPU (gpu/rc/kernel_rc.c, 565+):
#: its number is the error that made it, an Xid (nverror.h: 79 fallen off the bus, 119 a GSP
#: RPC timeout, 48 a double-bit ECC error), printed even where the Xid line is not
_RC_ALL = LazyPattern(r"\bRC all (?:user )?channels for critical error (?P<xid>\d{1,6})\b")
_STATUS_NAME = LazyPattern(r"\[(?P<name>NV_ERR_[A-Z0-9_]{2,60})\]")
#: a status quoted by number: nvidia-uvm's fatal error (nv_gpu_ops.c), a GSP RPC that could
#: not be sent or answered and an RM call the GSP refused (vgpu/rpc.c)
_STATUS_CODE = LazyPattern(
    r"(?:global fatal error|failed with status|\bstatus=) ?0x(?P<code>[0-9A-Fa-f]{1,8})\b"
)
_PEERMEM_RUNTIME = LazyPattern(r"nvidia-peermem \w{1,60}:\d{1,6} ERROR ")
_ERRORISH = LazyPattern(r"[Ee]rror|[Ff]ail|[Tt]imeout|timed out|not responding|fallen off")


def bus_id(text: str | None) -> str | None:
    """``0000:3b:00`` / ``0000:b3:00.0`` as nvidia-smi's ``00000000:3B:00.0``, else ``None``."""
    if not text:
        return None
    head, _, func = text.partition(".")
    parts = head.split(":")
    if len(parts) != 3:
        return None
    try:
        domain, bus, dev = (int(p, 16) for p in parts)
        fn = int(func or "0", 16)
    except ValueError:
        return None
    if domain > 0xFFFFFFFF or bus > 0xFF or dev > 0xFF or fn > 7:
        return None
    return f"{domain:08X}:{bus:02X}:{dev:02X}.{fn:X}"


def _gpu_kind(msg: str) -> str | None:
    """The kind of an NVRM message about one GPU, ``None`` when it is not worth a fact."""
    low = msg.lower()
    if "fallen off the bus" in low:
        return "fallen_off_bus"
    # RM's timeout check finds the GPU no longer attached (thread_state.c), an interrupt's
    # register read returns all ones (intr.c): the GPU does not answer on the bus
    if "api_gpu_attached_sanity_check failed" in low or "whether gpu is present on the bus" in low:
        return "detached"
    # nvidia-uvm's fatal error that RM can only clear with a reboot (nv_gpu_ops.c, 565+)
    if "requiring os reboot to recover" in low:
        return "reboot_required"
    init = _init_kind(low)
    if init is not None:
        return init
    if "heartbeat" in low and ("timed out" in low or "timeout" in low):
        return "gsp_heartbeat_timeout"
    if "gsp" in low and ("timeout" in low or "timed out" in low):
        return "gsp_timeout"
    # the RPC layer's own word is "timedout" (vgpu/rpc.c: "rpcRecvPoll timedout for fn %d")
    if "rpc" in low and ("timeout" in low or "timed out" in low or "timedout" in low):
        return "gsp_timeout"
    if ("gsp" in low or "rpc" in low) and ("fail" in low or "error" in low):
        # an RM call the GSP refused with a caller's status (an argument, a class a tool
        # asked for: rpc.c prints those at WARNING on a healthy GPU) is no GSP failure
        code = _quoted_status(msg)
        return "other" if code is not None and status(code=code) is None else "gsp_error"
    if "memory subsystem error" in low or ("ecc" in low and "error" in low):
        return "memory_error"
    if "timeout" in low or "timed out" in low:
        return "driver_timeout"
    if _ERRORISH.search(msg):
        return "other"
    return None


#: The driver's words when it cannot bring a GPU up at load (595.45.04: arch/nvalloc/unix/src
#: osinit.c's RmInitAdapter and its stages, kernel/gpu/gsp/kernel_gsp.c's GSP boot, nv.c's
#: checks of the board): the kind each one is, most specific first
_INIT_FAILURES: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("no_power", ("necessary power cables",)),
    ("no_firmware", ("no firmware image found",)),
    # WPR2 (GSP's protected region) still up, or the VBIOS's own boot (GFW) not done: an earlier
    # driver or a crash left the GPU in a bad state
    ("reset_needed", ("wpr2 already up", "likely in a bad state", "gfw boot")),
    ("bar_invalid", ("pci i/o region assigned to your nvidia device is invalid", " is 0m @ ")),
    (
        "init_failed",
        (
            "rminitadapter",
            "rm_init_adapter failed",
            "cannot initialize gsp firmware",
            "gsp-rm boot attempts exceeded",
            "failed to boot gsp",
            "cannot attach gpu",
            "failed to copy vbios",
            "module->open() failed",
        ),
    ),
)


def _init_kind(low: str) -> str | None:
    """The kind of a driver line that says a GPU could not be initialised, else ``None``."""
    return next((kind for kind, words in _INIT_FAILURES if any(w in low for w in words)), None)


def _quoted_status(msg: str) -> int | None:
    """The driver status an NVRM message quotes by number (``status=0x0000000f``), kept or
    not."""
    m = _STATUS_CODE.search(msg)
    return int(m["code"], 16) if m else None


def _status(msg: str) -> str | None:
    """The driver status an NVRM message names (``[NV_ERR_GPU_IS_LOST]``) or quotes by number
    (``global fatal error 0x60``), where :mod:`~nccl_doctor.knowledge.nv_status` keeps it."""
    if m := _STATUS_NAME.search(msg):
        return m["name"] if status(name=m["name"]) else None
    if (code := _quoted_status(msg)) is not None:
        kept = status(code=code)
        return kept.name if kept else None
    return None


@dataclass(slots=True)
class _Pending:
    """A driver message spread over several NVRM lines."""

    line: Line
    kind: str
    text: str
    bus: str | None = None
    client_version: str | None = None
    lines: int = 1


class XidParser(StreamParser):
    """Reads Xid/SXid events and the other NVIDIA driver kernel messages."""

    kind: ClassVar[str] = "xid"
    anchors: ClassVar[tuple[str, ...]] = (
        "NVRM:",
        "SXid (",
        "nvidia_peermem",
        "nvidia-peermem",
        "nvidia_uvm",
        "nvidia-uvm",
    )

    def __init__(self) -> None:
        super().__init__()
        self._uuids: dict[str, str] = {}
        self._identity: tuple[int, str] | None = None
        self._pending: _Pending | None = None

    def feed(self, line: Line) -> bool:
        """Take one driver kernel line."""
        text = line.text
        at = text.find("NVRM:")
        if at < 0:
            return self._other(line, text)
        msg = text[at + 5 :].strip()
        if msg.startswith("Xid") and not _XID.match(msg) and is_prose(text[:at]):
            # a person's sentence naming an Xid without the driver's line ("dmesg shows NVRM:
            # Xid 79 on one GPU"): words, read as such (the Xid by its number, the symptom)
            return False
        if self._pending is not None and self._continues(self._pending, line, msg):
            return True
        self._flush()
        self._nvrm(line, msg)
        return True

    def finish(self) -> list[Fact]:
        """Emit a multi-line message still waiting for its end."""
        self._flush()
        return self.take()

    # -- NVRM lines -------------------------------------------------------------
    def _nvrm(self, line: Line, msg: str) -> None:
        base = who(line, line.rank)
        if msg.startswith("Xid") and (m := _XID.match(msg)):
            self.emit(self._xid(line, m, nvswitch=False))
            return
        if m := _IDENTITY.match(msg):
            bus = bus_id(m["bus"])
            if bus is not None:
                self._uuids[bus] = m["uuid"]
                self._identity = (line.number, bus)
            self.emit(
                KernelGpuMessage(
                    **base, kind="gpu_identity", bus_id=bus, uuid=m["uuid"], message=clip(msg)
                )
            )
            return
        if m := _SERIAL.match(msg):
            bus = None
            if self._identity is not None and line.number - self._identity[0] <= 3:
                bus = self._identity[1]
            self.emit(
                KernelGpuMessage(
                    **base,
                    kind="board_serial",
                    bus_id=bus,
                    uuid=self._uuids.get(bus or ""),
                    serial=m["s"],
                    message=clip(msg),
                )
            )
            return
        if m := _THE_GPU.match(msg):
            self._pending = _Pending(line=line, kind="the_gpu", text=msg, bus=bus_id(m["bus"]))
            self._complete(self._pending)
            return
        if m := _CLIENT.search(msg):
            self._pending = _Pending(
                line=line, kind="api_mismatch", text=msg, client_version=m["v"]
            )
            self._complete(self._pending)
            return
        if "this kernel module has the version" in msg and (m := _MODULE_V.search(msg)):
            self.emit(
                KernelGpuMessage(**base, kind="api_mismatch", version=m["v"], message=clip(msg))
            )
            return
        if m := _LOADING.search(msg):
            self.emit(
                KernelGpuMessage(
                    **base,
                    kind="module_version",
                    version=m["v"],
                    open_module=m["open"] is not None,
                    message=clip(msg),
                )
            )
            return
        if "crash dump has been created" in msg:
            self.emit(KernelGpuMessage(**base, kind="crash_dump", message=clip(msg)))
            return
        if "probe routine" in msg or "None of the NVIDIA devices were initialized" in msg:
            self.emit(KernelGpuMessage(**base, kind="probe_failed", message=clip(msg)))
            return
        if msg.startswith(("No NVIDIA GPU found", "No NVIDIA devices probed")):
            self.emit(KernelGpuMessage(**base, kind="no_gpu", message=clip(msg)))
            return
        bus = label = None
        if m := _GPU_BUS.match(msg):
            bus, detail = bus_id(m["bus"]), m["msg"]
        elif m := _GPU_LABEL.match(msg):
            label, detail = m["label"], m["msg"]
        else:
            detail = msg
        if rc := _RC_ALL.search(detail):
            self.emit(
                XidEvent(
                    cite=cite(line),
                    rank=line.rank,
                    host=line.host,
                    xid=to_int(rc["xid"]),
                    bus_id=bus,
                    message=clip(detail),
                    detail=clip(detail),
                    uuid=self._uuids.get(bus or ""),
                    gpu_label=label,
                )
            )
            return
        kind = _gpu_kind(detail)
        if kind is not None:
            self.emit(
                KernelGpuMessage(
                    **base,
                    kind=kind,
                    status=_status(detail),
                    bus_id=bus,
                    gpu_label=label,
                    uuid=self._uuids.get(bus or ""),
                    message=clip(msg),
                    detail=clip(detail) if bus or label else "",
                )
            )

    def _xid(self, line: Line, m: re.Match[str], nvswitch: bool) -> XidEvent:
        detail = (m["detail"] or "").strip()
        pid_m = _PID.search(detail)
        name_m = _NAME.search(detail)
        name = name_m["name"].strip().strip("'") if name_m else None
        channel_m = _CHANNEL.search(detail)
        caused = _CAUSED.search(detail)
        message = detail
        for _ in range(8):
            stripped = _LEADING.sub("", message, count=1)
            if stripped == message:
                break
            message = stripped
        bus = bus_id(m["bus"])
        return XidEvent(
            cite=cite(line),
            rank=line.rank,
            host=line.host,
            xid=to_int(m["xid"]),
            bus_id=bus,
            pid=to_int(pid_m["pid"]) if pid_m and pid_m["pid"] else None,
            process_name=None if not name or name == "<unknown>" else name,
            channel=channel_m["ch"] if channel_m else None,
            message=clip(message) if message.strip() else None,
            detail=clip(detail),
            caused_by_xid=to_int(caused["x"]) if caused else None,
            uuid=None if nvswitch else self._uuids.get(bus or ""),
            nvswitch=nvswitch,
        )

    # -- multi-line messages ----------------------------------------------------------
    def _continues(self, pending: _Pending, line: Line, msg: str) -> bool:
        if pending.kind == "done" or line.number != pending.line.number + pending.lines:
            return False
        if pending.lines >= 6:
            return False
        if msg.startswith(("Xid", "GPU at ", "GPU Board", "loading NVIDIA", "API mismatch")):
            return False
        pending.text = f"{pending.text} {msg}"
        pending.lines += 1
        if pending.kind == "api_mismatch" and (m := _MODULE_V.search(msg)):
            self._emit_pending(pending, version=m["v"])
            pending.kind = "done"
        self._complete(pending)
        return True

    def _complete(self, pending: _Pending) -> None:
        """Emit a 'The NVIDIA GPU ...' message once its sentence ended."""
        if pending.kind == "the_gpu" and pending.text.rstrip().endswith("."):
            self._emit_pending(pending)
            pending.kind = "done"

    def _flush(self) -> None:
        pending, self._pending = self._pending, None
        if pending is not None and pending.kind != "done":
            self._emit_pending(pending)

    def _emit_pending(self, pending: _Pending, version: str | None = None) -> None:
        line, text = pending.line, pending.text
        if pending.kind == "api_mismatch":
            kind = "api_mismatch"
        else:
            low = text.lower()
            if "fallen off the bus" in low:
                kind = "fallen_off_bus"
            elif "not supported" in low:
                kind = "unsupported_gpu"
            else:
                kind = _gpu_kind(text) or "other"
        pci = _PCI_ID.search(text)
        self.emit(
            KernelGpuMessage(
                cite=cite(line),
                rank=line.rank,
                host=line.host,
                kind=kind,
                bus_id=pending.bus,
                uuid=self._uuids.get(pending.bus or ""),
                version=version,
                client_version=pending.client_version,
                pci_device_id=pci["id"].lower() if pci else None,
                message=clip(text),
            )
        )

    # -- other driver lines ---------------------------------------------------------------
    @staticmethod
    def _module_window(text: str, m: re.Match[str]) -> tuple[int, int]:
        """Where a module's load error is read: the whole line the kernel or modprobe
        printed, or, in a person's sentence, the words right after the module's name
        ("nvidia-peermem fails to load", not "training fails ... nvidia-peermem is loaded")."""
        if is_prose(text):
            return m.start(), min(len(text), m.end() + 50)
        return 0, len(text)

    def _other(self, line: Line, text: str) -> bool:
        if "SXid (" in text and (m := _SXID.search(text)):
            self._flush()
            self.emit(self._xid(line, m, nvswitch=True))
            return True
        m = _MODULE.search(text)
        if m is None:
            return False
        module = f"nvidia_{m['m']}"
        if "Loaded the UVM driver" in text:
            kind = "module_loaded"
        elif _PEERMEM_RUNTIME.search(text):
            # the loaded module's own error report on a mapping (nvidia-peermem.c peer_err:
            # "nvidia-peermem <function>:<line> ERROR ..."), printed when a process frees
            # GPU memory an RDMA mapping still held (a rank's exit): not a load failure
            kind = "module_runtime_error"
        elif _MODULE_ERR.search(text, *self._module_window(text, m)):
            kind = "module_load_error"
        else:
            return False
        self._flush()
        self.emit(
            KernelGpuMessage(
                cite=cite(line),
                rank=line.rank,
                host=line.host,
                kind=kind,
                module=module,
                message=clip(text),
            )
        )
        return True
