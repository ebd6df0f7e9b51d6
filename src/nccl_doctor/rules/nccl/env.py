"""NCCL_* / TORCH_NCCL_* variables that are unknown, misspelt, invalid or harmful.

What it means
-------------
NCCL and PyTorch read their settings from environment variables and say
almost nothing about the ones they do not understand: a misspelt name
(``NCCL_SOCKET_IFNAMES``) is ignored, an invalid value (``NCCL_ALGO=Bogus``,
``NCCL_IB_DISABLE=true``) is dropped or read as 0, and switches left over from
an old debugging session (``NCCL_P2P_DISABLE=1``, ``NCCL_IB_DISABLE=1``) keep
slowing every job. Machine images also ship settings made for another machine
size (``NCCL_GRAPH_FILE``/``NCCL_TOPO_FILE`` in ``/etc/nccl.conf``).

Why it matters
--------------
The setting the user relies on is not in effect, or a stale setting breaks
communicator setup (a graph file naming GPUs the machine does not have makes
init fail with ``ncclSystemError``) or costs bandwidth. A setting that only
costs speed or log lines (a leftover switch, a deprecated name, a bad
``NCCL_DEBUG`` value) or that nothing reads (``NCCL_TIMEOUT``) fails no
job: beside a failure it is a note, not a cause to weigh against the
failure's own. A debugging switch set on purpose
(``TORCH_DISTRIBUTED_DEBUG=DETAIL``, ``NCCL_DEBUG=TRACE``) is a note on a
healthy run too: it is what a user turns on to debug.

Evidence
--------
``NCCL_X set by environment to V`` and ``Invalid value`` lines of the NCCL
INFO log, environment dumps, ``export``/inline assignments and launcher
``-x``/``-e`` options, checked against the table of every variable NCCL and
PyTorch read (names, value syntax, deprecations, known-harmful values). A
variable a person's sentence names ("I put export NCCL_SOCKET_IFNAMES=eth0 in
the job script") is checked for its name and value only, at medium
confidence: misspelt or refused, it is wrong however the sentence meant it.

Fix
---
Correct the misspelt names and invalid values, unset the leftovers
(check ``env``, ``/etc/nccl.conf``, ``~/.nccl.conf``, container images and
launcher scripts), and rerun with ``NCCL_DEBUG=INFO`` to see every variable
NCCL took.
"""

from __future__ import annotations

from dataclasses import dataclass

from nccl_doctor.facts.base import Cite, Fact
from nccl_doctor.facts.catalogue import signature_of
from nccl_doctor.facts.failures import failures_of
from nccl_doctor.facts.gpu import Gpu
from nccl_doctor.facts.host import EnvVar
from nccl_doctor.facts.job import world_size
from nccl_doctor.facts.nccl import (
    NcclCommInit,
    NcclCommLayout,
    NcclEnvSetting,
    NcclWarn,
    error_chains,
)
from nccl_doctor.facts.store import Facts, is_prose
from nccl_doctor.findings import Confidence, Finding, Severity
from nccl_doctor.knowledge import nccl_env
from nccl_doctor.knowledge.topics import variable_topics
from nccl_doctor.rules.base import Rule
from nccl_doctor.signs.nccl import ALGO_FORCED
from nccl_doctor.signs.settings import settings_said, settings_that_worked

RULE = Rule(
    id="nccl.env",
    title="NCCL environment variables wrong or harmful",
    severity=Severity.WARNING,
    explains=("launch.rank_crash", "host.resources"),
)


@dataclass(frozen=True, slots=True)
class _Set:
    name: str
    value: str
    fact: Fact


def _settings(facts: Facts) -> list[_Set]:
    """Every variable the evidence shows set, once per (name, value)."""
    out: dict[tuple[str, str], _Set] = {}
    for s in facts.of(NcclEnvSetting):
        out.setdefault((s.name, s.value or ""), _Set(s.name, s.value or "", s))
    for e in facts.of(EnvVar):
        if e.value is None or is_prose(e.cite.text):
            continue
        out.setdefault((e.name, e.value), _Set(e.name, e.value, e))
    return list(out.values())


#: The catalogue's rows for ``XML Import Channel : dev N not found`` (src/graph/search.cc):
#: NCCL imports channels only from the file NCCL_GRAPH_FILE names, so the message alone says
#: a graph file is in use and names a device this machine lacks.
GRAPH_IMPORT = frozenset(
    {
        "nccl.warn.search.xml_import_channel_dev_not_found",
        "nccl.warn.search.xml_import_channel_dev_not_found_2",
    }
)


def _imports_graph(w: NcclWarn) -> bool:
    sig = signature_of(w.message)
    return sig is not None and sig.id in GRAPH_IMPORT


def _graph_failure(facts: Facts, sets: list[_Set]) -> list[Finding]:
    """NCCL failing while it reads a graph or topology file: NCCL_GRAPH_FILE/NCCL_TOPO_FILE
    seen set, or the graph import's own message, which only a graph file prints."""
    by_name = {s.name: s for s in sets}
    warns = facts.of(NcclWarn)
    imports = [w for w in warns if _imports_graph(w)]
    # the import's own failure first: another graph WARN before it may be a note NCCL goes on
    # after ("Could not find a path for pattern N, falling back to simple order")
    w = next(iter(imports), None) or next(
        (x for x in warns if (x.file or "").startswith("graph/")), None
    )
    if w is None:
        return []
    imported = bool(imports)
    graph = imported or (w.file or "").endswith("search.cc")
    name = "NCCL_GRAPH_FILE" if graph else "NCCL_TOPO_FILE"
    s = by_name.get(name) or by_name.get("NCCL_GRAPH_FILE")
    if s is None and not imported:
        return []
    chain = [c for c in error_chains(facts) if c.tid == w.tid][:1]
    code = f" ({chain[0].result_name})" if chain and chain[0].result_name else ""
    setting = (
        f"{s.name}={s.value} is set (not by the job)"
        if s
        else (
            "NCCL_GRAPH_FILE is set (the import message is printed only from that file; the "
            "log does not show where it was set)"
        )
    )
    unset = s.name if s else "NCCL_GRAPH_FILE"
    return [
        RULE.finding(
            summary=f"{setting} and NCCL fails reading it: "
            f"'{w.message.strip()}'{code}; the file describes another machine",
            fix=[
                (
                    f"Unset {unset}: remove it from the environment, /etc/nccl.conf, ~/.nccl.conf "
                    "and the image's profile scripts"
                ),
                (
                    "Rerun with NCCL_DEBUG=INFO and check that NCCL builds its own graph "
                    f"(no '{unset} set by environment' line)"
                ),
                "Keep such files only on the exact machine type they were made for",
            ],
            evidence=[*([s.fact] if s else []), w, *chain],
            severity=Severity.CRITICAL,
            confidence=Confidence.HIGH,
            ranks=[w.rank] if w.rank is not None else [],
            hosts=[w.host] if w.host else [],
        )
    ]


_INTRA = ("NCCL_P2P", "NCCL_SHM", "NCCL_NVLS", "NCCL_CUMEM")
_INTER = ("NCCL_IB", "NCCL_NET", "NCCL_SOCKET", "NCCL_GDR", "NCCL_CROSS_NIC", "NCCL_COLLNET")


def _irrelevant(facts: Facts) -> tuple[str, ...]:
    """Prefixes whose harmful values cannot matter to the job the evidence shows."""
    sizes: list[tuple[int, int | None]] = [
        (x.nranks, x.n_nodes)
        for x in facts.of(NcclCommLayout)
        if x.nranks is not None and x.n_nodes is not None
    ]
    sizes += [(i.nranks, None) for i in facts.of(NcclCommInit) if i.nranks is not None]
    if not sizes and world_size(facts) == 1:
        return _INTRA + _INTER  # one process (its group's init line): no peer to reach
    if not sizes:
        # no job in the evidence (a live check, a pasted nvidia-smi): a node of one GPU
        # has no intra-node transport to switch off
        gpus = {g.bus_id or g.uuid or g.index for g in facts.of(Gpu)}
        return _INTRA if len(gpus) == 1 and None not in gpus else ()
    if all(n == 1 for n, _ in sizes):
        return _INTRA + _INTER
    if all(nodes == 1 for _, nodes in sizes if nodes is not None) and any(
        nodes is not None for _, nodes in sizes
    ):
        return _INTER
    return ()


@dataclass(frozen=True, slots=True)
class _Problem:
    """One questionable setting: the variable, its line, the fact that shows it, whether it
    can fail or misconfigure the job (``serious``), and whether it is a debugging switch set
    on purpose (``TORCH_DISTRIBUTED_DEBUG=DETAIL``, ``NCCL_DEBUG=TRACE``: valid values that
    cost speed)."""

    name: str
    text: str
    fact: Fact | Cite
    serious: bool
    debug_switch: bool = False
    #: told only in a person's sentence, not seen in the job's output
    said: bool = False

    @property
    def line(self) -> str:
        """The text of the line that shows it."""
        return self.fact.text if isinstance(self.fact, Cite) else self.fact.cite.text


def _problems(sets: list[_Set], skip: tuple[str, ...]) -> list[_Problem]:
    """Every questionable setting."""
    out: list[_Problem] = []
    for s in sets:
        fact = s.fact
        # a logging switch's bad value costs the log, never the job
        logs_only = "debug" in variable_topics(s.name)
        if isinstance(fact, NcclEnvSetting) and fact.invalid:
            used = f", NCCL used {fact.default_value}" if fact.default_value else ""
            out.append(
                _Problem(s.name, f"{s.name}={s.value} is invalid{used}", fact, not logs_only)
            )
            continue
        var = nccl_env.lookup(s.name)
        if var is None:
            if s.name.upper() in nccl_env.NOT_READ:
                # nothing reads it, so it changes nothing: it fails no job (a watchdog
                # still fires at the group's own timeout), and the note says what does
                said = f"{s.name}: {nccl_env.NOT_READ[s.name.upper()]}"
                out.append(_Problem(s.name, said, fact, False))
            elif nccl_env.is_known_family(s.name):
                near = nccl_env.closest(s.name)
                if near:
                    said = f"{s.name} is not read by anything; did you mean {near}?"
                    out.append(_Problem(s.name, said, fact, True))
            continue
        problem = nccl_env.validate(s.name, s.value)
        if problem:
            out.append(_Problem(s.name, problem, fact, not logs_only))
        harm = nccl_env.harm(s.name, s.value)
        if harm and not s.name.startswith(skip):
            out.append(_Problem(s.name, harm, fact, False, debug_switch=logs_only and not problem))
        if var.deprecated or var.removed_in:
            instead = f"; use {var.replacement}" if var.replacement else ""
            state = f"removed in NCCL {var.removed_in}" if var.removed_in else "deprecated"
            out.append(_Problem(s.name, f"{s.name} is {state}{instead}", fact, False))
    return out


def _said_problems(facts: Facts, seen: set[str]) -> list[_Problem]:
    """The variables a person's sentence names that NCCL would not take as written (a
    misspelt name, a value it refuses), unless the job's output shows them (``seen``).

    Only these two: a sentence names what it set, tried, asked about or was advised, so a
    leftover switch or a deprecated name told in words says nothing of the job; a name
    nothing reads, or a value NCCL reads as 0, is wrong however it was meant.
    """
    out: list[_Problem] = []
    for s in settings_said(facts):
        if s.name in seen:
            continue
        var = nccl_env.lookup(s.name)
        if var is None:
            near = nccl_env.closest(s.name) if nccl_env.is_known_family(s.name) else None
            if near and s.name.upper() not in nccl_env.NOT_READ:
                said = f"{s.name} (as written) is not read by anything; did you mean {near}?"
                out.append(_Problem(s.name, said, s.cite, True, said=True))
        elif s.value and (problem := nccl_env.validate(s.name, s.value)):
            serious = "debug" not in variable_topics(s.name)  # (as _problems says)
            out.append(_Problem(s.name, f"{problem} (as written)", s.cite, serious, said=True))
    return out


def _forced(facts: Facts) -> list[Finding]:
    """NCCL refused a collective because NCCL_ALGO/NCCL_PROTO left it no algorithm."""
    hits = facts.seen(ALGO_FORCED, prose=False)
    if not hits:
        return []
    m = hits[0].match
    what = m["fn"] + (f" of {m['dt']}" if m["dt"] else "")
    return [
        RULE.finding(
            summary=f"{m['var']}={m['val']} leaves NCCL no algorithm for {what}, so the "
            "collective fails with ncclInvalidUsage",
            fix=[
                (
                    f"Unset {m['var']} (or widen it) for this job: NCCL picks a working "
                    "algorithm per collective when it is not forced"
                ),
                (
                    f"Find where {m['var']} is set (the job's environment, a launcher script, "
                    "a test that set os.environ and did not restore it, /etc/nccl.conf)"
                ),
            ],
            evidence=[h.cite for h in hits[:2]],
            severity=Severity.CRITICAL,
            confidence=Confidence.HIGH,
            ranks=[h.rank for h in hits if h.rank is not None],
        )
    ]


def check(facts: Facts) -> list[Finding]:
    """Fire on settings that fail the job, and on wrong or harmful ones."""
    sets = _settings(facts)
    findings = _forced(facts) + _graph_failure(facts, sets)
    blamed = {c.text for f in findings for c in f.evidence}
    tested = {w.name for w in settings_that_worked(facts)}
    problems = [
        p
        for p in [
            *_problems(sets, _irrelevant(facts)),
            *_said_problems(facts, {s.name for s in sets}),
        ]
        if not (not p.serious and any(p.text.startswith(t) for t in tested))
        and p.line not in blamed
    ]
    if not problems:
        return findings
    serious = any(p.serious for p in problems)
    # a leftover switch, a deprecated name, a logging setting: each costs speed or log
    # lines, none fails a job; beside a failure they are a note, not a cause to weigh.
    # A debugging switch (TORCH_DISTRIBUTED_DEBUG=DETAIL) is what a user turns on to
    # debug, as this tool's own checks advise: a note on a healthy run too
    quiet = bool(failures_of(facts)) or all(p.debug_switch for p in problems)
    severity = Severity.WARNING if serious or not quiet else Severity.INFO
    names = sorted({p.name for p in problems})
    findings.append(
        RULE.finding(
            summary=f"{len(problems)} NCCL/torch setting(s) wrong or harmful: "
            + "; ".join(p.text for p in problems[:3])
            + ("; ..." if len(problems) > 3 else ""),
            fix=[
                "Correct the misspelt names and invalid values listed (names are case-sensitive)",
                "Unset leftovers of earlier debugging (" + ", ".join(names[:4]) + ") unless "
                "this machine needs them; look in env, /etc/nccl.conf, ~/.nccl.conf and "
                "launcher scripts",
                "Rerun with NCCL_DEBUG=INFO and check the 'set by environment' lines",
            ],
            evidence=[p.fact for p in problems[:4]],
            severity=severity,
            # a name or value as a sentence writes it may not be what the job ran with
            confidence=(
                Confidence.HIGH
                if any(p.serious and not p.said for p in problems)
                else Confidence.MEDIUM
            ),
            cause=serious,
            detail=[p.text for p in problems],
        )
    )
    return findings
