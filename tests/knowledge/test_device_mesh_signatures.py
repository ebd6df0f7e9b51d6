"""DeviceMesh's and DTensor's checks that say the ranks set up the mesh differently: each read
as its own message (as torch raises it, in a rank's traceback), and a near line that is not."""

from __future__ import annotations

import pytest

from nccl_doctor.facts.catalogue import signature_of
from tests.knowledge._signature_lines import assert_reads_as

READS = [
    (
        (
            "[rank3]: RuntimeError: Each device mesh dimension should get only one process "
            "group, but got 3 in [2, 3]!"
        ),
        "torch.device_mesh.rank_in_two_groups",
        "desync",
        {"get_rank": "3", "subgroup_ranks": "[2, 3]"},
    ),
    (
        "ValueError: Invalid mesh [0, 1, 2, 3] for ProcessGroup with ranks [0, 1]",
        "torch.device_mesh.invalid_mesh_for_group",
        "app_error",
        {"mesh": "[0, 1, 2, 3]", "group_ranks": "[0, 1]"},
    ),
    (
        "[rank1]: ValueError: Non-sharded dimensions should have identical size across ranks.",
        "torch.dtensor.shape_differs_across_ranks",
        "desync",
        {},
    ),
]

NEAR_MISSES = [
    "Each device mesh dimension has its own process group",
    "ValueError: Invalid mesh shape (2, 4)",
    "Sharded dimensions may have different sizes across ranks.",
]


@pytest.mark.parametrize(("line", "ident", "symptom", "fields"), READS)
def test_the_line_reads_as_its_message(
    line: str, ident: str, symptom: str, fields: dict[str, str]
) -> None:
    assert_reads_as(line, ident, symptom, fields)


@pytest.mark.parametrize("line", NEAR_MISSES)
def test_a_near_line_is_not_read_as_one(line: str) -> None:
    sig = signature_of(line)
    assert sig is None or not sig.id.startswith(("torch.device_mesh.", "torch.dtensor."))
