"""CUDA error and out-of-memory messages (PyTorch's and NCCL's wordings) -> facts."""

from __future__ import annotations

from nccl_doctor.evidence.lines import Line
from nccl_doctor.facts.base import Fact
from nccl_doctor.facts.catalogue import recovered_from
from nccl_doctor.facts.run import CudaError, CudaOutOfMemory
from nccl_doctor.knowledge import cuda_errors
from nccl_doctor.parse._lazy import LazyPattern
from nccl_doctor.parse._runtext import clip, size_mib, to_int, who
from nccl_doctor.parse._values import cite

_UNIT = r"(?:[KMGT]i?B|bytes|B)"
#: PyTorch's ``CUDA error: X``; C++ extensions' ``CUDA Error: X at file.cpp:62`` (vLLM); in a
#: sentence that quotes it, the quote's end or a CJK sentence mark ends it too
_CUDA_ERROR = LazyPattern(
    r"CUDA [Ee]rror: (?P<err>[^\n]{1,200}?)(?:\.\s|\s\(|\s{1,8}at\s{1,8}\S{1,300}:\d|\.?\s*$"
    r"|(?=[\u3002\uff0c\uff1b\uff09\"\u201d]))"
)
_CUDA_FAILURE = LazyPattern(r"Cuda failure (?:(?P<code>\d{1,5}) )?'(?P<err>[^'\n]{1,200})'?")
#: PyTorch <= 1.4 (THC): ``cuda runtime error (30) : unknown error at f.cpp:50`` and
#: ``THCudaCheck FAIL file=f.cpp line=50 error=30 : unknown error``. Before CUDA
#: 10.1 the runtime numbered cudaErrorUnknown 30 (999 since).
_LEGACY = LazyPattern(
    r"(?:cuda runtime error \((?P<code>\d{1,5})\)|THCudaCheck FAIL file=\S{1,300} line=\d{1,7}"
    r" error=(?P<code2>\d{1,5})) : (?P<err>[^\n]{1,200}?)(?: at \S{1,300}:\d{1,7})?\s*$"
)
_INIT = LazyPattern(
    r"cudaGetDeviceCount\(\)[^\n]{0,500}?Error (?P<code>\d{1,5}): "
    r"(?P<err>[^(\n]{0,199}?[^(\s])\s*(?:\(|$)"
)
_DRIVER = LazyPattern(
    r"(?P<err>CUDA driver initialization failed|Found no NVIDIA driver on your system"
    r"|NVIDIA driver on your system is too old|CUDA driver version is insufficient"
    r"|CUDA driver error: [^\n(]{1,200})"
)
_ASSERT = LazyPattern(
    r"(?<![^\s:])(?P<file>[^\s:]+\.cuh?):(?P<ln>\d{1,7}): [^\n]{0,300}?"
    r"Assertion `(?P<a>[^\n]{0,300})` failed"
)
#: A CUDA error by its runtime or driver name, as other wrappers print it (CuPy's and
#: Numba's ``cudaErrorAssert: ...``, TensorFlow's and JAX's ``failed call to cuInit:
#: CUDA_ERROR_UNKNOWN``, ``CUDA_ERROR_ECC_UNCORRECTABLE: uncorrectable ECC error``)
_NAMED = LazyPattern(
    r"(?<![A-Za-z0-9_])(?P<name>cudaError[A-Z][A-Za-z]{1,60}|CUDA_ERROR_[A-Z][A-Z_]{1,60})"
    r"(?![A-Za-z0-9_])"
)
#: A word saying a call failed (whole words: ``cudaError_t`` holds none).
_FAILED = LazyPattern(r"(?i)\b(?:fail(?:ed|ure|s)?|error|returned|abort(?:ed)?)\b")
#: A line of C/C++ that handles a status: ``case X:``, ``return X;``, ``switch (``.
_CODE = LazyPattern(r"\bcase\s+\w+\s*:|\breturn\s+\w+\s*;|\bswitch\s*\(")
_OOM = LazyPattern(r"CUDA out of memory\.?")
_TRIED = LazyPattern(rf"Tried to allocate (?P<n>[\d.]{{1,20}}) ?(?P<u>{_UNIT})")
_NEW_CAP = LazyPattern(
    rf"GPU (?P<gpu>\d{{1,4}}) has a total capacit(?:y|ies) of (?P<tn>[\d.]{{1,20}}) (?P<tu>{_UNIT})"
    rf" of which (?P<fn>[\d.]{{1,20}}) (?P<fu>{_UNIT}) is free"
)
_OLD_CAP = LazyPattern(
    rf"\(GPU (?P<gpu>\d{{1,4}}); (?P<tn>[\d.]{{1,20}}) (?P<tu>{_UNIT}) total capacity;"
    rf" (?P<an>[\d.]{{1,20}}) (?P<au>{_UNIT}) already allocated;"
    rf" (?P<fn>[\d.]{{1,20}}) (?P<fu>{_UNIT}) free;"
    rf"(?: [^;)]*?;)?(?: (?P<rn>[\d.]{{1,20}}) (?P<ru>{_UNIT}) reserved in total by PyTorch)?"
)
_PROCESS = LazyPattern(
    rf"Process (?P<pid>\d{{1,9}}) has (?P<n>[\d.]{{1,20}}) (?P<u>{_UNIT}) memory in use"
)
_THIS = LazyPattern(rf"this process has (?P<n>[\d.]{{1,20}}) (?P<u>{_UNIT}) memory in use")
_ALLOC = LazyPattern(
    rf"(?P<an>[\d.]{{1,20}}) (?P<au>{_UNIT}) is allocated by PyTorch, and (?P<rn>[\d.]{{1,20}})"
    rf" (?P<ru>{_UNIT}) is reserved by PyTorch but unallocated"
)

#: Substrings one of which a line holds when :func:`cuda_facts` can find anything in it.
CUDA_KEYWORDS: tuple[str, ...] = (
    "CUDA error: ",
    "CUDA Error: ",
    "Cuda failure ",
    "cuda runtime error (",
    "THCudaCheck FAIL",
    "cudaGetDeviceCount",
    "CUDA driver",
    "NVIDIA driver on your system",
    "Assertion `",
    "CUDA out of memory",
    "CUDA kernel errors might be asynchronously reported",
    "cudaError",
    "CUDA_ERROR_",
)


def cuda_facts(line: Line, text: str, rank: int | None) -> list[Fact]:
    """The CUDA errors and out-of-memory reports in one message line."""
    if not any(k in text for k in CUDA_KEYWORDS):
        return []
    out: list[Fact] = []
    base = who(line, rank)
    if ("CUDA error: " in text or "CUDA Error: " in text) and (m := _CUDA_ERROR.search(text)):
        out.append(CudaError(**base, kind="cuda_error", error=_norm(m["err"])))
    if "Cuda failure " in text and (m := _CUDA_FAILURE.search(text)):
        out.append(
            CudaError(**base, kind="cuda_failure", error=_norm(m["err"]), code=to_int(m["code"]))
        )
    if ("cuda runtime error (" in text or "THCudaCheck FAIL" in text) and (
        m := _LEGACY.search(text)
    ):
        code = to_int(m["code"] or m["code2"])
        out.append(CudaError(**base, kind="legacy", error=_norm(m["err"]), code=code))
    if "cudaGetDeviceCount" in text and (m := _INIT.search(text)):
        out.append(CudaError(**base, kind="init", error=_norm(m["err"]), code=to_int(m["code"])))
    if ("CUDA driver" in text or "NVIDIA driver" in text) and (m := _DRIVER.search(text)):
        out.append(CudaError(**base, kind="driver", error=_norm(m["err"])))
    if "Assertion `" in text and (m := _ASSERT.search(text)):
        out.append(
            CudaError(
                **base,
                kind="device_assert",
                error="device-side assert triggered",
                assertion=clip(m["a"], 300),
                kernel_file=m["file"],
            )
        )
    if not out and ("cudaError" in text or "CUDA_ERROR_" in text):
        out.extend(_named(line, text, rank))
    if "asynchronously reported" in text:
        out.append(CudaError(**base, kind="async_note", asynchronous_note=True))
    if "CUDA out of memory" in text:
        out.append(_oom(line, text, rank))
    if any(isinstance(f, CudaError) and f.error for f in out) and recovered_from(text):
        return [f for f in out if not (isinstance(f, CudaError) and f.error)]
    return out


def _named(line: Line, text: str, rank: int | None) -> list[Fact]:
    """The first CUDA error named on a line that no other wording of an error matched.

    Only where the line reports it: the name followed by its own message
    (``CUDA_ERROR_ECC_UNCORRECTABLE: uncorrectable ECC error encountered``), or
    a line saying a call failed (``failed call to cuInit: CUDA_ERROR_UNKNOWN``);
    never a line of code that tests a status (``case cudaErrorMemoryAllocation:``,
    ``if (err == cudaErrorNotReady)``), nor a status that is no failure.
    """
    if "==" in text or "!=" in text or _CODE.search(text):
        return []
    for m in _NAMED.finditer(text):
        err = cuda_errors.by_name(m["name"])
        if err is None or err.code in cuda_errors.NOT_FAILURES:
            continue
        # "CUDA_ERROR_X: its message", "(CUDA_ERROR_X): its message" (NVHPC's OpenACC runtime)
        after = text[m.end() : m.end() + 200].lstrip(":)]'\" ").lower()
        own = bool(err.message) and after.startswith((err.message or "").lower())
        if own or _FAILED.search(text[: m.start()]):
            message = err.message or m["name"]
            return [CudaError(**who(line, rank), kind="named", error=_norm(message), code=err.code)]
    return []


def _norm(text: str) -> str:
    return text.strip().rstrip(".").strip().lower()


#: What a process holds beyond PyTorch's reserve: its CUDA context and non-PyTorch memory.
_OWN_EXTRA_MIB = 2048.0


def _oom(line: Line, text: str, rank: int | None) -> CudaOutOfMemory:
    tried = _TRIED.search(text)
    new = _NEW_CAP.search(text)
    old = None if new else _OLD_CAP.search(text)
    this = _THIS.search(text)
    alloc = _ALLOC.search(text)
    gpu = total = free = allocated = reserved = None
    if new:
        gpu, total, free = (
            to_int(new["gpu"]),
            size_mib(new["tn"], new["tu"]),
            size_mib(new["fn"], new["fu"]),
        )
    elif old:
        gpu, total, free = (
            to_int(old["gpu"]),
            size_mib(old["tn"], old["tu"]),
            size_mib(old["fn"], old["fu"]),
        )
        allocated = size_mib(old["an"], old["au"])
        reserved = size_mib(old["rn"], old["ru"])
    if alloc:
        allocated = size_mib(alloc["an"], alloc["au"])
        unallocated = size_mib(alloc["rn"], alloc["ru"])
        if allocated is not None and unallocated is not None:
            reserved = round(allocated + unallocated, 3)
    others: list[tuple[int, float]] = []
    for m in _PROCESS.finditer(text):
        pid, mib = to_int(m["pid"]), size_mib(m["n"], m["u"])
        if pid is not None and mib is not None and len(others) < 64:
            others.append((pid, mib))
    process = size_mib(this["n"], this["u"]) if this else None
    if process is None and reserved is not None:
        # no "this process has" line: the process runs in another PID namespace (a container)
        # and NVML listed it under its host PID; it is the one row that holds what PyTorch
        # reserved plus its CUDA context (a few hundred MiB, at most _OWN_EXTRA_MIB)
        own = [o for o in others if reserved <= o[1] <= reserved + _OWN_EXTRA_MIB]
        if len(own) == 1:
            process = own[0][1]
            others.remove(own[0])
    start = _OOM.search(text)
    return CudaOutOfMemory(
        cite=cite(line),
        rank=rank,
        host=line.host,
        tried_mib=size_mib(tried["n"], tried["u"]) if tried else None,
        gpu_index=gpu,
        total_mib=total,
        free_mib=free,
        process_mib=process,
        allocated_mib=allocated,
        reserved_mib=reserved,
        other_processes=tuple(others),
        message=clip(text[start.start() :] if start else text),
    )
