"""The live rules' network: a vLLM server's health and endpoints, and a local port, all through
``envdoctor.net_policy`` (loopback only unless allowed; no redirect followed; no body quoted;
one deadline per request)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import TYPE_CHECKING

from envdoctor import versions
from envdoctor.net_policy import (
    DEADLINE_S,
    LOOPBACK,
    LOOPBACK_ONLY,
    MAX_BYTES,
    Answer,
    Policy,
    describe_body,
    http_get,
    port_open,
    server_origin,
)
from envdoctor.plan.interface import server_address as plan_server_address

if TYPE_CHECKING:
    from envdoctor.checks.context import Context

__all__ = [
    "LOOPBACK",
    "Health",
    "get_status",
    "policy",
    "port_in_use",
    "probe_health",
    "server_address",
    "server_health",
]


@dataclass
class Health:
    """A server's /health: ``ok``; ``contacted`` False when the policy kept envdoctor from it
    (``detail`` says why); ``url`` scheme://host:port/path as named."""

    url: str
    ok: bool
    detail: str
    contacted: bool = True
    host: str = ""


def _judge(ans: Answer) -> tuple[bool, str]:
    """Whether an answer to /health is a healthy TRL / vLLM server, and what it was."""
    status = ans.status
    if status is None:
        return False, ans.detail
    if 300 <= status < 400:
        return False, f"HTTP {status}: a redirect (not followed): not a TRL vLLM server"
    if ans.outcome == "too large":
        return False, f"HTTP {status}: {ans.detail}: not a TRL vLLM server"
    if status == 404:
        return False, "HTTP 404: not a TRL vLLM server (no /health)"
    if status != 200:
        return False, f"HTTP {status}"
    try:
        data = json.loads(ans.body or b"{}")
    except ValueError:
        data = None
    if isinstance(data, dict) and data.get("status") == "ok":
        return True, "ok"  # TRL's own server (0.16–1.10)
    if not ans.body.strip():
        return True, "ok"  # vLLM's `vllm serve`, which trl vllm-serve wraps from 1.11
    return False, (
        f"answered HTTP 200 but not like a TRL vLLM server ({describe_body(ans.body)}"
        ', not TRL\'s {"status": "ok"} nor vLLM\'s empty body)'
    )


def probe_health(
    host: str,
    port: int,
    policy: Policy = LOOPBACK_ONLY,
    path: str = "/health/",
    deadline_s: float = DEADLINE_S,
) -> Health:
    """GET ``path`` of a TRL / vLLM server (``host`` or a base URL), then the other spelling of
    /health when the first is a redirect or 404 (TRL's server has /health/, vLLM's /health;
    the redirect's Location is never read); never raises."""
    srv = server_origin(host, port)
    ans = http_get(srv, path, policy, deadline_s)
    if not ans.contacted:
        return Health(srv.url(), False, ans.detail, contacted=False, host=srv.host)
    ok, detail = _judge(ans)
    if not ok and ans.status is not None and (300 <= ans.status < 400 or ans.status == 404):
        other = path.rstrip("/") if path.endswith("/") else path + "/"
        again = http_get(srv, other, policy, deadline_s)
        ok2, detail2 = _judge(again)
        if ok2 or again.status is None:
            return Health(again.url, ok2, detail2, host=srv.host)
    return Health(ans.url, ok, detail, host=srv.host)


def port_in_use(port: int, host: str = LOOPBACK) -> bool:
    """Whether something accepts TCP connections on ``host:port`` (loopback only)."""
    return port_open(port, host)


def policy(ctx: Context) -> Policy:
    """The network policy of a check: loopback, and the hosts the user allowed."""
    return Policy.of(getattr(ctx, "allow_hosts", ()) or ())


def server_address(ctx: Context) -> tuple[str, int]:
    """Host (or base URL) and port where the trainer will look for its vLLM server."""
    return plan_server_address(ctx.config, ctx.layout.server)


def _health_path(ctx: Context) -> str:
    """The path the installed TRL's client polls: /health from 1.11 (vLLM's), /health/ before."""
    trl = ctx.version("trl")
    return "/health" if trl and versions.at_least(trl, "1.11.0") else "/health/"


def server_health(ctx: Context) -> Health | None:
    """The server's health, asked once per check (live runs only, under the policy); None when
    the check may not touch the network."""
    if not (ctx.facts.live and ctx.network):
        return None
    if not 0 <= server_address(ctx)[1] <= 65535:
        return None  # not a port: nothing to contact (LAY014 names it)
    cached: Health | None = ctx.__dict__.get("_server_health")
    if cached is None:
        cached = probe_health(*server_address(ctx), policy=policy(ctx), path=_health_path(ctx))
        ctx.__dict__["_server_health"] = cached
    return cached


def get_status(
    base: str,
    port: int,
    path: str,
    pol: Policy = LOOPBACK_ONLY,
    deadline_s: float = DEADLINE_S,
    max_bytes: int = MAX_BYTES,
) -> tuple[int | None, bytes]:
    """``(HTTP status, the body for parsing)`` of ``GET path`` on the server under the policy
    (GET only: nothing is changed there); status None when nothing answers or it may not be
    contacted."""
    ans = http_get(server_origin(base, port), path, pol, deadline_s, max_bytes)
    return ans.status, ans.body
