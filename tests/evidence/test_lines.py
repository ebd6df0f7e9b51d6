"""Attribution: which rank, host and time each real prefix names."""

from __future__ import annotations

import re

import pytest

from nccl_doctor.evidence import lines
from nccl_doctor.evidence.lines import Attributor, lines_of


@pytest.mark.parametrize(
    ("raw", "rank", "host", "pid", "device", "text"),
    [
        ("[rank3]:RuntimeError: boom", 3, None, None, None, "RuntimeError: boom"),
        ("[default5]:hello", 5, None, None, None, "hello"),
        ("[trainer12]:hello", 12, None, None, None, "hello"),
        ("  7: some output", 7, None, None, None, "some output"),
        (
            "[1,2]<stdout>:node-a:102986:102997 [0] NCCL INFO Using network IB",
            2,
            "node-a",
            102986,
            0,
            "NCCL INFO Using network IB",
        ),
        (
            "[155] crow-19:5330:5330 [3] NCCL INFO Bootstrap : Using",
            155,
            "crow-19",
            5330,
            3,
            "NCCL INFO Bootstrap : Using",
        ),
        (
            "gpu-dev006:25486:25486 [0] NCCL INFO Using network IB",
            None,
            "gpu-dev006",
            25486,
            0,
            "NCCL INFO Using network IB",
        ),
        (
            "2024-01-01T10:00:00.123456789Z stdout F [default3]:x",
            3,
            None,
            None,
            None,
            "x",
        ),
        ("[pod/trainer-0/main] [rank1]:y", 1, "trainer-0", None, None, "y"),
        (
            "(RayWorker pid=4242, ip=10.1.2.3) NCCL WARN z",
            None,
            "10.1.2.3",
            4242,
            None,
            "NCCL WARN z",
        ),
        ("(pid=77) hello", None, None, 77, None, "hello"),
        ("worker-1: [rank9]:boom", 9, "worker-1", None, None, "boom"),
        # a collector's bracketed host, then torch's rank prefix
        (
            "[node-b-gpu09] [rank13]: FileNotFoundError: x",
            13,
            "node-b-gpu09",
            None,
            None,
            "FileNotFoundError: x",
        ),
        # brackets that name no host: a log level, torchrun's tag, a tool's name
        ("[INFO] step 10", None, None, None, None, "[INFO] step 10"),
        ("[nccl-tests] done", None, None, None, None, "[nccl-tests] done"),
        ("ip-10-0-0-1: NCCL WARN x", None, "ip-10-0-0-1", None, None, "NCCL WARN x"),
        ("step10: loss 2.3", None, None, None, None, "step10: loss 2.3"),
        ("RuntimeError: NCCL error", None, None, None, None, "RuntimeError: NCCL error"),
        ("epoch-x: not a host", None, None, None, None, "epoch-x: not a host"),
        (
            "nvidia-nvswitch3: SXid (PCI:0000:88:00.0): 20034",
            None,
            None,
            None,
            None,
            "nvidia-nvswitch3: SXid (PCI:0000:88:00.0): 20034",
        ),
        # SGLang's scheduler prefix: the TP rank is the rank only without a DP or PP rank
        ("[2025-03-01 10:00:01 TP3] Scheduler hit", 3, None, None, None, "Scheduler hit"),
        ("[2025-03-01 10:00:01.120 TP12 EP12] x", 12, None, None, None, "x"),
        ("[2025-07-22 06:18:53 DP1 TP0] KV Cache", None, None, None, None, "KV Cache"),
        ("[2025-07-22 06:18:53 PP1 TP3] y", None, None, None, None, "y"),
        ("[2025-03-01 10:00:02] Received sigquit", None, None, None, None, "Received sigquit"),
        # vLLM's worker tags: its rank, or its TP rank where no DP or PP rank is named
        ("(VllmWorker rank=1 pid=4888) INFO x", 1, None, 4888, None, "INFO x"),
        ("(VllmWorker TP3 pid=2100) ERROR y", 3, None, 2100, None, "ERROR y"),
        ("(EngineCore_DP0 pid=2100) INFO z", None, None, 2100, None, "INFO z"),
        # TensorRT-LLM's loggers: the C++ one's rank suffix (its level stays: it says the line
        # failed), the dated ones' rank fields
        ("[TensorRT-LLM][ERROR][3] x", 3, None, None, None, "[TensorRT-LLM][ERROR][3] x"),
        ("[TensorRT-LLM][WARNING] y", None, None, None, None, "[TensorRT-LLM][WARNING] y"),
        ("12-06-2025 07:09:01.123456 [TRT-LLM] [E] [2] boom", 2, None, None, None, "boom"),
        ("[12/06/2025-07:09:01] [TRT-LLM] [RANK 1] [E] Failed", 1, None, None, None, "Failed"),
        ("[01/10/2024-10:00:00] [TRT-LLM] [MPI_Rank 5] [W] old", 5, None, None, None, "old"),
        ("TPU error: z", None, None, None, None, "TPU error: z"),
        (
            "Mar 10 12:00:00 node1 kernel: NVRM: Xid (PCI:0000:3b:00): 79, pid=1",
            None,
            "node1",
            None,
            None,
            "NVRM: Xid (PCI:0000:3b:00): 79, pid=1",
        ),
    ],
)
def test_prefixes(
    raw: str, rank: int | None, host: str | None, pid: int | None, device: int | None, text: str
) -> None:
    line = Attributor("s").line(1, raw)
    assert (line.rank, line.host, line.pid, line.device, line.text) == (
        rank,
        host,
        pid,
        device,
        text,
    )
    assert line.raw == raw


def test_times_by_clock_family() -> None:
    lines = lines_of(
        "[ 1234.567] NVRM: Xid\n"
        "[rank1]:[E626 06:24:44.903881913 ProcessGroupNCCL.cpp:616] [Rank 1] Watchdog\n"
        "[I1209 12:18:13.664456931 ProcessGroupNCCL.cpp:987] [PG ID 0] env\n"
        "2025-12-09 12:16:57,382 INFO [prepare_dataset.py:185] x\n"
        "W0801 13:23:17.366000 32974 torch/distributed/elastic/multiprocessing/api.py:900] y\n"
    )
    assert [(x.clock, x.time_s) for x in lines[:1]] == [("uptime", 1234.567)]
    assert lines[1].clock == "glog"
    assert lines[2].clock == "glog"
    june, december = lines[1].time_s, lines[2].time_s
    assert june is not None
    assert december is not None
    # June 26 comes before December 9 within one (unknown) year
    assert june < december
    assert lines[3].clock == "iso"
    assert lines[3].time_s == pytest.approx(1765282617.382)
    assert lines[3].text == "INFO [prepare_dataset.py:185] x"
    assert lines[4].clock == "glog"


def test_spawn_header_attributes_the_traceback_until_a_blank_line() -> None:
    lines = lines_of(
        "[rank0]:before\n"
        "-- Process 2 terminated with the following error:\n"
        "Traceback (most recent call last):\n"
        '  File "x.py", line 1, in f\n'
        "RuntimeError: boom\n"
        "\n"
        "after\n"
    )
    assert [x.rank for x in lines] == [0, 2, 2, 2, 2, None, None]


def test_a_ranked_traceback_header_attributes_its_frames_until_a_blank_line() -> None:
    att = Attributor("s")
    raws = [
        "[2025-03-01 10:00:01 TP1] Scheduler hit an exception: Traceback (most recent call last):",
        '  File "/sgl/model_runner.py", line 320, in init_torch_distributed',
        "ValueError: The memory capacity is unbalanced.",
        "",
        "[2025-03-01 10:00:02] Received sigquit from a child process.",
    ]
    got = [att.line(n, raw).rank for n, raw in enumerate(raws, 1)]
    assert got == [1, 1, 1, None, None]


def test_skipped_lines_end_spawn_context() -> None:
    attributor = Attributor("s")
    assert attributor.line(1, "-- Process 1 terminated with the following error:").rank == 1
    assert attributor.line(2, "Traceback (most recent call last):").rank == 1
    assert attributor.line(50, "unrelated much later").rank is None


def test_default_rank_of_a_per_rank_file() -> None:
    lines = lines_of("plain line\n[rank7]:other\n", default_rank=3)
    assert [x.rank for x in lines] == [3, 7]


def test_the_spawn_pattern_runs_only_on_lines_naming_a_process(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """mp.spawn's header is looked for with its literal first: an INFO line costs no search."""
    searched: list[str] = []
    pattern = lines._SPAWN

    class Counted:
        def search(self, text: str) -> re.Match[str] | None:
            searched.append(text)
            return pattern.search(text)

    monkeypatch.setattr(lines, "_SPAWN", Counted())
    attributor = lines.Attributor("x.log")
    header = "-- Process 2 terminated with the following error:"
    got = [
        attributor.line(1, "node1:10:10 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] via P2P/IPC"),
        attributor.line(2, header),
        attributor.line(3, "RuntimeError: CUDA error: out of memory"),
    ]
    assert searched == [header]
    assert [x.rank for x in got] == [None, 2, 2]


_VLLM = (
    "(VllmWorkerProcess pid=221) ERROR x.py:238] NCCL error in: a.hpp:268, unhandled "
    "system error (run with NCCL_DEBUG=INFO for details), NCCL version "
)


@pytest.mark.parametrize(
    ("raw", "text"),
    [
        # inline code the markdown closed on the line after: the lone backtick goes
        (
            _VLLM + "2.21.5`",
            _VLLM.split("] ", 1)[0].removeprefix("(VllmWorkerProcess pid=221) ")
            + "] "
            + _VLLM.split("] ", 1)[1]
            + "2.21.5",
        ),
        ("`E cuda_driver.cc:491] failed call to cuInit: CUDA_ERROR_UNKNOWN", None),
        # a message quoted at the end of the reporter's sentence: its closing backtick goes
        (
            "It fails with `" + _VLLM.split("] ", 1)[1] + "2.19.3`",
            "It fails with `" + _VLLM.split("] ", 1)[1] + "2.19.3",
        ),
        # a pair, a fence, a backtick inside the message: unchanged
        ("`RuntimeError: Address already in use`", "`RuntimeError: Address already in use`"),
        ("```", "```"),
        ("```text", "```text"),
        ("darknet: ./src/utils.c:297: error: Assertion `0' failed.", None),
    ],
)
def test_markdown_backtick_left_over(raw: str, text: str | None) -> None:
    line = Attributor("s").line(1, raw)
    assert line.text == (text if text is not None else raw.lstrip("`"))
    assert line.raw == raw


@pytest.mark.parametrize(
    "head",
    [
        "[I1106 01:00:00.675184184 ProcessGroupNCCL.cpp:905] [PG ID 0 PG GUID 0(dp) Rank 3]",
        "[E1106 03:22:47.905000 140243 ProcessGroupNCCL.cpp:1484] [Rank 7] Watchdog caught",
        "[W0101 00:00:00.000 0 x.cpp:1] ",
        "[F123 12:00:00] [rank3]: x",
        "[I1106 ]: 12: node1:1:2 [0] NCCL INFO x",  # whatever follows the head
    ],
)
def test_no_prefix_starts_as_a_glog_line_does(head: str) -> None:
    """A line that starts with glog's bracketed head is not tried for the prefixes one by one:
    none of them can match there."""
    assert lines._GLOG_START.match(head)
    # every prefix Attributor.line peels off a line (a table here: the regex linearity test
    # reads a table of patterns in the package as searched, and these are only matched)
    prefixes = (
        *(lines._CRI, lines._SYSLOG, lines._DMESG_T, lines._DMESG, lines._ISO, lines._KUBECTL),
        *(lines._COMPOSE, lines._RAY, lines._MPI_TAG, lines._RANK, lines._TORCHRUN),
        *(lines._BRACKET_RANK, lines._SRUN, lines._NCCL),
    )
    assert not any(p.match(head) for p in prefixes)
    line = Attributor("s", default_rank=5).line(1, "[rank2]:" + head)
    assert (line.text, line.rank) == (head, 2)
