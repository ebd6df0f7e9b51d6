"""Write ``ucx.jsonl``: what UCX (openucx/ucx) prints when the transport under a job fails,
read from its own source at release tags.

Usage: ``python scripts/signatures/mine_ucx.py`` (a git mirror of openucx/ucx under
``/work/.mirror``; another root as the first argument).

UCX carries Open MPI's ``pml ucx``, Horovod's MPI path, RAPIDS (dask-cuda, ucx-py, Spark
RAPIDS' shuffle) and NCCL's UCX plugin. Its log lines read ``[time] [host:pid:tid]
file.c:line UCX ERROR <message>``; an error that reaches the program is a ``ucs_status_t``,
which bindings print by ``ucs_status_string`` (``Destination is unreachable``). Kept here:

* the IB completion errors of the mlx5 transport (``ib_mlx5_log.c``: ``Transport retry count
  exceeded on mlx5_0:1/IB``): the text of the completion's syndrome, then the device;
* the status texts that name a cause (``src/ucs/type/status.c``): a peer unreachable, a
  peer that reset the connection, no resources (a host limit: shared memory, locked memory);
* the messages that say what to fix: ``/dev/shm`` (``UCX_POSIX_DIR``) too small for the
  shared-memory transport, GPUDirect RDMA not enabled (the peer-memory module), the
  locked-memory limit, a socket connect that failed, a UD peer that stopped answering; and
  the ``ibv_fork_init`` notice, which changes nothing for a job that does not fork after
  registering memory.

Each is a literal text of the source (a snprintf'd string, a status string, a format's
words before its first conversion or with its conversions read as printf's), found with
``git grep -F`` at every tag: where it is printed from, and the releases that print it.
Texts shorter than 24 characters (``Endpoint timeout``, ``Shared memory error``) say nothing
only UCX says and are left out.
"""

from __future__ import annotations

import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import pattern_for, write_jsonl
from gitsrc import C_SUFFIXES, git
from keeps import PEER_GONE, SPECIFIC, Keep, placed, wording_id

# the last patch of each minor release from 1.9 (2020) on
TAGS = (
    "v1.9.0", "v1.10.1", "v1.11.2", "v1.12.1", "v1.13.1", "v1.14.1", "v1.15.0", "v1.16.0",
    "v1.17.0", "v1.18.1", "v1.19.1", "v1.20.1", "v1.21.0", "v1.22.0",
)  # fmt: skip


@dataclass(frozen=True)
class Text:
    """One kept text: the kept message (its ``anchor`` the literal text the source holds,
    found with ``git grep -F``), the format it prints (printf conversions, where it has
    some), and its older wordings (their literal text; each prints as ``printed`` prints
    the newest one)."""

    keep: Keep
    printed: str = ""
    style: str = "literal"
    older: tuple[str, ...] = ()


def _t(
    ident: str,
    source: str,
    symptom: str,
    hints: tuple[str, ...],
    note: str,
    *,
    printed: str = "",
    style: str = "literal",
    level: str = "error",
    older: tuple[str, ...] = (),
) -> Text:
    return Text(Keep(ident, source, symptom, hints, note, level=level), printed, style, older)


#: the mlx5 transport's completion errors (ib_mlx5_log.c's err_info, then ``on`` the device,
#: port and link layer and the syndrome: ``... on mlx5_0:1/IB (synd 0x15 vend 0x81 ...``)
_COMPLETION = "an IB completion with an error on the mlx5 transport: "
KEEP = (
    _t("ucx.ib_mlx5.transport_retry_exceeded", "Transport retry count exceeded",
         "rdma_completion", ("net.ib_transport", "net.ib_link"),
         _COMPLETION + "the peer's HCA never acknowledged (a link or switch fault on the path, "
         "the peer gone, or a route the fabric does not have)",
         printed="Transport retry count exceeded on %s:%d/%s (synd 0x%x", style="printf"),
    _t("ucx.ib_mlx5.rnr_retry_exceeded", "Receive-no-ready retry count exceeded",
         "rdma_completion", ("net.ib_transport",),
         _COMPLETION + "the peer posted no receive in time (it stalled or is gone)",
         printed="Receive-no-ready retry count exceeded on %s:%d/%s (synd 0x%x", style="printf"),
    _t("ucx.ib_mlx5.local_protection", "Local protection error", "rdma_completion",
         ("net.gdr", "net.ib_config"),
         _COMPLETION + "the NIC may not access the local buffer (GPU memory: the GPUDirect "
         "RDMA path, ACS or the IOMMU)",
         printed="Local protection error on %s:%d/%s (synd 0x%x", style="printf",
         older=("Local protection",)),
    _t("ucx.ib_mlx5.remote_access", "Remote access error", "rdma_completion",
         ("net.ib_transport", "net.gdr"),
         _COMPLETION + "the peer's NIC refused access to its buffer",
         printed="Remote access error on %s:%d/%s (synd 0x%x", style="printf",
         older=("Remote access",)),
    _t("ucx.ib_mlx5.remote_operation", "Remote operation error", "rdma_completion",
         ("net.ib_transport",), _COMPLETION + "the peer's NIC could not complete the operation",
         printed="Remote operation error on %s:%d/%s (synd 0x%x", style="printf",
         older=("Remote QP",)),
    _t("ucx.ib_mlx5.local_qp_operation", "Local QP operation error", "rdma_completion",
         ("net.ib_transport",), _COMPLETION + "the local queue pair failed",
         printed="Local QP operation error on %s:%d/%s (synd 0x%x", style="printf"),
    _t("ucx.ib_mlx5.remote_aborted", "Remote side aborted", "rdma_completion", PEER_GONE,
         _COMPLETION + "the peer aborted the transfer (it failed or exited)",
         printed="Remote side aborted on %s:%d/%s (synd 0x%x", style="printf"),
    # ucs_status_string: what a binding raises (ucp._libs.exceptions, JUCX, Open MPI's pml)
    _t("ucx.status.unreachable", "Destination is unreachable", "connection",
         ("net.unreachable", "net.socket_interface"),
         "UCS_ERR_UNREACHABLE: no transport reaches the peer's address (an interface the "
         "peers do not share, a firewall, UCX_NET_DEVICES or UCX_TLS that leave no common "
         "path)"),
    _t("ucx.status.connection_reset", "Connection reset by remote peer", "connection",
         PEER_GONE, "UCS_ERR_CONNECTION_RESET: the peer closed the connection (it failed or "
         "exited)"),
    _t("ucx.status.no_resource", "No resources are available to initiate the operation",
         "host_limit", (),
         "UCS_ERR_NO_RESOURCE: a transport could not get what it needs from the host: a "
         "shared-memory segment (/dev/shm), locked memory for registration, queue pairs"),
    _t("ucx.status.rejected", "Operation rejected by remote peer", "connection",
         ("net.unreachable", "launch.rank_crash"),
         "UCS_ERR_REJECTED: the peer refused the connection request"),
    # messages that say what to fix
    _t("ucx.posix.dev_shm_full", "Not enough memory to write total of %zu bytes. ",
         "host_limit", ("host.resources", "nccl.shm"),
         "the shared-memory transport could not size its segment: /dev/shm (or UCX_POSIX_DIR) "
         "is too small (64 MB in a Docker container: --shm-size, --ipc=host)",
         printed="Not enough memory to write total of %zu bytes", style="printf"),
    _t("ucx.posix.alloc_failed", "shared memory allocation failed: ", "host_limit",
         ("host.resources", "nccl.shm"),
         "the shared-memory transport could not allocate a segment (/dev/shm full or limited)"),
    _t("ucx.ib.gdr_not_enabled", "Couldn't enable GPUDirect RDMA", "failure",
         ("net.gdr",),
         "UCX could not register GPU memory with the NIC: the peer-memory module "
         "(nvidia_peermem, nv_peer_mem) is not loaded"),
    _t("ucx.ib.memlock_limit", "Please set max locked memory (ulimit -l) to 'unlimited'",
         "host_limit", ("net.ib_config", "host.resources"),
         "registering memory with the NIC failed with ENOMEM under a locked-memory limit "
         "(ulimit -l; a container's --ulimit memlock)"),
    _t("ucx.sock.connect_failed", "connect(fd=%d, dest_addr=%s) failed: %m", "connection",
         ("net.unreachable", "net.socket_interface"),
         "a TCP connect to the peer failed (refused: nothing listens, the peer is gone; no "
         "route or timed out: a firewall or an interface the peers do not share)",
         printed="connect(fd=%d, dest_addr=%s) failed: ", style="printf"),
    _t("ucx.ud.unhandled_timeout", "unhandled timeout error", "connection", PEER_GONE,
         "a UD endpoint's peer stopped answering (the peer process or its node is gone, or "
         "the fabric path failed); UCX aborts the process",
         printed=": unhandled timeout error"),
    _t("ucx.ib.fork_init_disabled", "IB: ibv_fork_init() was disabled or failed, yet a fork() "
         "has been issued.", "info", (),
         "a notice: the process forked after registering memory with the NIC (a DataLoader "
         "worker); harmless unless the child touches registered memory", level="warning"),
)  # fmt: skip


def _places(mirror: Path, tag: str, text: str) -> list[str]:
    """Where ``text`` stands in the tag's C sources (``path:line``)."""
    try:
        found = git(mirror, "grep", "-n", "-F", "-e", text, tag, "--", "src")
    except subprocess.CalledProcessError:  # git grep's status 1: not in this release
        return []
    out = []
    for hit in found.splitlines():
        _, path, line = hit.split(":", 3)[:3]
        if path.endswith(C_SUFFIXES):
            out.append(f"{path}:{line}")
    return out


def _row(text: Text, source: str, places: dict[str, list[str]], taken: set[str]) -> dict[str, Any]:
    keep = text.keep
    printed = (text.printed or keep.anchor).replace(keep.anchor, source, 1).rstrip()
    pattern, fields = pattern_for(printed, text.style)
    seen, base = placed("ucx", keep.level, places, TAGS, _version, printed, text.style)
    return {
        "id": wording_id(keep.id, seen, taken), **base, "pattern": pattern, "fields": fields,
        "symptom": keep.symptom, "hint_ids": list(keep.hints), "note": keep.note,
    }  # fmt: skip


def _version(tag: str) -> str:
    return tag.lstrip("v")


def _snprintf_literal(text: str) -> str:
    """How a completion's text stands in ib_mlx5_log.c (an older short wording such as
    ``Remote QP`` is found only as the whole string it is)."""
    return f'"{text}"'


def main(argv: list[str]) -> int:
    root = Path(argv[1]) if len(argv) > 1 else Path("/work/.mirror")
    mirror = root / "openucx+ucx" / "repo"
    out = []
    for text in KEEP:
        ident = text.keep.id
        printed = text.printed or text.keep.anchor
        if len(printed.strip()) < SPECIFIC:
            raise SystemExit(f"{ident}: {printed!r} is too short to say only UCX says it")
        taken: set[str] = set()
        for n, source in enumerate((text.keep.anchor, *text.older)):
            grep = _snprintf_literal(source) if n else source
            places = {tag: _places(mirror, tag, grep) for tag in TAGS}
            if not any(places.values()):
                raise SystemExit(f"{ident}: {source!r} not found at any tag read")
            out.append(_row(text, source, places, taken))
    print(write_jsonl("ucx", out))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv))
