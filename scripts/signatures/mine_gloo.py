"""Mine Gloo's TCP transport errors into ``signatures/gloo.jsonl``.

Usage: ``python scripts/signatures/mine_gloo.py /path/to/gloo/git-dir``

Gloo has no release tags; PyTorch pins a commit as the ``third_party/gloo``
submodule. The commits read here (:data:`COMMITS`) are the last before three
dates that bracket PyTorch 2.1 (2023-08), 2.4 (2024-05) and the newest
snapshot (2025-05); a version label is the commit's date. A message is the
argument list of ``GLOO_ERROR_MSG``/``GLOO_ENFORCE*``/``signalException``,
literals kept and expressions written as ``{name}``; Gloo prefixes each
with ``[file:line] ``.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from clex import blank_comments, find_calls
from common import pattern_for, write_jsonl

COMMITS = (("01a0c81", "2023-08-24"), ("c82c8b9", "2024-05-24"), ("cc44198", "2025-05-16"))
DIRS = ("gloo/transport/tcp", "gloo/common", "gloo/rendezvous")
MACROS = ("GLOO_ERROR_MSG", "GLOO_ENFORCE", "GLOO_ENFORCE_EQ", "GLOO_ENFORCE_NE", "GLOO_ENFORCE_GT",
          "GLOO_ENFORCE_GE", "GLOO_ENFORCE_LT", "GLOO_ENFORCE_LE", "signalException",
          "GLOO_THROW_IO_EXCEPTION", "GLOO_THROW")  # fmt: skip
DROP = ("peer", "lost")
PEER_GONE = ("launch.rank_crash", "net.unreachable")
# (id, anchor over the message, symptom, hints)
KEEP: tuple[tuple[str, str, str, tuple[str, ...]], ...] = (
    ("gloo.tcp.connection_closed", r"^Connection closed by peer", "connection", PEER_GONE),
    ("gloo.tcp.read_error", r"^Read error ", "connection", PEER_GONE),
    ("gloo.tcp.socket_closed", r"^Socket closed ", "connection", PEER_GONE),
    ("gloo.tcp.socket_unexpectedly_closed", r"^Socket unexpectedly closed", "connection", PEER_GONE),
    ("gloo.tcp.writev_error", r"^writev ", "connection", PEER_GONE),
    ("gloo.tcp.read_timeout", r"^Read timeout ", "collective_timeout", ("app.hang",)),
    ("gloo.tcp.write_timeout", r"^Write timeout ", "collective_timeout", ("app.hang",)),
    ("gloo.tcp.connect_timeout", r"^Connect timeout ", "collective_timeout",
     ("net.unreachable", "net.socket_interface")),
    ("gloo.tcp.op_timeout", r"^Timed out waiting ", "collective_timeout", ("app.hang",)),
    ("gloo.tcp.app_timeout_closure", r"^Application timeout caused pair closure", "collective_timeout",
     ("app.hang",)),
    ("gloo.tcp.no_address_for", r"Unable to find address for", "connection", ("net.socket_interface",)),
    ("gloo.tcp.connect_to_self", r"Cannot connect to self", "connection", ("nccl.host_identity",)),
    ("gloo.tcp.bind_failed", r"\. bind: ", "connection", ("launch.port_in_use",)),
    ("gloo.tcp.connect_failed", r"\. connect: ", "connection", ("net.unreachable",)),
    ("gloo.tcp.accept_failed", r"\. accept: ", "connection", ("host.resources",)),
)  # fmt: skip


def _git(mirror: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-C", str(mirror), *args],
        check=True,
        capture_output=True,
        text=True,
        errors="replace",
    ).stdout


def _format(args: list[str]) -> str | None:
    out: list[str] = []
    taken: set[str] = set()
    for arg in args:
        lits = re.findall(r'"((?:[^"\\]|\\.)*)"', arg)
        if lits and re.fullmatch(r'\s*(?:"(?:[^"\\]|\\.)*"\s*)+', arg):
            out.append("".join(lits).replace("{", "{{").replace("}", "}}"))
            continue
        words = [w for w in re.findall(r"[A-Za-z_]\w*", arg) if w not in ("str", "count", "c_str")]
        name = {"strerror": "errno_text"}.get(
            words[0] if words else "", words[-1] if words else "value"
        )
        name = re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", name).lower().strip("_")
        base, k = name, 2
        while name in taken:
            name, k = f"{base}_{k}", k + 1
        taken.add(name)
        out.append("{" + name + (":w" if name in ("peer", "peer_str") else "") + "}")
    text = "".join(out)
    return text if re.search(r"[A-Za-z]{3}", re.sub(r"\{\w+\}", "", text)) else None


def _messages(mirror: Path, commit: str) -> list[tuple[str, int, str]]:
    files = _git(mirror, "ls-tree", "-r", "--name-only", commit, "--", *DIRS).split()
    out = []
    for path in files:
        if not path.endswith((".cc", ".h")):
            continue
        src = blank_comments(_git(mirror, "show", f"{commit}:{path}").replace("\\\n", "  "))
        for macro, line, args, _end in find_calls(src, MACROS):
            skip = (
                2
                if re.search(r"_(EQ|NE|GT|GE|LT|LE)$", macro)
                else (1 if macro == "GLOO_ENFORCE" else 0)
            )
            fmt = _format(args[skip:])
            if fmt and skip == 2:  # EnforceNotMet: "<cond>. <lhs> vs <rhs>. <message>"
                fmt = "{condition}. {lhs:d} vs {rhs:d}. " + fmt
            elif fmt and skip == 1:
                fmt = "{condition}. " + fmt
            if fmt:
                out.append((path, line, fmt))
    return out


def main(argv: list[str]) -> int:
    mirror = Path(argv[1]) if len(argv) > 1 else Path("/work/.mirror/facebookincubator+gloo/repo")
    found: dict[tuple[str, str], dict[str, list[str]]] = {}
    for commit, date in COMMITS:
        for path, line, fmt in _messages(mirror, commit):
            for ident, anchor, _s, _h in KEEP:
                if re.search(anchor, fmt):
                    found.setdefault((ident, fmt), {}).setdefault(date, []).append(
                        f"{path}:{line}@{commit}"
                    )
    rows: list[dict[str, Any]] = []
    for ident, _anchor, symptom, hints in KEEP:
        variants = sorted(
            ((f, w) for (i, f), w in found.items() if i == ident), key=lambda fw: -len(fw[1])
        )
        if not variants:
            raise SystemExit(f"{ident}: not found")
        for n, (fmt, where) in enumerate(variants):
            seen = [d for _c, d in COMMITS if d in where]
            pattern, fields = pattern_for(fmt, "concat")
            rows.append({
                "id": ident if n == 0 else f"{ident}_{n + 1}",
                "library": "gloo",
                "level": "error",
                "where": sorted({loc for locs in where.values() for loc in locs}),
                "versions": {"first": seen[0], "last": seen[-1], "seen": seen},
                "format": fmt,
                "format_style": "concat",
                "pattern": pattern,
                "fields": fields,
                "symptom": symptom,
                "hint_ids": list(hints),
                "note": "Gloo prefixes '[<file>:<line>] ' ('[enforce fail at <file>:<line>] ' "
                "for a failed GLOO_ENFORCE); versions are the dates of the Gloo commits read",
            })  # fmt: skip
    print(f"{len(rows)} signatures -> {write_jsonl('gloo', rows)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv))
