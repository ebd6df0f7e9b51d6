"""Facts of NCCL: what its own log lines say, and what nccl-tests measured.

``nccl-log`` facts all derive from :class:`NcclLogFact`, which adds the
process that printed the line (``pid``, and ``device``, NCCL's ``[dev]``) to
the ``rank``/``host`` of :class:`~nccl_doctor.facts.base.Fact`. Ranks NCCL
prints inside a message (``comm_rank``, ``peer_ranks``) are ranks *of that
communicator*; they equal global ranks only for the world communicator.

Bus ids: NCCL prints a PCI address as the hex of its digits (``1c000`` is
``0000:1c:00.0``); ``bus_id_raw`` keeps that and ``bus_id`` is the nvidia-smi
form ``00000000:1C:00.0``.

``nccl-tests`` facts describe the tables that ``all_reduce_perf`` and its
siblings print: the devices, one row per message size and the summary.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import ClassVar

from nccl_doctor.facts.base import Fact
from nccl_doctor.facts.store import Facts


@dataclass(frozen=True, slots=True, kw_only=True)
class NcclLogFact(Fact):
    """The base of every nccl-log fact: the process that printed the line."""

    pid: int | None = None
    device: int | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class NcclVersion(NcclLogFact):
    """``NCCL version 2.18.1+cuda12.1``, as the banner or as an INFO line.

    ``version`` is ``major.minor.patch``; ``suffix`` NCCL_SUFFIX (``a0`` of a
    pre-release) when printed; ``cuda_version`` the CUDA NCCL was built with.
    ``banner`` is ``True`` for the bare line printed without the INFO prefix.
    """

    version_text: str
    version: str | None = None
    major: int | None = None
    minor: int | None = None
    patch: int | None = None
    suffix: str | None = None
    cuda_version: str | None = None
    banner: bool = False


@dataclass(frozen=True, slots=True, kw_only=True)
class NcclCudaDriver(NcclLogFact):
    """``cudaDriverVersion 12020``: the CUDA driver API version NCCL found (``12.2``)."""

    version: int | None
    version_text: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class NcclCommInit(NcclLogFact):
    """A communicator's init/abort/destroy line (``... - Init COMPLETE``).

    ``phase`` is ``start``, ``complete``, ``abort``, ``destroy``, or ``init``
    for the old lines without a phase (NCCL 2.3's ``rank 0 nranks 8``).
    ``function`` is ``ncclCommInitRank``, ``ncclCommInitRankConfig``,
    ``ncclCommSplit``... where printed. ``rank`` (of the fact) is the rank of
    the line's prefix when known, else ``comm_rank``.
    """

    phase: str
    function: str | None = None
    comm: str | None = None
    comm_rank: int | None = None
    nranks: int | None = None
    cuda_dev: int | None = None
    nvml_dev: int | None = None
    bus_id_raw: str | None = None
    bus_id: str | None = None
    comm_id: str | None = None
    parent_comm: str | None = None
    color: int | None = None
    key: int | None = None
    split_count: int | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class NcclCommLayout(NcclLogFact):
    """``comm 0x.. rank 0 nRanks 16 nNodes 2 localRanks 8 localRank 0 MNNVL 0``.

    ``n_nodes`` is how many hosts NCCL believes the communicator spans
    (``1`` while ranks sit on several hosts means NCCL took them for one).
    """

    comm: str | None = None
    comm_rank: int | None = None
    nranks: int | None = None
    n_nodes: int | None = None
    local_ranks: int | None = None
    local_rank: int | None = None
    mnnvl: int | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class NcclChannels(NcclLogFact):
    """``64 coll channels, 64 collnet channels, 0 nvls channels, 64 p2p channels, ...``.

    How many channels a communicator built, per kind, as NCCL printed them at
    the end of init (``None`` for a kind the line did not name; older releases
    print fewer kinds). ``p2p_per_peer`` is ``p2p channels per peer``.
    """

    coll: int | None = None
    collnet: int | None = None
    nvls: int | None = None
    p2p: int | None = None
    p2p_per_peer: int | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class NcclInitTiming(NcclLogFact):
    """``Init timings - ncclCommInitRank: rank 0 nranks 8 total 1.52 (kernels 0.11, ...)``.

    ``phases_s`` holds each named part in seconds, in printed order.
    """

    function: str | None = None
    comm_rank: int | None = None
    nranks: int | None = None
    total_s: float | None = None
    phases_s: tuple[tuple[str, float], ...] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class NcclNet(NcclLogFact):
    """How NCCL reaches other hosts: one line of the network selection.

    ``role`` says which line: ``bootstrap`` (``Bootstrap : Using eth0:...``),
    ``socket`` (``NET/Socket : Using ...``), ``ib`` (``NET/IB : Using ...`` or
    ``NET/IB : No device found.``) or ``selected`` (``Using network IB``).
    ``interfaces`` are (interface, address) pairs as printed (``10.0.0.1<0>``,
    ``fe80::1%ib0<0>``); ``ib_devices`` are (device, port, link layer) for
    ``[0]mlx5_0:1/IB``. ``truncated`` is set when the list was cut short.
    """

    role: str
    net: str | None = None
    interfaces: tuple[tuple[str, str], ...] = ()
    ib_devices: tuple[tuple[str, int | None, str | None], ...] = ()
    oob_interface: str | None = None
    oob_address: str | None = None
    relaxed_ordering: bool | None = None
    no_device: bool = False
    truncated: bool = False


@dataclass(frozen=True, slots=True, kw_only=True)
class NcclIbDevice(NcclLogFact):
    """``NET/IB: [0] mlx5_0:uverbs0:1/IB provider=Mlx5 speed=400000 ... ar=0`` (NCCL >= 2.28).

    ``speed_mbits_s`` is the port speed NCCL computed, in Mb/s.
    """

    index: int | None = None
    name: str | None = None
    dev_name: str | None = None
    port: int | None = None
    link_layer: str | None = None
    provider: str | None = None
    speed_mbits_s: int | None = None
    pci_path: str | None = None
    adaptive_routing: bool | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class NcclPlugin(NcclLogFact):
    """A plugin NCCL looked for (``NET/Plugin : No plugin found (libnccl-net.so)``).

    ``plugin_type`` is ``NET``, ``COLLNET``, ``TUNER``, ``PROFILER``, ``GIN``,
    ``RMA`` or ``ENV``; ``loaded`` is ``True`` when a plugin was loaded or
    assigned, ``False`` when it was not found or failed, ``None`` for probe
    lines; ``internal`` when NCCL fell back to its internal implementation.
    """

    plugin_type: str | None
    name: str | None = None
    version: str | None = None
    loaded: bool | None = None
    internal: bool | None = None
    message: str = ""


@dataclass(frozen=True, slots=True, kw_only=True)
class NcclGdr(NcclLogFact):
    """A ``GPU Direct RDMA Enabled/Disabled for ...`` line.

    ``gpu`` is the GPU as printed (``0[0]``, a bus id ``1c000`` or a rank,
    depending on the version); ``hca`` the NIC index (or hex net id) and
    ``hca_name`` its name where printed; ``distance``/``distance_limit`` the
    topology distance check; ``reason`` the parenthesised text of a refusal
    such as ``no module``.
    """

    enabled: bool
    net: str | None = None
    gpu: str | None = None
    hca: str | None = None
    hca_name: str | None = None
    distance: int | None = None
    distance_limit: int | None = None
    read: bool | None = None
    mode: str | None = None
    reason: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class NcclTransport(NcclLogFact):
    """One transport a rank uses, folded over all its channel lines.

    Folds ``Channel 00/0 : 0[0] -> 1[1] via P2P/IPC`` (and the old ``Ring 00 :``
    form) per (host, pid, ``comm_rank``, ``transport``, ``direction``), citing
    the first. ``transport`` is the text after ``via`` (``P2P/IPC/read``,
    ``NET/IB/0/GDRDMA``, ``SHM/direct/direct``); ``kind`` its first part;
    ``net``/``net_dev``/``proxy_rank``/``gdr`` are read from ``NET/...``.
    ``peer_ranks`` lists the distinct peers (sorted, at most 256: beyond,
    ``peers_truncated`` is set) and ``lines`` counts the folded lines.
    """

    comm_rank: int | None
    transport: str
    kind: str
    direction: str | None = None
    net: str | None = None
    net_dev: int | None = None
    proxy_rank: int | None = None
    gdr: bool = False
    peer_ranks: tuple[int, ...] = ()
    peers_truncated: bool = False
    lines: int = 1


@dataclass(frozen=True, slots=True, kw_only=True)
class NcclWarn(NcclLogFact):
    """An ``NCCL WARN`` line: where NCCL raised it, the message, and parsed details.

    ``file``/``source_line`` are NCCL's source position (``transport/net_ib.cc``,
    1295). Details are set only where the message carries them:
    ``cuda_error_code``/``cuda_error`` (``Cuda failure 999 'unknown error'``);
    ``ib_*`` from an IB completion error (``ib_status`` is the ibv_wc_status
    number, ``ib_status_name`` its verbs name, ``ib_request`` ``Send``/``Recv``);
    ``peer`` the remote address; ``call`` the failed function (``ibv_reg_mr``,
    ``connect``); ``os_error`` the strerror text and ``errno`` its number (as
    printed, else the Linux number of that text); ``ranks`` the ranks named by
    ``Duplicate GPU detected``; ``path``/``size_bytes`` of a shared-memory
    segment or file; ``prov_errno``/``prov_error`` the provider's error of a
    transfer NCCL's libfabric plugin (aws-ofi-nccl) saw complete with an error
    (EFA's ``efa_errno`` number, where printed, and its text).
    """

    tid: int | None = None
    file: str | None = None
    source_line: int | None = None
    message: str = ""
    cuda_error_code: int | None = None
    cuda_error: str | None = None
    ib_status: int | None = None
    ib_status_name: str | None = None
    ib_opcode: int | None = None
    ib_vendor_err: int | None = None
    ib_request: str | None = None
    ib_hca: str | None = None
    local_gid: str | None = None
    remote_gid: str | None = None
    peer: str | None = None
    call: str | None = None
    os_error: str | None = None
    errno: int | None = None
    ranks: tuple[int, ...] = ()
    bus_id_raw: str | None = None
    bus_id: str | None = None
    path: str | None = None
    size_bytes: int | None = None
    prov_errno: int | None = None
    prov_error: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class NcclErrorChain(NcclLogFact):
    """The ``file.cc:123 -> N`` lines one thread printed while an error unwound.

    ``frames`` are (file, line, result code) innermost first; ``result_code``
    is the last frame's code and ``result_name`` its ``ncclResult_t`` name
    (``ncclRemoteError`` for 6). ``thread`` is a trailing tag such as
    ``Proxy Thread``; ``os_error`` a parenthesised strerror text. When the
    chain directly follows a WARN of the same thread, ``warn_message`` and
    ``warn_file`` (``transport/net_ib.cc:1295``) name it. ``in_abort`` marks a
    chain the process printed while ncclCommAbort tore a communicator down
    (between its ``Abort START`` and ``Abort COMPLETE``, NCCL >= 2.28): its
    sockets and proxy threads return the abort as an error (``socket.cc -> 3``),
    which says nothing about why the job ended. Cites the first frame.
    """

    tid: int | None = None
    frames: tuple[tuple[str, int, int], ...] = ()
    result_code: int | None = None
    result_name: str | None = None
    thread: str | None = None
    os_error: str | None = None
    warn_message: str | None = None
    warn_file: str | None = None
    truncated: bool = False
    in_abort: bool = False


@dataclass(frozen=True, slots=True, kw_only=True)
class NcclEnvSetting(NcclLogFact):
    """An environment variable NCCL echoed: ``NCCL_IB_DISABLE set by environment to 0.``

    ``invalid`` marks ``Invalid value X for NCCL_Y, using default Z.``, with
    ``default_value`` the value NCCL used instead.
    """

    name: str
    value: str | None
    invalid: bool = False
    default_value: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class NcclEvent(NcclLogFact):
    """A milestone or notice NCCL printed, named mechanically.

    ``event`` is one of ``connected-rings``, ``connected-trees``,
    ``connected-nvls-tree``, ``nvls-support``, ``nvls-setup`` (multicast memory
    being bound), ``nvls-bind-failed``, ``topology-file`` (``path``: a topology NCCL
    loads instead of detecting the machine's), ``shared-mem-exceeds`` (``need``,
    ``max``: NCCL's kernels ask more shared memory than the GPU has),
    ``p2p-disabled``, ``connect-retry``, ``gpu-shared`` (``ranks``, ``bus_id``: two
    ranks on one GPU, 2.30.3-2.30.4), ``socket-type-refused`` (``peer``, ``got``,
    ``expected``: 2.30 dropped a connection of another socket type), ``net-count``
    (``rank``, ``count``, ``max``: 2.30's rank 0 naming a rank that sees fewer network
    devices than the most); ``detail`` holds what the line
    said as (key, value) pairs (``available``/``dev``, ``gpus``, ``peer``...).
    """

    event: str
    detail: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class NcclTestCommand(Fact):
    """A command line that runs an nccl-tests binary (``mpirun -np 8 all_reduce_perf -b 8``).

    ``test`` is the binary name (``all_reduce_perf``); ``launcher`` the first
    word when it is a known launcher; ``n_procs`` from ``-np``/``-n``/
    ``--ntasks``; ``args`` the test's own flags as (flag, value).
    """

    test: str
    launcher: str | None = None
    n_procs: int | None = None
    args: tuple[tuple[str, str], ...] = ()

    in_sentences: ClassVar[bool] = True

    @property
    def ranks(self) -> int:
        """The ranks the launch starts: ``n_procs`` processes (one where no launcher runs it),
        each with ``-t`` threads of ``-g`` GPUs; 0 where a launcher's count is not given."""
        flags = dict(self.args)
        each = [int(flags.get(f, "1")) if flags.get(f, "1").isdigit() else 1 for f in ("-t", "-g")]
        procs = self.n_procs or (1 if self.launcher is None else 0)
        return procs * each[0] * each[1]


@dataclass(frozen=True, slots=True, kw_only=True)
class NcclTestConfig(Fact):
    """The ``# nThread 1 nGpus 1 minBytes 8 maxBytes ...`` header of an nccl-tests run.

    ``step_factor`` or ``step_bytes`` is set, as printed; ``tests_version``
    and ``nccl_version_code`` (``22803``) come from the newest header line.
    """

    test: str | None = None
    n_threads: int | None = None
    n_gpus: int | None = None
    min_bytes: int | None = None
    max_bytes: int | None = None
    step_factor: int | None = None
    step_bytes: int | None = None
    warmup_iters: int | None = None
    iters: int | None = None
    agg_iters: int | None = None
    validation: bool | None = None
    graph: int | None = None
    tests_version: str | None = None
    nccl_version_code: int | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class NcclTestRank(Fact):
    """A ``#  Rank  0 Group  0 Pid 1444 on host device  0 [0000:8f:00] NVIDIA B200`` line.

    ``rank``/``host`` (of the fact) are the test's rank and host. ``bus_id_raw``
    is the bracket as printed; ``bus_id`` the nvidia-smi form when the bracket
    holds domain:bus:device, ``None`` for the old ``[0x1c]`` (bus number only,
    kept in ``pci_bus``).
    """

    group: int | None = None
    pid: int | None = None
    device: int | None = None
    bus_id_raw: str | None = None
    bus_id: str | None = None
    pci_bus: int | None = None
    gpu_name: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class NcclTestRow(Fact):
    """One message size of an nccl-tests table, out-of-place then in-place.

    ``collective`` is the test's collective (``all_reduce``) when the block or
    an earlier block of the source named it. ``wrong`` is the ``#wrong``
    count (``None`` for ``N/A``: not validated); old builds print a maximum
    error instead, kept in ``error``. Times in microseconds, bandwidths GB/s (``_gbytes_s``).
    """

    collective: str | None = None
    size_bytes: int
    count: int | None = None
    dtype: str | None = None
    redop: str | None = None
    root: int | None = None
    time_us: float | None = None
    algbw_gbytes_s: float | None = None
    busbw_gbytes_s: float | None = None
    wrong: int | None = None
    error: float | None = None
    in_place_time_us: float | None = None
    in_place_algbw_gbytes_s: float | None = None
    in_place_busbw_gbytes_s: float | None = None
    in_place_wrong: int | None = None
    in_place_error: float | None = None

    @property
    def corrupt(self) -> bool | None:
        """Whether this size returned wrong values: a ``#wrong`` count above 0, or (old
        builds) a maximum error of 0.01 or more, far above the rounding a sum of floats
        leaves (about 1e-6); ``None`` where neither was validated."""
        counts = [w for w in (self.wrong, self.in_place_wrong) if w is not None]
        errors = [e for e in (self.error, self.in_place_error) if e is not None]
        if not counts and not errors:
            return None
        return any(w > 0 for w in counts) or any(e >= _CORRUPT_ERROR for e in errors)


#: An old build's maximum error this large is a wrong value, not a float sum's rounding.
_CORRUPT_ERROR = 0.01
#: Sizes from which a byte count or offset no longer fits a 32-bit int (2 GiB).
INT32_BYTES = 2**31


def corrupt_only_past_int32(rows: Sequence[NcclTestRow]) -> bool:
    """Whether nccl-tests found wrong values, and only at sizes of 2 GiB or more, where byte
    counts and offsets overflow 32-bit arithmetic (smaller sizes right, or not run)."""
    bad = [r for r in rows if r.corrupt]
    return bool(bad) and all(r.size_bytes >= INT32_BYTES for r in bad)


@dataclass(frozen=True, slots=True, kw_only=True)
class NcclTestSummary(Fact):
    """The ``# Out of bounds values`` / ``# Avg bus bandwidth`` footer (cites the latter).

    ``out_of_bounds_ok``/``avg_busbw_ok`` are the ``OK``/``FAILED`` words
    (``None`` when absent); ``nranks`` counts the Rank lines seen; ``rows``
    the data rows of the table.
    """

    test: str | None = None
    avg_busbw_gbytes_s: float | None = None
    avg_busbw_ok: bool | None = None
    out_of_bounds: int | None = None
    out_of_bounds_ok: bool | None = None
    nranks: int | None = None
    rows: int = 0


@dataclass(frozen=True, slots=True, kw_only=True)
class NcclTestFailure(Fact):
    """A failure nccl-tests reported: ``host: Test NCCL failure common.cu:959 '...'``.

    ``kind`` is ``cuda``, ``nccl``, ``test`` (the `` .. host pid N: Test
    failure`` relay lines) or ``error`` (``# error: ...``).
    """

    kind: str
    file: str | None = None
    source_line: int | None = None
    message: str | None = None
    pid: int | None = None


_HEX_DIGITS = re.compile(r"[0-9a-fA-F]+")


def to_hex(text: str | None) -> int | None:
    """A hexadecimal integer with or without ``0x``, else ``None``."""
    if text is None:
        return None
    s = text.strip()
    if s[:2].lower() == "0x":
        s = s[2:]
    if not s or len(s) > 16 or not _HEX_DIGITS.fullmatch(s):
        return None
    return int(s, 16)


def nccl_bus_id(raw: str | None) -> str | None:
    """NCCL's ``%lx`` bus id (``1c000``) as ``00000000:1C:00.0``, else ``None``."""
    value = to_hex(raw)
    if value is None:
        return None
    domain = value >> 20
    if domain > 0xFFFFFFFF:
        return None
    bus, dev, func = (value >> 12) & 0xFF, (value >> 4) & 0xFF, value & 0xF
    return f"{domain:08X}:{bus:02X}:{dev:02X}.{func:X}"


def error_chains(facts: Facts) -> list[NcclErrorChain]:
    """The ``-> N`` chains that tell of a failure: not those ncclCommAbort's teardown printed
    (:attr:`NcclErrorChain.in_abort`), which every communicator aborted at exit prints."""
    return [c for c in facts.of(NcclErrorChain) if not c.in_abort]
