"""The HTML report's GPU-memory picture: every GPU known, its processes, against its total.

Each bar spans one GPU's total memory, so its filled part is the share in
use: a GPU at 77 of 140 GiB looks half full, not full. The total comes from
the GPU's own row (nvidia-smi), else a CUDA out-of-memory message on that GPU
("total capacity of ..."), else the model's nominal total
(:mod:`~nccl_doctor.knowledge.gpu_memory`, labelled as such); without any,
the bar says the total is not known. Every GPU the evidence names gets a
bar, also those with no process, and the bar says why it is empty: nothing
listed, a row cut short, a list cut before it, or no process list read.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from nccl_doctor.facts.gpu import Gpu, GpuProcess, GpuProcessTable
from nccl_doctor.facts.job import job_pids
from nccl_doctor.facts.run import CudaOutOfMemory
from nccl_doctor.facts.software import SoftwareVersions
from nccl_doctor.facts.store import Facts
from nccl_doctor.knowledge.gpu_memory import nominal_total_mib
from nccl_doctor.render.svg import Svg

Clean = Callable[[str], str]
GpuKey = tuple[str, str]  # (readout, "GPU n")
COLOUR = {"job": "#1f6feb", "other": "#cf222e", "unlisted": "#8c959f"}
MAX_BARS = 256


@dataclass(frozen=True, slots=True)
class Seg:
    """One part of a bar: a process, or memory in use that no listed process explains."""

    label: str
    mib: float
    kind: str  # job | other | unlisted


@dataclass(slots=True)
class Bar:
    """One GPU: its segments, what it uses, its total and where the total comes from."""

    segs: list[Seg] = field(default_factory=list)
    used_mib: int | None = None
    total_mib: float | None = None
    total_from: str = ""  # "" (its own row) | "out-of-memory message" | "nominal, <model>"
    model: str | None = None
    notes: list[str] = field(default_factory=list)


def _proc_key(proc: GpuProcess) -> str | None:
    if proc.gpu_index is not None:
        return f"GPU {proc.gpu_index}"
    return f"GPU {proc.gpu_bus_id}" if proc.gpu_bus_id else None


def _gpu_key(gpu: Gpu) -> str:
    return f"GPU {gpu.index}" if gpu.index is not None else f"GPU {gpu.bus_id}"


def readouts(facts: Facts) -> dict[int, str]:
    """Which GPU-tool output each GPU fact belongs to, by ``id(fact)``.

    An output is a source, and its host where lines carry one; a file that
    holds several outputs (two hosts' nvidia-smi pasted one after the other)
    counts them: a GPU named again starts the next (``file.txt #2``), and
    the process rows after a GPU table belong to that table.
    """
    found: list[Gpu | GpuProcess | GpuProcessTable] = [
        *facts.of(Gpu),
        *facts.of(GpuProcess),
        *facts.of(GpuProcessTable),
    ]
    found.sort(key=lambda f: (f.cite.source, f.cite.line))
    state: dict[tuple[str, str], tuple[int, set[str]]] = {}
    out: dict[int, str] = {}
    for fact in found:
        base = (fact.cite.source, fact.host or "")
        count, named = state.get(base, (1, set()))
        if isinstance(fact, Gpu):
            if _gpu_key(fact) in named:
                count, named = count + 1, set()
            named.add(_gpu_key(fact))
        state[base] = (count, named)
        host = f" ({fact.host})" if fact.host else ""
        out[id(fact)] = f"{fact.cite.source}{host}" + (f" #{count}" if count > 1 else "")
    return out


def _gpus(facts: Facts, where: dict[int, str]) -> dict[GpuKey, Bar]:
    """A bar for every GPU the GPU tools name, by (output, GPU), without processes yet."""
    bars: dict[GpuKey, Bar] = {}
    for gpu in facts.of(Gpu):
        bar = bars.setdefault((where[id(gpu)], _gpu_key(gpu)), Bar())
        bar.used_mib = bar.used_mib if bar.used_mib is not None else gpu.memory_used_mib
        bar.total_mib = bar.total_mib or gpu.memory_total_mib
        bar.model = bar.model or gpu.name
    for proc in facts.of(GpuProcess):
        if (key := _proc_key(proc)) is not None:
            bars.setdefault((where[id(proc)], key), Bar())
    for table in facts.of(GpuProcessTable):
        for index in table.cut_row_gpu_indices:
            bars.setdefault((where[id(table)], f"GPU {index}"), Bar())
    return bars


def _one_node_extras(facts: Facts, bars: dict[GpuKey, Bar]) -> None:
    """On one node, GPUs collect_env names join each GPU tool's list; OOM totals fill gaps."""
    if len(facts.hosts) > 1 or not bars:
        return
    models: dict[int, str] = {}
    for versions in facts.of(SoftwareVersions):
        for index, name in versions.gpu_models:
            models.setdefault(index, name)
    capacity = {
        oom.gpu_index: oom.total_mib
        for oom in facts.of(CudaOutOfMemory)
        if oom.gpu_index is not None and oom.total_mib
    }
    for source in {source for source, _ in bars}:
        for listed in sorted(models)[:MAX_BARS]:
            bars.setdefault((source, f"GPU {listed}"), Bar())
    for (_, key), bar in bars.items():
        tail = key.removeprefix("GPU ")
        if not tail.isdigit():
            continue
        bar.model = bar.model or models.get(int(tail))
        if bar.total_mib is None and int(tail) in capacity:
            bar.total_mib, bar.total_from = capacity[int(tail)], "out-of-memory message"


def _processes(facts: Facts, bars: dict[GpuKey, Bar], where: dict[int, str], clean: Clean) -> None:
    mine = job_pids(facts)
    seen: set[tuple[str, str, int]] = set()
    for proc in facts.of(GpuProcess):
        key = _proc_key(proc)
        if key is None or (where[id(proc)], key, proc.pid) in seen:
            continue
        seen.add((where[id(proc)], key, proc.pid))
        mib = proc.memory_used_mib
        size = "size not shown" if mib is None else f"{mib} MiB"
        who = "job" if proc.pid in mine else "other"
        label = f"PID {proc.pid} {clean(proc.name or '?')} {size}"
        bars[(where[id(proc)], key)].segs.append(Seg(label, float(mib or 0), who))


def _why_empty(facts: Facts, bars: dict[GpuKey, Bar], where: dict[int, str]) -> None:
    """What a GPU's list of processes says, and does not, where its bar has no process."""
    tables: dict[str, list[GpuProcessTable]] = {}
    for table in facts.of(GpuProcessTable):
        tables.setdefault(where[id(table)], []).append(table)
    listed: dict[str, set[int]] = {}
    for proc in facts.of(GpuProcess):
        if proc.gpu_index is not None:
            listed.setdefault(where[id(proc)], set()).add(proc.gpu_index)
    for (source, key), bar in bars.items():
        own = tables.get(source, [])
        tail = key.removeprefix("GPU ")
        index = int(tail) if tail.isdigit() else None
        cut = {i for t in own for i in t.cut_row_gpu_indices}
        if index is not None and index in cut:
            bar.notes.append("a process row was cut short here: its size is not known")
        if bar.segs or bar.notes:
            continue
        truncated = any(t.truncated for t in own)
        last = max(listed.get(source, set()) | cut, default=-1)
        if not own:
            bar.notes.append(f"no process list read from {source.rsplit('/', 1)[-1]}")
        elif truncated and index is not None and index > last:
            bar.notes.append("not in the process list: the list was cut before this GPU")
        else:
            bar.notes.append("no process listed")


def _totals(bars: dict[GpuKey, Bar]) -> None:
    """Unattributed memory, and the nominal total where the evidence gives none."""
    for bar in bars.values():
        listed = sum(s.mib for s in bar.segs)
        if bar.used_mib is not None and bar.used_mib > listed:
            rest = bar.used_mib - listed
            unsized = [s.label.split(" ", 2)[1] for s in bar.segs if s.label.endswith("not shown")]
            why = f" (PID {', '.join(unsized)} shows no size)" if unsized else ""
            bar.segs.append(Seg(f"{rest:g} MiB used, not attributed{why}", rest, "unlisted"))
        if bar.total_mib is None and (nominal := nominal_total_mib(bar.model)):
            bar.total_mib, bar.total_from = float(nominal), f"nominal, {bar.model}"


def gpu_bars(facts: Facts, clean: Clean) -> dict[GpuKey, Bar]:
    """Every GPU known, with its processes, what it uses and its total."""
    where = readouts(facts)
    bars = _gpus(facts, where)
    _one_node_extras(facts, bars)
    _processes(facts, bars, where, clean)
    _why_empty(facts, bars, where)
    _totals(bars)
    return bars


def _head(bar: Bar) -> str:
    """``78816 / 143771 MiB used (55%)``, saying where each figure comes from."""
    listed = sum(s.mib for s in bar.segs)
    source = f" · total: {bar.total_from}" if bar.total_from else ""
    if bar.used_mib is None and not bar.segs:
        origin = f" ({bar.total_from})" if bar.total_from else ""
        total = f"total {bar.total_mib:g} MiB{origin}" if bar.total_mib else "total not known"
        return f"use not shown; {total}"
    used = float(bar.used_mib) if bar.used_mib is not None else listed
    what = "used" if bar.used_mib is not None else "by the listed processes"
    if not bar.total_mib:
        return f"{used:g} MiB {what}, total not known"
    share = f"({used / bar.total_mib:.0%})"
    if bar.used_mib is not None:
        return f"{used:g} / {bar.total_mib:g} MiB {what} {share}{source}"
    return f"{used:g} / {bar.total_mib:g} MiB {share} {what}{source}"


def memory_svg(facts: Facts, clean: Clean) -> str | None:
    """One bar per GPU, spanning its total: the job's processes, others', the rest in use."""
    bars = gpu_bars(facts, clean)
    if not bars:
        return None
    order = sorted(bars.items(), key=lambda kv: _sort(kv[0]))
    hidden = max(len(order) - MAX_BARS, 0)
    order = order[:MAX_BARS]
    sources = {source for (source, _), _ in order}
    known = [bar.total_mib for _, bar in order if bar.total_mib]
    fallback = max(known or [max(sum(s.mib for s in b.segs) for _, b in order) or 1.0])
    left, width, top, line_h = 150.0, 420.0, 14.0, 15.0
    heights = [max(24.0, line_h * (len(b.segs) + len(b.notes) + 1) + 6) for _, b in order]
    headed = len(sources) > 1  # several outputs (files, hosts): a heading above each one's bars
    svg = Svg(
        1200,
        top + sum(heights) + (22 * len(sources) if headed else 0) + 58,
        "GPU memory by process",
        class_="chart memory",
    )
    y = top
    current = None
    for ((source, key), bar), height in zip(order, heights, strict=True):
        if headed and source != current:
            current = source
            heading = clean(source).rsplit("/", 1)[-1]
            svg.text(8, y + 14, heading[:120], font_weight="bold", class_="readout")
            y += 22
        scale = bar.total_mib or fallback
        svg.open(
            "g",
            None,
            class_="gpu",
            data_gpu=key,
            data_total=f"{bar.total_mib or ''}",
            data_readout=clean(source).rsplit("/", 1)[-1],
        )
        svg.text(left - 8, y + 15, key[:24], text_anchor="end")
        if bar.total_mib:
            dash = "4 3" if bar.total_from else ""
            track = {"stroke_dasharray": dash} if dash else {}
            svg.rect(left, y + 2, width, 18, fill="#eaeef2", stroke="#8c959f", **track)
        x = left
        for seg in bar.segs:
            w = min(width * seg.mib / scale, left + width - x)
            who = "the job" if seg.kind == "job" else seg.kind
            svg.open(
                "g", f"{key}: {seg.label} ({who})", class_=f"seg {seg.kind}", data_kind=seg.kind
            )
            svg.rect(x, y + 2, max(w, 2.0), 18, fill=COLOUR[seg.kind], stroke="#fff")
            svg.close()
            x += w
        svg.text(left + width + 12, y + 15, _head(bar), font_weight="bold", class_="head")
        lines = [(s.label, COLOUR[s.kind]) for s in bar.segs] + [
            (clean(n), "#57606a") for n in bar.notes
        ]
        for n, (line, colour) in enumerate(lines, 1):
            shown = line if len(line) <= 80 else line[:79] + "…"
            svg.text(left + width + 24, y + 15 + n * line_h, shown, fill=colour)
        svg.close()
        y += height
    y += 4
    legend = (
        ("job", "the job's processes"),
        ("other", "other processes"),
        ("unlisted", "used, not attributed"),
    )
    for n, (kind, label) in enumerate(legend):
        svg.rect(left + n * 190, y, 12, 12, fill=COLOUR[kind])
        svg.text(left + n * 190 + 18, y + 10, label)
    if not job_pids(facts):
        svg.text(left + 580, y + 10, "(the logs name no PID of the job)", fill="#57606a")
    notes = ["each bar spans its GPU's total memory (dashed: a nominal total)"]
    if len(known) < len(order):
        notes.append("a bar with no outline has no known total and is not a share of capacity")
    if hidden:
        notes.append(f"{hidden} more GPUs not drawn")
    svg.text(left, y + 30, "; ".join(notes), fill="#57606a", class_="scale-note")
    return svg.render()


def _sort(key: GpuKey) -> tuple[str, int, str]:
    source, gpu = key
    tail = gpu.removeprefix("GPU ")
    return (source, int(tail) if tail.isdigit() else 1 << 30, tail)
