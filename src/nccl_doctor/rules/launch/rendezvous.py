"""Workers never completed rendezvous: fewer ranks joined than the world size expects.

What it means
-------------
The processes of the job met at the c10d store (or torchrun's rendezvous
backend) and waited for ``world_size`` members, but some never arrived: a
node whose launcher never started (``python train.py`` in an sbatch script
instead of ``srun python train.py``), a wrong ``--nnodes``/WORLD_SIZE, a
stray NODE_RANK/RANK inherited from the shell or scheduler giving two
processes the same slot, or workers pointed at the wrong MASTER_ADDR.

Why it matters
--------------
Nothing runs until every rank has joined: the job sits in
``init_process_group`` (Lightning's ``initializing ddp``) until the store
timeout, typically 30 minutes, then fails with a timeout that hides which
ranks were missing.

Evidence
--------
``Timed out after 901 seconds waiting for clients. 1/2 clients joined``,
``store based barrier ... (world_size=8, worker_count=4, ...)``,
``RendezvousTimeoutError``, Lightning's
``initializing ddp: GLOBAL_RANK: g, MEMBER: m/N`` printed for fewer than N
members, a report that the job hangs at DDP initialisation (on the line that
names it, or in a sentence that points at it just below: "it hangs at:"; not
where a rank's own error came first, and not with a store in a file, which is
duplicate_launch's stale store), or the nodes'
launch commands naming different store addresses (``--master_addr=localhost``
on one, node 0's address on another), or a launch across nodes that gives the
loopback to a node other than node 0 (``--node_rank=1 --master_addr=127.0.0.1``:
that node dials itself, where no store listens; or a person saying a client's connect to
``localhost:29500`` was refused on a job across nodes), or a launch across nodes given by
the launcher's environment (``NNODES=2 RANK=1 llamafactory-cli train ...``) with no
NODE_RANK: every node starts as node rank 0. ``RendezvousConnectionError`` is not
this: torch raises it when the agent cannot create or use the TCP store at
the endpoint (a connect that failed, a port it could not bind), which the
differential weighs with the inner exception.

Fix
---
Start the same command on every node (under SLURM: ``srun`` one task per
GPU, or one torchrun per node), make nnodes x nproc_per_node equal the world
size, give every node a distinct node rank, unset stray NODE_RANK / RANK /
WORLD_SIZE / LOCAL_RANK / MASTER_ADDR / MASTER_PORT, and check that every
node resolves and reaches MASTER_ADDR:MASTER_PORT.
"""

from __future__ import annotations

from nccl_doctor.facts.base import Cite
from nccl_doctor.facts.host import EnvVar, ShellVariable
from nccl_doctor.facts.net import loopback
from nccl_doctor.facts.run import C10dSocketError, DistributedError, RendezvousTimeout
from nccl_doctor.facts.span import launches, span_of
from nccl_doctor.facts.store import Facts, Hit, Said
from nccl_doctor.facts.told import sentence_of
from nccl_doctor.findings import Confidence, Finding, Severity
from nccl_doctor.rules.app._origin import with_roles
from nccl_doctor.rules.base import Rule
from nccl_doctor.rules.launch._common import hang_cues, init_hang_cues, store_retries
from nccl_doctor.signs.launch import (
    ALL_REGISTERED,
    BARE_PYTHON,
    BARRIER_DONE,
    BARRIER_WAITING,
    DDP_MEMBER,
    ENV_LAUNCHER,
    FILE_STORE,
    INIT_PASSED,
    LAUNCHER_COMMAND,
    LOOPBACK_DIAL_RETOLD,
    NODE_PLACED,
    NODE_RANK,
    SBATCH_NODES,
    SRUN_PYTHON,
    STORE_ADDRESS,
)

RULE = Rule(
    id="launch.rendezvous",
    title="Not every rank joined the rendezvous",
    severity=Severity.CRITICAL,
    explains=("app.hang",),
)

_STRAY_ENV = ("NODE_RANK", "RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT")

_FIX = [
    (
        "Start the same command on every node: under SLURM run it through srun (one task per GPU "
        "for Lightning, or one torchrun per node), not a bare 'python train.py' in the sbatch "
        "script."
    ),
    "Check nnodes x nproc_per_node equals the world size and every node has a distinct node rank.",
    (
        "Unset stray launcher variables inherited from the shell or scheduler (NODE_RANK, RANK, "
        "WORLD_SIZE, LOCAL_RANK, MASTER_ADDR, MASTER_PORT) unless you set them on purpose."
    ),
    (
        "Verify every node reaches MASTER_ADDR:MASTER_PORT (nc -zv $MASTER_ADDR $MASTER_PORT) and "
        "collect each rank's log with TORCH_DISTRIBUTED_DEBUG=DETAIL TORCH_CPP_LOG_LEVEL=INFO."
    ),
]

#: A store port the client reached and nothing listened on.
_REFUSED_FIX = [
    (
        "Look at the master's own output (node rank 0, rank 0): it failed before its store "
        "started, was never launched, or started after the workers' connect timeout."
    ),
    (
        "Check that every node is given the same MASTER_ADDR and MASTER_PORT (--master-port, "
        "--rdzv-endpoint): on the master, 'ss -ltnp | grep <port>' shows whether it listens."
    ),
    "Start the master node first, or raise the connect timeout for a master that starts late.",
]


def _sbatch_fix(facts: Facts) -> tuple[list[str], list[Cite]]:
    nodes = facts.seen(SBATCH_NODES)
    if not nodes or int(nodes[0].match["n"]) < 2:
        return [], []
    bare = [] if facts.saw(SRUN_PYTHON) else list(facts.seen(BARE_PYTHON))
    if not bare:
        return [], []
    n = nodes[0].match["n"]
    return (
        [
            (
                f"The sbatch script asks for {n} nodes but runs '{bare[0].cite.text.strip()}' "
                "directly: only one process on the first node starts. Prefix it with srun."
            )
        ],
        [nodes[0].cite, bare[0].cite],
    )


def _loopback_client(facts: Facts) -> C10dSocketError | None:
    """A store client of a job across nodes that dialled its own loopback address."""
    if span_of(facts).multi is not True:
        return None
    return next(
        (
            e
            for e in facts.of(C10dSocketError)
            if e.role == "client" and e.action != "resolve" and loopback(e.address or "")
        ),
        None,
    )


def _from_timeouts(facts: Facts) -> Finding | None:
    completed = facts.saw(BARRIER_DONE, prose=False)
    waiting_lines = {h.cite for h in facts.seen(BARRIER_WAITING)}
    for tmo in facts.of(RendezvousTimeout):
        if tmo.joined is not None and tmo.expected is not None and tmo.joined > tmo.expected:
            continue  # more arrivals than expected: launch.duplicate_launch
        waiting = tmo.cite in waiting_lines
        if waiting and completed:
            continue
        count = (
            f"{tmo.joined}/{tmo.expected} ranks joined"
            if tmo.joined is not None and tmo.expected is not None
            else "not every rank arrived"
        )
        waited = f" after {tmo.waited_s:g} s" if tmo.waited_s else ""
        key = f" (store key {tmo.key})" if tmo.key else ""
        summary = f"Rendezvous did not complete{waited}: {count}{key}."
        fix = _FIX
        loop = _loopback_client(facts)
        if loop is not None:
            summary = summary[:-1] + (
                f"; a worker dialled the store at {loop.address}:{loop.port}, its own loopback: "
                "on a node that does not host the store, MASTER_ADDR must be that host's address."
            )
            fix = [
                (
                    "Give every node the store host's address as --master_addr (MASTER_ADDR), not "
                    "127.0.0.1 or localhost"
                ),
                *_FIX,
            ]
        found = RULE.finding(
            summary=summary,
            fix=fix,
            evidence=[tmo, *([loop] if loop is not None else [])],
            ranks=[tmo.rank] if tmo.rank is not None else [],
            confidence=Confidence.MEDIUM if waiting else Confidence.HIGH,
        )
        return with_roles(facts, found)
    for err in facts.of(DistributedError):
        if err.category in ("rendezvous_timeout", "rendezvous_error"):
            summary = f"The launcher's rendezvous failed: {err.message[:200] or err.cite.text}."
            return RULE.finding(summary=summary, fix=_FIX, evidence=[err])
    for sock in facts.of(C10dSocketError):
        if sock.action == "connect_timeout":
            where = f"{sock.address}:{sock.port}" if sock.address else "the master's store"
            retries = store_retries(facts)
            if retries.refused:
                summary = (
                    f"A worker timed out connecting to the c10d store at {where}, refused at "
                    f"every attempt ({len(retries.retried)} retry notices, none timed out): the "
                    "host answered and nothing listened on that port - the master's process "
                    "never started its store (it failed or started late), or MASTER_PORT "
                    "differs between the nodes."
                )
                return RULE.finding(
                    summary=summary,
                    fix=_REFUSED_FIX,
                    evidence=[sock, *(h.cite for h in retries.retried[:1])],
                    confidence=Confidence.HIGH,
                )
            summary = (
                f"A worker timed out connecting to the c10d store at {where}: the master never "
                "came up there, or MASTER_ADDR/MASTER_PORT point elsewhere."
            )
            return RULE.finding(
                summary=summary, fix=_FIX, evidence=[sock], confidence=Confidence.MEDIUM
            )
    return None


def _from_members(facts: Facts) -> Finding | None:
    hits = facts.seen(DDP_MEMBER)
    if not hits:
        return None
    expected = max(int(h.match["size"]) for h in hits)
    # Each block of MEMBER lines is one attempt; judge the last (most recent) one.
    blocks: list[list[int]] = [[]]
    last_line = -10
    for hit in hits:
        if hit.cite.line > last_line + 3 and blocks[-1]:
            blocks.append([])
        blocks[-1].append(int(hit.match["member"]))
        last_line = hit.cite.line
    seen = set(blocks[-1])
    hang = hang_cues(facts)
    if len(seen) >= expected or not hang:
        return None
    if any(int(h.match["n"]) >= expected for h in facts.seen(ALL_REGISTERED)):
        return None  # every rank came through init_process_group: the hang is after it
    extra, extra_cites = _sbatch_fix(facts)
    members = ", ".join(str(m) for m in sorted(seen))
    summary = (
        f"Only {len(seen)} of {expected} DDP members registered (MEMBER {members} of {expected}) "
        f"and the job hangs in initialisation: {expected - len(seen)} ranks never started or "
        "never reached the store."
    )
    return RULE.finding(
        summary=summary,
        fix=[*extra, *_FIX],
        evidence=[*(h.cite for h in hits[:4]), *extra_cites, *hang[:1]],
        confidence=Confidence.MEDIUM,
    )


def _from_words(facts: Facts) -> Finding | None:
    cues = init_hang_cues(facts)
    # (a store in a file: a file left by an earlier run is duplicate_launch's stale store)
    if not cues or facts.saw(FILE_STORE):
        return None
    summary = (
        "The reporter says the job hangs while initialising DDP / the process group: the "
        "classic sign that not every rank joined the rendezvous (missing or mis-numbered ranks, "
        "a stray NODE_RANK, a wrong master)."
    )
    env = [f"{e} " for e in _STRAY_ENV]
    return RULE.finding(
        summary=summary,
        fix=[
            *_FIX[2:3],
            "Print the launcher variables each process sees ("
            + ", ".join(e.strip() for e in env)
            + ") and compare the ranks and world size.",
            *_FIX[:2],
            _FIX[3],
        ],
        evidence=[c.cite for c in cues[:2]],
        severity=Severity.WARNING,
        confidence=Confidence.LOW,
    )


#: The launch that needs no node rank nor store address per node.
_ELASTIC = (
    "Or use elastic rendezvous: torchrun --nnodes N --rdzv-backend c10d "
    "--rdzv-endpoint NODE0_HOST:PORT --rdzv-id JOB on every node"
)


def _from_launch_line(facts: Facts) -> Finding | None:
    """A multi-node launch with static rendezvous that names no node rank (not where the
    reporter says the rendezvous went through: nodes that all start as node 0 never meet)."""
    if facts.saw(INIT_PASSED):
        return None
    placed = facts.lines_of(NODE_PLACED)
    launchers = {h.said: h for h in facts.seen(LAUNCHER_COMMAND)}
    for launch in launches(facts):
        hit = launch.hit
        if (launch.fixed or 0) < 2 or hit.said in placed or hit.said not in launchers:
            continue
        # a sentence that names the launcher and then the node count in another ("alone it
        # trains with torchrun --nproc_per_node 4. Together (--nnodes 2) it fails") states no
        # launch without a node rank
        named = launchers[hit.said]
        text = hit.said.text
        if hit.prose and sentence_of(text, hit.match) != sentence_of(text, named.match):
            continue
        # a command the reporter cut short ("torchrun --nnodes=2 ...") may hold the node rank
        after = text[hit.match.end() : hit.match.end() + 12]
        if "..." in after or "\u2026" in after:
            continue
        return RULE.finding(
            summary=f"The launch asks for {launch.fixed} nodes but gives no --node_rank "
            "(and no c10d rendezvous endpoint): every node starts as node 0, so each either "
            "forms its own group of local processes or waits for a master that never comes",
            fix=[
                (
                    "Give every node its own --node_rank (0 .. nnodes-1) and the same "
                    "--master_addr/--master_port (node 0's address)"
                ),
                _ELASTIC,
                (
                    "Under Slurm, launch one torchrun per node with srun and take the node rank "
                    "from SLURM_NODEID"
                ),
            ],
            evidence=[hit.cite],
            severity=Severity.WARNING,
            confidence=Confidence.LOW if hit.prose else Confidence.MEDIUM,
        )
    return None


def _from_launch_env(facts: Facts) -> Finding | None:
    """A launch across nodes given by the launcher's environment (``NNODES=2 ... cmd``, what
    llamafactory-cli and ms-swift turn into torchrun's flags) that sets no NODE_RANK: the
    launcher's node rank defaults to 0 on every node. A RANK set instead is the variable
    these launchers do not read for it (llamafactory-cli read RANK before 0.9.1)."""
    variables = facts.of(EnvVar)
    # (a NODE_RANK exported or set anywhere, or a --node_rank, may reach the launch)
    said = {v.name for v in variables} | {v.name for v in facts.of(ShellVariable)}
    if said & {"NODE_RANK", "PET_NODE_RANK"}:
        return None
    if facts.saw(NODE_RANK):
        return None
    launchers = {(h.cite.source, h.cite.line) for h in facts.seen(ENV_LAUNCHER)}
    lines: dict[tuple[str, int], dict[str, EnvVar]] = {}
    for var in variables:
        if var.form == "inline" and (var.cite.source, var.cite.line) in launchers:
            lines.setdefault((var.cite.source, var.cite.line), {})[var.name] = var
    for names in lines.values():
        nnodes = names.get("NNODES")
        if nnodes is None or not (nnodes.value or "").isdigit() or int(nnodes.value or 0) < 2:
            continue
        rank = names.get("RANK")
        instead = (
            f" (RANK={rank.value} is set, but the launcher takes the node rank from NODE_RANK)"
            if rank is not None
            else ""
        )
        return RULE.finding(
            summary=f"The launch sets NNODES={nnodes.value} but no NODE_RANK{instead}: every "
            "node starts as node rank 0, so the nodes claim the same ranks and the group "
            "never forms",
            fix=[
                (
                    "Set NODE_RANK=0 on the first node and NODE_RANK=1 .. NNODES-1 on the others, "
                    "with the same MASTER_ADDR and MASTER_PORT (node 0's address)"
                ),
                _FIX[1],
            ],
            evidence=[nnodes.cite],
            severity=Severity.WARNING,
            confidence=Confidence.MEDIUM,
        )
    return None


def _store_launches(facts: Facts) -> tuple[list[Hit], set[Said]]:
    """The store addresses the launch commands name, and the launch lines that start a job
    across nodes (a node rank or c10d rendezvous, or --nnodes above one)."""
    launchers = facts.lines_of(LAUNCHER_COMMAND)
    named = [h for h in facts.seen(STORE_ADDRESS) if h.said in launchers]
    across = {h.said for h in facts.seen(NODE_PLACED)} | {
        launch.hit.said for launch in launches(facts) if (launch.least or 0) > 1
    }
    return named, across


def _from_addresses(facts: Facts) -> Finding | None:
    """The launch commands name the store at this machine's loopback on one node and at a
    routable address on another: the nodes do not form one group.

    With static rendezvous every node's launcher (or MASTER_ADDR) must give node 0's address
    as the other nodes reach it (torch.distributed.launch assumes the same arguments on every
    node); ``localhost`` only means the machine its own launcher runs on, so that node's
    workers use, and hand the others, an address that is not node 0's.
    """
    named, across = _store_launches(facts)
    routable = [h for h in named if not loopback(h.match["addr"])]

    def _rest(hit: Hit) -> tuple[str, str]:
        """The launch line around the address it names."""
        return (hit.match["before"].strip(), hit.match["after"].strip())

    # a loopback launch counts where it is a launch across nodes, or the very command another
    # node runs with a routable address (a single-node command beside them is no node's)
    others = {_rest(h) for h in routable}
    local = [
        h for h in named if loopback(h.match["addr"]) and (h.said in across or _rest(h) in others)
    ]
    if not local or not routable:
        return None
    here, there = local[0], routable[0]
    return RULE.finding(
        summary=(
            f"The launch commands name the store at {here.match['addr']} on one node and at "
            f"{there.match['addr']} on another: with static rendezvous every node must give node "
            f"0's address as the others reach it; {here.match['addr']} only means the machine "
            "its own launcher runs on, so that node's workers use (and hand the others) an "
            "address that is not node 0's, and the nodes do not form one group"
        ),
        fix=[
            (
                "Give every node the same --master_addr (node 0's address on the network the "
                "nodes share, never localhost or 127.0.0.1 on a job across nodes) and the same "
                "--master_port, with its own --node_rank"
            ),
            _ELASTIC,
        ],
        evidence=[here.cite, there.cite],
        severity=Severity.WARNING,
        confidence=Confidence.LOW if here.prose and there.prose else Confidence.MEDIUM,
    )


def _from_loopback_across(facts: Facts) -> Finding | None:
    """A launch across nodes names the store at the loopback and starts a node other than
    node 0, or two launches across nodes (the nodes' commands) both name it.

    Under static rendezvous only node 0 hosts the store; every other node's agent dials
    ``--master_addr``. ``127.0.0.1`` or ``localhost`` there is the dialling machine itself,
    where no store listens (node 0's bind is on node 0): the other nodes never join, and
    node 0 waits for them (a hang after torchrun's banner, or a store timeout).
    """
    named, across = _store_launches(facts)
    if not named or any(not loopback(h.match["addr"]) for h in named):
        return None  # a routable address is named too: _from_addresses reads that
    later = {h.said: int(h.match["n"]) for h in facts.seen(NODE_RANK) if int(h.match["n"]) > 0}
    local = [h for h in named if h.said in across]
    # node 0's own command may name the loopback while the others name node 0 (a common
    # set-up): one such line alone says nothing of the nodes that dial
    if not any(h.said in later for h in local) and len({h.said for h in local}) < 2:
        return None
    here = next((h for h in local if h.said in later), local[0])
    rank = later.get(here.said)
    who = (
        f"it starts node {rank}, whose agent dials {here.match['addr']}: its own machine"
        if rank is not None
        else f"every node's agent but node 0's dials {here.match['addr']}: its own machine"
    )
    return RULE.finding(
        summary=(
            f"The launch across nodes names the store at {here.match['addr']}: under static "
            f"rendezvous only node 0 hosts the store, and {who}, where no store listens. The "
            "nodes never form one group, and node 0 waits for the others (unless every "
            "'node' is this one machine)"
        ),
        fix=[
            (
                "Give every node the same --master_addr: node 0's address on the network the "
                "nodes share (hostname -I on node 0), never localhost or 127.0.0.1 on a job "
                "across machines, with its own --node_rank"
            ),
            _ELASTIC,
        ],
        evidence=[here.cite],
        severity=Severity.WARNING,
        confidence=Confidence.LOW if here.prose else Confidence.MEDIUM,
    )


def _from_loopback_retold(facts: Facts) -> Finding | None:
    """On a job across nodes, a person says a client's connect to the loopback's port was
    refused: that node's agent dials itself (MASTER_ADDR unset, defaulting to localhost, or
    given as the loopback), where no store listens."""
    span = span_of(facts)
    hits = facts.told(LOOPBACK_DIAL_RETOLD)
    if not hits or span.multi is not True:
        return None
    hit = hits[0]
    where = f"{hit.match['addr']}:{hit.match['port']}"
    return RULE.finding(
        summary=(
            f"On a job across nodes ({span.why}) a store client was refused at {where}, its "
            "own machine: that node was given the loopback (or no MASTER_ADDR, and a default "
            "of localhost) instead of node 0's address, so it never joins and node 0 waits"
        ),
        fix=[
            (
                "Set MASTER_ADDR (--master_addr) on every node to node 0's address on the "
                "network the nodes share, never localhost or 127.0.0.1 on a job across machines"
            ),
            _ELASTIC,
        ],
        evidence=[hit.cite, *span.cites[:1]],
        severity=Severity.WARNING,
        confidence=Confidence.MEDIUM if span.machine else Confidence.LOW,
    )


def check(facts: Facts) -> list[Finding]:
    """Rendezvous/store timeouts, too few DDP members, a hang at DDP init, a launch across
    nodes with no node rank (its flags or its environment), the nodes' launches naming
    different stores, or the loopback given to a node other than node 0."""
    for step in (
        _from_timeouts,
        _from_members,
        _from_words,
        _from_launch_line,
        _from_launch_env,
        _from_addresses,
        _from_loopback_across,
        _from_loopback_retold,
    ):
        found = step(facts)
        if found is not None:
            return [found]
    return []
