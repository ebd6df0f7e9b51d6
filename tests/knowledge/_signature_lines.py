"""Reading one realistic line of a library's message through the catalogue lookup."""

from __future__ import annotations

from nccl_doctor.facts.catalogue import signature_of


def assert_reads_as(line: str, ident: str, symptom: str, fields: dict[str, str]) -> None:
    """``line`` is read as the message ``ident`` of class ``symptom``, with these fields."""
    sig = signature_of(line)
    assert sig is not None, line
    assert (sig.id, sig.symptom) == (ident, symptom)
    m = sig.compiled().search(line)
    assert m is not None
    assert {k: m.group(k) for k in fields} == fields
