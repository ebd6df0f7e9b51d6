"""Hostile inputs for intake and the flight-recorder loader: time and peak memory of each.

Builds each input in a temporary folder (small on disk: gzip members repeat,
pickles repeat references), runs ``nccl-doctor`` on it in a process of its
own under a timeout, and prints wall seconds, peak RSS and the outcome. With
``--src`` pointing at another checkout's ``src`` the same inputs measure that
code (an older commit hangs where this one stops).

    python bench/hostile_intake.py [--src PATH] [--timeout 120] [--only NAME...]
"""

from __future__ import annotations

import argparse
import gzip
import io
import os
import pickle
import resource
import struct
import subprocess
import sys
import tarfile
import tempfile
import time
import zipfile
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DUMP = ROOT / "tests" / "fixtures" / "captured" / "fr-h200" / "fr_dump_rank0"
MiB = 1 << 20


def _zip(files: dict[str, bytes], method: int = zipfile.ZIP_DEFLATED) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", method) as z:
        for name, data in files.items():
            z.writestr(name, data)
    return buf.getvalue()


def _tar_header(name: bytes, size: int, kind: bytes) -> bytes:
    block = bytearray(512)
    block[: len(name)] = name
    block[100:108] = b"0000644\x00"
    block[124:136] = b"%011o\x00" % size
    block[136:148] = b"00000000000\x00"
    block[156:157] = kind
    block[257:265] = b"ustar\x0000"
    block[148:156] = b" " * 8
    block[148:156] = b"%06o\x00 " % sum(block)
    return bytes(block)


def gzip_10gib_newlines(d: Path) -> list[str]:
    path = d / "train.log.gz"
    path.write_bytes(gzip.compress(b"\n" * MiB, 9) * (10 << 10))
    return ["parse", str(path)]


def zip_overlap_1000(d: Path) -> list[str]:
    one = _zip({"a.log": b"\n" * MiB})
    eocd = one.rindex(b"PK\x05\x06")
    cd_size, cd_offset = struct.unpack("<II", one[eocd + 12 : eocd + 20])
    n = 1000
    end = struct.pack("<4s4H2IH", b"PK\x05\x06", 0, 0, n, n, cd_size * n, cd_offset, 0)
    path = d / "overlap.zip"
    path.write_bytes(one[:cd_offset] + one[cd_offset : cd_offset + cd_size] * n + end)
    return ["parse", str(path)]


def zip_nested_5(d: Path) -> list[str]:
    inner = _zip({"level5.log": b"\n" * (64 * MiB)})
    for level in range(4, 0, -1):
        inner = _zip({f"{i}.zip": inner for i in range(8)} | {f"level{level}.log": b"x\n"})
    path = d / "nested.zip"
    path.write_bytes(inner)
    return ["parse", str(path)]


def zip_in_tar_512mib(d: Path) -> list[str]:
    path = d / "bundle.tar"
    with tarfile.open(path, "w") as tar:
        inner = d / "inner.zip"
        line = b"NCCL INFO " + b"x" * 100 + b"\n"
        with zipfile.ZipFile(inner, "w", zipfile.ZIP_STORED) as z, z.open("big.log", "w") as f:
            for _ in range(512):
                f.write(line * (MiB // len(line)))
        tar.add(inner, "inner.zip")
        inner.unlink()
    return ["parse", str(path)]


def tar_pax_3gib_header(d: Path) -> list[str]:
    path = d / "huge-header.tar"
    path.write_bytes(_tar_header(b"PaxHeader", 3 << 30, b"x") + b"1" * (1 << 16))
    return ["parse", str(path)]


def tar_pax_cve_2024_6232(d: Path) -> list[str]:
    body = b"1" * (512 << 10)
    path = d / "cve.tar"
    path.write_bytes(_tar_header(b"PaxHeader", len(body), b"x") + body + bytes(1024))
    return ["parse", str(path)]


def fifo(d: Path) -> list[str]:
    path = d / "pipe"
    os.mkfifo(path)
    return ["parse", str(path)]


def folder_1500_deep(d: Path) -> list[str]:
    here = d / "deep"
    here.mkdir()
    (here / "a.log").write_text("NCCL WARN x\n")
    for _ in range(1500):
        here = here / "d"
        here.mkdir()
    (here / "b.log").write_text("NCCL WARN y\n")
    return ["parse", str(d / "deep")]


def _dump_with(entries: object) -> bytes:
    from nccl_doctor.parse._pickle import loads  # noqa: PLC0415 -- this checkout's loader

    dump = loads(DUMP.read_bytes())
    assert isinstance(dump, dict)
    dump["entries"] = entries
    return pickle.dumps(dump, protocol=2)


def pickle_1m_references(d: Path) -> list[str]:
    from nccl_doctor.parse._pickle import loads  # noqa: PLC0415

    dump = loads(DUMP.read_bytes())
    assert isinstance(dump, dict)
    (d / "fr_dump_rank0").write_bytes(_dump_with(dump["entries"] * 1_000_000))
    return ["diagnose", str(d / "fr_dump_rank0")]


def pickle_30m_references(d: Path) -> list[str]:
    data = b"\x80\x02}(X\x07\x00\x00\x00entriesq\x00](" + b"h\x00" * 30_000_000 + b"eu."
    (d / "fr_dump_rank0").write_bytes(data)
    return ["diagnose", str(d / "fr_dump_rank0")]


def pickle_binbytes8(d: Path) -> list[str]:
    (d / "fr_dump_rank0").write_bytes(b"\x80\x05\x8e" + (1 << 63).to_bytes(8, "little") + b".")
    return ["parse", str(d / "fr_dump_rank0")]


def pickle_5000_digits(d: Path) -> list[str]:
    from nccl_doctor.parse._pickle import loads  # noqa: PLC0415

    dump = loads(DUMP.read_bytes())
    assert isinstance(dump, dict)
    entry = dict(dump["entries"][0])
    entry.update(collective_seq_id=10**5000, timeout_ms="9" * 6000)
    (d / "fr_dump_rank0").write_bytes(_dump_with([entry]))
    return ["diagnose", "--format", "html", str(d / "fr_dump_rank0")]


CASES: dict[str, Callable[[Path], list[str]]] = {
    f.__name__: f
    for f in (
        gzip_10gib_newlines,
        zip_overlap_1000,
        zip_nested_5,
        zip_in_tar_512mib,
        tar_pax_3gib_header,
        tar_pax_cve_2024_6232,
        fifo,
        folder_1500_deep,
        pickle_1m_references,
        pickle_30m_references,
        pickle_binbytes8,
        pickle_5000_digits,
    )
}

_MEASURE = """
import re, runpy, sys, time
sys.argv = ["nccl-doctor", *sys.argv[1:]]
begin, code = time.monotonic(), 0
try:
    runpy.run_module("nccl_doctor", run_name="__main__")
except SystemExit as exc:
    code = exc.code
finally:
    status = open("/proc/self/status").read()  # VmHWM: this process's peak, not its parent's
    peak = int(re.search(r"VmHWM:\\s*(\\d+)", status)[1])
    sys.stderr.write(f"\\nMEASURED {time.monotonic() - begin:.2f} {peak}\\n")
sys.exit(code)
"""


def run(name: str, src: Path, timeout: float) -> str:
    with tempfile.TemporaryDirectory() as tmp:
        argv = CASES[name](Path(tmp))
        env = {**os.environ, "PYTHONPATH": str(src)}
        begin = time.monotonic()
        try:
            done = subprocess.run(
                [sys.executable, "-c", _MEASURE, *argv],
                capture_output=True,
                text=True,
                timeout=timeout,
                env=env,
                check=False,
            )
        except subprocess.TimeoutExpired:
            return f"{name:24} TIMEOUT after {timeout:.0f} s"
        finally:
            _cleanup(Path(tmp))
        wall = time.monotonic() - begin
        lines = done.stderr.strip().splitlines()
        measured = [ln for ln in lines if ln.startswith("MEASURED ")]
        peak_mib = int(measured[-1].split()[2]) // 1024 if measured else -1
        said = [
            ln for ln in (done.stdout + done.stderr).splitlines() if "note" in ln or "error" in ln
        ]
        tail = (said[-1] if said else "")[:110]
        return f"{name:24} {wall:6.1f} s  {peak_mib:6d} MiB  rc={done.returncode}  {tail}"


def _cleanup(folder: Path) -> None:
    """Empty a deep tree without recursion (shutil.rmtree and os.walk recurse)."""
    folders, stack = [], [folder]
    while stack:
        here = stack.pop()
        folders.append(here)
        for entry in os.scandir(here):
            if entry.is_dir(follow_symlinks=False):
                stack.append(Path(entry.path))
            else:
                Path(entry.path).unlink()
    for here in reversed(folders[1:]):
        here.rmdir()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--src", type=Path, default=ROOT / "src", help="the nccl_doctor to measure")
    parser.add_argument("--timeout", type=float, default=120.0)
    parser.add_argument("--only", nargs="*", choices=sorted(CASES), default=sorted(CASES))
    args = parser.parse_args()
    sys.path.insert(0, str(ROOT / "src"))  # builds inputs with this checkout's loader
    print(f"{'case':24} {'wall':>8}  {'peak RSS':>10}  outcome  ({args.src})")
    for name in args.only:
        print(run(name, args.src, args.timeout), flush=True)


if __name__ == "__main__":
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    main()
