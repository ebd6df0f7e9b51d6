"""All facts of one diagnosis, indexed by type and as searchable text.

Rules read typed facts (``facts.of(Gpu)``) where a parser understood the
evidence, and signs (``facts.seen(SIGN)``, :mod:`nccl_doctor.facts.signs`)
where only words are left: an error line no parser claims, or a sentence of a
bug report ("works with NCCL_P2P_DISABLE=1"). The store reads each sign once
over the cited lines; ``search`` is that read, kept for the layers above the
rules (the differential's prose). Every line of text keeps its citation, and
whether it is *prose* (a person's words, weighed below machine output).
"""

from __future__ import annotations

import bisect
import ipaddress
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import TypeVar

from nccl_doctor.facts.base import Cite, Fact, local_alias, pieces
from nccl_doctor.facts.literals import analysis, holds
from nccl_doctor.facts.run import PythonTraceback
from nccl_doctor.facts.shapes import DIGITS_AS_ZERO, Shapes, relaxed, shapes_of
from nccl_doctor.facts.signs import Sign
from nccl_doctor.facts.text import CJK, TextLine
from nccl_doctor.facts.told import sentence_of, told_over

T = TypeVar("T", bound=Fact)
V = TypeVar("V")

#: A line that looks like a program printed it: log prefixes, tracebacks,
#: paths with line numbers, key=value, shell prompts, table rules.
_MACHINE = re.compile(
    r"""^\s*(?:
        \[?\d{4}-\d\d-\d\d | \[?\d\d:\d\d:\d\d | \[?[IWEF]\d{4}\s | \[rank\d+\] | \[default\d+\]
      | (?:DEBUG|INFO|WARN(?:ING)?|ERROR|CRITICAL|FATAL)(?:\s+\d\d-\d\d\s|:[\w.]*:)
      | \(\w+\ pid=\d+ | (?:\#\d{1,3}\s+)?0x[0-9a-fA-F]{4,}\s+in\s
      | \[[IWEF]\s[\w./-]+\.(?:cpp|cc|cu|hpp|h|c):\d+\]
      | [\w.-]+:\d+:\d+\s\[\d+\] | Traceback\b | File\s"
      | \w*(?:\.\w+)*(?:Error|Exception|Warning)\b\s?: | [A-Z]{2,}\ (?:Error|error|ERROR)\s?:
      | NCCL\s(?:INFO|WARN|TRACE|version|[Ee]rror\s?(?:in\b|:|\d)|failure\s?(?::|\S+:\d))
      | NET/[\w-]{2,12}\s?:\s  # NCCL's network subsystem's own words (quoted after "Last error:")
      | RuntimeError | torch\. | \$\s | >>> | \+{1,3}\s(?=\S+\s--?\w)  # bash -x's trace
      | [-bcdlps][rwxsStT-]{9}[.+@]?\s  # ls -l's file mode
      | [a-z][a-z0-9_]{1,40}\s{2,}\d{3,10}\s{1,10}\d{1,4}(?:\s|$)  # lsmod's module, size, users
      | frame\s\#\d{1,4}:\s | Exception\ raised\ from\s  # c10::Error: throw site, C++ frames
      | (?:LISTEN|ESTAB|TIME-WAIT|CLOSE-WAIT|SYN-SENT|UNCONN)\s+\d+\s+\d+\s  # ss's sockets
      | tcp6?\s+\d+\s+\d+\s | State\s+Recv-Q\s+Send-Q\b  # netstat's, and ss's header
      | (?:[0-9a-f]{2,4}(?::[0-9a-f]{2}\.\d)?:\s+)?(?:Lnk|Dev)(?:Sta|Cap|Ctl)2?:  # lspci -vv
      | [\w.-]{2,60}\s{2,}v?\d[\w.+-]{0,40}\s*$  # pip list's row: a name, a version
      | [a-zA-Z][\w ]{2,40}?\s{2,}\((?:[\w ]{1,12},\ )?-[a-zA-Z]\)\s+\S+\s*$  # ulimit -a's row
      | [|+=-]{3} | \w+=\S | /\S+:\d+
      | (?:/[\w.@+-]{1,64}){1,12}(?:\s{1,8}(?:/[\w.@+-]{1,64}){1,12}){1,40}\s*$  # ls's paths
      # a training loop's progress row: names and their numbers only ("Epoch 1 step 608 loss
      # 6.8464 lr 3.0e-04", "iter: 120, loss: 2.31, grad_norm: 0.9")
      | (?:[A-Za-z_][\w/.-]{0,30}[:=]?\s{1,4}[-+]?\d[\d.,/eE+-]{0,20}(?:%|ms|s)?[,|]?\s{0,4}){3,}$
      | \S+\.(?:py|cc|cpp|h):\d+ | \d+:\s | \s{4}
      # the shell's line for a child a signal killed, alone on its line (bash's strsignal)
      | (?:Segmentation\ fault|Bus\ error|Aborted|Illegal\ instruction|Floating\ point
         \ exception|Killed)(?:\ \(core\ dumped\))?\s*$
      # glibc's abort on a corrupted heap ("free(): corrupted unsorted chunks")
      | (?:free|malloc|realloc|munmap_chunk|malloc_consolidate)\(\):\ [a-z]
      | double\ free\ or\ corruption\b | corrupted\ size\ vs\.?\ prev_size\b
      | [a-z][a-z0-9_.-]*:\s+(?:[Ee]rror|ERROR|cannot|[Ff]ailed|[Uu]nable|[Nn]o\ such|[Ww]arning
                               |WARNING|fatal|[Cc]ommand\ not\ found|[Ii]nvalid|[Cc]ould\ not
                               |(?:\w+\ ){1,3}error:)
    )""",
    re.VERBOSE,
)
#: The kernel's own stamp before a line (dmesg, dmesg -T, the journal's or syslog's
#: ``kernel:``): what follows it is the kernel's output, never a person's words, even where
#: the reader peeled the stamp off (``device [10de:2330] error status/mask=...`` after a
#: corrected PCIe error).
_KERNEL_STAMP = re.compile(
    r"\s*(?:\[\s*\d{1,10}\.\d{1,9}\]"
    r"|\[(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun) \w{3} [ \d]\d [\d:]{8} \d{4}\]"
    r"|\w{3} [ \d]\d [\d:]{8}(?:\.\d{1,9})? [\w.-]{1,64} kernel:)"
)
#: A thread's title, labelled as the evidence gives it ("Title: ...", "[Issue title: ...]"):
#: the reporter's own words, even where they quote a command a parser reads.
_TITLE_LABEL = re.compile(r"\W{0,3}(?:issue |pr |pull request )?title\s{0,3}[:\]]", re.IGNORECASE)
#: Words of a sentence (a line with three of them is prose): letters, Latin or Cyrillic.
_WORDS = re.compile(r"[A-Za-z\u0410-\u044f\u0401\u0451][a-z'\u0430-\u044f\u0451]+")


#: A yes/no question: opened by an auxiliary, closed by a question mark ("Does it work with
#: gloo?", "Could the GID index be wrong?", "If I set it, will it run?"). A why-question
#: presupposes what it asks about ("why does it hang with 4 GPUs?") and is not one.
_YES_NO = re.compile(
    r"\s*(?:if\b[^,?\uff1f]{0,80},\s*)?"
    r"(?:is|are|was|were|do|does|did|can|could|would|should|will|has|have|might|may|shall"
    r"|isn't|aren't|doesn't|don't|didn't|can't|couldn't|wouldn't)\b[^?\uff1f]*[?\uff1f]\s*$",
    re.IGNORECASE,
)


#: Where a clause of a sentence starts (after the sentence's own start).
_CLAUSE_MARKS = (",", ":", ";", "\uff0c", "\uff1a")
#: A question that presupposes what it asks about ("why ...?", "how come ...?").
_PRESUPPOSED = re.compile(
    r"\s*(?:why|how|what|where|when|which|who|whose|anyone|any idea)\b", re.IGNORECASE
)


#: Words that make what follows them in a sentence a plan, a guess or someone else's advice,
#: not what happened ("I will try X and see if it works", "X might fix it", "maybe X would
#: help", "someone suggested X", "the docs say X usually fixes this").
_UNASSERTED = re.compile(
    r"\b(?:will|going to|gonna|would|might|may|maybe|perhaps|whether|see if|suggest\w*"
    r"|recommend\w*|usually|advised?|docs? say|supposed to)\b|'ll\b",
    re.IGNORECASE,
)


def unasserted(text: str, match: re.Match[str]) -> bool:
    """Whether the words ``match`` found are not said to have happened: a plan, a guess or
    advice comes before them in their sentence, or the sentence is a yes/no question."""
    start, end = sentence_of(text, match)
    return bool(_YES_NO.match(text[start:end]) or _UNASSERTED.search(text, start, match.end()))


#: The reporter's own guess opening a clause ("I guessed it's GPUDirect RDMA not working",
#: "my first thought was the IB link", "we suspected the firewall"): what follows in the
#: clause is what they suspected, not what they saw.
_GUESSED = re.compile(
    r"\b(?:I|we)\s(?:(?:first|initially|originally|also|then)\s)?(?:guess(?:ed)?|suspect(?:ed)?"
    r"|thought|assumed?|figured(?! out))\b|\bmy (?:first |initial |only |best )?(?:guess|suspicion"
    r"|theory|hypothesis|thought)\b",
    re.IGNORECASE,
)


def asked(text: str, match: re.Match[str]) -> bool:
    """Whether the words ``match`` found are asked about or guessed, not said: the sentence
    that holds them is a yes/no question, or their clause one, or the reporter's guess opens
    their clause."""
    start, end = sentence_of(text, match)
    if _YES_NO.match(text[start:end]):
        return True
    # a terse question in the clause that holds them ("step time doubled, NCCL not using
    # NVLink?", "IB link flapping?"): a guess, unless a why/how presupposes it
    cut = max(text.rfind(mark, start, match.start()) for mark in _CLAUSE_MARKS)
    clause = text[max(start, cut + 1) : end]
    if clause.rstrip().endswith(("?", "\uff1f")) and not _PRESUPPOSED.match(clause):
        return True
    return bool(_GUESSED.search(text, max(start, cut + 1), match.start()))


#: The little words of a sentence, which a command line never holds three of.
_SENTENCE_WORDS = re.compile(
    r"\b(?:the|a|an|and|but|with|on|in|of|to|is|are|was|were|it|when|then|while|after|only"
    r"|same|still|fails?|dies|hangs?|crash\w*|works?|runs?)\b",
    re.IGNORECASE,
)


def _in_a_sentence(text: str) -> bool:
    """Whether a line a parser claimed (a command) is a person's sentence that names it
    ("all_reduce_perf -g 8 dies with a Cuda failure during setup, but all_gather_perf runs")."""
    return not _machine(text) and len(_SENTENCE_WORDS.findall(text)) >= 3


#: Settings a sentence opens with ("NCCL_SOCKET_IFNAME=eth0 worked on the old cluster, but
#: ...", "MASTER_ADDR=gpu-node01 works on node01 itself"): the words after them are the
#: sentence's, not an environment dump's.
_OPENING_SETTINGS = re.compile(
    r"^\s*(?:[A-Z][A-Z0-9_]{2,40}=\S{1,200}\s+){1,3}(?=(?:works?|worked|fails?|failed|fix(?:es|ed)"
    r"|helps?|helped|does|did|doesn't|didn't|is|was|makes?|made|solve[sd]?|cause[sd]?|on|in"
    r"|with|but|and|still|also|only|alone|gives?|gave)\b)",
    re.IGNORECASE,
)


#: A tqdm progress bar after its description ("Map (num_proc=16):  38%|███▊      |
#: 15620911/41022118 [30:02<48:12, 8781.90 examples/s]"): the percentage, the bar, the counts
#: and the elapsed time are the program's, whatever words the description holds.
_PROGRESS_BAR = re.compile(
    r"\d{1,3}%\|[^|\n]{0,80}\|\s{0,4}[\d.]{1,15}[kMG]?/[\d.]{1,15}[kMG]?\s{0,4}\["
)

#: One character of Chinese, Japanese or Korean writing.
_CJK_CHAR = re.compile(f"[{CJK}]")


def _machine(text: str) -> bool:
    """Whether a line opens as a program's output does (a log prefix, a traceback, a command),
    past the settings a sentence may open with, or is a progress bar."""
    return bool(
        _MACHINE.match(_OPENING_SETTINGS.sub("", text, count=1)) or _PROGRESS_BAR.search(text)
    )


def is_prose(text: str) -> bool:
    """Whether an unfenced line reads like a person's sentence rather than output."""
    if _machine(text):
        return False
    return len(_WORDS.findall(text)) >= 3 or bool(_CJK_CHAR.search(text))


@dataclass(frozen=True, slots=True)
class Said:
    """One line of evidence as text: where it is, whose it is, whether it is prose."""

    cite: Cite
    rank: int | None = None
    host: str | None = None
    prose: bool = False

    @property
    def text(self) -> str:
        """The line as read."""
        return self.cite.text


@dataclass(frozen=True, slots=True)
class Hit:
    """A search hit: the line and the match."""

    said: Said
    match: re.Match[str]

    @property
    def cite(self) -> Cite:
        """The citation of the line."""
        return self.said.cite

    @property
    def prose(self) -> bool:
        """Whether the line is a person's words."""
        return self.said.prose

    @property
    def told_over(self) -> bool:
        """Whether the hit is in a person's sentence that tells it as not happening: denied
        just before it, or said to be over after it ("we no longer see 'Too many open
        files'", "... is gone since we raised ulimit -n")."""
        return self.prose and told_over(self.cite.text, self.match.start(), self.match.end())

    @property
    def rank(self) -> int | None:
        """The rank the line belongs to, if known."""
        return self.said.rank


#: A pattern that tells a shape's lines apart is matched relaxed on the shapes first when they
#: hold at least this many lines (and twice as many as shapes): see :meth:`Facts._scan_words`
#: and :meth:`Facts._scan`.
RELAX_LINES = 64


class Facts:
    """The facts rules read: ``facts.of(Gpu)`` gives every ``Gpu`` fact in reading order.

    ``kinds`` are the evidence kinds that were present (``nvidia-smi``,
    ``nccl-log``...), so a rule can tell "no foreign process" from "no
    process list was given".
    """

    def __init__(self, facts: Iterable[Fact], kinds: Iterable[str] = ()) -> None:
        self._all = tuple(facts)
        self.kinds = frozenset(kinds)
        self._by_type: dict[type[Fact], tuple[Fact, ...]] = {}
        self._searches: dict[tuple[str, bool], tuple[Hit, ...]] = {}
        self._prose_searches: dict[str, tuple[Hit, ...]] = {}
        self._derived: dict[str, object] = {}

    def __len__(self) -> int:
        return len(self._all)

    @property
    def all(self) -> tuple[Fact, ...]:
        """Every fact, in reading order."""
        return self._all

    def of(self, cls: type[T]) -> tuple[T, ...]:
        """The facts that are instances of ``cls``, in reading order.

        Rules ask for some eighty classes; each answer is gathered from the
        positions of the exact types that are ``cls`` or its subclasses, not by
        testing every fact again.
        """
        found = self._by_type.get(cls)
        if found is None:
            lists = [at for kind, at in self._positions.items() if issubclass(kind, cls)]
            if len(lists) == 1:
                found = tuple(self._all[i] for i in lists[0])
            else:
                found = tuple(self._all[i] for i in sorted(i for at in lists for i in at))
            self._by_type[cls] = found
        return found  # type: ignore[return-value]

    @cached_property
    def _positions(self) -> dict[type[Fact], list[int]]:
        """Where the facts of each exact type are, in reading order."""
        out: dict[type[Fact], list[int]] = {}
        for i, fact in enumerate(self._all):
            out.setdefault(type(fact), []).append(i)
        return out

    def derived(self, name: str, compute: Callable[[Facts], V]) -> V:
        """A value derived from these facts (they never change), computed once per ``name``.

        The computation keeps its one home (``facts.failures.failures_of``...);
        the store only remembers the answer for the rules that ask again.
        """
        if name not in self._derived:
            self._derived[name] = compute(self)
        return self._derived[name]  # type: ignore[return-value]

    def has(self, kind: str) -> bool:
        """Whether evidence of ``kind`` was read."""
        return kind in self.kinds

    @cached_property
    def lines(self) -> tuple[Said, ...]:
        """Every cited line once, in source and line order.

        Free text keeps its prose flag; a line a parser claimed is machine
        output. Multi-line messages (a traceback's message, a child failure's
        traceback text) are cited at the line of their fact.
        """
        seen: dict[tuple[str, int, str], Said] = {}
        for fact in self._all:
            cite = fact.cite
            prose = (
                isinstance(fact, TextLine)
                and not fact.fenced
                and is_prose(fact.text)
                and not _KERNEL_STAMP.match(cite.text)
                and not _machine(cite.text)  # a log prefix the reader peeled off
            ) or bool(_TITLE_LABEL.match(cite.text))
            prose = prose or (type(fact).in_sentences and _in_a_sentence(cite.text))
            key = (cite.source, cite.line, cite.text)
            # (a paragraph a parser read too: its first part is the parser's, machine output)
            if key not in seen and not (isinstance(fact, TextLine) and fact.claimed):
                seen[key] = Said(cite, fact.rank, fact.host, prose)
            if isinstance(fact, TextLine):  # a paragraph on one line: the rest of it too
                for piece in pieces(fact.text):
                    key = (cite.source, cite.line, piece)
                    if key not in seen:
                        rest = Cite(cite.source, cite.line, piece)
                        seen[key] = Said(rest, fact.rank, fact.host, prose)
            for extra in _extra_lines(fact):
                key = (cite.source, cite.line, extra)
                if key not in seen:
                    seen[key] = Said(Cite.of(cite.source, cite.line, extra), fact.rank, fact.host)
        return tuple(seen.values())

    @cached_property
    def _joined(self) -> tuple[str, tuple[int, ...]]:
        """Every line's text joined by newlines, and where each line starts."""
        starts: list[int] = []
        at = 0
        texts = []
        for said in self.lines:
            text = said.text.replace("\n", " ")
            starts.append(at)
            texts.append(text)
            at += len(text) + 1
        return "\n".join(texts), tuple(starts)

    @cached_property
    def _shapes(self) -> Shapes:
        """The distinct shapes of the ASCII lines, for finding words (see :class:`Shapes`)."""
        return shapes_of(self.lines, range(len(self.lines)), self._joined[0])

    @cached_property
    def _prose_shapes(self) -> Shapes:
        """The shapes of the prose lines alone (see :meth:`prose_search`)."""
        lines = self.lines
        return shapes_of(lines, [i for i, said in enumerate(lines) if said.prose])

    def search(self, pattern: str | re.Pattern[str], *, prose: bool = True) -> tuple[Hit, ...]:
        """Lines matching ``pattern`` (case-insensitive when given as a string).

        ``prose=False`` leaves out people's sentences and keeps machine output.
        The candidate lines are those that hold the words the pattern cannot
        match without (:func:`required_words`, looked for once per distinct
        line shape with ``str.find``), or, for a pattern without such words,
        those one scan of all lines joined finds; each candidate line is then
        matched on its own, so the result is exactly a per-line search.
        """
        regex = re.compile(pattern, re.IGNORECASE) if isinstance(pattern, str) else pattern
        return self._search(regex.pattern, regex.flags, lambda: regex, prose)

    def _search(
        self, pattern: str, flags: int, regex: Callable[[], re.Pattern[str]], prose: bool
    ) -> tuple[Hit, ...]:
        """:meth:`search`; ``regex`` compiles the pattern, called only when a line may match."""
        key = (f"{pattern}\0{flags}", prose)
        found = self._searches.get(key)
        if found is None:
            found = tuple(self._scan(pattern, flags, regex, prose))
            self._searches[key] = found
        return found

    def _scan(
        self, pattern: str, flags: int, compiled: Callable[[], re.Pattern[str]], prose: bool
    ) -> list[Hit]:
        clauses, blind = analysis(pattern, flags)
        if clauses is not None:
            return self._scan_words(compiled, blind, prose, clauses, (pattern, flags))
        regex = compiled()
        if blind:
            shapes = self._shapes
            return self._confirm(regex, prose, list(shapes.odd), shapes.matching(regex))
        if len(self.lines) >= RELAX_LINES and 2 * len(self._shapes.starts) <= len(self.lines):
            loose = relaxed(pattern, flags)  # on the shapes, far fewer than the lines
            if loose is not None:
                shapes = self._shapes
                return self._confirm(regex, prose, list(shapes.odd), shapes.matching(loose))
        text, starts = self._joined
        joined = re.compile(regex.pattern, regex.flags | re.MULTILINE)
        lines = self.lines
        hits: list[Hit] = []
        pos = 0
        while (m := joined.search(text, pos)) is not None:
            index = bisect.bisect_right(starts, m.start()) - 1
            said = lines[index]
            if not (said.prose and not prose) and (own := regex.search(said.text)):
                hits.append(Hit(said, own))
            pos = starts[index + 1] if index + 1 < len(starts) else len(text) + 1
            if pos > len(text):
                break
        return hits

    def _scan_words(
        self,
        compiled: Callable[[], re.Pattern[str]],
        blind: bool,
        prose: bool,
        clauses: tuple[tuple[str, ...], ...],
        source: tuple[str, int],
        *,
        shapes: Shapes | None = None,
    ) -> list[Hit]:
        """Match the lines that hold a word of every clause (and the non-ASCII lines), of
        all lines or of those ``shapes`` group.

        A pattern that tells a shape's lines apart is first matched, relaxed,
        on the shapes (:func:`~nccl_doctor.facts.shapes.relaxed`), when they
        hold many lines each: the lines of a shape it does not match cannot match.
        """
        shapes = shapes if shapes is not None else self._shapes
        masked = tuple(tuple(w.translate(DIGITS_AS_ZERO) for w in c) for c in clauses)
        found = [s for s in shapes.holding(masked[0]) if holds(shapes.shape(s), masked[1:])]
        if not found and not shapes.odd:
            return []  # no line can match: the pattern need not even be compiled
        # a word with a digit is looked for as its shape (any digits there): each line of a
        # shape that holds it is then looked at for the word itself, before the pattern runs
        words = clauses if any(c.isdigit() for cl in clauses for w in cl for c in w) else None
        regex = compiled()
        kept: Iterable[int] = found
        if blind:
            kept = shapes.matching(regex, found)
        else:
            lines = sum(len(shapes.members[s]) for s in found)
            if lines >= RELAX_LINES and lines >= 2 * len(found):
                loose = relaxed(*source)
                if loose is not None:
                    kept = shapes.matching(loose, found)
        return self._confirm(regex, prose, list(shapes.odd), kept, words=words, shapes=shapes)

    def _confirm(
        self,
        regex: re.Pattern[str],
        prose: bool,
        candidates: list[int],
        found: Iterable[int],
        *,
        words: tuple[tuple[str, ...], ...] | None = None,
        shapes: Shapes | None = None,
    ) -> list[Hit]:
        """Match each of the ``candidates`` lines and the lines of the ``found`` shapes (of
        these, with ``words``, only an ASCII line that holds a word of each clause)."""
        shapes = shapes if shapes is not None else self._shapes
        if words is None:
            for shape in found:
                candidates.extend(shapes.members[shape])
        else:
            lines = self.lines
            for shape in found:
                candidates.extend(
                    i for i in shapes.members[shape] if holds(lines[i].text.lower(), words)
                )
        lines = self.lines
        hits: list[Hit] = []
        seen: dict[str, re.Match[str] | None] = {}  # many ranks print the very same message
        for index in sorted(candidates):
            said = lines[index]
            if said.prose and not prose:
                continue
            text = said.text
            own = seen[text] if text in seen else seen.setdefault(text, regex.search(text))
            if own:
                hits.append(Hit(said, own))
        return hits

    def prose_search(
        self, pattern: str | re.Pattern[str], flags: int = re.IGNORECASE
    ) -> tuple[Hit, ...]:
        """The hits of :meth:`search` on prose lines (a person's words), reading only those.

        The differential's cues and a few rules read the reporter's sentences
        alone; a log of thousands of lines holds few or none, and a search of
        every line for a sentence's words would mostly read machine output. A
        pattern given as text is compiled (with ``flags``) only when a prose
        line may match it.
        """
        if isinstance(pattern, str):
            text = pattern
            return self._prose_search(text, flags, lambda: re.compile(text, flags))
        return self._prose_search(pattern.pattern, pattern.flags, lambda: pattern)

    def seen_prose(self, sign: Sign) -> tuple[Hit, ...]:
        """:meth:`seen`'s hits on prose lines, reading only those (see :meth:`prose_search`)."""
        return self._prose_search(sign.pattern, sign.flags, lambda: sign.regex)

    @cached_property
    def _prose(self) -> tuple[Said, ...]:
        """The prose lines, in the order of :attr:`lines`."""
        return tuple(said for said in self.lines if said.prose)

    def _prose_search(
        self, pattern: str, flags: int, compiled: Callable[[], re.Pattern[str]]
    ) -> tuple[Hit, ...]:
        key = f"{pattern}\0{flags}"
        every = self._searches.get((key, True))
        if every is not None:  # all lines were searched already
            return tuple(h for h in every if h.prose)
        found = self._prose_searches.get(key)
        if found is None:
            found = self._prose_searches[key] = tuple(self._scan_prose(pattern, flags, compiled))
        return found

    def _scan_prose(
        self, pattern: str, flags: int, compiled: Callable[[], re.Pattern[str]]
    ) -> list[Hit]:
        """Each prose line that holds a word of every clause (or is not ASCII), matched: the
        words are looked for in the prose lines' shapes (a training loop's thousand progress
        lines that read as sentences are one shape)."""
        if not self._prose:
            return []
        clauses, blind = analysis(pattern, flags)
        if clauses is not None:
            source = (pattern, flags)
            return self._scan_words(
                compiled, blind, True, clauses, source, shapes=self._prose_shapes
            )
        regex = compiled()
        return [Hit(said, own) for said in self._prose if (own := regex.search(said.text))]

    def said(self, pattern: str | re.Pattern[str], *, prose: bool = True) -> bool:
        """Whether any line matches ``pattern``."""
        return bool(self.search(pattern, prose=prose))

    def seen(self, sign: Sign, *, prose: bool = True) -> tuple[Hit, ...]:
        """The cited lines where ``sign`` shows, each with its captured fields.

        Rules read text only through signs: each sign is read once over the
        lines (the first rule to ask pays; the rest share the hits).
        ``prose=False`` keeps machine output only.
        """
        hits = self._search(sign.pattern, sign.flags, lambda: sign.regex, True)
        return hits if prose else tuple(h for h in hits if not h.prose)

    def told(self, sign: Sign) -> tuple[Hit, ...]:
        """:meth:`seen`'s hits, where a person's sentence says them: in a prose line, the
        first match its sentence does not tell as not happening (:attr:`Hit.told_over`: "no
        ECC errors on GPUs 0-6, but GPU 7 shows uncorrectable ECC errors" says the second),
        and no hit where every match is told so."""
        out: list[Hit] = []
        for hit in self.seen(sign):
            if not hit.told_over:
                out.append(hit)
                continue
            later = (
                Hit(hit.said, m)
                for m in sign.regex.finditer(hit.cite.text, hit.match.end())
                if m.end() > m.start()
            )
            found = next((h for h in later if not h.told_over), None)
            if found is not None:
                out.append(found)
        return tuple(out)

    def every(self, sign: Sign, *, prose: bool = True) -> tuple[Hit, ...]:
        """:meth:`seen`'s lines with every match of ``sign`` on each, not the first alone ("from
        NCCL 2.21.5 to NCCL 2.26.2" names two releases)."""
        return tuple(
            Hit(hit.said, m)
            for hit in self.seen(sign, prose=prose)
            for m in sign.regex.finditer(hit.cite.text, hit.match.start())
            if m.end() > m.start()
        )

    def saw(self, sign: Sign, *, prose: bool = True) -> bool:
        """Whether ``sign`` shows on any line."""
        return bool(self.seen(sign, prose=prose))

    def seen_on(self, sign: Sign, items: Iterable[Cite | Fact]) -> tuple[Hit, ...]:
        """The hits of ``sign`` on the lines of ``items`` (citations or facts), in line order."""
        at = {(c.source, c.line) for c in (i if isinstance(i, Cite) else i.cite for i in items)}
        return tuple(h for h in self.seen(sign) if (h.cite.source, h.cite.line) in at)

    def showing(self, sign: Sign, items: Sequence[T]) -> list[T]:
        """The facts of ``items`` on whose cited line ``sign`` shows, in their order."""
        at = {(h.cite.source, h.cite.line) for h in self.seen_on(sign, items)}
        return [i for i in items if (i.cite.source, i.cite.line) in at]

    def lines_of(self, sign: Sign) -> frozenset[Said]:
        """The lines where ``sign`` shows, to test another sign's hits against."""
        return frozenset(h.said for h in self.seen(sign))

    @cached_property
    def ranks(self) -> tuple[int, ...]:
        """Every rank the evidence names, sorted."""
        return tuple(sorted({f.rank for f in self._all if f.rank is not None}))

    @cached_property
    def hosts(self) -> tuple[str, ...]:
        """Every host the evidence names, in first-seen order: one name a node (an address
        given for a process that another fact names by its host's name is that host)."""
        named = dict.fromkeys(f.host for f in self._all if f.host)
        addresses = {h for h in named if _address(h)}
        if addresses and len(named) > len(addresses):
            for alias in _aliases(self._all, addresses):
                named.pop(alias, None)
        return tuple(named)


def _address(host: str) -> bool:
    try:
        ipaddress.ip_address(host.strip("[]"))
    except ValueError:
        return False
    return True


def _aliases(facts: Sequence[Fact], addresses: set[str]) -> set[str]:
    """The addresses among ``addresses`` that facts give for a process (pid, and rank where
    both say one) another fact names by a host name: NCCL's RAS reports each rank's host as
    its address, the job's other lines by the node's name."""
    named: dict[int, list[tuple[int | None, str]]] = {}
    for fact in facts:
        pid = getattr(fact, "pid", None)
        if (
            fact.host
            and isinstance(pid, int)
            and fact.host not in addresses
            and not local_alias(fact.host)
        ):
            named.setdefault(pid, []).append((fact.rank, fact.host))
    out: set[str] = set()
    for fact in facts:
        pid = getattr(fact, "pid", None)
        if fact.host in addresses and isinstance(pid, int) and pid in named:
            rank = fact.rank
            if any(r is None or rank is None or r == rank for r, _ in named[pid]):
                out.add(fact.host)
    return out


#: The attributes through which a fact carries text beyond its cited line.
_EXTRA = ("message_lines", "traceback_lines", "last_error", "message")


_CARRY: dict[type, bool] = {}


def _may_carry(cls: type) -> bool:
    """Whether a fact of ``cls`` can carry text beyond its cited line (most types cannot: a
    slotted dataclass without any of :data:`_EXTRA`, nor a traceback's frames)."""
    found = _CARRY.get(cls)
    if found is None:
        slotted = all("__slots__" in vars(k) for k in cls.__mro__ if k is not object)
        found = _CARRY[cls] = (
            not slotted
            or hasattr(cls, "__getattr__")
            or issubclass(cls, PythonTraceback)
            or any(hasattr(cls, name) for name in _EXTRA)
        )
    return found


def _extra_lines(fact: Fact) -> tuple[str, ...]:
    """Text a fact carries beyond its cited line (message continuation lines)."""
    if not _may_carry(type(fact)):
        return ()
    out: list[str] = []
    for name in ("message_lines", "traceback_lines", "last_error"):
        value = getattr(fact, name, None)
        if isinstance(value, tuple):
            out.extend(v for v in value if isinstance(v, str) and v.strip())
    message = getattr(fact, "message", None)
    if isinstance(message, str) and message.strip() and "\n" not in message:
        out.append(message)
    # a traceback's frames, as Python printed them: which library raised is in the file names
    # (a live thread's stack, ThreadStack, is not a failure's text and stays out)
    if isinstance(fact, PythonTraceback):
        for path, number, func in fact.frames:
            out.append(f'File "{path}", line {number}' + (f", in {func}" if func else ""))
    return tuple(dict.fromkeys(o.rstrip() for o in out))
