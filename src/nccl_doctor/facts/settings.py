"""The values the evidence gives one variable: the one reader of settings, for the rules and
the differential.

A setting shows as an environment fact (a dump, an export, ``-x NAME=v`` on a
command line), as NCCL's own echo of it, or written ``NAME=value`` in any line
(the NAME=value signs: :data:`nccl_doctor.signs.net.SETTINGS` for the network
rules, :data:`nccl_doctor.signs.nccl.OFF_SETTINGS` for the known bugs' switches).
:func:`env_values` gives every value with its line (a rule cites them);
:func:`taken` the one value the job ran with (the differential weighs it).
"""

from __future__ import annotations

import re

from nccl_doctor.facts.base import Cite
from nccl_doctor.facts.host import EnvVar
from nccl_doctor.facts.nccl import NcclEnvSetting
from nccl_doctor.facts.store import Facts, is_prose
from nccl_doctor.signs.nccl import ENV_ECHO_RETOLD, OFF_SETTINGS, SETTINGS_STANDING
from nccl_doctor.signs.net import SETTINGS

_SIGNS = {**SETTINGS, **OFF_SETTINGS}
#: One ``NAME=value`` of a list of settings in a sentence.
_NAME_VALUE = re.compile(
    r"\b(?P<name>NCCL_[A-Z0-9_]{2,40}) ?= ?(?P<value>[\w:^+-]{1,40})", re.ASCII
)


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


def taken(facts: Facts, name: str) -> str | None:
    """The value of ``name`` as NCCL says it took it (``NCCL_IB_DISABLE set by environment to
    1.``: whatever set it, the job's environment, an image's /etc/nccl.conf), else as the
    environment shows it, else as a sentence retells NCCL's echo or says the setting stays in
    place for every run (/etc/environment, the image, the launch script); lower case."""
    for setting in facts.of(NcclEnvSetting):
        if setting.name == name and not setting.invalid:
            return (setting.value or "").strip().rstrip(".").lower()
    for var in facts.of(EnvVar):
        if var.name == name:
            return (var.value or "").strip().lower()
    # the echo retold in a sentence ('the new image's log contains "NCCL_P2P_DISABLE set by
    # environment to 1."'): NCCL's own words for what it took
    for hit in facts.seen(ENV_ECHO_RETOLD):
        for m in ENV_ECHO_RETOLD.regex.finditer(hit.said.text) if hit.prose else ():
            if m["name"] == name:
                return m["value"].lower()
    # a sentence that says where the settings stay for every run, then lists them
    for hit in facts.seen(SETTINGS_STANDING):
        listed = hit.said.text[hit.match.start("name") :].split(".", 1)[0]
        for m in _NAME_VALUE.finditer(listed) if hit.prose else ():
            if m["name"] == name:
                return m["value"].lower()
    return None
