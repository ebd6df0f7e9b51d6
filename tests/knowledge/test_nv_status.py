"""The driver's NV_STATUS table: names, numbers and ids, as nvstatuscodes.h has them."""

from __future__ import annotations

from nccl_doctor.knowledge.nv_status import STATUSES, status
from nccl_doctor.rules import CATALOGUE


def test_a_status_is_found_by_its_name_and_by_its_number() -> None:
    lost = status(name="NV_ERR_GPU_IS_LOST")
    assert lost is not None
    assert (lost.code, lost.text, lost.id) == (0x0F, "GPU lost from the bus", "gpu.lost")
    assert status(code=0x62) == status(name="NV_ERR_RESET_REQUIRED")
    assert status(code=0x77).id == "gpu.nvlink"  # type: ignore[union-attr]
    assert status(code=0x8A).id == "nccl.nvls"  # type: ignore[union-attr]


def test_the_statuses_a_healthy_machine_prints_are_not_kept() -> None:
    for name in ("NV_ERR_NOT_SUPPORTED", "NV_ERR_OBJECT_NOT_FOUND", "NV_ERR_INVALID_ARGUMENT"):
        assert status(name=name) is None
    assert status(name="NV_ERR_TIMEOUT") is None
    assert status(code=0x56) is None
    assert status() is None


def test_every_status_is_unique_and_points_to_a_catalogue_id() -> None:
    assert len({s.name for s in STATUSES}) == len(STATUSES)
    assert len({s.code for s in STATUSES}) == len(STATUSES)
    for s in STATUSES:
        assert s.name.startswith("NV_ERR_")
        assert s.id in CATALOGUE, s
