"""A process ended by a fatal signal, in a launcher's own sentence or Python's name for it.

The signal's number is Linux's (signal(7)): 6 SIGABRT, 7 SIGBUS, 9 SIGKILL, 11 SIGSEGV; a
shell or container runtime reports it as the exit status 128 + N. The catalogue rows
``system.signal.*`` read the number beside a death verb ("signaled to shutdown with
signal 7", "terminated by signal 9") and Python's ``<Signals.SIGBUS: 7>``. Every case runs
the whole pipeline.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.helpers import diagnose_text


@pytest.mark.parametrize(
    ("line", "label", "first"),
    [
        # text-generation-inference's launcher (its Rust supervisor's sentence)
        (
            (
                "2023-06-12T08:12:55.322Z ERROR text_generation_launcher: Download process was "
                "signaled to shutdown with signal 7"
            ),
            "a rank died of a bus error",
            "nccl.shm",
        ),
        (
            "2023-06-12T08:12:55.322Z ERROR shard-manager: Shard 1 terminated by signal 9",
            "a rank was killed",
            "host.resources",
        ),
        (
            (
                "concurrent.futures.process.BrokenProcessPool: A child process terminated "
                "abruptly; the worker died with <Signals.SIGSEGV: 11>."
            ),
            "a rank crashed",
            "nccl.version_mismatch",
        ),
    ],
)
def test_a_death_by_signal_opens_its_class(
    tmp_path: Path, line: str, label: str, first: str
) -> None:
    report = diagnose_text(tmp_path, "$ text-generation-launcher --num-shard 2\n" + line + "\n")
    lead = report.hypotheses[0]
    assert lead.symptom.startswith(label)
    assert lead.id == first


@pytest.mark.parametrize(
    "line",
    [
        # another number that starts with the same digit; an exit code, not a signal
        "worker 3 terminated by signal 70 (a user-defined handler ran)",
        "the shard exited with code 7 after the download finished",
        # the handler installed, nothing ended
        "INFO installed a handler for signal 7 and signal 11",
    ],
)
def test_other_numbers_and_no_death_open_no_signal_class(tmp_path: Path, line: str) -> None:
    report = diagnose_text(tmp_path, line + "\n")
    assert not any(
        h.symptom.startswith(("a rank died of a bus error", "a rank was killed", "a rank crashed"))
        for h in report.hypotheses
    )


def test_exit_status_135_is_a_bus_error(tmp_path: Path) -> None:
    """128 + 7: what a shell or a container runtime reports for a child SIGBUS ended."""
    from nccl_doctor.differential.symptoms import _signal

    assert _signal(135, None) == "bus_error"
    assert _signal(-7, None) == "bus_error"
    assert _signal(137, None) == "killed"
    assert _signal(1, None) is None
