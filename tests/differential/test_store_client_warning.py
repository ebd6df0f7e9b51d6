"""The c10d store client's warning before it rethrows a request its socket lost.

torch 2.6+ (TCPStore.cpp) logs ``[c10d] recvValue failed on SocketImpl(...): <error>``,
followed by c10::Error's ``Exception raised from recvBytes at ...Utils.hpp:678 (most recent
call first):`` and the C++ frames, then rethrows. Whoever catches decides: a Python
traceback is a failure (the store's host went away: its process ended), the heartbeat
monitor's "should dump" check at exit is routine. The warning and the throw's location line
are notices, never a failure of their own; every case runs the whole pipeline.
"""

from __future__ import annotations

from pathlib import Path

from nccl_doctor.facts.catalogue import harmless_lead, signature_of
from tests.helpers import diagnose_text

WARN = (
    "[rank1]:[W901 07:40:19.968570826 TCPStore.cpp:125] [c10d] recvValue failed on "
    "SocketImpl(fd=64, addr=[localhost]:35986, remote=[localhost]:45489): {error}\n"
    "Exception raised from recvBytes at /pytorch/torch/csrc/distributed/c10d/Utils.hpp:682 "
    "(most recent call first):\n"
    "frame #0: c10::Error::Error(c10::SourceLocation, std::string) + 0x98 (0x7f1c2a36c1b8 in "
    "/usr/local/lib/python3.10/dist-packages/torch/lib/libc10.so)\n"
)
CLOSED = (
    "Failed to recv, got 0 bytes. Connection was likely closed. Did the remote server shutdown "
    "or crash?"
)
EXIT = (
    "[rank0]: epoch 3 step 1200 loss 1.8821\n"
    "[rank0]: training finished, saving checkpoint to /ckpt/final\n"
    "[rank0]:[W901 07:40:18.925407298 ProcessGroupNCCL.cpp:1575] Warning: WARNING: "
    "destroy_process_group() was not called before program exit, which can leak resources. For "
    "more info, please see https://pytorch.org/docs/stable/distributed.html#shutdown (function "
    "operator())\n"
)


def test_the_warning_at_exit_is_routine(tmp_path: Path) -> None:
    report = diagnose_text(tmp_path, EXIT + WARN.format(error=CLOSED))
    assert report.hypotheses == ()
    assert report.findings == ()
    assert "torch.c10d.store_client_op_failed" in [n.signature for n in report.notices]


def test_a_traceback_that_caught_it_is_the_failure(tmp_path: Path) -> None:
    text = WARN.format(error="Broken pipe") + (
        "[rank1]: Traceback (most recent call last):\n"
        '[rank1]:   File "/workspace/train.py", line 211, in <module>\n'
        "[rank1]:     dist.barrier()\n"
        "[rank1]: torch.distributed.DistNetworkError: Broken pipe\n"
    )
    report = diagnose_text(tmp_path, text)
    assert report.hypotheses[0].id == "launch.rank_crash"
    assert report.hypotheses[0].symptom.startswith("a TCP connection between ranks failed")


def test_the_warning_reads_before_the_error_it_quotes() -> None:
    line = WARN.format(error=CLOSED).splitlines()[0]
    sig = harmless_lead(line)
    assert sig is not None
    assert sig.id == "torch.c10d.store_client_op_failed"
    assert signature_of(line) is None
    # the error alone, as the catcher's exception prints it, is still the failure
    assert signature_of(f"torch.distributed.DistNetworkError: {CLOSED}") is not None


def test_the_throws_location_line_is_no_message_of_its_own() -> None:
    line = WARN.splitlines()[1]
    sig = harmless_lead(line)
    assert sig is not None
    assert sig.id == "torch.c10.exception_raised_from"
    # a paste that ran the message and the location into one line keeps its message
    joined = f"RuntimeError: CUDA error: an illegal memory access was encountered {line}"
    found = signature_of(joined)
    assert found is not None
    assert found.id != "torch.c10.exception_raised_from"
