"""Where a traceback failed in PyTorch's start-up opens its own symptom class.

Each case runs the whole pipeline on a paste as people post it; the frames
are PyTorch's own (torch/distributed/rendezvous.py, torch/cuda/__init__.py,
torch/nn/parallel/distributed.py, torch/distributed/utils.py).
"""

from __future__ import annotations

from pathlib import Path

from nccl_doctor.differential.phases import phase_of
from nccl_doctor.evidence.reader import read_paths
from nccl_doctor.facts.run import PythonTraceback
from nccl_doctor.pipeline import diagnose_paths, facts_of
from nccl_doctor.report import Report, Verdict

SITE = "/home/u/miniconda3/envs/py39/lib/python3.9/site-packages"

#: The traceback of a multi-GPU start, pasted from its first frame without the
#: header and cut before the exception line (dev corpus SlowFast-337's shape).
STORE_CUT = f"""\
It works on one GPU but on several GPUs I get this error.

  File "{SITE}/torch/distributed/distributed_c10d.py", line 423, in init_process_group
    store, rank, world_size = next(rendezvous_iterator)
  File "{SITE}/torch/distributed/rendezvous.py", line 133, in _tcp_rendezvous_handler
    store = TCPStore(result.hostname, result.port, world_size, start_daemon, timeout)

anyone faced the same problem?
"""

CUDA_INIT = f"""\
Traceback (most recent call last):
  File "/work/train.py", line 41, in <module>
    torch.cuda.set_device(args.local_rank)
  File "{SITE}/torch/cuda/__init__.py", line 404, in set_device
    torch._C._cuda_setDevice(device)
  File "{SITE}/torch/cuda/__init__.py", line 298, in _lazy_init
    torch._C._cuda_init()
"""

DDP_CUT = f"""\
Traceback (most recent call last):
  File "/work/train.py", line 88, in <module>
    model = DDP(model, device_ids=[local_rank])
  File "{SITE}/torch/nn/parallel/distributed.py", line 646, in __init__
    _verify_param_shape_across_processes(self.process_group, parameters)
  File "{SITE}/torch/distributed/utils.py", line 89, in _verify_param_shape_across_processes
    return dist._verify_params_across_processes(process_group, tensors, logger)
"""

DDP_SYSTEM_ERROR = (
    DDP_CUT
    + "RuntimeError: NCCL error in: ../torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:1191, "
    "unhandled system error, NCCL version 2.10.3\n"
)

USER_CODE = """\
Traceback (most recent call last):
  File "/work/train.py", line 12, in <module>
    main()
  File "/work/train.py", line 9, in main
    batch = next(loader)
ValueError: expected a batch of 8, got 7
"""

#: faulthandler's dump of a live thread (``line N in fn``, no comma): not a failure
FAULTHANDLER = f"""\
Thread 0x00007f0c2d3fe700 (most recent call first):
  File "{SITE}/torch/distributed/distributed_c10d.py", line 3375 in barrier
  File "/work/train.py", line 50 in main
"""


def _write(tmp_path: Path, text: str) -> str:
    path = tmp_path / "evidence.txt"
    path.write_text(text, encoding="utf-8")
    return str(path)


def _tracebacks(path: str) -> tuple[PythonTraceback, ...]:
    return facts_of(read_paths([path])).of(PythonTraceback)


def test_a_paste_without_its_header_is_a_traceback_cited_at_its_last_line(
    tmp_path: Path,
) -> None:
    (tb,) = _tracebacks(_write(tmp_path, STORE_CUT))
    assert tb.exc_type is None
    assert tb.truncated
    assert [f[2] for f in tb.frames] == ["init_process_group", "_tcp_rendezvous_handler"]
    assert tb.cite.line == 6
    assert phase_of(tb) == ("store_create", "rendezvous.py:133 in _tcp_rendezvous_handler")


def test_a_store_that_could_not_be_built_ranks_the_port_then_the_address(
    tmp_path: Path,
) -> None:
    report = diagnose_paths([_write(tmp_path, STORE_CUT)])
    assert report.verdict is Verdict.INCONCLUSIVE
    assert report.findings == ()
    assert report.top(2) == ["launch.port_in_use", "net.unreachable"]
    top = report.hypotheses[0]
    assert top.symptom.startswith("the c10d store could not be set up")
    assert top.for_[1] == (
        "it failed in rendezvous.py:133 in _tcp_rendezvous_handler, "
        "constructing the c10d TCPStore (rendezvous)"
    )
    assert top.check.startswith("ss -ltnp")


def test_cuda_initialisation_ranks_the_driver_first(tmp_path: Path) -> None:
    report = diagnose_paths([_write(tmp_path, CUDA_INIT)])
    assert report.hypotheses[0].id == "driver.cuda_mismatch"
    assert report.hypotheses[0].symptom.startswith("CUDA failed to initialise")
    assert "cuda.device_visibility" in report.top(3)


def test_ddp_construction_cut_before_its_message_is_the_first_collective(
    tmp_path: Path,
) -> None:
    (tb,) = _tracebacks(_write(tmp_path, DDP_CUT))
    assert phase_of(tb) == ("comm_init", "utils.py:89 in _verify_param_shape_across_processes")
    report = diagnose_paths([_write(tmp_path, DDP_CUT)])
    assert report.hypotheses[0].symptom.startswith("the first collective failed")
    assert report.hypotheses[0].id == "nccl.shm"


def test_the_message_outranks_the_place(tmp_path: Path) -> None:
    """An NCCL result code says more than where it surfaced: the phase stays silent."""
    report = diagnose_paths([_write(tmp_path, DDP_SYSTEM_ERROR)])
    assert report.hypotheses[0].symptom.startswith("NCCL reported a system error")


def test_a_traceback_in_the_users_own_code_names_no_phase(tmp_path: Path) -> None:
    (tb,) = _tracebacks(_write(tmp_path, USER_CODE))
    assert phase_of(tb) is None
    report = diagnose_paths([_write(tmp_path, USER_CODE)])
    assert all(
        not h.symptom.startswith(("the c10d", "CUDA failed", "the first"))
        for h in (report.hypotheses)
    )


def test_a_faulthandler_dump_of_a_live_thread_is_not_a_failure(tmp_path: Path) -> None:
    assert _tracebacks(_write(tmp_path, FAULTHANDLER)) == ()
    report = diagnose_paths([_write(tmp_path, FAULTHANDLER)])
    assert report.hypotheses == ()


# -- real runs (tests/fixtures/captured/phases/SOURCE.md) ------------------------------------
CAPTURED = Path(__file__).resolve().parents[1] / "fixtures" / "captured" / "phases"


def _cut_before(name: str, exception: str, tmp_path: Path) -> str:
    """The capture up to (without) its first line holding ``exception``: a paste cut short."""
    lines = (CAPTURED / name).read_text(encoding="utf-8").splitlines(keepends=True)
    end = next(i for i, line in enumerate(lines) if exception in line)
    return _write(tmp_path, "".join(lines[:end]))


def _ids(report: Report) -> set[str]:
    return {f.id for f in report.findings}


def test_real_cuda_init_failure_on_the_h200(tmp_path: Path) -> None:
    whole = diagnose_paths([str(CAPTURED / "cuda_init.txt")])
    assert "cuda.device_visibility" in _ids(whole)  # the message says it: no phase needed
    cut = diagnose_paths([_cut_before("cuda_init.txt", "RuntimeError:", tmp_path)])
    assert cut.findings == ()
    assert cut.hypotheses[0].symptom.startswith("CUDA failed to initialise")
    assert "__init__.py:478 in _lazy_init" in cut.hypotheses[0].for_[1]
    assert "cuda.device_visibility" in cut.top(3)


def test_real_ddp_construction_failure_on_the_h200(tmp_path: Path) -> None:
    whole = diagnose_paths([str(CAPTURED / "ddp_comm_init.txt")])
    assert "net.socket_interface" in _ids(whole)
    cut = diagnose_paths([_cut_before("ddp_comm_init.txt", "DistBackendError", tmp_path)])
    # without torch's exception, NCCL's own WARN (bootstrap.cc: no socket interface found, an
    # ncclInternalError) is the first failure, before the phase the stack shows
    lead = cut.hypotheses[0]
    assert lead.symptom == "NCCL reported an internal error (ncclInternalError)"
    assert "bootstrap_no_socket_interface_found" in lead.for_[0]
    assert cut.top(1) == ["net.socket_interface"]


def test_real_port_in_use_on_torch_2_13(tmp_path: Path) -> None:
    whole = diagnose_paths([str(CAPTURED / "port_in_use_cpu.txt")])
    assert "launch.port_in_use" in _ids(whole)
    cut = diagnose_paths([_cut_before("port_in_use_cpu.txt", "DistNetworkError", tmp_path)])
    assert cut.hypotheses[0].symptom.startswith("the c10d store could not be set up")
    assert "rendezvous.py:199 in _create_c10d_store" in cut.hypotheses[0].for_[1]
    assert cut.top(1) == ["launch.port_in_use"]
