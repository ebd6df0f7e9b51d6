"""The CPU (gloo) fault zoo: each scenario breaks a real torchrun job one way.

``run_scenario`` launches ``job.py`` the way users do and keeps what a user
would have: torchrun's combined stdout and stderr in one file. Used by
``tests/zoo/test_zoo_cpu.py`` and ``scripts/zoo_summary.py``.
"""

from __future__ import annotations

import os
import resource
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

JOB = Path(__file__).with_name("job.py")
ANY = "any"


@dataclass(frozen=True)
class Scenario:
    """One failure: how to launch it and what nccl-doctor must say."""

    name: str
    top: str
    #: the first failing rank; ``ANY`` where every rank fails alike (a desync)
    first_failing_rank: int | str | None
    nproc: int = 2
    env: dict[str, str] = field(default_factory=dict)
    torchrun: tuple[str, ...] = ()
    #: ids that must not stand as their own root cause (the cascade, folded or absent)
    not_root: tuple[str, ...] = ()
    port_taken: bool = False
    nofile: int | None = None
    #: the fault depends on timing: a run that happened to succeed must get no critical
    racy: bool = False
    #: a critical finding that must stand though ``top`` is not it (a rank killed with
    #: nothing of its own: who went first is the finding, what killed it the ranked causes)
    critical: str | None = None
    #: the ranks the top finding must name (``None``: not checked)
    names: tuple[int, ...] | None = None


SCENARIOS: tuple[Scenario, ...] = (
    Scenario("rank_raises", "launch.rank_crash", 1, not_root=("net.unreachable", "app.hang")),
    Scenario("sigsegv", "launch.rank_crash", 1, not_root=("net.unreachable", "app.hang")),
    # the job kills its own rank: nothing says what did, so the kill's causes lead, the
    # kernel's OOM killer first
    Scenario(
        "sigkill",
        "host.resources",
        1,
        not_root=("net.unreachable", "app.hang", "launch.rank_crash"),
        critical="launch.rank_crash",
    ),
    Scenario("param_mismatch", "app.param_mismatch", 1, not_root=("launch.rank_crash",)),
    # rank 1 (broadcast) gives up first by design (job.py), rank 0 sees it go
    Scenario("collective_mismatch", "app.collective_mismatch", 1),
    Scenario(
        "collective_mismatch_detail",
        "app.collective_mismatch",
        ANY,
        env={"TORCH_DISTRIBUTED_DEBUG": "DETAIL", "ZOO_SCENARIO": "collective_mismatch"},
    ),
    Scenario("stall", "app.hang", 0, env={"ZOO_TIMEOUT_S": "5"}),
    # rank 0's monitored_barrier(wait_all_ranks=True) gives up on rank 2, still asleep: the
    # barrier names it, though rank 0 is the one that fails
    Scenario(
        "monitored_barrier",
        "app.hang",
        0,
        nproc=3,
        env={"ZOO_TIMEOUT_S": "4"},
        not_root=("net.unreachable", "launch.rank_crash"),
        names=(2,),
    ),
    Scenario(
        "node_missing",
        "launch.rendezvous",
        None,
        nproc=1,
        torchrun=("--nnodes", "2", "--rdzv-backend", "c10d", "--rdzv-conf", "join_timeout=8"),
    ),
    Scenario("port_in_use", "launch.port_in_use", None, port_taken=True),
    # both ranks fail alike before the rank prefixes start: either may print first
    Scenario("too_many_files", "host.resources", ANY, nofile=256),
    Scenario(
        "nested_spawn", "launch.duplicate_launch", ANY, not_root=("net.unreachable",), racy=True
    ),
)


def free_port() -> int:
    """A TCP port nobody listens on now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextmanager
def _holding(port: int, hold: bool) -> Iterator[None]:
    if not hold:
        yield
        return
    with socket.socket() as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        s.bind(("0.0.0.0", port))  # noqa: S104 -- the store binds every interface too
        s.listen()
        yield


def _limit(nofile: int | None) -> Callable[[], None] | None:
    if nofile is None:
        return None

    def apply() -> None:
        resource.setrlimit(resource.RLIMIT_NOFILE, (nofile, nofile))

    return apply


def torchrun() -> str:
    """The torchrun beside this Python, else on PATH."""
    beside = Path(sys.executable).with_name("torchrun")
    return str(beside) if beside.exists() else (shutil.which("torchrun") or "torchrun")


def run_scenario(scenario: Scenario, out_dir: Path, timeout_s: float = 120) -> tuple[Path, float]:
    """Launch the scenario; returns the console log and the seconds it ran.

    The launcher's exit status is appended to ``<name>.exit``.
    """
    port = free_port()
    sync = out_dir / f"{scenario.name}.sync"  # where ranks that failed wait for the others
    sync.mkdir(parents=True, exist_ok=True)
    env = {
        **os.environ,
        "ZOO_SCENARIO": scenario.name,
        "ZOO_TIMEOUT_S": "10",
        "ZOO_SYNC_DIR": str(sync),
        **scenario.env,
    }
    if "TORCH_DISTRIBUTED_DEBUG" not in scenario.env:
        env.pop("TORCH_DISTRIBUTED_DEBUG", None)
    where = (
        ("--rdzv-endpoint", f"127.0.0.1:{port}")
        if "--rdzv-backend" in scenario.torchrun
        else ("--master-port", str(port))
    )
    cmd = [
        torchrun(),
        "--nproc-per-node",
        str(scenario.nproc),
        *where,
        *scenario.torchrun,
        str(JOB),
    ]
    log = out_dir / f"{scenario.name}.log"
    start = time.monotonic()
    with _holding(port, scenario.port_taken), log.open("wb") as sink:
        done = subprocess.run(
            cmd,
            stdout=sink,
            stderr=subprocess.STDOUT,
            env=env,
            timeout=timeout_s,
            check=False,
            preexec_fn=_limit(scenario.nofile),
        )
    log.with_suffix(".exit").write_text(f"{done.returncode}\n")
    return log, time.monotonic() - start
