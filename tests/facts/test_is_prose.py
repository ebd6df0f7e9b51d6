"""Which unfenced lines read as a person's sentence and which as machine output."""

from __future__ import annotations

from pathlib import Path

import pytest

from nccl_doctor.facts.store import is_prose


@pytest.mark.parametrize(
    ("line", "prose"),
    [
        # an issue's title that names NCCL's error in words is the reporter's sentence
        ("NCCL error while instantiating DistributedModelParallel", True),
        ("NCCL failure when the second node joins the job", True),
        # NCCL's and its bindings' own lines
        ("NCCL error in: /opt/conda/torch/lib/c10d/ProcessGroupNCCL.cpp:825, invalid usage", False),
        ("NCCL Error 2: unhandled system error", False),
        ("NCCL error: unhandled cuda error (run with NCCL_DEBUG=INFO for details)", False),
        ("NCCL version 2.21.5+cuda12.4", False),
        ("NCCL WARN Cuda failure 'out of memory'", False),
        ("NCCL failure common.cu:1030 'unhandled cuda error'", False),
        # NCCL's network subsystem's words, as torch quotes them after "Last error:"
        (
            (
                "NET/IB : Got completion from peer 10.10.4.13<37012> with status=12 opcode=0 len=0 "
                "vendor err 129 (Recv) localGid fe80::1270:fd03:2a:9be4"
            ),
            False,
        ),
        ("NET/Socket : Using [0]eth0:10.0.0.5<0>", False),
        ("NET/IB is what NCCL uses on our cluster, right?", True),
        # the shell's line for a child a signal killed, alone; the same words in a sentence
        ("Segmentation fault (core dumped)", False),
        ("Bus error (core dumped)", False),
        ("Segmentation fault at startup whenever I use all four GPUs", True),
        # glibc's abort on a corrupted heap, alone; and a sentence naming it
        ("free(): corrupted unsorted chunks", False),
        ("double free or corruption (!prev)", False),
        ("free() crashes for us only at 1024 GPUs", True),
    ],
)
def test_nccl_words_in_a_sentence_are_prose(line: str, prose: bool) -> None:
    assert is_prose(line) is prose


def test_a_fence_ends_a_pasted_traceback(tmp_path: Path) -> None:
    """The sentence after a closing fence is the reporter's, not more of the exception's
    message: it is free text, read as prose. Without the fence, a line right after the
    exception's message still continues it (a message printed over several lines)."""
    from nccl_doctor.evidence.reader import read_paths
    from nccl_doctor.facts.run import PythonTraceback
    from nccl_doctor.pipeline import facts_of

    error = (
        "torch.distributed.DistNetworkError: The server socket has failed to listen on any "
        "local network address. The server socket has failed to bind to [::]:12355 (errno: 98 "
        "- Address already in use).\n"
    )
    said = "Even if I modify a port that no one has used before, it is still the same error.\n"
    path = tmp_path / "report.txt"
    path.write_text("and the torch also has error,\n```\n" + error + "```\n" + said)
    facts = facts_of(read_paths([str(path)]))
    prose = [s.text for s in facts.lines if s.prose]
    assert said.strip() in prose
    messages = [" ".join((tb.message or "", *tb.message_lines)) for tb in facts.of(PythonTraceback)]
    assert messages
    assert all("modify a port" not in m for m in messages)
    path.write_text(error + said)
    unfenced = facts_of(read_paths([str(path)]))
    assert not any(s.prose and s.text == said.strip() for s in unfenced.lines)


@pytest.mark.parametrize(
    "said",
    [
        "I tried another MASTER_PORT, same error again.",
        "We see this on every node of the cluster.",
        "My config: 2 nodes, 8 GPUs each.",
        "换了端口还是一样的报错",
    ],
)
def test_the_reporters_own_voice_ends_an_unfenced_exception(tmp_path: Path, said: str) -> None:
    """A sentence in the first person (or in Chinese) right after an exception line, with no
    fence between, is what the reporter wrote next: prose, not more of the message. A
    continuation in the library's voice stays part of the message."""
    from nccl_doctor.evidence.reader import read_paths
    from nccl_doctor.facts.run import PythonTraceback
    from nccl_doctor.pipeline import facts_of

    error = "RuntimeError: The server socket has failed to bind to [::]:29500 (errno: 98)\n"
    more = "Address already in use on this host.\n"
    path = tmp_path / "report.txt"
    path.write_text(error + more + said + "\n")
    facts = facts_of(read_paths([str(path)]))
    assert said in [s.text for s in facts.lines if s.prose]
    messages = [" ".join((tb.message or "", *tb.message_lines)) for tb in facts.of(PythonTraceback)]
    assert len(messages) == 1
    assert "Address already in use on this host." in messages[0]
    assert said not in messages[0]


@pytest.mark.parametrize(
    ("line", "prose"),
    [
        # bash -x's trace of a command with options; a bullet written with a plus is a sentence
        ("+ torchrun --nnodes=1 --nproc-per-node=4 train.py", False),
        ("++ python -m torch.distributed.run --nproc_per_node 8 train.py", False),
        ("+ I also tried the other port and it failed the same way", True),
        # ls -l's rows (a file mode first); a sentence about one is a sentence
        ("crw-rw-rw- 1 root root 195,   0 Mar  4 08:01 /dev/nvidia0", False),
        ("drwxr-xr-x 2 root root 4096 Mar  4 08:01 checkpoints", False),
        ("the crw field says root owns the node and everyone may write it", True),
        # lsmod's rows: module, size, users (and who uses it)
        ("nvidia_modeset       1351680  1 nvidia_drm", False),
        ("nvidia_uvm           1642496  0", False),
        # a tqdm bar is the program's, whatever words its description holds
        (
            (
                "Running tokenizer on dataset (num_proc=16):  37%|███▋      | 1480000/4000000 "
                "[29:51<50:12, 836.54 examples/s]"
            ),
            False,
        ),
        ("Loading checkpoint shards:  50%|█████     | 2/4 [00:03<00:03,  1.52s/it]", False),
        ("Epoch 3:  12%|█▏        | 1.2k/10.0k [01:02<07:40, 19.1it/s, loss=0.31]", False),
        # ss's and netstat's socket rows, and ss's header
        (
            (
                'LISTEN 0      4096         0.0.0.0:29500      0.0.0.0:*     users:(("torchrun",'
                "pid=2291877,fd=3))"
            ),
            False,
        ),
        ("State  Recv-Q Send-Q Local Address:Port  Peer Address:Port Process", False),
        ("tcp        0      0 0.0.0.0:29501           0.0.0.0:*               LISTEN", False),
        ("tcp is the protocol we use and it works fine with them", True),
        # pip list's rows, and a sentence with a number after two spaces
        ("nvidia-nccl-cu12          2.20.5", False),
        ("The loss is  0.5 after the first epoch", True),
        # ulimit -a's rows
        ("max locked memory           (kbytes, -l) 64", False),
        ("scheduling priority                 (-e) 0", False),
        # lspci -vv's link fields, with a loop's bus prefix
        ("a0: \t\tLnkSta:\tSpeed 2.5GT/s (downgraded), Width x16 (ok)", False),
        # a training loop's progress rows: names and their numbers only
        ("Epoch 1 step 608 loss 6.8464 lr 3.0e-04", False),
        ("iter: 120, loss: 2.31, grad_norm: 0.9, lr: 1e-4", False),
        ("step 500 loss 2.1 and then every rank hangs", True),
        ("it hangs at step 500 on 2 nodes every time", True),
        # a person's words about the bar are still theirs
        ("The progress bar stops at 37% and the other ranks wait for it", True),
        ("It is stuck at 12%| of the first epoch and never moves on", True),
    ],
)
def test_a_programs_rows_are_not_prose(line: str, prose: bool) -> None:
    assert is_prose(line) is prose
