"""Linux signals: numbers, names, the C library's texts, and what an exit code stands for.

One home for the numbering that launchers, shells and Python print (``-9``, ``137``,
``Signals.SIGKILL``, srun's ``Killed``). The numbers are Linux's (fixed: the ``signal``
module is platform-dependent); the texts are glibc's ``strsignal()``.
"""

from __future__ import annotations

#: Linux signal numbers and names (fixed; the ``signal`` module is platform-dependent).
SIGNALS: dict[int, str] = {
    1: "SIGHUP",
    2: "SIGINT",
    3: "SIGQUIT",
    4: "SIGILL",
    5: "SIGTRAP",
    6: "SIGABRT",
    7: "SIGBUS",
    8: "SIGFPE",
    9: "SIGKILL",
    10: "SIGUSR1",
    11: "SIGSEGV",
    12: "SIGUSR2",
    13: "SIGPIPE",
    14: "SIGALRM",
    15: "SIGTERM",
    16: "SIGSTKFLT",
    17: "SIGCHLD",
    18: "SIGCONT",
    19: "SIGSTOP",
    20: "SIGTSTP",
    21: "SIGTTIN",
    22: "SIGTTOU",
    23: "SIGURG",
    24: "SIGXCPU",
    25: "SIGXFSZ",
    26: "SIGVTALRM",
    27: "SIGPROF",
    28: "SIGWINCH",
    29: "SIGIO",
    30: "SIGPWR",
    31: "SIGSYS",
}
SIGNAL_NUMBERS: dict[str, int] = {name: number for number, name in SIGNALS.items()}
#: glibc's strsignal() texts of the signals that end a process, as srun prints them.
STRSIGNAL: dict[str, str] = {
    "Hangup": "SIGHUP",
    "Interrupt": "SIGINT",
    "Quit": "SIGQUIT",
    "Illegal instruction": "SIGILL",
    "Trace/breakpoint trap": "SIGTRAP",
    "Aborted": "SIGABRT",
    "Bus error": "SIGBUS",
    "Floating point exception": "SIGFPE",
    "Killed": "SIGKILL",
    "User defined signal 1": "SIGUSR1",
    "Segmentation fault": "SIGSEGV",
    "User defined signal 2": "SIGUSR2",
    "Broken pipe": "SIGPIPE",
    "Alarm clock": "SIGALRM",
    "Terminated": "SIGTERM",
    "CPU time limit exceeded": "SIGXCPU",
    "File size limit exceeded": "SIGXFSZ",
}
#: The signals an exit code is read as (a negative code, or a shell's 128 + N): the ones that
#: end a job's process (a fault, the OOM killer, an abort) or that a launcher sends it.
_EXIT_SIGNALS = {n: SIGNALS[n] for n in (2, 4, 6, 7, 8, 9, 11, 15)}


def signal_name(exitcode: int | None, given: str | None = None) -> str | None:
    """The signal a negative (or 128+N) exit code stands for; ``given`` where one is."""
    if given:
        return given
    if exitcode is None:
        return None
    if exitcode < 0:
        return _EXIT_SIGNALS.get(-exitcode, f"signal {-exitcode}")
    if 128 < exitcode < 160:
        return _EXIT_SIGNALS.get(exitcode - 128)
    return None


#: Signals that are the launcher (or a scheduler) stopping a process, not a crash.
STOP_SIGNALS = frozenset({"SIGTERM", "SIGINT", "SIGHUP", "SIGUSR1", "SIGUSR2"})
