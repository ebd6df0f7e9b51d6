"""A capture bundle is made to be shared: no file in it holds a secret."""

from __future__ import annotations

import json
from pathlib import Path

from nccl_doctor.live_check import HOST_JSON_HEAD, capture, host_json

ENV = {
    "NCCL_DEBUG": "INFO",
    "NCCL_NET_SIGNING_KEY": "sk-signing-material",
    "CUDA_VAULT_PASSPHRASE": "correct horse battery staple",
    "TORCH_DISTRIBUTED_DB_PASS": "pw-in-clear",
    "NCCL_PLUGIN_URL": "redis://:hunter2pw@cache-7:6379/0",
}
LEAKS = ("sk-signing-material", "correct horse", "battery staple", "pw-in-clear", "hunter2pw")


def test_env_txt_and_every_bundle_file_are_redacted(tmp_path: Path) -> None:
    folder = tmp_path / "b"
    capture(folder, nvml_module="no_such_nvml_module", environ=ENV, timeout_s=5)
    assert (folder / "env.txt").read_text().splitlines() == [
        "CUDA_VAULT_PASSPHRASE=[REDACTED]",
        "NCCL_DEBUG=INFO",
        "NCCL_NET_SIGNING_KEY=[REDACTED]",
        "NCCL_PLUGIN_URL=redis://:[REDACTED]@cache-7:6379/0",
        "TORCH_DISTRIBUTED_DB_PASS=[REDACTED]",
    ]
    for path in folder.iterdir():
        text = path.read_text()
        for leak in LEAKS:
            assert leak not in text, (path.name, leak)


def test_host_json_redacts_command_lines_and_secret_fields() -> None:
    text = host_json(
        {
            "hostname": "gpu-7",
            "gpu_processes": [
                {"pid": 7, "cmdline": "python t.py --api-key ab12cd34 --lr 1e-3", "comm": "python"}
            ],
            "runtime": {"registry_password": "hunter2", "title": "\x1b]0;pwned\x07ok"},
        }
    )
    assert text.splitlines()[0] == HOST_JSON_HEAD
    data = json.loads(text)
    assert data["gpu_processes"][0]["cmdline"] == "python t.py --api-key [REDACTED] --lr 1e-3"
    assert data["runtime"] == {"registry_password": "[REDACTED]", "title": "ok"}
