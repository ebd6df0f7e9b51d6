"""A switch NCCL says it took from the environment weighs as one the environment shows.

NCCL echoes every variable it reads (``NCCL_P2P_DISABLE set by environment to 1.``),
whatever set it: the job's environment, an image's ``/etc/nccl.conf``, a launcher. A hang
with P2P switched off is not P2P's (the differential's own shift), whether ``env`` or NCCL's
log says so.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

from tests.helpers import diagnose_text

if TYPE_CHECKING:
    from pathlib import Path

HOST = "node1:4021:4021 [0] NCCL INFO "
LOG = (
    f"{HOST}NCCL version 2.19.3+cuda12.3\n"
    "{echo}"
    f"{HOST}comm 0x55e7d4c8e2a0 rank 0 nranks 8 cudaDev 0 nvmlDev 0 busId 18000 "
    "commId 0x1a8dd0e7f17c45b3 - Init START\n"
    "The job hangs at the first all_reduce on this one node, nothing more is printed.\n"
)


@pytest.mark.parametrize(
    "echo", [f"{HOST}NCCL_P2P_DISABLE set by environment to 1.\n", "NCCL_P2P_DISABLE=1\n"]
)
def test_p2p_switched_off_weighs_against_p2p(tmp_path: Path, echo: str) -> None:
    report = diagnose_text(tmp_path, LOG.format(echo=echo))
    assert [h.id for h in report.hypotheses[:2]] == ["app.hang", "app.collective_mismatch"]
    assert "nccl.p2p" not in report.top(3)


def test_p2p_left_on_does_not(tmp_path: Path) -> None:
    report = diagnose_text(
        tmp_path, LOG.format(echo=f"{HOST}NCCL_P2P_DISABLE set by environment to 0.\n")
    )
    assert report.top(1) == ["nccl.p2p"]
