"""Helpers shared by the ``nccl.*`` rules (private to this layer)."""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from nccl_doctor.facts.base import Cite, Fact
from nccl_doctor.facts.nccl import NcclCommInit, NcclLogFact, NcclTransport
from nccl_doctor.facts.signs import Sign
from nccl_doctor.facts.software import PythonPackage
from nccl_doctor.facts.store import Facts, Hit
from nccl_doctor.knowledge.nccl_versions import parse_version


def nccl_packages(facts: Facts) -> list[PythonPackage]:
    """pip/conda rows of an NCCL package (``nvidia-nccl-cu12``, conda ``nccl``)."""
    return [p for p in facts.of(PythonPackage) if _is_nccl_package(p.name.lower())]


def _is_nccl_package(name: str) -> bool:
    """``nvidia-nccl``, ``nvidia-nccl-cu12``, ``nccl``, ``libnccl``, ``libnccl2`` (lower case)."""
    if name in ("nvidia-nccl", "nccl", "libnccl"):
        return True
    cuda = name.removeprefix("nvidia-nccl-cu")
    if cuda != name:
        return cuda.isdecimal()
    digit = name.removeprefix("libnccl")
    return digit != name and len(digit) == 1 and digit.isdecimal()


def same_version(a: str, b: str) -> bool:
    """Whether two version strings name the same major.minor.patch."""
    return parse_version(a) == parse_version(b)


def machine(facts: Facts, sign: Sign) -> tuple[Hit, ...]:
    """Hits of ``sign`` on machine output only."""
    return facts.seen(sign, prose=False)


def prose(facts: Facts, sign: Sign) -> tuple[Hit, ...]:
    """Hits of ``sign`` on people's sentences only."""
    return tuple(h for h in facts.seen(sign) if h.prose)


def seen_in_order(facts: Facts, sign: Sign, items: Iterable[Cite | Fact]) -> Iterator[Hit]:
    """The hits of ``sign`` on the lines of ``items``, item by item in the order given."""
    for item in items:
        yield from facts.seen_on(sign, (item,))


def rank_hosts(facts: Facts) -> dict[int, str]:
    """Global rank -> host, from NCCL init lines and any fact carrying both."""
    out: dict[int, str] = {}
    for init in facts.of(NcclCommInit):
        rank = init.rank if init.rank is not None else init.comm_rank
        if rank is not None and init.host and (init.nranks or 0) > 1:
            out.setdefault(rank, init.host)
    for fact in facts.all:
        if isinstance(fact, NcclLogFact) and fact.rank is not None and fact.host:
            out.setdefault(fact.rank, fact.host)
    return out


def nccl_hosts(facts: Facts) -> list[str]:
    """Hosts that printed NCCL log lines, in first-seen order."""
    return list(dict.fromkeys(f.host for f in facts.all if isinstance(f, NcclLogFact) and f.host))


def transports(facts: Facts, kinds: Iterable[str]) -> list[NcclTransport]:
    """NCCL transports of the given kinds (``P2P``, ``SHM``, ``NET``...)."""
    wanted = {k.upper() for k in kinds}
    return [t for t in facts.of(NcclTransport) if t.kind.upper() in wanted]


def warn_text(line: str) -> str:
    """An NCCL WARN line without its ``host:pid:tid [dev] file:line NCCL WARN`` prefix."""
    return line.split("NCCL WARN", 1)[-1].strip()


def text_of(item: Cite | Fact) -> str:
    """The cited line of a citation or a fact."""
    return item.text if isinstance(item, Cite) else item.cite.text
