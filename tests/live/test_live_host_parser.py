"""The live-host parser: host.json's keys as facts, odd JSON as no facts, never an exception."""

from __future__ import annotations

import pytest

from nccl_doctor.facts.live import GpuProcessOwner, NvmlOutcome, ShmInfo
from nccl_doctor.live_check import host_json
from nccl_doctor.parse.live_host import LiveHostParser
from tests.helpers import blocks


def _facts(text: str) -> list[object]:
    parser = LiveHostParser()
    return [fact for block in blocks(parser, text, "host.json") for fact in parser.parse(block)]


def test_each_fact_cites_its_key_line() -> None:
    text = host_json(
        {
            "hostname": "node1",
            "nvml": {
                "outcome": "timeout",
                "message": "NVML did not answer within 5 s",
                "timeout_s": 5.0,
                "lost": [{"index": 3, "bus_id": "00000000:3B:00.0", "message": "GPU is lost"}],
            },
            "shm": {"path": "/dev/shm", "size_mib": 64, "used_mib": 60, "free_mib": 4},
            "gpu_processes": [{"pid": 42, "gpu_index": 0, "comm": "python", "uid": 1000}],
        }
    )
    facts = _facts(text + "unrelated trailing line\n")
    timeout, lost = [f for f in facts if isinstance(f, NvmlOutcome)]
    assert (timeout.outcome, timeout.timeout_s, timeout.cite.line) == ("timeout", 5.0, 3)
    assert (lost.outcome, lost.gpu_index, lost.bus_id) == ("gpu_lost", 3, "00000000:3B:00.0")
    (shm,) = [f for f in facts if isinstance(f, ShmInfo)]
    assert (shm.size_mib, shm.free_mib, shm.cite.line) == (64, 4, 4)
    (proc,) = [f for f in facts if isinstance(f, GpuProcessOwner)]
    assert (proc.pid, proc.comm, proc.uid) == (42, "python", 1000)


@pytest.mark.parametrize(
    "text",
    [
        '{"nccl_doctor_live_host": 1,\n "nvml": {"outcome": \n',
        '{"nccl_doctor_live_host": 1,\n "nvml": [1, 2],\n "shm": "x",\n "net": {"a": 1}\n}\n',
        (
            '{"nccl_doctor_live_host": 1,\n "limits": {"memlock": [1], "nofile": null},\n'
            ' "gpu_processes": [{"pid": "x"}, 5]\n}\n'
        ),
        '{"nccl_doctor_live_host": 1,\n "modules": {"nvidia": "yes"},\n "runtime": {}\n}\n',
    ],
)
def test_odd_json_gives_no_facts_and_no_exception(text: str) -> None:
    assert _facts(text) == []
