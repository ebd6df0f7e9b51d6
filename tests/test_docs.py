"""The project's copies of the public contracts match their shared source."""

from __future__ import annotations

import pytest

from tests.knowledge._catalogue import CATALOGUE, SHARED_CATALOGUE, catalogue_ids


def test_catalogue_copy_matches_shared_spec() -> None:
    if not SHARED_CATALOGUE.is_file():
        pytest.skip("shared/spec is not laid out beside this checkout")
    assert CATALOGUE.read_text(encoding="utf-8") == SHARED_CATALOGUE.read_text(encoding="utf-8")


def test_catalogue_has_the_43_ids_of_v1() -> None:
    ids = catalogue_ids()
    assert ids is not None
    assert len(ids) == 43
    assert {"gpu.contention", "cuda.unknown_error", "launch.rank_crash", "host.resources"} <= ids
