"""torchrun: elastic agent lines, ChildFailedError summaries, ProcessGroupNCCL/c10d messages."""

from __future__ import annotations

from pathlib import Path

import pytest

from nccl_doctor.evidence.lines import lines_of
from nccl_doctor.facts.base import Fact
from nccl_doctor.facts.run import (
    C10dSocketError,
    ChildFailure,
    CollectiveTimeout,
    CudaError,
    CudaOutOfMemory,
    DistributedError,
    LauncherEvent,
    LauncherSignal,
    NcclErrorReport,
    PgEnvironment,
    PgInitOptions,
    PythonTraceback,
    RendezvousTimeout,
    WatchdogState,
    WorkerExit,
)
from nccl_doctor.parse._c10d import CATEGORIES
from nccl_doctor.parse.torchrun import TorchrunParser
from tests.helpers import FORMATS, fixture_text, of_type, parse_stream

EXAMPLE = Path(__file__).parents[2] / "examples" / "h200-cuda-999" / "train.log"


def parse(text: str) -> list[Fact]:
    return parse_stream(TorchrunParser(), text)


def _errors(text: str) -> list[tuple[str, int | None, str | None]]:
    return [(e.category, e.peer_rank, e.detail) for e in of_type(parse(text), DistributedError)]


# -- fixtures --------------------------------------------------------------------
def test_accelerate_sigkill_summary() -> None:
    facts = parse(fixture_text("torchrun/accelerate-deepspeed-sigkill-summary.txt"))
    (failure,) = of_type(facts, ChildFailure)
    assert failure.root_cause is True
    assert failure.script == "src/open_r1/grpo_gsm.py"
    assert (failure.rank, failure.local_rank, failure.index) == (0, 0, 0)
    assert (failure.exitcode, failure.pid) == (-9, 14750)
    assert (failure.signal_number, failure.signal_name) == (9, "SIGKILL")
    assert failure.host == "mlxlab115rp2n7682d40d9-20250521025625-6dyyd3-8nir8b-worker"
    assert failure.time_text == "2025-05-21_15:43:03"
    assert failure.error_file is None
    assert failure.traceback == "Signal 9 (SIGKILL) received by PID 14750"
    assert failure.cite.line == 22
    assert failure.cite.text == "  exitcode  : -9 (pid: 14750)"
    # the exception line and the frames are the traceback kind's, not consumed here
    assert len(facts) == 1


def test_colossalai_old_logging_prefix_sigterm_and_exit() -> None:
    facts = parse(fixture_text("torchrun/colossalai-sigterm-old-logging-prefix.txt"))
    signals = of_type(facts, LauncherSignal)
    assert [(s.action, s.pid, s.signal_name, s.signal_number) for s in signals] == [
        ("send", 812914, "SIGTERM", 15),
        ("send", 812915, "SIGTERM", 15),
        ("send", 812916, "SIGTERM", 15),
    ]
    (exit_,) = of_type(facts, WorkerExit)
    assert exit_.source == "elastic"
    assert (exit_.exitcode, exit_.local_rank, exit_.pid) == (-9, 3, 812917)
    assert exit_.signal_name == "SIGKILL"
    assert exit_.binary == "/data/chenhao/anaconda3/envs/ColossalAI-Chat/bin/python"
    assert exit_.cite.line == 6


def test_glog_prefix_sigterm_and_exitcode_1() -> None:
    facts = parse(fixture_text("torchrun/glog-prefix-sigterm-exitcode1-partial.txt"))
    assert [s.pid for s in of_type(facts, LauncherSignal)] == [33051, 33052, 33053]
    (exit_,) = of_type(facts, WorkerExit)
    assert (exit_.exitcode, exit_.local_rank, exit_.pid) == (1, 3, 33054)
    assert exit_.signal_number is None
    assert exit_.signal_name is None
    assert exit_.binary == "/home/ubuntu/pythonn3.11/bin/python3"
    assert exit_.cite.line == 5


def test_flight_recorder_dump_signal_names_the_first_rank() -> None:
    facts = parse(fixture_text("torchrun/flight-recorder-dump-then-deepspeed-launcher-kill.txt"))
    (state,) = of_type(facts, WatchdogState)
    assert state.event == "dump_signal"
    assert (state.last_enqueued, state.last_completed) == (120055, 120051)
    assert state.rank == 0
    assert state.pg == "ID 0 PG GUID 0(default_pg)"
    errors = of_type(facts, DistributedError)
    assert [(e.category, e.peer_rank, e.cite.line) for e in errors] == [
        ("dump_signal", 4, 1),
        ("dump_preparing", None, 2),
    ]
    assert errors[1].detail == "1"
    (kill,) = of_type(facts, LauncherSignal)
    assert (kill.action, kill.pid, kill.signal_name, kill.cite.line) == ("send", 174644, None, 3)
    assert not any(f.cite.line in (4, 5) for f in facts)  # resource_tracker warnings


def test_watchdog_timeout_glued_to_progress_bar() -> None:
    timeouts = of_type(
        parse(fixture_text("torchrun/watchdog-timeout-glued-to-lightning-progress-bar.txt")),
        CollectiveTimeout,
    )
    assert [(t.rank, t.seq, t.ran_ms) for t in timeouts] == [
        (0, 96120, 25624887),
        (0, 96117, 25625613),
        (0, 96125, 25625593),
        (0, 96125, 25625593),
        (7, 64088, 25625251),
    ]
    assert {(t.op_type, t.timeout_ms) for t in timeouts} == {("ALLREDUCE", 1800000)}
    assert timeouts[0].cite.line == 2
    assert timeouts[0].cite.text.startswith("Epoch 0:")
    assert all(t.numel_in is None and not t.blocking_wait for t in timeouts)


def test_watchdog_timeout_old_format() -> None:
    timeouts = of_type(
        parse(fixture_text("torchrun/watchdog-timeout-old-format-8xv100.txt")), CollectiveTimeout
    )
    assert [t.rank for t in timeouts] == [1, 3, 2, 6, 7]
    assert {t.seq for t in timeouts} == {469508}
    assert [t.ran_ms for t in timeouts] == [1802212, 1802211, 1802212, 1802210, 1802220]
    assert all(t.timeout_ms == 1800000 and t.pg is None and t.pg_rank == t.rank for t in timeouts)


def test_watchdog_timeout_pg_id_guid_two_ranks() -> None:
    facts = parse(fixture_text("torchrun/watchdog-timeout-pg-id-guid-default-pg.txt"))
    timeouts = of_type(facts, CollectiveTimeout)
    assert [(t.rank, t.seq, t.numel_in, t.numel_out, t.timeout_ms, t.ran_ms) for t in timeouts] == [
        (1, 808, 9801523, 9801523, 600000, 600020),
        (0, 808, 9801523, 9801523, 600000, 600030),
    ]
    states = of_type(facts, WatchdogState)
    assert [(s.rank, s.event, s.work_seq, s.last_enqueued, s.last_completed) for s in states] == [
        (1, "exception", 808, 811, 807),
        (0, "exception", 808, 811, 807),
    ]
    assert states[0].pg == "ID 0 PG GUID 0(default_pg)"
    assert states[0].pg_rank == 1


def test_h200_example_pg_environment_and_options() -> None:
    facts = parse(EXAMPLE.read_text(encoding="utf-8", errors="replace"))
    envs = of_type(facts, PgEnvironment)
    assert [(e.cite.line, e.rank, e.nccl_version) for e in envs] == [
        (12, 1, "2.26.2"),
        (14, 0, "2.26.2"),
    ]
    settings = dict(envs[0].settings)
    assert settings["TORCH_NCCL_ASYNC_ERROR_HANDLING"] == "3"
    assert settings["TORCH_NCCL_HEARTBEAT_TIMEOUT_SEC"] == "480"
    assert settings["TORCH_NCCL_LOG_CPP_STACK_ON_UNCLEAN_SHUTDOWN"] == "1"
    assert len(envs[0].settings) == 16
    assert "NCCL version" not in dict(envs[0].settings)
    (options,) = of_type(facts, PgInitOptions)
    assert (options.rank, options.size, options.global_rank) == (0, 4, 0)
    assert (options.timeout_ms, options.pg_name, options.split_from, options.split_color) == (
        600000,
        "0",
        0,
        -2,
    )
    assert options.high_priority_stream is False
    (spawned,) = of_type(facts, WorkerExit)
    assert (spawned.source, spawned.local_rank, spawned.raised, spawned.rank) == (
        "spawn",
        2,
        True,
        2,
    )


# -- inline samples of other versions ------------------------------------------------
OLD_SUMMARY = """\
torch.distributed.elastic.multiprocessing.errors.ChildFailedError:
***************************************
            train.py FAILED
=======================================
Root Cause:
[0]:
  time: 2021-08-05_13:55:03
  rank: 1 (local_rank: 1)
  exitcode: -6 (pid: 27431)
  error_file: <N/A>
  msg: "Signal 6 (SIGABRT) received by PID 27431"
=======================================
Other Failures:
  <NO_OTHER_FAILURES>
***************************************
"""

NEW_SUMMARY = """\
============================================================
train.py FAILED
------------------------------------------------------------
Failures:
[1]:
  time      : 2024-03-01_10:00:01
  host      : node2
  rank      : 9 (local_rank: 1)
  exitcode  : -15 (pid: 4242)
  error_file: <N/A>
  traceback : Signal 15 (SIGTERM) received by PID 4242
------------------------------------------------------------
Root Cause (first observed failure):
[0]:
  time      : 2024-03-01_10:00:00
  host      : node2
  rank      : 8 (local_rank: 0)
  exitcode  : 1 (pid: 4241)
  error_file: /tmp/torchelastic_x/none_abc/attempt_0/0/error.json
  traceback : Traceback (most recent call last):
    File "/opt/conda/lib/python3.10/site-packages/torch/distributed/elastic/multiprocessing/errors/__init__.py", line 346, in wrapper
      return f(*args, **kwargs)
    File "/work/train.py", line 20, in main
      dist.all_reduce(t)
  torch.distributed.DistBackendError: NCCL error in: ../torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:1970, remote process exited or there was a network error, NCCL version 2.19.3
  ncclRemoteError: A call failed possibly due to a network error or a remote process exiting prematurely.
  Last error:
  NET/IB : Got completion from peer 10.0.0.3<41134> with status=12 opcode=0 len=0 vendor err 129 (Recv)

============================================================
after the summary
"""  # noqa: E501


def test_old_torch_1_9_summary() -> None:
    (failure,) = of_type(parse(OLD_SUMMARY), ChildFailure)
    assert failure.script == "train.py"
    assert failure.root_cause is True
    assert (failure.rank, failure.local_rank, failure.exitcode, failure.pid) == (1, 1, -6, 27431)
    assert failure.signal_name == "SIGABRT"
    assert failure.host is None
    assert failure.traceback == "Signal 6 (SIGABRT) received by PID 27431"
    assert failure.cite.line == 9


def test_new_summary_with_other_failures_and_error_file_traceback() -> None:
    facts = parse(NEW_SUMMARY)
    failures = of_type(facts, ChildFailure)
    assert [(f.rank, f.local_rank, f.exitcode, f.root_cause) for f in failures] == [
        (9, 1, -15, False),
        (8, 0, 1, True),
    ]
    other, root = failures
    assert other.signal_name == "SIGTERM"
    assert other.host == "node2"
    assert root.error_file == "/tmp/torchelastic_x/none_abc/attempt_0/0/error.json"
    assert root.traceback == "Traceback (most recent call last):"
    assert root.traceback_lines[-1].startswith("NET/IB : Got completion")
    assert root.signal_number is None
    # the embedded traceback is read as rank 8's traceback
    (tb,) = of_type(facts, PythonTraceback)
    assert tb.rank == 8
    assert tb.host == "node2"
    assert tb.exc_name == "DistBackendError"
    assert tb.innermost == ("/work/train.py", 20, "main")
    assert tb.message_lines[0].startswith("ncclRemoteError:")
    (report,) = of_type(facts, NcclErrorReport)
    assert report.rank == 8
    assert report.reason == "remote process exited or there was a network error"
    assert report.result_name == "ncclRemoteError"
    assert report.nccl_version == "2.19.3"
    assert report.last_error[0].startswith("NET/IB : Got completion")
    assert not any(f.cite.line == 33 for f in facts)


def test_summary_ignores_pytest_and_gtest_failed_lines() -> None:
    text = "[  FAILED  ] Suite.Test (12 ms)\ntests/test_x.py::test_y FAILED\n"
    assert of_type(parse(text), ChildFailure) == []


OLD_OPTIONS = """\
[I ProcessGroupNCCL.cpp:672] [Rank 0] ProcessGroupNCCL initialized with following options:
NCCL_ASYNC_ERROR_HANDLING: 1
NCCL_DESYNC_DEBUG: 0
NCCL_BLOCKING_WAIT: 0
TIMEOUT(ms): 1800000
USE_HIGH_PRIORITY_STREAM: 0
[I ProcessGroupNCCL.cpp:850] [Rank 0] NCCL watchdog thread started!
"""

OPTIONS_2_3 = (
    "[rank3]:[I ProcessGroupNCCL.cpp:851] [PG 0 Rank 3] ProcessGroupNCCL initialization options:"
    " NCCL version: 2.20.5, size: 8, global rank: 3, TORCH_NCCL_ASYNC_ERROR_HANDLING: 1,"
    " TORCH_NCCL_DUMP_ON_TIMEOUT: 0, TIMEOUT(ms): 1800000, USE_HIGH_PRIORITY_STREAM: 0,"
    " TORCH_DISTRIBUTED_DEBUG: OFF, TORCH_NCCL_HEARTBEAT_TIMEOUT_SEC: 600, ID=94366374587328\n"
)


def test_torch_1x_multi_line_options() -> None:
    facts = parse(OLD_OPTIONS)
    (options,) = of_type(facts, PgInitOptions)
    assert (options.rank, options.timeout_ms, options.high_priority_stream) == (0, 1800000, False)
    assert options.cite.line == 1
    (env,) = of_type(facts, PgEnvironment)
    assert dict(env.settings) == {
        "NCCL_ASYNC_ERROR_HANDLING": "1",
        "NCCL_DESYNC_DEBUG": "0",
        "NCCL_BLOCKING_WAIT": "0",
    }


def test_torch_2_3_options_hold_the_environment() -> None:
    facts = parse(OPTIONS_2_3)
    (options,) = of_type(facts, PgInitOptions)
    assert (options.rank, options.size, options.global_rank, options.timeout_ms) == (
        3,
        8,
        3,
        1800000,
    )
    assert options.nccl_version == "2.20.5"
    assert dict(options.options)["ID"] == "94366374587328"
    (env,) = of_type(facts, PgEnvironment)
    assert env.nccl_version == "2.20.5"
    assert dict(env.settings)["TORCH_NCCL_HEARTBEAT_TIMEOUT_SEC"] == "600"


def test_truncated_option_list_is_marked() -> None:
    text = (
        "[PG ID 0 PG GUID 0 Rank 0] ProcessGroupNCCL environments: NCCL version: 2.21.5, TORCH_NC\n"
    )
    (env,) = of_type(parse(text), PgEnvironment)
    assert env.truncated is True
    assert env.settings == ()
    assert env.nccl_version == "2.21.5"


WATCHDOG_2X = """\
[rank25]:[E ProcessGroupNCCL.cpp:1316] [PG 0 Rank 25] Heartbeat monitor timed out! Process will be terminated after dumping debug info. workMetaList_.size()=2
[rank25]:[F ProcessGroupNCCL.cpp:1169] [PG 0 Rank 25] [PG 0 Rank 25] ProcessGroupNCCL's watchdog got stuck for 600 seconds without making progress in monitoring enqueued collectives.
[rank2]:[E ProcessGroupNCCL.cpp:563] [Rank 2] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=57, OpType=BROADCAST, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for 600081 milliseconds before timing out.
[rank2]:[E ProcessGroupNCCL.cpp:1537] [PG 0 Rank 2] Timeout at NCCL work: 57, last enqueued NCCL work: 57, last completed NCCL work: 56.
[rank2]:[E ProcessGroupNCCL.cpp:577] [Rank 2] Some NCCL operations have failed or timed out. Due to the asynchronous nature of CUDA kernels, subsequent GPU operations might run on corrupted/incomplete data.
[rank2]:[E ProcessGroupNCCL.cpp:583] [Rank 2] To avoid data inconsistency, we are taking the entire process down.
[rank3]:[E ProcessGroupNCCL.cpp:1746] [PG ID 0 PG GUID 0(default_pg) Rank 3] Received a dump signal due to a collective timeout from this local rank and we will try our best to dump the debug info. Last enqueued NCCL work: 1, last completed NCCL work: -1.
[rank3]:[E ProcessGroupNCCL.cpp:2106] [PG ID 0 PG GUID 0(default_pg) Rank 3] First PG on this rank to signal dumping.
[rank1]:[E ProcessGroupNCCL.cpp:1595] [PG ID 0 PG GUID 0(default_pg) Rank 1] Stack trace of the failed collective not found, potentially because FlightRecorder is disabled. You can enable it by setting TORCH_NCCL_TRACE_BUFFER_SIZE to a non-zero value.
[rank0]:[E ProcessGroupNCCL.cpp:1562] [PG ID 0 PG GUID 0(default_pg) Rank 0] Finished flight recorder successfully. Output can be analyzed using the fr_trace script.
[rank1]:[E ProcessGroupNCCL.cpp:1858] [PG ID 1 PG GUID 3 Rank 0] Observed flight recorder dump signal from another rank via TCPStore.
[E ProcessGroupNCCL.cpp:915] [Rank 5] NCCL watchdog thread terminated with exception: CUDA error: an illegal memory access was encountered
[E ProcessGroupNCCL.cpp:456] Some NCCL operations have failed or timed out. Due to the asynchronous nature of CUDA kernels, subsequent GPU operations might run on corrupted/incomplete data. To avoid this inconsistency, we are taking the entire process down.
[E ProcessGroupNCCL.cpp:566] [Rank 0] Caught collective operation timeout: WorkNCCL(OpType=ALLREDUCE, TensorShape=[10, 3], Timeout(ms)=1800000) ran for 1800128 milliseconds before timing out.
[E ProcessGroupNCCL.cpp:821] [Rank 1] Work WorkNCCL(SeqNum=3, OpType=ALLGATHER, Timeout(ms)=60000) timed out in blocking wait (TORCH_NCCL_BLOCKING_WAIT=1).
"""  # noqa: E501


def test_watchdog_heartbeat_and_flight_recorder_lines() -> None:
    facts = parse(WATCHDOG_2X)
    errors = of_type(facts, DistributedError)
    assert [(e.cite.line, e.rank, e.category, e.detail, e.peer_rank) for e in errors] == [
        (1, 25, "heartbeat_timeout", None, None),
        (2, 25, "watchdog_stuck", "600", None),
        (6, 2, "process_down", None, None),
        (7, 3, "dump_signal", "this local rank", None),
        (8, 3, "dump_signal_first", None, None),
        (9, 1, "dump_disabled", None, None),
        (10, 0, "dump_finished", None, None),
        (11, 1, "dump_signal_observed", None, None),
        (
            12,
            5,
            "watchdog_terminated",
            "CUDA error: an illegal memory access was encountered",
            None,
        ),
        (13, None, "process_down", None, None),
    ]
    assert (errors[7].rank, errors[7].pg, errors[7].pg_rank) == (1, "ID 1 PG GUID 3", 0)
    timeouts = of_type(facts, CollectiveTimeout)
    assert [(t.rank, t.seq, t.op_type, t.ran_ms, t.blocking_wait) for t in timeouts] == [
        (2, 57, "BROADCAST", 600081, False),
        (0, None, "ALLREDUCE", 1800128, False),
        (1, 3, "ALLGATHER", None, True),
    ]
    assert timeouts[1].tensor_shape == "10, 3"
    states = of_type(facts, WatchdogState)
    assert [(s.rank, s.event, s.work_seq, s.last_enqueued, s.last_completed) for s in states] == [
        (2, "timeout", 57, 57, 56),
        (3, "dump_signal", None, 1, -1),
    ]
    (cuda,) = of_type(facts, CudaError)
    assert (cuda.rank, cuda.kind, cuda.error) == (
        5,
        "cuda_error",
        "an illegal memory access was encountered",
    )


def test_rank_of_a_non_default_group_is_not_taken_as_global() -> None:
    text = (
        "[E ProcessGroupNCCL.cpp:1537] [PG 3 Rank 1] Timeout at NCCL work: 9, "
        "last enqueued NCCL work: 9, last completed NCCL work: 8.\n"
    )
    (state,) = of_type(parse(text), WatchdogState)
    assert (state.rank, state.pg, state.pg_rank) == (None, "3", 1)


STORE = """\
[W socket.cpp:426] [c10d] The server socket has failed to bind to [::]:29500 (errno: 98 - Address already in use).
[E socket.cpp:462] [c10d] The server socket has failed to listen on any local network address.
RuntimeError: The server socket has failed to listen on any local network address. The server socket has failed to bind to [::]:29500 (errno: 98 - Address already in use). The server socket has failed to bind to 0.0.0.0:29500 (errno: 98 - Address already in use).
torch.distributed.DistNetworkError: The server socket has failed to listen on any local network address. port: 29501, useIpv6: 0, code: -98, name: EADDRINUSE, message: address already in use
[W socket.cpp:601] [c10d] The client socket has failed to connect to [node-1.cluster]:29500 (errno: 111 - Connection refused).
torch.distributed.DistNetworkError: The client socket has timed out after 900s while trying to connect to (10.1.2.3, 29500).
[W socket.cpp:697] [c10d] The IPv6 network addresses of (master, 29500) cannot be retrieved (gai error: -2 - Name or service not known).
torch.distributed.DistStoreError: Timed out after 901 seconds waiting for clients. 1/2 clients joined.
RuntimeError: Timed out initializing process group in store based barrier on rank: 0, for key: store_based_barrier_key:1 (world_size=2, worker_count=1, timeout=0:30:00)
torch.distributed.DistBackendError: [2] is setting up NCCL communicator and retrieving ncclUniqueId from [0] via c10d key-value store by key '0', but store->get('0') got error: Connection reset by peer
RuntimeError: Timeout waiting for key: default_pg/0//cuda//0 after 600000 ms
torch.distributed.DistNetworkError: Failed to recv, got 0 bytes. Connection was likely closed. Did the remote server shutdown or crash?
torch.distributed.elastic.rendezvous.api.RendezvousTimeoutError
torch.distributed.elastic.rendezvous.api.RendezvousConnectionError: The connection to the C10d store has failed. See inner exception for details.
ValueError: Error initializing torch.distributed using env:// rendezvous: environment variable MASTER_ADDR expected, but not set
OSError: [Errno 98] Address already in use
"""  # noqa: E501


def test_store_socket_and_rendezvous_errors() -> None:
    facts = parse(STORE)
    sockets = of_type(facts, C10dSocketError)
    got = [
        (s.cite.line, s.role, s.action, s.address, s.port, s.errno, s.error_name) for s in sockets
    ]
    assert got == [
        (1, "server", "bind", "::", 29500, 98, None),
        (2, "server", "listen", None, None, None, None),
        (3, "server", "listen", "::", 29500, 98, None),
        (4, "server", "listen", None, 29501, 98, "EADDRINUSE"),
        (5, "client", "connect", "node-1.cluster", 29500, 111, None),
        (6, "client", "connect_timeout", "10.1.2.3", 29500, None, None),
        (7, "client", "resolve", "master", 29500, -2, None),
    ]
    assert sockets[0].error_text == "Address already in use"
    assert sockets[5].timeout_ms == 900_000
    waits = of_type(facts, RendezvousTimeout)
    assert [(w.kind, w.waited_s, w.joined, w.expected, w.key) for w in waits] == [
        ("clients", 901.0, 1, 2, None),
        ("store_barrier", 1800.0, 1, 2, "store_based_barrier_key:1"),
        ("store_key", 600.0, None, None, "default_pg/0//cuda//0"),
    ]
    assert waits[1].rank == 0
    errors = [
        (e.cite.line, e.category, e.peer_rank, e.detail) for e in of_type(facts, DistributedError)
    ]
    assert errors == [
        (10, "store_get_failed", 0, "Connection reset by peer"),
        (10, "connection_reset", None, None),
        (12, "connection_closed", None, None),
        (12, "recv_failed", None, None),
        (13, "rendezvous_timeout", None, None),
        (14, "rendezvous_connection", None, None),
        (15, "env_missing", None, "MASTER_ADDR"),
        (16, "address_in_use", None, None),
    ]


LAUNCHER = """\
[2024-05-08 08:47:31,261] torch.distributed.elastic.multiprocessing.api: [WARNING] Sending process 5938 closing signal SIGTERM
W0616 00:37:22.830000 4015698 torch/distributed/elastic/agent/server/api.py:719] Received Signals.SIGTERM death signal, shutting down workers
WARNING:torch.distributed.elastic.agent.server.api:Received 1 death signal, shutting down workers
W1030 10:00:00.000000 77 torch/distributed/elastic/multiprocessing/api.py:913] Unable to shutdown process 942213 via 2, forcefully exiting via 9
torch.distributed.elastic.multiprocessing.api.SignalException: Process 4015698 got signal: 15
[2023-01-01 00:00:00,000] [INFO] [launch.py:325:sigkill_handler] Main process received SIGTERM, exiting
[2023-01-01 00:00:00,000] [INFO] [launch.py:316:main] Process 1234 exits with return code = -11
torch.multiprocessing.spawn.ProcessExitedException: process 1 terminated with signal SIGKILL
Exception: process 0 terminated with exit code 1
subprocess.CalledProcessError: Command '['/usr/bin/python', '-u', 'train.py']' died with <Signals.SIGKILL: 9>.
subprocess.CalledProcessError: Command '['/usr/bin/python', 'train.py']' returned non-zero exit status 1.
E0325 20:57:27.620000 2606 site-packages/torch/distributed/elastic/multiprocessing/api.py:869] failed (exitcode: -9) local_rank: 5 (pid: 2630) of binary: /root/miniconda3/bin/python
ERROR:torch.distributed.elastic.multiprocessing.api:failed (exitcode: 1) local_rank: 0 (pid: 11) of fn: main (start_method: spawn)
stderr: WARNING:torch.distributed.elastic.multiprocessing.api:Sending process 153929 closing signal SIGTERM
INFO:torch.distributed.elastic.agent.server.api:[default] Rendezvous complete for workers. Result:
INFO:torch.distributed.elastic.agent.server.api:[default] Worker group FAILED. 3/3 attempts left; will restart worker group
I0101 torch/distributed/elastic/agent/server/api.py:864] Local worker group finished (WorkerState.SUCCEEDED). Waiting 300 seconds for other agents to finish
"""  # noqa: E501


def test_launcher_signals_exits_and_events() -> None:
    facts = parse(LAUNCHER)
    signals = of_type(facts, LauncherSignal)
    assert [(s.cite.line, s.action, s.pid, s.signal_number, s.signal_name) for s in signals] == [
        (1, "send", 5938, 15, "SIGTERM"),
        (2, "received", None, 15, "SIGTERM"),
        (3, "received", None, 1, "SIGHUP"),
        (4, "force_kill", 942213, 9, "SIGKILL"),
        (5, "received", 4015698, 15, "SIGTERM"),
        (6, "received", None, 15, "SIGTERM"),
        (14, "send", 153929, 15, "SIGTERM"),
    ]
    exits = of_type(facts, WorkerExit)
    got = [(e.cite.line, e.source, e.exitcode, e.local_rank, e.pid, e.signal_name) for e in exits]
    assert got == [
        (7, "deepspeed", -11, None, 1234, "SIGSEGV"),
        (8, "spawn", None, 1, None, "SIGKILL"),
        (9, "spawn", 1, 0, None, None),
        (10, "subprocess", None, None, None, "SIGKILL"),
        (11, "subprocess", 1, None, None, None),
        (12, "elastic", -9, 5, 2630, "SIGKILL"),
        (13, "elastic", 1, 0, 11, None),
    ]
    assert exits[-1].binary == "main"
    events = of_type(facts, LauncherEvent)
    assert [(e.event, e.detail) for e in events] == [
        ("rendezvous_complete", None),
        ("worker_group_restart", "3/3"),
        ("worker_group_finished", "SUCCEEDED"),
    ]


# srun's task lines (src/srun/launch.c) and mpirun's (ORTE's help-orterun.txt, PRRTE's
# help-prun.txt, which breaks the sentence before 'signal')
HPC = """\
srun: error: gpu-node-07: task 11: Out Of Memory
srun: error: gpu-node-03: task 5: Bus error (core dumped)
srun: error: gpu-node-03: tasks 0-4,6-7: Exited with exit code 1
srun: error: gpu-node-04: task 9: Terminated
srun: error: Unable to create step for job 4242: Requested node configuration is not available
mpirun noticed that process rank 3 with PID 41234 on node gpu-node-02 exited on signal 9 (Killed).
prterun noticed that process rank 1 with PID 77 on node n2 exited on
signal 7 (Bus error).
prterun noticed that process rank 2 with PID 78 on node n2 exited on
--------------------------------------------------------------------------
"""


def test_srun_and_mpirun_worker_exits() -> None:
    exits = of_type(parse(HPC), WorkerExit)
    got = [(e.cite.line, e.source, e.rank, e.host, e.exitcode, e.pid, e.signal_name) for e in exits]
    assert got == [
        (1, "srun", 11, "gpu-node-07", None, None, "SIGKILL"),
        (2, "srun", 5, "gpu-node-03", None, None, "SIGBUS"),
        (3, "srun", None, "gpu-node-03", 1, None, None),
        (4, "srun", 9, "gpu-node-04", None, None, "SIGTERM"),
        (6, "mpirun", 3, "gpu-node-02", None, 41234, "SIGKILL"),
        (7, "mpirun", 1, "n2", None, 77, "SIGBUS"),
        (9, "mpirun", 2, "n2", None, 78, None),
    ]


MISC = """\
RuntimeError: Detected mismatch between collectives on ranks. Rank 0 is running collective: CollectiveFingerPrint(SequenceNumber=3, OpType=ALLREDUCE), but Rank 1 is running collective: CollectiveFingerPrint(SequenceNumber=3, OpType=ALLGATHER).
RuntimeError: ProcessGroupNCCL is only supported with GPUs, no GPUs found!
Duplicate GPU detected : rank 1 and rank 0 both on CUDA device 1a000
RuntimeError: DDP expects same model across all ranks, but Rank 0 has 200 params, while rank 1 has inconsistent 199 params.
RuntimeError: params[0] in this process with sizes [10, 5] appears not to match sizes of the same param in process 0.
RuntimeError: Expected to have finished reduction in the prior iteration before starting a new one. This error indicates that your module has parameters that were not used in producing loss.
RuntimeError: NCCL communicator was aborted on rank 3.  Original reason for failure was: [Rank 3] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=8, OpType=ALLREDUCE, Timeout(ms)=1800000) ran for 1800424 milliseconds before timing out.
RuntimeError: Default process group has not been initialized, please make sure to call init_process_group.
[W CudaIPCTypes.cpp:15] Could not acquire GIL within 300 ms on exit, possible GIL induced hang
"""  # noqa: E501


def test_misc_distributed_errors() -> None:
    facts = parse(MISC)
    errors = [
        (e.cite.line, e.category, e.peer_rank, e.detail) for e in of_type(facts, DistributedError)
    ]
    assert errors == [
        (1, "collective_mismatch", None, None),
        (2, "no_gpus", None, None),
        (3, "duplicate_gpu", 0, "1a000"),
        (4, "ddp_param_mismatch", None, None),
        (5, "ddp_param_mismatch", 0, None),
        (6, "ddp_unused_params", None, None),
        (7, "comm_aborted", 3, None),
        (8, "pg_not_initialized", None, None),
        (9, "gil_hang", None, None),
    ]
    (timeout,) = of_type(facts, CollectiveTimeout)
    assert (timeout.rank, timeout.seq, timeout.ran_ms) == (3, 8, 1800424)
    assert {e[1] for e in errors} <= set(CATEGORIES)


NCCL_GLOG = """\
[E ProcessGroupNCCL.cpp:1234] [Rank 0] NCCL watchdog thread terminated with exception: NCCL error: unhandled system error (run with NCCL_DEBUG=INFO for details), NCCL version 2.21.5
ncclSystemError: System call (e.g. socket, malloc) or external library call failed or device error.
Last error:
socketProgress: Connection closed by remote peer node3<52842>
[E ProcessGroupNCCL.cpp:1240] [Rank 0] something else
RuntimeError: NCCL Error 2: unhandled system error
"""  # noqa: E501


def test_nccl_error_report_with_continuation_lines() -> None:
    facts = parse(NCCL_GLOG)
    reports = of_type(facts, NcclErrorReport)
    assert [
        (r.cite.line, r.reason, r.result_name, r.result_code, r.nccl_version) for r in reports
    ] == [
        (1, "unhandled system error", "ncclSystemError", None, "2.21.5"),
        (6, "unhandled system error", "ncclSystemError", 2, None),
    ]
    assert reports[0].rank == 0
    assert reports[0].last_error == (
        "socketProgress: Connection closed by remote peer node3<52842>",
    )
    assert ("watchdog_terminated", 1) in [
        (e.category, e.cite.line) for e in of_type(facts, DistributedError)
    ]


def test_cuda_messages_and_oom_in_launcher_lines() -> None:
    text = (
        "/opt/conda/lib/python3.10/site-packages/torch/cuda/__init__.py:128: UserWarning: "
        "CUDA initialization: Unexpected error from cudaGetDeviceCount(). Did you run some "
        "cuda functions before calling NumCudaDevices() that might have already set the error? "
        "Error 802: system not yet initialized "
        "(Triggered internally at ../c10/cuda/CUDAFunctions.cpp:108.)\n"
        "[rank1]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. "
        "GPU 1 has a total capacity of 79.15 GiB of which 1.12 GiB is free. "
        "Process 12345 has 3.20 GiB memory in use. Including non-PyTorch memory, "
        "this process has 74.02 GiB memory in use. Of the allocated memory 70.10 GiB "
        "is allocated by PyTorch, and 1.50 GiB is reserved by PyTorch but unallocated.\n"
    )
    facts = parse(text)
    (init,) = of_type(facts, CudaError)
    assert (init.kind, init.code, init.error) == ("init", 802, "system not yet initialized")
    (oom,) = of_type(facts, CudaOutOfMemory)
    assert (oom.rank, oom.gpu_index, oom.tried_mib, oom.free_mib) == (1, 1, 2048.0, 1146.88)
    assert oom.total_mib == pytest.approx(81049.6)
    assert oom.other_processes == ((12345, 3276.8),)
    assert (oom.process_mib, oom.allocated_mib, oom.reserved_mib) == (75796.48, 71782.4, 73318.4)


# -- negatives ----------------------------------------------------------------------
def test_other_kinds_are_not_consumed() -> None:
    for kind in (
        "nvidia-smi",
        "nvidia-smi-q",
        "ibstat",
        "xid",
        "topo",
        "nccl-tests",
        "collect_env",
    ):
        for path in sorted((FORMATS / kind).glob("*")):
            text = path.read_bytes().decode("utf-8", errors="replace")
            parser = TorchrunParser()
            for line in lines_of(text, path.name):
                if parser.open or any(a in line.raw for a in parser.anchors):
                    assert not parser.feed(line), (path.name, line.raw)
            assert parser.take() + parser.finish() == [], path.name


def test_prose_is_not_taken() -> None:
    text = "The job FAILED because of a bad config\nsee the torchrun docs for rendezvous options\n"
    assert parse(text) == []


@pytest.mark.parametrize(
    "text",
    [
        *(
            p.read_bytes().decode("utf-8", errors="replace")
            for p in sorted((FORMATS / "torchrun").glob("*.txt"))
        ),
        EXAMPLE.read_text(encoding="utf-8", errors="replace"),
        OLD_SUMMARY,
        NEW_SUMMARY,
        OLD_OPTIONS,
        WATCHDOG_2X,
        STORE,
        LAUNCHER,
        MISC,
        NCCL_GLOG,
    ],
)
def test_anchors_lose_nothing(text: str) -> None:
    """Fed only the anchored lines (as the reader does) or every line: the same facts."""
    every = TorchrunParser()
    facts: list[Fact] = []
    for line in lines_of(text):
        every.feed(line)
        facts.extend(every.take())
    facts.extend(every.finish())
    assert parse(text) == facts


def test_client_connect_prefers_the_attempt_that_printed_an_errno() -> None:
    text = (
        "torch.distributed.DistNetworkError: The client socket has failed to connect to any "
        "network address of (master, 29500). The client socket has failed to connect to "
        "[master]:29500 (errno: 113 - No route to host).\n"
        "[c10d] TCPStore client failed to connect/validate to host 10.0.0.1:29500 - retrying "
        "(try=0, timeout=900000ms, delay=1234ms): The client socket has failed to connect to "
        "[10.0.0.1]:29500 (errno: 111 - Connection refused).\n"
    )
    sockets = of_type(parse(text), C10dSocketError)
    assert [(s.address, s.port, s.errno, s.error_text) for s in sockets] == [
        ("master", 29500, 113, "No route to host"),
        ("10.0.0.1", 29500, 111, "Connection refused"),
    ]


def test_an_option_list_every_rank_prints_is_parsed_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every rank prints the same environment list per process group: its ``key: value`` items
    are parsed once per distinct text (a bounded cache), while each rank's facts keep their
    own rank, host, group and citation."""
    from nccl_doctor.parse import _c10d

    _c10d._option_list_of.cache_clear()
    parsed: list[str] = []
    real = _c10d.option_items

    def counting(text: str) -> tuple[list[tuple[str, str]], bool]:
        parsed.append(text)
        return real(text)

    monkeypatch.setattr(_c10d, "option_items", counting)
    env = (
        "ProcessGroupNCCL environments: NCCL version: 2.21.5, "
        "TORCH_NCCL_ASYNC_ERROR_HANDLING: 3, TORCH_NCCL_BLOCKING_WAIT: 0"
    )
    init = (
        "ProcessGroupNCCL initialization options: size: 64, global rank: {r}, "
        "TIMEOUT(ms): 600000, SPLIT_COLOR: 1, PG Name: 2"
    )
    text = "\n".join(
        f"[rank{r}]:[I1106 01:00:00.1 ProcessGroupNCCL.cpp:914] [PG ID 2 PG GUID 2(dp) Rank {r}] "
        + (env if kind == "env" else init.format(r=r))
        for r in range(32)
        for kind in ("env", "init")
    )
    facts = parse(text)
    assert len(parsed) == 1 + 32  # the environment list once, each rank's options once
    envs = of_type(facts, PgEnvironment)
    assert [(e.rank, e.pg, e.pg_rank, e.cite.line) for e in envs] == [
        (r, "ID 2 PG GUID 2(dp)", r, 2 * r + 1) for r in range(32)
    ]
    assert {e.settings for e in envs} == {
        (("TORCH_NCCL_ASYNC_ERROR_HANDLING", "3"), ("TORCH_NCCL_BLOCKING_WAIT", "0"))
    }
    assert {e.nccl_version for e in envs} == {"2.21.5"}
    options = of_type(facts, PgInitOptions)
    assert [(o.rank, o.global_rank, o.size, o.timeout_ms, o.pg_name) for o in options] == [
        (r, r, 64, 600000, "2") for r in range(32)
    ]


@pytest.mark.parametrize(
    ("line", "rank", "waited_s"),
    [
        (
            (
                "I0510 07:28:04.417845 139863945226048 distributed_c10d.py:337] Waiting in store "
                "based barrier to initialize process group for rank: 2, key: "
                "store_based_barrier_key:1 (world_size=8, worker_count=7, timeout=0:30:00)"
            ),
            2,
            None,
        ),
        (
            (
                "[rank3]:I1203 07:28:14.521000 4431 torch/distributed/distributed_c10d.py:1068] "
                "Waiting in store based barrier to initialize process group for 10.0141 "
                "secondsrank: 3, key: store_based_barrier_key:1 (world_size=8, "
                "num_workers_joined=7, timeout=0:30:00 error=Wait timeout)"
            ),
            3,
            10.0141,
        ),
    ],
)
def test_the_store_barriers_waiting_notice_is_its_state(
    line: str, rank: int, waited_s: float | None
) -> None:
    """torch 1.x's and 2.x's notice while the barrier waits: who waits, how many joined; the
    timeout it prints is the limit, not the time waited (2.x says that first)."""
    (tmo,) = of_type(parse(line + "\n"), RendezvousTimeout)
    assert (tmo.kind, tmo.rank, tmo.joined, tmo.expected) == ("store_barrier", rank, 7, 8)
    assert tmo.key == "store_based_barrier_key:1"
    assert tmo.waited_s == waited_s
