"""Ranks on different machines were taken for ranks of one machine.

What it means
-------------
NCCL groups ranks into nodes by a host hash: the hostname (NCCL 2.0-2.3),
later the hostname plus ``/proc/sys/kernel/random/boot_id``, or
``NCCL_HOSTID`` when set. Machines cloned from one image, containers started
with ``--hostname`` set to one name, or pods that share a boot id look like
one host. NCCL then reports ``nNodes 1`` for a multi-machine job and connects
ranks on different machines with the intra-node transports (``via P2P/IPC``,
``via SHM``), which cannot work across machines.

Why it matters
--------------
Communicator setup fails (CUDA IPC handles that do not exist on the other
machine, ``Duplicate GPU detected``, shared-memory segments that are not
there) or the first collective hangs, although each machine works alone.

Evidence
--------
``nNodes 1`` while ranks run on several machines; P2P/SHM channels between
ranks of different machines; NCCL lines from different addresses under one
hostname; a launch command naming several hosts whose NCCL lines all carry the
same hostname; ``Duplicate GPU detected`` printed by processes of two machines, or pairing
ranks whose init lines name two machines on one bus id (the same slot of two identical
machines, their host hashes equal: one ``NCCL_HOSTID`` value), or pairing ranks the launch
puts on different machines (rank 8 and rank 0 where it starts 8 per machine).

Fix
---
Give every machine (and container) a unique hostname, or set ``NCCL_HOSTID``
to a different value per machine; make sure containers do not share one boot
id. Rerun with ``NCCL_DEBUG=INFO`` and check ``nNodes`` equals the number of
machines and that inter-machine channels use ``NET/...``.
"""

from __future__ import annotations

from nccl_doctor.facts.base import Cite, local_alias
from nccl_doctor.facts.nccl import (
    NcclCommInit,
    NcclCommLayout,
    NcclEnvSetting,
    NcclNet,
    NcclWarn,
)
from nccl_doctor.facts.settings import env_values
from nccl_doctor.facts.span import launched_per_node, launches, nested_srun
from nccl_doctor.facts.store import Facts
from nccl_doctor.findings import Confidence, Finding, Severity
from nccl_doctor.rules.base import Rule
from nccl_doctor.rules.nccl._common import machine, nccl_hosts, rank_hosts, transports
from nccl_doctor.signs.gpu import GPUS_PER_NODE_SAID
from nccl_doctor.signs.nccl import (
    DUPLICATE_GPU,
    GPUS_PER_NODE,
    INTRA_TRANSPORT,
    LAUNCH_HOSTS,
    LAUNCH_NODES,
    LAUNCH_SLOTS,
    MULTI_NODE,
    RING_EDGE,
    SEVERAL_MACHINES,
)

RULE = Rule(
    id="nccl.host_identity",
    title="Different machines taken for one host",
    severity=Severity.CRITICAL,
    explains=("nccl.p2p", "nccl.shm", "nccl.duplicate_gpu", "app.hang", "launch.rank_crash"),
)


def _launch_hosts(facts: Facts) -> tuple[int, list[Cite]]:
    """How many machines the launch command names, and the lines that say so."""
    best, cites = 0, []
    for hit in facts.seen(LAUNCH_HOSTS, prose=False):
        names = {h.split(":")[0] for h in hit.match["hosts"].split(",") if h.split(":")[0]}
        if len(names) > best:
            best, cites = len(names), [hit.cite]
    for hit in facts.seen(LAUNCH_NODES, prose=False):
        n = int(hit.match["nnodes"] or hit.match["slurm"])
        if n > best:
            best, cites = n, [hit.cite]
    return best, cites


def _slots_per_host(facts: Facts) -> int | None:
    """Ranks per machine the launch command asks for, when it says."""
    for hit in facts.seen(LAUNCH_HOSTS, prose=False):
        parts = [h.split(":") for h in hit.match["hosts"].split(",") if h]
        if parts and all(len(p) == 2 and p[1].isdigit() for p in parts):
            return min(int(p[1]) for p in parts)
    for hit in facts.seen(LAUNCH_SLOTS, prose=False):
        return 1 if hit.match["pernode"] else int(hit.match["slots"] or hit.match["ppr"])
    return None


def _world_layouts(facts: Facts) -> list[NcclCommLayout]:
    """``nNodes 1`` lines of the largest communicator the evidence shows."""
    sizes = [x.nranks for x in facts.of(NcclCommLayout) if x.nranks]
    sizes += [i.nranks for i in facts.of(NcclCommInit) if i.nranks]
    world = max(sizes, default=0)
    return [
        x for x in facts.of(NcclCommLayout) if x.n_nodes == 1 and x.nranks == world and world > 1
    ]


def _layout_hosts(facts: Facts, layouts: list[NcclCommLayout]) -> dict[str, set[str]]:
    """commId -> hosts whose processes print ``nNodes 1`` for that communicator."""
    ids = {(i.host, i.pid, i.comm): i.comm_id for i in facts.of(NcclCommInit) if i.comm_id}
    out: dict[str, set[str]] = {}
    for x in layouts:
        cid = ids.get((x.host, x.pid, x.comm))
        if cid and x.host:
            out.setdefault(cid, set()).add(x.host)
    return out


def _world_hosts(layouts: list[NcclCommLayout]) -> set[str]:
    """Hosts whose processes print ``nNodes 1`` for the same world with ranks no other host
    prints: one communicator seen from several machines, where its commId is not shown (the
    ``comm 0x..`` in these lines is each process's own pointer, no shared id)."""
    ranks: dict[str, set[int]] = {}
    for x in layouts:
        if x.host and not local_alias(x.host) and x.comm_rank is not None:
            ranks.setdefault(x.host, set()).add(x.comm_rank)
    seen: set[int] = set()
    for held in ranks.values():
        if held & seen:  # the same rank on two hosts: two runs, not one world
            return set()
        seen |= held
    return set(ranks) if len(ranks) >= 2 else set()


def _addresses_per_host(facts: Facts) -> dict[str, dict[str, Cite]]:
    """Hostname -> bootstrap address -> the line, from NCCL's bootstrap lines."""
    out: dict[str, dict[str, Cite]] = {}
    for net in facts.of(NcclNet):
        if net.role != "bootstrap" or not net.host or not net.interfaces:
            continue
        address = net.interfaces[0][1].split("<")[0]
        out.setdefault(net.host, {}).setdefault(address, net.cite)
    return out


def _launch_blocks(facts: Facts) -> tuple[int | None, bool]:
    """The ranks the launch puts on each machine (torchrun, Slurm and mpirun fill the machines
    in blocks: ranks 0-7 on the first of 8 per machine), and whether the job is said or
    launched to span machines. Read from the launch and the words, never from NCCL's own
    layout: a host hash collision is exactly what makes that layout wrong."""
    per_node = launched_per_node(facts)
    for hit in facts.seen(GPUS_PER_NODE)[:1]:
        per_node = per_node or int(hit.match["g"] or hit.match["p"])
    for hit in facts.seen(GPUS_PER_NODE_SAID)[:1]:  # (a node's GPUs, each a rank's)
        per_node = per_node or int(hit.match["n"])
    multi = (
        facts.saw(SEVERAL_MACHINES)
        or facts.saw(MULTI_NODE)
        or any(h.match["n"] and int(h.match["n"]) > 1 for h in facts.seen(GPUS_PER_NODE))
        or any(x.least > 1 for x in launches(facts))
    )
    return per_node, multi


def _blocks_crossed(facts: Facts, fix: list[str]) -> list[Finding]:
    """P2P/SHM edges between ranks that sit in different node blocks of the launch."""
    edges = facts.seen(RING_EDGE, prose=False)
    if not edges:
        return []
    per_node, multi = _launch_blocks(facts)
    devices = {int(h.match[k]) for h in edges for k in ("da", "db")}
    per_node = per_node or (max(devices) + 1 if devices else None)
    if not per_node or not multi:
        return []
    for hit in edges:
        a, b = int(hit.match["a"]), int(hit.match["b"])
        if a // per_node != b // per_node:
            return [
                RULE.finding(
                    summary=f"NCCL connects rank {a} to rank {b} via {hit.match['t']}, but with "
                    f"{per_node} GPUs per node they are on different machines: NCCL takes the "
                    "machines for one host",
                    fix=fix,
                    evidence=[hit.cite, *(h.cite for h in facts.seen(GPUS_PER_NODE)[:1])],
                    ranks=[a, b],
                    confidence=Confidence.MEDIUM,
                )
            ]
    return []


def _said_several(
    facts: Facts,
    fix: list[str],
    layouts: list[NcclCommLayout],
    hosts: list[str],
    need_id: bool = False,
) -> list[Finding]:
    """The reporter says several machines while NCCL, on the one host it shows, reports nNodes 1.

    NCCL hashes NCCL_HOSTID in place of the host when it is set: one value given to every
    machine (a shared ConfigMap, a job template) makes them one host, so the job's own
    NCCL_HOSTID beside it makes the words and the count a finding of their own.
    """
    said = facts.seen(SEVERAL_MACHINES)
    if not layouts or not said or hosts[1:]:
        return []
    ids = [(v, c) for v, c in env_values(facts, "NCCL_HOSTID") if v]
    if need_id and not ids:
        return []
    named = (
        f"; NCCL_HOSTID is set ({ids[0][0]!r}), which NCCL hashes in place of the host"
        if ids
        else ""
    )
    return [
        RULE.finding(
            summary="The job is said to span several machines, but NCCL reports nNodes 1" + named,
            fix=fix,
            evidence=[layouts[0], said[0].cite, *(c for _, c in ids[:2])],
            severity=Severity.CRITICAL if ids else Severity.WARNING,
            confidence=Confidence.MEDIUM if ids else Confidence.LOW,
        )
    ]


def _paired_inits(facts: Facts, warns: list[NcclWarn]) -> tuple[set[int], list[NcclCommInit]]:
    """The ranks a duplicate-GPU refusal pairs, and the init lines (with a host) of those ranks."""
    paired = {r for w in warns for r in w.ranks}
    return paired, [i for i in facts.of(NcclCommInit) if i.comm_rank in paired and i.host]


def _paired_hosts(facts: Facts, warns: list[NcclWarn]) -> list[str]:
    """The hosts whose init lines place the ranks a duplicate-GPU refusal pairs on one bus id
    (rank 0 on trainer-0 and rank 8 on trainer-1, both busId 7000): one slot of two machines."""
    paired, found = _paired_inits(facts, warns)
    if len(paired) < 2:
        return []
    inits = [i for i in found if i.host and not local_alias(i.host) and i.bus_id]
    buses = {i.bus_id for i in inits}
    if len(buses) != 1 or {i.comm_rank for i in inits} != paired:
        return []
    return sorted({i.host for i in inits if i.host})


def _paired_on_one(facts: Facts, warns: list[NcclWarn]) -> bool:
    """Whether the init lines place every rank a duplicate-GPU refusal pairs on one machine
    (then the refusal is two ranks on one GPU there, whatever NCCL_HOSTID says)."""
    paired, inits = _paired_inits(facts, warns)
    return {i.comm_rank for i in inits} == paired and len({i.host for i in inits}) == 1


def _one_host_id(facts: Facts) -> list[str]:
    """The machines whose NCCL echoed one NCCL_HOSTID value (``NCCL_HOSTID set by environment
    to $(NODE_NAME)`` from two pods: a value left unexpanded, or copied to every machine)."""
    by_value: dict[str, set[str]] = {}
    for setting in facts.of(NcclEnvSetting):
        host = setting.host
        if setting.name == "NCCL_HOSTID" and setting.value and host and not local_alias(host):
            by_value.setdefault(setting.value, set()).add(host)
    return max((sorted(h) for h in by_value.values()), key=len, default=[])


def _paired_across_blocks(facts: Facts, warns: list[NcclWarn]) -> tuple[list[int], int] | None:
    """The ranks of a duplicate-GPU refusal that the launch put on different machines (rank 8
    and rank 0 of a job of 8 per machine), with the ranks per machine: NCCL pairs only ranks
    of one host hash, so the machines hash alike."""
    per_node, multi = _launch_blocks(facts)
    if not per_node or not multi or nested_srun(facts) is not None:
        return None  # (tasks that each start a set of workers: no node blocks)
    for warn in warns:
        if len(warn.ranks) == 2 and len({r // per_node for r in warn.ranks}) == 2:
            return sorted(warn.ranks), per_node
    return None


def _duplicate_across_hosts(facts: Facts, fix: list[str]) -> list[Finding]:
    """NCCL's duplicate-GPU refusal printed by processes of different machines.

    NCCL calls two ranks duplicates when their host hash and bus id match; printed by
    processes that name different hosts, or pairing ranks whose init lines name different
    hosts, the bus ids are the same slot of two identical machines and the host hashes collided
    (one NCCL_HOSTID value, a shared hostname and boot id). NCCL's echo of one NCCL_HOSTID
    value from several machines says the same of a refusal printed on one of them.
    """
    warns = facts.showing(DUPLICATE_GPU, facts.of(NcclWarn))
    hosts = sorted({w.host for w in warns if w.host and not local_alias(w.host)})
    told = "from processes on"
    if len(hosts) < 2:
        hosts, told = _paired_hosts(facts, warns), "pairing ranks on"
    blocks = None
    if len(hosts) < 2 and warns and not _paired_on_one(facts, warns):
        hosts, told = _one_host_id(facts), "where NCCL_HOSTID has one value on"
        if len(hosts) < 2:
            blocks = _paired_across_blocks(facts, warns)
    if len(hosts) < 2 and blocks is None:
        return []
    ids = [(v, c) for v, c in env_values(facts, "NCCL_HOSTID") if v]
    why = (
        f"; NCCL_HOSTID is set ({ids[0][0]!r}): NCCL hashes that value instead of the "
        "host's, so machines given the same value are one host to it"
        if len({v for v, _ in ids}) == 1 and ids
        else ""
    )
    ranks = sorted({r for w in warns for r in w.ranks})
    if blocks is not None:
        (low, high), per_node = blocks
        where = (
            f"pairing rank {low} and rank {high}, which {per_node} ranks per machine, "
            "started in blocks, put on different machines"
        )
    else:
        where = f"{told} {len(hosts)} machines ({', '.join(hosts[:4])})"
    return [
        RULE.finding(
            summary=f"NCCL reports a duplicate GPU {where}: the ranks it pairs share a bus id "
            f"only as the same slot of two machines it takes for one host{why}",
            fix=fix,
            evidence=[*warns[:2], *(c for _, c in ids[:1])],
            ranks=ranks,
            hosts=hosts,
            confidence=Confidence.MEDIUM if blocks is not None else Confidence.HIGH,
        )
    ]


def check(facts: Facts) -> list[Finding]:
    """Fire when a multi-machine job is seen by NCCL as one host."""
    n_launch, launch_cites = _launch_hosts(facts)
    hosts = nccl_hosts(facts)
    clashes = {h: a for h, a in _addresses_per_host(facts).items() if len(a) > 1}
    layouts = _world_layouts(facts)
    slots = _slots_per_host(facts)
    intra = transports(facts, ["P2P", "SHM"])
    intra_hits = machine(facts, INTRA_TRANSPORT)
    intra_cites = [t.cite for t in intra] or [h.cite for h in intra_hits]
    if not hosts:
        hosts = list(dict.fromkeys(h.said.host for h in intra_hits if h.said.host))
    where = rank_hosts(facts)
    crossing = [
        t
        for t in intra
        if t.comm_rank is not None
        and where.get(t.comm_rank)
        and any(where.get(p) and where[p] != where[t.comm_rank] for p in t.peer_ranks)
    ]
    fix = [
        (
            "Give every machine and container a unique hostname (hostnamectl set-hostname; "
            "no shared --hostname in docker/k8s), or export NCCL_HOSTID=<unique value> per machine"
        ),
        (
            "Make sure containers on different machines do not share one boot id "
            "(/proc/sys/kernel/random/boot_id)"
        ),
        (
            "Rerun with NCCL_DEBUG=INFO: nNodes must equal the number of machines and channels "
            "between machines must use NET/IB or NET/Socket, not P2P or SHM"
        ),
    ]
    across = _duplicate_across_hosts(facts, fix)
    if across:
        return across
    if crossing:
        t = crossing[0]
        rank = t.comm_rank or 0
        return [
            RULE.finding(
                summary=f"NCCL connects rank {rank} ({where.get(rank)}) to peers on "
                f"other machines via {t.transport}: it takes them for one host",
                fix=fix,
                evidence=[t, *layouts[:1]],
                ranks=[t.comm_rank] if t.comm_rank is not None else [],
                hosts=sorted({where[r] for r in [t.comm_rank, *t.peer_ranks] if r in where}),
            )
        ]
    multi = n_launch >= 2 or len(hosts) >= 2 or bool(clashes)
    if clashes:
        host, addresses = next(iter(clashes.items()))
        what = "; NCCL reports nNodes 1" if layouts else ""
        # NCCL's duplicate-GPU refusal beside them: ranks of two machines taken for one host's
        dup = [w.cite for w in facts.showing(DUPLICATE_GPU, facts.of(NcclWarn))][:1]
        if dup:
            what += "; NCCL then refuses the same GPU slot of two machines as a duplicate GPU"
        return [
            RULE.finding(
                summary=f"NCCL processes on {len(addresses)} different addresses "
                f"({', '.join(list(addresses)[:4])}) all call themselves '{host}'{what}: "
                "the machines share a hostname",
                fix=fix,
                evidence=[*list(addresses.values())[:2], *layouts[:1], *intra_cites[:1], *dup],
                severity=Severity.CRITICAL if (layouts or intra_cites or dup) else Severity.WARNING,
                confidence=Confidence.HIGH if layouts or dup else Confidence.MEDIUM,
                hosts=[host],
            )
        ]
    if not multi:
        # (the words alone against NCCL's count, with no host shown apart: only beside the
        # job's own NCCL_HOSTID, which explains the count)
        return _blocks_crossed(facts, fix) or _said_several(facts, fix, layouts, hosts, True)
    spread = {
        f"communicator {c}": h for c, h in _layout_hosts(facts, layouts).items() if len(h) >= 2
    }
    if not spread and (world := _world_hosts(layouts)):
        spread = {"the communicator": world}
    if spread:
        which, on = next(iter(spread.items()))
        x = layouts[0]
        return [
            RULE.finding(
                summary=f"NCCL reports nNodes 1 for {which} of {x.nranks} ranks "
                f"whose processes run on {len(on)} hosts ({', '.join(sorted(on)[:4])})",
                fix=fix,
                evidence=[x, *launch_cites[:1]],
                hosts=sorted(on),
            )
        ]
    crosses = slots == 1 and bool(intra_cites)
    too_big = bool(layouts) and slots is not None and (layouts[0].nranks or 0) > slots
    if len(hosts) <= 1 and n_launch >= 2 and (crosses or too_big or (layouts and slots is None)):
        seen = f"the hostname '{hosts[0]}'" if hosts else "one hostname"
        via = intra[0].transport if intra else None
        if via is None and intra_hits:
            via = intra_hits[0].match["via"].strip()
        what = "nNodes 1" if layouts and not crosses else f"{via or 'P2P/SHM'}"
        return [
            RULE.finding(
                summary=f"The launch names {n_launch} machines, but every NCCL line carries "
                f"{seen} and NCCL connects the ranks with {what}: the machines look like "
                "one host to NCCL",
                fix=fix,
                evidence=[*launch_cites, *intra_cites[:2], *layouts[:1]],
                confidence=Confidence.MEDIUM,
                hosts=hosts,
                detail=[f"{slots} rank(s) per machine requested"] if slots else [],
            )
        ]
    if blocks := _blocks_crossed(facts, fix):
        return blocks
    return _said_several(facts, fix, layouts, hosts)
