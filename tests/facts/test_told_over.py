"""A failure a person's sentence tells as not happening is no failure of the job's.

Reporters quote messages to say they are gone: "we no longer see 'Too many open files'",
"'Address already in use' no longer shows up since we changed MASTER_PORT". A message a
sentence quotes with a denial just before it (or before the quotation that holds it), or
says is over after it, gives no failure fact and no critical finding; one quoted as
happening, as new ("never seen ... before") or with doubt ("no idea what ... means") keeps
them; one gone only under a workaround ("... went away once we lowered the batch size")
stands.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

import pytest

from nccl_doctor.facts.told import denied, over, quotation_start, told_over
from tests.helpers import critical_ids, diagnose_text

if TYPE_CHECKING:
    from pathlib import Path


def _at(text: str, words: str) -> tuple[int, int]:
    found = re.search(re.escape(words), text)
    assert found is not None
    return found.start(), found.end()


def test_a_denial_before_the_quotation_that_holds_the_words() -> None:
    text = 'We don\'t get "NCCL WARN NET/IB : Got completion from peer" anymore.'
    start, _ = _at(text, "NET/IB")
    assert quotation_start(text, start) == text.index('"')
    assert denied(text, start)
    # an apostrophe opens no quotation
    plain = "We don't see NET/IB errors on node 3"
    assert quotation_start(plain, plain.index("NET/IB")) == plain.index("NET/IB")


@pytest.mark.parametrize(
    ("text", "words", "expected"),
    [
        ("We never saw 'unhandled system error' again after upgrading.", "unhandled", True),
        ("No idea what 'unhandled system error' means.", "unhandled", False),
        ("Not sure why 'Too many open files' shows up.", "Too many", False),
        ("I have never seen 'Duplicate GPU detected' before.", "Duplicate", False),
        ("It doesn't start: 'Address already in use'.", "Address", False),
    ],
)
def test_denied(text: str, words: str, expected: bool) -> None:
    assert denied(text, _at(text, words)[0]) is expected


@pytest.mark.parametrize(
    ("text", "words", "expected"),
    [
        ("'Address already in use' no longer shows up since we changed the port.", "Address", True),
        ("The 'out of memory' error went away once we lowered the batch size.", "out of", False),
        ("The hang is gone when I set NCCL_P2P_DISABLE=1.", "hang", False),
        ("The segfault was fixed by upgrading, but now it hangs.", "segfault", True),
        ("The OOM was fixed by upgrading. Now 'Too many open files' appears.", "Too many", False),
    ],
)
def test_over(text: str, words: str, expected: bool) -> None:
    assert over(text, *_at(text, words)) is expected
    assert told_over(text, *_at(text, words)) is expected


@pytest.mark.parametrize(
    "said",
    [
        'We no longer see "Too many open files" after raising ulimit -n.',
        "We no longer get 'Duplicate GPU detected' after fixing LOCAL_RANK.",
        "'Address already in use' no longer shows up since we changed MASTER_PORT.",
        'After the fix there is no more "CUDA error: an illegal memory access was encountered".',
        "Previously it died with 'received 0 items of ancdata', which is fixed now.",
        'We don\'t get "NCCL WARN NET/IB : Got completion from peer" anymore since the swap.',
        "We never saw 'unhandled system error' again after upgrading NCCL.",
    ],
)
def test_a_failure_told_over_gives_no_finding_and_no_class(tmp_path: Path, said: str) -> None:
    report = diagnose_text(tmp_path, said + "\n")
    assert critical_ids(report) == []
    assert report.top(3) == []


@pytest.mark.parametrize(
    ("said", "expected"),
    [
        ("Training dies with 'Duplicate GPU detected' on every run.", "nccl.duplicate_gpu"),
        ("I don't know why but we get 'Too many open files' at epoch 3.", "host.resources"),
        ("It doesn't start: 'Address already in use'.", "launch.port_in_use"),
        (
            'I have never seen "Duplicate GPU detected" before, any idea what it means?',
            "nccl.duplicate_gpu",
        ),
        (
            'Not sure why "CUDA error: an illegal memory access was encountered" shows up.',
            "cuda.illegal_access",
        ),
        ('The error "Too many open files" is back after the reboot.', "host.resources"),
        # gone only under a workaround: the failure stands
        (
            "The \"Cuda failure 'out of memory'\" from NCCL went away once we lowered the batch.",
            "gpu.oom",
        ),
    ],
)
def test_a_failure_told_as_happening_keeps_its_finding(
    tmp_path: Path, said: str, expected: str
) -> None:
    report = diagnose_text(tmp_path, said + "\n")
    assert critical_ids(report) == [expected]


@pytest.mark.parametrize(
    ("said", "rule"),
    [
        (
            'The "Xid 79, GPU has fallen off the bus" errors are gone since we reseated it.',
            "gpu.lost",
        ),
        ("After the RMA there is no more 'uncorrectable ECC error' in dmesg.", "gpu.ecc"),
    ],
)
def test_a_gpu_fault_told_over_gives_no_gpu_finding(tmp_path: Path, said: str, rule: str) -> None:
    report = diagnose_text(tmp_path, said + "\n")
    assert rule not in [f.id for f in report.findings]
    # the same fault told as happening keeps it
    happening = said.replace("are gone since we reseated it", "keep coming back").replace(
        "After the RMA there is no more", "Every night dmesg shows"
    )
    assert rule in [f.id for f in diagnose_text(tmp_path, happening + "\n").findings]


def test_a_later_mention_the_sentence_does_not_take_back_still_counts(tmp_path: Path) -> None:
    said = (
        "No ECC errors on GPUs 0-6 any more, but GPU 7 shows uncorrectable ECC errors and the "
        "job dies.\n"
    )
    assert "gpu.ecc" in [f.id for f in diagnose_text(tmp_path, said).findings]
    limit = (
        "Node1 no longer hits too many open files after the ulimit change, but node2 still "
        "fails with too many open files.\n"
    )
    assert critical_ids(diagnose_text(tmp_path, limit)) == ["host.resources"]
