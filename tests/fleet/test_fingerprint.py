"""The fingerprint a JSON report carries: read from typed facts of real captures."""

from __future__ import annotations

import json
from pathlib import Path

from nccl_doctor.pipeline import diagnose_paths
from nccl_doctor.render import render_report

ROOT = Path(__file__).resolve().parents[2]
H200 = ROOT / "tests" / "fixtures" / "captured" / "against-h200"
PAIRS = ROOT / "tests" / "fixtures" / "against"


def fingerprint(*paths: Path) -> dict:
    report = diagnose_paths([str(p) for p in paths])
    return json.loads(render_report(report, "json"))["fingerprint"]


def test_a_healthy_h200_run_with_its_nvidia_smi() -> None:
    fp = fingerprint(H200 / "good", H200 / "nvidia-smi-q.txt")
    assert fp["world_size"] == 1
    assert fp["hosts"] == ["vm"]
    assert fp["ranks"] == [{"rank": 0, "host": "vm", "gpu": 0, "bus_id": "00000000:00:06.0"}]
    assert fp["gpus"] == [
        {
            "host": "vm",
            "index": 0,
            "bus_id": "00000000:00:06.0",
            "uuid": "GPU-3a6604ce-40f3-c119-a61e-00137022e819",
            "name": "NVIDIA H200",
            "serial": "1653724061700",
        }
    ]
    assert fp["versions"] == {"driver": ["580.159.04"], "cuda_driver": ["13.0"], "nccl": ["2.28.9"]}
    assert fp["environment"] == {
        "scope": "all",
        "vars": {
            "CUDA_HOME": "/usr/local/cuda",
            "CUDA_VERSION": "13.0.2",
            "NCCL_DEBUG": "INFO",
            "NCCL_VERSION": "2.28.3-1",
            "TORCH_CUDA_ARCH_LIST": "9.0a",
        },
    }
    nccl = fp["nccl"]
    assert nccl["seen"] is True
    assert nccl["channels"] == {
        "coll": [64], "collnet": [64], "nvls": [0], "p2p": [64], "p2p_per_peer": [64]
    }  # fmt: skip
    assert nccl["nvls"] is False
    assert nccl["collnet"] is False
    assert nccl["network"] == "Socket"
    assert nccl["plugins"] == {"NET": ["Socket"]}
    assert nccl["bootstrap"] == ["eth0"]
    assert (nccl["nodes"], nccl["local_ranks"], nccl["mnnvl"]) == (1, 1, False)
    assert fp["errors"] == {"findings": [], "signatures": []}


def test_a_multi_gpu_hang_names_its_transport_and_its_error_set() -> None:
    fp = fingerprint(PAIRS / "p2p" / "failed")
    assert fp["nccl"]["transports"] == {"P2P/IPC": 2}
    assert fp["nccl"]["local_ranks"] == 2
    # an INFO log names every NCCL variable that is set: none here
    assert fp["environment"] == {"scope": "nccl", "vars": {}}
    assert [f["id"] for f in fp["errors"]["findings"]] == ["app.hang", "nccl.p2p"]
    assert fp["errors"]["signatures"] == ["collective_timeout"]
    assert [(p["rank"], p["bus_id"]) for p in fp["ranks"]] == [
        (0, "00000000:1B:00.0"),
        (1, "00000000:1C:00.0"),
    ]


def test_nccl_echoed_variables_and_shm_transport() -> None:
    fp = fingerprint(PAIRS / "p2p" / "retry")
    assert fp["environment"]["vars"] == {"NCCL_P2P_DISABLE": "1"}
    assert fp["nccl"]["transports"] == {"SHM/direct/direct": 2}


def test_a_run_that_failed_before_nccl_init_has_no_init_picture_and_no_localhost() -> None:
    fp = fingerprint(H200 / "bad_ifname")
    assert fp["nccl"]["seen"] is False
    assert fp["nccl"]["transports"] == {}
    assert fp["environment"]["vars"]["NCCL_SOCKET_IFNAME"] == "nosuch0"
    assert fp["hosts"] == ["vm"]  # torchrun's "localhost" is not a host of the fleet
    ids = [f["id"] for f in fp["errors"]["findings"]]
    assert ids == ["net.socket_interface", "launch.rank_crash"]  # the folded cascade too
    assert "torch.elastic.child_failed_exitcode" in fp["errors"]["signatures"]


def test_kernel_log_gpus_join_the_inventory_by_bus_id() -> None:
    fp = fingerprint(PAIRS / "other-node" / "failed")
    assert fp["hosts"] == ["gpu-node-17"]
    assert fp["gpus"] == [
        {
            "host": "gpu-node-17",
            "index": 0,
            "bus_id": "00000000:00:06.0",
            "uuid": "GPU-c24840ec-8de1-83d5-b126-08000173ae32",
            "name": None,
            "serial": None,
        }
    ]


def test_environment_values_pass_the_redaction_gate_and_volatile_ones_stay_out(
    tmp_path: Path,
) -> None:
    env = tmp_path / "env.txt"
    env.write_text(
        "NCCL_DEBUG=INFO\n"
        "TORCH_STORE_URL=postgresql://trainer:Sup3rSecret@db.internal:5432/runs\n"
        "NCCL_NET_PLUGIN_TOKEN=ghp_0123456789abcdefghijABCDEFGHIJ012345\n"
        "RANK=3\nMASTER_PORT=29500\nHOME=/root\n"
    )
    fp = fingerprint(env)
    assert fp["environment"]["vars"] == {
        "NCCL_DEBUG": "INFO",
        "NCCL_NET_PLUGIN_TOKEN": "[REDACTED]",
        "TORCH_STORE_URL": "postgresql://trainer:[REDACTED]@db.internal:5432/runs",
    }
    assert "Sup3rSecret" not in json.dumps(fp)
