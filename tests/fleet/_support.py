"""Helpers of the fleet tests: reports of real fixtures, replayed under other node names."""

from __future__ import annotations

import hashlib
import os
import re
import subprocess
import sys
import tarfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from nccl_doctor.pipeline import diagnose_paths
from nccl_doctor.redact import scrub
from nccl_doctor.render.report_json import report_json

ROOT = Path(__file__).resolve().parents[2]
CAPTURED = ROOT / "tests" / "fixtures" / "captured"
HEALTHY = CAPTURED / "check-h200" / "bundle-healthy.tgz"
FOREIGN = CAPTURED / "check-h200" / "bundle-foreign-process.tgz"
EXAMPLE = ROOT / "examples" / "h200-cuda-999"
XID_DMESG = (
    ROOT / "tests/fixtures/formats/xid/dmesg-uptime-418-xid31-13-32-graphics-exception-elided.txt"
)
ECC_DMESG = ROOT / "tests/fixtures/formats/xid/dmesg-T-535-xid43-31-94-contained-board-serial.txt"
PROBE = CAPTURED / "probe-h200" / "probe-full.json"
#: The GPU UUID in the captured H200 bundles.
CAPTURED_UUID = re.compile(r"GPU-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")


def report_of(paths: Sequence[Path | str]) -> dict[str, Any]:
    """The JSON report of ``paths``, as ``diagnose --format json`` writes it."""
    return report_json(diagnose_paths([str(p) for p in paths]), scrub)


def uuid_of(node: str) -> str:
    """A GPU UUID of the node's board, stable per node name."""
    h = hashlib.sha256(node.encode()).hexdigest()
    return f"GPU-{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:32]}"


def replay_bundle(bundle: Path, into: Path, node: str) -> Path:
    """A capture bundle unpacked as if captured on ``node``: its hostname and GPU UUID."""
    with tarfile.open(bundle) as archive:
        archive.extractall(into, filter="data")
    folder = into / "nccl-doctor-bundle"
    for path in folder.iterdir():
        text = path.read_text(encoding="utf-8")
        text = text.replace('"hostname": "vm"', f'"hostname": "{node}"')
        path.write_text(CAPTURED_UUID.sub(uuid_of(node), text), encoding="utf-8")
    return folder


def cli(
    *args: str, env: dict[str, str] | None = None, cwd: Path | None = None
) -> subprocess.CompletedProcess[str]:
    """``nccl-doctor ARGS`` as a process, the checkout first on the path."""
    environ = {**os.environ, **(env or {})}
    environ["PYTHONPATH"] = os.pathsep.join(
        [str(ROOT / "src"), str(ROOT), environ.get("PYTHONPATH", "")]
    )
    return subprocess.run(
        [sys.executable, "-m", "nccl_doctor", *args],
        capture_output=True,
        text=True,
        env=environ,
        cwd=cwd,
        timeout=180,
        check=False,
    )
