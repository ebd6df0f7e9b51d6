"""A spawned child that re-ran the main script: CPython's own words for a missing main guard.

With the spawn (or forkserver) start method a child imports the main module again; a script
whose launch code is not under ``if __name__ == "__main__":`` starts processes from inside
that import, and multiprocessing refuses (``_check_not_importing_main`` in
``Lib/multiprocessing/spawn.py``). The job was, in effect, launched inside itself.
"""

from __future__ import annotations

from pathlib import Path

from tests.helpers import diagnose_text

_SPAWN_FRAMES = (
    "[rank0]: Traceback (most recent call last):\n"
    '[rank0]:   File "<string>", line 1, in <module>\n'
    '[rank0]:   File "/usr/lib/python3.10/multiprocessing/spawn.py", line 116, in spawn_main\n'
    "[rank0]:     exitcode = _main(fd, parent_sentinel)\n"
    '[rank0]:   File "/usr/lib/python3.10/multiprocessing/spawn.py", line 125, in _main\n'
    "[rank0]:     prepare(preparation_data)\n"
)


def test_a_child_that_starts_processes_while_importing_main_is_a_nested_launch(
    tmp_path: Path,
) -> None:
    report = diagnose_text(
        tmp_path,
        _SPAWN_FRAMES
        + '[rank0]:   File "/usr/lib/python3.10/multiprocessing/spawn.py", line 134, in '
        "_check_not_importing_main\n"
        "[rank0]:     raise RuntimeError('''\n"
        "[rank0]: RuntimeError: \n"
        "[rank0]:         An attempt has been made to start a new process before the\n"
        "[rank0]:         current process has finished its bootstrapping phase.\n",
    )
    lead = report.hypotheses[0]
    assert lead.id == "launch.duplicate_launch"
    assert any("system.python.spawn_main_unguarded" in why for why in lead.for_)


def test_a_spawned_child_that_fails_in_its_own_work_is_no_nested_launch(tmp_path: Path) -> None:
    report = diagnose_text(
        tmp_path,
        _SPAWN_FRAMES + '[rank0]:   File "/workspace/data.py", line 44, in collate\n'
        '[rank0]:     ids = [s["input_ids"] for s in samples]\n'
        "[rank0]: KeyError: 'input_ids'\n",
    )
    assert report.top(1) != ["launch.duplicate_launch"]
    assert all("spawn_main_unguarded" not in why for h in report.hypotheses for why in h.for_)
