"""A Docker container on a bridge network has an address private to its host; a Kubernetes
pod's address is routable across the cluster. Only the first weighs for the interface."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.helpers import diagnose_text

_WHY = "the container's bridge address, private to its host"
_FAILS = (
    "torch.distributed.DistStoreError: Timed out after 901 seconds waiting for clients. "
    "1/2 clients joined.\n"
)


@pytest.mark.parametrize(
    ("said", "bridge"),
    [
        ("We run the training in docker containers on 2 nodes.\n", True),
        ("We run the training in Kubernetes pods on 2 nodes (a PyTorchJob).\n", False),
    ],
)
def test_only_a_bridge_network_weighs_for_the_interface(
    tmp_path: Path, said: str, bridge: bool
) -> None:
    report = diagnose_text(tmp_path, said + _FAILS)
    reasons = [r for h in report.hypotheses for r in h.for_]
    assert any(_WHY in r for r in reasons) is bridge
