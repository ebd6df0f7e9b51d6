"""The probe's progress display and its summary table (rich when present and on a terminal)."""

from __future__ import annotations

import sys
from typing import Any, TextIO


class PlainProgress:
    """One line per phase and per failed step, on stderr."""

    def __init__(self, out: TextIO = sys.stderr) -> None:
        self.out = out

    def phase(self, name: str, total: int) -> None:
        """A phase begins."""
        self.out.write(f"probe: {name} ({total} steps)\n")

    def advance(self, text: str, ok: bool) -> None:
        """A step ended; only failures are printed."""
        if not ok:
            self.out.write(f"probe: FAILED {text}\n")

    def close(self) -> None:
        """Nothing to tear down."""


class RichProgress:
    """A rich progress bar per phase."""

    def __init__(self) -> None:
        from rich.console import Console  # noqa: PLC0415 -- only on a terminal
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn  # noqa: PLC0415

        self.bar = Progress(
            TextColumn("[bold]{task.fields[phase]:<12}"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("{task.description}"),
            console=Console(stderr=True),
            transient=False,
        )
        self.bar.start()
        self.task: Any = None

    def phase(self, name: str, total: int) -> None:
        """A new bar for the phase."""
        self.task = self.bar.add_task("", total=total, phase=name)

    def advance(self, text: str, ok: bool) -> None:
        """Advance the current bar and show the step."""
        if self.task is not None:
            mark = "" if ok else "[red]FAILED[/red] "
            self.bar.update(self.task, advance=1, description=f"{mark}{text}")

    def close(self) -> None:
        """Stop the display."""
        self.bar.stop()


def make_progress(enabled: bool = True) -> PlainProgress | RichProgress:
    """A rich bar on a terminal, else plain lines."""
    if enabled and sys.stderr.isatty():
        try:
            return RichProgress()
        except ImportError:
            pass
    return PlainProgress()


def summary_text(result: dict[str, Any]) -> str:
    """A short plain summary of a probe result: verdict, failures, isolation, key bandwidths."""
    s = result.get("summary", {})
    meta = result.get("meta", {})
    lines = [
        (
            f"probe {meta.get('mode')} on {', '.join(meta.get('hosts', []))}: "
            f"{'OK' if s.get('ok') else 'PROBLEMS'} - {s.get('steps', 0)} steps, "
            f"{s.get('failed', 0)} failed ({s.get('hung', 0)} hung), {s.get('short', 0)} short, "
            f"{meta.get('seconds', '?')} s"
        )
    ]
    lines += [f"  failed: {f}" for f in s.get("failed_steps", [])]
    lines += [f"  isolation: {i}" for i in s.get("isolation", [])]
    lines += _bandwidth_lines(result.get("bandwidth", []))
    return "\n".join(lines) + "\n"


def _bandwidth_lines(records: list[dict[str, Any]]) -> list[str]:
    """One line per kind (and node pair): the largest size, worst and best of the GPUs."""
    groups: dict[str, list[dict[str, Any]]] = {}
    for bw in records:
        if bw.get("phase") == "isolation":
            continue
        key = bw["kind"] + (f" {bw.get('host')}" if bw.get("phase") == "node_pair" else "")
        groups.setdefault(key, []).append(bw)
    out = []
    for key, items in groups.items():
        top = max(b["size_bytes"] for b in items)
        at = [b for b in items if b["size_bytes"] == top]
        worst = min(at, key=lambda b: b["busbw_GBps"])
        best = max(b["busbw_GBps"] for b in at)
        exp = worst.get("expected_GBps")
        short = sum(1 for b in at if b.get("short"))
        if worst.get("world") == 1:
            # one rank moves no data over any link: nccl-tests' busbw means nothing here
            out.append(f"  {key:<16} {top / 2**20:>8.1f} MiB  busbw n/a (1 rank)")
            continue
        where = "GPU " + "->".join(map(str, worst.get("gpus") or [])) if len(at) > 1 else ""
        out.append(
            f"  {key:<16} {top / 2**20:>8.1f} MiB  busbw {worst['busbw_GBps']:9.2f}"
            + (f"..{best:.2f}" if len(at) > 1 else "")
            + " GB/s"
            + (f" (lowest: {where})" if where else "")
            + (f"  expected ~{exp:g}" if exp else "")
            + (f"  {short} SHORT" if short else "")
        )
    return out
