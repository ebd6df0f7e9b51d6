"""The default process group, read once from ProcessGroupNCCL's ``[PG ... Rank r]`` prefix."""

from __future__ import annotations

from pathlib import Path

import pytest

from nccl_doctor.evidence.reader import read_paths
from nccl_doctor.facts.job import world
from nccl_doctor.facts.run import default_group
from nccl_doctor.pipeline import facts_of


@pytest.mark.parametrize(
    ("pg", "default"),
    [
        (None, True),  # a message without the prefix
        ("0", True),  # torch 2.1-2.2: [PG 0 Rank r]
        ("ID 0 PG GUID 0(default_pg)", True),  # torch 2.3+
        ("ID 0 PG GUID 0", True),
        ("3", False),
        ("ID 3 PG GUID 7", False),
        ("ID 10 PG GUID 10(dp_replicate)", False),
    ],
)
def test_the_default_group_is_read_from_the_prefix(pg: str | None, default: bool) -> None:
    assert default_group(pg) is default


def _options(rank: int, pg: str, size: int) -> str:
    return (
        f"[rank{rank}]:[I1204 09:12:01.101223311 ProcessGroupNCCL.cpp:978] [PG {pg} Rank {rank}] "
        f"ProcessGroupNCCL initialization options: size: {size}, global rank: {rank}, "
        "TIMEOUT(ms): 600000, USE_HIGH_PRIORITY_STREAM: 0, SPLIT_FROM: 0, SPLIT_COLOR: -2, "
        "PG Name: 0\n"
    )


def test_the_world_is_the_default_groups_size_in_torch_2_3s_prefix(tmp_path: Path) -> None:
    path = tmp_path / "train.log"
    path.write_text(
        _options(0, "ID 0 PG GUID 0(default_pg)", 16) + _options(0, "ID 1 PG GUID 1", 8)
    )
    found = world(facts_of(read_paths([str(path)])))
    assert (found.size, found.how) == (16, "process group")
