"""The rendezvous/store port is already taken on the master host.

What it means
-------------
The process that hosts the c10d TCPStore (torchrun's agent, or rank 0 with
``init_method='env://'``/``tcp://``) could not bind MASTER_PORT: another
process already listens there. Usually a second job on the same machine with
the same (default 29500) port, a stale process of an earlier run, or - since
torch 1.9, where ``torch.distributed.launch`` runs through the elastic agent
that itself hosts the store on ``--master_port`` - a script that opens its own
store on the launcher's port.

Why it matters
--------------
The store is the first thing every rank needs; without it the group cannot
form and the job stops at once. It is not a network problem: firewalls and
MASTER_ADDR are fine.

Evidence
--------
``DistNetworkError: The server socket has failed to listen on any local
network address ... (errno: 98 - Address already in use)``, older torch's
bare ``RuntimeError: Address already in use`` from ``TCPStore``, EADDRINUSE.

Fix
---
Find the holder (``ss -ltnp 'sport = :29500'`` or ``lsof -i :29500``) and
stop it if stale; give every concurrent job its own port (``--master_port``,
or ``--rdzv-endpoint localhost:0`` to let torchrun pick a free one); do not
open a second store on the launcher's port - use ``init_method='env://'``.
"""

from __future__ import annotations

from nccl_doctor.facts.base import Cite
from nccl_doctor.facts.failures import failures_of
from nccl_doctor.facts.host import EnvVar
from nccl_doctor.facts.run import C10dSocketError, PythonTraceback
from nccl_doctor.facts.span import span_of
from nccl_doctor.facts.store import Facts
from nccl_doctor.findings import Confidence, Finding, Severity
from nccl_doctor.rules.base import Rule, first_distinct
from nccl_doctor.rules.launch._common import address_in_use
from nccl_doctor.signs.launch import (
    NOBODY_ON_PORT,
    PORT_LISTENED,
    STORE_PORT,
    STORE_SETUP,
    TORCHRUN_NAMED,
    TWO_JOBS,
)

RULE = Rule(
    id="launch.port_in_use",
    title="The rendezvous/store port is already in use",
    severity=Severity.CRITICAL,
    explains=("launch.rendezvous", "launch.rank_crash"),
)


def _port(facts: Facts) -> tuple[int | None, Cite | None]:
    for err in facts.of(C10dSocketError):
        if err.port:
            return err.port, err.cite
    for env in facts.of(EnvVar):
        if env.name == "MASTER_PORT" and env.value and env.value.isdigit():
            return int(env.value), env.cite
    for hit in facts.seen(STORE_PORT):
        return int(hit.match["port"]), hit.cite
    return None, None


def _store_frames(facts: Facts) -> bool:
    for tb in facts.of(PythonTraceback):
        if any("TCPStore" in (fn or "") or "rendezvous" in (f or "") for f, _, fn in tb.frames):
            return True
    return facts.saw(STORE_SETUP, prose=False)


def _held(facts: Facts) -> list[Finding]:
    """No bind error shown, but a listing (ss, netstat, lsof) has another socket listening on
    the store's port while the job failed: the port was taken before the job came."""
    port, port_cite = _port(facts)
    # (one host, failed in the store's set-up: across nodes a listing of the master's port is
    # more often a reporter showing that its store listens while a worker cannot reach it)
    if port is None or span_of(facts).multi is True or not failures_of(facts):
        return []
    if not _store_frames(facts):
        return []
    listened = [
        h
        for h in facts.seen(PORT_LISTENED, prose=False)
        if int(h.match["port"] or h.match["nport"] or h.match["lport"]) == port
    ]
    if not listened:
        return []
    return [
        RULE.finding(
            summary=f"Something already listens on the store's port {port} (the listing "
            "shows it), and the job failed setting up its store there: the port was taken "
            "before the job came (another job, or a stale process of an earlier run).",
            fix=[
                (
                    f"Check who holds it: ss -ltnp 'sport = :{port}' (as root, to see the "
                    "process); stop it if it is a stale run of your own."
                ),
                (
                    "Give every concurrent job on a host its own port (--master_port N, "
                    "--rdzv-endpoint localhost:N), or --rdzv-endpoint localhost:0 on one node."
                ),
            ],
            evidence=first_distinct([listened[0].cite, *([port_cite] if port_cite else [])], 3),
            confidence=Confidence.MEDIUM,
        )
    ]


def check(facts: Facts) -> list[Finding]:
    """EADDRINUSE on the store's bind/listen, or a bare ``Address already in use``; or a
    listing of the store's port held while the job failed."""
    evidence, direct = address_in_use(facts)
    if not evidence:
        return _held(facts)
    port, port_cite = _port(facts)
    where = f"port {port}" if port else "the store port (MASTER_PORT)"
    summary = f"The c10d store could not bind {where}: Address already in use (errno 98)"
    if port == 29500:
        summary += "; 29500 is the torchrun/torch.distributed default, shared by every job"
    two = [h for h in facts.seen(TWO_JOBS) if h.prose]
    nobody = [h for h in facts.seen(NOBODY_ON_PORT) if h.prose]
    launcher = facts.seen(TORCHRUN_NAMED)
    if two:
        summary += "; a second job on the same host already holds it"
    summary += "."
    p = str(port) if port else "$MASTER_PORT"
    fix = [
        (
            f"Find what holds it: ss -ltnp 'sport = :{p}' (or lsof -i :{p}); stop it if it is a "
            "stale process of an earlier run."
        ),
        (
            "Give every concurrent job on a host its own port (--master_port N), or let torchrun "
            "pick a free one with --rdzv-endpoint localhost:0 (single node)."
        ),
    ]
    if launcher or nobody:
        fix.insert(
            0 if nobody else len(fix),
            "If nothing else holds the port: since torch 1.9 the launcher's elastic agent "
            f"itself hosts the store on {p}; a script that opens its own store there "
            "(init_method='tcp://...', its own TCPStore, a hard-coded MASTER_PORT) collides "
            "with it - use init_method='env://' and the launcher's variables.",
        )
    if _store_frames(facts) and not direct:
        fix.append("Make the port configurable instead of hard-coded in the setup code.")
    cites = [*evidence[:3], *([port_cite] if port_cite else []), *(h.cite for h in two[:1])]
    return [
        RULE.finding(
            summary=summary,
            fix=fix,
            evidence=cites,
            confidence=Confidence.HIGH if (direct or _store_frames(facts)) else Confidence.MEDIUM,
        )
    ]
