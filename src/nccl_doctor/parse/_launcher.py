"""Launcher lines: worker exits, signals sent and received, elastic agent lifecycle."""

from __future__ import annotations

from nccl_doctor.facts.base import Fact
from nccl_doctor.facts.run import LauncherEvent, LauncherSignal, WorkerExit
from nccl_doctor.parse._lazy import LazyPattern
from nccl_doctor.parse._runtext import Ctx, signal_named, signal_of, to_int, who

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
