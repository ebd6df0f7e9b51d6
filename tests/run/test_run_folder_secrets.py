"""What ``run`` writes itself holds no secret; the job's own console.log stays whole."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from nccl_doctor.run.setup import command_text, env_text, write_manifest
from tests.run._support import start

ENV = {
    "DB_PASS": "pw-in-clear",
    "GPG_PASSPHRASE": "correct horse battery staple",
    "SESSION_COOKIE": "sid-0123456789",
    "STRIPE_SIGNING_KEY": "whsec-0123456789",
    "REDIS_URL": "redis://:hunter2pw@cache-7:6379/0",
}
LEAKS = (
    "pw-in-clear",
    "correct horse",
    "battery staple",
    "sid-0123456789",
    "whsec-0123",
    "hunter2pw",
)


def test_env_text_hides_each_secret_names_whole_value() -> None:
    text = env_text({**ENV, "NCCL_DEBUG": "INFO"})
    assert text.splitlines() == [
        "DB_PASS=[REDACTED]",
        "GPG_PASSPHRASE=[REDACTED]",
        "NCCL_DEBUG=INFO",
        "REDIS_URL=redis://:[REDACTED]@cache-7:6379/0",
        "SESSION_COOKIE=[REDACTED]",
        "STRIPE_SIGNING_KEY=[REDACTED]",
    ]


def test_command_text_hides_option_values() -> None:
    cmd = ["torchrun", "train.py", "--password", "hunter2", "--api-key", "ab12", "--lr", "3e-4"]
    assert command_text(cmd) == (
        "torchrun train.py --password [REDACTED] --api-key [REDACTED] --lr 3e-4"
    )


def test_manifest_strings_are_redacted(tmp_path: Path) -> None:
    path = tmp_path / "MANIFEST.json"
    write_manifest(path, {"command": "python x.py --token abc123", "extra": {"api_key": "k"}})
    data = json.loads(path.read_text())
    assert data["command"] == "python x.py --token [REDACTED]"
    assert data["extra"] == {"api_key": "[REDACTED]"}


_FAILING_JOB = """
import os, sys
print("connecting with", os.environ["REDIS_URL"], "and", sys.argv[1:], flush=True)
raise RuntimeError("login failed: password=" + os.environ["DB_PASS"])
"""


def test_a_real_run_keeps_secrets_out_of_its_bookkeeping_and_report(tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    cmd = [sys.executable, "-c", _FAILING_JOB, "--api-key", "whsec-0123456789"]
    proc, _, err = start(run_dir, cmd, tmp_path, **ENV)
    assert proc.wait(timeout=120) == 1
    for name in ("environment.txt", "command.txt", "MANIFEST.json"):
        text = (run_dir / name).read_text()
        for leak in LEAKS:
            assert leak not in text, (name, leak)
    assert "DB_PASS=[REDACTED]" in (run_dir / "environment.txt").read_text()
    assert "--api-key [REDACTED]" in (run_dir / "command.txt").read_text()
    console = (run_dir / "console.log").read_text()
    assert "password=pw-in-clear" in console  # the user's own record, kept whole
    # the job's own stderr stays on the wrapper's stderr (the terminal); the report follows it
    report = err.read_text().split("nccl-doctor run: the job exited", 1)[1]
    assert "RuntimeError: login failed: password=[REDACTED]" in report
    for leak in LEAKS:
        assert leak not in report, leak
