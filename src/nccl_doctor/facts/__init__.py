"""Typed, frozen facts read from evidence. Every fact cites its source line."""

from nccl_doctor.facts.base import Cite, Fact

__all__ = ["Cite", "Fact"]
