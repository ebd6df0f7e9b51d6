"""The RAS socket client against a peer speaking NCCL's protocol, replaying a real H200 reply."""

from __future__ import annotations

import json
import socket
import threading
from pathlib import Path

import pytest

from nccl_doctor.run import ras

CAPTURED = Path(__file__).parents[1] / "fixtures" / "captured" / "ras-h200"


def _serve(reply_json: bytes, reply_text: bytes, *, knows_json: bool) -> tuple[int, list[str]]:
    """One connection answered as src/ras/client.cc expects; the port and the lines read."""
    listener = socket.create_server(("127.0.0.1", 0))
    port = listener.getsockname()[1]
    heard: list[str] = []

    def run() -> None:
        conn, _ = listener.accept()
        with conn, listener:
            reader = conn.makefile("rb")
            fmt = "text"
            for raw in reader:
                line = raw.decode().strip()
                heard.append(line)
                if line.startswith("CLIENT PROTOCOL"):
                    conn.sendall(b"SERVER PROTOCOL 2\n")
                elif line.startswith("TIMEOUT"):
                    conn.sendall(b"OK\n")
                elif line == "SET FORMAT json":
                    fmt = "json" if knows_json else fmt
                    conn.sendall(b"OK\n" if knows_json else b"ERROR: Unknown command\n")
                elif line.endswith("STATUS"):
                    conn.sendall(reply_json if fmt == "json" else reply_text)
                    return

    threading.Thread(target=run, daemon=True).start()
    return port, heard


def test_a_server_that_speaks_json_gives_the_json_report() -> None:
    body = (CAPTURED / "ras-json.txt").read_bytes()
    port, heard = _serve(body, b"", knows_json=True)
    reply = ras.query(("127.0.0.1", port), fmt="json", timeout_s=10)
    assert reply.format == "json"
    assert reply.server_protocol == 2
    doc = json.loads(reply.text)
    assert doc["nccl_version"] == "2.28.9"
    assert doc["communicators"][0]["ranks"][0]["status"]["abort_flag"] is False
    assert heard == ["CLIENT PROTOCOL 2", "TIMEOUT 5", "SET FORMAT json", "VERBOSE STATUS"]


def test_an_older_server_gives_text() -> None:
    text = (CAPTURED / "ras-text.txt").read_bytes()
    port, _ = _serve(b"{}", text, knows_json=False)
    reply = ras.query(("127.0.0.1", port), fmt="json", verbose=False, timeout_s=10)
    assert reply.format == "text"
    assert "Job summary" in reply.text
    assert "RUNNING" in reply.text


def test_nothing_listening_is_a_ras_error() -> None:
    with socket.create_server(("127.0.0.1", 0)) as probe:
        port = probe.getsockname()[1]
    with pytest.raises(ras.RasError, match=rf"no NCCL RAS server at 127.0.0.1:{port}"):
        ras.query(("127.0.0.1", port), timeout_s=2)


def test_a_server_of_another_protocol_is_refused() -> None:
    listener = socket.create_server(("127.0.0.1", 0))
    port = listener.getsockname()[1]

    def http() -> None:
        conn, _ = listener.accept()
        with conn, listener:
            conn.recv(100)
            conn.sendall(b"HTTP/1.1 400 Bad Request\r\n\r\n")

    threading.Thread(target=http, daemon=True).start()
    with pytest.raises(ras.RasError, match="not an NCCL RAS server"):
        ras.query(("127.0.0.1", port), timeout_s=5)
