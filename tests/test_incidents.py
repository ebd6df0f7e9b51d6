"""The diagnosis on real incidents: the score must not fall below what it reached.

``tests/fixtures/incidents`` is the development corpus; ``incidents-heldout``
was collected without looking at the rules and scored before any rule was
changed for it (70% top-1 then), and has been worked on since;
``incidents-blind`` likewise (52% top-1 when first scored).
``incidents-dev-2026-12`` (90 real threads) was scored once before any tuning
(46% top-1, 50% top-3, 27% empty) and is now development data; 14 more
(``INDEX-D.md``) were scored once before tuning on them (43% / 57%), 10 more
(``INDEX-E.md``) likewise (60% / 60%), 11 more (``INDEX-F.md``) likewise (45% / 45%). The
retired blind corpora hold the scores they reached as development data. The figures per
incident come from ``scripts/score_incidents.py``.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "scripts"))

from score_incidents import score  # noqa: E402 -- the scorer is a script

CORPORA = {
    "incidents": (0.95, 0.97),
    "incidents-heldout": (0.90, 0.93),
    "incidents-blind": (0.80, 0.80),
    "incidents-dev-2026-12": (0.68, 0.78),
    # the blind corpora of sessions 5-9, development data since session 11 (their SOURCE.md)
    "incidents-retired-2026-12": (0.58, 0.74),
    "incidents-retired-2026-12b": (0.66, 0.78),
    "incidents-retired-2026-12c": (0.57, 0.71),
    # the blind corpora of sessions 8 and 9, development data since session 23
    "incidents-retired-2026-12d": (0.53, 0.71),
    "incidents-retired-2026-12e": (0.42, 0.64),
    # the blind corpora of sessions 11-13, development data since session 24
    "incidents-retired-2026-12f": (0.38, 0.61),
    "incidents-retired-2026-12g": (0.27, 0.45),
    "incidents-retired-2026-12h": (0.66, 0.66),
    # every other one of the blind corpora of sessions 14-36, development data since session 43
    "incidents-retired-2026-12i": (0.55, 0.66),
    "incidents-retired-2026-12k": (0.40, 0.60),
    "incidents-retired-2026-12m": (0.60, 0.60),
    "incidents-retired-2026-12o": (0.63, 0.72),
    "incidents-retired-2026-12q": (0.55, 0.66),
    "incidents-retired-2026-12s": (0.43, 0.81),
    "incidents-retired-2026-12u": (0.16, 0.33),
    "incidents-retired-2026-12w": (0.55, 0.66),
    "incidents-retired-2026-12y": (0.60, 0.60),
}
#: The corpora without a healthy run among their incidents (their collectors found none).
NO_HEALTHY = frozenset(
    {
        "incidents-retired-2026-12g",
        "incidents-retired-2026-12k",
        "incidents-retired-2026-12m",
        "incidents-retired-2026-12s",
        "incidents-retired-2026-12u",
        "incidents-retired-2026-12w",
    }
)


@pytest.mark.parametrize("corpus", sorted(CORPORA))
def test_incident_score_holds(corpus: str) -> None:
    rows = score([ROOT / "tests" / "fixtures" / corpus])
    top1 = sum(bool(r["top1"]) for r in rows) / len(rows)
    top3 = sum(bool(r["top3"]) for r in rows) / len(rows)
    misses = [f"{r['case']}: {r['expected']} got {r['top']}" for r in rows if not r["top3"]]
    assert top1 >= CORPORA[corpus][0], misses
    assert top3 >= CORPORA[corpus][1], misses


@pytest.mark.parametrize("corpus", sorted(set(CORPORA) - NO_HEALTHY))
def test_healthy_incidents_get_no_critical(corpus: str) -> None:
    rows = score([ROOT / "tests" / "fixtures" / corpus])
    healthy = [r for r in rows if r["expected"] == "none"]
    assert healthy
    assert all(r["top1"] for r in healthy), healthy


def test_derive_priors_counts_each_incident_under_its_lead_symptom(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The script the priors table cites reads the lead symptom as the differential does."""
    from derive_priors import main

    monkeypatch.setattr(
        sys, "argv", ["derive_priors.py", str(ROOT / "tests" / "fixtures" / "incidents")]
    )
    assert main() == 0
    lines = {line.split()[0]: line for line in capsys.readouterr().out.splitlines()}
    cases = (ROOT / "tests" / "fixtures" / "incidents").glob("*/case.json")
    failing = sum(json.loads(case.read_text())["expected"] != "none" for case in cases)
    counted = sum(int(line.split("n=")[1].split()[0]) for line in lines.values())
    assert counted == failing
    assert "launch.port_in_use 2" in lines["store_create"]
    assert "nccl.shm 1" in lines["nccl_system"]


#: The development corpora: incidents-heldout and incidents-blind were collected blind in
#: November, incidents-retired-2026-12* in December, and each has been tuned on since its
#: blind score was reported (their SOURCE.md says so); the blind corpora still held out
#: (incidents-blind-2026-12*) are never read here.
DEV = (
    "incidents-dev-2026-12",
    "incidents",
    "incidents-heldout",
    "incidents-blind",
    "incidents-retired-2026-12",
    "incidents-retired-2026-12b",
    "incidents-retired-2026-12c",
    "incidents-retired-2026-12d",
    "incidents-retired-2026-12e",
    "incidents-retired-2026-12f",
    "incidents-retired-2026-12g",
    "incidents-retired-2026-12h",
    "incidents-retired-2026-12i",
    "incidents-retired-2026-12k",
    "incidents-retired-2026-12m",
    "incidents-retired-2026-12o",
    "incidents-retired-2026-12q",
    "incidents-retired-2026-12s",
    "incidents-retired-2026-12u",
    "incidents-retired-2026-12w",
    "incidents-retired-2026-12y",
)


def test_each_common_classs_commonest_cause_is_among_its_first_three_priors(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The priors table is checked against the development corpora's counts (never a blind one).

    For every symptom class that leads at least 7 development incidents, the id
    those incidents most often turned out to be is one of the class's three
    largest priors: a table that drifted from the evidence fails here.
    """
    from derive_priors import main

    from nccl_doctor.differential.priors import PRIORS

    argv = ["derive_priors.py", *(str(ROOT / "tests" / "fixtures" / c) for c in DEV)]
    monkeypatch.setattr(sys, "argv", argv)
    assert main() == 0
    checked = []
    for line in capsys.readouterr().out.splitlines():
        cls, n_text, rest = re.fullmatch(r"(.+?)\s+n=\s*(\d+)\s+(.*)", line).groups()  # type: ignore[union-attr]
        n = int(n_text)
        counts = [item.rsplit(" ", 1) for item in rest.split(", ")]
        commonest, most = counts[0][0], int(counts[0][1])
        tied = {i for i, c in counts if int(c) == most}
        if cls not in PRIORS or n < 7 or len(tied) > 2:
            continue
        first3 = [p.id for p in sorted(PRIORS[cls], key=lambda p: -p.weight)[:3]]
        assert tied & set(first3), (cls, commonest, first3)
        checked.append(cls)
    assert len(checked) >= 8, checked
