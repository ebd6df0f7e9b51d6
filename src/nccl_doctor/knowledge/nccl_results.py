"""NCCL result codes (``ncclResult_t``): numbers, names, the text NCCL and PyTorch print, meaning.

Sources, read on 2026-12-02: NVIDIA/nccl ``src/nccl.h.in`` (the enum at every
release tag: codes 0-5 since 2.x, ncclRemoteError and ncclInProgress since
2.13.4, ncclTimeout since 2.30.3) and ``ncclGetErrorString`` in ``src/init.cc``
(short strings until 2.18, with the "(run with NCCL_DEBUG=... for details)"
hints since 2.19); PyTorch ``torch/csrc/distributed/c10d/NCCLUtils.cpp``
(``getNcclErrorDetailStr``, which prefixes the name and adds its own sentence).
``meaning`` is our own summary.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True, kw_only=True)
class NcclResult:
    """One ``ncclResult_t`` value.

    ``message`` is what ``ncclGetErrorString`` returns in current releases and
    ``short_message`` its form before 2.19 (no "run with NCCL_DEBUG" hint);
    ``torch_detail`` is the sentence PyTorch prints after ``NCCL error: ...``
    (``None`` where it prints none). ``diagnosis_id`` is the catalogue id the
    code alone suggests, if any; most codes only say which layer failed.
    """

    code: int
    name: str
    message: str
    short_message: str
    torch_detail: str | None
    since_version: str | None
    meaning: str
    diagnosis_id: str | None = None


RESULTS: tuple[NcclResult, ...] = (
    NcclResult(
        code=0,
        name="ncclSuccess",
        message="no error",
        short_message="no error",
        torch_detail=None,
        since_version=None,
        meaning="the call succeeded",
    ),
    NcclResult(
        code=1,
        name="ncclUnhandledCudaError",
        message="unhandled cuda error (run with NCCL_DEBUG=INFO for details)",
        short_message="unhandled cuda error",
        torch_detail="ncclUnhandledCudaError: Call to CUDA function failed.",
        since_version=None,
        meaning="a CUDA call inside NCCL failed; the 'Cuda failure N' WARN line names the "
        "CUDA error, which is the real cause (999 unknown error, 2 out of memory, "
        "802 system not ready, 217 peer access unsupported, ...)",
    ),
    NcclResult(
        code=2,
        name="ncclSystemError",
        message="unhandled system error (run with NCCL_DEBUG=INFO for details)",
        short_message="unhandled system error",
        torch_detail="ncclSystemError: System call (e.g. socket, malloc) or external "
        "library call failed or device error.",
        since_version=None,
        meaning="a system or library call failed: sockets (connection refused/reset, "
        "wrong interface), shared memory (/dev/shm too small), ibverbs (memlock, "
        "registration); before 2.13 also a peer that exited",
    ),
    NcclResult(
        code=3,
        name="ncclInternalError",
        message="internal error - please report this issue to the NCCL developers",
        short_message="internal error",
        torch_detail="ncclInternalError: Internal check failed.",
        since_version=None,
        meaning="an internal consistency check failed: an NCCL bug, a version mismatch "
        "between ranks, or state corrupted by an earlier error",
        diagnosis_id="nccl.internal",
    ),
    NcclResult(
        code=4,
        name="ncclInvalidArgument",
        message="invalid argument (run with NCCL_DEBUG=WARN for details)",
        short_message="invalid argument",
        torch_detail="ncclInvalidArgument: Invalid value for an argument.",
        since_version=None,
        meaning="a call got a bad argument (null or foreign-device buffer, bad count, "
        "rank out of range); usually application or framework misuse",
    ),
    NcclResult(
        code=5,
        name="ncclInvalidUsage",
        message="invalid usage (run with NCCL_DEBUG=WARN for details)",
        short_message="invalid usage",
        torch_detail="ncclInvalidUsage: This usually reflects invalid usage of NCCL library.",
        since_version=None,
        meaning="the library was used wrongly: two ranks on one GPU (Duplicate GPU "
        "detected), mismatched group calls, a bad NCCL_ALGO/NCCL_PROTO string",
    ),
    NcclResult(
        code=6,
        name="ncclRemoteError",
        message="remote process exited or there was a network error",
        short_message="remote process exited or there was a network error",
        torch_detail="ncclRemoteError: A call failed possibly due to a network error or a "
        "remote process exiting prematurely.",
        since_version="2.13.4",
        meaning="a peer disappeared or the network failed; on a surviving rank it usually "
        "means another rank died first: look for the earliest failing rank",
        diagnosis_id="launch.rank_crash",
    ),
    NcclResult(
        code=7,
        name="ncclInProgress",
        message="NCCL operation in progress",
        short_message="NCCL operation in progress",
        torch_detail=None,
        since_version="2.13.4",
        meaning="a non-blocking call has not finished yet (not an error by itself)",
    ),
    NcclResult(
        code=8,
        name="ncclTimeout",
        message="timeout",
        short_message="timeout",
        torch_detail=None,
        since_version="2.30.3",
        meaning="an NCCL operation timed out inside NCCL",
        diagnosis_id="app.hang",
    ),
)

#: What a reader of a result prints for a code outside the enum it was built with: NCCL's own
#: ``ncclGetErrorString`` (its ``default:`` branch, every release) and PyTorch's
#: ``getNcclErrorDetailStr`` (``default:``; ncclRemoteError only where torch was built with
#: NCCL 2.13 or later). The code came from an NCCL build other than the one reading it: a
#: second libnccl loaded beside the one the program was compiled with.
UNKNOWN_RESULT_TEXTS = ("unknown result code", "unknown nccl error!")
UNKNOWN_RESULT_ID = "nccl.version_mismatch"

_BY_CODE = {r.code: r for r in RESULTS}
_MIN_PHRASE = 10
_BY_NAME = {r.name.lower(): r for r in RESULTS}


def result(code: int | str) -> NcclResult | None:
    """The result with this number (int or decimal text) or name (``ncclSystemError``)."""
    if isinstance(code, bool):
        return None
    if isinstance(code, int):
        return _BY_CODE.get(code)
    if not isinstance(code, str):
        return None
    text = code.strip()
    if text.isascii() and text.isdigit() and len(text) < 4:
        return _BY_CODE.get(int(text))
    return _BY_NAME.get(text.lower())


def from_message(text: str) -> NcclResult | None:
    """The result whose message (either form) or PyTorch detail appears in ``text``.

    Matching ignores case; the longest matching message wins, so the current
    "unhandled cuda error (run with ...)" and the older "unhandled cuda error"
    both map to code 1. "no error" never matches (it is not a failure), nor do
    phrases too generic to name a code (ncclTimeout's "timeout": only its name).
    """
    if not isinstance(text, str) or not text:
        return None
    low = text.lower()
    best: tuple[int, NcclResult] | None = None
    for r in RESULTS[1:]:
        for phrase in (r.message, r.short_message, r.torch_detail, r.name + ":"):
            if not phrase or len(phrase) < _MIN_PHRASE:
                continue
            if phrase.lower() in low and (best is None or len(phrase) > best[0]):
                best = (len(phrase), r)
    return best[1] if best else None


def unknown_result_in(text: str) -> bool:
    """Whether ``text`` holds the words printed for a result code the reader does not know."""
    low = text.lower()
    return any(t in low for t in UNKNOWN_RESULT_TEXTS)
