"""Facts.of gathers a class and its subclasses in reading order, from an index by type."""

from __future__ import annotations

from nccl_doctor.facts.base import Cite, Fact
from nccl_doctor.facts.nccl import NcclLogFact, NcclVersion, NcclWarn
from nccl_doctor.facts.store import Facts
from nccl_doctor.facts.text import TextLine


def _cite(n: int) -> Cite:
    return Cite.of("a.log", n, f"line {n}")


def test_of_a_base_class_merges_its_subclasses_in_reading_order() -> None:
    facts = [
        NcclWarn(cite=_cite(1), message="a"),
        TextLine(cite=_cite(2), text="x"),
        NcclVersion(cite=_cite(3), version_text="2.21.5", version="2.21.5"),
        NcclWarn(cite=_cite(4), message="b"),
        NcclVersion(cite=_cite(5), version_text="2.18.1", version="2.18.1"),
    ]
    store = Facts(facts)
    assert [f.cite.line for f in store.of(NcclLogFact)] == [1, 3, 4, 5]
    assert [f.cite.line for f in store.of(NcclWarn)] == [1, 4]
    assert [f.cite.line for f in store.of(Fact)] == [1, 2, 3, 4, 5]
    assert store.of(NcclWarn) is store.of(NcclWarn)  # asked once, kept
    assert Facts([]).of(NcclWarn) == ()
