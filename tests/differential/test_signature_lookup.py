"""The signature lookup finds a text's candidates by their words, and answers as trying each
indexed signature in order would."""

from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING

from nccl_doctor.facts import catalogue as signatures
from nccl_doctor.facts.catalogue import harmless_lead, signature_of
from nccl_doctor.facts.literals import holds
from nccl_doctor.knowledge.signatures import Signature, load_signatures

if TYPE_CHECKING:
    import pytest

CASES = Path(__file__).parents[1] / "cases"


def _in_order(text: str) -> Signature | None:
    """Every indexed signature tried in order: what the lookup must answer (no failure where
    the most specific message is a harmless one)."""
    lowered = text.lower()
    for clauses, sig in signatures._index():
        if holds(lowered, clauses) and sig.compiled().search(text):
            return None if signatures.harmless(sig) else sig
    return None


def _texts() -> list[str]:
    texts = [s.example for s in load_signatures() if s.example]
    lines: set[str] = set()
    for path in sorted(CASES.rglob("*")):
        if path.is_file() and path.suffix in {".log", ".txt"}:
            lines.update(x for x in path.read_text(errors="replace").splitlines() if x.strip())
    texts += sorted(lines)[:3000]
    texts += [t.upper() for t in texts[::17]] + ["", "NCCL WARN", "内存不足 out of memory"]
    # the same shapes with other digits: words with digits (A100, error 12) must still decide
    texts += [re.sub(r"\d", "7", t) for t in texts[3::7]] + [
        re.sub(r"\d", "1", t) for t in texts[5::7]
    ]
    return texts


def test_the_lookup_answers_as_trying_every_signature_in_order() -> None:
    texts = _texts()
    found = [signature_of(t) for t in texts]
    assert found == [_in_order(t) for t in texts]
    assert sum(f is not None for f in found) > 100  # many texts are catalogued messages


def test_a_text_is_tried_against_the_signatures_of_its_words_only(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    tried: list[str] = []
    index = signatures._index()

    class Spy(tuple):  # type: ignore[type-arg]
        """The index, counting the signatures tried."""

        def __getitem__(self, at: object) -> object:
            item = tuple.__getitem__(self, at)  # type: ignore[call-overload]
            tried.append(item[1].id)
            return item

    monkeypatch.setattr(signatures, "_index", lambda: Spy(index))
    sig = signature_of(
        "NCCL WARN Duplicate GPU detected : rank 2 and rank 3 both on CUDA device 3a000"
    )
    assert sig is not None
    assert 0 < len(tried) < 20 < len(index)


def test_texts_of_one_shape_look_for_their_words_once() -> None:
    """512 ranks' watchdog messages differ in their numbers only: one look for the words."""
    signatures._could.cache_clear()
    texts = [
        f"[Rank {r}] Watchdog caught collective operation timeout: WorkNCCL(SeqNum={r % 9}, "
        f"OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for 60001{r % 10} "
        "milliseconds before timing out."
        for r in range(100, 612)
    ]
    found = {signature_of(t) for t in texts}
    assert len(found) == 1
    assert None not in found
    assert signatures._could.cache_info().misses == 1


def test_a_message_filled_with_a_library_name_matches_that_name_only() -> None:
    # gdrwrap.cc prints "Failed to open %s" with GDRAPI_LIBNAME: the row holds the name, so a
    # daemon's own "Failed to open <its library>" is not read as NCCL's gdrcopy (NCCL goes on
    # without GDRCopy: the row is a harmless one)
    ours = harmless_lead("node1:2201:2290 [0] NCCL WARN Failed to open libgdrapi.so")
    assert ours is not None
    assert ours.id == "nccl.warn.gdrwrap.failed_to_open"
    assert ours.hint_ids == ("net.gdr",)
    theirs = signature_of(
        "nvidia-persistenced[1873]: Failed to open libnvidia-cfg.so.1: libnvidia-cfg.so.1: "
        "cannot open shared object file: No such file or directory"
    )
    assert theirs is None or not theirs.id.startswith("nccl.warn.gdrwrap")
