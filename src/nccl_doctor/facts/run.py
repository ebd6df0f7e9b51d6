"""Facts of a distributed run: the launcher, PyTorch's c10d layer and tracebacks.

``torchrun`` facts come from what the elastic agent and ProcessGroupNCCL print
(worker exits, signals, ``ChildFailedError`` summaries, watchdog timeouts,
flight-recorder and store messages); ``traceback`` facts from Python
tracebacks, bare exception lines and C++ ``terminate called ...`` reports.
The same message can reach either parser (a watchdog timeout printed by glog,
or quoted inside an exception): both produce the same typed facts for it.

``rank`` is the attribution of the cited line; where no prefix told it, the
rank printed inside the text (``[Rank 3]``, ``global rank: 3``) of the
default process group is used. ``pg``/``pg_rank`` keep the process-group
prefix as printed (``PG ID 0 PG GUID 0(default_pg)``) and the rank in it,
which for other groups is a rank of that group, not a global rank.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from nccl_doctor.facts.base import Fact
from nccl_doctor.knowledge import nccl_results

#: The group's id at the start of ProcessGroupNCCL's ``[PG ... Rank r]`` prefix text:
#: ``ID 0 PG GUID 0(default_pg)`` (torch >= 2.3) or ``0`` (2.1-2.2).
_PG_ID = re.compile(r"(?:ID )?(\d{1,7})")


def default_group(pg: str | None) -> bool:
    """Whether a fact's ``pg`` (the ``[PG ... Rank r]`` prefix text) names the default
    process group; ``None`` (a message printed without the prefix) counts as the default."""
    if pg is None:
        return True
    ident = _PG_ID.match(pg)
    return "default_pg" in pg or (ident is not None and ident.group(1) == "0")


#: torchelastic's traceback field for a worker a signal ended, and nothing else.
_SIGNAL_ONLY = re.compile(r"Signal \d{1,3} \(SIG\w{2,10}\) received by PID \d{1,10}\s*$")


@dataclass(frozen=True, slots=True, kw_only=True)
class PythonTraceback(Fact):
    """One Python exception report: ``Traceback (most recent call last):`` ... ``Type: message``.

    Cites the exception line. ``exc_type`` is the type as printed
    (``torch.distributed.DistBackendError``), ``exc_name`` its last dotted
    part; ``message`` the first message line and ``message_lines`` the
    continuation lines (NCCL/torch messages are multi-line), without a C++
    stack (``cpp_stack`` tells one followed). ``frames`` are (file, line,
    function), outermost first; ``innermost`` the last of them. ``causes``
    are the (exc_type, message) of earlier exceptions of a chain (``During
    handling ...`` / ``The above exception was the direct cause ...``), in
    printed order. ``start_line`` is the line number of the first
    ``Traceback`` header, ``None`` for a bare exception line printed without
    a traceback (``has_traceback`` is then ``False``). ``truncated`` marks
    frames or message lines dropped to bound memory, or a report cut off;
    a traceback cut before its exception line has ``exc_type`` ``None`` and
    cites its last line.
    """

    exc_type: str | None
    exc_name: str | None
    message: str = ""
    message_lines: tuple[str, ...] = ()
    frames: tuple[tuple[str, int | None, str | None], ...] = ()
    innermost: tuple[str, int | None, str | None] | None = None
    causes: tuple[tuple[str, str], ...] = ()
    start_line: int | None = None
    has_traceback: bool = True
    cpp_stack: bool = False
    truncated: bool = False


@dataclass(frozen=True, slots=True, kw_only=True)
class CppException(Fact):
    """``terminate called after throwing an instance of 'c10::DistBackendError'`` + ``what():``.

    Cites the ``terminate`` line. ``exc_type`` is the C++ type (``None`` when
    the terminate line was missing), ``message`` the first ``what()`` line and
    ``message_lines`` its continuation (up to ``Exception raised from``).
    """

    exc_type: str | None = None
    message: str = ""
    message_lines: tuple[str, ...] = ()
    cpp_stack: bool = False


@dataclass(frozen=True, slots=True, kw_only=True)
class NcclErrorReport(Fact):
    """PyTorch's report of a failed NCCL call: ``NCCL error in: file:77, unhandled cuda error ...``.

    ``reason`` is NCCL's error string (``unhandled cuda error``),
    ``result_name`` the ``ncclResult_t`` name (from an ``ncclUnhandledCudaError:``
    line, else from the reason), ``result_code`` an ``NCCL Error 2:`` number,
    ``nccl_version`` the version torch printed, ``torch_file``/``torch_line``
    the PyTorch source position, ``last_error`` the lines after ``Last error:``
    (NCCL's own last WARN, e.g. ``Cuda failure 999 'unknown error``).
    Cites the ``NCCL error`` line.
    """

    reason: str | None = None
    result_name: str | None = None
    result_code: int | None = None
    nccl_version: str | None = None
    torch_file: str | None = None
    torch_line: int | None = None
    last_error: tuple[str, ...] = ()
    message: str = ""

    def reports(self, name: str) -> bool:
        """Whether it reports NCCL result ``name`` (``ncclInternalError``): by the result's name,
        or by a reason that opens with NCCL's string for it (the form before 2.19, which the
        later one starts with too)."""
        if self.result_name == name:
            return True
        known = nccl_results.result(name)
        return known is not None and (self.reason or "").startswith(known.short_message)


@dataclass(frozen=True, slots=True, kw_only=True)
class CudaError(Fact):
    """A CUDA error as PyTorch or NCCL printed it.

    ``kind`` is ``cuda_error`` (``CUDA error: an illegal memory access was
    encountered``), ``cuda_failure`` (NCCL's ``Cuda failure 999 'unknown
    error'``), ``init`` (``Unexpected error from cudaGetDeviceCount() ...
    Error 802: system not yet initialized``), ``driver`` (``CUDA driver
    error``/``Found no NVIDIA driver``/``driver ... is too old``) or
    ``device_assert`` (a kernel's ``Assertion `...` failed.`` line), ``legacy``
    (PyTorch <= 1.4's ``cuda runtime error (N) : X``) or ``named`` (the error's
    runtime or driver name, ``cudaErrorAssert``/``CUDA_ERROR_UNKNOWN``, as other
    wrappers print it; ``error`` is then the catalogue's message). ``error``
    is the error text in lower case without a trailing period, ``code`` the
    number printed with it. Kind ``async_note`` (``asynchronous_note``
    ``True``, ``error`` ``None``) is the ``CUDA kernel errors might be
    asynchronously reported`` hint. ``assertion``/``kernel_file`` describe a device
    assert.
    """

    kind: str
    error: str | None = None
    code: int | None = None
    asynchronous_note: bool = False
    assertion: str | None = None
    kernel_file: str | None = None

    @property
    def unknown(self) -> bool:
        """Whether it is CUDA's unknown error (999), by its number or its words."""
        return self.code == 999 or (self.error or "").lower() == "unknown error"


@dataclass(frozen=True, slots=True, kw_only=True)
class CudaOutOfMemory(Fact):
    """``CUDA out of memory. Tried to allocate 2.00 GiB ...`` (torch 1.x and 2.x wordings).

    Sizes are MiB. ``gpu_index`` is the ``GPU 0`` printed; ``free_mib`` what
    was free; ``process_mib`` this process's total (``this process has ...
    memory in use``); ``allocated_mib``/``reserved_mib`` PyTorch's allocator
    figures; ``other_processes`` (pid, MiB) of each ``Process 12345 has 3.20
    GiB memory in use`` (the processes on that GPU the message lists). Torch names its own
    process "this process" only where NVML's PIDs are its own; in a container it lists itself
    as ``Process <host pid>``, and the one row holding PyTorch's reserve plus a context is
    read as ``process_mib``, not as another process.
    """

    tried_mib: float | None = None
    gpu_index: int | None = None
    total_mib: float | None = None
    free_mib: float | None = None
    process_mib: float | None = None
    allocated_mib: float | None = None
    reserved_mib: float | None = None
    other_processes: tuple[tuple[int, float], ...] = ()
    message: str = ""


@dataclass(frozen=True, slots=True, kw_only=True)
class ChildFailure(Fact):
    """One ``[N]:`` entry of a torchelastic ``ChildFailedError`` summary (cites ``exitcode``).

    ``rank`` is the failed global rank and ``host`` the host the summary
    names (not the attribution of the printed line). ``root_cause`` marks the
    ``Root Cause (first observed failure)`` entry, ``False`` the ``Failures:``
    / ``Other Failures:`` ones. ``signal_number``/``signal_name`` are set for
    a negative ``exitcode`` (killed by a signal). ``time_text`` as printed
    (``2025-05-21_15:43:03``); ``error_file`` ``None`` for ``<N/A>``;
    ``traceback`` the first line of the traceback/msg field and
    ``traceback_lines`` the lines that followed it (an error-file traceback),
    dedented. ``script`` is the ``<script> FAILED`` title.
    """

    index: int | None = None
    local_rank: int | None = None
    exitcode: int | None = None
    pid: int | None = None
    signal_number: int | None = None
    signal_name: str | None = None
    time_text: str | None = None
    error_file: str | None = None
    traceback: str | None = None
    traceback_lines: tuple[str, ...] = ()
    root_cause: bool = False
    script: str | None = None

    @property
    def own_error(self) -> str | None:
        """The worker's own error as the summary gives it, if any: not torchelastic's pointer
        to its docs (``To enable traceback see: ...``) nor its word that a signal ended the
        worker (``Signal 7 (SIGBUS) received by PID 3112``), which tell no error of its own."""
        text = (self.traceback or "").strip()
        if not text or text.startswith("To enable traceback") or _SIGNAL_ONLY.match(text):
            return None
        return text


@dataclass(frozen=True, slots=True, kw_only=True)
class WorkerExit(Fact):
    """A worker process that ended badly, as the launcher logged it.

    Forms: the elastic agent's ``failed (exitcode: -9) local_rank: 3 (pid:
    812917) of binary: ...`` (``source`` ``elastic``), ``mp.spawn``'s
    ``process 1 terminated with signal SIGKILL`` / ``-- Process 2 terminated
    with the following error:`` (``spawn``; ``raised`` marks an exception),
    DeepSpeed's ``[cmd] exits with return code = -9`` (``Process N exits ...``
    before v0.3; ``deepspeed``: no rank, as ``cmd`` is the last child's),
    ``subprocess`` ``died with <Signals.SIGKILL: 9>`` / ``returned non-zero
    exit status 1`` (``subprocess``), Slurm's ``srun: error: node07: task 11:
    Killed`` / ``Out Of Memory`` / ``Exited with exit code 1`` (``srun``) and
    Open MPI's ``mpirun noticed that process rank 3 with PID 41 on node n2
    exited on signal 9 (Killed).`` (``mpirun``): these two name the global rank
    (``rank``) and its host. ``signal_*`` are set when a signal ended it
    (negative exitcode or a named signal; SIGKILL for srun's ``Out Of Memory``,
    the memory cgroup's OOM kill).
    """

    source: str
    exitcode: int | None = None
    local_rank: int | None = None
    pid: int | None = None
    signal_number: int | None = None
    signal_name: str | None = None
    binary: str | None = None
    raised: bool = False

    @property
    def names_rank(self) -> bool:
        """Whether the line names the global rank that ended (srun's task id is SLURM_PROCID,
        mpirun's process rank the MPI rank), not only the line's own attribution."""
        return self.source in ("srun", "mpirun")


@dataclass(frozen=True, slots=True, kw_only=True)
class LauncherSignal(Fact):
    """A signal the launcher sent or received.

    ``action``: ``send`` (``Sending process 33051 closing signal SIGTERM``,
    ``Closing process N via signal SIGTERM``, DeepSpeed ``Killing subprocess
    N``), ``force_kill`` (``Unable to shutdown process N via SIGTERM,
    forcefully exiting via SIGKILL``), ``received`` (``Received
    Signals.SIGTERM death signal, shutting down workers``, ``SignalException:
    Process N got signal: 15``, ``Main process received SIGTERM``). ``pid``
    is the process signalled (or the receiver, when printed).
    """

    action: str
    pid: int | None = None
    signal_number: int | None = None
    signal_name: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class LauncherEvent(Fact):
    """A lifecycle line of the elastic agent (not an error by itself).

    ``event``: ``rendezvous_complete``, ``rendezvous_start``,
    ``worker_group_restart`` (``detail`` the ``3/3`` attempts left),
    ``worker_group_failed``, ``worker_group_finished`` (``detail`` the state),
    ``membership_change``.
    """

    event: str
    detail: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class PgEnvironment(Fact):
    """``ProcessGroupNCCL environments: NCCL version: 2.26.2, TORCH_NCCL_...: 3, ...``.

    ``settings`` are the (name, value) pairs as printed, ``nccl_version`` the
    NCCL version torch loaded. Also emitted for the environment part of the
    older ``initialization options`` lines (torch < 2.5, where the two were
    one list, and the multi-line ``initialized with following options:`` of
    torch 1.x). ``truncated`` marks a cut last item.
    """

    nccl_version: str | None = None
    settings: tuple[tuple[str, str], ...] = ()
    pg: str | None = None
    pg_rank: int | None = None
    truncated: bool = False


@dataclass(frozen=True, slots=True, kw_only=True)
class PgInitOptions(Fact):
    """``ProcessGroupNCCL initialization options: size: 4, global rank: 0, TIMEOUT(ms): ...``.

    ``global_rank``/``size`` of the group, ``timeout_ms`` its collective
    timeout, ``pg_name`` (``PG Name``), ``pg_desc`` (``PG Description``),
    ``split_from``/``split_color``; ``options`` every (name, value) printed.
    """

    size: int | None = None
    global_rank: int | None = None
    timeout_ms: int | None = None
    pg_name: str | None = None
    pg_desc: str | None = None
    split_from: int | None = None
    split_color: int | None = None
    high_priority_stream: bool | None = None
    nccl_version: str | None = None
    options: tuple[tuple[str, str], ...] = ()
    pg: str | None = None
    pg_rank: int | None = None
    truncated: bool = False


@dataclass(frozen=True, slots=True, kw_only=True)
class CollectiveTimeout(Fact):
    """A collective that timed out: ``Watchdog caught collective operation timeout: WorkNCCL(...)``.

    Old (no SeqNum/Numel, ``TensorShape=[..]``) and new forms, and
    ``Work WorkNCCL(...) timed out in blocking wait`` (``blocking_wait``).
    ``seq`` is ``SeqNum``, ``op_type`` ``ALLREDUCE``..., ``timeout_ms`` the
    configured timeout and ``ran_ms`` how long it ran.
    """

    seq: int | None = None
    op_type: str | None = None
    numel_in: int | None = None
    numel_out: int | None = None
    tensor_shape: str | None = None
    timeout_ms: int | None = None
    ran_ms: int | None = None
    blocking_wait: bool = False
    pg: str | None = None
    pg_rank: int | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class WatchdogState(Fact):
    """Where a rank's work queue stood when the watchdog acted.

    ``event``: ``exception`` (``Exception (either an error or timeout) detected
    by watchdog at work: 808, ...``), ``timeout`` (``Timeout at NCCL work:
    57, ...``), ``dump_signal`` (``Received a dump signal ... Last enqueued
    NCCL work: 120055, last completed NCCL work: 120051``) or
    ``global_timeout``. ``work_seq`` is the failing work, ``last_enqueued``/
    ``last_completed`` the sequence numbers (``-1``: none yet).
    """

    event: str
    work_seq: int | None = None
    last_enqueued: int | None = None
    last_completed: int | None = None
    pg: str | None = None
    pg_rank: int | None = None


#: One row of a desync report's snapshot: (collective number, ``started`` or ``finished``,
#: the collective's name as the store's trace keeps it, the ranks in that state).
SnapshotRow = tuple[int, str, str, tuple[int, ...]]


@dataclass(frozen=True, slots=True, kw_only=True)
class DesyncReport(Fact):
    """ProcessGroupNCCL's desync report (``TORCH_NCCL_DESYNC_DEBUG=1``; TraceUtils.h).

    Each rank writes the number and name of the collective it starts and ends
    into the store; when a collective times out, the timed-out rank reads every
    rank's last entry back. ``op``/``seq``: the collective this rank timed out
    in (``Timeout at collective: ALLREDUCE, #5``). ``never_joined``: ranks with
    no entry at all (``ranks [1, 3] are the lagging ranks ... never joined any
    collectives``). ``lag_seq``: the lowest collective number any rank was at;
    ``unfinished``: ranks that started it and did not finish it;
    ``not_next``: ranks that finished it and never started the next.
    ``snapshot``: the report's snapshot of every rank's latest state.
    """

    op: str | None = None
    seq: int | None = None
    never_joined: tuple[int, ...] = ()
    lag_seq: int | None = None
    unfinished: tuple[int, ...] = ()
    not_next: tuple[int, ...] = ()
    snapshot: tuple[SnapshotRow, ...] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class C10dSocketError(Fact):
    """A c10d/TCPStore socket failure: bind, listen, connect or a connect timeout.

    ``role`` ``server``/``client``; ``action`` ``bind``, ``listen``,
    ``connect``, ``connect_timeout`` or ``resolve``; ``address``/``port`` as
    printed; ``errno``/``error_text`` (``98``, ``Address already in use``)
    and ``error_name`` (``EADDRINUSE``) where printed; ``timeout_ms`` of a
    client timeout.
    """

    role: str
    action: str
    address: str | None = None
    port: int | None = None
    errno: int | None = None
    error_text: str | None = None
    error_name: str | None = None
    timeout_ms: int | None = None
    message: str = ""

    @property
    def resolver_failed(self) -> bool:
        """A look-up the resolver itself failed (getaddrinfo's EAI_AGAIN "Temporary failure in
        name resolution", EAI_FAIL): the name is in no hosts file and DNS gave no answer.

        c10d warns once per address family that gives nothing and tries the next, so neither
        kind is a failure by itself: EAI_NONAME ("Name or service not known") for IPv6 alone
        is its routine warning on a host with IPv4 only, and a failed resolver for IPv6 may
        still leave an IPv4 address in /etc/hosts. Beside a failure, a failed resolver points
        at the name; EAI_NONAME does not.
        """
        return self.action == "resolve" and self.errno in _RESOLVER_FAILED


#: getaddrinfo's codes (glibc's netdb.h) for a resolver that failed, not a name it lacks.
_RESOLVER_FAILED = frozenset({-3, -4})


@dataclass(frozen=True, slots=True, kw_only=True)
class RendezvousTimeout(Fact):
    """Ranks that did not all arrive at the store in time.

    ``kind``: ``clients`` (``Timed out after 901 seconds waiting for clients.
    1/2 clients joined.``), ``store_barrier`` (``... store based barrier ...
    (world_size=2, worker_count=1, timeout=0:30:00)``) or ``store_key``
    (``Timeout waiting for key: ...`` / ``wait timeout after 600000ms, keys:
    ...``). ``joined``/``expected`` count the ranks, ``waited_s`` the time,
    ``key`` the store key.
    """

    kind: str
    waited_s: float | None = None
    joined: int | None = None
    expected: int | None = None
    key: str | None = None
    message: str = ""


@dataclass(frozen=True, slots=True, kw_only=True)
class DistributedError(Fact):
    """Any other error or warning of PyTorch's distributed layer, by message pattern.

    ``category`` names the pattern that matched (a fixed list, see
    :data:`nccl_doctor.parse._c10d.CATEGORIES`): ``heartbeat_timeout``,
    ``watchdog_stuck``, ``watchdog_terminated``, ``process_down``,
    ``comm_aborted``, ``dump_*``, ``connection_closed``, ``connection_reset``,
    ``broken_pipe``, ``recv_failed``, ``socket_timeout``,
    ``collective_mismatch``, ``no_gpus``, ``duplicate_gpu``,
    ``ddp_param_mismatch``, ``ddp_unused_params``, ``rendezvous_*``,
    ``store_get_failed``, ``env_missing``, ``pg_not_initialized``,
    ``gil_hang``, ``address_in_use`` (an ``Address already in use`` not
    printed by a c10d socket). ``detail`` is what the pattern captured (the
    seconds of ``watchdog_stuck``, the variable of ``env_missing``...),
    ``peer_rank`` a rank the message names (the rank a dump signal came from,
    the aborted rank). ``message`` is the text from where the pattern matched.
    """

    category: str
    message: str = ""
    detail: str | None = None
    peer_rank: int | None = None
    pg: str | None = None
    pg_rank: int | None = None
