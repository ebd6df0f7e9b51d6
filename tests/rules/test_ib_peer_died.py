"""Unacknowledged RDMA sends (status 12) to a peer whose worker had died of an error of its own:
the peer was gone, not the path to it, so the death is the cause and the IB error follows it.
Where the first death is itself a network error, or no worker died, the IB error stands."""

from __future__ import annotations

from pathlib import Path

from tests.helpers import diagnose_text

_DIED = (
    "gpu-n03: [rank21]: Traceback (most recent call last):\n"
    'gpu-n03: [rank21]:   File "/data/train.py", line 351, in main\n'
    "gpu-n03: [rank21]:     for step, batch in enumerate(train_loader):\n"
    "gpu-n03: [rank21]: {error}\n"
    "gpu-n03: [2024-05-21 03:11:53,020] [ERROR] [launch.py:325:sigkill_handler] "
    "['/opt/conda/bin/python', '-u', 'train.py', '--local_rank=5'] exits with return code = 1\n"
)
_PEERS = (
    "gpu-n01: [rank3]:[E ProcessGroupNCCL.cpp:1414] [PG 0 Rank 3] Process group watchdog "
    "thread terminated with exception: NCCL error: remote process exited or there was a network "
    "error, NCCL version 2.20.5\n"
    "gpu-n01: ncclRemoteError: A call failed possibly due to a network error or a remote "
    "process exiting prematurely.\n"
    "gpu-n01: Last error:\n"
    "gpu-n01: NET/IB : Got completion from peer 10.10.4.13<37012> with status=12 opcode=0 len=0 "
    "vendor err 129 (Recv) localGid fe80::1270:fd03:2a:9be4 remoteGidsfe80::1270:fd03:2a:a1d0\n"
)
_OWN = "RuntimeError: DataLoader worker (pid 1834422) is killed by signal: Segmentation fault."


def test_a_peer_that_died_of_its_own_error_comes_before_the_ib_error(tmp_path: Path) -> None:
    report = diagnose_text(tmp_path, _DIED.format(error=_OWN) + _PEERS)
    assert [f.id for f in report.findings] == ["launch.rank_crash", "net.ib_transport"]
    first, ib = report.findings
    assert first.root_cause
    assert not ib.root_cause
    assert ib.defers_to == ("launch.rank_crash",)
    assert ib.detail[0].startswith(
        "a worker on gpu-n03 died first of its own error (RuntimeError: DataLoader worker"
    )


def test_the_ib_error_stands_without_a_death_of_its_own(tmp_path: Path) -> None:
    report = diagnose_text(tmp_path, _PEERS)
    assert report.findings[0].id == "net.ib_transport"
    assert report.findings[0].root_cause
    assert report.findings[0].defers_to == ()


def test_a_first_death_of_a_network_error_leaves_the_ib_error_first(tmp_path: Path) -> None:
    nccl = (
        "torch.distributed.DistBackendError: NCCL error in: ProcessGroupNCCL.cpp:1970, remote "
        "process exited or there was a network error, NCCL version 2.20.5"
    )
    report = diagnose_text(tmp_path, _DIED.format(error=nccl) + _PEERS)
    assert report.findings[0].id == "net.ib_transport"
    assert not report.findings[0].defers_to
