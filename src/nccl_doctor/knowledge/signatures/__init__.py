"""The signature catalogue: messages that matter for diagnosis, kept as data.

One JSON Lines file per library (``nccl``, ``torch``, ``gloo``, ``cuda``,
``driver`` for the NVIDIA driver and its tools: NVRM's kernel lines, NVSwitch
SXids, NVML's error strings and code names, nvidia-smi, nvidia-container-cli, the
fabric manager; ``kernel``, ``rdma`` for
libibverbs' completion statuses, ``system`` for the dynamic loader's and the
shells' lines, ``nccl_tests`` for nccl-tests' own failure lines, and the
launchers besides torchrun: ``deepspeed``, ``horovod``, ``accelerate``, and the HPC
ones: ``openmpi`` for ``mpirun``'s runtime and transports, ``slurm`` for ``srun`` and
``slurmstepd``; ``aws_ofi_nccl`` for NCCL's libfabric network plugin, which EFA jobs
load, and ``libfabric`` for the EFA provider's error texts it quotes; ``tensorflow`` for its
GPU device set-up, which Horovod and tf.distribute jobs run through; ``xla`` for the
coordination service JAX's multi-process jobs start through, ``vllm`` for the inference
engine's own distributed set-up: the libnccl its binding loads, its P2P test, its workers and
placement; ``ray`` for the cluster under Ray Train and vLLM: an actor's or worker's death and
its cause, the memory monitor, a node lost, the GCS unreachable, placement that cannot be
met; ``lightning`` for PyTorch Lightning's launch and DDP messages: the ranks' start-up
lines, a launch shape that does not add up, devices, unused parameters, a rank that died
first; ``nvshmem`` and ``deepep`` for the MoE stack's symmetric memory and all-to-all
kernels; ``sglang`` for the SGLang server's start-up memory checks, children, watchdogs and
prefill/decode transfers; ``trtllm`` for TensorRT-LLM's NCCL communicator watchdog, MPI world,
multicast and multi-node NVLink set-up, executor workers and KV cache transfers) beside this
module. Each line is one message a library prints, mined
from that library's own source (file:line at each release tag read) or, for what is closed source
(nvidia-smi) or outside the repositories read (the Linux kernel), from its
vendor's documentation or source named in ``where``: its format string, a
pattern (Python ``re`` syntax that Hyperscan also compiles: no backreferences,
no lookaround, no ``$``, every repeat bounded), the names of its captures,
the symptom class it signals and the catalogue ids (``docs/diagnoses.md``) it
points to. ``scripts/signatures`` holds the miners that wrote the files;
``scripts/signature_counts.py`` counts them by library and version.

A pattern matches the message text, not the line: it starts at the
message's first literal (NCCL's ``host:pid:tid [dev] ... NCCL WARN`` prefix is
its own signature, ``nccl.line.warn``), so use ``search``, not ``match``.
"""

from __future__ import annotations

import functools
import json
import re
from dataclasses import dataclass, fields
from importlib import resources
from pathlib import Path
from typing import Any

from nccl_doctor.cache import kept
from nccl_doctor.knowledge.cuda_errors import CUDA_CLASSES

LIBRARIES = (
    "nccl",
    "torch",
    "gloo",
    "cuda",
    "driver",
    "kernel",
    "rdma",
    "system",
    "nccl_tests",
    "deepspeed",
    "horovod",
    "accelerate",
    "openmpi",
    "slurm",
    "aws_ofi_nccl",
    "libfabric",
    "ucx",
    "tensorflow",
    "xla",
    "vllm",
    "ray",
    "lightning",
    "nvshmem",
    "deepep",
    "sglang",
    "trtllm",
)
SYMPTOMS = frozenset(
    {
        "nccl_system",
        "nccl_unhandled_cuda",
        "nccl_internal",
        "nccl_invalid",
        "nccl_remote",
        *CUDA_CLASSES,
        "collective_timeout",
        "store_timeout",
        "store_create",
        "cuda_init",
        "comm_init",
        "gpu_oom",
        "killed",
        "crashed",
        "bus_error",
        "aborted",
        "terminated",
        "hang",
        "time_limit",
        "node_lost",
        "peer_lost",
        "desync",
        "xid",
        "host_oom",
        "host_limit",
        "library_missing",
        "driver_error",
        "ddp_usage",
        "connection",
        "rdma_completion",
        "pcie_error",
        "host_io",
        "nvshmem",
        "deepep_timeout",
        "failure",
        "app_error",
        "info",
    }
)
FORMAT_STYLES = frozenset({"printf", "concat", "python", "literal", "doc"})

_ID = re.compile(r"[a-z][a-z0-9_]*(?:\.[a-z0-9_]+)+")
_HINT_ID = re.compile(r"[a-z]+\.[a-z0-9_]+")
# constructs Hyperscan rejects or that break the linear-time promise, looked for in the
# pattern with its escapes and bracket classes blanked out (see _strip_classes)
_FORBIDDEN = (
    (re.compile(r"\(\?P="), "backreference"),
    (re.compile(r"\(\?<?[=!]"), "lookaround"),
    (re.compile(r"\$"), "end anchor"),
    (re.compile(r"[*+]"), "unbounded repeat"),
    (re.compile(r"\{\d*,\}"), "unbounded repeat"),
)


class SignatureError(ValueError):
    """A catalogue line that does not hold a valid signature (file and line number say where)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Versions:
    """The release versions a message was seen in (of those read): first, last and all."""

    first: str
    last: str
    seen: tuple[str, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class Signature:
    """One message a library prints, as data.

    ``where`` lists ``path:line@tag[,tag...]`` source locations (or a document
    URL for ``doc`` entries); ``format`` is the string as the source spells it
    (``format_style`` says how: ``printf`` conversions, ``concat`` and
    ``python`` with ``{name}`` / ``{name:d}`` placeholders for the pieces C++
    streams or Python f-strings splice in, ``literal``, or ``doc`` for a shape
    taken from documentation); ``fields`` are the pattern's named groups in
    order. ``result`` names the ``ncclResult_t`` a NCCL WARN leads to, where
    the source shows one (see :mod:`nccl_doctor.knowledge.nccl_results`).
    ``example`` is a line of the message's shape, for the entries whose
    pattern covers only part of what the format prints (kernel and driver
    lines). ``relays`` marks a message that only passes on another's text
    (PyTorch's ``CUDA initialization: {message}``): a catalogued message
    inside it says more, so the lookup reads it after every other. ``refines``
    names the entries whose message this one reads more narrowly (one pair of
    the values they capture, which tells the cause apart): the lookup tries it
    just before each of them.
    """

    id: str
    library: str
    level: str
    where: tuple[str, ...]
    versions: Versions
    format: str
    format_style: str
    pattern: str
    fields: tuple[str, ...]
    symptom: str
    hint_ids: tuple[str, ...]
    result: str | None = None
    note: str = ""
    example: str = ""
    relays: bool = False
    refines: tuple[str, ...] = ()

    def compiled(self) -> re.Pattern[str]:
        """The pattern compiled with ``re`` (cached per pattern text)."""
        return _compile(self.pattern)

    def location(self, version: str | None = None) -> str:
        """Where the library's ``version`` prints this message, as ``path:line@tag``.

        The newest release read at or below ``version``; the oldest read when
        ``version`` is older than all; the newest read when no version is
        given. A location without releases (a document, a commit) is given as
        the catalogue writes it.
        """
        return _location(self.where, self.library, version)


@functools.lru_cache(maxsize=1024)
def _location(where: tuple[str, ...], library: str, version: str | None) -> str:
    """:meth:`Signature.location`, worked out once per signature and version (a failed job's
    ranks print one message a thousand times: each looked up its signature's ~8 tags)."""
    want = _release(version) if version else None
    places = [
        (release, place, tag)
        for place, _, tags in (entry.partition("@") for entry in where)
        for tag in tags.split(",")
        if tags and (release := _release(tag)) is not None
    ]
    if not places:
        return where[-1] if where else library
    upto = [p for p in places if want is None or p[0] <= want]
    _, place, tag = max(upto) if upto else min(places)
    return f"{place}@{tag}"


#: A release number in a tag or a version (``v2.21.5-1``, ``2.4.1+cu121``, ``v0.12.0``).
_RELEASE = re.compile(r"\d{1,6}(?:\.\d{1,6}){1,3}")


def _release(text: str) -> tuple[int, ...] | None:
    match = _RELEASE.search(text)
    return tuple(int(part) for part in match.group(0).split(".")) if match else None


@functools.lru_cache(maxsize=4096)
def _compile(pattern: str) -> re.Pattern[str]:
    return re.compile(pattern)


def _check_pattern(pattern: str) -> list[str]:
    problems = [why for rx, why in _FORBIDDEN if rx.search(_strip_classes(pattern))]
    if re.search(r"\\[1-9]", pattern.replace("\\\\", "")):
        problems.append("backreference")
    try:
        re.compile(pattern)
    except re.error as exc:
        problems.append(f"does not compile: {exc}")
    return problems


def _strip_classes(pattern: str) -> str:
    """``pattern`` with escapes and bracket classes blanked (so ``[$*]`` is no anchor)."""
    out = re.sub(r"\\.", "__", pattern)
    return re.sub(r"\[\^?\]?[^\][]*\]", "_", out)


def _parse(obj: Any, where: str, *, patterns: bool = True) -> Signature:
    """The signature ``obj`` holds; ``patterns=False`` leaves its pattern unchecked (see
    :func:`load_signatures`)."""
    if not isinstance(obj, dict):
        raise SignatureError(f"{where}: not an object")
    required = ("id", "library", "where", "versions", "format", "pattern", "fields", "symptom")
    missing = [k for k in required if k not in obj]
    if missing:
        raise SignatureError(f"{where}: missing {', '.join(missing)}")
    if not isinstance(obj.get("relays", False), bool):
        raise SignatureError(f"{where}: relays is not true or false")
    versions = obj["versions"]
    if not isinstance(versions, dict) or not {"first", "last", "seen"} <= versions.keys():
        raise SignatureError(f"{where}: versions needs first, last and seen")
    sig = Signature(
        id=str(obj["id"]),
        library=str(obj["library"]),
        level=str(obj.get("level", "")),
        where=tuple(str(w) for w in obj["where"]),
        versions=Versions(
            first=str(versions["first"]),
            last=str(versions["last"]),
            seen=tuple(str(v) for v in versions["seen"]),
        ),
        format=str(obj["format"]),
        format_style=str(obj.get("format_style", "printf")),
        pattern=str(obj["pattern"]),
        fields=tuple(str(f) for f in obj["fields"]),
        symptom=str(obj["symptom"]),
        hint_ids=tuple(str(h) for h in obj.get("hint_ids", ())),
        result=obj.get("result"),
        note=str(obj.get("note", "")),
        example=str(obj.get("example", "")),
        relays=bool(obj.get("relays", False)),
        refines=tuple(str(r) for r in obj.get("refines", ())),
    )
    problems = validate(sig, patterns=patterns)
    if problems:
        raise SignatureError(f"{where}: {sig.id}: {'; '.join(problems)}")
    return sig


def validate(sig: Signature, *, patterns: bool = True) -> list[str]:
    """What is wrong with ``sig`` (empty when nothing): the checks every catalogue line passes.

    ``patterns=False`` skips the checks that compile the pattern.
    """
    problems: list[str] = []
    if not _ID.fullmatch(sig.id) or not sig.id.startswith(sig.library + "."):
        problems.append(f"id {sig.id!r} is not '<library>.<a>.<b>' lower_snake")
    if sig.library not in LIBRARIES:
        problems.append(f"library {sig.library!r} not one of {LIBRARIES}")
    if sig.symptom not in SYMPTOMS:
        problems.append(f"symptom {sig.symptom!r} unknown")
    if sig.format_style not in FORMAT_STYLES:
        problems.append(f"format_style {sig.format_style!r} unknown")
    if not sig.where:
        problems.append("no source location")
    if not sig.versions.seen or sig.versions.seen[0] != sig.versions.first:
        problems.append("versions.first is not the first seen")
    elif sig.versions.seen[-1] != sig.versions.last:
        problems.append("versions.last is not the last seen")
    bad_hints = [h for h in sig.hint_ids if not _HINT_ID.fullmatch(h)]
    if bad_hints:
        problems.append(f"hint ids {bad_hints} are not catalogue ids")
    if not patterns:
        return problems
    pattern_problems = _check_pattern(sig.pattern)
    problems.extend(pattern_problems)
    if not pattern_problems:
        groups = tuple(re.compile(sig.pattern).groupindex)
        if groups != sig.fields:
            problems.append(f"fields {sig.fields} differ from the pattern's groups {groups}")
    return problems


def _read(library: str, text: str) -> list[Signature]:
    out: list[Signature] = []
    for lineno, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        where = f"{library}.jsonl:{lineno}"
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as exc:
            raise SignatureError(f"{where}: not JSON ({exc.msg})") from None
        sig = _parse(obj, where, patterns=False)
        if sig.library != library:
            raise SignatureError(f"{where}: {sig.id} is library {sig.library!r}")
        out.append(sig)
    return out


#: The fields of a signature, in the order a kept row holds them (every field: one added to
#: :class:`Signature` is kept too).
_FIELDS = tuple(f.name for f in fields(Signature))


def _rows(files: list[tuple[str, bytes]]) -> tuple[tuple[Any, ...], ...]:
    """Every signature of ``files`` (library, bytes), validated, as a row of its fields."""
    out: list[tuple[Any, ...]] = []
    seen: set[str] = set()
    for library, data in files:
        for sig in _read(library, data.decode("utf-8")):
            if sig.id in seen:
                raise SignatureError(f"{library}.jsonl: duplicate id {sig.id}")
            seen.add(sig.id)
            v = sig.versions
            out.append(
                tuple(
                    (v.first, v.last, v.seen) if name == "versions" else getattr(sig, name)
                    for name in _FIELDS
                )
            )
    return tuple(out)


def _signature(row: tuple[Any, ...]) -> Signature:
    """The signature of a row of :func:`_rows`."""
    values = dict(zip(_FIELDS, row, strict=True))
    first, last, seen = values.pop("versions")
    return Signature(versions=Versions(first=first, last=last, seen=seen), **values)


@functools.cache
def load_signatures() -> tuple[Signature, ...]:
    """Every signature of every library, validated, in file order (cached).

    Raises :class:`SignatureError` on a malformed line or a duplicate id. The
    patterns are not compiled here (1,300 of them cost half a second of every
    diagnosis): each compiles on first use (:meth:`Signature.compiled`), and
    the tests hold every shipped pattern to :func:`validate`'s checks. What
    the files and this module's code make of them is kept between runs
    (:func:`nccl_doctor.cache.kept`; reading and checking the 1 MB of JSON
    lines cost ~45 ms a run).
    """
    here = Path(__file__).parent
    try:  # beside this module, where the package is a folder (~1 ms a file through resources)
        code = Path(__file__).read_bytes()
        files = [(library, (here / f"{library}.jsonl").read_bytes()) for library in LIBRARIES]
    except OSError:
        files = [
            (library, resources.files(__name__).joinpath(f"{library}.jsonl").read_bytes())
            for library in LIBRARIES
        ]
        rows = _rows(files)
    else:
        key = b"\0".join([code, *(data for _, data in files)])
        rows = kept("signatures", key, lambda: _rows(files))
    return tuple(_signature(row) for row in rows)


@functools.cache
def by_id() -> dict[str, Signature]:
    """The signatures keyed by id."""
    return {s.id: s for s in load_signatures()}


@dataclass(frozen=True, slots=True, kw_only=True)
class LegacyCudaCode:
    """A CUDA runtime error renumbered in CUDA 10.1 (``legacy_code`` before, ``code`` since)."""

    name: str
    legacy_code: int
    code: int


@functools.cache
def legacy_cuda_codes() -> tuple[LegacyCudaCode, ...]:
    """The ``cudaError_t`` numbers of CUDA <= 10.0 that 10.1 changed (see ``cuda_legacy.json``)."""
    raw = json.loads(
        resources.files(__name__).joinpath("cuda_legacy.json").read_text(encoding="utf-8")
    )
    return tuple(
        LegacyCudaCode(name=str(r["name"]), legacy_code=int(r["legacy_code"]), code=int(r["code"]))
        for r in raw["codes"]
    )
