"""Secrets are always removed; shared output also pseudonymises hosts, IPs and users."""

from __future__ import annotations

import unicodedata

import pytest

from nccl_doctor.redact import (
    REDACTED,
    LineGate,
    Pseudonyms,
    _triggered,
    redact,
    redact_data,
    redact_env,
    secret_name,
    strip_controls,
)


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


# -- secrets that got through before (issue 15, item 12) ---------------------------
@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "git clone https://oauth2:glpat-Ab1Cd2Ef3Gh4Ij5Kl6Mn@gitlab.example.com/x.git",
            "git clone https://oauth2:[REDACTED]@gitlab.example.com/x.git",
        ),
        ("GITLAB=glpat-Ab1Cd2Ef3Gh4Ij5Kl6Mn", "GITLAB=[REDACTED]"),
        ("deploy gldt-Ab1Cd2Ef3Gh4Ij5Kl6Mn7Op done", "deploy [REDACTED] done"),
        (
            '  "private_key_id": "8f1e2d3c4b5a69788f1e2d3c4b5a6978",',
            '  "private_key_id": "[REDACTED]",',
        ),
        (
            (
                '  "private_key": "-----BEGIN PRIVATE KEY-----\\nMIIEvQIBADANBgkqhkiG9w0BAQEF'
                '\\n-----END PRIVATE KEY-----\\n",'
            ),
            '  "private_key": "[REDACTED]\\n",',
        ),
        (
            (
                "DefaultEndpointsProtocol=https;AccountName=acct;"
                "AccountKey=Zm9vYmFyYmF6cXV4MTIzNDU2Nzg5MA+/==;EndpointSuffix=core.windows.net"
            ),
            (
                "DefaultEndpointsProtocol=https;AccountName=acct;"
                "AccountKey=[REDACTED];EndpointSuffix=core.windows.net"
            ),
        ),
        (
            "https://acct.blob.core.windows.net/c/ckpt.pt?sv=2022-11-02&sp=r&sig=Ab%2Bc0dE1fG2%3D",
            "https://acct.blob.core.windows.net/c/ckpt.pt?sv=2022-11-02&sp=r&sig=[REDACTED]",
        ),
        (
            "REDIS_URL=redis://:hunter2pw@cache-7:6379/0",
            "REDIS_URL=redis://:[REDACTED]@cache-7:6379/0",
        ),
        (
            (
                "python train.py --password hunter2 --api-key ab12cd34 --token 'xyz789'"
                " --max-tokens 4096"
            ),
            (
                "python train.py --password [REDACTED] --api-key [REDACTED] --token '[REDACTED]'"
                " --max-tokens 4096"
            ),
        ),
        (
            "curl -H 'Authorization: ApiKey abcdefghijklmnop1234' https://api.example.com",
            "curl -H 'Authorization: ApiKey [REDACTED]' https://api.example.com",
        ),
        ("X-Api-Key: 0123456789abcdef", "X-Api-Key: [REDACTED]"),
        ("use ApiKey abcdefghijklmnop1234 here", "use ApiKey [REDACTED] here"),
        (
            "STRIPE_KEY=rk12345 MY_SERVICE_KEY=zz9",
            "STRIPE_KEY=[REDACTED] MY_SERVICE_KEY=[REDACTED]",
        ),
        ("WEBHOOK_SIGNING_KEY=whsec_abc123", "WEBHOOK_SIGNING_KEY=[REDACTED]"),
        ("DB_PASS=pw1 DB_PWD=pw2", "DB_PASS=[REDACTED] DB_PWD=[REDACTED]"),
        ("GPG_PASSPHRASE=correct-horse", "GPG_PASSPHRASE=[REDACTED]"),
        (
            "SESSION_COOKIE=abc; COOKIE_JAR=/tmp/j",
            "SESSION_COOKIE=[REDACTED]; COOKIE_JAR=[REDACTED]",
        ),
        ("Cookie: sid=abc123; theme=dark", "Cookie: [REDACTED]"),
        ("b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAABlwAAAAdzc2gtcn", REDACTED),
        (
            (
                "-----BEGIN OPENSSH PRIVATE KEY-----\n"
                "b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAABlwAAAAdzc2gtcn\n"
                "-----END OPENSSH PRIVATE KEY-----\nafter"
            ),
            "[REDACTED]\nafter",
        ),
        (
            "<process_name>python train.py --hf-token=abcdef123</process_name>",
            "<process_name>python train.py --hf-token=[REDACTED]</process_name>",
        ),
    ],
)
def test_more_secrets_are_redacted(text: str, expected: str) -> None:
    assert redact(text) == expected
    assert redact(expected) == expected  # redaction is idempotent: renderers clean again


@pytest.mark.parametrize(
    "text",
    [
        "NCCL_IB_PKEY=0 NCCL_IB_HCA=mlx5_0:1",
        "docker run -v $PWD:/workspace img",
        "PWD=/home/me/project",
        "[   84.3] NVRM: GPU6 timeout error waiting for startToken = 0x3 cnt=24105122",
        "This is the canonical signature: NCCL 'Duplicate GPU detected'",
        "--max-tokens 4096 --tokenizer gpt2 --key-file keys.txt",
        "sha 3f786850e387550fdab836ed7e6dc881de23001b",
        "ProcessGroupGloo global rank 3",
    ],
)
def test_ordinary_text_is_kept(text: str) -> None:
    assert redact(text) == text


@pytest.mark.parametrize(
    ("name", "secret"),
    [
        ("HF_TOKEN", True),
        ("WANDB_API_KEY", True),
        ("AccountKey", True),
        ("private_key_id", True),
        ("DB_PASS", True),
        ("SIGNING_KEY", True),
        ("X_COOKIE_NAME", True),
        ("key", False),
        ("NCCL_IB_PKEY", False),
        ("max_tokens", False),
        ("token_file", False),
        ("PWD", False),
        ("AWS_ACCESS_KEY_ID", False),
    ],
)
def test_secret_names(name: str, secret: bool) -> None:
    assert secret_name(name) is secret


def test_env_lines_hide_a_secret_names_whole_value() -> None:
    assert redact_env("VAULT_PASSPHRASE", "correct horse battery") == "VAULT_PASSPHRASE=[REDACTED]"
    assert redact_env("NCCL_DEBUG", "INFO") == "NCCL_DEBUG=INFO"
    assert redact_env("BAD\nNCCL_P2P_DISABLE", "1") == "BAD NCCL_P2P_DISABLE=1"


def test_data_written_to_files_is_redacted() -> None:
    data = {
        "command": "torchrun train.py --token abc123",
        "env_added": {"NCCL_DEBUG": "WARN"},
        "auth": {"api_key": "zz-top", "client_secret": "s3"},
        "list": ["x \x1b]0;title\x07y", 3, None],
    }
    assert redact_data(data) == {
        "command": "torchrun train.py --token [REDACTED]",
        "env_added": {"NCCL_DEBUG": "WARN"},
        "auth": {"api_key": REDACTED, "client_secret": REDACTED},
        "list": ["x y", 3, None],
    }


# -- the entry gate: a private key's body, line by line ----------------------------
def test_gate_redacts_a_private_key_body_line_by_line() -> None:
    gate = LineGate()
    lines = [
        "[rank0]: loading deploy key",
        "-----BEGIN RSA PRIVATE KEY-----",
        "Proc-Type: 4,ENCRYPTED",
        "MIIEpAIBAAKCAQEA3Tz2mr7SZiAMfQyuvBjM9Oi+abcdEFGH",
        "w9mTLFvGGP8zWxyZ",
        "-----END RSA PRIVATE KEY-----",
        "[rank0]: RuntimeError: NCCL error",
    ]
    out = [gate(n, line) for n, line in enumerate(lines, 1)]
    assert out == [lines[0], REDACTED, REDACTED, REDACTED, REDACTED, REDACTED, lines[6]]


def test_gate_key_state_ends_at_a_gap_and_at_a_non_key_line() -> None:
    gate = LineGate()
    assert gate(1, "-----BEGIN OPENSSH PRIVATE KEY-----") == REDACTED
    assert gate(5, "abcdEFGH1234abcdEFGH1234") == "abcdEFGH1234abcdEFGH1234"  # not the next line
    assert gate(6, "-----BEGIN OPENSSH PRIVATE KEY-----") == REDACTED
    assert gate(7, "NCCL WARN Connect to 10.0.0.2<45763> failed") == (
        "NCCL WARN Connect to 10.0.0.2<45763> failed"
    )


# -- control characters (item 14) --------------------------------------------------
@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("\x1b]0;pwned title\x07RuntimeError", "RuntimeError"),
        ("a\x1b]52;c;cm0gLXJmIH4K\x1b\\b", "ab"),
        ("\x1b[2J\x1b[H\x1b[31mred\x1b[0m", "red"),
        ("\x9b2Jx\x9d0;t\x9cy", "xy"),
        ("pay \u202egnp.exe\u202c now", "pay gnp.exe now"),
        ("a\u2066b\u2069c\u200bd\u200de\ufefff", "abcdef"),
        ("tag\U000e0041\U000e0042s", "tags"),
        ("bell\x07 back\x08space\x00", "bell backspace"),
        ("col1\tcol2", "col1\tcol2"),
        ("naïve 日本語 ok", "naïve 日本語 ok"),
    ],
)
def test_controls_are_stripped(text: str, expected: str) -> None:
    assert strip_controls(text) == expected
    assert LineGate()(1, text) == expected


def test_every_invisible_or_control_character_is_stripped() -> None:
    """Against Unicode itself: every Cc (but tab/newline), Cf, Zl and Zp character goes."""
    kept = {"\t", "\n"}
    bad = [
        chr(c)
        for c in range(0x110000)
        if unicodedata.category(chr(c)) in ("Cc", "Cf", "Zl", "Zp") and chr(c) not in kept
    ]
    left = [c for c in bad if strip_controls(f"a{c}é") != "aé"]
    assert [f"U+{ord(c):04X}" for c in left] == []
    assert len(bad) > 200
    assert strip_controls("a\nb", newlines=False) == "a b"


# -- pseudonyms (item 13) -------------------------------------------------------------
def test_peers_in_store_timeouts_are_pseudonymised() -> None:
    names = Pseudonyms()
    out = [
        names.apply(t)
        for t in (
            "DistNetworkError: client socket failed to connect to [node0]:29500 (errno: 110)",
            "timed out after 1800000ms while trying to connect to (gpu-node-17, 29500).",
            "NCCL WARN socketProgress: Connection closed by remote peer node1<57557>",
            "MASTER_ADDR=mn-01.cluster.example MASTER_PORT=29500",
            "rendezvous at trainer-3:29400 failed; node0 is down",
            "File ProcessGroupNCCL.cpp:1748 and socket.cpp:601 and [rank0]:1000 steps",
        )
    ]
    assert out == [
        "DistNetworkError: client socket failed to connect to [host-1]:29500 (errno: 110)",
        "timed out after 1800000ms while trying to connect to (host-2, 29500).",
        "NCCL WARN socketProgress: Connection closed by remote peer host-3<57557>",
        "MASTER_ADDR=host-4 MASTER_PORT=29500",
        "rendezvous at host-5:29400 failed; host-1 is down",
        "File ProcessGroupNCCL.cpp:1748 and socket.cpp:601 and [rank0]:1000 steps",
    ]
    assert names.key() == {
        "host-1": "node0",
        "host-2": "gpu-node-17",
        "host-3": "node1",
        "host-4": "mn-01.cluster.example",
        "host-5": "trainer-3",
    }


def test_addresses_at_a_sentence_end_or_after_server_are_pseudonymised() -> None:
    names = Pseudonyms()
    assert names.apply("Connect to 10.38.10.112.") == "Connect to 10.0.0.2."
    assert names.apply("cannot reach server 10.38.10.113, retrying") == (
        "cannot reach server 10.0.0.3, retrying"
    )
    assert names.apply("driver 535.129.03 and v 10.1.2.3 kept") == (
        "driver 535.129.03 and v 10.1.2.3 kept"
    )
    assert names.key() == {"10.0.0.2": "10.38.10.112", "10.0.0.3": "10.38.10.113"}


def test_users_in_shared_filesystem_paths_are_pseudonymised() -> None:
    names = Pseudonyms()
    text = "/workspace/alice/train.py /lustre/bob/ckpt/x.pt /workspace/train.py /home/carol"
    assert names.apply(text) == (
        "/workspace/user-1/train.py /lustre/user-2/ckpt/x.pt /workspace/train.py /home/user-3"
    )
    assert names.key() == {"user-1": "alice", "user-2": "bob", "user-3": "carol"}


def test_gpu_uuids_are_no_host_and_cost_linear_time() -> None:
    """A UUID looks like a host up to the missing ``:port``: the pattern must give up at once.

    The peer pattern once had a nested quantifier that tried every split of a
    UUID's digits (2^28 for one GPU UUID) before failing: a Markdown report
    that named two GPUs by UUID never finished.
    """
    line = (
        "GPUs: only in the good run: 00000000:00:06.0 (GPU-3a6604ce-40f3-c119-a61e-00137022e819)"
        " on gpu-node-03; only in this run: GPU-c24840ec-8de1-83d5-b126-08000173ae32"
    )
    names = Pseudonyms(["gpu-node-03"])
    out = names.apply(line * 20)
    assert out.count("-a61e-00137022e819) on host-1;") == 20  # the host was replaced
    assert "gpu-node-03" not in out
    assert out.count("GPU-c24840ec-8de1-83d5-b126-08000173ae32") == 20
    assert names.key() == {"host-1": "gpu-node-03"}


@pytest.mark.parametrize(
    "token",
    [
        *(f"gh{kind}_{'A1b2' * 9}" for kind in "pousr"),
        "github_pat_" + "A1b2_" * 5,
        *(
            f"gl{kind}-{'A1b2' * 6}"
            for kind in ("pat", "dt", "rt", "ptt", "cbt", "imt", "agent", "oas", "ft", "soat")
        ),
    ],
)
def test_every_github_and_gitlab_token_kind_is_redacted(token: str) -> None:
    assert redact(f"cloned with {token} ok") == f"cloned with {REDACTED} ok"


def test_high_and_global_do_not_wake_the_token_patterns() -> None:
    """The cheap test looks for token prefixes, not for "gh"/"gl" inside ordinary words.

    PyTorch prints a line like this one per rank and process group (400,000 in a
    large job); every one of them used to run all the secret patterns.
    """
    line = (
        "[rank3]:[I1106 01:00:05.123456789 ProcessGroupNCCL.cpp:905] [PG ID 7 PG GUID 7(tp) "
        "Rank 3] ProcessGroupNCCL initialization options: size: 8, global rank: 3, TIMEOUT(ms): "
        "600000, USE_HIGH_PRIORITY_STREAM: 0, SPLIT_FROM: 0, SPLIT_COLOR: 1, PG Name: 7"
    )
    assert not _triggered(line.lower())
    assert redact(line) is line
