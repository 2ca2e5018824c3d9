"""Loopback servers that misbehave on purpose, for the network tests."""

from __future__ import annotations

import contextlib
import socket
import threading
from collections.abc import Callable, Iterator


@contextlib.contextmanager
def tcp_server(
    handle: Callable[[socket.socket, bytes, threading.Event], None],
) -> Iterator[tuple[int, list[bytes]]]:
    """A loopback TCP server: ``handle(conn, request, stop)`` per connection. Yields the port
    and the requests it received (their first line and headers)."""
    srv = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    srv.bind(("127.0.0.1", 0))
    srv.listen(8)
    srv.settimeout(0.2)
    stop, requests = threading.Event(), []

    def serve_one(conn: socket.socket) -> None:
        with conn:
            conn.settimeout(5)
            data = b""
            with contextlib.suppress(OSError):
                while b"\r\n\r\n" not in data and len(data) < 65536:
                    chunk = conn.recv(4096)
                    if not chunk:
                        break
                    data += chunk
            requests.append(data)
            with contextlib.suppress(OSError):
                handle(conn, data, stop)

    def loop() -> None:
        while not stop.is_set():
            try:
                conn, _ = srv.accept()
            except OSError:
                continue
            threading.Thread(target=serve_one, args=(conn,), daemon=True).start()

    thread = threading.Thread(target=loop, daemon=True)
    thread.start()
    try:
        yield srv.getsockname()[1], requests
    finally:
        stop.set()
        thread.join(5)
        srv.close()


def reply(
    status: str, body: bytes = b"", headers: dict[str, str] | None = None
) -> Callable[[socket.socket, bytes, threading.Event], None]:
    """A handler that answers every request with one HTTP response."""
    head = {"Content-Length": str(len(body)), "Content-Type": "application/json", **(headers or {})}

    def handle(conn: socket.socket, _request: bytes, _stop: threading.Event) -> None:
        lines = [f"HTTP/1.1 {status}", *(f"{k}: {v}" for k, v in head.items()), "", ""]
        conn.sendall("\r\n".join(lines).encode() + body)

    return handle
