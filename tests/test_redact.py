"""Secrets are always removed; shared output also pseudonymises hosts, IPs and users."""

from __future__ import annotations

import pytest

from nccl_doctor.redact import REDACTED, Pseudonyms, redact


@pytest.mark.parametrize(
    ("text", "secret"),
    [
        ("export HF_TOKEN=hf_abcdefghijklmnopqrstuvwxyz0123456789", "hf_abcdefghij"),
        ("WANDB_API_KEY=0123456789abcdef0123 python train.py", "0123456789abcdef0123"),
        ("git clone https://bob:s3cretpass@github.com/x/y", "s3cretpass"),
        ("Authorization: Bearer abcdef0123456789xyz", "abcdef0123456789xyz"),
        ("aws key AKIAIOSFODNN7EXAMPLE in env", "AKIAIOSFODNN7EXAMPLE"),
        ("aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", "wJalrXUtnFEMI"),
        ("password: hunter22", "hunter22"),
        ("--db-password=abc123xyz", "abc123xyz"),
        ("ghp_" + "a" * 36, "ghp_aaaa"),
        ("OPENAI_API_KEY=sk-proj-abcdefghijklmnopqrstuv", "sk-proj"),
    ],
)
def test_secrets_are_redacted(text: str, secret: str) -> None:
    out = redact(text)
    assert secret not in out
    assert REDACTED in out


@pytest.mark.parametrize(
    "text",
    [
        "NCCL_IB_HCA=mlx5_0:1,mlx5_1:1",
        "TORCH_NCCL_TRACE_BUFFER_SIZE=2000",
        '"token_file": "data/tokens_custom.txt",',
        "max_tokens=4096 num_tokens: 12",
        "NCCL INFO Bootstrap : Using [0]eth0:10.1.2.3<0>",
    ],
)
def test_ordinary_settings_are_kept(text: str) -> None:
    assert redact(text) == text


def test_pseudonyms_are_stable_across_a_report() -> None:
    names = Pseudonyms(["gpu-dev006", "node-0"])
    a = names.apply(
        "[yuxin.fang@gpu-dev006 deit]$ gpu-dev006:25486:25486 [0] NCCL INFO Bootstrap : "
        "Using [0]enp7s0:10.10.112.56<0> [2]veth1:fe80::4463:98ff:fe1a:66c9%veth1<0>"
    )
    b = names.apply("node-0 talks to gpu-dev006 at 10.10.112.56; home /home/yuxin.fang/x")
    for secret in ("gpu-dev006", "10.10.112.56", "yuxin.fang"):
        assert secret not in a + b
    assert "fe80::4463" not in a
    assert a.startswith("[user-1@host-1 deit]$ host-1:25486:25486")
    assert b == "host-2 talks to host-1 at 10.0.0.2; home /home/user-1/x"


def test_versions_bus_ids_and_times_are_not_addresses() -> None:
    names = Pseudonyms()
    text = "driver 535.129.03 cudnn 8.9.2.26 busId 00000000:3B:00.0 at 12:18:13.664 127.0.0.1"
    assert names.apply(text) == text
