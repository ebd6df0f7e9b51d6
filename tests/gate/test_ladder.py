"""The repair ladder's table: every key is real, every hardware Xid gets a step."""

from __future__ import annotations

from collections import Counter

from nccl_doctor.gate.checks import CHECKS
from nccl_doctor.gate.ladder import _rung_of
from nccl_doctor.knowledge.repair_ladder import BY_ID, MECHANISMS, Step
from nccl_doctor.knowledge.xid import XIDS
from tests.knowledge._catalogue import catalogue_ids


def test_every_id_of_the_ladder_and_the_checks_is_in_the_catalogue() -> None:
    ids = catalogue_ids()
    assert ids is not None
    owned = [rid for spec in CHECKS for rid in spec.owns]
    assert set(BY_ID) <= ids
    assert set(owned) <= ids
    assert [rid for rid, n in Counter(owned).items() if n > 1] == []  # one home per id


def test_xid_rows_name_known_xids() -> None:
    codes = [int(k[4:]) for k in MECHANISMS if k.startswith("xid:")]
    assert [c for c in codes if c not in XIDS] == []


def test_hardware_xids_get_a_step_and_application_xids_none() -> None:
    for code, info in XIDS.items():
        rung = _rung_of(f"xid:{code}") or BY_ID[info.diagnosis_id]
        if info.severity == "critical" and info.likely_cause in (
            "hardware",
            "memory",
            "nvlink",
            "gsp",
        ):
            assert rung.step >= Step.RESET_GPU, code
        if info.likely_cause == "application":
            assert rung.step == Step.NONE, code


def test_escalation_is_always_a_bigger_step() -> None:
    for rung in [*MECHANISMS.values(), *BY_ID.values()]:
        assert rung.then is None or rung.then > rung.step, rung.reason
