"""PyTorch's Python messages in the catalogue (torchrun, torch.multiprocessing, c10d, DDP).

A message found at each release by ``ast`` is one entry however each release
spells it; a death by signal is split by the signal, each with its class.
"""

from __future__ import annotations

import pytest

from nccl_doctor.differential.symptoms import SIGNAL_CLASS
from nccl_doctor.facts.catalogue import signature_of
from nccl_doctor.knowledge.signatures import load_signatures
from tests.knowledge._signature_lines import assert_reads_as

PY_LINES = [
    (
        (
            "ValueError: Default process group has not been initialized, please make sure to call "
            "init_process_group."
        ),
        "torch.c10d.not_initialized",
        "app_error",
        {},
    ),
    (
        (
            "ValueError: Error initializing torch.distributed using env:// rendezvous: "
            "environment variable MASTER_ADDR expected, but not set"
        ),
        "torch.c10d.env_not_set",
        "app_error",
        {"var": "MASTER_ADDR"},
    ),
    (
        "ValueError: local_rank 4 exceeds available GPUs in CUDA_VISIBLE_DEVICES=0,1,2,3",
        "torch.elastic.local_rank_exceeds_gpus",
        "cuda_device",
        {"local_rank": "4"},
    ),
    (
        (
            "torch.distributed.DistStoreError: Timed out waiting on barrier on rank 3, for key "
            "prefix: torchelastic/agent/terminal_state (world_size=4, missing_ranks=[Rank 0], "
            "timeout=0:05:00)"
        ),
        "torch.elastic.store_barrier_timeout",
        "store_timeout",
        {"rank": "3"},
    ),
    (
        "RuntimeError: on 10.1.4.12, port: 29500 already in use",
        "torch.elastic.port_in_use",
        "store_timeout",
        {"server_addr": "10.1.4.12", "port": "29500"},
    ),
    (
        "torch.distributed.elastic.rendezvous.api.RendezvousTimeoutError",
        "torch.elastic.rdzv_timeout",
        "store_timeout",
        {},
    ),
    (
        "torch.multiprocessing.spawn.ProcessExitedException: process 1 terminated with exit code 1",
        "torch.mp.exit_code",
        "failure",
        {"error_index": "1", "exitcode": "1"},
    ),
    (
        (
            "RuntimeError: DistributedDataParallel is not needed when a module doesn't have any "
            "parameter that requires a gradient."
        ),
        "torch.ddp.no_grad_module",
        "ddp_usage",
        {},
    ),
    (
        (
            "ValueError: DistributedDataParallel device_ids and output_device arguments only work "
            "with single-device/multiple-device GPU modules or CPU modules, but got device_ids "
            "[1], output_device None, and module parameters {device(type='cpu')}."
        ),
        "torch.ddp.device_ids_mismatch",
        "ddp_usage",
        {},
    ),
    (
        (
            "RuntimeError: Cannot re-initialize CUDA in forked subprocess. To use CUDA with "
            "multiprocessing, you must use the 'spawn' start method"
        ),
        "torch.cuda.fork_reinit",
        "app_error",
        {},
    ),
]


@pytest.mark.parametrize(("line", "ident", "symptom", "fields"), PY_LINES)
def test_python_lines_read_as_their_message(
    line: str, ident: str, symptom: str, fields: dict[str, str]
) -> None:
    assert_reads_as(line, ident, symptom, fields)


def test_a_lazy_cuda_call_is_read_as_the_error_it_relays() -> None:
    sig = signature_of(
        "torch.cuda.DeferredCudaCallError: CUDA call failed lazily at initialization with "
        "error: device >= 0 && device < num_gpus INTERNAL ASSERT FAILED at "
        '"../aten/src/ATen/cuda/CUDAContext.cpp":50, please report a bug to PyTorch.'
    )
    assert sig is not None
    assert sig.id == "torch.cuda.device_index_assert"


def test_the_agents_teardown_of_the_other_workers_is_no_failure() -> None:
    line = (
        "WARNING:torch.distributed.elastic.multiprocessing.api:Sending process 4004 closing "
        "signal SIGTERM"
    )
    assert signature_of(line) is None


@pytest.mark.parametrize(
    ("line", "prefix"),
    [
        ("torch.multiprocessing.spawn.ProcessExitedException: process 1 terminated with signal {}",
         "torch.mp.exit_signal_"),
        ("Signal 9 ({}) received by PID 48211", "torch.elastic.child_failed_signal_"),
    ],
)  # fmt: skip
def test_a_death_by_signal_gets_the_class_of_its_signal(line: str, prefix: str) -> None:
    for signal, cls in SIGNAL_CLASS.items():
        sig = signature_of(line.format(signal))
        assert sig is not None
        assert (sig.id, sig.symptom) == (prefix + signal.lower(), cls)
    assert signature_of(line.format("SIGKILL")).symptom == "killed"  # type: ignore[union-attr]
    assert signature_of(line.format("SIGSEGV")).symptom == "crashed"  # type: ignore[union-attr]


def test_a_message_is_one_entry_however_each_release_spells_its_placeholders() -> None:
    # 1.8-2.0 format with "%s", 2.1+ with an f-string: the same pattern, one entry
    env = [s for s in load_signatures() if s.id.startswith("torch.c10d.env_not_set")]
    assert [s.id for s in env] == ["torch.c10d.env_not_set"]
    assert env[0].versions.seen[0] == "1.8.1"
    assert env[0].versions.last == "2.11.0"
