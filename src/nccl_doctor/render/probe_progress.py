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
    best: dict[str, dict[str, Any]] = {}
    for bw in result.get("bandwidth", []):
        if bw.get("phase") == "isolation":
            continue
        key = f"{bw['kind']} {bw.get('gpus')}"
        if key not in best or bw["size_bytes"] >= best[key]["size_bytes"]:
            best[key] = bw
    for key, bw in list(best.items())[:40]:
        exp = bw.get("expected_GBps")
        lines.append(
            f"  {key:<28} {bw['size_bytes']:>12} B  busbw {bw['busbw_GBps']:9.2f} GB/s"
            + (f"  (expected ~{exp:g}{', SHORT' if bw.get('short') else ''})" if exp else "")
        )
    return "\n".join(lines) + "\n"
