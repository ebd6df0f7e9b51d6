"""An nccl-tests run across nodes that moved far less than the network it had.

nccl-tests' bus bandwidth (busbw) is normalised to read as the bandwidth of
the slowest link a collective crosses: across nodes, for ``all_reduce``,
``reduce_scatter`` and ``all_gather`` of large messages, the nodes' network.
NCCL pairs each GPU with about one NIC (the nearest by PCIe), so a node whose
G GPUs take part and whose P ports are active at R Gb/s carries about
``min(G, P) * R / 8`` GB/s; tuned clusters measure 80-95% of it. Far below
(:data:`SHARE`, at :data:`LARGE_BYTES` and more) something took the traffic
off the fast path: GPUDirect RDMA off, TCP sockets instead of IB, a port down
or trained low, a setting that limits NICs or channels. This is no failure,
so it opens the differential's "slow" class only where nothing failed.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from nccl_doctor.facts.base import Cite
from nccl_doctor.facts.nccl import NcclTestRank, NcclTestRow
from nccl_doctor.facts.net import IbPort
from nccl_doctor.facts.span import nccl_local_ranks, span_of
from nccl_doctor.facts.store import Facts

#: The collectives whose busbw is the network's across nodes.
COLLECTIVES = frozenset({"all_reduce", "reduce_scatter", "all_gather"})
#: Messages this large or larger run at the links' rate, past latency.
LARGE_BYTES = 64 << 20
#: Below this share of what the ports carry, the run is far off: 40% leaves room for a
#: cluster tuned badly but working (80-95% is what tuned ones measure).
SHARE = 0.4


@dataclass(frozen=True, slots=True)
class NetworkShortfall:
    """The best large-message busbw against what one node's active ports carry."""

    measured_gbytes_s: float
    expected_gbytes_s: float
    ports: int
    port_gbits_s: float
    gpus_per_node: int
    cite: Cite

    @property
    def measured(self) -> str:
        """The measurement against the ports, as a reason reads it."""
        return (
            f"best busbw {self.measured_gbytes_s:.1f} GB/s against about "
            f"{self.expected_gbytes_s:.0f} GB/s for {min(self.gpus_per_node, self.ports)} "
            f"GPU(s) and port(s) of {self.port_gbits_s:.0f} Gb/s per node"
        )


def network_shortfall(facts: Facts) -> NetworkShortfall | None:
    """The shortfall of a multi-node nccl-tests run, where one is shown (computed once)."""
    return facts.derived("network_shortfall", _shortfall)


def _busbw(row: NcclTestRow) -> float:
    return max(row.busbw_gbytes_s or 0.0, row.in_place_busbw_gbytes_s or 0.0)


def _shortfall(facts: Facts) -> NetworkShortfall | None:
    if span_of(facts).multi is not True:
        return None
    rows = [
        r
        for r in facts.of(NcclTestRow)
        if r.size_bytes >= LARGE_BYTES and r.collective in COLLECTIVES and _busbw(r) > 0
    ]
    gpus = _gpus_per_node(facts)
    ports = _node_ports(facts)
    if not rows or gpus is None or not ports:
        return None
    best = max(rows, key=_busbw)
    rate = min(p.rate_gbits_s or 0.0 for p in ports)
    expected = min(gpus, len(ports)) * rate / 8
    if rate <= 0 or _busbw(best) >= SHARE * expected:
        return None
    return NetworkShortfall(_busbw(best), expected, len(ports), rate, gpus, best.cite)


def _node_ports(facts: Facts) -> list[IbPort]:
    """The active RDMA ports of one node (the first host named, or all when none is)."""
    active = [p for p in facts.of(IbPort) if p.state == "ACTIVE" and p.rate_gbits_s]
    hosts = [p.host for p in active if p.host]
    if hosts:
        first = hosts[0]
        active = [p for p in active if p.host in (first, None)]
    return list({(p.device, p.port): p for p in active}.values())


def _gpus_per_node(facts: Facts) -> int | None:
    """How many GPUs of one node take part: nccl-tests' rank lines per host, else NCCL's."""
    per_host = Counter(r.host for r in facts.of(NcclTestRank) if r.host)
    if per_host:
        return max(per_host.values())
    return nccl_local_ranks(facts)
