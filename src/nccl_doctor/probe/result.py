"""The probe result: build it, summarise it, write it so ``diagnose`` can read it back, merge.

The file is JSON laid out one record per line (schema in ``docs/probe.md``):
the first line is ``{"nccl_doctor_probe": 1,``, then ``"meta": {...},``, then
each list (``"steps"``, ``"bandwidth"``, ``"isolation"``) opens on its own
line with one record per line, and a lone ``}`` closes the file. The parser
(:mod:`nccl_doctor.parse.probe_result`) cites each record by its line.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from nccl_doctor import __version__

SCHEMA = 1
MARKER = '{"nccl_doctor_probe"'
LISTS = ("steps", "bandwidth", "isolation")


def new_result(mode: str, kind: str, devices: Sequence[int], host: str) -> dict[str, Any]:
    """An empty result of one node."""
    return {
        "nccl_doctor_probe": SCHEMA,
        "meta": {
            "tool": f"nccl-doctor {__version__}",
            "mode": mode,
            "device_kind": kind,
            "backend": "nccl" if kind == "cuda" else "gloo",
            "devices": list(devices),
            "hosts": [host],
            "nodes": 1,
            "started": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
        },
        "summary": {},
        "p2p_matrix": {},
        "abandoned_workers": 0,
        "steps": [],
        "bandwidth": [],
        "isolation": [],
    }


def summarise(result: dict[str, Any]) -> dict[str, Any]:
    """Fill ``summary``: counts of steps, failures, hangs, shortfalls, and ``ok``."""
    steps = [s for s in result["steps"] if s.get("phase") != "isolation"]
    failed = [s for s in steps if not s["ok"]]
    short = [b for b in result["bandwidth"] if b.get("short") and b.get("phase") != "isolation"]
    result["summary"] = {
        "ok": not failed and not short,
        "steps": len(steps),
        "failed": len(failed),
        "hung": sum(1 for s in failed if s.get("status") == "hung"),
        "short": len(short),
        "failed_steps": [f"{s.get('host')}: {s['step']} ({s['status']})" for s in failed][:20],
        "isolation": [_say(i) for i in result["isolation"]],
    }
    return result


def _say(rec: dict[str, Any]) -> str:
    return (f"{rec['host']}: " if rec.get("host") else "") + _said(rec)


def _said(rec: dict[str, Any]) -> str:
    if rec.get("method") == "transport":
        if rec.get("transport"):
            return f"{rec['step']}: cured by {rec['env']} -> transport {rec['transport']}"
        return f"{rec['step']}: no transport switch cured it"
    if rec.get("conclusion") == "gpu":
        return f"{rec['step']}: GPU {rec['gpus']} named in {rec['rounds']} rounds"
    if rec.get("conclusion") == "link":
        return f"{rec['step']}: link between {rec['gpus']} and {rec['other_gpus']}"
    return f"{rec.get('step')}: {rec.get('conclusion')}"


def dumps(result: dict[str, Any]) -> str:
    """The result as text, one record per line (the layout the parser reads)."""
    head = [f"{MARKER}: {json.dumps(result.get('nccl_doctor_probe', SCHEMA))},"]
    keys = [k for k in result if k != "nccl_doctor_probe"]
    body: list[str] = []
    for i, key in enumerate(keys):
        comma = "," if i < len(keys) - 1 else ""
        value = result[key]
        if key in LISTS and isinstance(value, list):
            if not value:
                body.append(f" {json.dumps(key)}: []{comma}")
                continue
            body.append(f" {json.dumps(key)}: [")
            body.extend(
                f"  {json.dumps(v, sort_keys=True)}{',' if j < len(value) - 1 else ''}"
                for j, v in enumerate(value)
            )
            body.append(f" ]{comma}")
        else:
            body.append(f" {json.dumps(key)}: {json.dumps(value, sort_keys=True)}{comma}")
    return "\n".join([*head, *body, "}"]) + "\n"


def write_result(result: dict[str, Any], path: str | Path) -> Path:
    """Write the result file; returns its path."""
    out = Path(path)
    out.write_text(dumps(result), encoding="utf-8")
    return out


def load_result(path: str | Path) -> dict[str, Any]:
    """Read a result file back (plain JSON)."""
    data = json.loads(Path(path).read_text(encoding="utf-8"))
    if not isinstance(data, dict) or MARKER.strip('{"') not in data:
        raise ValueError(f"{path} is not an nccl-doctor probe result")
    return data


def merge_results(
    results: Sequence[dict[str, Any]], cross: dict[str, Any] | None = None
) -> dict[str, Any]:
    """One result of many nodes: every node's records (tagged by host) plus cross-node ones."""
    merged = new_result(
        results[0]["meta"]["mode"] if results else "quick",
        results[0]["meta"]["device_kind"] if results else "cuda",
        [],
        "",
    )
    meta = merged["meta"]
    meta["hosts"] = [h for r in results for h in r["meta"].get("hosts", [])]
    meta["nodes"] = len(results)
    meta["per_node"] = [r["meta"] for r in results]
    for r in results:
        for key in LISTS:
            merged[key].extend(r.get(key, []))
        merged["abandoned_workers"] += int(r.get("abandoned_workers", 0))
        host = (r["meta"].get("hosts") or ["?"])[0]
        for pair, ok in r.get("p2p_matrix", {}).items():
            merged["p2p_matrix"][f"{host}:{pair}"] = ok
    for key in LISTS:
        merged[key].extend((cross or {}).get(key, []))
    meta["seconds"] = max((r["meta"].get("seconds", 0) for r in results), default=0)
    return summarise(merged)
