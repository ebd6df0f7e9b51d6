"""The details of an ``NCCL WARN`` message, read mechanically from its wording.

Each pattern follows a message NCCL prints (in some version from 2.4 to 2.28);
a message that matches none still yields a :class:`NcclWarn` with its text.
"""

from __future__ import annotations

import re

from nccl_doctor.facts.nccl import NcclWarn, nccl_bus_id
from nccl_doctor.parse._lazy import LazyPattern
from nccl_doctor.parse._nccl_common import Who, errno_of, to_int, wc_status_name

_CUDA = LazyPattern(
    r"(?:Cuda failure|CUDA error|cuda failure)(?: (?P<code>-?\d{1,6}))? '(?P<text>[^']*)'?"
)
_IB_WC = LazyPattern(r"Got completion (?:from peer (?P<peer>\S+) )?with (?:error |status=)")
_IB_STATUS = LazyPattern(r"with (?:error |status=)(?:(?P<name>[A-Z][A-Z_]+)\()?(?P<code>-?\d{1,6})")
_IB_OPCODE = LazyPattern(r"opcode[= ](?:[A-Z][A-Z_]+\()?(?P<code>-?\d{1,6})")
_IB_VENDOR = LazyPattern(r"vendor[ _]err[= ](?P<code>\d{1,10})")
_IB_REQ = LazyPattern(
    r"(?:req_type=(?P<a>\w+)|\((?P<b>Send|Recv|Flush|IPut|Unused|GetSignal|PutSignal)\))"
)
_IB_HCA = LazyPattern(r" hca (?P<hca>\S+)")
_IB_EVENT_HCA = LazyPattern(
    r"NET/IB ?: (?P<hca>[\w.-]+:\d+) (?:async fatal event|Got non-fatal async event)"
)
_LOCAL_GID = LazyPattern(r"localGid (?P<gid>[0-9a-fA-F:.]+)")
_REMOTE_GID = LazyPattern(r"remoteGids? ?(?P<gid>[0-9a-fA-F:.]+)")
#: An address run starts where the run starts (the lookbehind): started anywhere
#: inside, a long run without ``<port>`` would be rescanned from every position.
_ADDR = LazyPattern(r"(?<![0-9A-Za-z._:%\[\]-])(?P<addr>\[?[0-9A-Za-z._:%\[\]-]+\]?<\d{1,5}>)")
_CALL = LazyPattern(
    r"(?:Call to (?P<call>[A-Za-z_]\w*)(?:\(\))?(?: (?:recv from|send to) \S+)?"
    r"|(?<!\w)(?P<call2>ibv_\w+)\(\))"
    r" (?:failed|returned)(?: with(?: error)?)?(?P<rest>.*)$"
)
_CONNECT = LazyPattern(
    r"(?:[Cc]onnect) to (?P<peer>\S+) (?:failed|returned)(?: with error)?(?: :)? ?(?P<err>[^,]*)"
)
_ACCEPT = LazyPattern(r"Accept failed:? (?P<err>.+)$")
#: The error text is bounded: unbounded, every ``error`` of a long line would scan to its end.
_ERR_PAREN = LazyPattern(r"error:? (?P<err>[A-Za-z][^()]{0,200}?) \((?P<errno>\d{1,4})\)")
_ERRNO_WORD = LazyPattern(r"\berrno (?P<errno>\d{1,4})")
_TAIL_ERR = LazyPattern(r" : (?P<err>[A-Z][A-Za-z /'-]+)$")
_DUPLICATE = LazyPattern(
    r"Duplicate GPU detected : rank (?P<a>\d+) and rank (?P<b>\d+) "
    r"both on CUDA device (?P<bus>[0-9a-fA-F]+)"
)
_SHM = LazyPattern(
    r"shared memory (?:segment|file) (?P<path>\S+?),?(?: \(size (?P<size>\d+)\))?(?:,|$| )"
)
#: A path starts where a run of path characters starts (see _ADDR).
_PATH = LazyPattern(r"(?<![\w./@+-])(?P<path>/[\w./@+-]*\w)")
#: NCCL's libfabric plugin (aws-ofi-nccl) prints a failed libfabric call's result as ``RC: -14,
#: Error: Bad address``: a negative errno (libfabric's own codes, from 256, keep their text).
_OFI_RC = LazyPattern(
    r"\bRC: (?P<rc>-\d{1,6})[,.] (?:Error|ERROR): (?P<err>[A-Za-z][^.,\n]{0,120})"
)
#: The plugin's words for a failed memory registration: ``fi_mr_regattr`` is the call before
#: them in its source (1.1 to 1.21).
_OFI_REGISTRATION = LazyPattern(
    r"NET/OFI (?:CM: )?(?:Unable to register memory|Couldn't register memory region)"
)
#: The plugin's word for a transfer that completed with an error, and the provider's error it
#: quotes: ``Error: 4126 (Unresponsive receiver (...)). Completed length`` (1.10 on),
#: ``prov_errno: 13, strerror: ...,`` (1.21), ``Error: <text>. Completed length`` (1.3-1.9).
_OFI_COMPLETION = LazyPattern(
    r"NET/OFI (?:Request|Remote write|Fatal: \w+ buffer recv)[^\n]{0,80}?completed with error"
)
_OFI_PROV = LazyPattern(
    r"(?:Error: (?P<code>\d{1,5}) \((?P<text>[^\n]{1,200}?)\)\. Completed"
    r"|prov_errno: (?P<code2>\d{1,5}), strerror: (?P<text2>[^,\n]{1,200}),"
    r"|Error: (?P<text3>[A-Za-z][^\n]{0,200}?)\. Completed)"
)
#: Where libfabric's own error codes start (``FI_ERRNO_OFFSET``); below it they are errnos.
_LIBFABRIC_CODES = 256
_MEMORY_WORDS = LazyPattern(r"memory|alloc|shm|segment|extend|map", re.IGNORECASE)
_SIZE = LazyPattern(r"(?P<a>\d{1,20}) bytes|size (?P<b>\d{1,20})")


def _os_error(rest: str) -> tuple[str | None, int | None]:
    """A strerror text and errno from the tail of a ``Call to X failed`` message."""
    errno_m = _ERRNO_WORD.search(rest)
    printed = to_int(errno_m["errno"]) if errno_m else None
    text = _ERRNO_WORD.sub("", rest).strip(" :,")
    lead = re.match(r"(?P<n>\d{1,4}) (?P<t>.+)", text)
    if lead:
        printed = printed if printed is not None else to_int(lead["n"])
        text = lead["t"]
    text = text.split(", ")[0].strip(" :.")
    if not text or not text[0].isalpha():
        return None, printed
    return text, printed if printed is not None else errno_of(text)


def warn_fact(message: str, who: Who, *, file: str | None, source_line: int | None) -> NcclWarn:
    """A :class:`NcclWarn` for ``message`` (the text after ``NCCL WARN``), details filled in."""
    msg = message.strip()
    cuda_code: int | None = None
    cuda_text: str | None = None
    if m := _CUDA.search(msg):
        cuda_code, cuda_text = to_int(m["code"]), m["text"].strip() or None
    ib_status: int | None = None
    ib_opcode: int | None = None
    ib_vendor: int | None = None
    ib_status_name: str | None = None
    ib_request: str | None = None
    ib_hca: str | None = None
    local_gid: str | None = None
    remote_gid: str | None = None
    peer: str | None = None
    if m := _IB_WC.search(msg):
        peer = m["peer"]
        if s := _IB_STATUS.search(msg):
            ib_status = to_int(s["code"])
            ib_status_name = s["name"] or wc_status_name(ib_status)
        if o := _IB_OPCODE.search(msg):
            ib_opcode = to_int(o["code"])
        if v := _IB_VENDOR.search(msg):
            ib_vendor = to_int(v["code"])
        if r := _IB_REQ.search(msg):
            ib_request = r["a"] or r["b"]
        if g := _LOCAL_GID.search(msg):
            local_gid = g["gid"]
        if g := _REMOTE_GID.search(msg):
            remote_gid = g["gid"]
    if (h := _IB_HCA.search(msg)) or (h := _IB_EVENT_HCA.search(msg)):
        ib_hca = h["hca"]
    call: str | None = None
    os_error: str | None = None
    errno: int | None = None
    if m := _CALL.search(msg):
        call = m["call"] or m["call2"]
        os_error, errno = _os_error(m["rest"] or "")
    elif m := _CONNECT.search(msg):
        call, peer = "connect", m["peer"]
        err = m["err"].strip()
        if err.startswith(("returned ", "failed ")):
            err = err.split(" ", 1)[1]
        os_error, errno = _os_error(err)
    elif m := _ACCEPT.search(msg):
        call = "accept"
        os_error, errno = _os_error(m["err"])
    if call is None and (m := _OFI_RC.search(msg)):
        call = "fi_mr_regattr" if _OFI_REGISTRATION.search(msg) else None
        os_error, rc = m["err"].strip(), int(m["rc"])
        errno = -rc if -rc < _LIBFABRIC_CODES else None
    if os_error is None and (m := _ERR_PAREN.search(msg)):
        os_error, errno = m["err"].strip(), to_int(m["errno"])
    if os_error is None and (m := _TAIL_ERR.search(msg)) and errno_of(m["err"]) is not None:
        os_error, errno = m["err"], errno_of(m["err"])
    if peer is None and (m := _ADDR.search(msg)):
        peer = m["addr"]
    prov_errno: int | None = None
    prov_error: str | None = None
    if _OFI_COMPLETION.search(msg) and (m := _OFI_PROV.search(msg)):
        prov_errno = to_int(m["code"] or m["code2"])
        prov_error = (m["text"] or m["text2"] or m["text3"]).strip()
    ranks: tuple[int, ...] = ()
    bus_raw: str | None = None
    if m := _DUPLICATE.search(msg):
        ranks = (int(m["a"]), int(m["b"]))
        bus_raw = m["bus"]
    path: str | None = None
    size: int | None = None
    if m := _SHM.search(msg):
        path, size = m["path"], to_int(m["size"])
    elif m := _PATH.search(msg):
        path = m["path"]
    if size is None and _MEMORY_WORDS.search(msg) and (m := _SIZE.search(msg)):
        size = to_int(m["a"] or m["b"])
    return NcclWarn(
        cite=who.cite,
        rank=who.rank,
        host=who.host,
        pid=who.pid,
        device=who.device,
        tid=who.tid,
        file=file,
        source_line=source_line,
        message=msg,
        cuda_error_code=cuda_code,
        cuda_error=cuda_text,
        ib_status=ib_status,
        ib_status_name=ib_status_name,
        ib_opcode=ib_opcode,
        ib_vendor_err=ib_vendor,
        ib_request=ib_request,
        ib_hca=ib_hca,
        local_gid=local_gid,
        remote_gid=remote_gid,
        peer=peer,
        call=call,
        os_error=os_error,
        errno=errno,
        ranks=ranks,
        bus_id_raw=bus_raw,
        bus_id=nccl_bus_id(bus_raw),
        path=path,
        size_bytes=size,
        prov_errno=prov_errno,
        prov_error=prov_error,
    )
