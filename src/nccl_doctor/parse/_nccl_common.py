"""Small total helpers shared by the NCCL log and nccl-tests parsers.

Everything here returns ``None`` on odd input and never raises.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

from nccl_doctor.facts.base import Cite
from nccl_doctor.parse._lazy import LazyPattern

#: Longer numbers are absurd in these outputs; refuse them rather than guess.
_MAX_DIGITS = 20
_FLOAT = LazyPattern(r"[-+]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?")

#: ``ncclResult_t`` names by number (nccl.h, stable since NCCL 2.0).
RESULT_NAMES: dict[int, str] = {
    0: "ncclSuccess",
    1: "ncclUnhandledCudaError",
    2: "ncclSystemError",
    3: "ncclInternalError",
    4: "ncclInvalidArgument",
    5: "ncclInvalidUsage",
    6: "ncclRemoteError",
    7: "ncclInProgress",
}

#: ``enum ibv_wc_status`` of libibverbs, by number.
IBV_WC_STATUS: tuple[str, ...] = (
    "IBV_WC_SUCCESS",
    "IBV_WC_LOC_LEN_ERR",
    "IBV_WC_LOC_QP_OP_ERR",
    "IBV_WC_LOC_EEC_OP_ERR",
    "IBV_WC_LOC_PROT_ERR",
    "IBV_WC_WR_FLUSH_ERR",
    "IBV_WC_MW_BIND_ERR",
    "IBV_WC_BAD_RESP_ERR",
    "IBV_WC_LOC_ACCESS_ERR",
    "IBV_WC_REM_INV_REQ_ERR",
    "IBV_WC_REM_ACCESS_ERR",
    "IBV_WC_REM_OP_ERR",
    "IBV_WC_RETRY_EXC_ERR",
    "IBV_WC_RNR_RETRY_EXC_ERR",
    "IBV_WC_LOC_RDD_VIOL_ERR",
    "IBV_WC_REM_INV_RD_REQ_ERR",
    "IBV_WC_REM_ABORT_ERR",
    "IBV_WC_INV_EECN_ERR",
    "IBV_WC_INV_EEC_STATE_ERR",
    "IBV_WC_FATAL_ERR",
    "IBV_WC_RESP_TIMEOUT_ERR",
    "IBV_WC_GENERAL_ERR",
)

#: Linux errno numbers of the glibc ``strerror`` texts NCCL prints most.
ERRNO_BY_TEXT: dict[str, int] = {
    "operation not permitted": 1,
    "no such file or directory": 2,
    "interrupted system call": 4,
    "input/output error": 5,
    "bad file descriptor": 9,
    "resource temporarily unavailable": 11,
    "cannot allocate memory": 12,
    "permission denied": 13,
    "bad address": 14,
    "device or resource busy": 16,
    "file exists": 17,
    "no such device": 19,
    "invalid argument": 22,
    "too many open files": 24,
    "no space left on device": 28,
    "broken pipe": 32,
    "function not implemented": 38,
    "protocol not available": 92,
    "operation not supported": 95,
    "address family not supported by protocol": 97,
    "address already in use": 98,
    "cannot assign requested address": 99,
    "network is down": 100,
    "network is unreachable": 101,
    "software caused connection abort": 103,
    "connection reset by peer": 104,
    "transport endpoint is not connected": 107,
    "connection timed out": 110,
    "connection refused": 111,
    "host is down": 112,
    "no route to host": 113,
    "remote i/o error": 121,
}


def to_int(text: str | None, max_digits: int = _MAX_DIGITS) -> int | None:
    """A plain (optionally signed) decimal integer of at most ``max_digits`` digits (NCCL's
    64-bit unsigned values by default), else ``None``."""
    if text is None:
        return None
    if len(text) <= _KEPT_TEXT:
        return _int_of(text, max_digits)
    return _int(text, max_digits)


#: Texts up to this long have their integer kept (every process prints the same ranks, ports,
#: sizes, timeouts and flags).
_KEPT_TEXT = 24


@functools.lru_cache(maxsize=4096)
def _int_of(text: str, max_digits: int) -> int | None:
    return _int(text, max_digits)


def _int(text: str, max_digits: int) -> int | None:
    s = text.strip()
    body = s[1:] if s[:1] in "-+" else s
    if not body or len(body) > max_digits or not body.isascii() or not body.isdigit():
        return None
    return int(s)


def to_float(text: str | None) -> float | None:
    """A decimal or scientific number (``12.5``, ``1.2e+05``), else ``None``."""
    if text is None:
        return None
    s = text.strip()
    if not s or len(s) > 32 or not _FLOAT.fullmatch(s):
        return None
    try:
        value = float(s)
    except ValueError:
        return None
    if not math.isfinite(value):
        return None
    return value


def errno_of(text: str | None) -> int | None:
    """The Linux errno of a strerror text (``Connection refused`` -> 111), else ``None``."""
    if not text:
        return None
    return ERRNO_BY_TEXT.get(text.strip().rstrip(".").lower())


def wc_status_name(code: int | None) -> str | None:
    """The ``ibv_wc_status`` name of ``code``, else ``None``."""
    if code is None or not 0 <= code < len(IBV_WC_STATUS):
        return None
    return IBV_WC_STATUS[code]


def strip_value(text: str) -> str:
    """A printed value without the one ``.`` NCCL puts after some (``0.`` -> ``0``)."""
    s = text.strip()
    if len(s) > 1 and s.endswith(".") and not s.endswith(".."):
        s = s[:-1]
    return s


@dataclass(frozen=True, slots=True)
class Who:
    """Who printed an NCCL line: the citation and attribution every fact of it carries."""

    cite: Cite
    rank: int | None
    host: str | None
    pid: int | None
    device: int | None
    tid: int | None = None
