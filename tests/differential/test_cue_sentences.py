"""A cue's words are read inside one sentence: a prose line can hold a whole paragraph."""

from __future__ import annotations

from tests.helpers import cue_says


def test_works_with_gloo_is_read_in_its_sentence() -> None:
    assert cue_says("nccl_only", "The same script works fine with gloo on these nodes.")
    assert not cue_says(
        "nccl_only",
        "I restarted twice and nothing works. With gloo the job fails with the same error.",
    )


def test_a_node_that_never_joins_is_read_in_its_sentence() -> None:
    assert cue_says("startup_hang", "The second node never joined, rank 0 waits.")
    assert not cue_says(
        "startup_hang",
        "Out of host memory on the worker. Tensorboard never connects.",
    )


def test_a_call_s_own_dots_do_not_end_the_loopback_sentence() -> None:
    assert cue_says(
        "loopback_host", "socket.gethostbyname(socket.gethostname()) returns 127.0.1.1 on that host"
    )


def test_another_process_on_the_same_gpu_is_another_job_and_the_jobs_own_are_not() -> None:
    said = "Mixtral with TP hangs indefinitely if another process uses the same GPU with ONNX"
    assert cue_says("other_job_same_gpus", said)
    assert cue_says("other_job_same_gpus", "An other model was loaded on one of the GPUs we use.")
    # two of the job's own ranks on one GPU are a duplicate GPU, not another job
    assert not cue_says("other_job_same_gpus", "Both processes end up on the same GPU 0.")
    assert not cue_says("other_job_same_gpus", "There is no other process on the same GPUs.")


def test_one_gpu_that_runs_and_several_that_fail_are_nccls_own_path() -> None:
    for said in (
        "Single-GPU training is fine.",
        "one-GPU inference works fine",
        "illegal memory access at the first all_reduce, only with 2+ GPUs (VMware VM)",
        "it fails only on multiple GPUs",
    ):
        assert cue_says("nccl_only", said), said
    for said in (
        "Single-GPU training is not fine either.",
        "It fails with one GPU and with multiple GPUs.",
        "only with 2 nodes it fails",
    ):
        assert not cue_says("nccl_only", said), said


def test_chinese_words_for_several_machines() -> None:
    for said in ("双机 16 卡训练卡住", "两台服务器上训练报错", "跨节点通信失败", "3个节点一起训练"):
        assert cue_says("multi_node", said), said
    for said in ("单机 8 卡训练卡住", "显卡在跑别的任务", "两张卡训练报错"):
        assert not cue_says("multi_node", said), said
