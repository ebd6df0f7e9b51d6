"""What nvidia-smi, DDP or a kernel said, retold in a sentence, points at its cause.

"Remapped Rows Pending: Yes" or "Volatile Uncorr. ECC = 2" retold is a memory error waiting on
a reset; "ERR!" in nvidia-smi's table a GPU NVML cannot reach; "Assertion `...` failed" a
kernel's own check; "only sees one GPU" a device the process cannot have; "params[0] ... 不一致"
DDP's check that every rank holds the same model. Beside each, the same words saying the state
is fine point at nothing.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.helpers import diagnose_text


@pytest.mark.parametrize(
    ("said", "first"),
    [
        (
            "Job dies on rank 11 again. nvidia-smi -q on GPU 3 says Remapped Rows Pending: Yes.",
            "gpu.ecc",
        ),
        (
            (
                "Every run on dgx-14 fails within minutes with a NCCL watchdog timeout; the "
                "nvidia-smi table there shows Volatile Uncorr. ECC = 2 on GPU 5."
            ),
            "gpu.ecc",
        ),
        (
            (
                "nvidia-smi now shows ERR! in the fan and power columns for GPU 2, and my 4-GPU "
                "training froze."
            ),
            "gpu.lost",
        ),
        (
            (
                'rank 2 prints "Assertion `t >= 0 && t < n_classes` failed" and then everyone else '
                "times out in allreduce."
            ),
            "cuda.device_assert",
        ),
        (
            (
                "DDP 初始化的时候报 params[0] 的 size 和 process 0 不一致。我只在 rank 0 上调用了 "
                "resize_token_embeddings。"
            ),
            "app.param_mismatch",
        ),
    ],
)
def test_a_state_retold_points_at_its_cause(tmp_path: Path, said: str, first: str) -> None:
    assert diagnose_text(tmp_path, said + "\n").top(1) == [first]


def test_only_seeing_one_gpu_is_a_device_the_process_cannot_have(tmp_path: Path) -> None:
    report = diagnose_text(tmp_path, "my DDP job only sees one GPU in the pod.\n")
    assert report.hypotheses[0].symptom.startswith("CUDA could not give the process the GPU")


@pytest.mark.parametrize(
    ("said", "not_first"),
    [
        (
            (
                "Job dies on rank 11 again; nvidia-smi -q says Remapped Rows Pending: No on every "
                "GPU and Volatile Uncorr. ECC = 0."
            ),
            "gpu.ecc",
        ),
        ("nvidia-smi looks normal, fan 30%, but my 4-GPU training froze.", "gpu.lost"),
        (
            "The params are the same on all ranks, I checked, and the job still hangs at step 1.",
            "app.param_mismatch",
        ),
    ],
)
def test_the_state_said_fine_points_at_nothing(tmp_path: Path, said: str, not_first: str) -> None:
    assert diagnose_text(tmp_path, said + "\n").top(1) != [not_first]


@pytest.mark.parametrize(
    ("said", "first"),
    [
        # the C library's text quoted with no error word: the store's reading, its address first
        (
            (
                "MASTER_ADDR=gpu-node01 works when I run on node01 itself, but workers on "
                "node02 get 'Name or service not known'."
            ),
            "net.unreachable",
        ),
        # an RDMA completion with an error, retold, after the job ran for hours: the transport
        (
            (
                "32-node run died after ~6 hours: NET/IB completion error 12 naming a peer on "
                "node 19."
            ),
            "net.ib_transport",
        ),
        # one hostname set for every host: NCCL takes them for one machine
        (
            (
                "Two physical hosts, both have hostname: trainer in the job spec; multi-node init "
                "fails with an NCCL error."
            ),
            "nccl.host_identity",
        ),
    ],
)
def test_a_message_or_a_setup_retold_points_at_its_cause(
    tmp_path: Path, said: str, first: str
) -> None:
    assert diagnose_text(tmp_path, said + "\n").top(1) == [first]


@pytest.mark.parametrize(
    "said",
    [
        "The workers on node02 resolve gpu-node01 fine and the job runs.",
        "We set a different hostname for each of the two hosts; both services start fine.",
    ],
)
def test_the_same_setup_said_fine_opens_nothing(tmp_path: Path, said: str) -> None:
    assert diagnose_text(tmp_path, said + "\n").hypotheses == ()
