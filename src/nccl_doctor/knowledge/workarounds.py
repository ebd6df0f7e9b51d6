"""Fix steps that mask a cause instead of repairing it, and how to tell a step's kind.

A step of a fix does one of three things: it **repairs** the cause (hardware,
configuration, code: reseat the GPU, start the fabric manager, set the right
interface, make every rank call the same collectives), it **checks** (a
command whose answer tells the cause apart, a rerun with a switch to see if it
changes anything), or it is a **workaround**: it turns off or pins part of
NCCL/PyTorch so the job runs, trading speed (or the report of a fault) for
stability while the cause stays. The kind is read from the step's mechanism,
by one table (:data:`MASKS`: each switch, the values that mask, and what it
trades) and one classifier (:func:`classify`), never per rule.

Sources for what each switch trades: the NCCL user guide, "Environment
Variables" (docs.nvidia.com/deeplearning/nccl/user-guide/docs/env.html) and
"Troubleshooting"; PyTorch's ``ProcessGroupNCCL.hpp`` (the TORCH_NCCL_*
switches) and ``DistributedDataParallel``'s documentation
(``find_unused_parameters``), read 2026-12-03; the costs are our summaries.
"""

from __future__ import annotations

import enum
import re
from dataclasses import dataclass


class FixKind(enum.Enum):
    """What a fix step does about the cause."""

    REPAIR = "repair"
    CHECK = "check"
    WORKAROUND = "workaround"


@dataclass(frozen=True, slots=True)
class Mask:
    """A switch that masks a cause: ``name=value`` for one of ``values`` (any value when empty).

    ``reason`` says what it trades and what stays broken; ``topics`` name what it
    hides (``p2p``, ``shm``, ``net``...), the words :mod:`nccl_doctor.knowledge.topics`
    relates to diagnosis ids.
    """

    name: str
    values: tuple[str, ...]
    reason: str
    topics: tuple[str, ...]
    #: it turns one of NCCL's paths off altogether (P2P, SHM, IB, GDR, NVLS): a failure that
    #: stays the same with it set is not on that path
    off: bool = False

    def masks(self, value: str | None) -> bool:
        """Whether setting the switch to ``value`` masks (``None``: the value is not known)."""
        if value is None:
            return not self.values
        text = value.strip().strip("'\"").upper()
        return bool(text) and (not self.values or text in self.values)


_ON = ("1", "TRUE", "YES", "ON")

# fmt: off
MASKS: tuple[Mask, ...] = (
    Mask("NCCL_P2P_DISABLE", _ON,
         "P2P off: GPUs of one host exchange data through host memory instead of NVLink/PCIe "
         "peer access (much slower); what breaks P2P (ACS/IOMMU, a VM, a bad NVLink) is still "
         "there", ("p2p", "nvlink"), off=True),
    Mask("NCCL_P2P_LEVEL", ("LOC", "0", "1", "NVL", "NVB", "PIX", "PXB", "C2C"),
         "P2P only between the nearest GPUs: the others go through host memory (slower); the "
         "broken path is avoided, not repaired", ("p2p", "nvlink")),
    Mask("NCCL_SHM_DISABLE", _ON,
         "shared memory off: GPUs without P2P talk through the network transport instead "
         "(slower); a small /dev/shm or a broken segment is still there", ("shm",), off=True),
    Mask("NCCL_IB_DISABLE", _ON,
         "InfiniBand/RoCE off: traffic between hosts goes over TCP sockets, several times "
         "slower; the IB fault is still there", ("net", "ib"), off=True),
    Mask("NCCL_NET_GDR_LEVEL", ("LOC", "0"),
         "GPUDirect RDMA off: network transfers are staged through host memory (CPU and PCIe "
         "cost); the peer-memory module or PCIe problem is still there", ("gdr", "net"), off=True),
    Mask("NCCL_NVLS_ENABLE", ("0",),
         "NVLink SHARP off: all-reduce does without NVSwitch multicast (slower on NVSwitch "
         "systems); the fabric problem is still there", ("nvls", "fabric"), off=True),
    Mask("NCCL_CUMEM_ENABLE", ("0",),
         "cuMem off: NCCL falls back to legacy IPC and loses NVLS and newer paths; the cuMem "
         "failure (driver, container) is still there", ("p2p", "nvls")),
    Mask("NCCL_PXN_DISABLE", _ON,
         "PXN off: each GPU sends through its own NIC only (slower rail-crossing traffic); the "
         "path PXN used is avoided, not repaired", ("net",)),
    Mask("NCCL_ALGO", (),
         "pins NCCL's algorithm choice for every message size: the tuned choice is lost (slower "
         "at some sizes) and the failing algorithm is only avoided", ("algo", "nccl")),
    Mask("NCCL_PROTO", (),
         "pins or excludes NCCL protocols: the failing protocol is avoided, not fixed, and "
         "small or large messages run slower", ("algo", "nccl")),
    Mask("NCCL_MAX_NCHANNELS", ("1", "2"),
         "one or two channels cut the bandwidth to a fraction; the load that exposed the fault "
         "is lower, the fault is still there", ("channels",)),
    Mask("NCCL_NET_PLUGIN", ("NONE",),
         "the vendor network plugin is not loaded: NCCL's own IB/socket path runs instead "
         "(without SHARP/CollNet); the plugin's problem is still there", ("plugin", "net")),
    Mask("NCCL_IB_TIMEOUT", (),
         "a longer InfiniBand timeout waits out a flapping link instead of failing: a real "
         "fault takes longer to show", ("net", "ib", "timeout")),
    Mask("NCCL_IB_RETRY_CNT", (),
         "more InfiniBand retries ride out packet loss instead of failing: a degrading link "
         "takes longer to show", ("net", "ib", "timeout")),
    Mask("TORCH_NCCL_ASYNC_ERROR_HANDLING", ("0",),
         "errors and timeouts no longer end the job: a failed collective hangs instead of "
         "being reported", ("timeout",)),
    Mask("NCCL_ASYNC_ERROR_HANDLING", ("0",),
         "errors and timeouts no longer end the job (old name of "
         "TORCH_NCCL_ASYNC_ERROR_HANDLING)", ("timeout",)),
    Mask("TORCH_NCCL_ENABLE_MONITORING", ("0",),
         "the heartbeat monitor no longer ends a stuck watchdog: the job hangs instead of "
         "ending", ("timeout",)),
    Mask("TORCH_NCCL_HEARTBEAT_TIMEOUT_SEC", (),
         "a longer heartbeat timeout waits longer for a stuck watchdog before ending the job",
         ("timeout",)),
    Mask("CUDA_LAUNCH_BLOCKING", _ON,
         "every kernel launch waits for the GPU (much slower): a race it hides is still there, "
         "and NCCL before 2.17 could hang with it", ("cuda",)),
)
# fmt: on

#: Mechanisms that are no variable: raising a timeout, DDP's search for unused parameters.
TIMEOUT = Mask(
    "timeout",
    (),
    "a longer timeout lets a slow step finish, but a stuck rank then hangs the job longer "
    "before anything reports it; the slowness is still there",
    ("timeout",),
)
UNUSED = Mask(
    "find_unused_parameters",
    (),
    "DDP searches the autograd graph for unused parameters every step: it tolerates them at a "
    "cost per step instead of making them contribute",
    ("app",),
)

_BY_NAME = {m.name: m for m in MASKS}
_SETTING = re.compile(r"\b([A-Z][A-Z0-9_]{2,})\s*=\s*([\^\w.,:;+-]+)")
_UNSET = re.compile(
    r"\b(?:remove|unset|drop|delete|clear|without|no longer)\b[^.;:]{0,20}$", re.IGNORECASE
)
_TIMEOUT = re.compile(
    r"\b(?:raise|increase|lengthen|longer)\b[^.;]{0,60}\btimeout|\bddp_timeout\b", re.IGNORECASE
)
_UNUSED = re.compile(r"\bfind_unused_parameters\s*=\s*True\b")
#: Words that say a step is a stopgap, whatever it sets.
_STOPGAP = re.compile(
    r"\b(?:workaround|stopgap|meanwhile|until (?:then|fixed|it is|the\b)|keeps? jobs? running"
    r"|for now|as a fallback)\b",
    re.IGNORECASE,
)
#: A step whose point is what its answer says (an experiment, a reading).
_LEARN = re.compile(
    r"\bif it (?:then )?(?:runs|works|passes|succeeds|hangs|fails)\b"
    r"|\bto (?:confirm|get|find|see|locate|learn|tell|check|show|know|narrow)\b"
    r"|\band (?:check|look|read|compare|watch|note|see)\b",
    re.IGNORECASE,
)
_CHECK_VERBS = frozenset(
    [
        "check",
        "recheck",
        "collect",
        "print",
        "read",
        "look",
        "list",
        "compare",
        "verify",
        "confirm",
        "dump",
        "analyse",
        "analyze",
        "inspect",
        "see",
        "watch",
        "attach",
        "get",
        "find",
        "test",
        "rerun",
        "measure",
        "save",
        "capture",
        "note",
    ]
)
_GUIDANCE = re.compile(r"^(?:ignore|treat|do not|don't|expect)\b", re.IGNORECASE)
#: ``Run`` followed by a tool whose output is the point.
_DIAGNOSTIC = re.compile(
    r"run\s+[`'\"]?(?:dcgmi diag|nccl-doctor|all_reduce_perf|nccl-tests|p2pBandwidthLatencyTest"
    r"|compute-sanitizer|nvidia-smi|ibstat|ibv_devinfo|py-spy|ip -br)",
    re.IGNORECASE,
)
_CLAUSE_END = re.compile(r";|,? and (?=[a-z]+ )|,? or (?=[a-z]+ )")
#: Verbs that change something: a check step that also does one of these repairs.
_ACTION = re.compile(
    r"(?:[;:]|,? and|,? then|,? or)\s+(?:stop|kill|set|unset|remove|install|upgrade|update"
    r"|reboot|reset|restart|replace|reseat|drain|load|reload|give|start|make|use|raise|move|pin"
    r"|open|(?:re-?)?enable|disable|fix|create|pass|build|reduce|free|select|point|hold|add"
    r"|mount|configure|change|allocate|launch|try|keep)\b",
    re.IGNORECASE,
)
#: ``Or ``/``Then `` and a short label (``Xid 13: ``, ``Until then: ``) before the step proper.
_LEAD = re.compile(r"^(?:or|then|also|and)\s+|^[\w.-]+(?: [\w.-]+)?:\s+(?=[a-z])", re.IGNORECASE)
_CLAUSE = re.compile(
    r"^(?:if|when|before|after|on|under|inside|from|for|once|where|while|in)\b[^,]{0,80},\s+",
    re.IGNORECASE,
)


@dataclass(frozen=True, slots=True)
class StepKind:
    """A step's kind, and for a workaround the switch it sets and what that trades."""

    kind: FixKind
    mask: Mask | None = None
    setting: str | None = None

    @property
    def reason(self) -> str | None:
        """What the workaround trades and what stays broken (``None`` for other kinds)."""
        return self.mask.reason if self.mask is not None else None


def is_switch(name: str) -> bool:
    """Whether ``name`` is one of the masking switches (whatever its value)."""
    return name in _BY_NAME


def mask_of(name: str, value: str | None) -> Mask | None:
    """The masking switch ``name=value`` is, if any."""
    mask = _BY_NAME.get(name)
    return mask if mask is not None and mask.masks(value) else None


def path_off(name: str, value: str | None) -> Mask | None:
    """The switch ``name=value`` if it turns one of NCCL's paths off; ``value`` ``None``: the
    switch named without a value, as people name the one they tried ("NCCL_P2P_DISABLE did
    not help"), read as set to turn it off."""
    mask = _BY_NAME.get(name)
    if mask is None or not mask.off:
        return None
    return mask if value is None or mask.masks(value) else None


def settings_masked(step: str) -> list[tuple[Mask, str, int]]:
    """The masking switches ``step`` sets: the switch, the setting as written, where it starts."""
    found: list[tuple[Mask, str, int]] = []
    for m in _SETTING.finditer(step):
        value = m.group(2).rstrip(".,;:")
        mask = mask_of(m.group(1), value)
        if mask is not None and not _UNSET.search(step[: m.start()]):
            found.append((mask, f"{m.group(1)}={value}", m.start()))
    if (t := _TIMEOUT.search(step)) and not re.search(
        r"\bdo not\b", step[: t.start()], re.IGNORECASE
    ):
        found.append((TIMEOUT, "a longer timeout", t.start()))
    if u := _UNUSED.search(step):
        found.append((UNUSED, "find_unused_parameters=True", u.start()))
    return sorted(found, key=lambda item: item[2])


def _body(step: str) -> str:
    """The step without its lead-in (``Or ``, ``Xid 13: ``, ``If ..., ``)."""
    text = step.strip()
    for _ in range(3):
        new = _CLAUSE.sub("", _LEAD.sub("", text, count=1), count=1)
        if new == text:
            break
        text = new
    return text


def _checks(body: str) -> bool:
    """Whether the step's point is information (a reading, an experiment, advice), no change."""
    words = body.split(maxsplit=1)
    first = words[0].lower().strip(":,") if words else ""
    if _GUIDANCE.match(body):
        return not _ACTION.search(body)
    if first not in _CHECK_VERBS and first != "run":
        return False
    if first == "run" and not (_LEARN.search(body) or _DIAGNOSTIC.match(body)):
        return False  # "Run the preprocessing once before the job" does something
    return not _ACTION.search(body) or bool(_LEARN.search(body.split(";", maxsplit=1)[0]))


def _experiment(step: str, start: int) -> bool:
    """Whether the clause holding the setting at ``start`` tries or reads, not configures."""
    bounds = [m.end() for m in _CLAUSE_END.finditer(step, 0, start)]
    clause = step[bounds[-1] if bounds else 0 :]
    clause = _CLAUSE_END.split(clause, maxsplit=1)[0]
    return _checks(_body(clause)) or bool(_LEARN.search(clause))


def classify(step: str) -> StepKind:
    """The kind of one fix step (see the module docstring), read from what it sets and does.

    A step that sets a masking switch is a workaround when it says it is a
    stopgap, or when the switch is set to run the job rather than to try or
    read something (``Rerun once with NCCL_P2P_DISABLE=1: if it then runs...``
    is a check).
    """
    masked = settings_masked(step)
    if masked and _STOPGAP.search(step):
        return StepKind(FixKind.WORKAROUND, masked[0][0], masked[0][1])
    if _checks(_body(step)):
        return StepKind(FixKind.CHECK)
    standing = [(mask, text) for mask, text, at in masked if not _experiment(step, at)]
    if standing:
        return StepKind(FixKind.WORKAROUND, standing[0][0], standing[0][1])
    return StepKind(FixKind.REPAIR)


def ordered(steps: tuple[str, ...] | list[str]) -> tuple[str, ...]:
    """``steps`` with every workaround after the others, each group in its given order."""
    kinds = [classify(s).kind for s in steps]
    first = [s for s, k in zip(steps, kinds, strict=True) if k is not FixKind.WORKAROUND]
    last = [s for s, k in zip(steps, kinds, strict=True) if k is FixKind.WORKAROUND]
    return (*first, *last)
