"""A client of NCCL's RAS socket, so the pre-mortem needs no ``ncclras`` binary.

NCCL >= 2.24 starts a RAS thread in every process with a communicator; it
listens on 127.0.0.1:28028 (``NCCL_RAS_ADDR``) and speaks a line protocol
(src/ras/client.cc in NVIDIA/nccl): the client sends ``CLIENT PROTOCOL 2``
and reads ``SERVER PROTOCOL n``; then ``TIMEOUT s`` (answer ``OK``), from
NCCL 2.28.7 ``SET FORMAT json`` (``OK``, or an error from an older server),
and ``[VERBOSE ]STATUS``, after which the server writes the report and closes
the connection. The ``ncclras`` binary shipped with a driver or an older
NCCL may not know ``--format`` even when the job's NCCL does, which is why
this speaks the protocol itself.
"""

from __future__ import annotations

import socket
import time
from dataclasses import dataclass

#: The protocol version the client announces (NCCL_RAS_CLIENT_PROTOCOL).
PROTOCOL = 2
#: Default address of the RAS client socket.
DEFAULT_ADDR = ("127.0.0.1", 28028)
#: The most the client keeps of one report (a 4,000-rank verbose status is a few MB).
MAX_BYTES = 32 << 20


@dataclass
class RasReply:
    """What the server answered: the report text and how it was asked."""

    text: str
    format: str  # "json" or "text"
    server_protocol: int | None
    truncated: bool = False


class RasError(Exception):
    """No RAS server answered, or it answered outside the protocol."""


def _line(sock: socket.socket, deadline: float) -> str:
    data = b""
    while not data.endswith(b"\n") and len(data) < 4096:
        sock.settimeout(max(0.1, deadline - time.monotonic()))
        chunk = sock.recv(4096 - len(data))
        if not chunk:
            break
        data += chunk
    return data.decode("utf-8", "replace")


def query(
    addr: tuple[str, int] = DEFAULT_ADDR,
    *,
    fmt: str = "json",
    verbose: bool = True,
    timeout_s: float = 20.0,
    collective_timeout_s: int = 5,
) -> RasReply:
    """Ask one job's RAS thread for its status; JSON when the server knows it, else text."""
    deadline = time.monotonic() + timeout_s
    try:
        sock = socket.create_connection(addr, timeout=min(5.0, timeout_s))
    except OSError as exc:
        raise RasError(
            f"no NCCL RAS server at {addr[0]}:{addr[1]} ({exc.strerror or exc})"
        ) from exc
    with sock:
        try:
            sock.sendall(f"CLIENT PROTOCOL {PROTOCOL}\n".encode())
            hello = _line(sock, deadline)
            if not hello.upper().startswith("SERVER PROTOCOL "):
                raise RasError(f"not an NCCL RAS server (answered {hello.strip()[:80]!r})")
            try:
                server = int(hello.split()[2])
            except ValueError:
                server = None
            sock.sendall(f"TIMEOUT {collective_timeout_s}\n".encode())
            _line(sock, deadline)
            used = "text"
            if fmt == "json":
                sock.sendall(b"SET FORMAT json\n")
                if _line(sock, deadline).strip().upper() == "OK":
                    used = "json"
            sock.sendall(b"VERBOSE STATUS\n" if verbose else b"STATUS\n")
            chunks: list[bytes] = []
            size = 0
            truncated = False
            while True:
                sock.settimeout(max(0.1, deadline - time.monotonic()))
                chunk = sock.recv(65536)
                if not chunk:
                    break
                if size + len(chunk) > MAX_BYTES:
                    truncated = True
                    break
                chunks.append(chunk)
                size += len(chunk)
        except TimeoutError as exc:
            raise RasError(
                f"NCCL RAS server at {addr[0]}:{addr[1]} did not answer in time"
            ) from exc
        except OSError as exc:
            raise RasError(f"NCCL RAS connection failed ({exc.strerror or exc})") from exc
    return RasReply(b"".join(chunks).decode("utf-8", "replace"), used, server, truncated)


def main(argv: list[str] | None = None) -> int:
    """``python -m nccl_doctor.run.ras [text|json] [host:port]``: print one status report."""
    import sys  # noqa: PLC0415 -- only the command line needs it

    args = sys.argv[1:] if argv is None else argv
    fmt = args[0] if args else "json"
    host, _, port = (args[1] if len(args) > 1 else "127.0.0.1:28028").rpartition(":")
    try:
        reply = query((host or "127.0.0.1", int(port)), fmt=fmt)
    except (RasError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    sys.stdout.write(reply.text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
