"""Rank lists as people write them."""

from __future__ import annotations

import pytest

from nccl_doctor.facts.ranks import ranges, ranks_text


@pytest.mark.parametrize(
    ("ranks", "text"),
    [
        ([3], "rank 3"),
        ([0, 1], "ranks 0, 1"),
        ([0, 2, 3], "ranks 0, 2, 3"),
        ([*range(4), *range(5, 512)], "ranks 0-3, 5-511"),
        ([7, 1, 2, 3, 3, 9], "ranks 1-3, 7, 9"),
    ],
)
def test_ranks_text(ranks: list[int], text: str) -> None:
    assert ranks_text(ranks) == text


def test_ranges_of_nothing() -> None:
    assert ranges([]) == ""
