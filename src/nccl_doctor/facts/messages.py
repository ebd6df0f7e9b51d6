"""What a rank's own error message says: the launch phase, the watchdog, a peer gone, a timeout.

The launch and app rules judge a rank that died (or raised) by its error:
the last line of a ``ChildFailedError`` entry's traceback, a traceback's
message, a failure's message (:mod:`nccl_doctor.facts.failures`). Those are
typed facts' texts; the words that classify them are read here, so no rule
holds a pattern. :mod:`nccl_doctor.facts.failures` ranks failures into
tiers with its own, broader wording (every cascade and timeout).
"""

from __future__ import annotations

import re

from nccl_doctor.facts.run import PythonTraceback

#: Failure text that belongs to the launch phase (its own rules own it).
_LAUNCH_PHASE = re.compile(
    r"Address already in use|EADDRINUSE|Rendezvous|store based barrier|waiting for clients"
    r"|Timeout waiting for key|TCPStore|DistStoreError",
    re.IGNORECASE,
)
#: What a survivor prints once its peer is gone (facts.failures's cascade text holds these too).
PEER_GONE_TEXT = (
    r"Connection (?:closed|reset) by (?:remote )?peer|Broken pipe|remote process exited"
    r"|communicator (?:was|has been) aborted|Connection was likely closed"
)
_PEER_GONE = re.compile(PEER_GONE_TEXT, re.IGNORECASE)
#: Failure text that is the watchdog tearing down a timed-out rank, or a rank giving up a wait
#: (gloo's recv, monitored_barrier's root or its members: ProcessGroupGloo::monitoredBarrier).
_WATCHDOG = re.compile(
    r"Watchdog caught collective operation timeout|collective operation timeout|"
    r"taking the entire process down|timed out in blocking wait"
    r"|Timed out waiting \d{1,12} ?ms for (?:recv|send) operation|Socket Timeout"
    r"|failed to pass monitoredBarrier|timed out in monitoredBarrier"
    r"|successfully reached monitoredBarrier",
    re.IGNORECASE,
)
_TIMEOUT = re.compile(r"timed out|timeout", re.IGNORECASE)
#: One field of a ``CollectiveFingerPrint(...)``: the op, the shapes, the dtypes, the sequence.
_FINGERPRINT_FIELD = re.compile(
    r"(OpType|TensorShape|TensorDtypes|SequenceNumber)=(\[[^\]]{0,400}\]|[^,\s)]{1,400})"
)
#: torchrun ``--log-dir`` files: ``<run>/attempt_N/<local_rank>/{stdout,stderr}.log``.
TORCHRUN_LOG_FILE = re.compile(r"attempt_\d+/(?P<rank>\d+)/(?:stdout|stderr|error)\.(?:log|json)$")


def launch_phase(message: str) -> bool:
    """Whether an error belongs to the launch phase (the store, the rendezvous, its port)."""
    return bool(_LAUNCH_PHASE.search(message))


def peer_gone(message: str) -> bool:
    """Whether an error only says the peer went away (the connection closed, reset, aborted)."""
    return bool(_PEER_GONE.search(message))


def watchdog_teardown(message: str) -> bool:
    """Whether an error is the watchdog (or a wait) giving up on a timed-out collective."""
    return bool(_WATCHDOG.search(message))


def timed_out(tb: PythonTraceback) -> bool:
    """Whether a traceback's message (all its lines) says the call timed out."""
    return bool(_TIMEOUT.search(f"{tb.message} {' '.join(tb.message_lines)}"))


def fingerprint_fields(fields: str) -> tuple[tuple[str, str], ...]:
    """The ``OpType``/``TensorShape``/``TensorDtypes``/``SequenceNumber`` of a fingerprint's text.

    ``fields`` is what ``CollectiveFingerPrint(`` holds, in the order printed.
    """
    return tuple((k, v) for k, v in _FINGERPRINT_FIELD.findall(fields))


def torchrun_log_file(source: str) -> bool:
    """Whether a source is a file of torchrun's ``--log-dir`` layout."""
    return bool(TORCHRUN_LOG_FILE.search(source))
