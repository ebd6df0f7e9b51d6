"""Which catalogued message a failure's text is, from the signature catalogue.

The catalogue (:mod:`nccl_doctor.knowledge.signatures`) holds what NCCL,
PyTorch, gloo, CUDA, the driver and the kernel print, mined from their own
source, each with the symptom class it signals and the ids it points to. A
failure fact whose type does not say its class (an NCCL WARN, a c10d error, a
traceback's message, an error line no parser claims) is looked up here. Each
signature is indexed by the words every match of its pattern holds, anywhere
in it (:func:`~nccl_doctor.facts.literals.required_words`: CUDA's messages
follow one of several prefixes), so a line costs a few substring tests per
signature and a regex only where the words are there. Where no full message matches,
:func:`quoted_opening` reads a message quoted by its fixed opening alone (a title, a sentence
cut at the message's first number); :func:`message_of` asks both, in that order.
"""

from __future__ import annotations

import functools
from collections.abc import Iterator
from pathlib import Path

from nccl_doctor.cache import kept
from nccl_doctor.facts import literals
from nccl_doctor.facts.literals import Clause, holds, required_words
from nccl_doctor.knowledge.signatures import Signature, load_signatures

#: NCCL's network plugins, which log through NCCL's own logger (``NCCL WARN NET/OFI ...``): their
#: kept messages' classes are read from the plugin's source by hand (``mine_ofi.py``).
NET_PLUGINS = frozenset({"aws_ofi_nccl"})
#: The C library's error texts (strerror, gai_strerror): what many messages quote.
_GENERIC = ("system.errno.", "system.gai.")
#: The levels a harmless (class ``info``) message is printed at.
_HARMLESS_LEVELS = frozenset({"info", "warning"})
#: Rows that catalogue a line's framing, not a message (NCCL's ``[dev] NCCL INFO`` and
#: ``NCCL WARN`` prefixes, ProcessGroupNCCL's log prefix): they say nothing of the message.
FRAME_ROWS = frozenset({"nccl.line.info", "nccl.line.warn", "torch.pgnccl.log_prefix"})
#: A signature whose longest required word is shorter than this anchors too little to index.
_MIN_WORD = 8


def harmless(sig: Signature) -> bool:
    """A message the catalogue knows to be harmless: class ``info`` printed at level ``info``
    or ``warning`` (c10d's per-address socket warnings, the OMP_NUM_THREADS notice, a
    corrected PCIe error), or an NCCL WARN of class ``info``: one NCCL goes on after (up to
    2.11 ``Failed to open libibverbs.so[.1]``, after which it takes the Socket transport; an
    out-of-range setting it corrects). A line that holds it is no failure, whatever error it
    quotes; a row of class ``info`` at level ``error`` (c10d's ``NCCL error in:`` wrapper,
    whose cause a typed fact reads) still says something failed, and so does NCCL's bare
    ``NCCL WARN`` frame, which says nothing of its message."""
    if sig.symptom != "info":
        return False
    return sig.level in _HARMLESS_LEVELS or (
        sig.level == "warn" and sig.library == "nccl" and sig.id not in FRAME_ROWS
    )


def _specificity(clauses: tuple[Clause, ...]) -> int:
    """The length of the longest word a match must hold (a one-word clause)."""
    return max((len(c[0]) for c in clauses if len(c) == 1), default=0)


#: An index entry as kept between runs: the signature's place in the catalogue, its clauses.
_Kept = tuple[tuple[int, tuple[Clause, ...]], ...]
#: The words of the first clauses by the first two characters of their shape (see _by_pair).
_Pairs = dict[str, tuple[tuple[str, str | None, tuple[int, ...]], ...]]


@functools.cache
def _index() -> tuple[tuple[tuple[Clause, ...], Signature], ...]:
    """The indexed signatures, most specific first, each with the clauses of its words."""
    signatures = load_signatures()
    return tuple((clauses, signatures[at]) for at, clauses in _kept()[0])


@functools.cache
def _by_pair() -> _Pairs:
    """Each ASCII word of the indexed signatures' first clauses, with the signatures (their
    places in :func:`_index`) whose first clause holds it, by the first two characters of
    its shape (``""``: a shorter word): the word as a shape (digits as ``0``), and the word
    itself where it has a digit (``None`` where the shape is the word)."""
    return _kept()[1]


@functools.cache
def _kept() -> tuple[_Kept, _Pairs]:
    """The index and its words, kept between runs (reading the 1,500 patterns' words and
    sorting them cost ~15 ms a run): derived from the signatures' ids, patterns, classes,
    levels and relays, this module's code and the analysis of patterns."""
    signatures = load_signatures()
    key = [Path(__file__).read_bytes(), Path(literals.__file__).read_bytes()]
    key.extend(
        f"{s.id}\0{s.pattern}\0{s.symptom}\0{s.level}\0{s.relays}\0{s.refines}".encode()
        for s in signatures
    )
    found: tuple[_Kept, _Pairs] = kept("sigindex", b"\0\0".join(key), lambda: _made(signatures))
    return found


def _made(signatures: tuple[Signature, ...]) -> tuple[_Kept, _Pairs]:
    indexed = []
    keys: dict[str, tuple[bool, bool, int, int, int]] = {}
    for at, sig in enumerate(signatures):
        if sig.symptom == "info" and not harmless(sig):
            continue
        clauses = required_words(sig.pattern)
        if clauses and (specificity := _specificity(clauses)) >= _MIN_WORD:
            # a library's own message (a harmless warning too) before the C library's error
            # text it may quote, and both before a message that only relays another's text;
            # then the longest required word first, then the most required clauses (one
            # message printed for a narrower subject, as the hung-task line for an I/O
            # thread): the most specific message wins
            keys[sig.id] = (sig.relays, sig.id.startswith(_GENERIC), -specificity, -len(clauses), 1)
            indexed.append((keys[sig.id], at, clauses, sig.refines))
    # a narrower reading of another entry's message goes just before it
    indexed = [
        (min(((*keys[r][:4], 0) for r in refines if r in keys), default=key), at, clauses, ())
        for key, at, clauses, refines in indexed
    ]
    indexed.sort(key=lambda item: item[0])  # stable: file order among equals, as before
    index = tuple((at, clauses) for _, at, clauses, _ in indexed)
    places: dict[str, list[int]] = {}
    for at, (_, clauses) in enumerate(index):
        for word in clauses[0]:
            if word.isascii():
                places.setdefault(word, []).append(at)
    by_pair: dict[str, list[tuple[str, str | None, tuple[int, ...]]]] = {}
    for word, where in places.items():
        shape = word.translate(_DIGITS_AS_ZERO)
        digit = word if any(c.isdigit() for c in word) else None
        by_pair.setdefault(shape[:2] if len(shape) >= 2 else "", []).append(
            (shape, digit, tuple(where))
        )
    return index, {pair: tuple(words) for pair, words in by_pair.items()}


#: Digits do not tell the words of a text apart: a failure printed by 512 ranks is one shape.
_DIGITS_AS_ZERO = str.maketrans("123456789", "000000000")


@functools.lru_cache(maxsize=1024)
def _could(shaped: str) -> tuple[tuple[int, tuple[str, ...]], ...]:
    """The places of the indexed signatures a text of this shape (lower case, digits as
    ``0``) could be, in order, each with the words with digits the text itself must hold
    one of (none: a word without digits was found, and the shape holds it as the text does).

    Four hundred ranks print one watchdog message, their numbers apart: the words are
    looked for once for all of them.
    """
    by_pair = _by_pair()
    pairs = {shaped[i : i + 2] for i in range(len(shaped) - 1)}
    pairs.add("")
    found: dict[int, list[str] | None] = {}
    for pair in pairs.intersection(by_pair):
        for shape, digit, places in by_pair[pair]:
            if shape not in shaped:
                continue
            for at in places:
                if digit is None:
                    found[at] = None
                elif (need := found.setdefault(at, [])) is not None:
                    need.append(digit)
    return tuple((at, tuple(need or ())) for at, need in sorted(found.items()))


def _matches(text: str) -> Iterator[Signature]:
    """The indexed signatures ``text`` holds, in the index's order (most specific first).

    The signatures a text could be are found by their words: only the words
    that begin with a pair of characters the text holds are looked for, once
    per shape of text (:func:`_could`), not every signature's clauses tested;
    patterns compile on first use (cached), so a diagnosis pays only for the
    messages its lines could be.
    """
    lowered = text.lower()
    index = _index()
    # a line NCCL printed at WARN level holds no message of its INFO rows (it prints "Cuda
    # failure '%s'" at INFO where it ignores the error, at WARN where the call fails)
    warned = "nccl warn" in lowered
    for at, need in _could(lowered.translate(_DIGITS_AS_ZERO)):
        if need and not any(word in lowered for word in need):
            continue
        clauses, sig = index[at]
        if warned and sig.library == "nccl" and sig.level == "info":
            continue
        if holds(lowered, clauses) and sig.compiled().search(text):
            yield sig


def lead_of(text: str) -> Signature | None:
    """The most specific catalogued message in ``text``, harmless or not, if any."""
    return next(_matches(text), None)


def signature_of(text: str) -> Signature | None:
    """The most specific catalogued failure message in ``text``, if any.

    ``None`` as well when the most specific message is a harmless one
    (:func:`harmless`).
    """
    sig = lead_of(text)
    return None if sig is None or harmless(sig) else sig


def message_of(text: str) -> Signature | None:
    """The failure message ``text`` holds: the most specific catalogued one
    (:func:`signature_of`), else, where the catalogue knows no message in it at all (a
    harmless one included), the one it quotes by its opening (:func:`quoted_opening`)."""
    first = lead_of(text)
    if first is not None:
        return None if harmless(first) else first
    return quoted_opening(text)


def blames_elsewhere(text: str, rule_id: str) -> bool:
    """Whether the catalogued failure message in ``text`` is one whose source reading names
    causes and ``rule_id`` is not among them (a malformed topology file's ``Attribute arch of
    node cpu not found`` returns ncclInternalError, yet is no NCCL bug)."""
    sig = signature_of(text)
    return sig is not None and bool(sig.hint_ids) and rule_id not in sig.hint_ids


def points_to(text: str, rule_id: str) -> bool:
    """Whether the catalogued failure message in ``text`` names ``rule_id`` among its causes
    (a rule's way to ask what a message is without reading its words)."""
    sig = signature_of(text)
    return sig is not None and rule_id in sig.hint_ids


def failing_warn(sig: Signature) -> bool:
    """Whether an ``NCCL WARN`` line's message, read as ``sig`` (its :func:`lead_of`, not a
    harmless one), is catalogued as the message of a failing call, though it may say no
    failure word: NCCL's own WARN of a call that returns a result other than success
    (``Bootstrap : no socket interface found``, ``Duplicate GPU detected``), or a network
    plugin's kept failure (``NET/OFI Unexpected group size 0``: the plugin's RDMA protocol
    refuses to start and NCCL falls back to sockets)."""
    own = sig.library not in NET_PLUGINS and sig.level == "warn" and sig.result is not None
    return own or _plugin_failed(sig)


def plugin_failure(text: str) -> bool:
    """Whether ``text`` holds a network plugin's kept failure (the plugin did not start, or a
    transfer through it failed): NCCL then falls back to its own transports, so its sockets
    say nothing of the RDMA set-up the plugin was there for."""
    sig = signature_of(text)
    return sig is not None and _plugin_failed(sig)


def _plugin_failed(sig: Signature) -> bool:
    """A network plugin's kept failure row: a class other than ``info``."""
    return sig.library in NET_PLUGINS and sig.symptom != "info"


def harmless_message(text: str) -> Signature | None:
    """The catalogued harmless message ``text`` holds, if any (:func:`harmless`).

    What the stack prints when nothing failed but people worry (a corrected
    PCIe error, a monitoring query the GPU does not offer): such a line is
    never the reporter's words for a failure.
    """
    return next((sig for sig in _matches(text) if harmless(sig)), None)


def harmless_lead(text: str) -> Signature | None:
    """The most specific catalogued message ``text`` holds, when it is a harmless one: a line
    whose own message is a notice, whatever error it quotes in its detail (the heartbeat
    monitor's "should dump" warning ends "with error: Connection reset by peer")."""
    sig = lead_of(text)
    return sig if sig is not None and harmless(sig) else None


#: Libraries whose harmless rows are a failure's own words: NCCL prints ``Cuda failure '%s'``
#: at INFO where it ignores the error and at WARN where it fails, in the same words.
_OWN_WORDS = frozenset({"nccl", "cuda"})


def recovered_from(text: str) -> bool:
    """Whether ``text``'s own message is another library's notice that quotes the error it
    recovered from (SGLang's custom all-reduce set-up falling back to NCCL): no failure,
    whatever error it quotes."""
    lead = harmless_lead(text)
    return lead is not None and lead.library not in _OWN_WORDS


#: Where a message's fixed opening ends: its first field (printf's ``%``, the ``{name}`` of
#: concat and python formats).
_FIELD = {"printf": "%", "concat": "{", "python": "{"}
#: An opening quoted without the rest identifies its message when it has this many words and
#: characters: "NET/IB : collective mismatch error", "Failed to bind NVLink SHARP (NVLS)".
_HEAD_WORDS = 4
_HEAD_CHARS = 24


@functools.cache
def _heads() -> tuple[tuple[str, tuple[str, ...], Signature], ...]:
    """Each failure message's fixed opening (the words before its first field; all of its
    first line where it has no field), as its shortest identifying prefix and all its words,
    lower case."""
    out = []
    for sig in load_signatures():
        if sig.relays or sig.symptom == "info":
            continue
        mark = _FIELD.get(sig.format_style)
        fixed = sig.format.split(mark, 1)[0] if mark is not None else sig.format
        words = tuple(fixed.split("\n", 1)[0].lower().split())
        for k in range(_HEAD_WORDS, len(words) + 1):
            if len(shortest := " ".join(words[:k])) >= _HEAD_CHARS:
                out.append((shortest, words, sig))
                break
    return tuple(out)


@functools.lru_cache(maxsize=4096)
def quoted_opening(text: str) -> Signature | None:
    """The failure message whose fixed opening ``text`` quotes without the rest (a title
    that says ``NET/IB : collective mismatch error``, a sentence that cuts the message at
    its first number), when no full message matches: the one with the longest opening
    quoted, ``None`` where two of different classes tie.

    The opening is the message's words before its first field (a message with no field is
    all opening: a title that keeps its first sentence), at least four words and 24
    characters of them: what the library alone prints.
    """
    lowered = " ".join(text.lower().split())
    best: list[Signature] = []
    longest = 0
    for shortest, words, sig in _heads():
        if shortest not in lowered:
            continue
        k = _HEAD_WORDS
        while k < len(words) and " ".join(words[: k + 1]) in lowered:
            k += 1
        size = len(" ".join(words[:k]))
        if size > longest:
            best, longest = [sig], size
        elif size == longest:
            best.append(sig)
    if not best or len({s.symptom for s in best}) > 1:
        return None
    return best[0]
