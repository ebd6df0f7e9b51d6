"""Mine Gloo's transport and rendezvous errors into ``signatures/gloo.jsonl``.

Usage: ``python scripts/signatures/mine_gloo.py /path/to/gloo/git-dir``
(the default is a mirror of github.com/pytorch/gloo, where
facebookincubator/gloo moved; it holds the older history too).

Gloo has no release tags; PyTorch pins a commit as the ``third_party/gloo``
submodule. The commits read here (:data:`COMMITS`) are the last before dates
that bracket PyTorch 1.9 (2021-05), 1.13 (2022-09), 2.1 (2023-08), 2.4
(2024-05), a 2025 snapshot (2025-05) and the newest (2026-04); a version
label is the commit's date. A message is the argument list of
``GLOO_ERROR_MSG``/``GLOO_ENFORCE*``/``signalException``, literals kept and
expressions written as ``{name}``; Gloo prefixes each with ``[file:line] ``
(``[enforce fail at file:line] `` for an enforce). A binary enforce with no
message of its own (``GLOO_ENFORCE_LE(op.preamble.length, op.nbytes)``)
prints its condition as the source spells it, then ``<lhs> vs <rhs>``: the
condition is kept as literal text, the only words such a line has.
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

COMMITS = (
    ("c22a5cf", "2021-05-21"),
    ("e6d509b", "2022-09-20"),
    ("01a0c81", "2023-08-24"),
    ("c82c8b9", "2024-05-24"),
    ("cc44198", "2025-05-16"),
    ("70dc360", "2026-04-20"),
)
# tcp: Linux's transport (and its TLS pairs); uv: libuv's, what PyTorch uses on Windows and
# macOS; ibverbs: RDMA pairs
DIRS = (
    "gloo/transport/tcp",
    "gloo/transport/uv",
    "gloo/transport/ibverbs",
    "gloo/common",
    "gloo/rendezvous",
)
MACROS = ("GLOO_ERROR_MSG", "GLOO_ENFORCE", "GLOO_ENFORCE_EQ", "GLOO_ENFORCE_NE", "GLOO_ENFORCE_GT",
          "GLOO_ENFORCE_GE", "GLOO_ENFORCE_LT", "GLOO_ENFORCE_LE", "signalException",
          "GLOO_THROW_IO_EXCEPTION", "GLOO_THROW")  # fmt: skip
DROP = ("peer", "lost")
PEER_GONE = ("launch.rank_crash", "net.unreachable")
# the remote side sent more bytes than the local receive was posted for: the ranks called
# different collectives, or one collective with different sizes (Gloo's own words since 2026:
# "Is there a distributed collective mismatch in your code?")
MISMATCH = ("app.collective_mismatch",)
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
    # Pair::prepareRead: the preamble announces more bytes than the posted buffer holds
    ("gloo.tcp.recv_size_mismatch",
     r"^op\.preamble\.length <= op\.nbytes|Received data size doesn't match", "desync", MISMATCH),
    ("gloo.tcp.recv_out_of_bounds", r"^op\.preamble\.roffset \+ op\.preamble\.length <= ",
     "desync", MISMATCH),
    # Pair::handleConnected (before 2023): the asynchronous connect's SO_ERROR, ECONNREFUSED
    # when nothing listens at the address the peer advertised (a hostname that resolves to
    # 127.0.1.1, the wrong interface) or the peer is gone
    ("gloo.tcp.connect_peer_failed", r"^connect \{peer", "connection",
     ("net.socket_interface", "net.unreachable")),
    ("gloo.tcp.pair_not_connected", r"Pair is not connected ", "connection", PEER_GONE),
    ("gloo.tcp.no_interface_for", r"Unable to find interface for", "connection",
     ("net.socket_interface",)),
    ("gloo.tls.ssl_io_failed", r"^SSL_(?:read|write) ", "connection", PEER_GONE),
    ("gloo.uv.connect_error", r"^Error connecting to ", "connection",
     ("net.unreachable", "net.socket_interface")),
    # ibverbs: registering memory, completions, timeouts
    ("gloo.ibverbs.reg_mr_memlock", r"ibv_reg_mr: .*locked memory limit", "host_limit",
     ("net.ib_config", "host.resources")),
    ("gloo.ibverbs.reg_mr_peer_mem", r"ibv_reg_mr: .*nv_peer_mem", "failure", ("net.gdr",)),
    ("gloo.ibverbs.create_cq_failed", r"ibv_create_cq failed", "host_limit", ("net.ib_config",)),
    ("gloo.ibverbs.completion_error", r"(?:Recv|Send|Memory region (?:recv|send)) for slot ",
     "connection", ("net.ib_transport", "launch.rank_crash")),
    ("gloo.ibverbs.send_timeout", r"^Send timeout ", "collective_timeout", ("app.hang",)),
    ("gloo.ibverbs.mr_timeout", r"^Timeout waiting for memory region from ", "collective_timeout",
     ("app.hang", "launch.rank_crash")),
    # rendezvous stores of Gloo's own (file, hash, Redis: what Gloo users outside PyTorch
    # rendezvous through; PyTorch wraps its c10d store instead)
    ("gloo.rdzv.wait_timeout", r"^Wait timeout for key", "store_timeout",
     ("launch.rendezvous", "launch.rank_crash")),
    ("gloo.rdzv.redis_connect", r"^Connecting to Redis: ", "store_timeout", ("net.unreachable",)),
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


def _render(fmt: str) -> str:
    """``fmt`` with a sample value for each placeholder (a peer is ``[10.0.0.2]:35724``)."""
    samples = {"w": "[10.0.0.2]:35724", "d": "42"}
    return (
        re.sub(r"\{(\w+)(?::(\w))?\}", lambda m: samples.get(m.group(2) or "", "sample text"), fmt)
        .replace("{{", "{")
        .replace("}}", "}")
    )


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
            if fmt is None and skip == 2 and len(args) == 2:  # the condition is the message
                op = {"EQ": "==", "NE": "!=", "GT": ">", "GE": ">=", "LT": "<", "LE": "<="}
                cond = f"{args[0]} {op[macro[-2:]]} {args[1]}"
                fmt = re.sub(r"\s+", " ", cond).replace("{", "{{").replace("}", "}}")
                fmt += ". {lhs:d} vs {rhs:d}"
            elif fmt and skip == 2:  # EnforceNotMet: "<cond>. <lhs> vs <rhs>. <message>"
                fmt = "{condition}. {lhs:d} vs {rhs:d}. " + fmt
            elif fmt and skip == 1:
                fmt = "{condition}. " + fmt
            if fmt:
                out.append((path, line, fmt))
    return out


def main(argv: list[str]) -> int:
    mirror = Path(argv[1]) if len(argv) > 1 else Path("/work/.mirror/pytorch+gloo/repo")
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
            # a pattern stops before the first character that is not ASCII (2026's sign-off,
            # "GLHF! \U0001f3d6\ufe0f", does not survive every terminal and paste)
            ascii_fmt = re.split(r"[^\x00-\x7f]", fmt)[0].rstrip()
            pattern, fields = pattern_for(ascii_fmt, "concat")
            row: dict[str, Any] = {
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
            }  # fmt: skip
            if ascii_fmt != fmt:  # the pattern covers part of the message: a line of its shape
                row["example"] = _render(fmt)
            rows.append(row)
    print(f"{len(rows)} signatures -> {write_jsonl('gloo', rows)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv))
