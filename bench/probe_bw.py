"""Probe bandwidth benchmark: the probe's copy timing against a plain reference loop.

On a GPU machine, for one GPU (``--gpu``, default 0), measures host->device
and device->host (pinned host memory) and device->device bandwidth twice in
the same process: with the probe's own code (``nccl_doctor.probe.device``:
``Dev.floats`` buffers timed by ``copy_seconds``, the function the probe's
``h2d``/``d2h``/``d2d`` steps call), and with a reference written here from
scratch (``tensor.copy_`` in a loop between two CUDA events), interleaved. It
prints both and their ratio (target: within 5%). Device->device counts read +
write (``2 * bytes / time``) in both. Before that it runs ``python -m
nccl_doctor.probe --quick`` on the same GPU and prints its wall time and the
figures of its own workers (256 MiB, 10 iterations).

    PYTHONPATH=src python bench/probe_bw.py [--gpu 0] [--size-mib 256] [--iters 20]
                                             [--repeat 5] [--no-probe] [--force]

Needs only torch (rich for the table, if installed). ``--device cpu`` runs the
same comparison on the CPU (wall clock), to check the script without a GPU.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from nccl_doctor.probe.device import Dev, copy_seconds

try:
    from rich.console import Console
    from rich.table import Table
except ImportError:  # plain print without rich
    Console = Table = None  # type: ignore[assignment,misc]

_MIB = 1 << 20


def reference_seconds(dst: Any, src: Any, iters: int, cuda: bool) -> float:
    """Seconds per ``dst.copy_(src)``: a plain loop between two CUDA events."""
    dst.copy_(src, non_blocking=True)
    if not cuda:
        t0 = time.perf_counter()
        for _ in range(iters):
            dst.copy_(src)
        return (time.perf_counter() - t0) / iters
    torch.cuda.synchronize()
    start = torch.cuda.Event(enable_timing=True)
    end = torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(iters):
        dst.copy_(src, non_blocking=True)
    end.record()
    end.synchronize()
    return start.elapsed_time(end) / 1000.0 / iters


def measure(kind: str, index: int, size: int, iters: int, repeat: int) -> list[dict[str, Any]]:
    """Both timings of h2d, d2h, d2d; the median of ``repeat`` runs each, GB/s."""
    dev = Dev(kind, index)
    dev.activate()
    n = size // 4
    host = dev.floats(n, 1.0, host=True)
    a, b = dev.floats(n, 2.0), dev.floats(n)
    ref_host = torch.empty(n, dtype=torch.float32, pin_memory=dev.cuda).fill_(1.0)
    ref_a = torch.full((n,), 2.0, dtype=torch.float32, device=dev.device)
    ref_b = torch.empty(n, dtype=torch.float32, device=dev.device)
    rows = []
    plans = (
        ("h2d", (a, host), (ref_a, ref_host), 1),
        ("d2h", (host, a), (ref_host, ref_a), 1),
        ("d2d", (b, a), (ref_b, ref_a), 2),
    )
    for name, (dst, src), (rdst, rsrc), factor in plans:
        probe, ref = [], []
        for _ in range(repeat):  # interleaved, so neither side gets the warmer caches
            probe.append(copy_seconds(dev, dst, src, iters))
            ref.append(reference_seconds(rdst, rsrc, iters, dev.cuda))
        p_gbps = factor * size / statistics.median(probe) / 1e9
        r_gbps = factor * size / statistics.median(ref) / 1e9
        rows.append({"kind": name, "probe_GBps": p_gbps, "reference_GBps": r_gbps,
                     "ratio": p_gbps / r_gbps if r_gbps else float("nan")})  # fmt: skip
    rows.append({"gpu_model": dev.name()})
    return rows


def run_probe(kind: str, gpu: int, force: bool) -> dict[str, Any]:
    """``python -m nccl_doctor.probe --quick`` on one GPU: wall time and its figures."""
    out = Path(tempfile.mkdtemp(prefix="probe-bw-")) / "result.json"
    argv = [sys.executable, "-m", "nccl_doctor.probe", "--quick", "--gpus", str(gpu),
            "--device", kind, "--format", "json", "--out", str(out)]  # fmt: skip
    if force:
        argv.append("--force")
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(
        [str(Path(__file__).resolve().parents[1] / "src"), env.get("PYTHONPATH", "")]
    )
    t0 = time.perf_counter()
    done = subprocess.run(argv, capture_output=True, text=True, env=env, check=False, timeout=900)
    wall = time.perf_counter() - t0
    figures: dict[str, float] = {}
    if out.is_file():
        result = json.loads(out.read_text())
        for bw in result.get("bandwidth", []):
            if bw["kind"] in ("h2d", "d2h", "d2d") and bw.get("phase") == "device":
                figures[bw["kind"]] = bw["busbw_GBps"]
    return {"wall_s": wall, "rc": done.returncode, "figures": figures, "stderr": done.stderr[-600:]}


def show(rows: list[dict[str, Any]], probe: dict[str, Any] | None, model: str) -> None:
    """Print the table (rich if present, else plain)."""
    head = ["copy", "probe code GB/s", "reference GB/s", "ratio", "within 5%", "probe --quick GB/s"]
    lines = []
    for r in rows:
        quick = (probe or {}).get("figures", {}).get(r["kind"])
        lines.append([r["kind"], f"{r['probe_GBps']:.1f}", f"{r['reference_GBps']:.1f}",
                      f"{r['ratio']:.3f}", "yes" if abs(r["ratio"] - 1) <= 0.05 else "NO",
                      f"{quick:.1f}" if quick is not None else "-"])  # fmt: skip
    if Console is not None and Table is not None:
        table = Table(title=f"probe bandwidth on {model}")
        for h in head:
            table.add_column(h, justify="right")
        for line in lines:
            table.add_row(*line)
        Console().print(table)
    else:
        print(f"probe bandwidth on {model}")
        print("  ".join(f"{h:>18}" for h in head))
        for line in lines:
            print("  ".join(f"{c:>18}" for c in line))
    if probe is not None:
        print(f"probe --quick: wall {probe['wall_s']:.1f} s, exit code {probe['rc']}")
        if probe["rc"] == 2:
            print(f"probe --quick could not run: {probe['stderr'].strip()}")


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    ap.add_argument("--gpu", type=int, default=0)
    ap.add_argument("--size-mib", type=int, default=256)
    ap.add_argument("--iters", type=int, default=20)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--device", choices=("cuda", "cpu"), default="cuda")
    ap.add_argument("--no-probe", action="store_true", help="skip the probe --quick run")
    ap.add_argument("--force", action="store_true", help="pass --force to the probe")
    args = ap.parse_args(argv)
    if args.device == "cuda" and not torch.cuda.is_available():
        print("no CUDA GPU visible (use --device cpu to check the script)", file=sys.stderr)
        return 2
    # the probe first: its wall time from a clean GPU, before this process holds a context
    probe = None if args.no_probe else run_probe(args.device, args.gpu, args.force)
    rows = measure(args.device, args.gpu, args.size_mib * _MIB, args.iters, args.repeat)
    model = rows.pop()["gpu_model"]
    show(rows, probe, model)
    print(json.dumps({"gpu_model": model, "rows": rows,
                      "probe_quick_wall_s": probe["wall_s"] if probe else None}))  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
