"""What an exit code stands for: the signal numbering the launchers' and shells' codes use."""

from __future__ import annotations

import pytest

from nccl_doctor.knowledge.signals import SIGNAL_NUMBERS, SIGNALS, STRSIGNAL, signal_name


@pytest.mark.parametrize(
    ("exitcode", "given", "name"),
    [
        (-9, None, "SIGKILL"),  # torchrun's exitcode: -9
        (137, None, "SIGKILL"),  # a shell's 128 + 9
        (-7, None, "SIGBUS"),
        (139, None, "SIGSEGV"),
        (-13, None, "signal 13"),  # a negative code outside the job-ending signals
        (129, None, None),  # 128 + 1 is read as no signal
        (1, None, None),
        (None, None, None),
        (-9, "SIGTERM", "SIGTERM"),  # a name printed beside the code wins
    ],
)
def test_an_exit_code_names_its_signal(exitcode: int | None, given: str | None, name: str) -> None:
    assert signal_name(exitcode, given) == name


def test_the_tables_agree() -> None:
    assert SIGNALS[9] == "SIGKILL"
    assert SIGNAL_NUMBERS["SIGBUS"] == 7
    assert set(STRSIGNAL.values()) <= set(SIGNAL_NUMBERS)
