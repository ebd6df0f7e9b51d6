"""Typed errors the library raises; the CLI turns them into one-line messages."""

from __future__ import annotations


class DoctorError(Exception):
    """An error the user can act on: a message and a hint, never a traceback."""

    def __init__(self, message: str, hint: str = "") -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint


class EvidenceError(DoctorError):
    """No usable evidence could be read from what the user gave."""


class UsageError(DoctorError):
    """The command line asks for something that does not exist."""
