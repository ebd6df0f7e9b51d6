"""Property tests: the InfiniBand parsers never raise and cite real lines, on any input."""

from __future__ import annotations

from hypothesis import example, given

from nccl_doctor.parse.base import BlockParser
from nccl_doctor.parse.infiniband import (
    Ibdev2netdevParser,
    IbstatParser,
    IbstatusParser,
    IbvDevinfoParser,
)
from tests.helpers import FORMATS
from tests.parse.mutations import (
    MUTATED_SETTINGS,
    RANDOM_SETTINGS,
    check_blocks,
    mutated,
    random_text,
)

#: An ibv_devinfo port section (a fragment's tail).
_PORT = (
    "                        state:                  PORT_ACTIVE (4)\n"
    "                        max_mtu:                4096 (5)\n"
    "                        link_layer:             InfiniBand\n"
)

PARSERS: list[BlockParser] = [
    IbstatusParser(),
    IbstatParser(),
    IbvDevinfoParser(),
    Ibdev2netdevParser(),
]
EXAMPLE = FORMATS.parents[2] / "examples" / "h200-cuda-999" / "ibstatus.txt"
FIXTURES = [
    p.read_bytes().decode("utf-8", errors="replace")
    for kind in ("ibstatus", "ibstat", "ibv_devinfo")
    for p in sorted((FORMATS / kind).glob("*.txt"))
] + [
    EXAMPLE.read_bytes().decode("utf-8", errors="replace"),
    (
        "mlx5_0 port 1 ==> ib0 (Up)\nmlx4_0 port 1 <===> ib0\n"
        "0000:0c:00.0 mlx5_0 (MT4123 - MCX653105A-HDAT) ConnectX-6 VPI fw 20.31.1014 "
        "port 1 (ACTIVE) ==> ib0 (Up)\n"
    ),
]
TOKENS = [
    "Infiniband device 'mlx5_0' port 1 status:",
    "\tstate:\t\t ",
    "4: ACTIVE",
    "phys state:",
    "rate:",
    " Gb/sec (4X EDR)",
    "CA 'mlx5_0'",
    "\tPort 1:",
    "State: ",
    "Rate: ",
    "0x",
    "hca_id:\t",
    "\t\tport:\t1",
    "PORT_ACTIVE (4)",
    "max_mtu:",
    "4096 (5)",
    " ==> ",
    " <===> ",
    " port 1 ",
    "(Up)",
    "(MT4123 - NA)",
    " fw ",
    "\n",
    ":",
    "'",
    "\t",
    "  ",
]


def check(text: str) -> None:
    """Blocks start on anchored lines; facts are Facts citing lines of ``text``."""
    for parser in PARSERS:
        check_blocks(parser, text)


@MUTATED_SETTINGS
@given(mutated(FIXTURES))
# a port state cut short ("PORT_A") started an ibv_devinfo block on a line without an anchor
@example("                        state:                  PORT_A\n" + _PORT)
def test_mutated_fixtures(text: str) -> None:
    check(text)


@RANDOM_SETTINGS
@given(random_text(TOKENS))
def test_random_text(text: str) -> None:
    check(text)
