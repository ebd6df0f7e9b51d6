"""The ``env`` kind: environment variables the evidence sets.

Forms: ``KEY=VALUE`` lines of ``env``/``printenv`` dumps; ``export KEY=VALUE``
(``declare -x``, ``set``, ``setenv KEY VALUE``, a Dockerfile ``ENV``);
``KEY=VALUE KEY2=V cmd ...`` before a command, with or without a shell prompt
(``user@host:~$``, ``$``, ``(venv)``), after ``env``/``sudo -E``, and
``mpirun -x KEY=VALUE``, ``docker -e KEY=VALUE``, ``srun --export=ALL,KEY=V``
inside one (the line as it is, or quoted whole as Markdown inline code);
Python ``os.environ["KEY"] = "VALUE"`` / ``setdefault`` / ``putenv`` /
``update({...})``; Kubernetes ``- name: KEY`` followed by
``value: VALUE``; and ``echo $KEY`` (after a prompt or not) followed by the value it
printed on the next line. Only upper-case names are taken, so ``--nproc_per_node=8``
or a URL query is not; a line starting with ``#`` is a comment.
"""

from __future__ import annotations

import re
import shlex
from typing import ClassVar

from nccl_doctor.evidence.lines import Line
from nccl_doctor.facts.host import EnvVar, ShellVariable
from nccl_doctor.parse._lazy import LazyPattern
from nccl_doctor.parse._runtext import body
from nccl_doctor.parse._values import cite
from nccl_doctor.parse.base import StreamParser

_NAME = r"[A-Z_][A-Z0-9_]{0,127}"
_ASSIGN = LazyPattern(rf"(?P<k>{_NAME})=(?P<v>.*)", re.DOTALL)
_DUMP = LazyPattern(rf"(?P<k>{_NAME})=(?P<v>\S*)")
#: A shell prompt: an environment's name, user@host:path and $ (or #, %), or a bare $, %, >.
_PROMPT_SOURCE = (
    r"(?:\([\w.@-]{1,60}\)\s*)?"
    r"(?:[\w.-]{1,64}@[\w.-]{1,64}(?::[^\s$#]{0,200})?\s?[$#%]\s*|[$%>]\s+)"
)
_PROMPT = LazyPattern(_PROMPT_SOURCE)
_SETENV = LazyPattern(rf"setenv\s+(?P<k>{_NAME})\s+(?P<v>.*)")
_DOCKER_ENV = LazyPattern(rf"ENV\s+(?P<k>{_NAME})\s+(?P<v>[^=\s].*)")
_PY_SET = LazyPattern(rf"os\.environ\[\s*(?P<q>[\"'])(?P<k>{_NAME})(?P=q)\s*\]\s*=\s*(?P<v>[^#]*)")
_PY_CALL = LazyPattern(
    rf"(?:os\.environ\.setdefault|os\.putenv)\(\s*(?P<q>[\"'])(?P<k>{_NAME})(?P=q)\s*,(?P<v>[^)]{{0,1000}})\)"
)
_PY_PAIR = LazyPattern(rf"(?P<q>[\"'])(?P<k>{_NAME})(?P=q)\s*:\s*(?P<v>[\"'][^\"']*[\"']|\d+)")
_YAML_NAME = LazyPattern(rf"-?\s*name:\s*[\"']?(?P<k>{_NAME})[\"']?\s*")
_YAML_VALUE = LazyPattern(r"value:\s*(?P<v>.*)")
_ECHO = LazyPattern(rf"(?:{_PROMPT_SOURCE})?echo\s+[\"']?\$\{{?(?P<k>{_NAME})\}}?[\"']?")
#: What ``echo`` printed: one word, not another prompt or command.
_ECHOED = LazyPattern(r"[^\s$#%>][^\s]{0,3999}")
_YAML_FLOW = LazyPattern(
    rf"name:\s*[\"']?(?P<k>{_NAME})[\"']?\s*,\s*value:\s*(?P<v>\"[^\"]*\"|'[^']*'|[^,}}\s]*)"
)
_LITERAL = LazyPattern(r"(?P<q>[\"'])(?P<s>[^\"']*)(?P=q)|(?P<n>-?\d+(?:\.\d+)?)|(?P<b>True|False)")
_WRAPPERS = frozenset({"env", "sudo", "-E", "time", "exec", "nohup", "command"})
_OPTION_ENV = frozenset({"-x", "-e", "--env", "-env", "--setenv"})
_COMMANDS = LazyPattern(
    r"(?:.*/)?(?:python[\d.]*|torchrun|deepspeed|accelerate|srun|sbatch|salloc|mpirun|mpiexec"
    r"|bash|sh|zsh|nccl-doctor|ray|horovodrun|colossalai|lightning|nsys|ncu|numactl|taskset"
    r"|pytest|uv|poetry|docker|podman|singularity|apptainer|enroot|kubectl|nvidia-smi|composer"
    r"|[\w.-]+_perf|[\w.-]+\.(?:py|sh)|\./\S+|make|cmake|ninja|pip[\d.]*|conda|jupyter|gdb)"
)
#: A whole line quoted as Markdown inline code (```NCCL_SHM_DISABLE=1 torchrun ...```): one
#: to three backticks, the same number closing it.
_CODE_SPAN = LazyPattern(r"(?P<q>`{1,3})(?!`)(?P<s>[^`]+)(?P=q)")
_MAX_TEXT = 4000
#: one of which a line setting a variable holds
_MARKS = ("=", "name:", "setenv ", "ENV ", "os.environ", "os.putenv", "export ")


def _unquote(value: str) -> str:
    s = value.strip()
    if len(s) >= 2 and s[0] == s[-1] and s[0] in "\"'":
        return s[1:-1]
    return s


def _literal(value: str) -> str | None:
    """A Python literal value as text (``"INFO"`` -> ``INFO``, ``1`` -> ``1``), else ``None``."""
    m = _LITERAL.fullmatch(value.strip().rstrip(";").strip())
    if m is None:
        return None
    if m["q"] is not None:
        return m["s"]
    return m["n"] if m["n"] is not None else m["b"]


class EnvParser(StreamParser):
    """Reads environment variables from dumps, exports, command lines, Python and YAML."""

    kind: ClassVar[str] = "env"
    anchors: ClassVar[tuple[str, ...]] = ()
    #: variable families; NCCL's INFO lines name NCCL_* variables by the thousand,
    #: so these lines are read up to the reader's budget
    info_anchors: ClassVar[tuple[str, ...]] = (
        "NCCL_",
        "TORCH_",
        "TORCHELASTIC_",
        "PYTORCH_",
        "CUDA_",
        "NVIDIA_",
        "MASTER_ADDR",
        "MASTER_PORT",
        "WORLD_SIZE",
        "RANK=",
        "LOCAL_RANK",
        "GLOO_",
        "OMP_NUM_THREADS",
        "LD_LIBRARY_PATH",
        "LD_PRELOAD",
        "FI_",
        "UCX_",
        "SLURM_",
        "OMPI_",
        "PMIX_",
        "NVSHMEM_",
    )
    #: "works with NCCL_P2P_DISABLE=1" is a person's sentence
    info_in_prose: ClassVar[bool] = True

    def __init__(self) -> None:
        super().__init__()
        self._yaml: tuple[Line, str] | None = None
        #: an ``echo $KEY`` waiting for the value it printed
        self._echo: tuple[Line, str] | None = None
        #: the shell variables each source set so far: an ``export NAME`` exports one
        self._shell: dict[tuple[str, str], str | None] = {}

    @property
    def open(self) -> bool:
        """Whether a YAML ``- name: KEY`` waits for its ``value:`` line, or an ``echo $KEY``
        for what it printed."""
        return self._yaml is not None or self._echo is not None

    def feed(self, line: Line) -> bool:
        """Take a line that sets environment variables."""
        text = body(line.text)[:_MAX_TEXT].strip()
        # (a span of one word, `NCCL_P2P_DISABLE=1` on a line of its own, is a setting named,
        # not an environment dump)
        if text.startswith("`") and (span := _CODE_SPAN.fullmatch(text)) and " " in span["s"]:
            text = span["s"].strip()
        pending, self._yaml = self._yaml, None
        echo, self._echo = self._echo, None
        if (
            echo is not None
            and line.number == echo[0].number + 1
            and line.rank == echo[0].rank
            and _ECHOED.fullmatch(text)
        ):
            self._var(line, echo[1], text, "echo")
            return True
        if (
            "echo" in text
            and (m := _ECHO.fullmatch(text))
            and any(a in line.raw for a in self.info_anchors)
        ):
            self._echo = (line, m["k"])
            return True
        if (
            pending is not None
            and line.number == pending[0].number + 1
            and line.rank == pending[0].rank
            and (m := _YAML_VALUE.fullmatch(text))
        ):
            self._var(pending[0], pending[1], _unquote(m["v"]), "yaml")
            return True
        if not text or not any(k in text for k in _MARKS):
            return False
        if not any(a in line.raw for a in self.info_anchors):
            return False  # a line offered only because a YAML name was pending
        found: list[tuple[str, str | None, str]] = []
        if "os." in text:
            found = _python(text)
        elif "name:" in text:
            if m := _YAML_FLOW.search(text):
                found = [(m["k"], _unquote(m["v"]), "yaml")]
            elif m := _YAML_NAME.fullmatch(text):
                self._yaml = (line, m["k"])
                return True
        elif not text.startswith("#"):
            found = shell_assignments(text)
        for name, value, form in found:
            if form == "shell":
                self._shell[(line.source, name)] = value
                self.emit(
                    ShellVariable(
                        cite=cite(line), rank=line.rank, host=line.host, name=name, value=value
                    )
                )
            elif form == "export_name":
                if (line.source, name) in self._shell:  # ``export NAME`` of a shell variable
                    self._var(line, name, self._shell[(line.source, name)], "export")
            else:
                self._var(line, name, value, form)
        return bool(found)

    def _var(self, line: Line, name: str, value: str | None, form: str) -> None:
        self.emit(
            EnvVar(
                cite=cite(line), rank=line.rank, host=line.host, name=name, value=value, form=form
            )
        )


def _python(text: str) -> list[tuple[str, str | None, str]]:
    if _in_sentence(text, text.find("os.")):
        return []
    if m := _PY_SET.search(text):
        return [(m["k"], _literal(m["v"]), "python")]
    if m := _PY_CALL.search(text):
        return [(m["k"], _literal(m["v"]), "python")]
    if "os.environ.update" in text:
        return [(m["k"], _literal(m["v"]), "python") for m in _PY_PAIR.finditer(text)]
    return []


def _in_sentence(text: str, start: int) -> bool:
    """Whether two words end just before ``start``: a sentence that mentions the code ("I used
    os.environ['NCCL_DEBUG'] = 'INFO' to show the hang") is the reporter's, and stays text."""
    lead = text[max(0, start - 80) : start]
    words = lead.split()
    return (
        lead.endswith(" ")
        and len(words) >= 2
        and all(w.replace("'", "").isalpha() for w in words[-2:])
    )


#: The shell's own commands a statement may start with (``A=1 ; echo $A``).
_BUILTINS = frozenset({"echo", "export", "cd", "source", ".", "printf", "env", "unset", "set"})
#: What ends a shell statement (``A=1 ; python x.py``, ``cd dir && python x.py``).
_SEPARATORS = frozenset({";", "&&", "||"})


def _statements(text: str) -> list[list[str]]:
    """The words of each statement of a shell line, split at ``;``, ``&&`` and ``||``."""
    lexer = shlex.shlex(text, posix=True, punctuation_chars=";&|")
    lexer.whitespace_split = True
    lexer.commenters = ""
    try:
        words = list(lexer)
    except ValueError:
        words = text.split()
    out: list[list[str]] = [[]]
    for word in words:
        if word in _SEPARATORS:
            out.append([])
        else:
            out[-1].append(word)
    return [s for s in out if s]


def shell_assignments(text: str) -> list[tuple[str, str | None, str]]:
    """(name, value, form) of the variables a shell line sets: an export, a dump line, the
    assignments before a command and its ``-x``/``-e``/``--env`` options. An assignment that
    ends its statement, before no command, is the shell's own variable (form ``shell``); an
    ``export NAME`` with no value exports one (form ``export_name``, value ``None``). Other
    parsers that claim a command line (nccl-tests' own) read its settings with it."""
    prompt = _PROMPT.match(text)
    rest = text[prompt.end() :] if prompt else text
    if m := _SETENV.fullmatch(rest):
        return [(m["k"], _unquote(m["v"]), "export")]
    if m := _DOCKER_ENV.fullmatch(rest):
        return [(m["k"], _unquote(m["v"]), "export")]
    if prompt is None and (m := _DUMP.fullmatch(rest)):
        return [(m["k"], _unquote(m["v"]), "dump")]
    statements = _statements(rest)
    found: list[tuple[str, str | None, str]] = []
    for at, words in enumerate(statements):
        after = statements[at + 1] if at + 1 < len(statements) else None
        # a shell's statement: a prompt before it, or a command after its separator (a
        # sentence can hold a ';' too: "NCCL_P2P_DISABLE=1; it works")
        shell = prompt is not None or (after is not None and _runs(after[0]))
        found += _statement(words, shell)
    return found


def _runs(word: str) -> bool:
    """Whether a statement starting with ``word`` runs something (a program, a builtin, an
    assignment)."""
    return word in _BUILTINS or bool(_COMMANDS.fullmatch(word) or _ASSIGN.fullmatch(word))


def _statement(words: list[str], shell: bool) -> list[tuple[str, str | None, str]]:
    """The settings of one statement of a line; in a ``shell`` statement, assignments before
    no command are the shell's own."""
    if words[0] in ("export", "declare", "typeset", "set", "ENV"):
        flags = words[2:] if words[0] != "export" and words[1:2] == ["-x"] else words[1:]
        if words[0] in ("declare", "typeset") and words[1:2] != ["-x"]:
            return []
        out: list[tuple[str, str | None, str]] = []
        for word in flags:
            if a := _ASSIGN.fullmatch(word):
                out.append((a["k"], a["v"], "export"))
            elif words[0] == "export" and re.fullmatch(_NAME, word):
                out.append((word, None, "export_name"))
        return out
    i = 0
    while i < len(words) and words[i] in _WRAPPERS:
        i += 1
    wrapped = i > 0
    lead: list[tuple[str, str | None, str]] = []
    while i < len(words) and (a := _ASSIGN.fullmatch(words[i])):
        lead.append((a["k"], a["v"], "inline"))
        i += 1
    command = words[i:]
    if lead and not command and not wrapped:
        # no program follows in this statement: the shell keeps them (a lone NAME=value line
        # of a paste, with no prompt, is a dump's and was read above)
        return [(k, v, "shell") for k, v, _ in lead] if shell else []
    bare = lead and not (shell or wrapped or len(lead) > 1)
    if bare and (not command or not _COMMANDS.fullmatch(command[0])):
        return []
    return lead + _in_command(command)


def _in_command(tokens: list[str]) -> list[tuple[str, str | None, str]]:
    """``-x KEY=V`` / ``-e KEY=V`` / ``--env=KEY=V`` / ``--export=ALL,KEY=V`` inside a command."""
    out: list[tuple[str, str | None, str]] = []
    for i, token in enumerate(tokens[:400]):
        candidates: list[str] = []
        if token in _OPTION_ENV and i + 1 < len(tokens):
            candidates = [tokens[i + 1]]
        elif token.startswith(("--env=", "-e=")):
            candidates = [token.split("=", 1)[1]]
        elif token.startswith("--export="):
            candidates = token.split("=", 1)[1].split(",")
        found = (_ASSIGN.fullmatch(item) for item in candidates)
        out.extend((a["k"], a["v"], "inline") for a in found if a is not None)
    return out
