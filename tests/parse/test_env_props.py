"""Property tests: the env parser never raises and cites real lines, on any input."""

from __future__ import annotations

from hypothesis import given

from nccl_doctor.parse.env import EnvParser
from tests.helpers import FORMATS
from tests.parse.mutations import (
    MUTATED_SETTINGS,
    RANDOM_SETTINGS,
    check_stream,
    mutated,
    random_text,
)

FIXTURES = [
    p.read_bytes().decode("utf-8", errors="replace")
    for folder in ("nccl-tests",)
    for p in sorted((FORMATS / folder).glob("*.txt"))
]
FIXTURES.append(
    "NCCL_DEBUG=INFO\nexport NCCL_IB_HCA=mlx5_0\nuser@h:~$ CUDA_VISIBLE_DEVICES=0 python t.py\n"
    'os.environ["MASTER_ADDR"] = "x"\n- name: NCCL_SOCKET_IFNAME\n  value: eth0\n'
    "mpirun -x NCCL_DEBUG=WARN ./a\nsetenv NCCL_P2P_LEVEL NVL\nENV NCCL_VERSION 2.1\n"
)
TOKENS = [
    "NCCL_DEBUG=",
    "INFO",
    "export ",
    "declare -x ",
    "$ ",
    "user@host:~$ ",
    " python t.py",
    'os.environ["NCCL_X"] = ',
    '"1"',
    "- name: NCCL_Y",
    "value: ",
    "-x ",
    "--export=ALL,",
    "setenv ",
    "ENV ",
    "'",
    '"',
    "\n",
    "=",
    " ",
]


@MUTATED_SETTINGS
@given(mutated(FIXTURES, TOKENS))
def test_mutated_samples(text: str) -> None:
    check_stream(EnvParser, text)


@RANDOM_SETTINGS
@given(random_text(TOKENS))
def test_random_text(text: str) -> None:
    check_stream(EnvParser, text)
