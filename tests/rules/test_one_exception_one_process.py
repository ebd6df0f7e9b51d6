"""One traceback is one process's error: a second launcher's exit that names only its local
rank does not take the first rank's exception (the logs battery's J46: a second host's
watchdog abort read as a second crash with rank 6's error)."""

from __future__ import annotations

from pathlib import Path

from nccl_doctor.rules.launch._common import deaths
from tests.helpers import critical_ids, diagnose_text, facts_text

_TRACEBACK = (
    "ERROR: Unexpected segmentation fault encountered in worker.\n"
    "[rank6]: Traceback (most recent call last):\n"
    '[rank6]:   File "/opt/conda/lib/python3.11/site-packages/torch/utils/data/_utils/'
    'signal_handling.py", line 73, in handler\n'
    "[rank6]:     _error_if_any_worker_fails()\n"
    "[rank6]: RuntimeError: DataLoader worker (pid 2388104) is killed by signal: Segmentation "
    "fault. \n"
    "[rank6]: \n"
    "[rank6]: The above exception was the direct cause of the following exception:\n"
    "[rank6]: \n"
    "[rank6]: Traceback (most recent call last):\n"
    '[rank6]:   File "/workspace/lm/train.py", line 311, in main\n'
    "[rank6]:     batch = next(train_iter)\n"
    "[rank6]: RuntimeError: DataLoader worker (pid(s) 2388104) exited unexpectedly\n"
)
_FIRST_EXIT = (
    "E0109 02:13:04.218000 2387511 torch/distributed/elastic/multiprocessing/api.py:869] failed "
    "(exitcode: 1) local_rank: 6 (pid: 2387536) of binary: /opt/conda/bin/python\n"
)
_TIMEOUT = (
    "[rank9]:[E109 02:23:03.671204518 ProcessGroupNCCL.cpp:616] [Rank 9] Watchdog caught "
    "collective operation timeout: WorkNCCL(SeqNum=86921, OpType=ALLREDUCE, NumelIn=41943040, "
    "NumelOut=41943040, Timeout(ms)=600000) ran for 600054 milliseconds before timing out.\n"
)
_SECOND_EXIT = (
    "E0109 02:23:07.903000 1180562 torch/distributed/elastic/multiprocessing/api.py:869] failed "
    "(exitcode: {code}) local_rank: 1 (pid: 1180580) of binary: /opt/conda/bin/python\n"
)


def test_a_second_launchers_abort_does_not_take_the_first_ranks_error(tmp_path: Path) -> None:
    text = _TRACEBACK + _FIRST_EXIT + _TIMEOUT + _SECOND_EXIT.format(code=-6)
    found = deaths(facts_text(tmp_path, text))
    # the watchdog's abort on the other host has no error of its own: the hang's teardown
    assert [(d.local_rank, d.exitcode, d.error) for d in found] == [
        (6, 1, "RuntimeError: DataLoader worker (pid(s) 2388104) exited unexpectedly")
    ]
    assert critical_ids(diagnose_text(tmp_path, text))[:1] == ["launch.rank_crash"]


def test_a_second_exit_with_an_error_code_keeps_no_borrowed_error(tmp_path: Path) -> None:
    text = _TRACEBACK + _FIRST_EXIT + _TIMEOUT + _SECOND_EXIT.format(code=1)
    found = deaths(facts_text(tmp_path, text))
    assert [(d.local_rank, d.error) for d in found] == [
        (6, "RuntimeError: DataLoader worker (pid(s) 2388104) exited unexpectedly"),
        (1, None),
    ]


def test_the_same_process_told_twice_keeps_its_error(tmp_path: Path) -> None:
    # the agent's line pasted twice (two views of one log): one process, one error
    text = _TRACEBACK + _FIRST_EXIT + _FIRST_EXIT
    found = deaths(facts_text(tmp_path, text))
    assert {d.error for d in found} == {
        "RuntimeError: DataLoader worker (pid(s) 2388104) exited unexpectedly"
    }
