"""The only network envdoctor touches: a vLLM server's health endpoint and a local port."""

from __future__ import annotations

import json
import socket
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlparse

TIMEOUT_S = 1.5


@dataclass
class Health:
    url: str
    ok: bool
    detail: str


LOOPBACK = "127.0.0.1"


def loopback(host: str) -> str | None:
    """The loopback address that reaches a server bound to ``host`` on this machine, or None when
    ``host`` is another machine (envdoctor talks to loopback only)."""
    if host in ("0.0.0.0", "::", "", "localhost"):
        return LOOPBACK
    return host if host == "::1" or host.startswith("127.") else None


def _url(host: str, port: int) -> str:
    if host.startswith(("http://", "https://")):
        return host.rstrip("/") + "/health/"
    if host in ("0.0.0.0", "", "::"):
        host = LOOPBACK
    return f"http://{host}:{port}/health/"


def _get(url: str, timeout: float, limit: int) -> tuple[int | None, bytes, str]:
    """``(HTTP status, first ``limit`` bytes of the body, why nothing answered)`` of a GET,
    without proxies; never raises."""
    import urllib.error
    import urllib.request  # here, not at import: only a live server check needs it

    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))  # no proxies
    try:
        with opener.open(url, timeout=timeout) as resp:  # noqa: S310 - http(s) only
            return int(resp.status), resp.read(limit), ""
    except urllib.error.HTTPError as exc:
        return int(exc.code), b"", ""
    except (urllib.error.URLError, OSError, ValueError) as exc:
        return None, b"", str(getattr(exc, "reason", exc))


def probe_health(host: str, port: int, timeout: float = TIMEOUT_S) -> Health:
    """GET ``/health/`` of a ``trl vllm-serve`` server with a short timeout; never raises."""
    url = _url(host, port)
    if urlparse(url).scheme not in ("http", "https"):
        return Health(url, False, "not an http(s) URL")
    status, body, failed = _get(url, timeout, 4096)
    if status is None:
        return Health(url, False, f"connection failed ({failed})")
    if not 200 <= status < 300:
        return Health(url, False, f"HTTP {status}: not a TRL vLLM server (no /health/)")
    if status != 200:
        return Health(url, False, f"HTTP {status}")
    try:
        data = json.loads(body or b"{}")
    except ValueError:
        data = None
    if isinstance(data, dict) and data.get("status") == "ok":
        return Health(url, True, "ok")  # TRL's own server (0.16–1.10)
    if not body.strip():
        return Health(url, True, "ok")  # vLLM's `vllm serve`, which trl vllm-serve wraps from 1.11
    return Health(url, False, f"answered HTTP 200 but not like a TRL vLLM server ({body[:80]!r})")


def port_in_use(port: int, host: str = LOOPBACK, timeout: float = 0.3) -> bool:
    """Whether something accepts TCP connections on ``host:port``."""
    try:
        with socket.create_connection((host, port), timeout=timeout):
            return True
    except OSError:
        return False


def server_address(ctx: Any) -> tuple[str, int]:
    """Host (or base URL) and port where the trainer will look for its vLLM server."""
    srv = ctx.layout.server
    base = ctx.config.get("vllm_server_base_url")
    host = str(ctx.config.get("vllm_server_host", srv.host if srv else "0.0.0.0"))
    try:
        port = int(ctx.config.get("vllm_server_port", srv.port if srv else 8000))
    except (TypeError, ValueError, OverflowError):
        port = 8000
    return str(base or host), port


def server_health(ctx: Any) -> Health | None:
    """The server's health, asked once per check (loopback and live runs only); None when the
    check may not touch the network."""
    if not (ctx.facts.live and ctx.network):
        return None
    cached = ctx.__dict__.get("_server_health")
    if cached is None:
        cached = probe_health(*server_address(ctx))
        ctx.__dict__["_server_health"] = cached
    return cached


def get_status(base: str, port: int, path: str,
               timeout: float = TIMEOUT_S) -> tuple[int | None, bytes]:
    """``(HTTP status, first bytes of the body)`` of ``GET path`` on the server (GET only:
    nothing is changed there); status None when nothing answers."""
    url = _url(base, port).rsplit("/health/", 1)[0] + path
    if urlparse(url).scheme not in ("http", "https"):
        return None, b""
    status, body, _ = _get(url, timeout, 1 << 20)
    return status, body
