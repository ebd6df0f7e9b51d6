"""Write ``openmpi.jsonl`` and ``slurm.jsonl``: what ``mpirun`` and Slurm's ``srun`` and
``slurmstepd`` print about a job's processes, read from their own source at release tags.

Usage: ``python scripts/signatures/mine_hpc.py`` (git mirrors of open-mpi/ompi,
openpmix/prrte and SchedMD/slurm under ``/work/.mirror``; another root as the first argument).

* Open MPI prints its runtime's messages from help files (``help-*.txt``): a ``[topic]``
  line, then the text, printed as it stands with its printf conversions filled in. ORTE is
  ``mpirun`` up to Open MPI 4.1; Open MPI 5 runs PRRTE's (``prterun``, its help files under
  ``src/docs/show-help-files``), which wraps the same sentences at other places. A kept
  message is found by the words its first line starts with, in every help file of each tag;
  its format is that first line (a pattern covers one line), the whole topic is quoted
  nowhere.
* Slurm's are ``error()``/``info()`` calls in ``src/`` (C literals read with :mod:`clex`,
  ``"%" PRIu64`` spliced), printed after the program's name and level (``srun: error: ``,
  ``slurmstepd: error: ``).

A message that ends in a value which tells the cause apart (the signal a process died of)
is one entry per value, each with the class that value opens, as the launchers' exit codes
are (``mine_launchers.py``).
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import write_jsonl
from gitsrc import format_calls, git
from keeps import Keep, Seen, rows

OMPI_TAGS = ("v3.1.6", "v4.0.7", "v4.1.8")  # ORTE's last release of each series
PRRTE_TAGS = ("v3.0.14",)  # the runtime Open MPI 5.0.x bundles
SLURM_TAGS = (
    "slurm-20-11-9-1", "slurm-22-05-11-1", "slurm-23-11-11-1", "slurm-24-11-7-1",
    "slurm-26-05-3-1",
)  # fmt: skip
SLURM_DIRS = (
    "src/srun", "src/slurmd/slurmstepd", "src/plugins/task/cgroup", "src/plugins/launch", "src/api",
)  # fmt: skip


OMPI_KEEP = (
    # the launcher saw a rank die of a signal: the rank named is the first to fail
    Keep("openmpi.run.proc_aborted_signal",
         r"^%s noticed that process rank %lu with PID %lu on node %s exited on signal %d \(%s\)",
         "failure", ("launch.rank_crash",),
         "mpirun's word for a rank a signal ended (ORTE's orterun:proc-aborted-strsignal)",
         by_signal="d", refines=("openmpi.run.proc_aborted",),
         example="mpirun noticed that process rank 3 with PID 41234 on node "
         "gpu-node-02 exited on signal {n} ({text})."),
    # PRRTE (Open MPI 5) wraps the sentence before 'signal': its first line names the rank only
    Keep("openmpi.run.proc_aborted", r"^%s noticed that process rank %lu with PID %lu on node %s "
         r"exited on$", "failure", ("launch.rank_crash",),
         "prterun's first line for a rank a signal ended; the signal is on the next line"),
    Keep("openmpi.run.nonzero_exit",
         r"^%s detected that one or more processes exited with non-zero status", "failure",
         ("launch.rank_crash",),
         "mpirun ended the job after a rank exited non-zero; 'Process name: [[job,1],rank]' "
         "below names the first"),
    Keep("openmpi.run.exit_no_finalize", r"^%s has exited due to process rank %lu with PID %lu",
         "failure", ("launch.rank_crash",),
         "a rank exited (or called abort) without MPI_Finalize: the others were then killed"),
    # printed as 'Primary job  terminated normally, but 1 process returned' and, on the next
    # line, 'a non-zero exit code. Per user-direction, the job has been aborted.'
    Keep("openmpi.run.primary_nonzero", r"^%s job %s terminated normally, but %d %s", "failure",
         ("launch.rank_crash",),
         "mpirun's notice that a process exited non-zero and the job was aborted; the first "
         "failing rank's own output holds the cause", upto=r"^.{0,40}?but %d",
         example="Primary job  terminated normally, but 1 process returned"),
    # the launcher could not start its daemons on the other nodes (ssh, a firewall, the
    # remote PATH) or lost one during the run (the node died, or the network to it)
    Keep("openmpi.errmgr.daemon_start_failed", r"^(?:ORTE|%s) was unable to reliably start one "
         r"or more daemons", "failure", ("net.unreachable",),
         "mpirun's daemons did not start or call back: ssh to the node, its firewall, or an "
         "interface the daemons cannot use (--mca oob_tcp_if_include)"),
    Keep("openmpi.errmgr.daemon_lost", r"^(?:ORTE|PRTE) has lost communication with a remote "
         r"daemon", "node_lost", (),
         "a node's daemon stopped answering mid-run: the node died (host OOM, a crash) or the "
         "network to it failed"),
    # the MPI byte transfer layer on sockets met a peer it cannot place: several interfaces,
    # some private to each host (docker0, virbr0), are in use (btl_tcp_if_include)
    Keep("openmpi.btl_tcp.unknown_peer",
         r"^WARNING: Open MPI accepted a TCP connection from what appears to be a", "failure",
         ("net.socket_interface",),
         "the TCP BTL on an interface the peers do not share; MPI traffic then hangs",
         level="warning"),
    # the openib BTL's notices on hosts whose IB is meant for UCX or NCCL: MPI falls back to
    # another transport; NCCL's own IB use is not affected
    Keep("openmpi.btl_openib.device_init_error",
         r"^WARNING: There was an error initializing an OpenFabrics device", "info", (),
         "the openib BTL skipped a device (MPI uses another transport); harmless to NCCL",
         level="warning"),
    Keep("openmpi.btl_openib.ib_port_not_selected",
         r"^By default, for Open MPI 4\.0 and later, infiniband ports on a device", "info", (),
         "Open MPI 4 leaves IB ports to UCX; harmless to NCCL", level="warning"),
    Keep("openmpi.btl_openib.no_cpc",
         r"^No OpenFabrics connection schemes reported that they were able to be", "info", (),
         "the openib BTL found no way to connect on a port (RoCE without rdmacm); MPI uses "
         "another transport; harmless to NCCL", level="warning"),
    Keep("openmpi.opal.fork_warning",
         r"^A process has executed an operation involving a call to the", "info", (),
         "a process forked after MPI started (DataLoader workers): Open MPI's notice only",
         level="warning"),
)  # fmt: skip

#: Open MPI's own C messages: opal_output(stream, format, ...) in the shared-memory BTL
OMPI_C = (("opal/mca/btl/vader",), ("opal_output",), ("opal_output",))
OMPI_C_KEEP = (
    # vader's single-copy path reads a peer's memory with process_vm_readv (Linux CMA); a
    # container without CAP_SYS_PTRACE (or Yama's ptrace_scope) refuses it (errno 1, EPERM)
    # and the BTL prints this per transfer: MPI's own traffic, not NCCL's
    Keep("openmpi.btl_vader.cma_read_failed", r"^Read %ld, expected %lu, errno = %d", "info",
         (), "the shared-memory BTL could not read a peer's memory with CMA (errno 1: a "
         "container without SYS_PTRACE); MPI's own transfers only, harmless to NCCL; "
         "--mca btl_vader_single_copy_mechanism none silences it", level="warning"),
    Keep("openmpi.btl_vader.cma_write_failed", r"^Wrote %ld, expected %lu, errno = %d", "info",
         (), "the shared-memory BTL could not write a peer's memory with CMA (errno 1: a "
         "container without SYS_PTRACE); MPI's own transfers only, harmless to NCCL; "
         "--mca btl_vader_single_copy_mechanism none silences it", level="warning"),
)  # fmt: skip

_SRUN = "srun: error: "  # log.c: the program's name and the level before error()'s text
SLURM_KEEP = (
    # the cgroup's memory limit: the kernel's OOM killer ended a task inside the step
    Keep("slurm.stepd.oom_kill_events", r"^Detected %l?u oom[-_]kill event", "host_oom",
         ("host.resources", "launch.rank_crash"),
         "the task/cgroup plugin counted OOM kills in the step's memory cgroup: a task used "
         "more host memory than the job asked for (--mem, --mem-per-gpu)"),
    Keep("slurm.srun.task_oom", r"^%s: %s %s: Out Of Memory$", "host_oom",
         ("host.resources", "launch.rank_crash"),
         "srun's word for a task the step's memory cgroup OOM-killed", after=_SRUN,
         example="srun: error: gpu-node-07: task 11: Out Of Memory"),
    Keep("slurm.srun.task_exit_code", r"^%s: %s %s: Exited with exit code %d$", "failure",
         ("launch.rank_crash",),
         "srun's word for a task that exited non-zero (the first listed is not always the "
         "first to fail)", after=_SRUN,
         example="srun: error: gpu-node-07: tasks 8-15: Exited with exit code 1"),
    Keep("slurm.srun.task_signal", r"^%s: %s %s: %s%s$", "failure", ("launch.rank_crash",),
         "srun's word for a task a signal ended (strsignal's text, ' (core dumped)' after it)",
         by_signal="s", after=_SRUN, example="srun: error: gpu-node-07: task 11: {text}"),
    Keep("slurm.stepd.cancelled_time_limit", r"^\*\*\* %s ON %s CANCELLED AT %s DUE TO TIME "
         r"LIMIT", "time_limit", ("app.hang",),
         "Slurm ended the job at its time limit: it stopped making progress, or ran slower "
         "than its allocation allows"),
    Keep("slurm.stepd.cancelled_node_failure", r"^\*\*\* %s ON %s CANCELLED AT %s DUE TO NODE",
         "node_lost", (),
         "slurmctld lost a node of the job (it crashed, hung or dropped off the network)"),
    Keep("slurm.srun.node_failure", r"^Node failure on %s", "node_lost", (),
         "srun was told a node of the step failed"),
    # the scheduler stopped the job from outside: no failure of its own
    Keep("slurm.stepd.cancelled_preemption", r"^\*\*\* %s ON %s CANCELLED AT %s DUE TO "
         r"PREEMPTION", "info", (), "a job of higher priority took the nodes", level="info"),
    Keep("slurm.stepd.cancelled_requeue", r"^\*\*\* %s ON %s CANCELLED AT %s DUE TO JOB "
         r"REQUEUE", "info", (), "the job was requeued (scontrol requeue)", level="info"),
    # scancel (or an administrator) sent SIGTERM/SIGKILL: the job was stopped from outside
    Keep("slurm.stepd.cancelled", r"^\*\*\* %s ON %s CANCELLED AT %s \*\*\*$", "info", (),
         "the job was cancelled from outside (scancel, or an administrator): its tasks' exits "
         "and the launcher's signal messages that follow are the teardown, no failure",
         level="info"),
    # --kill-on-bad-exit (or the step's failure mode) ended the others after one task failed
    Keep("slurm.stepd.cancelled_task_failure", r"^\*\*\* %s ON %s CANCELLED AT %s DUE TO TASK "
         r"FAILURE", "failure", ("launch.rank_crash",),
         "another task failed first and the step was ended (--kill-on-bad-exit)"),
    Keep("slurm.stepd.step_failed", r"^\*\*\* %s ON %s FAILED \(non-zero exit code", "failure",
         ("launch.rank_crash",), "the step failed: a task exited non-zero"),
    Keep("slurm.srun.step_aborted_waiting", r"^Job step aborted: Waiting up to %d seconds",
         "info", (), "srun waits for the step's tasks to end after a failure or a cancel",
         level="info"),
    Keep("slurm.srun.task_launch_failed", r"^Task launch for %ps failed on node %s: %m",
         "failure", (), "slurmd could not start the task (a missing binary, a bad cwd, limits)"),
    Keep("slurm.srun.create_step_failed", r"^Unable to create step for job %u: %m", "failure",
         (), "the step asked for more than the allocation holds (GPUs, memory, tasks)"),
)  # fmt: skip


def _topics(text: str) -> list[tuple[int, str]]:
    """``(line, first line)`` of each ``[topic]`` of a help file (comments left out)."""
    out: list[tuple[int, str]] = []
    lines = text.splitlines()
    for i, line in enumerate(lines):
        if not re.match(r"^\[[^\]]+\]\s*$", line):
            continue
        for j in range(i + 1, min(i + 8, len(lines))):
            body = lines[j].rstrip()
            if body.startswith(("#", "[")):
                break
            if re.search(r"[A-Za-z]{3}", body):
                out.append((j + 1, body))
                break
    return out


def _help_messages(mirror: Path, tags: tuple[str, ...], seen: dict[tuple[str, str], Seen]) -> None:
    for tag in tags:
        files = [f for f in git(mirror, "ls-tree", "-r", "--name-only", tag).split()
                 if re.search(r"(?:^|/)help-[^/]+\.txt$", f)]  # fmt: skip
        for path in files:
            for line, first in _topics(git(mirror, "show", f"{tag}:{path}")):
                for keep in OMPI_KEEP:
                    if re.search(keep.anchor, first):
                        item = seen.setdefault((keep.id, first), Seen(keep, first, [], {}))
                        item.where.setdefault(tag, []).append(f"{path}:{line}")


def _c_messages(
    mirror: Path,
    tags: tuple[str, ...],
    where: tuple[tuple[str, ...], tuple[str, ...], tuple[str, ...]],
    keeps: tuple[Keep, ...],
    seen: dict[tuple[str, str], Seen],
) -> None:
    """The kept messages of C logging calls: ``where`` is (folders, macros, macros that take
    an argument before the format)."""
    folders, macros, flagged = where
    for tag in tags:
        for call in format_calls(mirror, tag, folders, macros, flagged=flagged, suffixes=(".c",)):
            text = call.format.text.rstrip("\n")  # a line's own end, printed by the logger
            for keep in keeps:
                if re.search(keep.anchor, text):
                    item = seen.setdefault((keep.id, text), Seen(keep, text, call.format.args, {}))
                    item.where.setdefault(tag, []).append(f"{call.path}:{call.line}")


#: Slurm's: error()/info() in the programs that start and watch a job's tasks
SLURM_C = (SLURM_DIRS, ("error", "info"), ())


def _version(tag: str) -> str:
    if tag.startswith("slurm-"):
        return ".".join(tag.split("-")[1:4])
    return ("prrte-" if tag in PRRTE_TAGS else "") + tag.lstrip("v")


def _printf(fmt: str) -> str:
    """Slurm's own conversions as the ones they print like: ``%ps`` (a step id,
    ``StepId=12.0``) and ``%m`` (``strerror(errno)``) are text."""
    return fmt.replace("%ps", "%s").replace("%m", "%s")


def main(argv: list[str]) -> int:
    root = Path(argv[1]) if len(argv) > 1 else Path("/work/.mirror")
    ompi: dict[tuple[str, str], Seen] = {}
    _help_messages(root / "open-mpi+ompi" / "repo", OMPI_TAGS, ompi)
    _help_messages(root / "openpmix+prrte" / "repo", PRRTE_TAGS, ompi)
    slurm: dict[tuple[str, str], Seen] = {}
    _c_messages(root / "open-mpi+ompi" / "repo", OMPI_TAGS, OMPI_C, OMPI_C_KEEP, ompi)
    _c_messages(root / "SchedMD+slurm" / "repo", SLURM_TAGS, SLURM_C, SLURM_KEEP, slurm)
    for library, seen, tags, keeps in (("openmpi", ompi, OMPI_TAGS + PRRTE_TAGS,
                                        OMPI_KEEP + OMPI_C_KEEP),
                                       ("slurm", slurm, SLURM_TAGS, SLURM_KEEP)):  # fmt: skip
        missing = {k.id for k in keeps} - {s.keep.id for s in seen.values()}
        if missing:
            raise SystemExit(f"{library}: not found at any tag read: {sorted(missing)}")
        print(write_jsonl(library, rows(library, seen, tags, _version, _printf)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv))
