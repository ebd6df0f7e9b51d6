"""settings.worked: a setting someone says made the job work (one sign for every reader)."""

from __future__ import annotations

import pytest

from nccl_doctor.facts.base import Cite
from nccl_doctor.facts.store import Facts
from nccl_doctor.facts.text import TextLine
from nccl_doctor.signs.settings import SETTING_WORKED, settings_that_worked


def _facts(*texts: str) -> Facts:
    return Facts(TextLine(cite=Cite.of("t", i + 1, t), text=t) for i, t in enumerate(texts))


@pytest.mark.parametrize(
    ("line", "name", "value"),
    [
        ("Setting NCCL_IB_DISABLE=1 fixed it", "NCCL_IB_DISABLE", "1"),
        ("It works with NCCL_P2P_DISABLE=1 but it is much slower.", "NCCL_P2P_DISABLE", "1"),
        (
            "Setting NCCL_P2P_DISABLE=1 did workaround but got really low speed.",
            "NCCL_P2P_DISABLE",
            "1",
        ),
        ("solved by exporting NCCL_SOCKET_IFNAME=eth0 on both nodes", "NCCL_SOCKET_IFNAME", "eth0"),
        ("With GLOO_SOCKET_IFNAME=ib0 set it now runs", "GLOO_SOCKET_IFNAME", "ib0"),
    ],
)
def test_a_setting_that_worked_is_read_with_its_value(line: str, name: str, value: str) -> None:
    (worked,) = settings_that_worked(_facts(line))
    assert (worked.name, worked.value, worked.prose) == (name, value, True)


@pytest.mark.parametrize(
    "line",
    [
        "NCCL_P2P_DISABLE=1 did not help, it still hangs.",  # negated
        "With NCCL_SOCKET_IFNAME=eth0 the bootstrap works, but the first allreduce hangs.",
        "NCCL_IB_HCA=mlx5_0 python -m torch.distributed.run --nproc_per_node 8 train.py",
        "Launching with NCCL_IB_HCA=mlx5_0,mlx5_1 for the fine-tuning job",
        "NCCL_DEBUG=INFO",
    ],
)
def test_a_line_that_does_not_say_it_worked_is_none(line: str) -> None:
    assert settings_that_worked(_facts(line)) == ()


def test_the_value_is_taken_whole_so_a_long_run_is_not_split_again() -> None:
    m = SETTING_WORKED.regex.search("NCCL_TOPO_FILE=" + "p" * 40 + " " + "y" * 90 + " helped")
    assert m is not None
    assert (m["name"], len(m["value"])) == ("NCCL_TOPO_FILE", 40)
    assert SETTING_WORKED.regex.search("NCCL_X=1 " + "y" * 101 + " works") is None
