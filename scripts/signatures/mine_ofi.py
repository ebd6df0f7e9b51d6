"""Write ``aws_ofi_nccl.jsonl`` and ``libfabric.jsonl``: what NCCL's libfabric network plugin
(aws-ofi-nccl, the plugin every EFA job on AWS loads) prints when the network fails, and the
EFA provider's error texts it quotes, read from their own source at release tags.

Usage: ``python scripts/signatures/mine_ofi.py`` (git mirrors of aws/aws-ofi-nccl and
ofiwg/libfabric under ``/work/.mirror``; another root as the first argument).

The plugin logs through NCCL's own logger (``NCCL_OFI_WARN``/``NCCL_OFI_INFO`` put
``NET/OFI `` before the format), so its lines read ``host:pid:tid [dev] NCCL WARN NET/OFI
...`` and its last WARN is what PyTorch quotes after ``Last error:``. The plugin's errors
reach NCCL as ``ncclSystemError`` (``nccl_net_ofi_retval_translate``: a peer's connection
errors are ``ncclRemoteError``, an invalid argument ``ncclInternalError``); a kept failure
is of the system error's class.

Of its ~650 WARNs, most are the plugin's own bookkeeping (freelists, id pools, histograms,
mutexes). Those kept say what an engineer acts on: no libfabric provider (EFA not there),
the fabric or domain not opened (the device not in the container), memory registration
refused (locked memory, GPUDirect RDMA), completions with errors (the transfer failed), a
setting the plugin refuses; and the INFO lines that say which provider and libfabric ran.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import escape, first_line, write_jsonl
from gitsrc import format_calls, git
from keeps import PEER_GONE, SPECIFIC, Fill, Keep, Seen, placed, rows, wording_id

# the last patch of each minor release from 1.1 on (1.0 and older name their macros alike but
# predate the EFA provider's use in the field)
TAGS = (
    "v1.1.5", "v1.2.0", "v1.3.0", "v1.4.0", "v1.5.0-aws", "v1.6.0", "v1.7.4-aws", "v1.8.1-aws",
    "v1.9.2-aws", "v1.10.0-aws", "v1.11.1-aws", "v1.12.1-aws", "v1.13.2-aws", "v1.14.2",
    "v1.15.0", "v1.16.3", "v1.17.3", "v1.18.0", "v1.19.2", "v1.20.0", "v1.21.1",
)  # fmt: skip
#: include/nccl_ofi_log.h: the macros put it before every format, so it is part of each
#: format as printed
_PREFIX = "NET/OFI "
_SYS = "nccl_system"
_RC_ERROR = r"RC: %d, (?:Error|ERROR): %s"  # how the plugin prints a failed libfabric call

#: memory registration's errno, which tells locked memory from the GPU path
_MR_FILLS = (
    Fill("memlock", _RC_ERROR, ("-12", "Cannot allocate memory"), _SYS,
         ("net.ib_config", "host.resources"),
         "the NIC could not pin the buffer: the locked-memory limit (ulimit -l, a container's "
         "--ulimit memlock) is below what the job registers"),
    Fill("bad_address", _RC_ERROR, ("-14", "Bad address"), _SYS, ("net.gdr",),
         "the NIC may not map the buffer: for GPU memory, the GPUDirect RDMA path "
         "(nvidia_peermem or DMA-BUF) is missing or refused"),
)  # fmt: skip

#: No GPU was given a NIC: the ids and the reading (nccl_ofi_topo.c, nccl_ofi_rdma)
_NO_NIC = (
    ("net.ib_config", "driver.container", "nccl.version_mismatch"),
    (
        "the plugin's hardware topology holds none of the NICs libfabric listed, so no GPU has a "
        "NIC and the RDMA protocol does not start (NCCL falls back to sockets): hwloc did not see "
        "the NICs' PCI devices (a container whose /sys hides them, another libhwloc loaded "
        "first), or libfabric listed them without PCI attributes"
    ),
)

KEEP = (
    # no provider: libfabric found no EFA (an instance without it, a container without
    # /dev/infiniband, FI_PROVIDER naming one not installed, the wrong libfabric loaded)
    Keep("aws_ofi_nccl.init.getinfo_failed", r"^OFI fi_getinfo\(\) call failed", _SYS,
         ("net.ib_config",),
         "libfabric found no provider the plugin can use: no EFA device visible (an instance "
         "type without EFA, a container started without the EFA devices), or FI_PROVIDER "
         "names one not installed"),
    Keep("aws_ofi_nccl.init.no_optimal_provider", r"^Couldn't find any optimal provider", _SYS,
         ("net.ib_config",), "libfabric offered no provider the plugin accepts (1.7 and older)"),
    Keep("aws_ofi_nccl.init.no_eligible_provider", r"^No eligible providers were found", "info",
         ("net.ib_config",),
         "the plugin found no usable provider and steps aside: NCCL uses its own IB or socket "
         "transport instead of EFA", level="info"),
    Keep("aws_ofi_nccl.init.no_provider_for_device", r"^Unable to find provider for dev", _SYS,
         ("net.ib_config",), "no provider for a device the plugin listed (1.6 and older)"),
    Keep("aws_ofi_nccl.init.no_protocol", r"^Unable to find a protocol that worked", _SYS,
         ("net.ib_config",),
         "neither the RDMA nor the send/receive protocol could start on the providers found"),
    # the plugin's hardware topology (hwloc) pairs each GPU with the NICs nearest it; when it
    # holds none of the NICs libfabric listed, no GPU gets a NIC (nccl_ofi_topo.c leaves the
    # largest group at 0) and the RDMA protocol refuses to start: NCCL falls back to sockets
    Keep("aws_ofi_nccl.topo.no_nic_group", r"^Unexpected group size %d$", _SYS, *_NO_NIC),
    Keep("aws_ofi_nccl.topo.group_size_range", r"^Unexpected topo group size of %d \(minimum 1",
         _SYS, ("net.ib_config",),
         "the plugin found no NIC, or more NICs per GPU than its build supports, for a GPU",
         fills=(Fill("none", r"of %d", ("0",), _SYS, *_NO_NIC),)),
    Keep("aws_ofi_nccl.init.libfabric_too_old", r"^EFA provider requires at least libfabric "
         r"version", _SYS, ("net.ib_config",),
         "the libfabric loaded is older than the release the message names, which the "
         "plugin's EFA support needs: another libfabric on the library path (a framework's, "
         "an old image's) shadows the one installed with the plugin"),
    Keep("aws_ofi_nccl.cuda.driver_too_old", r"^Insufficient driver to use CUDA function", _SYS,
         ("driver.cuda_mismatch",),
         "the NVIDIA driver is older than a CUDA driver function the plugin resolves "
         "(cudaGetDriverEntryPoint: version not sufficient): the plugin's CUDA needs a newer "
         "driver"),
    Keep("aws_ofi_nccl.init.tcp_no_endpoint", r"^No viable endpoint found for TCP provider",
         _SYS, ("net.socket_interface",),
         "the TCP provider found no interface it may use (OFI_NCCL_EXCLUDE_TCP_IF, IPv6)"),
    Keep("aws_ofi_nccl.init.libfabric_cuda_api", r"^Using Libfabric 1\.18 API with GPUDirect RDMA "
         r"support, and FI_OPT_CUDA_API_PERMITTED", _SYS, ("net.ib_config",),
         "the plugin was built against a libfabric older than the one it needs for GPUDirect "
         "RDMA"),
    # the device is there but cannot be opened (permissions, a container without the device)
    Keep("aws_ofi_nccl.fabric.open_failed", r"^Couldn't open a fabric provider\. RC", _SYS,
         ("net.ib_config",), "libfabric could not open the fabric"),
    Keep("aws_ofi_nccl.fabric.open_failed_ofiutils", r"^Couldn't open a fabric provider using",
         _SYS, ("net.ib_config",), "libfabric could not open the fabric"),
    Keep("aws_ofi_nccl.fabric.domain_open_failed", r"^Couldn't open a fabric access domain", _SYS,
         ("net.ib_config",),
         "the NIC's access domain could not be opened (the device node missing or not "
         "accessible)"),
    Keep("aws_ofi_nccl.fabric.create_domain_failed", r"^Couldn't create domain\. RC", _SYS,
         ("net.ib_config",), "the NIC's access domain could not be created"),
    # memory registration: locked memory, or GPU memory the NIC may not reach
    Keep("aws_ofi_nccl.mr.register_failed", r"^Unable to register memory \(type = ", _SYS,
         ("net.gdr", "net.ib_config"),
         "the NIC refused to register a buffer (type 2 is GPU memory)",
         fills=_MR_FILLS),
    Keep("aws_ofi_nccl.mr.regattr_failed", r"^Couldn't register memory region with regattr",
         _SYS, ("net.gdr", "net.ib_config"), "the NIC refused to register a buffer",
         fills=_MR_FILLS),
    Keep("aws_ofi_nccl.mr.dmabuf_not_built", r"^Passed fd handle, but not compiled with DMA-BUF",
         _SYS, ("net.gdr",),
         "NCCL passed a DMA-BUF handle to a plugin built without DMA-BUF support"),
    Keep("aws_ofi_nccl.gdr.endpoint_failed", r"^GDR support reported to NCCL but then couldn't",
         _SYS, ("net.gdr",),
         "GPUDirect RDMA was announced but could not be set on an endpoint"),
    Keep("aws_ofi_nccl.gdr.disabled", r"^GDR disabled on GDR-supported instance type", "info",
         ("net.gdr",),
         "GPUDirect RDMA is off on an instance that has it: traffic is staged through host "
         "memory (slower)", level="warn"),
    # transfers that failed: the peer never answered, the path broke, or the peer died
    Keep("aws_ofi_nccl.comm.request_failed", r"^Request %p (?:seq %d )?completed with error\.",
         _SYS, ("net.ib_transport",),
         "a send or receive completed with an error: the path to the peer broke or the peer "
         "is gone"),
    Keep("aws_ofi_nccl.comm.request_failed_detail", r"^Request %p \(%s\) completed with error:",
         _SYS, ("net.ib_transport",),
         "a send or receive completed with an error (the provider's errno and text follow)"),
    Keep("aws_ofi_nccl.comm.remote_write_failed", r"^Remote write completed with error", _SYS,
         ("net.ib_transport",), "an RDMA write from the peer completed with an error"),
    Keep("aws_ofi_nccl.comm.rx_failed", r"^Fatal: (?:rx|Bounce) buffer recv completed with error",
         _SYS, ("net.ib_transport",), "a receive buffer completed with an error"),
    Keep("aws_ofi_nccl.comm.cq_read_failed", r"^Unable to retrieve completion queue entries",
         _SYS, ("net.ib_transport",), "reading the completion queue failed"),
    Keep("aws_ofi_nccl.comm.cq_readerr_failed", r"^Unable to read from fi_cq_readerr", _SYS,
         ("net.ib_transport",), "the error of a failed completion could not be read"),
    Keep("aws_ofi_nccl.conn.av_insert_failed", r"^Unable to insert remote address into address "
         r"vector for device %d\. RC", _SYS, ("net.ib_config", "nccl.version_mismatch"),
         "the peer's address could not be added: an address this NIC cannot reach, or a peer "
         "running another plugin build"),
    # settings the plugin refuses or ignores
    Keep("aws_ofi_nccl.env.dup_conns_gdr", r"^NCCL_OFI_NIC_DUP_CONNS set on platform that "
         r"supports GPUDirect", _SYS, ("nccl.env",),
         "OFI_NCCL_NIC_DUP_CONNS is only for instances without GPUDirect RDMA"),
    Keep("aws_ofi_nccl.env.invalid_value", r"^WARNING: %s set to invalid value", "info",
         ("nccl.env",), "a plugin variable has a value it does not accept", level="warn"),
    Keep("aws_ofi_nccl.env.invalid_value_default", r"^Invalid value %s provided for %s "
         r"environment variable", "info", ("nccl.env",),
         "a plugin variable has a value it does not accept: the default is used", level="info"),
    Keep("aws_ofi_nccl.env.ll128_unsupported", r"^NCCL_PROTO was set to \"LL/LL128\", but the "
         r"Libfabric endpoint", "info", ("nccl.env",),
         "NCCL_PROTO forces LL128 on an endpoint without the ordering it needs: data may be "
         "corrupted", level="warn"),
    # what ran: the provider and the libfabric release (EFA or a fallback such as tcp)
    Keep("aws_ofi_nccl.info.selected_provider", r"^Selected [Pp]rovider is %s", "info", (),
         "the libfabric provider the plugin uses (efa on EFA instances)", level="info"),
    Keep("aws_ofi_nccl.info.libfabric_version", r"^Using Libfabric version %u\.%u", "info", (),
         "the libfabric release the plugin loaded", level="info"),
)  # fmt: skip


#: libfabric's releases with the EFA provider's error table (``prov/efa/src/efa_errno.h``,
#: from 1.21): the text of a completion's provider errno, which the plugin quotes
EFA_TAGS = ("v1.21.0", "v1.22.0", "v2.0.0", "v2.1.0", "v2.2.0", "v2.3.0", "v2.4.0", "v2.5.0",
            "v2.6.0")  # fmt: skip
#: The EFA errors kept, by the name ``efa_errno.h`` gives them: class, ids, and the reading
#: (``efa_show_help`` in ``efa_strerror.c`` where it has one). The rest are the provider's
#: own bookkeeping.
EFA_KEEP: dict[str, tuple[str, tuple[str, ...], str]] = {
    "FLUSHED": ("nccl_system", ("net.ib_transport",),
                "flushed when the queue pair was torn down: an earlier error is the cause"),
    "LOCAL_ERROR_QP_INTERNAL_ERROR": ("nccl_system", ("net.ib_transport",),
                                      "the local queue pair failed"),
    "LOCAL_ERROR_INVALID_AH": ("nccl_system", ("net.ib_config",),
                               "the peer's address handle is invalid on this side"),
    "LOCAL_ERROR_INVALID_LKEY": ("nccl_system", ("net.gdr", "net.ib_config"),
                                 ("the local buffer's registration is invalid for the NIC "
                                 "(GPU memory: the GPUDirect RDMA path)")),
    "REMOTE_ERROR_BAD_ADDRESS": ("nccl_remote", ("net.gdr", "net.ib_config"),
                                 "the peer's buffer registration is invalid for its NIC"),
    "REMOTE_ERROR_ABORT": ("nccl_remote", PEER_GONE,
                           "the peer reset the connection: it failed or exited"),
    "REMOTE_ERROR_BAD_DEST_QPN": ("nccl_remote", PEER_GONE,
                                  ("the peer's queue pair is gone: typically the peer process "
                                  "is no longer present")),
    "REMOTE_ERROR_RNR": ("nccl_remote", ("net.ib_transport",),
                         "the peer had no receive posted"),
    "LOCAL_ERROR_UNRESP_REMOTE": ("nccl_remote", PEER_GONE,
                                  ("the peer stopped responding: it died, or its host or EFA "
                                  "device failed")),
    "LOCAL_ERROR_UNREACH_REMOTE": ("nccl_remote", ("net.unreachable", "launch.rank_crash"),
                                   ("the EFA device never reached the peer: security group "
                                   "rules that do not allow all traffic between the "
                                   "instances, or instances in different subnets; or the peer "
                                   "process is gone")),
    "AV_INSERT": ("nccl_system", ("net.ib_config",),
                  "the peer's address could not be added to the address vector"),
    "PEER_HANDSHAKE": ("nccl_system", ("net.unreachable",),
                       "the handshake with the peer could not be posted"),
    "ESTABLISHED_RECV_UNRESP": ("nccl_remote", PEER_GONE,
                                ("the peer stopped responding after the connection was "
                                "established: a hardware failure on the peer, or the peer "
                                "process is gone")),
    "UNESTABLISHED_RECV_UNRESP": ("nccl_remote", ("launch.rank_crash", "net.unreachable"),
                                  ("the peer is reachable but never completed the handshake: "
                                  "the peer process is most likely gone")),
    "INVALID_PKT_TYPE_ZCPY_RX": ("nccl_system", ("net.ib_config",),
                                 ("a packet zero-copy receive cannot take: the nodes run "
                                 "different libfabric releases (or set FI_EFA_USE_ZCPY_RX=0)")),
}  # fmt: skip
#: Older wordings that meant something else under the same name (libfabric 1.21-1.22)
EFA_WORDING: dict[str, tuple[str, tuple[str, ...], str]] = {
    "Destination ENI is down or does not run EFA": (
        "nccl_remote", ("net.unreachable", "launch.rank_crash"),
        ("the peer's network interface is down or has no EFA: its host failed, or it is not "
        "an EFA interface")),
    "Unresponsive receiver (connection never established or unknown)": (
        "nccl_remote", ("net.unreachable", "launch.rank_crash"),
        ("the peer never answered: security group rules or subnets keep the instances apart, or "
        "the peer process is gone")),
}  # fmt: skip
_EFA_ENTRY = re.compile(r"^\s*_\(\s*(\d+),\s*(\w+),\s*(.+?)\)\s*\\?\s*$")


def _efa_rows(mirror: Path, quoted_by: list[str]) -> list[dict[str, Any]]:
    """One row per kept EFA error and wording: its text, where each release defines it (the
    newest wording keeps the id, an older one gets the release it was last seen). Each reads
    the plugin's completion messages that quote it (``quoted_by``) more narrowly."""
    found: dict[tuple[str, str], tuple[int, dict[str, int]]] = {}
    path = "prov/efa/src/efa_errno.h"
    for tag in EFA_TAGS:
        for n, line in enumerate(git(mirror, "show", f"{tag}:{path}").splitlines(), 1):
            m = _EFA_ENTRY.match(line)
            if m and m.group(2) in EFA_KEEP and len(m.group(3).strip()) >= SPECIFIC:
                key = (m.group(2), m.group(3).strip())
                found.setdefault(key, (int(m.group(1)), {}))[1][tag] = n
    if missing := set(EFA_KEEP) - {name for name, _ in found}:
        raise SystemExit(f"efa_errno.h: not found at any tag read: {sorted(missing)}")
    out = []
    newest = sorted(found, key=lambda k: -max(EFA_TAGS.index(t) for t in found[k][1]))
    named: set[str] = set()
    for name, text in newest:
        code, lines = found[(name, text)]
        symptom, hints, note = EFA_WORDING.get(text, EFA_KEEP[name])
        places = {t: [f"{path}:{n}"] for t, n in lines.items()}
        seen, base = placed("libfabric", "error", places, EFA_TAGS, _version, text, "literal")
        ident = wording_id(f"libfabric.efa.{name.lower()}", seen, named)
        out.append({
            "id": ident, **base, "pattern": escape(text), "fields": [],
            "symptom": symptom, "hint_ids": list(hints),
            "note": f"EFA error {code} ({name}): {note}", "refines": quoted_by,
        })  # fmt: skip
    return out


#: The plugin's messages that quote a completion's provider error (``Error: 4126 (...)``)
_COMPLETIONS = ("aws_ofi_nccl.comm.request_failed", "aws_ofi_nccl.comm.remote_write_failed")


def _version(tag: str) -> str:
    return tag.lstrip("v").removesuffix("-aws")


def main(argv: list[str]) -> int:
    root = Path(argv[1]) if len(argv) > 1 else Path("/work/.mirror")
    mirror = root / "aws+aws-ofi-nccl" / "repo"
    seen: dict[tuple[str, str], Seen] = {}
    macros = ("NCCL_OFI_WARN", "NCCL_OFI_INFO")
    for tag in TAGS:
        for call in format_calls(mirror, tag, ("src", "include"), macros, flagged=macros[1:]):
            fmt = call.format
            line = first_line(fmt.text)  # what a pattern covers: wordings alike there are one
            for keep in KEEP:
                if re.search(keep.anchor, line):
                    printed = _PREFIX + line
                    item = seen.setdefault((keep.id, line), Seen(keep, printed, fmt.args, {}))
                    item.where.setdefault(tag, []).append(f"{call.path}:{call.line}")
    missing = {k.id for k in KEEP} - {s.keep.id for s in seen.values()}
    if missing:
        raise SystemExit(f"not found at any tag read: {sorted(missing)}")
    plugin = rows("aws_ofi_nccl", seen, TAGS, _version)
    print(write_jsonl("aws_ofi_nccl", plugin))
    completions = sorted(r["id"] for r in plugin if r["id"].startswith(_COMPLETIONS))
    print(write_jsonl("libfabric", _efa_rows(root / "ofiwg+libfabric" / "repo", completions)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv))
