"""Property tests: the nccl-log parser never raises and cites real lines, on any input."""

from __future__ import annotations

from hypothesis import given

from nccl_doctor.evidence.lines import lines_of
from nccl_doctor.facts.base import Fact
from nccl_doctor.parse.nccl_log import NcclLogParser
from tests.helpers import FORMATS
from tests.parse.mutations import (
    MUTATED_SETTINGS,
    RANDOM_SETTINGS,
    SOURCE,
    check_facts,
    mutated,
    random_text,
)
from tests.parse.test_nccl_log import INIT_2_19, MISC, NEWER, OLD_2_4, WARNS

FIXTURES = [
    p.read_bytes().decode("utf-8", errors="replace")
    for p in sorted((FORMATS / "nccl-log").glob("*.txt"))
] + [INIT_2_19, NEWER, OLD_2_4, WARNS, MISC]
TOKENS = [
    "h:1:2 [0] ",
    "node-1:4242:4243 [7] ",
    "NCCL INFO ",
    "NCCL WARN ",
    "transport/net.cc:1008 ",
    "NCCL version ",
    "2.18.1+cuda12.1",
    "Channel 00/0 : ",
    "Ring 01 : ",
    "0[0] -> 1[1]",
    " [send]",
    " [receive]",
    " via P2P/IPC",
    " via NET/IB/0(3)/GDRDMA",
    " via SHM/direct/direct",
    "proxy.cc:858 -> 6",
    " [Proxy Thread]",
    " (Connection refused)",
    "comm 0x55d0 rank 3 nranks 8 cudaDev 3 nvmlDev 3 busId 1c000 commId 0xab",
    " - Init START",
    " - Init COMPLETE",
    "nRanks 8 nNodes 1 localRanks 8 localRank 3 MNNVL 0",
    "Init timings - ncclCommInitRank: rank 0 nranks 8 total 1.5 (kernels 0.1, topo x)",
    "Bootstrap : Using [0]eth0:10.0.0.1<0> [1]ib0:fe80::1%ib0<0>",
    "NET/IB : Using [0]mlx5_0:1/IB [RO]; OOB eth0:10.0.0.1<0>",
    "NET/IB: [0] mlx5_0:uverbs0:1/IB provider=Mlx5 speed=400000 ar=",
    "NET/Socket : Using ",
    "NET/Plugin : No plugin found (",
    "Loaded net plugin X (v",
    "GPU Direct RDMA Enabled for GPU 0 / HCA 1 (distance 3 <= ",
    "set by environment to ",
    "Invalid value x for NCCL_Y, using default ",
    "Got completion from peer 10.0.0.1<1> with status=",
    "IBV_WC_RETRY_EXC_ERR(12) opcode=",
    "vendor err 129 (Recv) localGid ",
    "Cuda failure 999 '",
    "Call to ibv_reg_mr failed with error ",
    "Duplicate GPU detected : rank 1 and rank 0 both on CUDA device ",
    "cudaDriverVersion 12020",
    "NVLS multicast support is not available on dev ",
    "[1,3]<stdout>:",
    "[rank2]:",
    "\n",
    ":",
    "'",
    "(",
    ")",
    "[",
    "]",
    " ",
]


def check(text: str) -> None:
    """Fed anchored lines only, and every line: no exception, facts cite lines of ``text``."""
    lines = lines_of(text, SOURCE)
    raws = {line.number: line.raw for line in lines}
    for anchored_only in (True, False):
        parser = NcclLogParser()
        facts: list[Fact] = []
        for line in lines:
            if anchored_only and not any(a in line.raw for a in parser.anchors):
                continue
            took = parser.feed(line)
            assert isinstance(took, bool)
            facts.extend(parser.take())
        facts.extend(parser.finish())
        check_facts(facts, raws)


@MUTATED_SETTINGS
@given(mutated(FIXTURES))
def test_mutated_fixtures(text: str) -> None:
    check(text)


@RANDOM_SETTINGS
@given(random_text(TOKENS))
def test_random_text(text: str) -> None:
    check(text)
