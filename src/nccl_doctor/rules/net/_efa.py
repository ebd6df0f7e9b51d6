"""Transfers NCCL's libfabric plugin (aws-ofi-nccl, on AWS EFA) saw complete with an error.

The plugin quotes the provider's error of a failed completion: EFA's ``efa_errno``
(libfabric ``prov/efa/src/efa_errno.h``, 1.21 on) and its text. What the numbers
say, after ``efa_show_help`` (``efa_strerror.c``): the EFA device never reached the
peer (security group rules or subnets, or a peer that is gone), the peer stopped
answering (it exited or failed, or its host or EFA device did), or a buffer's
registration is not valid for the NIC (with GPU memory: the GPUDirect RDMA path).
The texts themselves are catalogue rows (``libfabric.jsonl``).
"""

from __future__ import annotations

from dataclasses import dataclass

from nccl_doctor.facts.nccl import NcclWarn
from nccl_doctor.facts.store import Facts

#: LOCAL_ERROR_UNREACH_REMOTE: the device never got a response from the peer.
UNREACHABLE = 15
#: REMOTE_ERROR_ABORT, REMOTE_ERROR_BAD_DEST_QPN, LOCAL_ERROR_UNRESP_REMOTE,
#: ESTABLISHED_RECV_UNRESP, UNESTABLISHED_RECV_UNRESP: the peer reset the connection, its
#: queue pair is gone, or it stopped answering.
PEER_GONE = frozenset({8, 9, 13, 4124, 4126})
#: LOCAL_ERROR_INVALID_LKEY, REMOTE_ERROR_BAD_ADDRESS (libfabric 1.22 on): a registration
#: the NIC may not use.
REGISTRATION = frozenset({5, 7})
#: How libfabric 1.21 worded two of them before they changed meaning: the peer's interface
#: down or without EFA (7), a receiver that never answered (13); both read as unreachable.
_UNREACHABLE_WORDS = (
    "Unreachable remote",
    "Destination ENI is down",
    "connection never established",
)


@dataclass(frozen=True, slots=True)
class EfaCompletions:
    """The plugin's failed completions: those that never reached the peer, and the rest."""

    unreachable: list[NcclWarn]
    failed: list[NcclWarn]


def efa_completions(facts: Facts) -> EfaCompletions:
    """The evidence's libfabric completion errors, split by whether the peer was reached."""
    unreachable: list[NcclWarn] = []
    failed: list[NcclWarn] = []
    for w in facts.of(NcclWarn):
        if w.prov_error is None:
            continue
        never = w.prov_errno == UNREACHABLE or any(x in w.prov_error for x in _UNREACHABLE_WORDS)
        (unreachable if never else failed).append(w)
    return EfaCompletions(unreachable, failed)


def reading(warns: list[NcclWarn]) -> str:
    """What the provider's errors of ``warns`` say about the peer or the buffer."""
    codes = {w.prov_errno for w in warns}
    if codes & REGISTRATION:
        return (
            "the buffer's memory registration is not valid for the NIC: with GPU memory, the "
            "GPUDirect RDMA path (DMA-BUF or the peer-memory module) is broken"
        )
    if codes & PEER_GONE:
        return (
            "the peer stopped answering: its process exited or failed first, or its host or "
            "EFA device failed"
        )
    return "the transfer failed in the EFA provider"
