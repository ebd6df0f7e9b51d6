"""Write ``deepspeed.jsonl``, ``horovod.jsonl`` and ``accelerate.jsonl``: the launchers besides
torchrun, read from their own source at release tags.

Usage: ``python scripts/signatures/mine_launchers.py`` (git mirrors of microsoft/DeepSpeed,
horovod/horovod and huggingface/accelerate under ``/work/.mirror``; another root as the
first argument).

Python messages are read with ``ast`` (:mod:`torch_python`: a logging call's or a raised
exception's first argument, f-strings as ``{name}`` placeholders) from the tag's files;
Horovod's C++ messages are ``<<`` chains and ``Status`` constructors in ``horovod/common``,
read from the first literal of each chain to the statement's end (literals kept,
expressions as ``{name}``, ``std::endl`` ends the line).
"""

from __future__ import annotations

import ast
import io
import re
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from clex import blank_comments
from common import pattern_for, write_jsonl
from torch_python import _message, read_tree

Keep = tuple[str, str, str, tuple[str, ...]]  # (id, anchor over the message, symptom, hints)

# a launcher's child ended by a signal: Python's returncode is minus the signal's number
SIGNALS = {-9: ("sigkill", "killed", ("host.resources", "launch.rank_crash")),
           -11: ("sigsegv", "crashed", ("launch.rank_crash",)),
           -7: ("sigbus", "bus_error", ("nccl.shm",)),
           -6: ("sigabrt", "aborted", ("app.hang", "launch.rank_crash"))}  # fmt: skip

LIBRARIES: dict[str, dict[str, Any]] = {
    "deepspeed": {
        "mirror": "microsoft+DeepSpeed",
        "tags": ("v0.9.0", "v0.12.0", "v0.14.0", "v0.16.4"),
        "python": ("deepspeed/launcher",),
        "keep": (
            # launch.py's sigkill_handler: a rank's process ended non-zero; the launcher kills
            # the others and exits with its code (the cause is in that rank's own output)
            ("deepspeed.launch.exit_code", r"exits with return code = ", "failure",
             ("launch.rank_crash",)),
            ("deepspeed.launch.killing_subprocess", r"^Killing subprocess ", "info", ()),
            ("deepspeed.runner.no_gpu", r"^Unable to proceed, no GPU resources available",
             "cuda_device", ("cuda.device_visibility", "driver.container")),
            ("deepspeed.runner.no_extra_nodes", r"^Num nodes is >1 but no extra nodes",
             "failure", ("launch.rendezvous",)),
        ),
        "signals": "deepspeed.launch.exit_code",
    },
    "horovod": {
        "mirror": "horovod+horovod",
        "tags": ("v0.20.0", "v0.24.3", "v0.28.1"),
        "python": ("horovod/runner",),
        "cpp": ("horovod/common",),
        "keep": (
            # a rank raised, or one rank ran out of data and left while others still reduce
            ("horovod.common.shut_down", r"^Horovod has been shut down", "failure",
             ("launch.rank_crash", "app.collective_mismatch")),
            # the controller compared the ranks' requests for one tensor: they differ
            ("horovod.common.mismatch", r"^Mismatched ", "desync",
             ("app.collective_mismatch", "app.param_mismatch")),
            # the stall inspector: a subset of ranks submitted a tensor, the rest never did
            ("horovod.common.stall", r"^One or more tensors were submitted to be",
             "collective_timeout", ("app.collective_mismatch", "app.hang")),
            ("horovod.runner.nonzero_exit",
             r"^Horovod detected that one or more processes exited with non-zero", "failure",
             ("launch.rank_crash",)),
        ),
    },
    "accelerate": {
        "mirror": "huggingface+accelerate",
        "tags": ("v0.20.0", "v0.30.0", "v1.0.0", "v1.14.0"),
        "python": ("src/accelerate/commands", "src/accelerate/utils", "src/accelerate/state.py"),
        "keep": (
            # the warning every `accelerate launch` without a config prints: harmless
            ("accelerate.launch.defaults_used",
             r"^The following values were not passed to `accelerate launch`", "info", ()),
            # consumer RTX 40xx cards hang over P2P/IB on older drivers: accelerate refuses
            ("accelerate.state.rtx4000_p2p", r"^Using RTX 4000 series doesn't support",
             "failure", ("nccl.p2p",)),
            ("accelerate.launch.rtx4000_p2p_disabled", r"^Using RTX 4000 series which doesn't",
             "info", ("nccl.p2p",)),
            ("accelerate.utils.old_kernel", r"^Detected kernel version ", "info", ("app.hang",)),
            ("accelerate.launch.multi_gpu_one_process", r"^You need to use at least 2 processes",
             "failure", ("cuda.device_visibility",)),
        ),
    },
}  # fmt: skip
# messages built in a variable and logged after: their level as the call logs them
LEVEL_OF = {"accelerate.launch.defaults_used": "warning",
            "accelerate.launch.rtx4000_p2p_disabled": "warning",
            "accelerate.utils.old_kernel": "warning"}  # fmt: skip
LEVELS = {"log.error": "error", "log.warning": "warning", "log.warn": "warning",
          "log.info": "info", "log.debug": "debug", "log.exception": "error",
          "log.critical": "error"}  # fmt: skip


def _literals(root: Path, rel_to: Path) -> list[tuple[str, int, str, str]]:
    """Every string constant and f-string of the files under ``root`` (a message built in a
    variable before it is logged: ``message = "The following values..."``)."""
    out = []
    for path in sorted(root.rglob("*.py")) if root.is_dir() else [root]:
        try:
            tree = ast.parse(path.read_text(encoding="utf-8"))
        except (SyntaxError, UnicodeDecodeError):
            continue
        parts = {id(v) for n in ast.walk(tree) if isinstance(n, ast.JoinedStr) for v in n.values}
        for node in ast.walk(tree):
            if id(node) in parts:  # a piece of an f-string, not a message
                continue
            if isinstance(node, ast.Constant | ast.JoinedStr) and (msg := _message(node)):
                text = (
                    msg[1] if msg[0] == "python" else msg[1].replace("{", "{{").replace("}", "}}")
                )
                out.append((str(path.relative_to(rel_to)), node.lineno, text, "literal"))
    return out


def _git(mirror: Path, *args: str) -> bytes:
    return subprocess.run(["git", "-C", str(mirror), *args], check=True, capture_output=True).stdout


def _export(mirror: Path, tag: str, paths: tuple[str, ...], into: Path) -> None:
    with tarfile.open(fileobj=io.BytesIO(_git(mirror, "archive", tag, *paths))) as tar:
        tar.extractall(into, filter="data")


_LIT = re.compile(r'"((?:[^"\\]|\\.)*)"')


def _chain(src: str, start: int) -> str:
    """The ``<<`` chain or call argument from the literal at ``start`` to the statement's end."""
    depth, i = 0, start
    while i < len(src):
        ch = src[i]
        if ch == '"':
            lit = _LIT.match(src, i)
            i = lit.end() - 1 if lit else i
        elif ch in "([{":
            depth += 1
        elif ch in ")]}":
            if depth == 0:
                break
            depth -= 1
        elif ch in ";," and depth == 0:
            break
        i += 1
    out: list[str] = []
    taken: set[str] = set()
    for raw in re.split(r"<<", src[start:i]):
        part = raw.strip()
        if not part:
            continue
        if part.startswith("std::endl"):
            break
        lits = _LIT.findall(part)
        if lits and re.fullmatch(r'(?:\s*"(?:[^"\\]|\\.)*")+\s*', part):
            out.append("".join(lits).replace("{", "{{").replace("}", "}}"))
            continue
        words = [w for w in re.findall(r"[A-Za-z_]\w*", part) if w not in ("std", "count")]
        name = re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", words[-1] if words else "value").lower()
        base, k = name, 2
        while name in taken:
            name, k = f"{base}_{k}", k + 1
        taken.add(name)
        out.append("{" + name + "}")
    return "".join(out)


def _cpp_messages(root: Path, rel_to: Path, anchors: list[str]) -> list[tuple[str, int, str]]:
    out = []
    for path in sorted(root.rglob("*")):
        if path.suffix not in (".cc", ".h"):
            continue
        src = blank_comments(path.read_text(encoding="utf-8", errors="replace"))
        for m in _LIT.finditer(src):
            if any(re.match(a, m.group(1)) for a in anchors):
                line = src.count("\n", 0, m.start()) + 1
                out.append((str(path.relative_to(rel_to)), line, _chain(src, m.start())))
    return out


def _rows(library: str, spec: dict[str, Any], mirror: Path) -> list[dict[str, Any]]:
    keep: tuple[Keep, ...] = spec["keep"]
    found: dict[tuple[str, str], dict[str, list[str]]] = {}
    levels: dict[str, str] = {}
    for tag in spec["tags"]:
        with tempfile.TemporaryDirectory() as tmp:
            root = Path(tmp)
            _export(mirror, tag, (*spec.get("python", ()), *spec.get("cpp", ())), root)
            messages: list[tuple[str, int, str, str]] = []
            for sub in spec.get("python", ()):
                base = root / sub
                files = read_tree(base, root) if base.is_dir() else [
                    m for m in read_tree(base.parent, root) if m.path == sub]  # fmt: skip
                for msg in files:
                    text = msg.text
                    if msg.style == "printf":  # a %-format: its conversions as placeholders
                        text = re.sub(r"%[-#0 +]*\d*(?:\.\d+)?[sdifr]", "{value}",
                                      text.replace("{", "{{").replace("}", "}}"))  # fmt: skip
                    messages.append((msg.path, msg.line, text, msg.kind))
            # the keep rows that no call names: a literal assigned before it is logged
            for sub in spec.get("python", ()):
                messages += _literals(root / sub, root)
            for sub in spec.get("cpp", ()):
                cpp = _cpp_messages(root / sub, root, [a for _i, a, _s, _h in keep])
                messages += [(p, n, t, "cpp") for p, n, t in cpp]
            for path, line, text, kind in messages:
                for ident, anchor, _s, _h in keep:
                    if re.search(anchor, text):
                        found.setdefault((ident, text), {}).setdefault(tag, []).append(
                            f"{path}:{line}@{tag}"
                        )
                        if kind != "literal" or text not in levels:
                            levels[text] = LEVELS.get(kind, LEVEL_OF.get(ident, "error"))
    rows: list[dict[str, Any]] = []
    for ident, _anchor, symptom, hints in keep:
        variants = sorted(
            ((t, w) for (i, t), w in found.items() if i == ident), key=lambda tw: -len(tw[1])
        )
        if not variants:
            raise SystemExit(f"{ident}: not found")
        for n, (text, where) in enumerate(variants):
            seen = [t for t in spec["tags"] if t in where]
            pattern, fields = pattern_for(text, "python")
            # TensorShape::DebugString() prints "[1024, 10]": a bracketed list, commas inside
            pattern = re.sub(r"\(\?P<(debug_string\w*)>[^)]*\)",
                             lambda m: f"(?P<{m.group(1)}>\\[[^\\n\\]]{{0,200}}\\])",
                             pattern)  # fmt: skip
            row = {
                "id": ident if n == 0 else f"{ident}_{n + 1}", "library": library,
                "level": levels[text], "where": sorted({w for ws in where.values() for w in ws}),
                "versions": {"first": seen[0], "last": seen[-1], "seen": seen},
                "format": text, "format_style": "python", "pattern": pattern,
                "fields": fields, "symptom": symptom, "hint_ids": list(hints),
                "note": f"{library}'s own message; versions are release tags read",
            }  # fmt: skip
            if "debug_string" in pattern:  # the rendered sample has no brackets: a real line
                row["example"] = (
                    re.sub(
                        r"\{(\w+)\}",
                        lambda m: "[1024, 10]" if "debug_string" in m.group(1) else "ALLREDUCE",
                        text,
                    )
                    .replace("{{", "{")
                    .replace("}}", "}")
                )
            rows.append(row)
            if spec.get("signals") == ident and n == 0:
                rows += _signal_rows(row)
    return rows


def _signal_rows(row: dict[str, Any]) -> list[dict[str, Any]]:
    """The exit-code line for a child a signal ended: its own class (killed, crashed...)."""
    out = []
    code_rx = re.compile(r"\(\?P<(\w*return_code\w*)>[^)]*\)")
    name = code_rx.search(row["pattern"]).group(1)  # type: ignore[union-attr]
    for code, (suffix, symptom, hints) in SIGNALS.items():
        # no signal number is a prefix of another's (-6, -7, -9, -11): no end test needed
        pattern = code_rx.sub(str(code), row["pattern"])
        out.append({**row, "id": f"{row['id']}_{suffix}", "pattern": pattern,
                    "fields": [f for f in row["fields"] if f != name], "symptom": symptom,
                    "hint_ids": list(hints),
                    "note": f"returncode {code}: the child died of {suffix.upper()}",
                    "example": row["format"].replace("{" + name + "}", str(code))
                    .replace("{cmd}", "['python', '-u', 'train.py', '--local_rank=3']")})  # fmt: skip
    return out


def main(argv: list[str]) -> int:
    root = Path(argv[1]) if len(argv) > 1 else Path("/work/.mirror")
    for library, spec in LIBRARIES.items():
        rows = _rows(library, spec, root / spec["mirror"] / "repo")
        print(f"{len(rows)} signatures -> {write_jsonl(library, rows)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv))
