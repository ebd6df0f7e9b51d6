"""What the stuck GPUs read tells where the ranks wait.

Measured on an H100 (``tests/fixtures/captured/spin-h100``): an all_reduce whose peer never
joins keeps its GPU at 100% (NCCL's kernel polls for the data), a rank blocked in the c10d
store leaves it at 0% (no kernel runs). So a reporter's "GPU utilization stays at 100%" puts
the wait inside a collective, past the rendezvous and NCCL's bootstrap; "GPU-Util is 0%"
puts it on the host, where P2P transfers that never complete and ranks in different
collectives do not leave it. The words are about the GPU's load, not its memory or the CPU's.
nvidia-smi's table taken during the hang says the same where every GPU holding the job's
memory, two at least, reads full or empty. Every diagnosis case runs the whole pipeline.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from nccl_doctor.differential.context import context_of
from nccl_doctor.evidence.reader import read_paths
from nccl_doctor.facts.gpu import Gpu
from nccl_doctor.pipeline import facts_of
from tests.helpers import cue_says, ranked_without_critical

_CAPTURE = Path(__file__).parents[1] / "fixtures" / "captured" / "spin-h100"


def test_the_capture_reads_full_inside_a_collective_and_empty_in_the_store() -> None:
    reads = {
        row["mode"]: row["gpu_util_percent"]
        for row in map(json.loads, (_CAPTURE / "util.jsonl").read_text().splitlines())
    }
    assert reads["kernel"] == [100] * 12
    assert reads["host"] == [0] * 12


@pytest.mark.parametrize(("mode", "load"), [("kernel", 100), ("host", 0)])
def test_nvidia_smi_s_own_table_mid_wait_reads_the_same(mode: str, load: int) -> None:
    facts = facts_of(read_paths([str(_CAPTURE / f"{mode}.smi.txt")]))
    [gpu] = facts.of(Gpu)
    assert (gpu.utilization_gpu_pct, gpu.memory_used_mib) == (load, 2031)
    # one GPU is one rank's: it says nothing of where the others wait
    assert context_of(facts).gpus_read is None


@pytest.mark.parametrize(
    "said",
    [
        "GPU utilization stays at 100% but nothing happens.",
        "nvidia-smi during the hang shows all GPUs at 100% util.",
        "GPU being stucked with utility 100% everlasting",
        "Title: GPU usage stuck on 100% percent when using 2 RTX 3090",
        "GPU-Util 99% on every card, the log stops.",
        "卡住之后 GPU 利用率 100%",
        # the GPUs themselves at a full load, no word for the load
        "Observed as a 13-minute hang at PP=4 with all GPUs at 100% and no error output.",
        "It gets stuck at epoch 13, while the two GPUs keep busy at 100%.",
    ],
)
def test_gpus_said_full(said: str) -> None:
    assert cue_says("gpus_full", said)
    assert not cue_says("gpus_idle", said)


@pytest.mark.parametrize(
    "said",
    [
        "GPU-Util was 0% but GPU memory was occupied.",
        "the training will deadlock (GPU utilization will always be 0%)",
        "After a few steps the GPU usage drops to 0 and stays there.",
        "The GPUs sit idle and the log stops.",
    ],
)
def test_gpus_said_idle(said: str) -> None:
    assert cue_says("gpus_idle", said)
    assert not cue_says("gpus_full", said)


@pytest.mark.parametrize(
    "said",
    [
        # the CPU's load, the GPU's memory, a progress bar: not what the GPU runs
        "CPU usage goes to 100% on the master node.",
        "GPU memory usage is 100% on both cards.",
        "Both GPUs at 100% of their memory when it stops.",
        "Disk usage 100% on the node, the checkpoint write hangs.",
        "The usage of the disk is 100% while it hangs.",
        "Loading checkpoint shards: 100% 4/4",
        "GPU utilization is around 10% to 50%.",
        # both at once (some GPUs busy, some idle): neither
        "GPU 0 utilization 100%, GPU 1 utilization 0%.",
    ],
)
def test_other_loads_are_neither(said: str) -> None:
    assert not cue_says("gpus_full", said)
    assert not cue_says("gpus_idle", said)


_HANG = "DDP training with 4 GPUs hangs, no error message, the log just stops.\n"


def test_without_the_load_p2p_leads_the_silent_hang(tmp_path: Path) -> None:
    assert ranked_without_critical(tmp_path, _HANG)[0] == "nccl.p2p"


def test_idle_gpus_put_the_hang_on_the_host(tmp_path: Path) -> None:
    top = ranked_without_critical(tmp_path, _HANG + "nvidia-smi shows GPU-Util 0% on every GPU.\n")
    assert top[:2] == ["launch.rendezvous", "net.socket_interface"]
    assert "nccl.p2p" not in top[:3]


def test_full_gpus_put_the_hang_inside_a_collective(tmp_path: Path) -> None:
    top = ranked_without_critical(
        tmp_path, _HANG + "nvidia-smi shows GPU-Util 100% on every GPU.\n"
    )
    assert top[0] == "nccl.p2p"
    assert "launch.rendezvous" not in top
    assert "net.socket_interface" not in top[:3]


def _smi(*loads: int, used_mib: int = 31250) -> str:
    """nvidia-smi's table (driver 535) of a node whose GPUs read ``loads``, each holding
    ``used_mib`` of a job's memory."""
    rule = (
        "+-----------------------------------------+----------------------+----------------------+"
    )
    head = [
        "Sat Dec  5 09:12:44 2026",
        "+---------------------------------------------------------------------------------------+",
        "| NVIDIA-SMI 535.161.08             Driver Version: 535.161.08   CUDA Version: 12.2     |",
        "|-----------------------------------------+----------------------+----------------------+",
        "| GPU  Name                 Persistence-M | Bus-Id        Disp.A | Volatile Uncorr. ECC |",
        "| Fan  Temp   Perf          Pwr:Usage/Cap |         Memory-Usage | GPU-Util  Compute M. |",
        "|                                         |                      |               MIG M. |",
        "|=========================================+======================+======================|",
    ]
    blank = "|" + " " * 41 + "|" + " " * 22 + "|"
    rows = []
    for i, load in enumerate(loads):
        bus = f"00000000:{0x07 + 0x10 * i:02X}:00.0"
        rows += [
            f"|   {i}  NVIDIA A100-SXM4-80GB          On  | {bus} Off |{'0 |':>23}",
            (
                f"| N/A   41C    P0{90 + load:15d}W /  400W |  {used_mib:5d}MiB / 81920MiB |"
                f"{load:7d}%      Default |"
            ),
            blank + "             Disabled |",
            rule,
        ]
    return "\n".join(head + rows) + "\n"


_STUCK = "Training with torchrun on 4 A100s hangs after 300 steps, no error. nvidia-smi now:\n"


def test_the_table_of_idle_gpus_puts_the_hang_on_the_host(tmp_path: Path) -> None:
    top = ranked_without_critical(tmp_path, _STUCK + _smi(0, 0, 0, 0))
    assert "nccl.p2p" not in top[:3]
    assert "app.collective_mismatch" not in top[:3]


def test_the_table_of_full_gpus_puts_the_hang_inside_a_collective(tmp_path: Path) -> None:
    bare = ranked_without_critical(tmp_path, _STUCK)
    top = ranked_without_critical(tmp_path, _STUCK + _smi(100, 100, 99, 100))
    assert top[0] == bare[0] == "app.hang"
    assert "launch.rendezvous" not in top
    assert "net.socket_interface" not in top[:3]


@pytest.mark.parametrize(
    "table",
    [
        _smi(100, 100, 0, 100),  # one rank elsewhere: the others wait for it
        _smi(0),  # one GPU: one rank, nothing of the others
        _smi(0, 0, 0, 0, used_mib=4),  # no job's memory: the table is not the job's
    ],
)
def test_a_table_that_tells_nothing_leaves_the_ranking(tmp_path: Path, table: str) -> None:
    assert ranked_without_critical(tmp_path, _STUCK + table) == ranked_without_critical(
        tmp_path, _STUCK
    )
