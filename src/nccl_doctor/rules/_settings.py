"""The values the evidence gives one variable: one reader for every rule family.

A setting shows as an environment fact (a dump, an export, ``-x NAME=v`` on a
command line), as NCCL's own echo of it, or written ``NAME=value`` in any line
(the NAME=value signs: :data:`nccl_doctor.signs.net.SETTINGS` for the network
rules, :data:`nccl_doctor.signs.nccl.OFF_SETTINGS` for the known bugs' switches).
"""

from __future__ import annotations

from nccl_doctor.facts.base import Cite
from nccl_doctor.facts.host import EnvVar
from nccl_doctor.facts.nccl import NcclEnvSetting
from nccl_doctor.facts.store import Facts, is_prose
from nccl_doctor.signs.nccl import OFF_SETTINGS
from nccl_doctor.signs.net import SETTINGS

_SIGNS = {**SETTINGS, **OFF_SETTINGS}


def env_values(facts: Facts, name: str, *, machine: bool = False) -> list[tuple[str, Cite]]:
    """Values the evidence gives ``name`` (env dumps, exports, ``-x NAME=v``, NCCL's echo,
    NAME=value in a line), each with its line, first seen first.

    ``name`` is any variable; one the NAME=value signs read is found written in any line too.
    With ``machine``, only
    what machine output sets counts: a sentence ("works with NCCL_CUMEM_ENABLE=0") is a
    person's account of a workaround, not the job's own setting.
    """
    out: list[tuple[str, Cite]] = [
        (e.value, e.cite)
        for e in facts.of(EnvVar)
        if e.name == name and e.value is not None and not (machine and is_prose(e.cite.text))
    ]
    out += [
        (s.value, s.cite)
        for s in facts.of(NcclEnvSetting)
        if s.name == name and s.value is not None
    ]
    written = _SIGNS.get(name)
    if written is not None:
        hits = facts.seen(written, prose=False) if machine else facts.seen(written)
        out += [(hit.match["value"], hit.cite) for hit in hits]
    return list(dict.fromkeys(out))
