"""The kinds of PyTorch message the torch miner reads (``mine_torch.py``), one dataclass each.

``Cpp``: a C++ message, written as its source builds it (``{name}`` for each
piece ``c10::str`` / ``TORCH_CHECK`` / ``LOG`` streams in), present in a
release when every literal piece of ``check`` is in that release's binaries.
``Assert``: a ``TORCH_INTERNAL_ASSERT`` / ``TORCH_CHECK`` without a message,
whose text the binaries hold whole (with the source file and, for an
internal assert, its line). ``Py``: a Python message, found by ``anchor``
(a regex) among the strings of ``file`` at each release (or of ``moved``, the
modules it lived in before). ``Exc``: an
exception class PyTorch raises without a message (the traceback's last line
is its name alone), found by its ``class`` statement in ``file``.

``symptom`` and ``hints`` say what the code that prints the message was doing
when it failed (the differential's symptom class and the catalogue ids it
points at). A ``Cpp`` with ``cuda`` set reports that CUDA runtime error: its
class and id come from :mod:`nccl_doctor.knowledge.cuda_errors`, unless
``symptom``/``hints`` say otherwise.
"""

from __future__ import annotations

from dataclasses import dataclass

C10D = "torch/csrc/distributed/c10d/"
#: c10d's sources lived here up to torch 1.9
C10D_OLD = "torch/lib/c10d/"


@dataclass(frozen=True)
class Cpp:
    id: str
    file: str
    format: str
    check: tuple[str, ...]
    symptom: str = ""
    hints: tuple[str, ...] = ()
    level: str = "error"
    pattern: str | None = None
    fields: tuple[str, ...] | None = None
    note: str = ""
    example: str = ""
    cuda: str = ""
    #: pieces whose presence means the release prints another form of the message
    absent: tuple[str, ...] = ()
    #: the message passes on another's text (an error it caught): read after every other
    relays: bool = False


@dataclass(frozen=True)
class Assert:
    id: str
    file: str
    condition: str
    symptom: str
    hints: tuple[str, ...] = ()
    note: str = ""


@dataclass(frozen=True)
class Py:
    id: str
    file: str
    anchor: str
    symptom: str
    hints: tuple[str, ...] = ()
    level: str = ""
    note: str = ""
    relays: bool = False
    #: the files the message lived in at older releases (``file`` first, then these)
    moved: tuple[str, ...] = ()


@dataclass(frozen=True)
class Exc:
    id: str
    file: str
    name: str
    symptom: str
    hints: tuple[str, ...] = ()
    note: str = ""
