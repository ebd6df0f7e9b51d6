"""What a reporter tells of the set-up: host networking they cannot use is not host networking
(the containers' bridge addresses stay in play), and a rendezvous they say worked puts their
hang after it. Each with the words that still count."""

from __future__ import annotations

from pathlib import Path

from tests.helpers import diagnose_text

_DOCKER = (
    "Two servers with 4x RTX A6000 each, everything in docker compose on both (torch 2.3.1). "
    "MASTER_ADDR is the LAN IP of server 1. {setup} It hangs forever at the first all_reduce, "
    "no error for 30 minutes. {net}\n"
)


def _bridge_reason(tmp_path: Path, net: str) -> bool:
    text = _DOCKER.format(setup="Both nodes join and the 8 workers start.", net=net)
    report = diagnose_text(tmp_path, text)
    [lead] = [h for h in report.hypotheses if h.id == "net.socket_interface"]
    return any("containers with no host networking" in r for r in lead.for_)


def test_host_networking_they_cannot_use_leaves_the_bridge(tmp_path: Path) -> None:
    assert _bridge_reason(tmp_path, "We can't use host networking because of company policy.")


def test_host_networking_in_use_is_no_bridge(tmp_path: Path) -> None:
    assert not _bridge_reason(tmp_path, "We run both containers with host networking.")


def _rendezvous_warned(tmp_path: Path, setup: str) -> bool:
    report = diagnose_text(tmp_path, _DOCKER.format(setup=setup, net=""))
    return any(f.id == "launch.rendezvous" for f in report.findings)


def test_a_rendezvous_said_to_work_puts_the_hang_after_it(tmp_path: Path) -> None:
    said = "The torchrun rendezvous works fine: both nodes join and the 8 workers start (DDP init)."
    assert not _rendezvous_warned(tmp_path, said)


def test_a_hang_at_the_process_group_init_is_still_the_rendezvous(tmp_path: Path) -> None:
    assert _rendezvous_warned(tmp_path, "It hangs at init_process_group on both nodes.")
