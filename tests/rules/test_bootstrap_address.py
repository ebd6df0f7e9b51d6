"""The address NCCL's bootstrap advertises must reach its host alone: one shared by two hosts (a
BMC's USB network, containers on each host's default bridge) or a link-local one on a job that
spans nodes sends peers nowhere; distinct routable addresses, or one host's ranks, stay silent."""

from __future__ import annotations

from pathlib import Path

from tests.helpers import critical_ids, diagnose_text


def _log(a: str, b: str) -> str:
    """Two hosts' bootstrap lines (NCCL 2.18), then the second host's connect failing."""
    return (
        f"node-a:51872:51872 [0] NCCL INFO Bootstrap : Using {a}\n"
        "node-a:51872:51872 [0] NCCL INFO cudaDriverVersion 12020\n"
        "NCCL version 2.18.1+cuda12.1\n"
        f"node-b:40110:40110 [0] NCCL INFO Bootstrap : Using {b}\n"
        "node-b:40110:40244 [0] NCCL INFO Call to connect returned Connection refused, retrying\n"
        "node-b:40110:40244 [0] misc/socket.cc:463 NCCL WARN socketStartConnect: exceeded "
        "retries (20000)\n"
        "node-b:40110:40244 [0] NCCL INFO misc/socket.cc:564 -> 6\n"
        "node-b:40110:40244 [0] NCCL INFO bootstrap.cc:256 -> 6\n"
        "torch.distributed.DistBackendError: NCCL error in: ../torch/csrc/distributed/c10d/"
        "ProcessGroupNCCL.cpp:1331, remote process exited or there was a network error, NCCL "
        "version 2.18.1\n"
    )


def _interface_finding(tmp_path: Path, a: str, b: str) -> str:
    report = diagnose_text(tmp_path, _log(a, b))
    assert critical_ids(report) == ["net.socket_interface"]
    [finding] = [f for f in report.findings if f.id == "net.socket_interface"]
    return finding.summary


def test_two_hosts_on_one_link_local_address(tmp_path: Path) -> None:
    said = _interface_finding(tmp_path, "usb0:169.254.95.120<0>", "usb0:169.254.95.120<0>")
    assert "usb0 (169.254.95.120)" in said
    assert "hosts node-a, node-b all advertise that one address" in said


def test_two_containers_on_their_default_bridge_address(tmp_path: Path) -> None:
    # eth0 inside a container on docker's default bridge: every host's first container is
    # 172.17.0.2, a routable-looking address that each host keeps to itself
    said = _interface_finding(tmp_path, "eth0:172.17.0.2<0>", "eth0:172.17.0.2<0>")
    assert "eth0 (172.17.0.2)" in said
    assert "all advertise that one address" in said


def test_a_link_local_bootstrap_on_one_of_two_hosts(tmp_path: Path) -> None:
    said = _interface_finding(tmp_path, "ens1f0:10.20.0.11<0>", "usb0:169.254.95.121<0>")
    assert "usb0 (169.254.95.121)" in said
    assert "a link-local address reaches its own link only" in said


def test_two_hosts_on_their_own_addresses_stay_a_failed_connection(tmp_path: Path) -> None:
    report = diagnose_text(tmp_path, _log("ens1f0:10.20.0.11<0>", "ens1f0:10.20.0.12<0>"))
    assert "net.socket_interface" not in critical_ids(report)
    assert critical_ids(report) == ["net.unreachable"]


def test_ranks_of_one_host_share_its_address(tmp_path: Path) -> None:
    text = _log("ens1f0:10.20.0.11<0>", "ens1f0:10.20.0.11<0>").replace("node-b", "node-a")
    report = diagnose_text(tmp_path, text)
    assert "net.socket_interface" not in critical_ids(report)


def _without_torchs_error(a: str, b: str, tail: str) -> str:
    """NCCL's own lines only (no PyTorch exception pasted), then ``tail``."""
    lines = _log(a, b).splitlines(keepends=True)
    return "".join(line for line in lines if not line.startswith("torch.")) + tail


def test_nccls_own_connect_failure_on_a_shared_bridge_is_the_interface(tmp_path: Path) -> None:
    """Only NCCL's WARN that its connect retries ran out shows the failure: on an address two
    hosts share it is still the interface's."""
    text = _without_torchs_error(
        "br-5c1d09a3e2f7:172.18.0.1<0>", "br-91e7aa40c2b6:172.18.0.1<0>", ""
    )
    report = diagnose_text(tmp_path, text)
    assert critical_ids(report) == ["net.socket_interface"]


def test_a_hang_told_on_a_shared_bridge_is_the_interface_and_init_done_is_not(
    tmp_path: Path,
) -> None:
    plain = "node-a:51872:51872 [0] NCCL INFO Bootstrap : Using eth0:172.17.0.2<0>\n"
    plain += "node-b:40110:40110 [0] NCCL INFO Bootstrap : Using eth0:172.17.0.2<0>\n"
    hung = diagnose_text(tmp_path, plain + "NCCL init then hangs until the watchdog timeout.\n")
    assert critical_ids(hung) == ["net.socket_interface"]
    done = plain + (
        "node-b:40110:40244 [0] NCCL INFO comm 0x55d0 rank 1 nranks 2 cudaDev 0 busId 1000 "
        "commId 0x7f3a - Init COMPLETE\n"
    )
    report = diagnose_text(tmp_path, done + "Training runs, just slower than expected.\n")
    assert "net.socket_interface" not in critical_ids(report)
