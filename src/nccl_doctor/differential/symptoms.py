"""Symptom classes: what kind of failure the evidence shows, read from typed facts.

A symptom class names the shape of a failure as an expert would sort it
before knowing the cause: NCCL's system error, an unhandled CUDA error, CUDA's
unknown error, a collective that timed out, a rank killed by a signal... Each
class has a prior over catalogue ids (:mod:`nccl_doctor.differential.priors`).
The class comes from the failure's typed fact (the NCCL result code, the CUDA
error number, the signal), never from re-reading its text.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from nccl_doctor.differential.phases import WHERE, phase_of
from nccl_doctor.facts.base import PARAGRAPH_MAX, Cite, Fact
from nccl_doctor.facts.catalogue import NET_PLUGINS, message_of, signature_of
from nccl_doctor.facts.nccl import NcclTestRow, NcclTestSummary, NcclWarn
from nccl_doctor.facts.run import (
    C10dSocketError,
    ChildFailure,
    CollectiveTimeout,
    CppException,
    CudaError,
    CudaOutOfMemory,
    DistributedError,
    NcclErrorReport,
    PythonTraceback,
    RendezvousTimeout,
    WorkerExit,
)
from nccl_doctor.facts.store import is_prose
from nccl_doctor.facts.text import TextLine
from nccl_doctor.knowledge import cuda_errors, nccl_results
from nccl_doctor.knowledge.python_exceptions import APP_EXCEPTIONS, IMPORT_EXCEPTIONS
from nccl_doctor.knowledge.signals import signal_name
from nccl_doctor.knowledge.signatures import Signature, by_id

if TYPE_CHECKING:
    from nccl_doctor.differential.prose import Said

#: ncclResult_t by number (src/nccl.h.in): the class each result opens.
NCCL_RESULT_CLASS = {
    1: "nccl_unhandled_cuda",
    2: "nccl_system",
    3: "nccl_internal",
    4: "nccl_invalid",
    5: "nccl_invalid",
    6: "nccl_remote",
}
_NCCL_RESULT_NAME = {
    "ncclUnhandledCudaError": 1,
    "ncclSystemError": 2,
    "ncclInternalError": 3,
    "ncclInvalidArgument": 4,
    "ncclInvalidUsage": 5,
    "ncclRemoteError": 6,
}
#: cudaErrorUnknown is 999 since CUDA 10.1; before it the runtime numbered it 30.
_CUDA_UNKNOWN = frozenset({999, 30})
#: The class of a rank stopped by a signal another process sent (SIGTERM, SIGINT, SIGHUP):
#: the sender had its reason, so any other failure, or the reporter's words, say more.
TERMINATED = "terminated"
#: The class of a death by each fatal signal (the signature catalogue splits messages by it).
SIGNAL_CLASS = {
    "SIGKILL": "killed",
    "SIGSEGV": "crashed",
    "SIGBUS": "bus_error",
    "SIGABRT": "aborted",
    "SIGFPE": "crashed",
    "SIGILL": "crashed",
    "SIGTERM": TERMINATED,
    "SIGINT": TERMINATED,
    "SIGHUP": TERMINATED,
}

#: The scheduler's notices that it stopped the job as routine (preempted, requeued): a rank
#: stopped then is no failure.
ROUTINE_STOPS = frozenset({"slurm.stepd.cancelled_preemption", "slurm.stepd.cancelled_requeue"})

#: What each class is called in a report.
LABELS = {
    "nccl_system": "NCCL reported a system error (ncclSystemError)",
    "nccl_unhandled_cuda": "NCCL reported an unhandled CUDA error (ncclUnhandledCudaError)",
    "nccl_internal": "NCCL reported an internal error (ncclInternalError)",
    "nccl_invalid": "NCCL rejected its arguments or usage (ncclInvalidArgument/ncclInvalidUsage)",
    "nccl_remote": "NCCL reported a remote error (ncclRemoteError): a peer or the network failed",
    "cuda_unknown": "CUDA returned its unknown error (999, or 30 before CUDA 10.1)",
    "collective_timeout": "a collective timed out (watchdog)",
    "store_timeout": "the rendezvous or the c10d store timed out or could not connect",
    "gpu_oom": "CUDA ran out of memory",
    "killed": "a rank was killed (SIGKILL / exit 137)",
    "crashed": "a rank crashed (SIGSEGV, SIGFPE or SIGILL)",
    "bus_error": "a rank died of a bus error (SIGBUS): a memory-mapped file it touched is gone",
    "aborted": "a rank aborted (SIGABRT)",
    TERMINATED: "a rank was stopped by a signal from outside it (SIGTERM, SIGINT or SIGHUP)",
    "hang": "the job hangs without an error (the reporter's words)",
    "time_limit": "the scheduler ended the job at its time limit, with no error of its own",
    "node_lost": "the scheduler or the launcher lost a node of the job (it crashed, hung or "
    "left the network)",
    "peer_lost": "a process of the job stopped answering the service that watches it (a "
    "task's heartbeats lost: it died, was preempted or its host left)",
    "slow": "the job or a benchmark is slow, with no error (the reporter's words)",
    "power_loss": "the whole machine powered off or restarted under the job (the reporter's words)",
    "slow_network": "nccl-tests across nodes moved far less than the nodes' active ports carry",
    "wrong_results": "a collective returned wrong values (nccl-tests' #wrong, or the "
    "reporter's words)",
    "gpu_imbalance": "the job's processes or memory land on GPU 0 or on GPUs it did not ask for",
    "desync": "ranks issued different collectives (a desync report)",
    "cuda_error": "a CUDA call failed",
    "cuda_fault": "a kernel or the GPU faulted (a sticky CUDA error: the context is lost)",
    "cuda_assert": "a kernel's device-side assertion failed (the job's own index or value)",
    "cuda_device": "CUDA could not give the process the GPU it asked for",
    "cuda_driver": "the CUDA driver or runtime could not start (versions, initialisation)",
    "xid": "the driver logged a GPU fault (Xid)",
    "host_oom": "the kernel's OOM killer ended a process",
    "host_limit": "a system call hit a host limit (memory, file descriptors, disk or /dev/shm)",
    "library_missing": "a shared library could not be loaded",
    "driver_error": "the NVIDIA driver or NVML failed",
    "store_create": "the c10d store could not be set up (a traceback through the rendezvous)",
    "cuda_init": "CUDA failed to initialise (a traceback through torch.cuda's first call)",
    "comm_init": "the first collective failed (where NCCL builds its communicator)",
    "ddp_usage": "DDP refused the model or its gradients (a usage error in the training code)",
    "connection": "a TCP connection between ranks failed or closed (gloo's or UCX's sockets)",
    "rdma_completion": "an RDMA transfer completed with an error (the transport under the job)",
    "pcie_error": "the kernel logged an uncorrectable PCIe error (AER) on a device or its link",
    "host_io": "a kernel thread of the host's I/O stack (journal, writeback) stopped for minutes",
    "app_error": "the job's own code raised a Python exception (its data or logic)",
    "nvshmem": "NVSHMEM could not start or move data (DeepEP, symmetric memory): a transport, "
    "its memory or its peers",
    "deepep_timeout": "a DeepEP dispatch or combine waited ~100 s for a peer that never sent "
    "(its kernel then trapped)",
    "failure": "a rank failed with an error the catalogue does not classify",
}


#: The signature of a symptom only the reporter's sentences show.
SAID = "the reporter's words"


@dataclass(frozen=True, slots=True)
class Symptom:
    """One failure, sorted into its class, with the line that shows it."""

    cls: str
    cite: Cite
    rank: int | None = None
    #: the catalogued message it was read as, and the ids that message points at
    signature: str | None = None
    where: str | None = None
    hints: tuple[str, ...] = ()
    #: what the report calls it where the class's own name does not fit (a stall machine
    #: output shows, not the reporter's words)
    named: str | None = None

    @property
    def label(self) -> str:
        """The class as a report names it."""
        return self.named or LABELS[self.cls]


def _nccl_class(fact: NcclErrorReport) -> str | None:
    code = fact.result_code
    if code is None and fact.result_name:
        code = _NCCL_RESULT_NAME.get(fact.result_name)
    return NCCL_RESULT_CLASS.get(code) if code is not None else None


def _signal(exitcode: int | None, name: str | None) -> str | None:
    """The class of a death by signal: the name given, or the one the exit code stands for
    (a negative code, or a shell's 128 + N)."""
    name = signal_name(exitcode, name)
    return SIGNAL_CLASS.get(name) if name else None


def class_of(fact: Fact) -> str | None:
    """The symptom class a failure fact opens, or ``None`` for one that opens none.

    (c10d's warning for one address family it could not resolve is no failure:
    :mod:`nccl_doctor.facts.failures` never lists it.)
    """
    if isinstance(fact, NcclErrorReport):
        return _nccl_class(fact)
    if isinstance(fact, CudaError):
        if fact.code in _CUDA_UNKNOWN and (fact.code == 999 or "unknown" in (fact.error or "")):
            return "cuda_unknown"
        return None
    if isinstance(fact, CudaOutOfMemory):
        return "gpu_oom"
    if isinstance(fact, CollectiveTimeout):
        return "collective_timeout"
    if isinstance(fact, RendezvousTimeout | C10dSocketError):
        return "store_timeout"
    if isinstance(fact, ChildFailure | WorkerExit):
        return _signal(fact.exitcode, fact.signal_name)
    if isinstance(fact, NcclTestSummary | NcclTestRow):
        return "wrong_results"  # (only its failures reach here: wrong values counted)
    return None


def _python_class(fact: Fact) -> str:
    """A failure no message classifies: the job's own code, a missing library, or unknown.

    A builtin exception about data or logic (``KeyError: 'input_ids'``) is the
    job's own error; an import that failed is a library problem. Anything else
    (``RuntimeError`` carries every torch error) stays a generic failure.
    """
    name = fact.exc_name if isinstance(fact, PythonTraceback) else None
    if name in APP_EXCEPTIONS:
        return "app_error"
    if name in IMPORT_EXCEPTIONS:
        return "library_missing"
    return "failure"


def _any_failure(fact: Fact) -> bool:
    if isinstance(fact, PythonTraceback):
        return bool(fact.exc_type)
    if isinstance(fact, NcclWarn | DistributedError):
        return True
    return isinstance(fact, ChildFailure | WorkerExit) and fact.exitcode not in (None, 0)


def _text_of(fact: Fact) -> str:
    if isinstance(fact, TextLine):  # the whole line (a citation holds its first 400 characters)
        return fact.text[:PARAGRAPH_MAX]
    message = getattr(fact, "message", "")
    if isinstance(message, str) and message:
        return f"{message} {fact.cite.text}" if message not in fact.cite.text else fact.cite.text
    return fact.cite.text


def _from_catalogue(fact: Fact) -> Symptom | None:
    found = _catalogued(fact, _text_of(fact))
    if (
        (found is None or _relays(found))
        and isinstance(fact, PythonTraceback)
        and fact.message_lines
    ):
        # an exception whose first line names nothing holds its cause further down (XLA's
        # "custom call 'xla.gpu.all_reduce' failed:", then the NCCL call that failed and why;
        # Ray's "The actor died unexpectedly", then the death cause the GCS recorded)
        whole = " ".join((fact.cite.text, *fact.message_lines))[:PARAGRAPH_MAX]
        found = _catalogued(fact, whole) or found
    return found


def _catalogued(fact: Fact, text: str) -> Symptom | None:
    sig = message_of(text)
    if sig is None:
        return _from_result_text(fact, text)
    return Symptom(sig.symptom, fact.cite, fact.rank, sig.id, sig.location(), sig.hint_ids)


def _from_result_text(fact: Fact, text: str) -> Symptom | None:
    """The class of an NCCL result quoted in a wrapper's own words: ``ncclGetErrorString``'s
    text (``unhandled cuda error (run with NCCL_DEBUG=INFO for details)``) is what every
    binding raises (vLLM's and CuPy's ``NCCL error: X``, Horovod's ``ncclAllReduce failed:
    X``), whatever it prints around it. A short form counts beside the word NCCL only."""
    result = nccl_results.from_message(text)
    low = text.lower()
    if result is None and "nccl" in low and nccl_results.unknown_result_in(text):
        # a code the reader's enum lacks: another NCCL build returned it
        where = "the default branch of NCCL ncclGetErrorString or torch getNcclErrorDetailStr"
        hints = (nccl_results.UNKNOWN_RESULT_ID,)
        return Symptom("failure", fact.cite, fact.rank, "nccl.result.unknown", where, hints)
    cls = NCCL_RESULT_CLASS.get(result.code) if result is not None else None
    if result is None or cls is None:
        return None
    if "nccl" not in low and result.message.lower() not in low:
        return None  # a short text ("invalid argument", "internal error") CUDA or others print
    where = "NCCL src/init.cc ncclGetErrorString"
    return Symptom(cls, fact.cite, fact.rank, f"nccl.result.{result.name}", where)


def _cuda_entry(fact: CudaError) -> cuda_errors.CudaError | None:
    """The CUDA error a fact names: by its message, else its number (pre-10.1 aware)."""
    if fact.error and (err := cuda_errors.by_message(fact.error)) is not None:
        return err
    if fact.code is None:
        return None
    if fact.kind == "legacy" and (old := cuda_errors.legacy_by_code(fact.code)) is not None:
        return old[1]
    return cuda_errors.by_code(fact.code)


def _cuda_symptom(fact: CudaError) -> Symptom | None:
    """A CUDA error's class and the id its catalogue row points at, from its number or name.

    However it was printed (PyTorch's ``CUDA error: X``, NCCL's ``Cuda failure
    N 'X'``, THC's ``cuda runtime error (N)``, a ``CUDA_ERROR_X`` name), the
    error is one row of CUDA's enum (:mod:`nccl_doctor.knowledge.cuda_errors`).
    """
    if fact.kind in ("driver", "async_note"):
        return None
    err = _cuda_entry(fact)
    if err is None:
        return None
    cls = cuda_errors.symptom_class(err)
    hints = (err.diagnosis_id,) if err.diagnosis_id else ()
    if fact.kind == "device_assert":  # the kernel's assertion line itself
        cls, hints = "cuda_assert", ("cuda.device_assert",)
    signature = cuda_errors.catalogue_id(err) or err.name or err.driver_name
    return Symptom(cls, fact.cite, fact.rank, signature, "CUDA's error enum", hints)


#: The libraries whose WARNs NCCL keeps as its last error: its own, and a network plugin's
#: (the plugin logs through NCCL's logger).
_LAST_ERROR = frozenset({"nccl", *NET_PLUGINS})


def _quoted_reasons(failures: tuple[Fact, ...], quoted: tuple[str, ...] = ()) -> list[Signature]:
    """The catalogued NCCL messages PyTorch quotes after ``Last error:`` (``ncclGetLastError``:
    NCCL's own last WARN, or its network plugin's) whose rows point at a cause (a CUDA
    error NCCL quotes there is read as one already: :func:`_cuda_symptom`). ``quoted``: the
    lines after a ``Last error:`` no report fact holds (a paste without its first line)."""
    texts = [t for f in failures if isinstance(f, NcclErrorReport) for t in f.last_error]
    out = []
    for text in (*texts, *quoted):
        sig = signature_of(text)
        if sig is None or sig.library not in _LAST_ERROR or not sig.hint_ids:
            continue
        if sig not in out:
            out.append(sig)
    return out


#: Messages that only restate an NCCL result (PyTorch's detail text for each ncclResult_t,
#: ncclGetErrorString's): their ids are the result's usual causes, which the WARN NCCL
#: printed for this failure narrows down.
_RESULT_TEXTS = ("torch.nccl.detail.", "nccl.result.")


def _with_reason(symptom: Symptom, reasons: list[Signature]) -> Symptom:
    """``symptom`` read from the quoted WARN of its own class, where one says which cause: the
    result code (``invalid argument``) gives the class, NCCL's WARN (``Invalid config blocking
    attribute value -2147483648``: a caller built for a newer NCCL) which of its causes."""
    if symptom.hints and not (symptom.signature or "").startswith(_RESULT_TEXTS):
        return symptom
    for sig in reasons:
        if sig.symptom == symptom.cls:
            return replace(symptom, signature=sig.id, where=sig.location(), hints=sig.hint_ids)
    return symptom


def symptom_of(fact: Fact) -> Symptom | None:
    """The symptom one failure fact shows: its typed class, else its catalogued message."""
    cls = class_of(fact)
    if cls:
        return Symptom(cls, fact.cite, fact.rank)
    if isinstance(fact, CudaError) and (cuda := _cuda_symptom(fact)) is not None:
        return cuda
    found = _from_catalogue(fact)
    if found is None and isinstance(fact, CppException) and fact.exc_type:
        # an uncaught C++ exception whose what() no message classifies: std::terminate aborts
        return Symptom("aborted", fact.cite, fact.rank)
    return found


def _relays(symptom: Symptom) -> bool:
    """Read from a message that only passes on another's text (``CUDA initialization: X``):
    the fact that reads ``X`` itself, where there is one, says more."""
    sig = by_id().get(symptom.signature or "")
    return sig is not None and sig.relays


def _phase(tracebacks: tuple[PythonTraceback, ...]) -> Symptom | None:
    """The first traceback that failed inside one of PyTorch's start-up phases."""
    for tb in tracebacks:
        if found := phase_of(tb):
            cls, frame = found
            return Symptom(cls, tb.cite, tb.rank, signature=frame, where=WHERE[cls])
    return None


def _all_in_words(found: dict[str, Symptom]) -> bool:
    """Whether every symptom found was read from a reporter's sentence (a catalogued message
    quoted in it), none from a line of machine output."""
    return all(is_prose(s.cite.text) for s in found.values())


def symptoms_of(
    failures: tuple[Fact, ...],
    said: Said | None,
    lines: tuple[Fact, ...] = (),
    tracebacks: tuple[PythonTraceback, ...] = (),
    quoted: tuple[str, ...] = (),
) -> list[Symptom]:
    """The symptom classes of ``failures`` (in their order), or the generic one.

    A failure whose type does not tell its class is looked up in the
    signature catalogue; so are ``lines`` (error lines no parser claimed),
    when no failure fact says anything. A message that only relays another's
    text (``CUDA initialization: X``) counts only where nothing else does: the
    fact that reads ``X`` itself says more. Then the place a traceback failed
    (:mod:`.phases`: the store, CUDA's initialisation, the first
    collective), also for a traceback pasted without its exception line;
    then the exception's own type where it tells the class (a builtin
    exception about the job's data or logic, an import that failed).
    ``said`` is the class the reporter's words name
    (:func:`.prose.prose_symptom`: class, line, why, the ids they point at), weighed below machine
    output: it opens a symptom only where nothing else does; a rank stopped by a signal
    another process sent (:data:`TERMINATED`) only where not even those words do. Each class
    appears once, at its first failure. ``quoted``: the ``Last error:`` lines of the
    evidence, whose catalogued WARN names which of its class's causes it is.
    """
    found: dict[str, Symptom] = {}
    generic: Symptom | None = None  # a catalogued message that only says a rank failed
    relayed: Symptom | None = None  # one that only passes on another's text
    stopped: Symptom | None = None  # a rank another process stopped (TERMINATED)
    for fact in failures:
        symptom = symptom_of(fact)
        # (a message of no class whose row names its causes is not generic: it says which)
        if symptom is not None and symptom.cls == "failure" and not symptom.hints:
            generic = generic or symptom
        elif symptom is not None and _relays(symptom):
            relayed = relayed or symptom
        elif symptom is not None and symptom.cls == TERMINATED:
            stopped = stopped or symptom
        elif symptom is not None and symptom.cls not in found:
            found[symptom.cls] = symptom
    if not found:
        for fact in lines:
            symptom = _from_catalogue(fact)
            if symptom is not None and _relays(symptom):
                relayed = relayed or symptom
            elif symptom is not None and symptom.cls == TERMINATED:
                stopped = stopped or symptom
            elif symptom is not None and symptom.cls not in found:
                found[symptom.cls] = symptom
    if not found and relayed is not None:
        found[relayed.cls] = relayed
    if not found and (phase := _phase(tracebacks)) is not None:
        found[phase.cls] = phase
    first = next((f for f in failures if _any_failure(f)), None)
    cls = _python_class(first) if first is not None else "failure"
    if not found and first is not None and cls != "failure":
        # the exception's own type (KeyError, ImportError) is machine output: it outranks
        # the reporter's words
        found[cls] = Symptom(cls, first.cite, first.rank)
    if said is not None and (not found or (said[0] == "xid" and _all_in_words(found))):
        # (an Xid the reporter names is what the GPU did; a message their sentences quote,
        # "it died with an unhandled cuda error", is how the job then ended: the fault leads)
        said_cls, cite, why, hints = said
        found = {said_cls: Symptom(said_cls, cite, signature=SAID, where=why, hints=hints), **found}
    if not found and stopped is not None:
        found[TERMINATED] = stopped
    if not found:
        if cls == "failure" and generic is not None:
            found[cls] = generic
        elif first is not None:
            found[cls] = Symptom(cls, first.cite, first.rank)
    reasons = _quoted_reasons(failures, quoted)
    return [_with_reason(s, reasons) for s in found.values()]
