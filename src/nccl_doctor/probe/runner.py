"""The probe of one node: plan the steps, launch them under the watchdog, isolate faults.

Order: per-device steps (one worker per GPU, in parallel), the P2P matrix and
pair bandwidth (one worker seeing every GPU; CUDA with two or more GPUs),
the collectives over the size sweep (one process group of every GPU), then,
when a collective failed or fell short, isolation (:mod:`.isolate`) in fresh
workers. Every launch is a :func:`~nccl_doctor.probe.launch.launch`.
"""

from __future__ import annotations

import socket
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from nccl_doctor.probe.formulas import COLLECTIVES, is_short
from nccl_doctor.probe.isolate import bisect, isolate_transport
from nccl_doctor.probe.launch import LaunchResult, launch
from nccl_doctor.probe.result import new_result, summarise

_MIB = 1 << 20
#: what each mode runs, per device kind
PLANS: dict[tuple[str, str], dict[str, Any]] = {
    ("quick", "cuda"): {
        "sizes": [1 * _MIB, 32 * _MIB, 256 * _MIB],
        "iters": 10,
        "copy_bytes": 256 * _MIB,
        "alloc_bytes": 1024 * _MIB,
        "p2p_bytes": 64 * _MIB,
        "both_directions": False,
    },
    ("full", "cuda"): {
        "sizes": [8 * 1024 * 4**k for k in range(9)] + [1024 * _MIB],
        "iters": 20,
        "copy_bytes": 1024 * _MIB,
        "alloc_bytes": 4096 * _MIB,
        "p2p_bytes": 256 * _MIB,
        "both_directions": True,
        "serial_devices": True,
    },
    ("quick", "cpu"): {
        "sizes": [4096, 64 * 1024],
        "iters": 3,
        "copy_bytes": 4 * _MIB,
        "alloc_bytes": 16 * _MIB,
    },
    ("full", "cpu"): {
        "sizes": [4096, 64 * 1024, _MIB],
        "iters": 5,
        "copy_bytes": 16 * _MIB,
        "alloc_bytes": 64 * _MIB,
    },
}


class WorkerStartError(RuntimeError):
    """No worker of a launch started: the probe cannot run here (not a GPU fault)."""


class Progress(Protocol):
    """What the runner tells a progress display."""

    def phase(self, name: str, total: int) -> None:
        """A phase of ``total`` steps begins."""

    def advance(self, text: str, ok: bool) -> None:
        """One step ended."""


class _NoProgress:
    def phase(self, name: str, total: int) -> None:
        pass

    def advance(self, text: str, ok: bool) -> None:
        pass


@dataclass
class Options:
    """How to probe: mode, devices, kind (``cuda``/``cpu``), deadlines, fault injection."""

    mode: str = "quick"
    devices: list[int] = field(default_factory=lambda: [0])
    kind: str = "cuda"
    timeout_s: float = 30.0
    startup_s: float = 60.0
    inject: str | None = None
    method: str = "forkserver"
    isolate: bool = True
    collectives: tuple[str, ...] = COLLECTIVES
    env: dict[str, str] = field(default_factory=dict)
    host: str = field(default_factory=socket.gethostname)
    progress: Progress = field(default_factory=_NoProgress)
    workdir: str = field(default_factory=lambda: tempfile.mkdtemp(prefix="nccl-doctor-probe-"))
    plan: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.plan = {**PLANS[(self.mode, self.kind)], **self.plan}


class Runner:
    """Runs launches for one node and keeps the probe result."""

    def __init__(self, opts: Options) -> None:
        self.opts = opts
        self.result = new_result(opts.mode, opts.kind, opts.devices, opts.host)
        self._launches = 0

    def _base(self, **extra: Any) -> dict[str, Any]:
        o = self.opts
        return {"kind": o.kind, "inject": o.inject, "env": dict(o.env), **o.plan, **extra}

    def _go(self, specs: list[dict[str, Any]], *, coupled: bool, phase: str) -> LaunchResult:
        self._launches += 1
        for i, spec in enumerate(specs):
            spec["log"] = str(Path(self.opts.workdir) / f"launch{self._launches}-w{i}.log")

        def on_msg(msg: dict[str, Any]) -> None:
            if msg.get("t") == "step":
                text = f"{phase}: {msg['step']} (rank {msg.get('rank')})"
                self.opts.progress.advance(text, bool(msg.get("ok")))

        res = launch(
            specs,
            step_timeout_s=self.opts.timeout_s,
            startup_s=self.opts.startup_s,
            coupled=coupled,
            method=self.opts.method,
            on_msg=on_msg,
        )
        if res.steps and all(s["step"] == "start" for s in res.steps):
            logs = Path(specs[0]["log"])
            tail = logs.read_text(errors="replace")[-400:].strip() if logs.is_file() else ""
            why = res.steps[0].get("error") or "no worker started"
            raise WorkerStartError(f"{phase}: {why}; worker log {logs}: {tail}")
        return res

    def keep(self, phase: str, res: LaunchResult) -> None:
        """Add a launch's steps and bandwidth records to the result."""
        for step in res.steps:
            self.result["steps"].append({"phase": phase, "host": self.opts.host, **step})
        for bw in res.bandwidth:
            rec = {"phase": phase, "host": self.opts.host, **bw}
            rec["short"] = is_short(rec["busbw_GBps"], rec.get("expected_GBps"))
            self.result["bandwidth"].append(rec)
        self.result["abandoned_workers"] += res.abandoned

    def devices(self) -> None:
        """Per-device steps, one worker per device, in parallel."""
        self.opts.progress.phase("devices", 6 * len(self.opts.devices))
        specs = [
            self._base(task="device", rank=i, world=1, device=d, devices=[d], group=i)
            for i, d in enumerate(self.opts.devices)
        ]
        # --full measures one GPU at a time: concurrent copies share the host's memory
        # bandwidth and can understate each GPU's PCIe figure
        batches = [[s] for s in specs] if self.opts.plan.get("serial_devices") else [specs]
        for batch in batches:
            res = self._go(batch, coupled=False, phase="device")
            self.result["meta"].update(res.meta)
            self.keep("device", res)

    def p2p(self) -> None:
        """The P2P access matrix and per-pair bandwidth (CUDA, two or more GPUs)."""
        devs = self.opts.devices
        if self.opts.kind != "cuda" or len(devs) < 2:
            return
        pairs = len(devs) * (len(devs) - 1) // (1 if self.opts.plan.get("both_directions") else 2)
        self.opts.progress.phase("p2p", 1 + pairs)
        res = self._go(
            [self._base(task="p2p", devices=devs, device=devs[0])], coupled=True, phase="p2p"
        )
        self.result["p2p_matrix"] = res.matrix
        self.keep("p2p", res)

    def collective_specs(
        self,
        groups: list[list[int]],
        env: dict[str, str],
        colls: tuple[str, ...],
        sizes: list[int] | None = None,
    ) -> list[dict[str, Any]]:
        """Specs of one launch: a process group per device group, each with its own store."""
        specs = []
        for g, devs in enumerate(groups):
            store = str(Path(self.opts.workdir) / f"store{self._launches + 1}-{g}")
            for rank, dev in enumerate(devs):
                extra = {"sizes": sizes} if sizes else {}
                spec = self._base(
                    task="collectives",
                    rank=rank,
                    world=len(devs),
                    device=dev,
                    devices=devs,
                    group=g,
                    store={"file": store},
                    collectives=list(colls),
                    **extra,
                )
                spec["env"] = {**spec["env"], **env}
                spec["pg_timeout_s"] = self.opts.timeout_s * 2
                specs.append(spec)
        return specs

    def collectives(self) -> LaunchResult:
        """Every collective over the size sweep on every device."""
        colls = self.opts.collectives
        self.opts.progress.phase("collectives", (1 + len(colls)) * len(self.opts.devices))
        res = self._go(
            self.collective_specs([self.opts.devices], {}, colls), coupled=True, phase="collective"
        )
        self.keep("collective", res)
        return res

    def verdict(self, res: LaunchResult, group: int = 0) -> dict[str, tuple[bool, float | None]]:
        """Per collective: (passed, busbw at the largest size) for one group of a launch."""
        out: dict[str, tuple[bool, float | None]] = {}
        for step in res.steps:
            if step["group"] != group or step["step"] not in COLLECTIVES:
                continue
            bws = [
                b for b in res.bandwidth if b["kind"] == step["step"] and b["gpus"] == step["gpus"]
            ]
            top = max(bws, key=lambda b: b["size_bytes"]) if bws else None
            short = top is not None and is_short(top["busbw_GBps"], top.get("expected_GBps"))
            out[step["step"]] = (step["ok"] and not short, top["busbw_GBps"] if top else None)
        if not any(s["group"] == group and s["step"] in COLLECTIVES and s["ok"] for s in res.steps):
            out.setdefault("init", (False, None))
        return out

    def isolate(self, res: LaunchResult) -> None:
        """Name the transport, then bisect the devices, for the first bad collective."""
        verdicts = self.verdict(res)
        bad = [c for c, (ok, _) in verdicts.items() if not ok]
        if not bad or not self.opts.isolate:
            return
        coll = next((c for c in bad if c in COLLECTIVES), self.opts.collectives[0])
        step = next((s for s in res.steps if s["step"] == coll), None)
        failed = step is None or not step["ok"]
        base_bw = verdicts.get(coll, (False, None))[1]
        top = [b for b in res.bandwidth if b["kind"] == coll]
        expected = max(top, key=lambda b: b["size_bytes"]).get("expected_GBps") if top else None
        mark = expected * 0.5 if expected else None
        sizes = self.opts.plan["sizes"] if failed else self.opts.plan["sizes"][-1:]
        self.opts.progress.phase("isolation", 4 + len(self.opts.devices))

        def rerun(env: dict[str, str]) -> tuple[bool, float | None]:
            r = self._go(
                self.collective_specs([self.opts.devices], env, (coll,), sizes),
                coupled=True,
                phase=f"isolate {next(iter(env))}",
            )
            self.keep("isolation", r)
            return self.verdict(r).get(coll, (False, None))

        names = (
            ("P2P", "SHM", "NVLS", "IB")
            if self.result["meta"].get("nodes", 1) > 1
            else ("P2P", "SHM", "NVLS")
        )
        record = isolate_transport(
            rerun, failed=failed, baseline_gbytes_s=base_bw, mark_gbytes_s=mark, names=names
        )
        self.result["isolation"].append({"step": coll, "host": self.opts.host, **record})
        if len(self.opts.devices) < 2:
            return

        def test_round(groups: list[list[int]]) -> list[tuple[bool, float | None]]:
            r = self._go(
                self.collective_specs(groups, {}, (coll,), sizes), coupled=True, phase="bisect"
            )
            self.keep("isolation", r)
            return [self.verdict(r, g).get(coll, (False, None)) for g in range(len(groups))]

        found = bisect(self.opts.devices, test_round).record(coll)
        self.result["isolation"].append({"host": self.opts.host, **found})

    def run(self) -> dict[str, Any]:
        """Every phase; the finished probe result."""
        t0 = time.monotonic()
        self.devices()
        self.p2p()
        res = self.collectives()
        self.isolate(res)
        self.result["meta"]["seconds"] = round(time.monotonic() - t0, 3)
        return summarise(self.result)


def run_probe(opts: Options) -> dict[str, Any]:
    """Probe this node."""
    return Runner(opts).run()
