"""PyTorch's reports of failed NCCL calls (``NCCL error in: ...``, ``NCCL error: ...``)."""

from __future__ import annotations

from collections.abc import Sequence

from nccl_doctor.evidence.lines import Line
from nccl_doctor.facts.run import NcclErrorReport
from nccl_doctor.parse._lazy import LazyPattern
from nccl_doctor.parse._runtext import clip, pg_prefix, rank_of, to_int
from nccl_doctor.parse._values import cite

_NCCL_IN = LazyPattern(
    r"NCCL error in: (?P<file>[^\s,]{1,300}?):(?P<line>\d{1,7}), (?P<reason>(?:[^,\n]*?[^,\s])?)"
    r"(?: \(run with NCCL_DEBUG=\w+ for details\))?"
    r"(?:, NCCL(?: version (?P<ver>[\w.+-]{1,40}))?)?[.]?\s*$"
)
#: the rest of a message wrapped after ", NCCL": ``version 2.14.3``
_WRAPPED_VERSION = LazyPattern(r"^\s*version (?P<ver>\d[\w.+-]{0,39})\s*$")
_NCCL_ERR = LazyPattern(
    r"NCCL error: (?P<reason>(?:[^,(\n]*?[^,(\s])?)(?: \(run with NCCL_DEBUG=\w+ for details\))?"
    r"(?:, NCCL version (?P<ver>[\w.+-]{1,40}))?[.]?\s*$"
)
_NCCL_OLD = LazyPattern(r"NCCL Error (?P<code>\d{1,3}): (?P<reason>[^,\n]*)")
_RESULT_LINE = LazyPattern(r"^\s*(?P<name>nccl[A-Z]\w{2,40}): ")
#: NCCL's ncclGetErrorString texts -> ncclResult_t names
_REASONS = {
    "unhandled cuda error": "ncclUnhandledCudaError",
    "unhandled system error": "ncclSystemError",
    "internal error": "ncclInternalError",
    "invalid argument": "ncclInvalidArgument",
    "invalid usage": "ncclInvalidUsage",
    "remote process exited or there was a network error": "ncclRemoteError",
    "operation in progress": "ncclInProgress",
    "no error": "ncclSuccess",
}


def nccl_report(line: Line, text: str, following: Sequence[str] = ()) -> NcclErrorReport | None:
    """The NCCL error report that starts in ``text``, completed by the lines ``following`` it."""
    if "NCCL" not in text:
        return None
    code: int | None = None
    file: str | None = None
    src_line: int | None = None
    version: str | None = None
    if m := _NCCL_IN.search(text):
        reason, file, src_line, version = m["reason"], m["file"], to_int(m["line"]), m["ver"]
        start = m.start()
    elif m := _NCCL_ERR.search(text):
        reason, version, start = m["reason"], m["ver"], m.start()
    elif m := _NCCL_OLD.search(text):
        reason, code, start = m["reason"], to_int(m["code"]), m.start()
    else:
        return None
    reason = reason.strip() or None
    result = _REASONS.get(reason.lower()) if reason else None
    last: list[str] = []
    in_last = False
    if version is None and following and (w := _WRAPPED_VERSION.match(following[0])):
        version = w["ver"]
    for item in following[:16]:
        s = item.strip()
        if in_last:
            if s:
                last.append(clip(s))
            if len(last) >= 4:
                break
            continue
        if r := _RESULT_LINE.match(s):
            result = r["name"]
        elif s.startswith("Last error:"):
            in_last = True
            rest = s[len("Last error:") :].strip()
            if rest:
                last.append(clip(rest))
    _, pg_rank, default = pg_prefix(text)
    return NcclErrorReport(
        cite=cite(line),
        rank=rank_of(line, pg_rank, default),
        host=line.host,
        reason=reason,
        result_name=result,
        result_code=code,
        nccl_version=version,
        torch_file=file,
        torch_line=src_line,
        last_error=tuple(last),
        message=clip(text[start:]),
    )
