"""Mine PyTorch's messages into ``signatures/torch.jsonl``.

Usage: ``python scripts/signatures/mine_torch.py DIR`` where ``DIR/<version>/``
holds, for each version of :data:`VERSIONS`, the files of that release's
wheel (``pip download --no-deps torch==V``; 1.x for CPython 3.9):
``torch/{distributed,cuda,multiprocessing,nn/parallel}/**/*.py`` and
``torch/lib/*.so.strings`` (``strings -n 6`` of ``libtorch_cpu.so``,
``libtorch_cuda*.so``, ``libtorch_python.so``, ``libc10.so``,
``libc10_cuda.so``). pytorch/pytorch's git history is too large to fetch
here; the wheels are the releases themselves.

Python messages are read with ``ast`` (file:line at each version). The wheels
carry no C++ sources: a C++ message is written in the tables
(:mod:`torch_c10d`, :mod:`torch_cuda`) as its source builds it (``{name}``
for each piece ``c10::str``/``fmt`` splices in) and is counted as present in a
version when every literal piece of its ``check`` is in that version's
binaries; its ``where`` names the source file (the path the binaries hold:
c10d lived in ``torch/lib/c10d/`` up to 1.9) without a line. An internal
assertion's text holds its file and line, so its ``where`` has both.
"""

from __future__ import annotations

import ast
import json
import re
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "src"))

import torch_c10d
import torch_cuda
import torch_symm_mem
from common import PRINTF, escape, pattern_for, write_jsonl
from torch_entries import C10D, C10D_OLD, Assert, Cpp, Exc
from torch_pymsgs import EXC, PY, SIGNALS
from torch_python import PyMessage, _fstring, read_tree

from nccl_doctor.differential.symptoms import SIGNAL_CLASS
from nccl_doctor.knowledge import cuda_errors

VERSIONS = (
    "1.8.1", "1.9.1", "1.10.2", "1.11.0", "1.12.1", "1.13.1", "2.0.1",
    "2.1.2", "2.4.1", "2.6.0", "2.8.0", "2.10.0", "2.11.0",
)  # fmt: skip
TREES = ("torch/distributed", "torch/cuda", "torch/multiprocessing", "torch/nn/parallel")
CPP: tuple[Cpp, ...] = torch_c10d.CPP + torch_cuda.CPP
ASSERTS: tuple[Assert, ...] = torch_c10d.ASSERTS + torch_cuda.ASSERTS


def _strings(root: Path, version: str) -> str:
    return "\n".join(
        p.read_text(errors="replace")
        for p in sorted((root / version / "torch/lib").glob("*.strings"))
    )


def _source(blob: str, file: str) -> str:
    """``file`` as this release's binaries name it (c10d's sources moved in 1.10)."""
    if file.startswith(C10D) and "/" + C10D_OLD + file[len(C10D) :] in blob:
        return C10D_OLD + file[len(C10D) :]
    return file


def _grouped(per_version: dict[str, str]) -> list[str]:
    """``path@vA,vB`` for each path, in version order."""
    paths: dict[str, list[str]] = {}
    for v, path in per_version.items():
        paths.setdefault(path, []).append("v" + v)
    return [f"{path}@{','.join(vs)}" for path, vs in paths.items()]


def _cuda_class(c: Cpp) -> tuple[str, tuple[str, ...]]:
    """The entry's class and ids: its own, else those of the CUDA error it reports."""
    if not c.cuda:
        return c.symptom, c.hints
    err = cuda_errors.by_name(c.cuda)
    if err is None:
        raise SystemExit(f"{c.id}: no CUDA error {c.cuda}")
    hints = c.hints or ((err.diagnosis_id,) if err.diagnosis_id else ())
    return c.symptom or cuda_errors.symptom_class(err), hints


def _rows_cpp(blobs: dict[str, str]) -> list[dict[str, Any]]:
    rows = []
    for c in CPP:
        seen = [
            v
            for v in VERSIONS
            if all(piece in blobs[v] for piece in c.check)
            and not any(piece in blobs[v] for piece in c.absent)
        ]
        if not seen:
            raise SystemExit(f"{c.id}: not found in any version")
        if c.pattern:
            pattern, fields = c.pattern, list(c.fields or ())
        else:
            pattern, fields = pattern_for(c.format, "concat")
            pattern = pattern.replace("total capacity", "total capaci?ty")  # 2.1's "capacty"
        symptom, hints = _cuda_class(c)
        where = _grouped({v: _source(blobs[v], c.file) for v in seen})
        rows.append(
            _row(c.id, c.level, where, seen, c.format, "concat", pattern, fields, symptom, hints,
                 c.note, c.example, c.relays)
        )  # fmt: skip
    return rows


def _rows_assert(blobs: dict[str, str]) -> list[dict[str, Any]]:
    """Each assertion, where the binaries of each release say it is (file:line)."""
    rows = []
    for a in ASSERTS:
        rx = re.compile(re.escape(a.condition) + r' ?INTERNAL ASSERT FAILED at "([^"\n]+)":(\d+)')
        where: list[str] = []
        seen: list[str] = []
        for v in VERSIONS:
            hits = sorted(
                {(m.group(1), int(m.group(2))) for m in rx.finditer(blobs[v])},
                key=lambda h: h[1],
            )
            hits = [(p, ln) for p, ln in hits if p.endswith(a.file)]
            if hits:
                seen.append(v)
                where.extend(f"{a.file}:{ln}@v{v}" for _, ln in hits)
        if not seen:
            raise SystemExit(f"{a.id}: not found in any version")
        # up to the line number: what follows is boilerplate, and pasted lines are often cut
        pattern = (
            escape(a.condition)
            + r' ?INTERNAL ASSERT FAILED at "(?P<path>[^"\n]{1,200})":(?P<line>\d{1,10})'
        )
        fmt = f'{a.condition} INTERNAL ASSERT FAILED at "{{path}}":{{line:d}}, please report a bug to PyTorch. '
        path, line = where[-1].split("@")[0].rsplit(":", 1)
        example = f'RuntimeError: {a.condition} INTERNAL ASSERT FAILED at "../{path}":{line}, please report a bug to PyTorch. '
        rows.append(
            _row(a.id, "error", where, seen, fmt, "concat", pattern, ["path", "line"], a.symptom,
                 a.hints, a.note, example)
        )  # fmt: skip
    return rows


def _template(text: str) -> str:
    """``string.Template``'s ``${name}`` as ``{name}``."""
    text = text.replace("{", "{{").replace("}", "}}")
    return re.sub(
        r"\$\{\{(\w+)\}\}|\$(\w+)", lambda m: "{" + (m.group(1) or m.group(2)) + "}", text
    )


def _anonymous(text: str) -> str:
    """A ``str.format`` template's ``{}`` fields named ``value``, ``value_2``..."""
    count = iter(range(1, 100))
    return re.sub(
        r"\{\}", lambda _m: "{value" + (f"_{n}" if (n := next(count)) > 1 else "") + "}", text
    )


def _constants(root: Path, rel: str) -> list[PyMessage]:
    """Every string of the module that is not a call's message: the f-strings and constants
    a message is built from (``msg = f"..."; raise X(msg)``), ``string.Template`` lines (the
    ChildFailedError summary), ``str.format`` templates kept in a variable."""
    path = root / rel
    if not path.is_file():
        return []
    out = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.JoinedStr):
            out.append(PyMessage(rel, node.lineno, "f-string", "python", _fstring(node)))
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            text = node.value
            if "${" in text:
                for i, line in enumerate(text.split("\n")):
                    out.append(
                        PyMessage(rel, node.lineno + i, "template", "python", _template(line))
                    )
            elif "{}" in text and not PRINTF.search(text.replace("%%", "")):
                out.append(PyMessage(rel, node.lineno, "format", "python", _anonymous(text)))
            else:
                out.append(PyMessage(rel, node.lineno, "constant", "printf", text))
    return out


def _python_messages(root: Path) -> dict[str, dict[str, list[PyMessage]]]:
    """Per version, per file: every message, calls' messages first."""
    files = {f for p in PY for f in (p.file, *p.moved)} | {s[1] for s in SIGNALS}
    per_version: dict[str, dict[str, list[PyMessage]]] = {}
    for v in VERSIONS:
        base = root / v
        msgs: list[PyMessage] = []
        for tree in TREES:
            if (base / tree).is_dir():
                msgs.extend(read_tree(base / tree, base))
        for rel in sorted(files):
            msgs.extend(_constants(base, rel))
        by_file: dict[str, list[PyMessage]] = {}
        for m in msgs:
            by_file.setdefault(m.path, []).append(m)
        per_version[v] = by_file
    return per_version


def _found(
    per_version: dict[str, dict[str, list[PyMessage]]],
    ident: str,
    files: tuple[str, ...],
    anchor: str,
) -> list[tuple[PyMessage, dict[str, list[str]]]]:
    """The texts of the message at each version, newest first, with their ``path:line``s (the
    first of ``files`` that holds it at that version: a message moves between modules)."""
    texts: dict[tuple[str, str], dict[str, list[str]]] = {}
    newest: dict[tuple[str, str], PyMessage] = {}
    for v in VERSIONS:
        hit = next(
            (m for f in files for m in per_version[v].get(f, []) if re.search(anchor, m.text)),
            None,
        )
        if hit is not None:
            texts.setdefault((hit.style, hit.text), {}).setdefault(v, []).append(
                f"{hit.path}:{hit.line}"
            )
            newest[(hit.style, hit.text)] = hit
    if not texts:
        raise SystemExit(f"{ident}: not found")
    ordered = sorted(texts.items(), key=lambda kv: VERSIONS.index(next(iter(kv[1]))), reverse=True)
    return [(newest[key], where) for key, where in ordered]


def _suffixed(ident: str, n: int, seen: list[str]) -> str:
    return ident if n == 0 else f"{ident}_{seen[-1].replace('.', '_')}"


def _unnamed(pattern: str) -> str:
    return re.sub(r"\(\?P<\w+>", "(", pattern)


def _merged(
    texts: list[tuple[str, str, list[str]]], where: list[dict[str, list[str]]]
) -> list[tuple[str, str, list[str], dict[str, list[str]]]]:
    """The texts (format, style, arguments), newest first, whose patterns differ: a release that
    words a message as another does (``%s`` for ``{var}``) is one entry, named as the newest."""
    out: list[tuple[str, str, list[str], dict[str, list[str]]]] = []
    keys: list[str] = []
    for (fmt, style, args), lines in zip(texts, where, strict=True):
        key = _unnamed(pattern_for(fmt, style, args)[0])
        if key in keys:
            out[keys.index(key)][3].update(lines)
            continue
        keys.append(key)
        out.append((fmt, style, args, dict(lines)))
    return out


def _rows_py(per_version: dict[str, dict[str, list[PyMessage]]]) -> list[dict[str, Any]]:
    rows = []
    for p in PY:
        found = _found(per_version, p.id, (p.file, *p.moved), p.anchor)
        texts = [(m.text, m.style, list(m.args)) for m, _ in found]
        for n, (fmt, style, args, where) in enumerate(_merged(texts, [w for _, w in found])):
            seen = [v for v in VERSIONS if v in where]
            pattern, fields = pattern_for(fmt, style, args)
            locs = [f"{loc}@v{v}" for v in seen for loc in where[v]]
            level = p.level or ("info" if p.symptom == "info" else "error")
            rows.append(
                _row(_suffixed(p.id, n, seen), level, locs, seen, fmt, style, pattern, fields,
                     p.symptom, p.hints, p.note, relays=p.relays)
            )  # fmt: skip
    return rows


def _as_python(msg: PyMessage) -> str:
    """A printf message as ``{name}`` placeholders named as :func:`pattern_for` names them."""
    if msg.style != "printf":
        return msg.text
    _, fields = pattern_for(msg.text, "printf", list(msg.args))
    names = iter(fields)
    return PRINTF.sub(
        lambda m: (
            "%"
            if m.group("conv") == "%"
            else "{" + next(names) + (":d" if m.group("conv") in "di" else "") + "}"
        ),
        msg.text.replace("{", "{{").replace("}", "}}"),
    )


def _rows_signals(per_version: dict[str, dict[str, list[PyMessage]]]) -> list[dict[str, Any]]:
    """One entry per fatal signal of a message that names the signal a process died of."""
    rows = []
    for ident, file, anchor, field in SIGNALS:
        found = _found(per_version, ident, (file,), anchor)
        texts = [(_as_python(m), "python", []) for m, _ in found]
        for n, (text, _style, _args, where) in enumerate(_merged(texts, [w for _, w in found])):
            seen = [v for v in VERSIONS if v in where]
            if "{" + field + "}" not in text:
                raise SystemExit(f"{ident}: no {{{field}}} in {text!r}")
            locs = [f"{loc}@v{v}" for v in seen for loc in where[v]]
            for signal, symptom in SIGNAL_CLASS.items():
                fmt = text.replace("{" + field + "}", signal)
                pattern, fields = pattern_for(fmt, "python")
                sub = f"{ident}_{signal.lower()}"
                rows.append(
                    _row(_suffixed(sub, n, seen), "error", locs, seen, fmt, "python", pattern,
                         fields, symptom, ("launch.rank_crash",),
                         f"the process died of {signal}: the class the differential gives it")
                )  # fmt: skip
    return rows


def _rows_exc(root: Path) -> list[dict[str, Any]]:
    """Exception classes raised without a message: the traceback's last line is the name."""
    rows = []
    for e in EXC:
        locs, seen = _class_lines(root, e)
        rows.append(
            _row(e.id, "error", locs, seen, e.name, "literal", escape(e.name), [], e.symptom,
                 e.hints, e.note)
        )  # fmt: skip
    return rows


def _class_lines(root: Path, e: Exc) -> tuple[list[str], list[str]]:
    locs: list[str] = []
    seen: list[str] = []
    for v in VERSIONS:
        path = root / v / e.file
        if not path.is_file():
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ClassDef) and node.name == e.name:
                locs.append(f"{e.file}:{node.lineno}@v{v}")
                seen.append(v)
                break
    if not seen:
        raise SystemExit(f"{e.id}: class {e.name} not found")
    return locs, seen


def _row(ident: str, level: str, where: list[str], seen: list[str], fmt: str, style: str,
         pattern: str, fields: list[str], symptom: str, hints: tuple[str, ...], note: str,
         example: str = "", relays: bool = False) -> dict[str, Any]:  # fmt: skip
    row: dict[str, Any] = {
        "id": ident,
        "library": "torch",
        "level": level,
        "where": where,
        "versions": {"first": seen[0], "last": seen[-1], "seen": seen},
        "format": fmt,
        "format_style": style,
        "pattern": pattern,
        "fields": fields,
        "symptom": symptom,
        "hint_ids": list(hints),
    }
    if note:
        row["note"] = note
    if example:
        row["example"] = example
    if relays:
        row["relays"] = True
    return row


#: entries read by hand, kept here as data (the miner is their only home): DataLoader's
#: worker deaths (torch/csrc/DataLoader.cpp: strsignal's text, and the SIGBUS handler's line)
#: and 'Unable to load NCCL library' (torch 0.3's torch/cuda/nccl.py and XLA's GPU service,
#: outside the releases read), the DataLoader's own report of a worker that died
#: (torch/utils/data/dataloader.py) and torchvision's warning when its image extension does
#: not load; and (session 36, read in the 2.0.1-2.11.0 wheels and ProcessGroupGloo.cpp,
#: torch/csrc/cuda/nccl.cpp, torch/_utils.py) gloo's monitoredBarrier timeout and its
#: non-root ranks' report, the non-blocking NCCL timeout, the DataLoader's own timeout, a
#: worker's exit code and a worker's exception re-raised in the main process; the heartbeat
#: monitor's notice that the store's server has gone (harmless at exit)
#: and (session 37, read in DataLoader.cpp and c10d's Utils.hpp; the wheels' strings) a
#: DataLoader worker killed by the other signals strsignal() names, the worker's own SIGSEGV
#: and SIGFPE handlers' lines, 2.6's short store errors for a closed connection, and the
#: store client's warning before it rethrows a lost request (TCPStore.cpp; harmless: the
#: catcher decides), and c10::Error's line that says where it was thrown (a frame, not a
#: message)
DOC_ROWS: tuple[dict[str, Any], ...] = tuple(json.loads(line) for line in (
    r"""{"id": "torch.dataloader.worker_killed_sigkill", "library": "torch", "level": "error", "where": ["torch/csrc/DataLoader.cpp@v1.8.1,v2.0.1,v2.4.1,v2.8.0,v2.11.0"], "versions": {"first": "1.8.1", "last": "2.11.0", "seen": ["1.8.1", "2.0.1", "2.4.1", "2.8.0", "2.11.0"]}, "format": "DataLoader worker (pid {pid}) is killed by signal: Killed.", "format_style": "concat", "pattern": "DataLoader worker \\(pid (?P<pid>[^)\\n]{1,40})\\) is killed by signal: Killed", "fields": ["pid"], "symptom": "host_oom", "hint_ids": ["host.resources"], "note": "strsignal(SIGKILL) for a data-loading worker: the kernel's or the cgroup's OOM killer (host RAM or the container's memory limit), not the GPU", "example": "RuntimeError: DataLoader worker (pid 9833) is killed by signal: Killed."}""",
    r"""{"id": "torch.dataloader.worker_killed_sigbus", "library": "torch", "level": "error", "where": ["torch/csrc/DataLoader.cpp@v1.8.1,v2.0.1,v2.4.1,v2.8.0,v2.11.0"], "versions": {"first": "1.8.1", "last": "2.11.0", "seen": ["1.8.1", "2.0.1", "2.4.1", "2.8.0", "2.11.0"]}, "format": "DataLoader worker (pid {pid}) is killed by signal: Bus error.", "format_style": "concat", "pattern": "DataLoader worker \\(pid (?P<pid>[^)\\n]{1,40})\\) is killed by signal: Bus error", "fields": ["pid"], "symptom": "host_limit", "hint_ids": ["host.resources", "nccl.shm"], "note": "strsignal(SIGBUS) for a data-loading worker: the tensors it shares through /dev/shm outgrew the tmpfs (64 MB in Docker)", "example": "RuntimeError: DataLoader worker (pid 123) is killed by signal: Bus error."}""",
    r"""{"id": "torch.dataloader.worker_bus_error", "library": "torch", "level": "error", "where": ["torch/csrc/DataLoader.cpp@v1.8.1,v2.0.1,v2.4.1,v2.8.0,v2.11.0"], "versions": {"first": "1.8.1", "last": "2.11.0", "seen": ["1.8.1", "2.0.1", "2.4.1", "2.8.0", "2.11.0"]}, "format": "ERROR: Unexpected bus error encountered in worker. This might be caused by insufficient shared memory (shm).", "format_style": "literal", "pattern": "Unexpected bus error encountered in worker\\. This might be caused by insufficient shared memory \\(shm\\)", "fields": [], "symptom": "host_limit", "hint_ids": ["host.resources", "nccl.shm"], "note": "the worker's SIGBUS handler; torch prints it for any SIGBUS in a worker, so a worker the OOM killer ended beside it is host RAM, not shm", "example": "ERROR: Unexpected bus error encountered in worker. This might be caused by insufficient shared memory (shm)."}""",
    r"""{"id": "torch.cuda.nccl_library_unavailable", "library": "torch", "level": "error", "where": ["torch/cuda/nccl.py@v0.3.1", "XLA xla/service/gpu (jaxlib 0.4.x, 'Unable to load NCCL library. Multi-GPU collectives will not work.')"], "versions": {"first": "0.3.1", "last": "0.3.1", "seen": ["0.3.1"]}, "format": "Unable to load NCCL library", "format_style": "literal", "pattern": "Unable to load NCCL library", "fields": [], "symptom": "library_missing", "hint_ids": ["nccl.version_mismatch"], "note": "the framework found no usable libnccl: not installed beside it (jaxlib's local-CUDA flavour needs the user's NCCL), shadowed by another library's copy, or built for another CUDA", "example": "NCCL operation ncclGetUniqueId(&id) failed: Unable to load NCCL library. Multi-GPU collectives will not work."}""",
    r"""{"id": "torch.torchvision.image_extension_unloaded", "library": "torch", "level": "warning", "where": ["torchvision/io/image.py (torchvision 0.8-0.22: warn(f\"Failed to load image Python extension: {e}\") when image.so does not load)"], "versions": {"first": "torchvision-0.8.0", "last": "torchvision-0.22.0", "seen": ["torchvision-0.8.0", "torchvision-0.22.0"]}, "format": "Failed to load image Python extension: {e}", "format_style": "python", "pattern": "Failed to load image Python extension", "fields": [], "symptom": "info", "hint_ids": [], "note": "harmless unless the job decodes images with torchvision.io: torchvision's optional image library did not load (often 'undefined symbol', a torchvision built for another torch); training runs on", "example": "/usr/lib/python3/dist-packages/torchvision/io/image.py:13: UserWarning: Failed to load image Python extension: '/usr/lib/python3/dist-packages/torchvision/image.so: undefined symbol: _ZN3c1017RegisterOperatorsD1Ev'"}""",
    r"""{"id": "torch.dataloader.worker_exited_unexpectedly", "library": "torch", "level": "error", "where": ["torch/utils/data/dataloader.py _MultiProcessingDataLoaderIter._try_get_data@v1.8.1,v2.0.1,v2.4.1,v2.8.0,v2.11.0"], "versions": {"first": "1.8.1", "last": "2.11.0", "seen": ["1.8.1", "2.0.1", "2.4.1", "2.8.0", "2.11.0"]}, "format": "DataLoader worker (pid(s) {pids_str}) exited unexpectedly", "format_style": "python", "pattern": "DataLoader worker \\(pid\\(s\\) (?P<pids_str>[^)\\n]{1,200})\\) exited unexpectedly", "fields": ["pids_str"], "symptom": "host_limit", "hint_ids": ["host.resources"], "note": "a data-loading worker died without a Python error: killed by the OOM killer (host RAM, the container's memory limit), or a bus error on a /dev/shm too small for the tensors it shares (64 MB in Docker)", "example": "RuntimeError: DataLoader worker (pid(s) 29841, 29842) exited unexpectedly"}""",
    r"""{"id": "torch.gloo.monitored_barrier_timed_out", "library": "torch", "level": "error", "where": ["torch/csrc/distributed/c10d/ProcessGroupGloo.cpp@v2.0.1,v2.4.1,v2.6.0,v2.8.0,v2.11.0"], "versions": {"first": "2.0.1", "last": "2.11.0", "seen": ["2.0.1", "2.4.1", "2.6.0", "2.8.0", "2.11.0"]}, "format": "Rank {rank} timed out in monitoredBarrier after {ms} ms.", "format_style": "python", "pattern": "Rank (?P<rank>-?\\d{1,20}) timed out in monitoredBarrier after (?P<ms>-?\\d{1,20}) ms", "fields": ["rank", "ms"], "symptom": "collective_timeout", "hint_ids": ["app.hang", "launch.rank_crash"], "note": "monitored_barrier's root (wait_all_ranks=False) ran out of time on the next rank in order: the ranks not listed as processed after it hold the stuck, slow or dead one", "example": "[rank0]:[E1205 10:11:12.345678901 ProcessGroupGloo.cpp:143] Rank 0 timed out in monitoredBarrier after 1800000 ms."}""",
    r"""{"id": "torch.gloo.monitored_barrier_root_failed", "library": "torch", "level": "error", "where": ["torch/csrc/distributed/c10d/ProcessGroupGloo.cpp@v2.0.1,v2.4.1,v2.6.0,v2.8.0,v2.11.0"], "versions": {"first": "2.0.1", "last": "2.11.0", "seen": ["2.0.1", "2.4.1", "2.6.0", "2.8.0", "2.11.0"]}, "format": "Rank {rank} successfully reached monitoredBarrier, but received errors while waiting for send/recv from rank 0. Please check rank 0 logs for faulty rank.", "format_style": "python", "pattern": "Rank (?P<rank>-?\\d{1,20}) successfully reached monitoredBarrier, but received errors while waiting for send/recv from rank 0", "fields": ["rank"], "symptom": "collective_timeout", "hint_ids": ["launch.rank_crash", "app.hang"], "note": "this rank checked in; the barrier's root (rank 0) reported other ranks missing or died itself: the cause is in rank 0's log, not here", "example": "[rank1]:[E325 17:13:23.163175227 ProcessGroupGloo.cpp:145] Rank 1 successfully reached monitoredBarrier, but received errors while waiting for send/recv from rank 0. Please check rank 0 logs for faulty rank.", "relays": true}""",
    r"""{"id": "torch.nccl.nonblocking_timeout", "library": "torch", "level": "error", "where": ["torch/csrc/cuda/nccl.cpp@v2.6.0,v2.8.0,v2.11.0"], "versions": {"first": "2.6.0", "last": "2.11.0", "seen": ["2.6.0", "2.8.0", "2.11.0"]}, "format": "NCCL timeout when waiting for nonblocking call to become successful.", "format_style": "literal", "pattern": "NCCL timeout when waiting for nonblocking call to become successful", "fields": [], "symptom": "comm_init", "hint_ids": [], "note": "a non-blocking NCCL call (TORCH_NCCL_USE_COMM_NONBLOCKING=1: communicator init or split) stayed ncclInProgress past TORCH_NCCL_NONBLOCKING_TIMEOUT: a peer never joined the communicator's set-up", "example": "torch.distributed.DistBackendError: NCCL timeout when waiting for nonblocking call to become successful."}""",
    r"""{"id": "torch.dataloader.timed_out", "library": "torch", "level": "error", "where": ["torch/utils/data/dataloader.py _MultiProcessingDataLoaderIter._get_data@v2.0.1,v2.4.1,v2.6.0,v2.8.0,v2.11.0"], "versions": {"first": "2.0.1", "last": "2.11.0", "seen": ["2.0.1", "2.4.1", "2.6.0", "2.8.0", "2.11.0"]}, "format": "DataLoader timed out after {timeout} seconds", "format_style": "python", "pattern": "DataLoader timed out after (?P<timeout>\\d{1,20}) seconds", "fields": ["timeout"], "symptom": "app_error", "hint_ids": ["app.hang", "launch.rank_crash"], "note": "no batch came from a live worker within DataLoader(timeout=...): a worker stuck on I/O or a lock; this rank stops feeding the collectives and the others wait behind it, then it dies first", "example": "RuntimeError: DataLoader timed out after 600 seconds"}""",
    r"""{"id": "torch.dataloader.worker_exit_code", "library": "torch", "level": "error", "where": ["torch/utils/data/_utils/signal_handling.py (torch/csrc/DataLoader.cpp)@v2.0.1,v2.4.1,v2.6.0,v2.8.0,v2.11.0"], "versions": {"first": "2.0.1", "last": "2.11.0", "seen": ["2.0.1", "2.4.1", "2.6.0", "2.8.0", "2.11.0"]}, "format": "DataLoader worker (pid {pid}) exited unexpectedly with exit code {code}. Details are lost due to multiprocessing.", "format_style": "python", "pattern": "DataLoader worker \\(pid (?P<pid>\\d{1,20})\\) exited unexpectedly with exit code (?P<code>-?\\d{1,5})", "fields": ["pid", "code"], "symptom": "host_limit", "hint_ids": ["host.resources"], "note": "a data-loading worker exited with a code and no Python error reached the main process: most often it ran out of host memory or shared memory (/dev/shm) while passing batches", "example": "RuntimeError: DataLoader worker (pid 12345) exited unexpectedly with exit code 1. Details are lost due to multiprocessing. Rerunning with num_workers=0 may give better error trace."}""",
    r"""{"id": "torch.utils.caught_in_dataloader_worker", "library": "torch", "level": "error", "where": ["torch/_utils.py ExceptionWrapper.reraise@v2.0.1,v2.4.1,v2.6.0,v2.8.0,v2.11.0"], "versions": {"first": "2.0.1", "last": "2.11.0", "seen": ["2.0.1", "2.4.1", "2.6.0", "2.8.0", "2.11.0"]}, "format": "Caught {exc_type} in DataLoader worker process {worker_id}.", "format_style": "python", "pattern": "Caught (?P<exc_type>\\w{1,80}) in DataLoader worker process (?P<worker_id>\\d{1,6})", "fields": ["exc_type", "worker_id"], "symptom": "app_error", "hint_ids": ["launch.rank_crash"], "note": "the job's own dataset, transform or collate code raised in a worker; the Original Traceback after it is the error. The rank dies first and the others wait for it", "example": "RuntimeError: Caught RuntimeError in DataLoader worker process 3."}""",
    r"""{"id": "torch.pgnccl.should_dump_check_failed", "library": "torch", "level": "warning", "where": ["torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp HeartbeatMonitor::runLoop@v2.6.0,v2.8.0,v2.11.0"], "versions": {"first": "2.6.0", "last": "2.11.0", "seen": ["2.6.0", "2.8.0", "2.11.0"]}, "format": "Failed to check the \"should dump\" flag on TCPStore, (maybe TCPStore server has shut down too early), with error: {error}", "format_style": "python", "pattern": "Failed to check the \"should dump\" flag on TCPStore, \\(maybe TCPStore server has shut down too early\\), with error: (?P<error>[^\\n]{1,200})", "fields": ["error"], "symptom": "info", "hint_ids": [], "note": "the heartbeat monitor lost the store's server (rank 0's process or the torchrun agent hosting it): printed at every exit where rank 0 ends first (vLLM and SGLang print it routinely); in a failed job, an echo of that process's end, never a cause", "example": "[rank7]:[W1120 01:13:20.892421310 ProcessGroupNCCL.cpp:1662] [PG ID 0 PG GUID 0(default_pg) Rank 7] Failed to check the \"should dump\" flag on TCPStore, (maybe TCPStore server has shut down too early), with error: Connection reset by peer"}""",
    r"""{"id": "torch.dataloader.worker_killed_sigsegv", "library": "torch", "level": "error", "where": ["torch/csrc/DataLoader.cpp@v1.8.1,v2.0.1,v2.4.1,v2.8.0,v2.11.0"], "versions": {"first": "1.8.1", "last": "2.11.0", "seen": ["1.8.1", "2.0.1", "2.4.1", "2.8.0", "2.11.0"]}, "format": "DataLoader worker (pid {pid}) is killed by signal: Segmentation fault.", "format_style": "concat", "pattern": "DataLoader worker \\(pid (?P<pid>[^)\\n]{1,40})\\) is killed by signal: Segmentation fault", "fields": ["pid"], "symptom": "crashed", "hint_ids": ["launch.rank_crash"], "note": "strsignal(SIGSEGV) for a data-loading worker: a native crash in the dataset's code or a library it calls (image or audio decoding, a C extension); the training rank fails with it", "example": "RuntimeError: DataLoader worker (pid 12345) is killed by signal: Segmentation fault."}""",
    r"""{"id": "torch.dataloader.worker_killed_sigabrt", "library": "torch", "level": "error", "where": ["torch/csrc/DataLoader.cpp@v1.8.1,v2.0.1,v2.4.1,v2.8.0,v2.11.0"], "versions": {"first": "1.8.1", "last": "2.11.0", "seen": ["1.8.1", "2.0.1", "2.4.1", "2.8.0", "2.11.0"]}, "format": "DataLoader worker (pid {pid}) is killed by signal: Aborted.", "format_style": "concat", "pattern": "DataLoader worker \\(pid (?P<pid>[^)\\n]{1,40})\\) is killed by signal: Aborted", "fields": ["pid"], "symptom": "crashed", "hint_ids": ["launch.rank_crash"], "note": "strsignal(SIGABRT) for a data-loading worker: a native library in the worker aborted (a C++ exception or an assert in the data pipeline's code), not the NCCL watchdog", "example": "RuntimeError: DataLoader worker (pid 12345) is killed by signal: Aborted."}""",
    r"""{"id": "torch.dataloader.worker_killed_sigfpe", "library": "torch", "level": "error", "where": ["torch/csrc/DataLoader.cpp@v1.8.1,v2.0.1,v2.4.1,v2.8.0,v2.11.0"], "versions": {"first": "1.8.1", "last": "2.11.0", "seen": ["1.8.1", "2.0.1", "2.4.1", "2.8.0", "2.11.0"]}, "format": "DataLoader worker (pid {pid}) is killed by signal: Floating point exception.", "format_style": "concat", "pattern": "DataLoader worker \\(pid (?P<pid>[^)\\n]{1,40})\\) is killed by signal: Floating point exception", "fields": ["pid"], "symptom": "crashed", "hint_ids": ["launch.rank_crash"], "note": "strsignal(SIGFPE) for a data-loading worker: an integer division by zero in native code the worker ran (a decoder or a C extension)", "example": "RuntimeError: DataLoader worker (pid 12345) is killed by signal: Floating point exception."}""",
    r"""{"id": "torch.dataloader.worker_killed_sigill", "library": "torch", "level": "error", "where": ["torch/csrc/DataLoader.cpp@v1.8.1,v2.0.1,v2.4.1,v2.8.0,v2.11.0"], "versions": {"first": "1.8.1", "last": "2.11.0", "seen": ["1.8.1", "2.0.1", "2.4.1", "2.8.0", "2.11.0"]}, "format": "DataLoader worker (pid {pid}) is killed by signal: Illegal instruction.", "format_style": "concat", "pattern": "DataLoader worker \\(pid (?P<pid>[^)\\n]{1,40})\\) is killed by signal: Illegal instruction", "fields": ["pid"], "symptom": "crashed", "hint_ids": ["launch.rank_crash"], "note": "strsignal(SIGILL) for a data-loading worker: native code built for a newer CPU than the host's (an instruction set the node lacks)", "example": "RuntimeError: DataLoader worker (pid 12345) is killed by signal: Illegal instruction."}""",
    r"""{"id": "torch.dataloader.worker_killed_sigterm", "library": "torch", "level": "error", "where": ["torch/csrc/DataLoader.cpp@v1.8.1,v2.0.1,v2.4.1,v2.8.0,v2.11.0"], "versions": {"first": "1.8.1", "last": "2.11.0", "seen": ["1.8.1", "2.0.1", "2.4.1", "2.8.0", "2.11.0"]}, "format": "DataLoader worker (pid {pid}) is killed by signal: Terminated.", "format_style": "concat", "pattern": "DataLoader worker \\(pid (?P<pid>[^)\\n]{1,40})\\) is killed by signal: Terminated", "fields": ["pid"], "symptom": "terminated", "hint_ids": ["launch.rank_crash"], "note": "strsignal(SIGTERM) for a data-loading worker: sent from outside: the worker exits quietly when its own loader stops it, so a scheduler, a person or a supervisor stopped the process group", "example": "RuntimeError: DataLoader worker (pid 12345) is killed by signal: Terminated."}""",
    r"""{"id": "torch.dataloader.worker_sigsegv_handler", "library": "torch", "level": "error", "where": ["torch/csrc/DataLoader.cpp@v1.8.1,v2.0.1,v2.4.1,v2.8.0,v2.11.0"], "versions": {"first": "1.8.1", "last": "2.11.0", "seen": ["1.8.1", "2.0.1", "2.4.1", "2.8.0", "2.11.0"]}, "format": "ERROR: Unexpected segmentation fault encountered in worker.", "format_style": "literal", "pattern": "Unexpected segmentation fault encountered in worker\\.", "fields": [], "symptom": "crashed", "hint_ids": ["launch.rank_crash"], "note": "the worker's own SIGSEGV handler, before it re-raises the signal: a native crash in the data pipeline's code; the main process then reports the worker killed", "example": "ERROR: Unexpected segmentation fault encountered in worker."}""",
    r"""{"id": "torch.dataloader.worker_sigfpe_handler", "library": "torch", "level": "error", "where": ["torch/csrc/DataLoader.cpp@v1.8.1,v2.0.1,v2.4.1,v2.8.0,v2.11.0"], "versions": {"first": "1.8.1", "last": "2.11.0", "seen": ["1.8.1", "2.0.1", "2.4.1", "2.8.0", "2.11.0"]}, "format": "ERROR: Unexpected floating-point exception encountered in worker.", "format_style": "literal", "pattern": "Unexpected floating-point exception encountered in worker\\.", "fields": [], "symptom": "crashed", "hint_ids": ["launch.rank_crash"], "note": "the worker's own SIGFPE handler, before it re-raises the signal: an integer division by zero in native code the worker ran; the main process then reports the worker killed", "example": "ERROR: Unexpected floating-point exception encountered in worker."}""",
    r"""{"id": "torch.c10d.recv_closed_short", "library": "torch", "level": "error", "where": ["torch/csrc/distributed/c10d/Utils.hpp@v2.6.0"], "versions": {"first": "2.6.0", "last": "2.6.0", "seen": ["2.6.0"]}, "format": "failed to recv, got 0 bytes", "format_style": "literal", "pattern": "failed to recv, got 0 bytes", "fields": [], "symptom": "store_timeout", "hint_ids": ["launch.rank_crash"], "note": "the store's server (rank 0 or the agent) closed the connection: its process ended (the wording before 2.8 lengthened it)", "example": "torch.distributed.DistNetworkError: failed to recv, got 0 bytes"}""",
    r"""{"id": "torch.c10d.send_closed_short", "library": "torch", "level": "error", "where": ["torch/csrc/distributed/c10d/Utils.hpp@v2.6.0"], "versions": {"first": "2.6.0", "last": "2.6.0", "seen": ["2.6.0"]}, "format": "failed to send, sent 0 bytes", "format_style": "literal", "pattern": "failed to send, sent 0 bytes", "fields": [], "symptom": "store_timeout", "hint_ids": ["launch.rank_crash"], "note": "the store's server (rank 0 or the agent) closed the connection: its process ended (the wording before 2.8 lengthened it)", "example": "torch.distributed.DistNetworkError: failed to send, sent 0 bytes"}""",
    r"""{"id": "torch.c10d.store_client_op_failed", "library": "torch", "level": "warning", "where": ["torch/csrc/distributed/c10d/TCPStore.cpp@v2.6.0,v2.8.0,v2.11.0"], "versions": {"first": "2.6.0", "last": "2.11.0", "seen": ["2.6.0", "2.8.0", "2.11.0"]}, "format": "{op} failed on {socket}: {error}", "format_style": "concat", "pattern": "\\[c10d\\] (?P<op>sendBytes|recvValue|recvVector|recvValueWithTimeout) failed on (?P<socket>SocketImpl\\([^\\n)]{0,300}\\)): (?P<error>[^\\n]{0,300})", "fields": ["op", "socket", "error"], "symptom": "info", "hint_ids": [], "note": "the store client's log of a request its socket lost, before it rethrows: whoever catches the exception decides (a traceback is a failure; the heartbeat monitor's 'should dump' check, and any exit before destroy_process_group, are routine); remote= names the store's host", "example": "[rank1]:[W310 15:54:45.574839167 TCPStore.cpp:125] [c10d] recvValue failed on SocketImpl(fd=86, addr=[localhost]:54074, remote=[localhost]:29500): Connection reset by peer", "refines": ["torch.c10d.recv_closed", "torch.c10d.send_closed", "torch.c10d.recv_closed_short", "torch.c10d.send_closed_short"]}""",
    r"""{"id": "torch.c10.exception_raised_from", "library": "torch", "level": "info", "where": ["c10/util/Exception.cpp Error::Error (the PyTorch-style message: the throw's place, then its C++ backtrace)"], "versions": {"first": "current", "last": "current", "seen": ["current"]}, "format": "Exception raised from {function} at {file}:{line} (most recent call first):", "format_style": "concat", "pattern": "Exception raised from (?P<function>[^\\n]{1,200}?) at (?P<file>[^\\n]{1,300}?):(?P<line>\\d{1,7}) \\(most recent call first\\)", "fields": ["function", "file", "line"], "symptom": "info", "hint_ids": [], "note": "where a C++ exception was thrown, printed after its message and before the frames: the line before it says what failed", "example": "Exception raised from recvBytes at /pytorch/torch/csrc/distributed/c10d/Utils.hpp:678 (most recent call first):"}""",
    r"""{"id": "torch.gloo.monitored_barrier_ranks", "library": "torch", "level": "error", "where": ["torch/csrc/distributed/c10d/ProcessGroupGloo.cpp@v2.0.1,v2.4.1,v2.6.0,v2.8.0,v2.11.0"], "versions": {"first": "2.0.1", "last": "2.11.0", "seen": ["2.0.1", "2.4.1", "2.6.0", "2.8.0", "2.11.0"]}, "format": "[Rank {rank}]: Ranks {ranks} failed to pass monitoredBarrier in {ms} ms", "format_style": "concat", "pattern": "\\[Rank (?P<rank>-?\\d{1,20})\\]: Ranks (?P<ranks>[\\d, ]{1,20000}) failed to pass monitoredBarrier in (?P<ms>-?\\d{1,20}) ms", "fields": ["rank", "ranks", "ms"], "symptom": "collective_timeout", "hint_ids": ["app.hang", "launch.rank_crash"], "note": "monitored_barrier(wait_all_ranks=True), and the debug wrapper's barrier before each collective: the root lists every rank that never checked in (stuck, slow or dead); the wrapper's own words ('Monitored Barrier encountered error') mark the second", "example": "[rank0]:[E1205 10:11:12.345678901 ProcessGroupGloo.cpp:143] [Rank 0]: Ranks 2, 3 failed to pass monitoredBarrier in 1800000 ms"}""",
    r"""{"id": "torch.pgnccl.desync_timeout_at", "library": "torch", "level": "error", "where": ["torch/csrc/distributed/c10d/TraceUtils.h@v2.0.1,v2.4.1,v2.6.0,v2.8.0,v2.11.0"], "versions": {"first": "2.0.1", "last": "2.11.0", "seen": ["2.0.1", "2.4.1", "2.6.0", "2.8.0", "2.11.0"]}, "format": "\t - [{rank}] Timeout at collective: {collective}, #{seq}", "format_style": "concat", "pattern": "- \\[(?P<rank>\\d{1,20})\\] Timeout at collective: (?P<collective>[^,\\n]{1,80}), #(?P<seq>\\d{1,20})", "fields": ["rank", "collective", "seq"], "symptom": "collective_timeout", "hint_ids": ["app.hang"], "note": "the first line of a desync report (TORCH_NCCL_DESYNC_DEBUG=1): the collective and its number in the store's trace where this rank's watchdog timed out; the lines after it name the ranks out of step", "example": "\t - [0] Timeout at collective: ALLREDUCE, #5"}""",
    r"""{"id": "torch.pgnccl.desync_never_joined", "library": "torch", "level": "error", "where": ["torch/csrc/distributed/c10d/TraceUtils.h@v2.0.1,v2.4.1,v2.6.0,v2.8.0,v2.11.0"], "versions": {"first": "2.0.1", "last": "2.11.0", "seen": ["2.0.1", "2.4.1", "2.6.0", "2.8.0", "2.11.0"]}, "format": "\t - To our best knowledge, ranks [{ranks}] are the lagging ranks that caused this timeout. They never joined any collectives", "format_style": "concat", "pattern": "To our best knowledge, ranks \\[(?P<ranks>[\\d, ]{0,20000})\\] are the lagging ranks that caused this timeout", "fields": ["ranks"], "symptom": "collective_timeout", "hint_ids": ["app.hang", "launch.rank_crash"], "note": "the desync report found no trace at all of these ranks in the store: they never started a collective of the group (stuck before it, on another path, or dead): they are the origin, the timed-out rank only waited", "example": "\t - To our best knowledge, ranks [1, 3] are the lagging ranks that caused this timeout. They never joined any collectives"}""",
    r"""{"id": "torch.pgnccl.desync_unfinished", "library": "torch", "level": "error", "where": ["torch/csrc/distributed/c10d/TraceUtils.h@v2.0.1,v2.4.1,v2.6.0,v2.8.0,v2.11.0"], "versions": {"first": "2.0.1", "last": "2.11.0", "seen": ["2.0.1", "2.4.1", "2.6.0", "2.8.0", "2.11.0"]}, "format": "\t   - [{ranks}] joined but didn't finish collective #{seq} (count from 1)", "format_style": "concat", "pattern": "\\[(?P<ranks>[\\d, ]{0,20000})\\] joined but didn't finish collective #(?P<seq>\\d{1,20}) \\(count from 1\\)", "fields": ["ranks", "seq"], "symptom": "collective_timeout", "hint_ids": ["app.hang", "app.collective_mismatch"], "note": "the desync report: these ranks started the lowest-numbered collective any rank is at and never finished it: they wait on ranks that did not join it, or (if others went past it) their own GPU work did not complete", "example": "\t   - [2] joined but didn't finish collective #5 (count from 1)"}""",
    r"""{"id": "torch.pgnccl.desync_not_next", "library": "torch", "level": "error", "where": ["torch/csrc/distributed/c10d/TraceUtils.h@v2.0.1,v2.4.1,v2.6.0,v2.8.0,v2.11.0"], "versions": {"first": "2.0.1", "last": "2.11.0", "seen": ["2.0.1", "2.4.1", "2.6.0", "2.8.0", "2.11.0"]}, "format": "\t     [{ranks}] finished collective #{seq}, but didn't join collective #{next} (count from 1)", "format_style": "concat", "pattern": "\\[(?P<ranks>[\\d, ]{0,20000})\\] finished collective #(?P<seq>\\d{1,20}), but didn't join collective #(?P<next>\\d{1,20})", "fields": ["ranks", "seq", "next"], "symptom": "collective_timeout", "hint_ids": ["app.hang", "launch.rank_crash"], "note": "the desync report: these ranks finished a collective and never started the next one the others wait in: they stopped between collectives, in their own code (data loading, rank-only work, I/O) or dead", "example": "\t     [0, 1, 3] finished collective #5, but didn't join collective #6 (count from 1)"}""",
    r"""{"id": "torch.pgnccl.pg_not_destroyed", "library": "torch", "level": "warning", "where": ["torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp@v2.4.1"], "versions": {"first": "2.4.1", "last": "2.4.1", "seen": ["2.4.1"]}, "format": "WARNING: process group has NOT been destroyed before we destruct ProcessGroupNCCL. On normal program exit, the application should call destroy_process_group to ensure that any pending NCCL operations have finished in this process.", "format_style": "concat", "pattern": "WARNING: process group has NOT been destroyed before we destruct ProcessGroupNCCL", "fields": [], "symptom": "info", "hint_ids": [], "note": "harmless at exit (2.4-2.5; 2.6 shortened it to 'destroy_process_group() was not called'): the job ended without tearing its groups down; after a crash it is the teardown's echo, not a cause", "example": "[rank0]:[W1007 09:55:53.400347903 ProcessGroupNCCL.cpp:1250] Warning: WARNING: process group has NOT been destroyed before we destruct ProcessGroupNCCL. On normal program exit, the application should call destroy_process_group to ensure that any pending NCCL operations have finished in this process. (function operator())"}""",
    r"""{"id": "torch.nccl.comm_not_destroyed", "library": "torch", "level": "warning", "where": ["torch/csrc/distributed/c10d/NCCLUtils.cpp@v2.6.0,v2.8.0,v2.11.0"], "versions": {"first": "2.6.0", "last": "2.11.0", "seen": ["2.6.0", "2.8.0", "2.11.0"]}, "format": "WARNING: NCCL communicator hasn't been destroyed. This may cause memory leaks. To avoid the risk, you can call `destroy_process_group` during normal exit or `_abort_process_group` when handling failures.", "format_style": "concat", "pattern": "WARNING: NCCL communicator hasn't been destroyed\\. This may cause memory leaks", "fields": [], "symptom": "info", "hint_ids": [], "note": "harmless at exit: a communicator freed while still initialised (no destroy_process_group before the interpreter ended); the communicator-level sibling of 'destroy_process_group() was not called'", "example": "[rank2]:[W1205 10:11:12.345678901 NCCLUtils.cpp:210] Warning: WARNING: NCCL communicator hasn't been destroyed. This may cause memory leaks. To avoid the risk, you can call `destroy_process_group` during normal exit or `_abort_process_group` when handling failures. (function ~NCCLComm)"}""",
    r"""{"id": "torch.cuda.ipc_producer_terminated", "library": "torch", "level": "warning", "where": ["torch/csrc/CudaIPCTypes.cpp@v2.0.1,v2.4.1,v2.6.0,v2.8.0,v2.11.0"], "versions": {"first": "2.0.1", "last": "2.11.0", "seen": ["2.0.1", "2.4.1", "2.6.0", "2.8.0", "2.11.0"]}, "format": "Producer process has been terminated before all shared CUDA tensors released. See Note [Sharing CUDA tensors]", "format_style": "concat", "pattern": "Producer process has been terminated before all shared CUDA tensors released", "fields": [], "symptom": "info", "hint_ids": [], "note": "printed once by a process that shared CUDA tensors (torch.multiprocessing, DataLoader workers, Ray/vLLM workers) as it exits while a consumer still holds them: routine at shutdown; in a failure, an echo of the teardown, never a cause", "example": "[rank0]:[W925 12:12:17.096459736 CudaIPCTypes.cpp:16] Producer process has been terminated before all shared CUDA tensors released. See Note [Sharing CUDA tensors]"}""",
    r"""{"id": "torch.c10d.server_socket_timed_out_retry", "library": "torch", "level": "warning", "where": ["torch/csrc/distributed/c10d/socket.cpp@v2.6.0,v2.8.0,v2.11.0"], "versions": {"first": "2.6.0", "last": "2.11.0", "seen": ["2.6.0", "2.8.0", "2.11.0"]}, "format": "The server socket on {address} has timed out, will retry.", "format_style": "concat", "pattern": "The server socket on (?P<address>\\S{1,300}) has timed out, will retry", "fields": ["address"], "symptom": "info", "hint_ids": ["net.unreachable", "launch.rendezvous"], "note": "the store client's connect got no answer at all (the kernel's SYN retries ran out: packets dropped by a firewall or a route, or an address the hosts cannot reach) and it retries until its connect timeout; once, it can be a transient, repeated until 'The client socket has timed out' it is the cause", "example": "[W1205 10:11:12.345678901 socket.cpp:752] [c10d] The server socket on [node0.cluster]:29500 has timed out, will retry."}""",
    r"""{"id": "torch.c10d.no_socket_listening_retry", "library": "torch", "level": "info", "where": ["torch/csrc/distributed/c10d/socket.cpp@v2.0.1,v2.4.1,v2.6.0,v2.8.0,v2.11.0"], "versions": {"first": "2.0.1", "last": "2.11.0", "seen": ["2.0.1", "2.4.1", "2.6.0", "2.8.0", "2.11.0"]}, "format": "No socket on ({host}, {port}) is listening yet, will retry.", "format_style": "concat", "pattern": "No socket on \\((?P<host>[^,\\s]{1,255}), (?P<port>\\d{1,5})\\) is listening yet, will retry", "fields": ["host", "port"], "symptom": "info", "hint_ids": ["launch.rendezvous"], "note": "the store client's notice, every 30 s while it retries its connect to MASTER_ADDR:MASTER_PORT: routine while the master starts; with no 'has timed out' warning beside it the attempts were refused (the host answered, nothing listened on the port)", "example": "[I1205 10:11:12.345678901 socket.cpp:882] [c10d] No socket on (node0, 29500) is listening yet, will retry."}""",
    r"""{"id": "torch.c10d.wait_for_input_timed_out", "library": "torch", "level": "warning", "where": ["torch/csrc/distributed/c10d/socket.cpp@v2.6.0,v2.8.0,v2.11.0"], "versions": {"first": "2.6.0", "last": "2.11.0", "seen": ["2.6.0", "2.8.0", "2.11.0"]}, "format": "waitForInput: socket {socket} timed out after {ms}ms", "format_style": "concat", "pattern": "waitForInput: socket (?P<socket>SocketImpl\\([^\\n)]{0,300}\\)) timed out after (?P<ms>\\d{1,20})ms", "fields": ["socket", "ms"], "symptom": "info", "hint_ids": ["launch.rendezvous", "app.hang"], "note": "a store request with a timeout (wait, get) got no reply: the key it waits for was never set, because the rank meant to set it never arrived or is stuck; the exception after it ('wait timeout after ...ms') is the failure, this warning alone is a caller that polls", "example": "[W1205 10:11:12.345678901 socket.cpp:495] [c10d] waitForInput: socket SocketImpl(fd=20, addr=[node1]:40000, remote=[node0]:29500) timed out after 900000ms"}""",
    r"""{"id": "torch.pgnccl.gil_not_acquired", "library": "torch", "level": "error", "where": ["torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp@v2.4.1,v2.6.0,v2.8.0,v2.11.0"], "versions": {"first": "2.4.1", "last": "2.11.0", "seen": ["2.4.1", "2.6.0", "2.8.0", "2.11.0"]}, "format": "Could not acquire GIL within {ms} ms on exit, possible GIL induced hang", "format_style": "concat", "pattern": "Could not acquire GIL within (?P<ms>\\d{1,20}) ms on exit, possible GIL induced hang", "fields": ["ms"], "symptom": "collective_timeout", "hint_ids": ["app.hang"], "note": "the heartbeat monitor, about to end a stuck job, could not take this rank's Python GIL: its Python side was wedged holding it (a C extension, a CUDA call or a deadlock under the GIL); where only some ranks print it, they are the hang's origin", "example": "[rank4]:[E427 10:11:12.345678901 ProcessGroupNCCL.cpp:1972] [PG ID 0 PG GUID 0(default_pg) Rank 4] Could not acquire GIL within 300 ms on exit, possible GIL induced hang"}""",
))  # fmt: skip


def main(argv: list[str]) -> int:
    root = Path(argv[1]) if len(argv) > 1 else Path("/work/tmp_sig/torch2")
    missing = [v for v in VERSIONS if not (root / v / "torch").is_dir()]
    if missing:
        raise SystemExit(f"missing releases under {root}: {', '.join(missing)}")
    blobs = {v: _strings(root, v) for v in VERSIONS}
    per_version = _python_messages(root)
    rows = (
        _rows_cpp(blobs)
        + _rows_assert(blobs)
        + _rows_py(per_version)
        + _rows_signals(per_version)
        + _rows_exc(root)
        + [dict(r) for r in DOC_ROWS]
        + [dict(r) for r in torch_symm_mem.ROWS]
    )
    ids = [r["id"] for r in rows]
    dupes = sorted({i for i in ids if ids.count(i) > 1})
    if dupes:
        raise SystemExit(f"duplicate ids: {dupes}")
    print(f"{len(rows)} signatures -> {write_jsonl('torch', rows)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv))
