"""Prefilter benchmark: the anchor scan of a large interleaved log, against GNU grep.

Generates (or reuses) the log of bench/gen_log.py, then for each prefilter
implementation and chunk size reads the whole file the way the reader does
(chunks cut at the last newline, lines counted with ``bytes.count``), asks
the prefilter for the lines holding an anchor, and prints wall time, MiB/s,
the ratio to the fastest ``grep -E`` over the same anchors, and the peak RSS
of the Python process. Besides the implementations of
``nccl_doctor.evidence.prefilter`` it measures candidates that lost (plain
alternation in ``re``, pyahocorasick, Hyperscan in literal mode
with a report per anchor hit), to show why. A benchmark: it prints figures
and asserts nothing on time. Each measurement runs in a fresh process.

    python bench/prefilter.py [--size-mib 512] [--ranks 512] [--log PATH] [--repeat 3]
                              [--chunks-mib 1,4,16] [--only NAME,...]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

HERE = Path(__file__).resolve().parent
OUT = HERE / "out"
sys.path.insert(0, str(HERE.parent / "src"))

from nccl_doctor.evidence.prefilter import (  # noqa: E402 -- after the src path is known
    HyperscanPrefilter,
    Prefilter,
    Re2Prefilter,
    RePrefilter,
    literals,
)

#: A representative anchor list (about what the parsers will declare): NCCL
#: init/network/error lines, c10d and torchrun failures, tracebacks, kernel
#: messages, the first lines of tool outputs, environment dumps, code fences.
ANCHORS: tuple[str, ...] = (
    # NCCL_DEBUG=INFO / WARN
    "NCCL WARN", "NCCL INFO Bootstrap", "NCCL INFO NET/IB", "NCCL INFO NET/Socket",
    "NCCL INFO NET/Plugin", "NCCL INFO Using network", "NCCL version", "ncclCommInitRank",
    "Init COMPLETE", "cudaDriverVersion", "NCCL INFO comm 0x", "set by environment to",
    "NCCL INFO RAS", "NCCL INFO Setting affinity", ".cc:", "NCCL INFO Init timings",
    "NCCL INFO NVLS multicast", "NCCL INFO Connected all", "NCCL INFO ncclCommSplit",
    "unhandled system error", "unhandled cuda error", "internal error", "invalid usage",
    "remote process exited", "ncclSystemError", "ncclInternalError", "ncclRemoteError",
    "ncclInvalidUsage", "ncclUnhandledCudaError", "NCCL error", "Last error:",
    # c10d, torchrun, Python
    "Error", "error:", "ERROR", "Exception", "Traceback (most recent call last)",
    "Watchdog caught", "Timeout(ms)", "timed out", "Timed out", "timeout",
    "ProcessGroupNCCL.cpp", "c10d", "ChildFailedError", "exitcode", "Signal ", "SIGTERM",
    "SIGKILL", "SIGABRT", "SIGSEGV", "SIGBUS", "Root Cause", "FAILED", "local_rank",
    "closing signal", "terminated with", "Process ", "CUDA out of memory", "CUDA error",
    "illegal memory access", "Connection reset", "Connection refused", "Connection closed",
    "Broken pipe", "No route to host", "Address already in use", "errno", "Killed",
    "segmentation fault", "Segmentation fault", "core dumped", "Aborted",
    # kernel
    "NVRM: Xid", "Xid", "NVRM:", "oom-kill", "Out of memory", "ECC", "mlx5_core",
    # tool outputs
    "NVIDIA-SMI", "Driver Version:", "CUDA Version:", "Attached GPUs", "<nvidia_smi_log>",
    "<?xml", "GPU0", "Legend:", "NV12", "Infiniband device", "CA '", "hca_id:",
    "PyTorch version:", "Collecting environment information", "# nccl-tests", "#  Rank",
    "# Avg bus bandwidth", "# Out of bounds values", "nThread", "Link 0:", "ibdev2netdev",
    # environment, fences
    "NCCL_", "TORCH_", "CUDA_VISIBLE_DEVICES", "MASTER_ADDR", "WORLD_SIZE", "```", "~~~",
)  # fmt: skip


# -- candidates that lost, kept here to show why --------------------------------------


class PlainRePrefilter(RePrefilter):
    """``re`` with the anchors as a flat alternation (no trie)."""

    name = "re-flat"

    def __init__(self, anchors: Sequence[str]) -> None:
        super().__init__(anchors)
        self._search = re.compile(b"|".join(re.escape(w) for w in self._literals)).search


class AhoCorasickPrefilter(Prefilter):
    """pyahocorasick over the buffer decoded as latin-1 (one char per byte)."""

    name = "ahocorasick"

    def __init__(self, anchors: Sequence[str]) -> None:
        super().__init__(anchors)
        import ahocorasick  # type: ignore[import-not-found]  # noqa: PLC0415 -- optional

        automaton = ahocorasick.Automaton()
        for word in self._literals:
            automaton.add_word(word.decode("latin-1"), len(word))
        automaton.make_automaton()
        self._iter = automaton.iter

    def _spans(self, buf: bytes) -> list[tuple[int, int]]:
        spans: list[tuple[int, int]] = []
        find, rfind, size, line_end = buf.find, buf.rfind, len(buf), -1
        for last, length in self._iter(buf.decode("latin-1")):
            if last <= line_end:
                continue
            start = rfind(b"\n", 0, last - length + 1) + 1
            line_end = find(b"\n", last)
            line_end = size if line_end < 0 else line_end
            spans.append((start, line_end))
        return spans


class HyperscanLiteralPrefilter(Prefilter):
    """Hyperscan's literal mode: a report per anchor hit, deduplicated per line in Python."""

    name = "hs-literal"

    def __init__(self, anchors: Sequence[str]) -> None:
        super().__init__(anchors)
        import hyperscan  # noqa: PLC0415 -- optional, benchmark only

        self._db = hyperscan.Database(mode=hyperscan.HS_MODE_BLOCK)
        self._db.compile(expressions=list(self._literals), ids=list(range(len(self._literals))),
                         flags=0, literal=True)  # fmt: skip

    def _spans(self, buf: bytes) -> list[tuple[int, int]]:
        hits: list[int] = []
        self._db.scan(buf, match_event_handler=lambda _i, _s, end, _f, _c: hits.append(end))
        hits.sort()
        spans: list[tuple[int, int]] = []
        find, rfind, size, line_end = buf.find, buf.rfind, len(buf), -1
        for hit in hits:
            if hit <= line_end:
                continue
            start = rfind(b"\n", 0, hit) + 1
            line_end = find(b"\n", hit - 1)
            line_end = size if line_end < 0 else line_end
            spans.append((start, line_end))
        return spans


IMPLEMENTATIONS: dict[str, Callable[[Sequence[str]], Prefilter]] = {
    "hyperscan": HyperscanPrefilter,
    "re2": Re2Prefilter,
    "hs-literal": HyperscanLiteralPrefilter,
    "re": RePrefilter,
    "ahocorasick": AhoCorasickPrefilter,
    "re-flat": PlainRePrefilter,
}


# -- one measurement (in a child process) ---------------------------------------------


def chunks(path: Path, size: int) -> Iterator[bytes]:
    """Buffers of whole lines, as the reader cuts them."""
    pending = b""
    with path.open("rb", buffering=0) as f:
        while data := f.read(size):
            buf = pending + data if pending else data
            cut = buf.rfind(b"\n") + 1
            if cut == 0:
                pending = buf
                continue
            pending = buf[cut:]
            yield buf[:cut]
    if pending:
        yield pending


def child(name: str, path: Path, chunk_mib: float) -> None:
    """Time one prefilter over the whole file; print seconds and counts as JSON."""
    prefilter = IMPLEMENTATIONS[name](ANCHORS)
    start = time.perf_counter()
    matched = lines = 0
    for buf in chunks(path, int(chunk_mib * (1 << 20))):
        matched += len(prefilter.line_spans(buf))
        lines += buf.count(b"\n")
    seconds = time.perf_counter() - start
    print(json.dumps({"seconds": seconds, "matched": matched, "lines": lines}))


# -- the table ------------------------------------------------------------------------


def timed(argv: list[str], env: dict[str, str] | None = None) -> tuple[float, int, str]:
    """Wall seconds, peak RSS (KiB, from ``wait4``) and stdout of one child process."""
    start = time.perf_counter()
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    assert proc.stdout is not None
    assert proc.stderr is not None
    out = proc.stdout.read()
    err = proc.stderr.read()
    _, status, usage = os.wait4(proc.pid, 0)
    elapsed = time.perf_counter() - start
    code = os.waitstatus_to_exitcode(status)
    proc.returncode = code
    if code not in (0, 1):
        sys.exit(f"{argv[0]} failed ({code}): {err.decode(errors='replace')[-800:]}")
    return elapsed, usage.ru_maxrss, out.decode()


def ere(anchor: str) -> str:
    """``anchor`` as a POSIX extended regex literal."""
    return re.sub(r"([.\[\]()*+?{}|^$\\])", r"\\\1", anchor)


Row = tuple[str, float, float, int, int]  # name, scan s, process s, peak RSS KiB, lines


def grep_rows(log: Path, repeat: int) -> list[Row]:
    """``grep -E`` (two locales) and ``grep -F -f`` over the same anchors, counting lines."""
    rows: list[Row] = []
    with tempfile.TemporaryDirectory() as tmp:
        fixed = Path(tmp) / "anchors.txt"
        fixed.write_text("".join(a + "\n" for a in ANCHORS))
        pattern = "|".join(ere(a) for a in ANCHORS)
        c_env = {**os.environ, "LC_ALL": "C"}
        utf8_env = {**os.environ, "LC_ALL": "C.UTF-8"}
        greps = [
            ("grep -E (LC_ALL=C)", ["grep", "-c", "-E", pattern, str(log)], c_env),
            ("grep -E (C.UTF-8)", ["grep", "-c", "-E", pattern, str(log)], utf8_env),
            ("grep -F -f (LC_ALL=C)", ["grep", "-c", "-F", "-f", str(fixed), str(log)], c_env),
        ]
        for name, argv, env in greps:
            runs = [timed(argv, env) for _ in range(repeat)]
            best = min(runs, key=lambda r: r[0])
            count = int(best[2].strip() or 0)
            rows.append((name, best[0], best[0], max(r[1] for r in runs), count))
            print(f"  {name}: {best[0]:.2f} s", flush=True)
    return rows


def python_rows(log: Path, names: list[str], chunk_sizes: list[float], repeat: int) -> list[Row]:
    """Each implementation at each chunk size, in a fresh process; a slow one runs once."""
    rows: list[Row] = []
    for name in names:
        for chunk in chunk_sizes:
            argv = [sys.executable, __file__, "--child", name, str(log), str(chunk)]
            trials: list[tuple[float, float, int, int]] = []
            while len(trials) < repeat and not (trials and trials[0][0] > 10):
                wall, rss, out = timed(argv)
                result = json.loads(out)
                trials.append((float(result["seconds"]), wall, rss, int(result["matched"])))
            top = min(trials, key=lambda r: r[0])
            label = f"{name} ({chunk:g} MiB chunks)"
            rows.append((label, top[0], top[1], max(r[2] for r in trials), top[3]))
            print(f"  {label}: {top[0]:.2f} s", flush=True)
    return rows


def _collect(i: int, _start: int, end: int, _flags: int, hits: list[tuple[int, int]]) -> None:
    hits.append((i, end))


def anchor_hits(log: Path, top: int) -> list[tuple[str, int]]:
    """The anchors that hit the most lines (each line counted once per anchor)."""
    import hyperscan  # noqa: PLC0415 -- optional, benchmark only

    words = [a.encode() for a in ANCHORS]
    db = hyperscan.Database(mode=hyperscan.HS_MODE_BLOCK)
    db.compile(expressions=words, ids=list(range(len(words))), flags=0, literal=True)
    counts = [0] * len(words)
    for buf in chunks(log, 1 << 20):
        hits: list[tuple[int, int]] = []
        db.scan(buf, match_event_handler=_collect, context=hits)
        seen: set[tuple[int, int]] = set()
        for i, end in hits:
            key = (i, buf.find(b"\n", end - 1))
            if key not in seen:
                seen.add(key)
                counts[i] += 1
    ranked = sorted(zip(ANCHORS, counts, strict=True), key=lambda x: -x[1])
    return [(a, n) for a, n in ranked[:top] if n]


def main() -> None:
    """CLI entry."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size-mib", type=int, default=512)
    parser.add_argument("--ranks", type=int, default=512)
    parser.add_argument("--log", type=Path, default=None)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--chunks-mib", default="1,4,16", help="for hyperscan, re2 and re")
    parser.add_argument("--others-chunk-mib", type=float, default=1, help="for the others")
    parser.add_argument("--only", default=",".join(IMPLEMENTATIONS))
    parser.add_argument("--child", nargs=3, metavar=("NAME", "LOG", "CHUNK_MIB"))
    args = parser.parse_args()
    if args.child:
        name, log, chunk = args.child
        child(name, Path(log), float(chunk))
        return

    log = args.log or OUT / f"interleaved-{args.ranks}r-{args.size_mib}m.log"
    if not log.exists():
        log.parent.mkdir(parents=True, exist_ok=True)
        print(f"generating {log} ...", flush=True)
        gen = [sys.executable, str(HERE / "gen_log.py"), str(log)]
        gen += ["--size-mib", str(args.size_mib), "--ranks", str(args.ranks)]
        subprocess.run(gen, check=True)
    size_mib = log.stat().st_size / (1 << 20)
    subprocess.run(["cat", str(log)], stdout=subprocess.DEVNULL, check=True)  # warm the cache

    kept, _ = literals(ANCHORS)
    print(f"log: {log.name}, {size_mib:.0f} MiB; {len(ANCHORS)} anchors ({len(kept)} after")
    print(f"dropping those that contain another); best of {args.repeat}; {os.cpu_count()} CPUs")
    rows = grep_rows(log, args.repeat)
    shipped = {"hyperscan", "re2", "re"}
    sizes = [float(c) for c in args.chunks_mib.split(",")]
    for name in args.only.split(","):
        chosen = sizes if name in shipped else [args.others_chunk_mib]
        rows += python_rows(log, [name], chosen, args.repeat)

    grep_best = min(row[1] for row in rows if row[0].startswith("grep -E"))
    print("\nscan s: the pass over the file; process s: the whole process (Python start-up,")
    print("imports, compiling the anchors); x grep: scan s / fastest grep -E; RSS: the process")
    print(
        f"\n{'scanner':<32}{'scan s':>8}{'MiB/s':>8}{'x grep':>8}{'process s':>10}"
        f"{'RSS MiB':>9}{'lines':>9}"
    )
    for name, seconds, wall, rss, matched in rows:
        print(
            f"{name:<32}{seconds:>8.2f}{size_mib / seconds:>8.0f}{seconds / grep_best:>8.2f}"
            f"{wall:>10.2f}{rss / 1024:>9.1f}{matched:>9}"
        )
    counts = {row[4] for row in rows}
    print("\nall scanners agree on the matching lines" if len(counts) == 1 else
          f"\nMISMATCH in matching line counts: {sorted(counts)}")  # fmt: skip
    total = sum(1 for _ in log.open("rb"))
    print(
        f"\n{rows[0][4]} of {total} lines ({100 * rows[0][4] / max(total, 1):.1f}%) hold an anchor;"
    )
    print("the anchors that hit the most lines:")
    for anchor, n in anchor_hits(log, 15):
        print(f"  {n:>9}  {anchor!r}")


if __name__ == "__main__":
    main()
