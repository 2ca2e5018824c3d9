"""The one pass every string leaving envdoctor goes through: secrets masked, control characters
escaped, very long values cut.

- URL-aware: the user information of any ``scheme://user:password@host`` (user-only tokens,
  empty users, passwords holding ``/`` or ``@``) and query parameters named like secrets.
- Pattern-aware: Hugging Face, GitHub, AWS, OpenAI-style, Slack and W&B tokens.
- Value-aware: the value standing after a secret-named variable, option or key
  (``HF_TOKEN=…``, ``--hub_token …``, ``hub_token: …``, ``"api_key": "…"``), quoted or not, up
  to the end of the line after an unbalanced quote; plus values the caller knows are secret.
  Values are masked where they stand, never by replacing every occurrence of a short word.

Every pass is linear in the text (no regex here can backtrack more than a bounded amount).
The output boundary applies it: ``report.render`` (every format), the CLI's error messages,
``InputError`` itself, ``collect`` and ``emit``.
"""

from __future__ import annotations

import enum
import re
from collections.abc import Iterable
from dataclasses import fields, is_dataclass, replace
from functools import lru_cache
from typing import Any

MASK = "****"
#: Output strings longer than this are cut (an 8 MiB config value is not shown whole).
MAX_SHOWN = 2000
#: Strings of a ``Report`` object (the API's) are cut here: still no 8 MiB value kept whole.
KEPT = 20_000
#: Known secret values at least this long are also masked wherever they appear; shorter ones
#: (``vllm``, ``1``) only where they stand after their name, or every fix would be garbled.
MIN_GLOBAL = 8

_SECRET_PARTS = {"TOKEN", "SECRET", "SECRETS", "PASSWORD", "PASSWD", "APIKEY", "CREDENTIAL",
                 "CREDENTIALS", "PASSPHRASE", "AUTHORIZATION", "COOKIE"}
#: Tokenizer settings (``pad_token``, ``eos_token_id``) are named like secrets but are not.
_NOT_SECRET_BEFORE_TOKEN = {"PAD", "EOS", "BOS", "UNK", "SEP", "CLS", "MASK", "SPECIAL", "CHAT",
                            "IMAGE", "VISION", "AUDIO", "VIDEO", "THINK", "ADDED", "START", "END"}
_QUERY_SECRET = {"KEY", "TOKEN", "SIG", "SIGNATURE", "PASSWORD", "PASS", "SECRET", "AUTH",
                 "CODE", "CREDENTIAL"}
_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")
_SPLIT = re.compile(r"[^A-Za-z0-9]+")


@lru_cache(maxsize=4096)
def is_secret(name: str) -> bool:
    """Whether a variable / option / key name holds a secret (``HF_TOKEN``, ``--hub-token``,
    ``WANDB_API_KEY``, ``apiKey``, ``AWS_SECRET_ACCESS_KEY``), not ``max_tokens`` or
    ``pad_token``."""
    if len(name) > 200:
        return False
    parts = [p for p in _SPLIT.split(_CAMEL.sub("_", name).upper()) if p]
    for i, part in enumerate(parts):
        if part == "TOKEN":
            if i and parts[i - 1] in _NOT_SECRET_BEFORE_TOKEN:
                continue
            if i + 1 < len(parts) and parts[i + 1] in ("ID", "IDS", "TYPE"):
                continue
            return True
        if part in _SECRET_PARTS and part != "TOKEN":
            return True
        if part == "KEY" and i:  # API_KEY, SSH_KEY, NCCL_IB_KEY; a bare ``key`` is not
            return True
    return False


def _query_secret(name: str) -> bool:
    return is_secret(name) or any(p in _QUERY_SECRET for p in
                                  _SPLIT.split(_CAMEL.sub("_", name).upper()))


# ---------------------------------------------------------------- patterns (prefix + class)
_TOKENS = re.compile(
    r"(?<![A-Za-z0-9_\-])(?:"
    r"hf_[A-Za-z0-9]{30,}"                      # Hugging Face user / org tokens
    r"|api_org_[A-Za-z0-9]{30,}"                # legacy Hugging Face org tokens
    r"|gh[pousr]_[A-Za-z0-9]{30,}"              # GitHub classic tokens
    r"|github_pat_[A-Za-z0-9_]{30,}"            # GitHub fine-grained tokens
    r"|(?:AKIA|ASIA|AGPA|AIDA|AROA|ANPA)[0-9A-Z]{16}(?![0-9A-Z])"  # AWS access key ids
    r"|sk-[A-Za-z0-9_\-]{20,}"                  # OpenAI-style (sk-, sk-proj-, sk-ant-)
    r"|xox[abposr]-[A-Za-z0-9\-]{10,}"          # Slack
    r"|local-[0-9a-f]{40}"                      # W&B keys of self-hosted servers
    r"|wandb_v1_[A-Za-z0-9_]{20,}"              # W&B's longer keys
    r"|(?<=[Bb]earer )[A-Za-z0-9._~+/\-]{8,}=*"  # HTTP bearer tokens
    r"|(?<=[Bb]asic )[A-Za-z0-9+/]{8,}=*"       # HTTP basic credentials
    r")")
_QUERY = re.compile(r"([?&;])([A-Za-z0-9_.\-]{1,100})=([^&\s#'\"<>]*)")
_URL_END = re.compile(r"[\s'\"<>`]")
_HINT = re.compile(r"(?i)token|secret|passw|api_?key|apikey|credential|passphrase|"
                   r"authorization|cookie|"
                   r"access_?key|private_?key|ssh_?key|auth_?key|client_?key|_key")
_NAME_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-.")


def _mask_tokens(text: str) -> str:
    return _TOKENS.sub(MASK, text)


def _mask_urls(text: str) -> str:
    """The user information of every ``scheme://…@host``: everything up to the last ``@`` of
    the URL's word (a password may hold ``/`` or ``@``; a ``/`` before any ``:`` means a path
    followed by a git ref, which is kept)."""
    if "://" not in text:
        return text
    out, pos = [], 0
    while True:
        i = text.find("://", pos)
        if i < 0:
            break
        start = i + 3
        m = _URL_END.search(text, start)
        end = m.start() if m else len(text)
        at = text.rfind("@", start, end)
        info = text[start:at] if at > start else ""
        slash = info.find("/")
        if slash >= 0 and ":" not in info[:slash]:
            info = ""  # git+https://github.com/o/r@v1.0: a path then a ref, not user information
        if info:
            out.append(text[pos:start])
            out.append(MASK)
            pos = at  # keep the '@' and what follows
        else:
            out.append(text[pos:start])
            pos = start
        # the rest of this URL's word is not scanned for another '://' userinfo again
        out.append(text[pos:end])
        pos = end
    out.append(text[pos:])
    return "".join(out)


def _mask_query(text: str) -> str:
    if "=" not in text:
        return text

    def sub(m: re.Match[str]) -> str:
        if m.group(3) and _query_secret(m.group(2)):
            return f"{m.group(1)}{m.group(2)}={MASK}"
        return m.group(0)

    return _QUERY.sub(sub, text)


def _value_end(text: str, i: int) -> int:
    """End of the value starting at ``i``: a quoted string (to the end of the line when the
    quote never closes) or a run of characters up to white space or a delimiter."""
    n = len(text)
    if i < n and text[i] in "\"'":
        close = text.find(text[i], i + 1)
        eol = text.find("\n", i + 1)
        eol = n if eol < 0 else eol
        return close + 1 if 0 <= close < eol else eol
    j = i
    while j < n and not text[j].isspace() and text[j] not in ",;&}])\"'":
        j += 1
    return j


def _mask_assignments(text: str) -> str:
    """The value after each secret-named ``NAME=``, ``NAME: ``, ``--name value``,
    ``"name": "value"``."""
    if not _HINT.search(text):
        return text
    out: list[str] = []
    pos = 0  # everything before pos is already in out
    scanned = 0  # hints before this index were handled
    for m in _HINT.finditer(text):
        if m.start() < scanned:
            continue
        s = m.start()
        while s > max(scanned, m.start() - 200) and text[s - 1] in _NAME_CHARS:
            s -= 1
        e = m.end()
        while e < len(text) and e - s <= 200 and text[e] in _NAME_CHARS:
            e += 1
        scanned = e
        name = text[s:e]
        option = name.startswith("-")
        if not is_secret(name.lstrip("-")):
            continue
        j = e
        if j < len(text) and text[j] in "\"'" and not option:
            j += 1  # the closing quote of a quoted key
        k = j
        while k < len(text) and text[k] in " \t":
            k += 1
        if k < len(text) and text[k] == "=" and (k == j or option):
            k += 1
        elif k < len(text) and text[k] == ":" and not option:
            k += 1
            while k < len(text) and text[k] in " \t":
                k += 1
        elif option and k > j and k < len(text) and not text[k].startswith("-"):
            pass  # ``--hub_token value``
        else:
            continue
        end = _value_end(text, k)
        if end <= k:
            continue
        quote = text[k] if text[k] in "\"'" else ""
        closed = quote and end - k >= 2 and text[end - 1] == quote
        out.append(text[pos:k])
        out.append(f"{quote}{MASK}{quote if closed else ''}")
        pos = scanned = end
    out.append(text[pos:])
    return "".join(out)


#: Text without any of these cannot hold a secret the passes below would find (fast path).
_ANY = re.compile(r"(?i)://|[=:?&]|hf_|api_org_|gh[pousr]_|github_pat_|AKIA|ASIA|AGPA|AIDA|AROA|"
                  r"ANPA|sk-|xox|local-|wandb_|bearer |basic |token|secret|passw|key|credential|"
                  r"passphrase|authorization|cookie")


def redact(text: str, known: Iterable[str] = ()) -> str:
    """``text`` with every secret it shows masked (see the module's docstring)."""
    if not text:
        return text
    if _ANY.search(text):
        text = _mask_urls(text)
        text = _mask_query(text)
        text = _mask_tokens(text)
        text = _mask_assignments(text)
    if known:
        for secret in _global(tuple(known)):
            text = text.replace(secret, MASK)
    return text


@lru_cache(maxsize=64)
def _global(known: tuple[str, ...]) -> tuple[str, ...]:
    return tuple(sorted({k for k in known if len(k) >= MIN_GLOBAL}, key=len, reverse=True))


# ------------------------------------------------------------------ control characters
_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e"
                      "\u2066-\u2069\ud800-\udfff\ufffe\uffff]")


def _escape(m: re.Match[str]) -> str:
    code = ord(m.group(0))
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def escape_controls(text: str) -> str:
    """Control characters (ESC, BEL, CR, NUL…), bidirectional overrides and lone surrogates
    written as ``\\x1b`` / ``\\u202e``: a snapshot cannot drive the terminal, and the text is
    valid in XML. Newlines and tabs stay."""
    return _CONTROL.sub(_escape, text)


_SGR_OR_CONTROL = re.compile("\x1b\\[[0-9;]{0,20}m|" + _CONTROL.pattern)


def _escape_keep_color(m: re.Match[str]) -> str:
    return m.group(0) if len(m.group(0)) > 1 else _escape(m)


_JSON_STRING = re.compile(r'"(?:[^"\\]|\\.)*"')


def _json_string(m: re.Match[str]) -> str:
    import json

    try:
        value = json.loads(m.group(0))
    except ValueError:
        return m.group(0)
    masked = redact(value)
    return m.group(0) if masked == value else json.dumps(masked)


def output_text(text: str) -> str:
    """The last pass on text about to be printed or written (``emit``): secrets masked,
    control characters escaped except the colour codes the text report paints with. JSON is
    redacted string by string (it stays valid JSON); XML comes only from the JUnit renderer,
    which has cleaned every string already."""
    start = text.lstrip()[:5]
    if start.startswith(("{", "[")):
        return _JSON_STRING.sub(_json_string, text)
    if start == "<?xml":
        return text
    return _SGR_OR_CONTROL.sub(_escape_keep_color, redact(text))


def clean(text: str, known: Iterable[str] = (), escape: bool = True,
          limit: int = MAX_SHOWN) -> str:
    """The whole pass on one string: redact, cut to ``limit`` characters, escape. Only the
    first ``4 × limit`` characters are redacted: the rest is cut anyway, so a secret cut in two
    there is never shown."""
    head = redact(text[:4 * limit], known)
    if len(text) > 4 * limit or len(head) > limit:
        head = f"{head[:limit]}… (cut: {len(text):,} characters in all)"
    return escape_controls(head) if escape else head


@lru_cache(maxsize=65536)
def _clean_short(text: str, known: tuple[str, ...], escape: bool, limit: int) -> str:
    return clean(text, known, escape, limit)


def scrub(value: Any, known: Iterable[str] = (), escape: bool = True,
          limit: int = MAX_SHOWN) -> Any:
    """``value`` with :func:`clean` applied to every string inside it (dict keys, lists,
    dataclasses); other values unchanged."""
    known = tuple(known)
    if isinstance(value, enum.Enum):
        return value
    if isinstance(value, str):
        if len(value) <= 256:  # tables repeat their cells: 30,000 GPUs, three distinct rows
            return _clean_short(value, known, escape, limit)
        return clean(value, known, escape, limit)
    if isinstance(value, dict):  # a secret-named key hides its value, whatever it looks like
        return {scrub(k, known, escape, limit):
                MASK if _secret_item(k, v) else scrub(v, known, escape, limit)
                for k, v in value.items()}
    if isinstance(value, (list, tuple, set, frozenset)):
        items = [scrub(v, known, escape, limit) for v in value]
        return items if isinstance(value, (set, frozenset)) else type(value)(items)
    if is_dataclass(value) and not isinstance(value, type):
        changes = {f.name: scrub(getattr(value, f.name), known, escape, limit)
                   for f in fields(value) if f.init and f.name != "secrets"}
        return replace(value, **changes)
    return value


def _secret_item(key: Any, value: Any) -> bool:
    return (isinstance(key, str) and isinstance(value, (str, int, float))
            and not isinstance(value, bool) and value != "" and is_secret(key))


# --------------------------------------------------------------------- the plan's secrets
def plan_secrets(plan: Any) -> set[str]:
    """Values of secret-named variables, options and config keys of a ``Plan``: masked in the
    report wherever they stand (when at least ``MIN_GLOBAL`` characters long)."""
    from envdoctor.plan.launch import parse_script_args

    found: set[str] = set()
    for launch in plan.launches:
        found |= {str(v) for k, v in launch.env.items() if is_secret(k)}
        options = {**launch.options, **parse_script_args(launch.script_args)}
        found |= {str(v) for k, v in options.items() if is_secret(k)}
    found |= {str(v) for k, v in plan.config.items() if is_secret(str(k)) and v is not None}
    env = plan.config.get("env")
    if isinstance(env, dict):
        found |= {str(v) for k, v in env.items() if is_secret(str(k)) and v is not None}
    return {s for s in found if s}


def redact_report(report: Any, secrets: Iterable[str] = ()) -> None:
    """Mask the secrets in every text of a ``Report``, in place (the object an API caller gets
    back holds no secret either); remembers them for the renderers."""
    known = set(secrets) | set(getattr(report, "secrets", ()))
    report.secrets = known
    for area in report.areas:
        area.summary = scrub(area.summary, known, escape=False, limit=KEPT)
        area.note = scrub(area.note, known, escape=False, limit=KEPT)
        area.skipped = scrub(area.skipped, known, escape=False, limit=KEPT)
        area.findings = [scrub(f, known, escape=False, limit=KEPT) for f in area.findings]
    for name in ("subject", "layout", "layout_summary", "upgrade_plan", "extra"):
        setattr(report, name, scrub(getattr(report, name), known, escape=False, limit=KEPT))


def safe_report(report: Any, escape: bool) -> Any:
    """A copy of ``report`` ready to print: every string redacted, cut, and (for text and XML)
    control characters escaped."""
    known = tuple(getattr(report, "secrets", ()))
    return scrub(report, known, escape=escape)
