"""The one way envdoctor contacts anything over the network, and the rules it keeps.

* Only loopback is contacted: 127.0.0.0/8 and ::1; ``localhost`` and an empty host map to
  127.0.0.1 literally, and 0.0.0.0 / :: (a server bound to every interface) to loopback. No
  other name is resolved (no DNS lookup) and no other address is contacted, unless the user
  allows that host by name (``--allow-host HOST``, ``preflight(allow_hosts=[...])``).
* Redirects are never followed: a 3xx is reported as what it is; the Location is not read.
* Bodies are parsed (JSON), never quoted: a finding says the status and a classification.
* One deadline per request, connect + send + every read (monotonic), and a cap on the bytes
  read: a server that answers a byte a second cannot hold a check longer than the deadline.
* GET only, HTTP/1.0, no proxies, no cookies, no credentials.
"""

from __future__ import annotations

import ipaddress
import socket
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from urllib.parse import urlsplit

from envdoctor.units import size_text

LOOPBACK = "127.0.0.1"
DEADLINE_S = 3.0
MAX_BYTES = 64 * 1024
PORT_DEADLINE_S = 0.3


@dataclass(frozen=True)
class Target:
    """Where a host name leads: ``address`` to connect to, or None with ``why_not``."""

    host: str  # as named, normalized (lower case, no brackets)
    address: str | None = None  # a literal IP
    resolve: bool = False  # a name the user allowed: the system resolver looks it up
    why_not: str = ""

    @property
    def allowed(self) -> bool:
        return self.address is not None or self.resolve


@dataclass(frozen=True)
class Policy:
    """Which hosts may be contacted: loopback always, and the hosts the user allowed by name."""

    allow: frozenset[str] = field(default_factory=frozenset)

    @classmethod
    def of(cls, hosts: Iterable[str] | None = None) -> Policy:
        return cls(frozenset(norm_host(h) for h in hosts or () if norm_host(h)))

    def target(self, host: str) -> Target:
        """Whether and where ``host`` may be contacted; never looks a name up unless allowed."""
        h = norm_host(host)
        if h in ("", "localhost"):
            return Target(h, LOOPBACK)
        try:
            ip = ipaddress.ip_address(h)
        except ValueError:
            if h in self.allow:
                return Target(h, resolve=True)
            return Target(
                h, why_not=f"{h!r} is a host name other than localhost (envdoctor looks no name up)"
            )
        if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
            ip = ip.ipv4_mapped
        if ip.is_unspecified:  # a server bound to every interface answers on loopback
            return Target(h, LOOPBACK if ip.version == 4 else "::1")
        if ip.is_loopback or h in self.allow or str(ip) in self.allow:
            return Target(h, str(ip))
        return Target(h, why_not=f"{ip} is {_kind(ip)}, not loopback")


LOOPBACK_ONLY = Policy()
_HOST_CHARS = set("abcdefghijklmnopqrstuvwxyz0123456789-._:[]%")


def allowed_hosts(hosts: Iterable[object] | None, source: str) -> tuple[str, ...]:
    """The hosts a user allows (``--allow-host``, ``allow_hosts=``), checked: a host name or an
    IP address each (no scheme, port, path or wildcard); anything else is an ``InputError``
    naming ``source``."""
    from envdoctor.errors import InputError

    if hosts is None:
        return ()
    if isinstance(hosts, (str, bytes)) or not isinstance(hosts, Iterable):
        raise InputError(source, f"expected a list of host names, got {hosts!r:.80}")
    out = []
    for raw in hosts:
        h = norm_host(raw) if isinstance(raw, str) else ""
        if not h or len(h) > 253 or not set(h) <= _HOST_CHARS or h.count(":") == 1:
            raise InputError(
                source, f"expected a host name or an IP address (no scheme, port or path), got {raw!r:.80}"
            )
        out.append(h)
    return tuple(dict.fromkeys(out))


def norm_host(host: str) -> str:
    """``host`` as compared: stripped, lower case, no IPv6 brackets, no trailing dot."""
    h = str(host).strip().lower()
    if h.startswith("[") and h.endswith("]"):
        h = h[1:-1]
    return h[:-1] if h.endswith(".") and len(h) > 1 else h


def _kind(ip: ipaddress.IPv4Address | ipaddress.IPv6Address) -> str:
    if ip.is_link_local:
        return "a link-local address (where cloud metadata services answer)"
    if ip.is_private:
        return "a private address (another machine)"
    if ip.is_multicast or ip.is_reserved:
        return "a reserved or multicast address"
    return "a public address (another machine)"


class NotAllowed(Exception):
    """The policy does not let envdoctor contact this host; ``str()`` says why."""


def connect(policy: Policy, host: str, port: int, deadline: float) -> socket.socket:
    """A TCP connection to ``host:port`` as the policy allows, by the monotonic ``deadline``.

    Raises ``NotAllowed`` (nothing was attempted), ``TimeoutError`` or ``OSError``."""
    target = policy.target(host)
    if not target.allowed:
        raise NotAllowed(target.why_not)
    if target.resolve:  # allowed by name: the only lookup envdoctor makes
        infos = socket.getaddrinfo(target.host, port, type=socket.SOCK_STREAM)
        if not infos:
            raise OSError(f"{target.host!r} does not resolve")
        family, address = infos[0][0], infos[0][4]
    else:
        assert target.address is not None
        family = socket.AF_INET6 if ":" in target.address else socket.AF_INET
        address = (target.address, port)
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        sock.settimeout(_left(deadline))
        sock.connect(address)
    except BaseException:
        sock.close()
        raise
    return sock


def _left(deadline: float) -> float:
    left = deadline - time.monotonic()
    if left <= 0:
        raise TimeoutError("deadline passed")
    return left


def port_open(
    port: int, host: str = LOOPBACK, policy: Policy = LOOPBACK_ONLY, deadline_s: float = PORT_DEADLINE_S
) -> bool:
    """Whether something accepts TCP connections on ``host:port`` (loopback unless allowed)."""
    try:
        with connect(policy, host, port, time.monotonic() + deadline_s):
            return True
    except (NotAllowed, OSError):
        return False


def free_loopback_port() -> int:
    """A TCP port free on 127.0.0.1 right now (bound and released; nothing is contacted)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((LOOPBACK, 0))
        return int(s.getsockname()[1])


@dataclass
class Answer:
    """What a GET got. ``status`` None: no complete answer (``outcome`` and ``detail`` say why).
    ``body`` is for parsing only (at most the byte cap); no message ever quotes it."""

    url: str  # scheme://host:port/path, as named (never the user's own path or query)
    status: int | None = None
    outcome: str = "answered"  # answered | not contacted | timed out | failed | too large
    detail: str = ""
    body: bytes = b""

    @property
    def contacted(self) -> bool:
        return self.outcome != "not contacted"


@dataclass(frozen=True)
class Server:
    """A server's origin from a host or a base URL: scheme, host, port (no path, no query)."""

    scheme: str
    host: str
    port: int
    problem: str = ""  # why it is not contacted whatever the host (a path, credentials, …)

    def url(self, path: str = "") -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{self.scheme}://{host}:{self.port}{path}"


def server_origin(base: str, port: int) -> Server:
    """``base`` is a host (with ``port``) or an http(s) base URL, which must be an origin only:
    a path, query, fragment or user info is not contacted (envdoctor asks its own paths)."""
    text = str(base).strip()
    if "://" not in text:
        return Server("http", _shown(norm_host(text)), int(port))
    try:
        parts = urlsplit(text)
        url_port = parts.port
    except ValueError:
        return Server("http", "", int(port), "its base URL does not parse")
    scheme = parts.scheme.lower()
    host = _shown(norm_host(parts.hostname or ""))
    default = 443 if scheme == "https" else 80
    srv = Server(
        scheme if scheme in ("http", "https") else "http", host, url_port if url_port is not None else default
    )
    extra = [
        what
        for what, there in (
            ("user info", parts.username is not None),
            ("a path", parts.path not in ("", "/")),
            ("a query", bool(parts.query) or text.rstrip("/").endswith("?")),
            ("a fragment", bool(parts.fragment)),
        )
        if there
    ]
    if scheme not in ("http", "https"):
        return Server(srv.scheme, host, srv.port, f"its base URL is not http(s) ({scheme or 'no'} scheme)")
    if extra:
        return Server(
            srv.scheme,
            host,
            srv.port,
            f"its base URL carries {' and '.join(extra)}: "
            "envdoctor asks only its own paths at a server's root",
        )
    return srv


def _shown(host: str) -> str:
    """A wildcard or empty host as the loopback address it is reached at (for messages)."""
    return {"": LOOPBACK, "0.0.0.0": LOOPBACK, "::": "::1"}.get(host, host)


def http_get(
    server: Server,
    path: str,
    policy: Policy = LOOPBACK_ONLY,
    deadline_s: float = DEADLINE_S,
    max_bytes: int = MAX_BYTES,
) -> Answer:
    """GET ``path`` on ``server`` under the policy; never raises, never follows a redirect."""
    url = server.url(path)
    if server.problem:
        return Answer(url, outcome="not contacted", detail=server.problem)
    deadline = time.monotonic() + deadline_s
    try:
        sock = connect(policy, server.host, server.port, deadline)
    except NotAllowed as exc:
        return Answer(url, outcome="not contacted", detail=str(exc))
    except TimeoutError:
        return Answer(url, outcome="timed out", detail=f"no connection within {deadline_s:g} s")
    except OSError as exc:
        return Answer(url, outcome="failed", detail=f"connection failed ({_why(exc)})")
    try:
        if server.scheme == "https":
            import ssl  # here: only an https base URL needs it

            sock.settimeout(_left(deadline))
            sock = ssl.create_default_context().wrap_socket(sock, server_hostname=server.host)
        host = f"[{server.host}]" if ":" in server.host else server.host
        request = (
            f"GET {path} HTTP/1.0\r\nHost: {host}:{server.port}\r\nUser-Agent: envdoctor\r\n"
            "Accept: */*\r\nConnection: close\r\n\r\n"
        )
        sock.settimeout(_left(deadline))
        sock.sendall(request.encode("ascii", "replace"))
        return _read(sock, url, deadline, deadline_s, max_bytes)
    except TimeoutError:
        return Answer(
            url, outcome="timed out", detail=f"no complete answer within {deadline_s:g} s (timed out)"
        )
    except OSError as exc:
        return Answer(url, outcome="failed", detail=f"connection failed ({_why(exc)})")
    finally:
        sock.close()


def _why(exc: OSError) -> str:
    return str(exc.strerror or type(exc).__name__)[:200]


def _read(sock: socket.socket, url: str, deadline: float, deadline_s: float, max_bytes: int) -> Answer:
    """Read one HTTP response within ``deadline`` and ``max_bytes`` (headers included)."""
    buf = b""
    head: tuple[int, dict[str, str]] | None = None
    body_at = 0
    while True:
        if head is not None and (head[0] != 200 or _complete(head[1], buf[body_at:])):
            break  # only a 200's body is ever parsed: any other answer ends at its head
        if len(buf) >= max_bytes:
            status = head[0] if head else None
            return Answer(
                url,
                status,
                "too large",
                f"the answer is larger than {size_text(max_bytes, 'KiB', floor=True)} (not read further)",
            )
        sock.settimeout(_left(deadline))
        chunk = sock.recv(min(65536, max_bytes - len(buf)))
        if not chunk:
            break
        buf += chunk
        if head is None and b"\r\n\r\n" in buf:
            raw, _, _ = buf.partition(b"\r\n\r\n")
            body_at = len(raw) + 4
            head = _head(raw)
            if head is None:
                return Answer(url, None, "failed", "the answer is not HTTP")
    if head is None:
        return Answer(
            url,
            None,
            "failed",
            "the connection closed without an HTTP answer" if not buf else "the answer is not HTTP",
        )
    status, headers = head
    body = buf[body_at:]
    if headers.get("transfer-encoding", "").lower() == "chunked":
        body = _dechunk(body)
    return Answer(url, status, "answered", f"HTTP {status}", body)


def _head(raw: bytes) -> tuple[int, dict[str, str]] | None:
    lines = raw.decode("latin-1").split("\r\n")
    first = lines[0].split(" ", 2)
    if len(first) < 2 or not first[0].startswith("HTTP/") or not first[1].isdigit() or len(first[1]) != 3:
        return None
    headers = {}
    for line in lines[1:]:
        name, sep, value = line.partition(":")
        if sep:
            headers[name.strip().lower()] = value.strip()
    return int(first[1]), headers


def _complete(headers: dict[str, str], body: bytes) -> bool:
    """Whether the body is whole without waiting for the server to close."""
    if headers.get("transfer-encoding", "").lower() == "chunked":
        return body.endswith(b"0\r\n\r\n")
    length = headers.get("content-length", "")
    return length.isdigit() and len(length) < 12 and len(body) >= int(length)


def _dechunk(body: bytes) -> bytes:
    out, rest = b"", body
    while rest:
        size, sep, rest = rest.partition(b"\r\n")
        try:
            n = int(size.split(b";")[0], 16)
        except ValueError:
            break
        if not sep or n == 0:
            break
        out, rest = out + rest[:n], rest[n + 2 :]
    return out


def describe_body(body: bytes) -> str:
    """A classification of a body for a message: its kind and size, never its text."""
    text = body.strip()
    if not text:
        return "an empty body"
    size = f"{len(body)} bytes"
    head = text[:1]
    if head in (b"{", b"["):
        return f"{size} of JSON-like text"
    if head == b"<":
        return f"{size} of HTML/XML"
    try:
        body.decode("utf-8")
    except UnicodeDecodeError:
        return f"{size} of binary data"
    return f"{size} of text"
