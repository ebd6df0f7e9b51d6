"""Origin, lagging, messenger: the whole pipeline on real hangs and on built multi-rank records.

Real: tests/fixtures/captured/gloo-hangs-cpu (gloo jobs under ``nccl-doctor run``:
pre-mortem captures while they hung, and post-mortems of jobs that timed out),
premortem-h200 (one GPU, the rank's own kernel ahead of the all_reduce).
Built: tests/fixtures/constructed (README.md there): NCCL RAS reports and
flight-recorder JSON dumps of several ranks.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from nccl_doctor.findings import Finding
from nccl_doctor.pipeline import diagnose_paths
from nccl_doctor.render import render_report
from nccl_doctor.report import Report
from tests.hang import _fr_json_build

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
GLOO = FIXTURES / "captured" / "gloo-hangs-cpu"
H200 = FIXTURES / "captured" / "premortem-h200" / "premortem"
RAS = FIXTURES / "constructed" / "ncclras"
FR_JSON = FIXTURES / "constructed" / "fr-json"


def _roles(finding: Finding) -> dict[str, list[int]]:
    out: dict[str, list[int]] = {}
    for role in finding.roles:
        out.setdefault(role.role, []).extend(role.ranks)
    return {k: sorted(v) for k, v in out.items()}


def _reason(finding: Finding, role: str) -> str:
    return next(r.reason for r in finding.roles if r.role == role)


def _top(report: Report) -> Finding:
    top = report.findings[0]
    assert top.root_cause
    return top


# -- the pre-mortem's captures, while the job hung ----------------------------------------
@pytest.mark.parametrize(
    ("case", "messengers", "why", "op"),
    [
        ("premortem-sleep", [0, 2, 3], ("never joined all_reduce: not in any collective, at "
         "run/hang_job.py:50 in _hang"), "all_reduce"),
        ("premortem-other", [0, 2], ("stuck in a different collective: broadcast (called at "
         "run/hang_job.py:54 in _hang) while the others wait in all_reduce"), "all_reduce"),
        ("premortem-dead", [0, 2], ("dead: its process (pid 2833) had exited when the stacks "
         "were captured"), "init_process_group"),
    ],
)  # fmt: skip
def test_a_capture_names_the_origin(case: str, messengers: list[int], why: str, op: str) -> None:
    """Before: INCONCLUSIVE (the rules did not read the stacks). Now: app.hang, origin rank 1."""
    report = diagnose_paths([str(GLOO / case)])
    top = _top(report)
    assert (top.id, top.severity.value, top.confidence.value) == ("app.hang", "critical", "high")
    assert _roles(top) == {"origin": [1], "messenger": messengers}
    assert _reason(top, "origin") == why
    assert top.summary.startswith(
        "The job hangs (nccl-doctor run's capture hang-1, 8 s without progress): rank 1 is the "
        f"origin: {why}; messengers: ranks {', '.join(map(str, messengers))} (waits in {op})"
    )
    assert top.collective is not None
    assert (top.collective.op, top.collective.source) == (op, "stacks")
    assert "/hang-1/stacks.rank1." in top.evidence[0].source  # the origin's own stack first


def test_the_wrapper_printed_it_while_the_job_hung() -> None:
    """The real run's stderr: the diagnosis printed by the pre-mortem, before the SIGTERM."""
    text = (GLOO / "premortem-sleep.stderr.txt").read_text()
    during = text[: text.index("Received 15 death signal")]
    assert "diagnosis of the run folder so far:\nnccl-doctor: FAILED" in during
    assert "rank\n   1 is the origin: never joined all_reduce" in during
    manifest = json.loads((GLOO / "premortem-sleep" / "MANIFEST.json").read_text())
    assert [h["named_ranks"] for h in manifest["hangs"]] == [[1]]


# -- post-mortems: gloo timeouts and store timeouts after a dead peer ---------------------
def test_gloo_recv_timeout_the_stuck_rank_is_the_origin() -> None:
    top = _top(diagnose_paths([str(GLOO / "timeout-sleep")]))
    assert top.id == "app.hang"
    assert _roles(top) == {"origin": [1], "messenger": [0, 2, 3]}
    assert _reason(top, "origin").startswith("stuck: no error of its own before the launcher")
    assert "rank 1 is the origin" in top.summary
    assert "messengers: ranks 0, 2, 3 (timed out waiting in all_reduce" in top.summary
    assert "Rank 0 in all_reduce(), rank 2" not in top.summary  # no longer every rank, one by one


@pytest.mark.parametrize("case", ["timeout-dead", "timeout-dead-store-lost"])
def test_a_store_timeout_after_a_dead_peer(case: str) -> None:
    """Rank 1 never joined; the others' store waits timed out (or lost the store after)."""
    report = diagnose_paths([str(GLOO / case)])
    top = _top(report)
    assert top.id == "launch.rendezvous"
    assert _roles(top) == {"origin": [1], "messenger": [0, 2]}
    assert top.summary.startswith("Rendezvous did not complete after ")
    assert "; rank 1 is the origin: never joined: its output is here but no error" in top.summary
    # rank 2's "Connection was likely closed" is the cascade, not a crash of its own
    assert [f.id for f in report.findings if f.root_cause] == ["launch.rendezvous"]
    assert report.first_failure is not None
    assert report.first_failure.message.startswith("torch.distributed.DistStoreError")


def test_a_rank_that_died_first_its_peers_are_messengers() -> None:
    top = _top(diagnose_paths([str(GLOO / "crash")]))
    assert top.id == "launch.rank_crash"
    assert _roles(top) == {"origin": [1], "messenger": [0, 2]}
    assert top.summary.startswith("Rank 1 died first with an uncaught exception: RuntimeError")
    assert top.summary.endswith("; messengers: ranks 0, 2 (saw a peer close the connection).")


def test_the_json_report_carries_roles_and_collective() -> None:
    report = diagnose_paths([str(GLOO / "premortem-other")])
    data = json.loads(render_report(report, "json"))
    hang = data["findings"][0]
    assert [(r["role"], r["ranks"]) for r in hang["roles"]] == [
        ("origin", [1]),
        ("messenger", [0, 2]),
    ]
    assert hang["roles"][0]["evidence"][0]["source"].endswith(".txt")
    assert hang["collective"] == {
        "op": "all_reduce",
        "seq": None,
        "size": None,
        "process_group": None,
        "source": "stacks",
    }


# -- the H200 capture: held below Python, repeated captures of one stall -----------------
def test_repeated_captures_are_read_once_the_latest() -> None:
    hangs = sorted(H200.glob("hang-[2-5]"))
    report = diagnose_paths([str(p) for p in hangs])
    top = _top(report)
    assert (top.id, _roles(top)) == ("app.hang", {"origin": [0]})
    assert "the job's only rank: no peer can be behind" in top.summary
    assert "its Python is not in any collective, at cuda/__init__.py:1162 in synchronize" in (
        top.summary
    )
    assert top.summary.startswith("The job hangs (nccl-doctor run's capture hang-5")
    assert {Path(c.source).parent.name for c in top.evidence} == {"hang-5"}
    assert top.collective is not None
    assert (top.collective.op, top.collective.seq, top.collective.source) == (
        "all_reduce",
        2,
        "flight recorder",
    )


def test_a_capture_of_a_slow_start_is_no_hang() -> None:
    report = diagnose_paths([str(H200 / "hang-1")])
    assert report.verdict.value == "healthy"
    assert not report.findings


# -- NCCL RAS in a capture ----------------------------------------------------------------
RAS_CASES = [
    ("dead-rank5", {"origin": [5]}, "dead: NCCL RAS considers its process dead (unreachable)"),
    (
        "behind-rank3",
        {"origin": [3], "messenger": [0, 1, 2, 4, 5, 6, 7]},
        ("never launched AllReduce operation 12, which the others launched (NCCL RAS: it "
        "launched 11)"),
    ),
    ("error-rank6", {"origin": [6], "messenger": [0, 1, 2, 3, 4, 5, 7]},
     "an NCCL error of its own (Unhandled CUDA error)"),
    ("behind-majority", {"lagging": [2, 3, 4, 5, 6, 7], "messenger": [0, 1]}, None),
]  # fmt: skip


@pytest.mark.parametrize("ext", ["txt", "json"])
@pytest.mark.parametrize(("stem", "roles", "why"), RAS_CASES)
def test_ras_in_a_capture(
    tmp_path: Path, stem: str, roles: dict[str, list[int]], why: str | None, ext: str
) -> None:
    capture = tmp_path / "run" / "hang-1"
    capture.mkdir(parents=True)
    shutil.copy(RAS / f"{stem}.{ext}", capture / f"ncclras.{ext}")
    top = _top(diagnose_paths([str(tmp_path / "run")]))
    assert top.id == "app.hang"
    assert _roles(top) == roles
    if why is not None:
        assert _reason(top, "origin") == why
        assert f"rank {roles['origin'][0]} is the origin: {why}" in top.summary
    else:  # the ranks behind are the majority: RAS cannot say which of them held the rest
        assert "origin" not in top.summary
        assert "lagging: ranks 2-7" in top.summary
    assert top.collective is None or top.collective.source == "NCCL RAS"


@pytest.mark.parametrize("name", ["healthy.txt", "healthy.json"])
def test_a_healthy_ras_report_in_a_capture_is_no_hang(tmp_path: Path, name: str) -> None:
    capture = tmp_path / "run" / "hang-1"
    capture.mkdir(parents=True)
    shutil.copy(RAS / name, capture / name.replace("healthy", "ncclras"))
    report = diagnose_paths([str(tmp_path / "run")])
    assert not [f for f in report.findings if f.id == "app.hang"]


@pytest.mark.parametrize("name", ["behind-rank3.txt", "behind-rank3.json"])
def test_ras_counts_alone_are_no_hang(name: str) -> None:
    """Counts differ for a moment in a healthy job too: without a stall, no hang is named."""
    report = diagnose_paths([str(RAS / name)])
    assert not [f for f in report.findings if f.id == "app.hang"]


def test_the_real_one_rank_ras_and_flight_recorder_are_no_hang() -> None:
    """ras-h200: a healthy job sampled 20 s into a 45 s kernel (its group timeout was 120 s)."""
    report = diagnose_paths([str(FIXTURES / "captured" / "ras-h200")])
    assert not [f for f in report.findings if f.id == "app.hang"]


# -- flight-recorder JSON of several ranks -----------------------------------------------
def test_flight_recorder_json_a_rank_behind() -> None:
    top = _top(diagnose_paths([str(FR_JSON / "behind-rank2")]))
    assert (top.id, _roles(top)) == ("app.hang", {"origin": [2], "messenger": [0, 1, 3]})
    assert (
        _reason(top, "origin")
        == "never joined all_reduce seq 3 (its last enqueued collective is 2)"
    )
    assert top.collective is not None
    assert (top.collective.op, top.collective.seq, top.collective.size) == (
        "all_reduce",
        3,
        "[[1048576]] Float",
    )
    assert top.collective.process_group == "0 (default_pg)"


def test_flight_recorder_json_a_chain_origin_lagging_messengers() -> None:
    top = _top(diagnose_paths([str(FR_JSON / "chain-rank3")]))
    assert _roles(top) == {"origin": [3], "lagging": [2], "messenger": [0, 1]}
    assert _reason(top, "origin") == (
        "never joined all_gather seq 3 of process group 1 (tp), which rank 2 waits in"
    )
    assert _reason(top, "lagging") == (
        "never issued all_reduce seq 3: it waits in all_gather seq 3 of process group 1 (tp), "
        "held by rank 3"
    )
    assert top.collective is not None
    assert (top.collective.op, top.collective.seq, top.collective.process_group) == (
        "all_gather",
        3,
        "1 (tp)",
    )


def test_healthy_flight_recorder_json_is_no_hang() -> None:
    report = diagnose_paths([str(FR_JSON / "healthy")])
    assert report.verdict.value == "healthy"


def test_the_fr_builder_reproduces_the_real_json_and_the_fixtures(tmp_path: Path) -> None:
    assert _fr_json_build.dumps(_fr_json_build.real()) == _fr_json_build.REAL.read_text()
    for path in _fr_json_build.write(tmp_path):
        assert path.read_text() == (FR_JSON / path.parent.name / path.name).read_text()


# -- many ranks: compact lists ------------------------------------------------------------
def test_512_ranks_are_listed_as_ranges(tmp_path: Path) -> None:
    """Rank 4 was saving a checkpoint; the real H200 watchdog lines of the other 511 ranks."""
    real = (FIXTURES / "captured" / "watchdog-h200" / "lazy" / "console.log").read_text()
    timeout, status = real.splitlines()[1:3]
    lines = ["torchrun --nnodes 64 --nproc-per-node 8 train.py"]
    for rank in range(512):
        if rank == 4:
            lines.append("[rank4]: step 200: saving checkpoint to /ckpt/step200.pt")
            continue
        lines += [
            line.replace("[rank0]", f"[rank{rank}]").replace("Rank 0]", f"Rank {rank}]")
            for line in (timeout, status)
        ]
    (tmp_path / "job.log").write_text("\n".join(lines) + "\n")
    report = diagnose_paths([str(tmp_path / "job.log")])
    hang = next(f for f in report.findings if f.id == "app.hang")
    assert _roles(hang) == {"origin": [4], "messenger": [r for r in range(512) if r != 4]}
    assert "rank 4 is the origin: never joined" in hang.summary
    assert "messengers: ranks 0-3, 5-511 (its watchdog timed out in ALLREDUCE SeqNum=2)" in (
        hang.summary
    )
    assert "6, 7, 8" not in hang.summary
    assert len(hang.summary) < 600


def test_ranks_the_launcher_stopped_are_not_origins_when_most_were_stopped(tmp_path: Path) -> None:
    """The real timeout-sleep console with ranks 2 and 3's tracebacks cut (a partial paste).

    Only rank 0's timeout is left; torchrun stopped ranks 1 and 2 (SIGTERM). Two quiet
    ranks against one report: stopping everyone is what the launcher does after a
    failure, so neither is named the origin (rank 3's bare exit 1 is a death of its own).
    """
    real = (GLOO / "timeout-sleep" / "console.log").read_text().splitlines()
    kept = [ln for ln in real if not ln.startswith(("[rank2]", "[rank3]"))]
    (tmp_path / "console.log").write_text("\n".join(kept) + "\n")
    top = _top(diagnose_paths([str(tmp_path / "console.log")]))
    assert _roles(top) == {"origin": [3], "messenger": [0]}
