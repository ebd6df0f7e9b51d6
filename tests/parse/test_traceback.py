"""traceback: Python tracebacks, chains, interleaved ranks, bare exception lines, C++ terminate."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from nccl_doctor.evidence.intake import Opened
from nccl_doctor.evidence.lines import lines_of
from nccl_doctor.evidence.reader import read_opened
from nccl_doctor.facts.base import Fact
from nccl_doctor.facts.gpu import GpuProcess
from nccl_doctor.facts.run import (
    ChildFailure,
    CollectiveTimeout,
    CppException,
    CudaError,
    CudaOutOfMemory,
    DistributedError,
    NcclErrorReport,
    PythonTraceback,
    RendezvousTimeout,
    WorkerExit,
)
from nccl_doctor.parse.traceback import TracebackParser
from tests.helpers import FORMATS, fixture_text, of_type, parse_stream

EXAMPLE = Path(__file__).parents[2] / "examples" / "h200-cuda-999" / "train.log"


def parse(text: str) -> list[Fact]:
    return parse_stream(TracebackParser(), text)


def tracebacks(text: str) -> list[PythonTraceback]:
    return of_type(parse(text), PythonTraceback)


def read(text: str) -> list[Fact]:
    """Facts of every parser, dispatched by the real reader."""
    data = text.encode()
    sections, _ = read_opened(Opened("t.log", io.BytesIO(data), len(data), None), [])
    return [fact for section in sections for fact in section.facts]


# -- fixtures ------------------------------------------------------------------------
def test_h200_spawn_traceback_with_multi_line_nccl_message() -> None:
    facts = parse(EXAMPLE.read_text(encoding="utf-8", errors="replace"))
    (tb,) = of_type(facts, PythonTraceback)
    assert tb.rank == 2
    assert tb.exc_type == "torch.distributed.DistBackendError"
    assert tb.exc_name == "DistBackendError"
    assert tb.message.startswith(
        "NCCL error in: /pytorch/torch/csrc/distributed/c10d/NCCLUtils.cpp:77"
    )
    assert tb.message_lines == (
        "ncclUnhandledCudaError: Call to CUDA function failed.",
        "Last error:",
        "Cuda failure 999 'unknown error",
    )
    assert (tb.start_line, tb.cite.line, tb.has_traceback, tb.truncated) == (80, 92, True, False)
    assert [f[2] for f in tb.frames] == [
        "_wrap",
        "run",
        "__init__",
        "_verify_param_shape_across_processes",
    ]
    assert tb.frames[1] == (
        "/data0/Sougata/TTS/zipvoice_trial/ZipVoice/zipvoice/bin/train_zipvoice.py",
        943,
        "run",
    )
    assert tb.innermost == (
        "/home/ubuntu/anaconda3/envs/zip/lib/python3.13/site-packages/torch/distributed/utils.py",
        282,
        "_verify_param_shape_across_processes",
    )
    (report,) = of_type(facts, NcclErrorReport)
    assert (report.rank, report.reason, report.result_name, report.nccl_version) == (
        2,
        "unhandled cuda error",
        "ncclUnhandledCudaError",
        "2.26.2",
    )
    assert (report.torch_file, report.torch_line) == (
        "/pytorch/torch/csrc/distributed/c10d/NCCLUtils.cpp",
        77,
    )
    assert report.last_error == ("Cuda failure 999 'unknown error",)
    (cuda,) = of_type(facts, CudaError)
    assert (cuda.kind, cuda.code, cuda.error, cuda.cite.line, cuda.rank) == (
        "cuda_failure",
        999,
        "unknown error",
        95,
        2,
    )


def test_h200_through_the_reader_each_line_once() -> None:
    facts = read(EXAMPLE.read_text(encoding="utf-8", errors="replace"))
    assert len(of_type(facts, PythonTraceback)) == 1
    assert len(of_type(facts, NcclErrorReport)) == 1
    assert len(of_type(facts, CudaError)) == 1
    assert [w.local_rank for w in of_type(facts, WorkerExit)] == [2]


def test_accelerate_fixture_pasted_from_its_first_frame() -> None:
    """The paste starts at a frame (its header cut off): still a traceback, frames kept."""
    (tb,) = tracebacks(fixture_text("torchrun/accelerate-deepspeed-sigkill-summary.txt"))
    assert tb.exc_type == "torch.distributed.elastic.multiprocessing.errors.ChildFailedError"
    assert tb.message == ""
    assert tb.has_traceback is True
    assert tb.start_line == 1
    assert [f[2] for f in tb.frames] == ["deepspeed_launcher", "run", "__call__", "launch_agent"]
    assert tb.innermost is not None
    assert tb.innermost[1] == 269
    assert tb.cite.line == 10


def test_accelerate_fixture_summary_reaches_torchrun_through_the_reader() -> None:
    facts = read(fixture_text("torchrun/accelerate-deepspeed-sigkill-summary.txt"))
    assert [(f.exitcode, f.pid) for f in of_type(facts, ChildFailure)] == [(-9, 14750)]
    assert len(of_type(facts, PythonTraceback)) == 1


@pytest.mark.parametrize(
    ("relative", "start", "last", "innermost"),
    [
        ("torchrun/colossalai-sigterm-old-logging-prefix.txt", 7, 15, ("run.py", 753, "run")),
        ("torchrun/glog-prefix-sigterm-exitcode1-partial.txt", 6, 14, ("run.py", 883, "run")),
    ],
)
def test_traceback_cut_before_its_exception(
    relative: str, start: int, last: int, innermost: tuple[str, int, str]
) -> None:
    (tb,) = tracebacks(fixture_text(relative))
    assert tb.exc_type is None
    assert tb.exc_name is None
    assert (tb.start_line, tb.cite.line, tb.truncated) == (start, last, True)
    assert len(tb.frames) == 4
    assert tb.frames[0][2] == "<module>"
    assert tb.innermost is not None
    assert (tb.innermost[0].rsplit("/", 1)[-1], *tb.innermost[1:]) == innermost


@pytest.mark.parametrize("cut", ["  File", "[...]", "..."])
def test_frames_cut_by_the_person_who_pasted_them_keep_the_exception(cut: str) -> None:
    text = (
        "Traceback (most recent call last):\n"
        '  File "/w/train_net.py", line 68, in build_train_loader\n'
        "    return build_detection_train_loader(cfg, mapper=mapper)\n"
        f"{cut}\n"
        "KeyError: \"Dataset 'xxxx-train' is not registered!\"\n"
    )
    (tb,) = tracebacks(text)
    assert (tb.exc_name, tb.cite.line, tb.truncated) == ("KeyError", 5, True)
    assert tb.message == "\"Dataset 'xxxx-train' is not registered!\""
    assert len(tb.frames) == 1


# -- inline samples ----------------------------------------------------------------------
INTERLEAVED = """\
[rank0]:Traceback (most recent call last):
[rank1]:Traceback (most recent call last):
[rank0]:  File "/w/train.py", line 10, in <module>
[rank1]:  File "/w/train.py", line 10, in <module>
[rank0]:    main()
[rank1]:    main()
[rank1]:  File "/w/train.py", line 7, in main
[rank1]:    dist.barrier()
[rank0]:  File "/w/train.py", line 5, in main
[rank0]:    x = model(batch)
[rank0]:        ^^^^^^^^^^^^
[rank1]:torch.distributed.DistBackendError: [1] is setting up NCCL communicator and retrieving ncclUniqueId from [0] via c10d key-value store by key '0', but store->get('0') got error: Connection reset by peer
[rank0]:torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 20.00 MiB. GPU 0 has a total capacity of 79.10 GiB of which 6.56 MiB is free. Process 991 has 40.00 GiB memory in use. Process 992 has 39.00 GiB memory in use.
[rank1]:Exception raised from recvBytes at ../torch/csrc/distributed/c10d/Utils.hpp:670 (most recent call first):
[rank1]:frame #0: c10::Error::Error(c10::SourceLocation, std::string) + 0x57 (0x7f in /usr/lib/libc10.so)
[rank0]:
[rank1]:
W0801 13:23:17.366000 32974 torch/distributed/elastic/multiprocessing/api.py:900] Sending process 33051 closing signal SIGTERM
"""  # noqa: E501


def test_interleaved_ranks_keep_one_traceback_each() -> None:
    facts = parse(INTERLEAVED)
    tbs = of_type(facts, PythonTraceback)
    assert sorted((t.rank, t.exc_name, t.cite.line) for t in tbs) == [
        (0, "OutOfMemoryError", 13),
        (1, "DistBackendError", 12),
    ]
    by_rank = {t.rank: t for t in tbs}
    assert by_rank[0].innermost == ("/w/train.py", 5, "main")
    assert by_rank[1].innermost == ("/w/train.py", 7, "main")
    assert by_rank[1].cpp_stack is True
    assert by_rank[1].message_lines == ()
    assert by_rank[0].start_line == 1
    assert by_rank[1].start_line == 2
    (oom,) = of_type(facts, CudaOutOfMemory)
    assert (oom.rank, oom.gpu_index, oom.tried_mib, oom.free_mib) == (0, 0, 20.0, 6.56)
    assert oom.other_processes == ((991, 40960.0), (992, 39936.0))
    assert [(e.rank, e.category, e.peer_rank) for e in of_type(facts, DistributedError)] == [
        (1, "store_get_failed", 0),
        (1, "connection_reset", None),
    ]
    assert not any(f.cite.line == 18 for f in facts)


def test_interleaved_lines_of_other_ranks_are_left_to_others() -> None:
    parser = TracebackParser()
    lines = lines_of(INTERLEAVED)
    taken = [parser.feed(line) for line in lines]
    assert all(taken[:17])
    assert taken[17] is False  # the launcher line goes on to the torchrun parser


CHAINED = """\
Traceback (most recent call last):
  File "/w/a.py", line 3, in f
    dist.all_reduce(t)
RuntimeError: NCCL communicator was aborted on rank 1.

During handling of the above exception, another exception occurred:

Traceback (most recent call last):
  File "/w/a.py", line 9, in <module>
    f()
  File "/w/a.py", line 5, in f
    raise SystemExit(3) from None
SystemExit: 3

after
"""


def test_chained_exceptions_fold_into_the_last() -> None:
    facts = parse(CHAINED)
    (tb,) = of_type(facts, PythonTraceback)
    assert (tb.exc_type, tb.message, tb.cite.line, tb.start_line) == ("SystemExit", "3", 13, 1)
    assert tb.causes == (("RuntimeError", "NCCL communicator was aborted on rank 1."),)
    assert [f[1] for f in tb.frames] == [9, 5]
    assert [(e.category, e.peer_rank) for e in of_type(facts, DistributedError)] == [
        ("comm_aborted", 1)
    ]


BARE = """\
RuntimeError: NCCL error in: /opt/pytorch/pytorch/torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:1287, invalid usage, NCCL version 2.17.1
ncclInvalidUsage: This usually reflects invalid usage of NCCL library.
Last error:
Duplicate GPU detected : rank 1 and rank 0 both on CUDA device 1a000

Error: something went wrong in the config
The Error: should not be read
ncclSystemError: System call (e.g. socket, malloc) or external library call failed or device error.
ValueError: invalid literal for int() with base 10: 'x'
ValueError: Error initializing torch.distributed using env:// rendezvous: environment variable RANK expected, but not set
"""  # noqa: E501


def test_bare_exception_lines_of_the_distributed_stack() -> None:
    facts = parse(BARE)
    tbs = of_type(facts, PythonTraceback)
    assert [(t.cite.line, t.exc_type, t.has_traceback) for t in tbs] == [
        (1, "RuntimeError", False),
        (10, "ValueError", False),
    ]
    assert (
        tbs[0].message_lines[-1]
        == "Duplicate GPU detected : rank 1 and rank 0 both on CUDA device 1a000"
    )
    (report,) = of_type(facts, NcclErrorReport)
    assert (report.reason, report.result_name, report.torch_line) == (
        "invalid usage",
        "ncclInvalidUsage",
        1287,
    )
    assert report.last_error == (
        "Duplicate GPU detected : rank 1 and rank 0 both on CUDA device 1a000",
    )
    errors = [(e.cite.line, e.category, e.detail) for e in of_type(facts, DistributedError)]
    assert errors == [(4, "duplicate_gpu", "1a000"), (10, "env_missing", "RANK")]


CPP = """\
terminate called after throwing an instance of 'c10::DistBackendError'
  what():  [PG ID 0 PG GUID 0(default_pg) Rank 3] Process group watchdog thread terminated with exception: [Rank 3] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=2, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=60000) ran for 60004 milliseconds before timing out.
Exception raised from checkTimeout at /pytorch/torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:618 (most recent call first):
frame #0: c10::Error::Error(c10::SourceLocation, std::string) + 0x96 (0x7f3 in /usr/lib/libc10.so)
frame #1: <unknown function> + 0x5d8 (0x7f4 in /usr/lib/libtorch_cuda.so)

Fatal Python error: Aborted
"""  # noqa: E501


def test_cpp_terminate_report() -> None:
    facts = parse(CPP)
    (cpp,) = of_type(facts, CppException)
    assert cpp.exc_type == "c10::DistBackendError"
    assert cpp.message.startswith("[PG ID 0 PG GUID 0(default_pg) Rank 3] Process group watchdog")
    assert cpp.cpp_stack is True
    assert cpp.cite.line == 1
    (timeout,) = of_type(facts, CollectiveTimeout)
    assert (timeout.rank, timeout.seq, timeout.timeout_ms, timeout.ran_ms) == (3, 2, 60000, 60004)
    assert [e.category for e in of_type(facts, DistributedError)] == ["watchdog_terminated"]
    assert of_type(facts, PythonTraceback) == []


ASSERT = """\
/pytorch/aten/src/ATen/native/cuda/Loss.cu:240: nll_loss_forward_reduce_cuda_kernel_2d: block: [0,0,0], thread: [5,0,0] Assertion `t >= 0 && t < n_classes` failed.
Traceback (most recent call last):
  File "/w/t.py", line 2, in <module>
    loss.item()
RuntimeError: CUDA error: device-side assert triggered
CUDA kernel errors might be asynchronously reported at some other API call, so the stacktrace below might be incorrect.
For debugging consider passing CUDA_LAUNCH_BLOCKING=1
Compile with `TORCH_USE_CUDA_DSA` to enable device-side assertions.

CUDA error: an illegal memory access was encountered
"""  # noqa: E501


def test_device_side_assert_and_cuda_messages() -> None:
    facts = parse(ASSERT)
    cuda = of_type(facts, CudaError)
    assert [(c.cite.line, c.kind, c.error) for c in cuda] == [
        (1, "device_assert", "device-side assert triggered"),
        (5, "cuda_error", "device-side assert triggered"),
        (6, "async_note", None),
        (10, "cuda_error", "an illegal memory access was encountered"),
    ]
    assert cuda[0].assertion == "t >= 0 && t < n_classes"
    assert cuda[0].kernel_file == "/pytorch/aten/src/ATen/native/cuda/Loss.cu"
    (tb,) = of_type(facts, PythonTraceback)
    assert tb.message == "CUDA error: device-side assert triggered"
    assert len(tb.message_lines) == 3


def test_old_torch_oom_wording() -> None:
    text = (
        "RuntimeError: CUDA out of memory. Tried to allocate 20.00 MiB (GPU 0; 10.76 GiB total "
        "capacity; 9.62 GiB already allocated; 11.44 MiB free; "
        "9.85 GiB reserved in total by PyTorch)\n"
    )
    (oom,) = of_type(parse(text), CudaOutOfMemory)
    assert (oom.gpu_index, oom.tried_mib, oom.free_mib) == (0, 20.0, 11.44)
    assert (oom.total_mib, oom.allocated_mib, oom.reserved_mib) == (11018.24, 9850.88, 10086.4)
    assert oom.other_processes == ()


def test_message_stops_at_a_glog_or_launcher_line() -> None:
    text = (
        "RuntimeError: NCCL communicator was aborted.\n"
        "[E ProcessGroupNCCL.cpp:737] [Rank 1] Watchdog caught collective operation timeout\n"
        "torch.distributed.DistStoreError: Socket Timeout\n"
        "INFO:torch.distributed.elastic.agent.server.api:Done waiting\n"
    )
    tbs = tracebacks(text)
    assert [(t.cite.line, t.message_lines) for t in tbs] == [(1, ()), (3, ())]


_SMI = EXAMPLE.with_name("nvidia-smi.txt")


@pytest.mark.parametrize("between", ["", "$ nvidia-smi\n", "alice@node7:~/run$ nvidia-smi\n"])
def test_a_table_pasted_right_below_ends_the_message(between: str) -> None:
    # the example's traceback, then (no blank line) a prompt or straight the nvidia-smi table
    train = EXAMPLE.read_text(encoding="utf-8")
    text = train + between + _SMI.read_text(encoding="utf-8")
    (tb,) = tracebacks(text)
    assert tb.message_lines == (
        "ncclUnhandledCudaError: Call to CUDA function failed.",
        "Last error:",
        "Cuda failure 999 'unknown error",
    )
    data = text.encode()
    sections, _ = read_opened(Opened("t.log", io.BytesIO(data), len(data), None), [])
    smi_start = train.count("\n") + between.count("\n") + 1
    smi = [(s.start, s.end) for s in sections if s.kind == "nvidia-smi"]
    assert smi == [(smi_start, smi_start + 14)]
    assert len(of_type(read(text), GpuProcess)) == 9


def test_pipes_inside_a_message_line_do_not_end_it() -> None:
    text = "RuntimeError: bad value\n  expected a | b, got c |\n| b is not a table row\n"
    (tb,) = tracebacks(text)
    assert tb.message_lines == ("expected a | b, got c |", "| b is not a table row")


def test_stale_report_is_closed_so_the_reader_can_skip_again() -> None:
    parser = TracebackParser()
    lines = lines_of(
        'Traceback (most recent call last):\n  File "a.py", line 1, in f\n' + "[rank3]: x\n" * 2100
    )
    for line in lines:
        parser.feed(line)
    assert not parser.open
    (tb,) = of_type(parser.take(), PythonTraceback)
    assert (tb.exc_type, tb.frames, tb.cite.line) == (None, (("a.py", 1, "f"),), 2)


# -- negatives ------------------------------------------------------------------------
def test_other_kinds_are_not_consumed() -> None:
    for kind in ("nvidia-smi", "nvidia-smi-q", "ibstat", "xid", "topo", "nccl-tests", "nccl-log"):
        for path in sorted((FORMATS / kind).glob("*")):
            text = path.read_bytes().decode("utf-8", errors="replace")
            parser = TracebackParser()
            for line in lines_of(text, path.name):
                if parser.open or any(a in line.raw for a in parser.anchors):
                    assert not parser.feed(line), (path.name, line.raw)
            assert parser.take() + parser.finish() == [], path.name


@pytest.mark.parametrize(
    "text",
    [
        *(
            p.read_bytes().decode("utf-8", errors="replace")
            for p in sorted((FORMATS / "torchrun").glob("*.txt"))
        ),
        EXAMPLE.read_text(encoding="utf-8", errors="replace"),
        INTERLEAVED,
        CHAINED,
        BARE,
        CPP,
        ASSERT,
    ],
)
def test_anchors_lose_nothing(text: str) -> None:
    """Fed only the anchored lines (as the reader does) or every line: the same facts."""
    every = TracebackParser()
    facts: list[Fact] = []
    for line in lines_of(text):
        every.feed(line)
        facts.extend(every.take())
    facts.extend(every.finish())
    assert parse(text) == facts


SPAWN = """\
Traceback (most recent call last):
  File "/w/main.py", line 50, in <module>
    mp.spawn(run, args=(2,), nprocs=2, join=True)
  File "/opt/torch/multiprocessing/spawn.py", line 158, in join
    raise ProcessRaisedException(msg, error_index, failed_process.pid)
torch.multiprocessing.spawn.ProcessRaisedException: 

-- Process 1 terminated with the following error:
Traceback (most recent call last):
  File "/opt/torch/multiprocessing/spawn.py", line 69, in _wrap
    fn(i, *args)
  File "/w/main.py", line 20, in run
    dist.init_process_group("nccl", rank=rank, world_size=2)
torch.distributed.DistStoreError: Timed out after 901 seconds waiting for clients. 1/2 clients joined.
"""  # noqa: E501, W291


def test_spawn_outer_and_inner_tracebacks() -> None:
    facts = read(SPAWN)
    outer, inner = sorted(of_type(facts, PythonTraceback), key=lambda t: t.cite.line)
    assert (outer.exc_name, outer.message, outer.rank, outer.cite.line) == (
        "ProcessRaisedException",
        "",
        None,
        6,
    )
    assert (inner.exc_name, inner.rank, inner.start_line, inner.cite.line) == (
        "DistStoreError",
        1,
        9,
        14,
    )
    assert inner.innermost == ("/w/main.py", 20, "run")
    (spawned,) = of_type(facts, WorkerExit)
    assert (spawned.local_rank, spawned.raised, spawned.cite.line) == (1, True, 8)
    (wait,) = of_type(facts, RendezvousTimeout)
    assert (wait.rank, wait.kind, wait.joined, wait.expected, wait.waited_s) == (
        1,
        "clients",
        1,
        2,
        901.0,
    )


#: torchrun's error file, printed by its summary: the whole report indented, its header prefixed
TORCHRUN_ERROR_FILE = """\
traceback : Traceback (most recent call last):
    File "/pt/torch/distributed/elastic/multiprocessing/errors/__init__.py", line 355, in wrapper
      return f(*args, **kwargs)
    File "/work/train.py", line 162, in main
      torch.cuda.set_device(device)
    File "/opt/pytorch/torch/cuda/__init__.py", line 470, in set_device
      torch._C._cuda_setDevice(device)
  RuntimeError: CUDA error: invalid device ordinal
  CUDA kernel errors might be asynchronously reported at some other API call.
"""


def test_an_indented_report_ends_its_frames_at_the_exception_indented_less() -> None:
    (tb,) = tracebacks(TORCHRUN_ERROR_FILE)
    assert tb.exc_type == "RuntimeError"
    assert tb.message == "CUDA error: invalid device ordinal"
    assert [f[2] for f in tb.frames] == ["wrapper", "main", "set_device"]
    assert tb.cite.line == 8
    assert tb.truncated is False


def test_tensorflows_reraised_exception_line_is_an_exception() -> None:
    """TF 1.x's session prints 'XError (see above for traceback): msg' under the op's stack;
    Horovod's shutdown reached TensorFlow users that way."""
    text = (
        "Caused by op 'HorovodBroadcast_is_train_0', defined at:\n"
        '  File "run.py", line 429, in <module>\n'
        "    run()\n"
        "\n"
        "AbortedError (see above for traceback): Horovod has been shut down. This has been "
        "caused by an exception on one of the rank or an attempt to allreduce, allgather or "
        "broadcast a tensor after one of the ranks has finished execution.\n"
    )
    [tb] = tracebacks(text)
    assert (tb.exc_type, tb.cite.line) == ("AbortedError", 5)
    assert tb.message.startswith("Horovod has been shut down.")
    assert not tracebacks("The AbortedError (see the docs) is raised when...\n")


OTHER_FRAMEWORKS = """\
2019-03-12 09:14:05.118201: W tensorflow/core/framework/op_kernel.cc:1401] OP_REQUIRES failed
tensorflow.python.framework.errors_impl.InternalError: Failed to create session.

horovod.common.exceptions.HorovodInternalError: Broadcast is not supported with Join at this time.

tensorflow_datasets.core.registered.DatasetNotFoundError: Dataset mnist_v9 not found.
"""


def test_bare_exception_lines_of_the_other_frameworks_under_nccl() -> None:
    # TensorFlow's and Horovod's own exception types end a rank as torch's do; a module that
    # only starts with a framework's name (tensorflow_datasets) is not one of them
    tbs = of_type(parse(OTHER_FRAMEWORKS), PythonTraceback)
    assert [(t.cite.line, t.exc_type, t.has_traceback) for t in tbs] == [
        (2, "tensorflow.python.framework.errors_impl.InternalError", False),
        (4, "horovod.common.exceptions.HorovodInternalError", False),
    ]
