"""A one-line Python print of the versions torch runs, and what it printed.

People check a node's stack with ``python -c "import torch; print(torch.__version__,
torch.cuda.nccl.version())"`` (often inside ``docker run`` or after ``ssh node``) and paste
the command with its output, ``2.2.2+cu121 (2, 19, 3)``, on the next line: the NCCL that
machine's torch runs. The print's arguments name what each printed value is, in order;
``torch.cuda.nccl.version()`` prints a tuple (older torch printed NCCL's version code:
``2708`` is 2.7.8, ``21003`` 2.10.3). The machine is the one the command's prompt names
(``gpu-h03$``, ``user@node2:~$``). The interactive interpreter's ``>>> print(...)`` and
``>>> torch.cuda.nccl.version()`` count too. A sentence that quotes the command, or a print
inside a script, gives nothing (its line stays the reporter's words).
"""

from __future__ import annotations

from collections.abc import Sequence

from nccl_doctor.evidence.lines import Line
from nccl_doctor.facts.base import Fact
from nccl_doctor.facts.software import VersionPrint
from nccl_doctor.parse._lazy import LazyPattern
from nccl_doctor.parse._values import cite
from nccl_doctor.parse.base import BlockParser

#: What each printed expression is.
_EXPRESSIONS = {
    "torch.__version__": "torch",
    "torch.version.cuda": "cuda",
    "torch.cuda.nccl.version()": "nccl",
}
#: The print's argument list (one level of parentheses inside: the version call's own).
_PRINT = LazyPattern(r"\bprint\((?P<args>[^()\n]{0,400}(?:\([^()\n]{0,40}\)[^()\n]{0,200}){0,6})\)")
#: A shell prompt before a command: ``user@node2:~$``, ``[user@node2 dir]$`` (the machine in
#: ``host``), ``gpu-h03$`` (in ``bare``), or a bare ``$``.
_PROMPT_SOURCE = (
    r"(?:\([\w.@-]{1,60}\)\s*)?"
    r"(?:\[?[\w.-]{1,64}@(?P<host>[\w.-]{1,64})(?:[: ][^\s$#\]]{0,200})?\]?\s?[$#%]\s*"
    r"|(?P<bare>[A-Za-z][\w.-]{0,63})[$#%]\s+|[$%#]\s+)"
)
_PROMPT = LazyPattern(rf"^\s*{_PROMPT_SOURCE}")
#: A command line that runs Python on a string, after a prompt and the commands that run
#: it elsewhere (docker run, ssh, srun ...), or the interactive interpreter's prompt.
_COMMAND = LazyPattern(
    rf"^\s*{_PROMPT_SOURCE}?"
    r"(?:(?:sudo|env|time|docker|podman|nerdctl|ssh|srun|kubectl|apptainer|singularity|enroot"
    r"|conda|uv|poetry|pixi|mpirun|[A-Z_][A-Z0-9_]{0,60}=\S{0,200})\b[^\n]{0,300}?)?"
    r"\bpython[\d.]{0,5}\s+-c\s+[\"']"
)
_REPL = LazyPattern(r"^\s*>>>\s*(?P<expr>\S.{0,200})$")
#: The printed values: a tuple, or a word.
_VALUES = LazyPattern(r"\([^()]{0,40}\)|[^\s()]+")
_TORCH = LazyPattern(r"\d{1,2}\.\d{1,3}(?:\.\d{1,3})?(?:[a-z]{1,5}\d{0,12})?(?:\+[\w.]{1,40})?")
_CUDA = LazyPattern(r"\d{1,2}\.\d{1,2}")
_NCCL_TUPLE = LazyPattern(r"\(\s*(?P<a>\d{1,2}),\s*(?P<b>\d{1,3}),\s*(?P<c>\d{1,3})\s*\)")
_NCCL_CODE = LazyPattern(r"\d{4,6}")


def _asked(line: Line) -> tuple[str, ...] | None:
    """What each argument of the command line's print is (``None`` where the line is no
    command, or prints none of the versions, or something else beside them)."""
    if repl := _REPL.match(line.text):
        expression = repl["expr"].strip()
        if expression in _EXPRESSIONS:  # the interpreter echoes an expression's value
            return (_EXPRESSIONS[expression],)
    elif not _COMMAND.match(line.text):
        return None  # a sentence that quotes the command, a print inside a script
    found = _PRINT.search(line.text)
    if found is None:
        return None
    args = tuple(a.strip() for a in _split(found["args"]))
    names = tuple(_EXPRESSIONS.get(a, "") for a in args)
    return names if all(names) else None


def _split(args: str) -> list[str]:
    """The print's arguments, split at the commas outside parentheses."""
    parts, depth, start = [], 0, 0
    for at, char in enumerate(args):
        depth += (char == "(") - (char == ")")
        if char == "," and depth == 0:
            parts.append(args[start:at])
            start = at + 1
    return [*parts, args[start:]]


def _nccl(value: str) -> str | None:
    """``(2, 19, 3)`` or ``2708`` / ``21003`` (NCCL_VERSION_CODE) as ``2.19.3``."""
    if tup := _NCCL_TUPLE.fullmatch(value):
        return f"{tup['a']}.{tup['b']}.{tup['c']}"
    if _NCCL_CODE.fullmatch(value):
        code = int(value)
        if code < 10_000:  # 2.0-2.8: major*1000 + minor*100 + patch
            return f"{code // 1000}.{code // 100 % 10}.{code % 100}"
        return f"{code // 10_000}.{code // 100 % 100}.{code % 100}"
    return None


def _printed(names: tuple[str, ...], text: str) -> dict[str, str] | None:
    """The value of each name, or ``None`` when the line is not what the print prints."""
    values = _VALUES.findall(text.strip())
    if len(values) != len(names):
        return None
    out: dict[str, str] = {}
    for name, value in zip(names, values, strict=True):
        read = (
            _nccl(value)
            if name == "nccl"
            else (value if (_TORCH if name == "torch" else _CUDA).fullmatch(value) else None)
        )
        if read is None:
            return None
        out[name] = read
    return out


class VersionPrintParser(BlockParser):
    """Reads a print of torch's versions: its command line and the line it printed."""

    kind = "version-print"
    anchors = tuple(_EXPRESSIONS)
    max_lines = 2

    def starts(self, line: Line) -> bool:
        """A command line that prints torch's versions."""
        return any(a in line.raw for a in self.anchors) and _asked(line) is not None

    def accepts(self, line: Line, block: Sequence[Line]) -> bool:
        """The one line right after the command, holding what it printed."""
        names = _asked(block[0])
        return (
            len(block) == 1
            and names is not None
            and line.number == block[0].number + 1
            and _printed(names, line.text) is not None
        )

    def parse(self, block: Sequence[Line]) -> list[Fact]:
        """One :class:`VersionPrint`, on the machine the command's prompt names."""
        if len(block) != 2 or (names := _asked(block[0])) is None:
            return []
        values = _printed(names, block[1].text)
        if values is None:
            return []
        prompt = _PROMPT.match(block[0].text)
        host = block[0].host or (prompt and (prompt["host"] or prompt["bare"])) or None
        return [
            VersionPrint(
                cite=cite(block[1]),
                rank=block[0].rank,
                host=host,
                torch_version=values.get("torch"),
                nccl_version=values.get("nccl"),
                cuda_version=values.get("cuda"),
            )
        ]
