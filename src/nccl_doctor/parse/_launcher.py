"""Launcher lines: worker exits, signals sent and received, elastic agent lifecycle."""

from __future__ import annotations

from nccl_doctor.facts.base import Fact
from nccl_doctor.facts.run import LauncherEvent, LauncherSignal, WorkerExit
from nccl_doctor.knowledge.signals import SIGNAL_NUMBERS, STRSIGNAL
from nccl_doctor.parse._lazy import LazyPattern
from nccl_doctor.parse._runtext import (
    Ctx,
    signal_named,
    signal_of,
    to_int,
    who,
)

_ELASTIC_EXIT = LazyPattern(
    r"failed \(exitcode: (?P<c>-?\d{1,5})\) local_rank: (?P<lr>\d{1,6}) \(pid: (?P<pid>\d{1,9})\)"
    r" of (?:binary: (?P<bin>(?:\S(?:.*\S)?)?)\s*$|fn: (?P<fn>\S{1,300}))?"
)
_SPAWN_EXIT = LazyPattern(
    r"process (?P<lr>\d{1,6}) terminated with"
    r" (?:signal (?P<sig>\w{1,12})|exit code (?P<c>-?\d{1,5}))"
)
_SPAWN_RAISED = LazyPattern(r"-- Process (?P<lr>\d{1,6}) terminated with the following error")
#: DeepSpeed's launcher (launch.py sigkill_handler): ``{cmd} exits with return code = N``
#: since v0.3 (``Process N exits ...`` before). ``cmd`` is the command of the LAST process it
#: spawned, not of the one that failed: the line names the exit code, never the rank. The
#: reporter's paste often wraps the long command: the part with the code is kept alone.
_DS_EXIT = LazyPattern(
    r"(?:Process (?P<pid>\d{1,9}) )?exits with return code\s{0,20}=\s{0,20}(?P<c>-?\d{1,5})"
)
_DIED = LazyPattern(r"died with <Signals\.(?P<sig>SIG\w{1,10}): (?P<n>\d{1,3})>")
_NONZERO = LazyPattern(r"returned non-zero exit status (?P<c>-?\d{1,5})")
#: Slurm's srun on tasks that ended badly (src/srun/launch.c; plugins/launch/slurm before
#: 23.11; catalogue rows ``slurm.srun.task_*``): ``srun: error: <hosts>: task[s] <ids>: `` and
#: ``Exited with exit code N``, ``Out Of Memory`` (the step's memory cgroup OOM-killed it: the
#: kernel's SIGKILL) or strsignal's text of the signal, `` (core dumped)`` after it.
_SRUN_TASK = LazyPattern(
    r"srun: error: (?P<host>[^\s:]{1,200}): tasks? (?P<tasks>[\d,\[\]-]{1,200}): "
    r"(?:Exited with exit code (?P<c>\d{1,3})|(?P<oom>Out Of Memory)|"
    r"(?P<sig>[A-Z][a-z]{1,12}(?:[ /][a-z0-9]{1,12}){0,3}))"
)
#: Open MPI's mpirun (ORTE up to 4.1, help-orterun.txt proc-aborted[-strsignal]; catalogue
#: rows ``openmpi.run.proc_aborted_signal.*``): the rank a signal ended, the first to fail.
#: PRRTE (Open MPI 5) breaks the line before ``signal``: its rank is read, not its signal.
_MPIRUN_SIGNAL = LazyPattern(
    r"noticed that process rank (?P<rank>\d{1,7}) with PID (?P<pid>\d{1,9}) on node "
    r"(?P<host>[^\s,]{1,200}) exited on(?: signal (?P<n>\d{1,2}))?"
)
_SIGNALS: tuple[tuple[str, str, LazyPattern[str]], ...] = (
    (
        "closing signal",
        "send",
        LazyPattern(r"Sending process (?P<pid>\d{1,9}) closing signal (?P<sig>\S{1,20})"),
    ),
    (
        "via signal",
        "send",
        LazyPattern(r"Closing process (?P<pid>\d{1,9}) via signal (?P<sig>\S{1,20})"),
    ),
    (
        "forcefully exiting",
        "force_kill",
        LazyPattern(
            r"Unable to shutdown process (?P<pid>\d{1,9}) via \S{1,20},"
            r" forcefully exiting via (?P<sig>\S{1,20})"
        ),
    ),
    (
        "death signal",
        "received",
        LazyPattern(r"Received (?P<sig>\S{1,20}) death signal, shutting down workers"),
    ),
    (
        "got signal",
        "received",
        LazyPattern(r"Process (?P<pid>\d{1,9}) got signal: (?P<sig>\S{1,20})"),
    ),
    ("Killing subprocess", "send", LazyPattern(r"Killing subprocess (?P<pid>\d{1,9})")),
    (
        "Main process received",
        "received",
        LazyPattern(r"Main process received (?P<sig>SIG\w{1,10})"),
    ),
)
_EVENTS: tuple[tuple[str, str, LazyPattern[str]], ...] = (
    ("Rendezvous complete", "rendezvous_complete", LazyPattern(r"Rendezvous complete for workers")),
    ("Rendezvous'ing", "rendezvous_start", LazyPattern(r"Rendezvous'ing worker group")),
    (
        "attempts left",
        "worker_group_restart",
        LazyPattern(r"Worker group \w{1,12}\. (?P<d>\d{1,5}/\d{1,5}) attempts left; will restart"),
    ),
    (
        "worker group finished",
        "worker_group_finished",
        LazyPattern(r"Local worker group finished \((?:WorkerState\.)?(?P<d>\w{1,20})\)"),
    ),
    (
        "new nodes from group_rank",
        "membership_change",
        LazyPattern(r"Detected (?P<d>\d{1,7}) new nodes from group_rank"),
    ),
)


#: Substrings one of which a line holds when :func:`launcher_facts` can find anything in it.
KEYWORDS: tuple[str, ...] = (
    "failed (exitcode",
    "terminated with",
    "exits with return code",
    "died with <Signals",
    "non-zero exit status",
    "srun: error: ",
    "noticed that process rank",
    *(g for g, _, _ in _SIGNALS),
    *(g for g, _, _ in _EVENTS),
)


def launcher_facts(ctx: Ctx, text: str, out: list[Fact]) -> None:
    """Worker exits, launcher signals and agent events of one line, appended to ``out``."""
    line, rank, _, _ = ctx
    base = who(line, rank)
    if "failed (exitcode" in text and (m := _ELASTIC_EXIT.search(text)):
        code = to_int(m["c"])
        num, name = signal_of(code)
        out.append(
            WorkerExit(
                **base,
                source="elastic",
                exitcode=code,
                local_rank=to_int(m["lr"]),
                pid=to_int(m["pid"]),
                signal_number=num,
                signal_name=name,
                binary=m["bin"] or m["fn"],
            )
        )
    if "terminated with" in text:
        if m := _SPAWN_RAISED.search(text):
            out.append(WorkerExit(**base, source="spawn", local_rank=to_int(m["lr"]), raised=True))
        elif m := _SPAWN_EXIT.search(text):
            code = to_int(m["c"])
            num, name = signal_named(m["sig"]) if m["sig"] else signal_of(code)
            out.append(
                WorkerExit(
                    **base,
                    source="spawn",
                    exitcode=code,
                    local_rank=to_int(m["lr"]),
                    signal_number=num,
                    signal_name=name,
                )
            )
    if "exits with return code" in text and (m := _DS_EXIT.search(text)):
        code = to_int(m["c"])
        num, name = signal_of(code)
        out.append(
            WorkerExit(
                **base,
                source="deepspeed",
                exitcode=code,
                pid=to_int(m["pid"]),
                signal_number=num,
                signal_name=name,
            )
        )
    if "died with <Signals" in text and (m := _DIED.search(text)):
        num, name = signal_named(m["sig"])
        out.append(WorkerExit(**base, source="subprocess", signal_number=num, signal_name=name))
    elif "non-zero exit status" in text and (m := _NONZERO.search(text)):
        code = to_int(m["c"])
        num, name = signal_of(code)
        out.append(
            WorkerExit(
                **base, source="subprocess", exitcode=code, signal_number=num, signal_name=name
            )
        )
    if "srun: error: " in text:
        _srun_task(ctx, text, out)
    if "noticed that process rank" in text and (m := _MPIRUN_SIGNAL.search(text)):
        num, name = signal_named(m["n"])
        named = who(line, to_int(m["rank"]))
        named["host"] = m["host"]
        out.append(
            WorkerExit(
                **named,
                source="mpirun",
                pid=to_int(m["pid"]),
                signal_number=num,
                signal_name=name,
            )
        )
    for guard, action, rx in _SIGNALS:
        if guard in text and (m := rx.search(text)):
            groups = m.groupdict()
            num, name = signal_named(groups.get("sig"))
            out.append(
                LauncherSignal(
                    **base,
                    action=action,
                    pid=to_int(groups.get("pid")),
                    signal_number=num,
                    signal_name=name,
                )
            )
            break
    for guard, event, rx in _EVENTS:
        if guard in text and (m := rx.search(text)):
            out.append(LauncherEvent(**base, event=event, detail=m.groupdict().get("d")))
            break


def _srun_task(ctx: Ctx, text: str, out: list[Fact]) -> None:
    """srun's line for tasks that ended badly: one task's id is its global rank (Slurm's task
    id is SLURM_PROCID); a range names no one rank."""
    m = _SRUN_TASK.search(text)
    if m is None:
        return
    line, rank = ctx[0], ctx[1]
    task = to_int(m["tasks"])
    base = who(line, rank)
    base["host"] = m["host"]
    if task is not None:
        base["rank"] = task
    if m["c"] is not None:
        out.append(WorkerExit(**base, source="srun", exitcode=to_int(m["c"])))
        return
    # the memory cgroup's OOM killer sends SIGKILL; srun names the cause instead
    name = "SIGKILL" if m["oom"] else STRSIGNAL.get(m["sig"])
    if name is not None:
        number = SIGNAL_NUMBERS[name]
        out.append(WorkerExit(**base, source="srun", signal_number=number, signal_name=name))
