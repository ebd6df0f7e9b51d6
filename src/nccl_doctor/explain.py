"""``nccl-doctor explain``: what an id, a CUDA error, an Xid or an NCCL result means.

The term is read, in order, as a catalogue id (``gpu.contention``); a
prefixed code (``xid 79``, ``cuda 999``, ``nccl 6``); a name
(``cudaErrorUnknown``, ``CUDA_ERROR_UNKNOWN``, ``ncclRemoteError``); a bare
number, which is ambiguous and so explained as every kind that has it (a
CUDA error today and, where it differs, before CUDA 10.1; an NCCL result; an
Xid); or the message a library prints (``unhandled system error``). Each
explanation ends with the catalogue ids it points to.
"""

from __future__ import annotations

import difflib
import re
import textwrap

from nccl_doctor.errors import UsageError
from nccl_doctor.knowledge import cuda_errors, nccl_results, xid

_PREFIXED = re.compile(
    r"^(?P<kind>xid|cuda|cudaerror|nccl|ncclresult)(?:\s*error)?(?:\s*[:#=])?\s*(?P<n>\d{1,6})$",
    re.IGNORECASE,
)
_NUMBER = re.compile(r"^\d{1,6}$")


def _points(ids: list[str | None]) -> str:
    found = list(dict.fromkeys(i for i in ids if i))
    if not found:
        return "  Diagnosis: no catalogue id by itself; diagnose the logs around it"
    more = "; ".join(f"nccl-doctor explain {i}" for i in found)
    return f"  Diagnosis: {', '.join(found)} ({more})"


def _cuda(err: cuda_errors.CudaError, *, legacy_code: int | None = None) -> str:
    # the driver API never had the old numbers: a legacy reading names the runtime's name only
    names = " / ".join(n for n in (err.name, None if legacy_code else err.driver_name) if n)
    said = f' "{err.message}"' if err.message else ""
    if legacy_code is None:
        lines = [f"CUDA error {err.code}: {names}{said}"]
    else:
        renumbered = f" (CUDA 10.1 renumbered it {err.code})"
        lines = [f"CUDA error {legacy_code} before CUDA 10.1: {names}{said}{renumbered}"]
    if err.sticky:
        lines.append(
            "  Sticky: every later CUDA call of that process fails the same way; "
            "the process must restart"
        )
    if err.hint:
        lines.append(f"  Hint: {err.hint}")
    lines.append(_points([err.diagnosis_id]))
    return "\n".join(lines)


def _legacy(code: int) -> str | None:
    old = cuda_errors.legacy_by_code(code)
    if old is None:
        return None
    name, now = old
    if now is not None:
        return _cuda(now, legacy_code=code)
    return f"CUDA error {code} before CUDA 10.1: {name} (CUDA 10.1 dropped it)\n" + _points([None])


def _cuda_code(code: int) -> list[str]:
    out = []
    if (err := cuda_errors.by_code(code)) is not None:
        out.append(_cuda(err))
    if (old := _legacy(code)) is not None:
        out.append(old)
    if len(out) == 2:
        out.append(
            "  The two numberings overlap: the message printed beside the number tells "
            "which one a log uses."
        )
    return out


def _nccl(res: nccl_results.NcclResult) -> str:
    since = f" (since NCCL {res.since_version})" if res.since_version else ""
    lines = [f'NCCL result {res.code}: {res.name} "{res.message}"{since}']
    if res.torch_detail:
        lines.append(f"  PyTorch prints: {res.torch_detail}")
    lines.append(f"  Meaning: {res.meaning}")
    lines.append(_points([res.diagnosis_id]))
    return "\n".join(lines)


def _xid(info: xid.XidInfo) -> str:
    mnemonic = f" ({info.mnemonic})" if info.mnemonic else ""
    lines = [
        f"Xid {info.code}: {info.name}{mnemonic}",
        f"  Severity for a training job: {info.severity}; likely cause: {info.likely_cause}",
        f"  Meaning: {info.meaning}",
        f"  Action: {info.action}",
    ]
    buckets = [b for b in (info.nvidia_action, info.nvidia_investigation) if b]
    if buckets:
        lines.append(f"  NVIDIA's resolution buckets: {', '.join(buckets)}")
    lines.append(_points([info.diagnosis_id]))
    return "\n".join(lines)


def _by_kind(kind: str, code: int) -> list[str]:
    if kind.startswith("xid"):
        info = xid.xid_info(code)
        return [_xid(info)] if info else []
    if kind.startswith("nccl"):
        res = nccl_results.result(code)
        return [_nccl(res)] if res else []
    return _cuda_code(code)


def _bare(code: int) -> list[str]:
    out = _cuda_code(code)
    kinds = ["cuda"] if out else []
    if (res := nccl_results.result(code)) is not None:
        out.append(_nccl(res))
        kinds.append("nccl")
    if (info := xid.xid_info(code)) is not None:
        out.append(_xid(info))
        kinds.append("xid")
    if len(kinds) > 1:
        pick = " or ".join(f"`{kind} {code}`" for kind in kinds)
        out.insert(0, f"{code} is a number of several kinds; each reading follows ({pick}).")
    return out


def _by_name(term: str) -> list[str]:
    if (err := cuda_errors.by_name(term)) is not None:
        return [_cuda(err)]
    if (res := nccl_results.result(term)) is not None:
        return [_nccl(res)]
    return []


def _by_message(term: str) -> list[str]:
    if len(term) < 6:
        return []
    out = []
    if (res := nccl_results.from_message(term)) is not None:
        out.append(_nccl(res))
    if (err := cuda_errors.by_message(term)) is not None:
        out.append(_cuda(err))
    return out


def _wrap(block: str, width: int) -> str:
    """Each line of ``block`` wrapped to ``width``, continuation lines under the text."""
    out = []
    for line in block.splitlines():
        lead = len(line) - len(line.lstrip())
        out.append(
            textwrap.fill(
                line,
                width=width - 1,
                subsequent_indent=" " * (lead + 2),
                break_long_words=False,
                break_on_hyphens=False,
            )
        )
    return "\n".join(out)


def explain_code(term: str, width: int = 80) -> str | None:
    """The explanation of a CUDA error, Xid or NCCL result ``term``, or ``None``."""
    text = " ".join(term.split())
    if (m := _PREFIXED.match(text)) is not None:
        found = _by_kind(m.group("kind").lower(), int(m.group("n")))
    elif _NUMBER.match(text):
        found = _bare(int(text))
    else:
        found = _by_name(text) or _by_message(text)
    return "\n\n".join(_wrap(block, width) for block in found) + "\n" if found else None


def unknown(term: str, catalogue: tuple[str, ...]) -> UsageError:
    """The error for a term nothing explains, with the closest id or name as the hint."""
    names = [*catalogue, *(r.name for r in nccl_results.RESULTS)]
    names += [e.name for e in cuda_errors.ERRORS if e.name]
    close = difflib.get_close_matches(term, names, n=1)
    hint = (
        f"did you mean {close[0]}?"
        if close
        else "give a diagnosis id (`nccl-doctor rules`), a CUDA error (999, cudaErrorUnknown), "
        "an Xid (xid 79) or an NCCL result (ncclRemoteError)"
    )
    if re.fullmatch(r"[a-z]+\.[a-z0-9_]+", term):  # shaped like a catalogue id
        return UsageError(f"no diagnosis {term!r}", hint)
    return UsageError(f"nothing to explain for {term!r}", hint)
