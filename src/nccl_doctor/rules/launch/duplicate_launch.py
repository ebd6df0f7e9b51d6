"""Processes were started twice, launchers nested, or two processes claim the same rank.

What it means
-------------
More processes than the world size met at the store, or several processes
use the same rank number: a launcher inside a launcher (``mp.spawn`` in a
script run by torchrun, ``srun --ntasks-per-node=8`` around ``torchrun
--nproc_per_node=8``), a stale store reused by a second job, or a global rank
computed from the local rank on a multi-node job (every node then has ranks
0..n-1 and nobody has the ranks of the other nodes).

Why it matters
--------------
The group cannot form correctly: the store barrier overflows or never
completes, ranks pair with the wrong peers, and the job hangs at
``init_process_group`` or the DDP constructor, or fails with duplicate-GPU
errors.

Evidence
--------
``store based barrier ... (world_size=4, worker_count=8, ...)``; NCCL's
``Bootstrap Root : rank R of N ranks has already checked in`` (or its
``mismatch in rank count``/``mismatch in info from procs``: two world sizes,
medium confidence); the same
global rank on two hosts; ``init_process_group(..., rank=args.local_rank)``
(or ``rank=int(os.environ['LOCAL_RANK'])``; the code, or a sentence quoting or telling the
call: "rank equal to that local rank") with ``--nnodes`` > 1; ``mp.spawn``
in a script launched by torchrun (its agent's lines, or the ``Setting
OMP_NUM_THREADS ...`` notice torchrun and torch.distributed.launch print as
they start several workers), or torchrun running a script given its own
``--num-gpus N`` (detectron2's launch spawns N workers itself);
Lightning's processes announcing a world's worth of ``GLOBAL_RANK``s with
some twice and some never (in a log kept in part, a rank announced by two
nodes' files or two srun tasks); one
``mpirun -np N`` of an nccl-tests binary that printed a result per process
(built without MPI, each process is rank 0 of its own world: a warning); the
store's ``Address already in use`` where the report says another port failed
the same way (no other job holds every port: low confidence); DeepSpeed's
``Unable to find hostfile, will proceed with training with local resources
only`` on a launch for several nodes (a node count above one, or one given by
a variable beside a node or machine rank): each node started its own job; a
store in a file (``init_method='file://...'``) where the report says the
initialisation hangs (a file left by an earlier run: low confidence); Slurm's
``--ntasks-per-node`` above one with srun running a launcher that starts a
worker per GPU itself (torchrun, ``accelerate launch``, the ``deepspeed`` CLI,
gpt-neox's ``deepy.py``).

Fix
---
Let exactly one launcher start the workers and take RANK / WORLD_SIZE /
LOCAL_RANK from its environment; on multiple nodes the global rank is
``node_rank * nproc_per_node + local_rank`` (or simply ``int(os.environ
["RANK"])``).
"""

from __future__ import annotations

from collections import Counter

from nccl_doctor.facts.base import Cite
from nccl_doctor.facts.failures import failures_of
from nccl_doctor.facts.nccl import NcclTestCommand, NcclTestRank, NcclTestSummary
from nccl_doctor.facts.run import (
    ChildFailure,
    PgInitOptions,
    PythonTraceback,
    RendezvousTimeout,
    WorkerExit,
    default_group,
)
from nccl_doctor.facts.span import launches, nested_srun, nodes_by_variable, span_of
from nccl_doctor.facts.store import Facts, Hit
from nccl_doctor.findings import Confidence, Finding, Severity
from nccl_doctor.rules.base import Rule
from nccl_doctor.rules.launch._common import address_in_use, hang_cues, init_hang_cues
from nccl_doctor.signs.common import HANG_WORDS
from nccl_doctor.signs.launch import (
    ELASTIC_LOGGER,
    FILE_STORE,
    INIT_PROCESS_GROUP,
    LAUNCHER_THREADS,
    LIGHTNING_MEMBER,
    LOCAL_AS_RANK,
    LOCAL_ONLY,
    MESH_FAILURE,
    NODE_PLACED,
    OTHER_PORT_SAME,
    ROOT_RANK_TWICE,
    ROOT_SIZE_MISMATCH,
    SAME_PORT_NAMED,
    SCRIPT_SPAWNS,
    SPAWN_CALL,
    TORCHRUN_NAMED,
)

RULE = Rule(
    id="launch.duplicate_launch",
    title="Duplicate or nested launch: ranks started twice or numbered alike",
    severity=Severity.CRITICAL,
    explains=(
        "launch.rendezvous",
        "app.hang",
        "nccl.duplicate_gpu",
        "net.unreachable",
        "launch.rank_crash",
        "launch.port_in_use",
        "gpu.oom",  # every set of workers loads its model on the same GPUs
    ),
)


_RANK_FIX = [
    (
        "Compute the global rank as node_rank * nproc_per_node + local_rank, or take it from the "
        "launcher: rank=int(os.environ['RANK']), world_size=int(os.environ['WORLD_SIZE']) "
        "(with init_method='env://' you may omit both)."
    ),
    "Keep local_rank only for torch.cuda.set_device(local_rank) and device_ids.",
]


def _overflow(facts: Facts) -> Finding | None:
    for tmo in facts.of(RendezvousTimeout):
        if tmo.joined is not None and tmo.expected is not None and tmo.joined > tmo.expected:
            summary = (
                f"{tmo.joined} processes arrived at the store barrier of a world of "
                f"{tmo.expected}: the workers were started more than once, launchers are nested, "
                "or another job reuses the same store."
            )
            return RULE.finding(
                summary=summary,
                fix=[
                    (
                        "Start the workers with exactly one launcher (torchrun OR srun tasks OR "
                        "mp.spawn, not two of them)."
                    ),
                    "Give concurrent jobs distinct MASTER_PORTs so they do not share a store.",
                ],
                evidence=[tmo],
                ranks=[tmo.rank] if tmo.rank is not None else [],
            )
    return None


def _nccl_root(facts: Facts) -> Finding | None:
    """NCCL's bootstrap root saw one rank twice, or two world sizes, for one communicator.

    The root (src/bootstrap.cc) collects every rank's address once; a second
    process with the same rank, or one counting another world size, makes its
    thread give up, and every rank then waits in communicator init.
    """
    fix = [
        (
            "Start the workers with exactly one launcher (torchrun OR srun tasks OR mp.spawn) "
            "and take RANK / WORLD_SIZE from it; on several nodes the global rank is node_rank "
            "* nproc_per_node + local_rank."
        ),
        (
            "Give concurrent jobs distinct MASTER_ADDR:MASTER_PORT (and NCCL_COMM_ID, where "
            "set) so they do not share a store or an NCCL id."
        ),
    ]
    if twice := facts.seen(ROOT_RANK_TWICE, prose=False):
        hit = twice[0]
        summary = (
            f"NCCL's bootstrap root got rank {hit.match['rank']} of {hit.match['n']} from two "
            "processes: two processes claim that rank in one communicator (workers started "
            "twice, nested launchers, or a global rank computed from the local rank), so the "
            "root gives up and every rank waits in init."
        )
        return RULE.finding(summary=summary, fix=fix, evidence=[hit.cite, *hang_cues(facts)[:1]])
    if sizes := facts.seen(ROOT_SIZE_MISMATCH, prose=False):
        hit = sizes[0]
        a, b = (
            (hit.match["a"], hit.match["b"]) if hit.match["a"] else (hit.match["c"], hit.match["d"])
        )
        summary = (
            f"NCCL's bootstrap root got world sizes {a} and {b} for one communicator: processes "
            "of two launches met at one NCCL id (a shared store or NCCL_COMM_ID), or the nodes "
            "were launched with different world sizes; the root gives up and every rank waits "
            "in init."
        )
        return RULE.finding(
            summary=summary,
            fix=[
                *fix,
                (
                    "Launch every node with the same --nnodes and --nproc-per-node (the same "
                    "WORLD_SIZE)."
                ),
            ],
            evidence=[hit.cite, *hang_cues(facts)[:1]],
            confidence=Confidence.MEDIUM,
        )
    return None


def _origin(hit: Hit) -> tuple[str, int | None]:
    """Where an announcement came from: its file and the task its line is prefixed with
    (srun -l's ``0:``, ``1:``; ``None`` where no prefix says)."""
    return hit.cite.source, hit.rank


def _from_two_origins(hits: list[Hit]) -> list[int]:
    """The ranks announced from two origins (two nodes' files, two srun tasks): two processes
    each, however much of the log was kept (a restart announces again from the same task)."""
    origins: dict[int, set[tuple[str, int | None]]] = {}
    for hit in hits:
        origins.setdefault(int(hit.match["rank"]), set()).add(_origin(hit))
    return sorted(r for r, named in origins.items() if len(named) > 1)


def _successive_attempts(hits: list[Hit], distinct: int) -> bool:
    """Whether each source's announcements split into attempts one after another, every
    attempt but the last naming all ``distinct`` ranks before any is named again (asked only
    where no rank was announced from two origins: that is two launches)."""
    order = sorted(hits, key=lambda h: (h.cite.source, h.cite.line))
    source: str | None = None
    attempt: set[int] = set()
    for hit in order:
        rank = int(hit.match["rank"])
        if hit.cite.source != source:
            source, attempt = hit.cite.source, set()
        elif rank in attempt:
            if len(attempt) < distinct:
                return False
            attempt = set()
        attempt.add(rank)
    return True


def _announced_twice(facts: Facts) -> Finding | None:
    """Lightning's processes announced a world's worth of ranks, some twice and some never.

    Each process prints its GLOBAL_RANK; two launches of a node's processes (srun starting
    one task per node while Lightning spawns the GPUs' processes itself, without the node's
    rank offset) number both nodes 0..n-1. A restart announces every rank again, so a rank
    missing is what tells the two apart; in one node's log a restart (a requeued job) names
    only that node's ranks, each attempt all of them before the next begins, where two
    launches at once interleave (0, 0, 1, 1, ...): announcements that split into successive
    attempts are a restart (two nodes' outputs one after the other in one file read alike).
    """
    by_world: dict[int, list[Hit]] = {}
    for hit in facts.seen(LIGHTNING_MEMBER):
        by_world.setdefault(int(hit.match["world"]), []).append(hit)
    for world, hits in by_world.items():
        ranks = Counter(int(h.match["rank"]) for h in hits)
        twice = sorted(r for r, n in ranks.items() if n > 1)
        if len(ranks) >= world or not twice:
            continue
        # a rank announced from two origins is two launches, however much of the log was
        # kept; from one origin, a log cut short (fewer announcements than the world) or a
        # restart (successive attempts) tells nothing
        if not _from_two_origins(hits) and (
            len(hits) < world or _successive_attempts(hits, len(ranks))
        ):
            continue
        missing = world - len(ranks)
        shown = ", ".join(map(str, twice[:8]))
        unseen = f"{missing} rank(s) never" if len(hits) >= world else f"{missing} not shown"
        return RULE.finding(
            summary=(
                f"{len(hits)} processes announced ranks of a world of {world}: rank(s) {shown} "
                f"twice and {unseen}, so two launches numbered their processes alike and the "
                "group cannot form."
            ),
            fix=[
                (
                    "Under Slurm give srun one task per GPU (--ntasks-per-node=<GPUs per node>) "
                    "and let Lightning read the ranks from Slurm, or start one launcher per node "
                    "with its --node_rank"
                ),
                *_RANK_FIX[:1],
            ],
            evidence=[h.cite for h in hits if int(h.match["rank"]) == twice[0]][:2],
            ranks=twice,
        )
    return None


def _tests_each_alone(facts: Facts) -> Finding | None:
    """One ``mpirun -np N`` of an nccl-tests binary that printed a result per process.

    nccl-tests built without MPI (``make MPI=1`` not given) ignores the
    launcher: every process is rank 0 of a world of its own, runs the whole
    test on its GPUs, and prints its own footer. Nothing crossed between the
    processes, so the bandwidth is a one-process figure. A header that numbers a rank
    above 0 shows the processes formed one world (an MPI build run several times, a loop).
    """
    commands = sorted(facts.of(NcclTestCommand), key=lambda c: (c.cite.source, c.cite.line))
    summaries = facts.of(NcclTestSummary)
    for at, command in enumerate(commands):
        if (command.n_procs or 0) < 2:
            continue
        end = next(
            (c.cite.line for c in commands[at + 1 :] if c.cite.source == command.cite.source),
            None,
        )
        printed = [
            s
            for s in summaries
            if s.cite.source == command.cite.source
            and s.cite.line > command.cite.line
            and (end is None or s.cite.line < end)
        ]
        if len(printed) < 2:
            continue
        if any(
            (r.rank or 0) > 0
            and r.cite.source == command.cite.source
            and command.cite.line < r.cite.line < printed[-1].cite.line
            for r in facts.of(NcclTestRank)
        ):
            continue  # one world of several ranks printed each footer: runs one after another
        return RULE.finding(
            summary=(
                f"One launch of {command.n_procs} processes of {command.test} printed "
                f"{len(printed)} results: each process ran the test alone (nccl-tests built "
                "without MPI support makes every process rank 0 of its own world), so nothing "
                "crossed between them and the bandwidth is one process's."
            ),
            fix=[
                "Rebuild nccl-tests with MPI: make MPI=1 MPI_HOME=<your MPI> (NCCL_HOME too)",
                (
                    "Check the header: one run prints '# nThread ... nGpus' once and one "
                    "'#  Rank' line per GPU of every process, with ranks 0..N-1"
                ),
            ],
            evidence=[command, *printed[:2]],
            severity=Severity.WARNING,
            confidence=Confidence.MEDIUM,
        )
    return None


def _same_rank(facts: Facts) -> Finding | None:
    hosts: dict[int, dict[str, Cite]] = {}
    for opt in facts.of(PgInitOptions):
        if opt.global_rank is None or not opt.host or not default_group(opt.pg):
            continue
        hosts.setdefault(opt.global_rank, {}).setdefault(opt.host, opt.cite)
    for rank, by_host in hosts.items():
        if len(by_host) > 1:
            names = ", ".join(by_host)
            return RULE.finding(
                summary=f"Global rank {rank} was initialised on {len(by_host)} hosts ({names}).",
                fix=_RANK_FIX,
                evidence=list(by_host.values())[:3],
                ranks=[rank],
                hosts=list(by_host),
            )
    return None


def _local_as_global(facts: Facts) -> Finding | None:
    # the code itself, or a sentence quoting the call ("I do init_process_group(...,
    # rank=local_rank)")
    calls = facts.lines_of(INIT_PROCESS_GROUP)
    code = [h for h in facts.seen(LOCAL_AS_RANK) if not h.prose or h.said in calls]
    if not code or not calls:
        return None
    nnodes = [n for n in launches(facts) if n.least > 1]
    span = span_of(facts)
    if not nnodes and not span.multi:
        return None
    evidence: list[Cite] = [code[0].cite, *(n.hit.cite for n in nnodes[:1]), *span.cites[:1]]
    count = nnodes[0].least if nnodes else span.count
    n = f"{count}-node" if count else "multi-node"
    # (the code line, or the words of a sentence that tells the call)
    quoted = code[0].match.group(0) if code[0].prose else code[0].cite.text.strip()
    summary = (
        f"init_process_group gets rank from the local rank ('{quoted}') on a "
        f"{n} job: every node uses ranks 0..nproc-1, two processes claim each rank and the "
        "higher ranks never exist, so the group never forms."
    )
    return RULE.finding(
        summary=summary,
        fix=_RANK_FIX,
        evidence=[*evidence, *hang_cues(facts)[:1]],
        confidence=Confidence.MEDIUM if nnodes or span.machine else Confidence.LOW,
    )


def _spawn_frames(facts: Facts) -> list[PythonTraceback]:
    """Tracebacks that pass through torch.multiprocessing's spawn (mp.spawn)."""
    return [
        tb
        for tb in facts.of(PythonTraceback)
        if any(
            (path or "").endswith("torch/multiprocessing/spawn.py") and name in _SPAWN_FUNCS
            for path, _, name in tb.frames
        )
    ]


_SPAWN_FUNCS = frozenset({"spawn", "start_processes"})


def _elastic(facts: Facts) -> list[Cite]:
    """Lines that show torchrun's elastic agent (or torch.distributed.launch) ran the job."""
    agent = [f.cite for f in facts.of(ChildFailure)] + [
        w.cite for w in facts.of(WorkerExit) if w.source == "elastic"
    ]
    # (the launcher's notice is its verbatim text, pasted outside a code block or not)
    return (
        agent
        or [h.cite for h in facts.seen(ELASTIC_LOGGER, prose=False)]
        or [h.cite for h in facts.seen(LAUNCHER_THREADS)]
    )


def _nested(facts: Facts) -> Finding | None:
    # the call's own text (mp.spawn(...)) and the launcher's name, in code, a command line or
    # the reporter's sentence ("I run torchrun ..., and train.py calls mp.spawn(main, ...)")
    spawn = facts.seen(SPAWN_CALL)
    launcher = facts.seen(TORCHRUN_NAMED)
    spawned = _spawn_frames(facts)
    agent = _elastic(facts)
    if spawned and agent:
        failed = (
            facts.saw(MESH_FAILURE, prose=False)
            or bool(facts.of(ChildFailure))
            or any(not f.launcher for f in failures_of(facts))
        )
        return RULE.finding(
            summary="Nested launch: the workers torchrun started each call mp.spawn, so every "
            "torchrun worker starts its own set of ranks 0..N-1 in the same store; the "
            "duplicate ranks then connect to each other's addresses and fail",
            fix=[
                (
                    "Use one launcher: under torchrun drop mp.spawn and read RANK, LOCAL_RANK and "
                    "WORLD_SIZE from the environment; or run the script with plain python and "
                    "let mp.spawn start the ranks"
                ),
            ],
            evidence=[spawned[0].cite, agent[0], *(h.cite for h in facts.seen(MESH_FAILURE)[:1])],
            severity=Severity.CRITICAL if failed else Severity.WARNING,
            confidence=Confidence.MEDIUM,
        )
    nested = nested_srun(facts)
    evidence: list[Cite] = []
    what = ""
    one_launcher = (
        "Use one launcher: either torchrun (drop mp.spawn and read RANK/LOCAL_RANK from "
        "the environment) or srun with one task per GPU (no launcher inside), or "
        "srun --ntasks-per-node=1 around the launcher."
    )
    if spawn and launcher:
        evidence = [spawn[0].cite, launcher[0].cite]
        what = "the script calls mp.spawn but is itself started by torchrun/launch"
        if spawn[0].match.group(0).startswith("LLM("):
            what = (
                "the script makes a tensor-parallel inference engine, which starts a worker per "
                "GPU itself, but is itself started by torchrun/launch"
            )
            one_launcher = (
                "Use one launcher: run the script with plain python and let the engine start "
                "its workers, or keep torchrun and tell the engine so (vLLM: LLM(..., "
                "distributed_executor_backend='external_launcher'), one rank per GPU)."
            )
    elif own := facts.seen(SCRIPT_SPAWNS):
        evidence = [own[0].cite]
        what = (
            f"torchrun runs a script told to start its own workers ({own[0].match['flag']}: "
            "detectron2's launch() spawns one per GPU)"
        )
        one_launcher = (
            "Use one launcher: run the script with plain python and its own --num-gpus, or keep "
            "torchrun and pass --num-gpus 1 (each torchrun worker is then one rank)."
        )
        launcher = (own[0],)
    elif nested is not None:
        evidence = [nested[0].cite, nested[1].cite]
        named = " ".join(nested[1].match["launcher"].split())
        what = f"srun starts several tasks per node and each task runs {named}"
        launcher = (nested[1],)
    if not evidence:
        return None
    # each set's rank 0 (or each launcher) opens the store on the one MASTER_PORT: all but the
    # first find it taken, which is this launch, not another job (port_in_use folds under it)
    bound, _ = address_in_use(facts)
    # the job failed beside it (a rendezvous closed, a heartbeat that timed out), or the reporter
    # says it sits there (the sets wait for a world none of them completes): the extra sets of
    # workers are why, whatever each says
    failed = (
        bool(bound)
        or any(not f.launcher for f in failures_of(facts))
        or bool(facts.told(HANG_WORDS))
    )
    return RULE.finding(
        summary=f"Nested launch: {what}, so each launched process starts its own set of workers"
        + (
            "; each set opens the store on the same MASTER_PORT, and all but the first find it "
            "taken."
            if bound
            else "."
        ),
        fix=[one_launcher],
        evidence=[*evidence, *bound[:1]],
        severity=Severity.CRITICAL if failed else Severity.WARNING,
        confidence=Confidence.LOW
        if all(h.prose for h in (*spawn[:1], *launcher[:1]))
        else Confidence.MEDIUM,
    )


def _own_port_twice(facts: Facts) -> Finding | None:
    """The store's bind failed with EADDRINUSE, and the reporter says another port failed the
    same way: no other job holds every port, so the job's own processes bind it twice."""
    evidence, _ = address_in_use(facts)
    # (not where the same error names the one port still: the port set never reached the
    # program, a hard-coded default - port_in_use's case)
    ignored = facts.lines_of(SAME_PORT_NAMED)
    said = [h for h in facts.seen(OTHER_PORT_SAME) if h.prose and h.said not in ignored]
    if not evidence or not said:
        return None
    return RULE.finding(
        summary=(
            "The store's port is in use whichever port is chosen (the report says another "
            "port failed the same way): no other job holds every port, so processes of this "
            "job open the store twice - a launcher inside a launcher (a script that sets up its "
            "own store under torchrun, mp.spawn under torchrun, srun tasks each running "
            "torchrun), or two launches given the same node rank."
        ),
        fix=[
            (
                "Start the workers with exactly one launcher (torchrun OR srun tasks OR "
                "mp.spawn) and let the script take RANK / WORLD_SIZE / MASTER_PORT from it: "
                "init_process_group(init_method='env://'), no TCPStore or port of its own."
            ),
            "Give each node of a static launch its own --node_rank.",
        ],
        evidence=[*evidence[:2], said[0].cite],
        severity=Severity.CRITICAL,
        confidence=Confidence.LOW,
    )


def _stale_file_store(facts: Facts) -> Finding | None:
    """The ranks meet through a file (init_method='file://...') and the report says the job
    hangs in its initialisation: the file of an earlier run, which torch's FileStore removes
    only when that run's processes all exit cleanly, still holds that run's keys, so the new
    ranks' counts and barrier never add up (torch's docs: a reused file can deadlock)."""
    store = facts.seen(FILE_STORE)
    cues = init_hang_cues(facts)
    if not store or not cues:
        return None
    return RULE.finding(
        summary=(
            "The process group meets through a file (init_method='file://...') and the job "
            "hangs while it initialises: a store file left by an earlier run (removed only "
            "when every process of that run exits cleanly) holds that run's keys, so the new "
            "ranks never complete the rendezvous"
        ),
        fix=[
            (
                "Delete the store file before starting again, and give every run a new path "
                "(for example one named after the job id) that does not exist yet"
            ),
            ("Or let the launcher's TCP store do it: init_method='env://' under torchrun, no file"),
        ],
        evidence=[store[0].cite, cues[0].cite],
        severity=Severity.WARNING,
        confidence=Confidence.LOW,
    )


def _each_node_alone(facts: Facts) -> Finding | None:
    """DeepSpeed's runner found no hostfile ('will proceed with training with local resources
    only': its store on 127.0.0.1) on a launch meant for several nodes: each node that ran the
    command started a job of its own."""
    alone = facts.seen(LOCAL_ONLY, prose=False)
    if not alone:
        return None
    counts = [n for n in launches(facts) if not n.hit.prose]
    meant = "the launch asks for several nodes"
    if counts:
        if all(n.least < 2 for n in counts):
            return None  # one node: the runner's usual notice
        intent = counts[0].hit.cite
    else:
        placed = [h for h in facts.seen(NODE_PLACED, prose=False) if h.match["rank"]]
        span = span_of(facts)
        if nodes_by_variable(facts) and placed:
            intent = placed[0].cite
        elif span.multi is True and span.cites:  # the reporter says the job spans nodes
            intent = span.cites[0]
            meant = "the job is meant to span several nodes"
        else:
            return None
    return RULE.finding(
        summary=(
            "DeepSpeed's launcher found no hostfile and started the job on its own node only "
            f"(its store on 127.0.0.1), though {meant}: every node "
            "that ran the command started a separate job - one trains alone as a single node, "
            "the others fail on the port or wait for peers that never join."
        ),
        fix=[
            (
                "Start the deepspeed launcher once, on the first node, with a hostfile listing "
                "every node (host slots=N) and passwordless ssh to them - or, when the "
                "scheduler starts the command on every node, give each its node rank and the "
                "first node's address without ssh: deepspeed --no_ssh --node_rank N "
                "--master_addr HOST0 (DeepSpeed >= 0.14.5; accelerate's "
                "deepspeed_multinode_launcher: nossh or standard), or --launcher slurm/openmpi."
            ),
        ],
        evidence=[alone[0].cite, intent],
        severity=Severity.CRITICAL,
        confidence=Confidence.MEDIUM,
    )


def check(facts: Facts) -> list[Finding]:
    """Store overflow, NCCL's root seeing a rank twice, a rank on two hosts, local rank used as
    global, nested launchers, or the store's port taken whichever port is chosen."""
    steps = (
        _overflow,
        _nccl_root,
        _same_rank,
        _announced_twice,
        _local_as_global,
        _nested,
        _tests_each_alone,
        _stale_file_store,
        _each_node_alone,
        _own_port_twice,
    )
    for step in steps:
        found = step(facts)
        if found is not None:
            return [found]
    return []
