"""The versions the evidence names: the driver, CUDA, torch and NCCL, the first read of each
(:func:`versions_of`), and every NCCL release with who printed it (:func:`nccl_versions`)."""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from nccl_doctor.facts.base import ELLIPSIS, SENTENCE_END, Cite, Fact
from nccl_doctor.facts.gpu import DriverInfo
from nccl_doctor.facts.host import KernelGpuMessage
from nccl_doctor.facts.live import LibraryVersions, NvmlOutcome
from nccl_doctor.facts.nccl import NcclLogFact, NcclVersion
from nccl_doctor.facts.run import NcclErrorReport, PgEnvironment, PgInitOptions
from nccl_doctor.facts.software import SoftwareVersions, VersionPrint
from nccl_doctor.facts.store import Facts, Said
from nccl_doctor.facts.told import sentence_of
from nccl_doctor.signs.nccl import BANNER_QUOTED, VLLM_NCCL

#: The versions a report names, in the order it lists them.
VERSION_NAMES = ("driver", "cuda", "torch", "torch_cuda", "nccl")


def _version_pairs(facts: Facts) -> Iterable[tuple[str, str | None]]:
    for lib in facts.of(LibraryVersions):
        yield from (("driver", lib.driver_version), ("cuda", lib.cuda_driver_version))
        yield from (("torch", lib.torch_version), ("nccl", lib.nccl_version))
    for nvml in facts.of(NvmlOutcome):
        yield from (("driver", nvml.driver_version), ("cuda", nvml.cuda_driver_version))
    for smi in facts.of(DriverInfo):
        yield from (("driver", smi.driver_version), ("cuda", smi.cuda_version))
    # what the processes printed (NCCL, torch, vLLM's binding), then the package lists
    yield from (("nccl", seen.version) for seen in nccl_versions(facts))
    for printed in facts.of(VersionPrint):
        yield from (("torch", printed.torch_version), ("torch_cuda", printed.cuda_version))
    for env in facts.of(SoftwareVersions):
        yield from (("torch", env.torch_version), ("torch_cuda", env.cuda_used_to_build_torch))
        yield ("driver", env.nvidia_driver_version)
    for msg in facts.of(KernelGpuMessage):
        if msg.kind == "module_version":
            yield ("driver", msg.version)


#: Where a version came from vLLM's own NCCL binding (see :func:`nccl_versions`).
VLLM_BINDING = "vLLM pynccl"


@dataclass(frozen=True, slots=True)
class SeenVersion:
    """One NCCL version the evidence names, and where."""

    version: str
    cite: Cite
    where: str
    host: str | None = None
    pid: int | None = None


def nccl_versions(facts: Facts, *, runtime: bool = False) -> list[SeenVersion]:
    """Every NCCL version the evidence names, in reading order, with who printed it.

    ``runtime`` keeps only what a running process printed (leaves out package lists).
    Read once per diagnosis (the rules and :func:`versions_of` ask; each gets its own list).
    """
    seen = facts.derived("nccl_versions", lambda f: tuple(_nccl_versions(f)))
    return [s for s in seen if s.where != _PACKAGES] if runtime else list(seen)


#: A sentence that tells a version changed (an upgrade, a downgrade, from one to another):
#: its two banners are one process before and after, not two at once.
_CHANGED = re.compile(
    r"\b(?:upgrad\w*|downgrad\w*|updat\w*|rolled back|roll\w* back)\b"
    # (or told of the environment it ran in before: "if I go back to my old venv (its log says
    # NCCL version 2.20.5+cuda12.4)")
    r"|\b(?:go(?:es|ing)?|went|switch(?:ed|ing)?) back to\b"
    r"|\b(?:old|previous|earlier|former) (?:venv|virtualenv|conda env|env(?:ironment)?|image"
    r"|container|install(?:ation)?)\b"
    r"|\bfrom\b[^.;\n]{0,20}\bNCCL version\b[^.;\n]{0,40}\bto\b",
    re.IGNORECASE,
)
#: A release with the suffix NCCL's banner prints (``2.20.5+cuda12.4``).
_BANNER_VALUE = re.compile(r"\b(?P<v>2\.\d{1,2}\.\d{1,2})\+cuda\d{2}\.\d")
#: Where a version came from a package list (collect_env), not a running process.
_PACKAGES = "collect_env"


def _nccl_versions(facts: Facts) -> list[SeenVersion]:
    seen: list[SeenVersion] = []
    last: dict[str, tuple[int, str | None, int | None]] = {}
    for fact in facts.all:
        if isinstance(fact, NcclVersion) and fact.version:
            host, pid = fact.host, fact.pid
            near = last.get(fact.cite.source)
            if host is None and near is not None and 0 <= fact.cite.line - near[0] <= 20:
                host, pid = near[1], near[2]
            seen.append(SeenVersion(fact.version, fact.cite, "NCCL banner", host, pid))
        elif isinstance(fact, NcclLogFact) and fact.host:
            last[fact.cite.source] = (fact.cite.line, fact.host, fact.pid)
    others: list[tuple[str | None, Fact, str]] = [
        *((o.nccl_version, o, "ProcessGroupNCCL") for o in facts.of(PgInitOptions)),
        *((pg.nccl_version, pg, "ProcessGroupNCCL") for pg in facts.of(PgEnvironment)),
        *((r.nccl_version, r, "PyTorch NCCL error") for r in facts.of(NcclErrorReport)),
    ]
    seen.extend(SeenVersion(v, f.cite, w, f.host) for v, f, w in others if v)
    # vLLM's own binding loads a libnccl of its choosing (its wheel's, VLLM_NCCL_SO_PATH): the
    # release its collectives run, though no second NCCL of the job's own (VLLM_BINDING)
    seen.extend(
        SeenVersion(h.match["v"], h.said.cite, VLLM_BINDING, h.said.host)
        for h in sorted(facts.seen(VLLM_NCCL), key=lambda h: h.prose)
        if h.match["v"]
    )
    # the banner retold in a sentence ("the ranks on node 2 print NCCL version 2.19.3+cuda12.2"):
    # its +cuda suffix is the running process's own print (machine lines are the banner's)
    # (every one of the sentence's: "node 1 prints ... 2.20.3+cuda12.4, node 2 ... 2.19.3+...";
    # not a change told from one to the other: "after upgrading from ... to ...")
    # (after the first, a release with the banner's +cuda suffix is another banner: "rank 0
    # prints NCCL version 2.18.1+cuda12.1 and PC2 prints 2.20.5+cuda12.4")
    for h in facts.seen(BANNER_QUOTED):
        if not h.prose:
            continue
        start, end = sentence_of(h.said.text, h.match)  # (the line may hold a paragraph)
        if _CHANGED.search(h.said.text, start, end):
            continue
        values = [m["v"] for m in _BANNER_VALUE.finditer(h.said.text, h.match.start(), end)]
        if end >= len(h.said.text.rstrip(ELLIPSIS)):
            # the sentence runs on past what the citation holds of a long line: its next piece
            values += [m["v"] for m in _BANNER_VALUE.finditer(_run_on(facts, h.said))]
        seen.extend(
            SeenVersion(v, h.said.cite, "NCCL banner (retold)", h.said.host) for v in values
        )
    # torch's own print of the NCCL it runs (torch.cuda.nccl.version()), on its machine
    seen.extend(
        SeenVersion(p.nccl_version, p.cite, "torch.cuda.nccl.version()", p.host)
        for p in facts.of(VersionPrint)
        if p.nccl_version
    )
    packages = ((sw.nccl_version, sw) for sw in facts.of(SoftwareVersions))
    seen.extend(SeenVersion(v, sw.cite, _PACKAGES, sw.host) for v, sw in packages if v)
    return seen


def _run_on(facts: Facts, said: Said) -> str:
    """The sentence a long line's citation cut goes on with: the start of the line's next
    piece up to its first sentence end (empty where the line has no further piece)."""
    lines = facts.lines
    at = next((i for i, line in enumerate(lines) if line is said or line == said), None)
    if at is None or at + 1 >= len(lines):
        return ""
    after = lines[at + 1]
    if (after.cite.source, after.cite.line) != (said.cite.source, said.cite.line):
        return ""
    stop = SENTENCE_END.search(after.text)
    return after.text[: stop.end() if stop else len(after.text)]


def versions_of(facts: Facts) -> tuple[tuple[str, str], ...]:
    """driver, cuda (the driver's), torch, torch_cuda (torch's build), nccl: the first read of each.

    A live read (NVML, package metadata) comes before a tool's text, which
    comes before what a person pasted. Read once per evidence (the differential's
    context and the report's inventory both ask).
    """
    return facts.derived("versions", _versions)


def _versions(facts: Facts) -> tuple[tuple[str, str], ...]:
    found: dict[str, str] = {}
    for name, value in _version_pairs(facts):
        if value and name not in found:
            found[name] = value.split("+", 1)[0] if name == "torch" else value
    return tuple((name, found[name]) for name in VERSION_NAMES if name in found)
