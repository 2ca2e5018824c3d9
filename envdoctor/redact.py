"""The one pass every string leaving envdoctor goes through: secrets masked, control characters
escaped, very long values cut. One recogniser, every form a secret is written in:

- Names (:func:`is_secret`): ``HF_TOKEN``, ``--api-key``, ``PGPASSWORD``, ``MYSQL_PWD``,
  ``jsessionid``; not measurements or tokenizer settings (``kv_bytes_per_token``,
  ``max_tokens``, ``pad_token``) nor lookup keys (``key``, ``sort_key``).
- Values after a secret name, however spaced: ``NAME=v``, ``NAME = v``, ``NAME= v``,
  ``NAME: v``, ``--name v``, ``--name=v``, ``"name": "v"``; a quoted value whole, a shell word
  ``shlex.join`` quoted in pieces (``'ab'"'"'cd'``) whole, to the end of the line after an
  unbalanced quote; a header's value to its end (``Authorization: token v``, ``Cookie: …``).
- URLs: the user information of ``scheme://user:pw@host``, ``//user:pw@host`` and
  ``user:pw@host`` (user-only tokens, empty users, passwords holding ``/`` or ``@``); query and
  path parameters named like secrets (``?token=``, ``;jsessionid=``).
- Shapes: Hugging Face, GitHub, AWS, OpenAI-style, Slack and W&B tokens, bearer / basic
  credentials, also right after a repr() escape (``'\\x07hf_…'``).
- Commands and prose: ``mysql … -pSECRET``, ``wandb login SECRET``, ``… with key SECRET``.
- Values the caller knows are secret (the plan's), masked wherever they stand when long
  enough. Values are masked where they stand, never by replacing every occurrence of a short
  word. Masking happens on the text as written, before any escaping, so no quoting or escape
  can split a secret around the mask.

Every pass is linear in the text (no regex here can backtrack more than a bounded amount).
The output boundary applies it: ``report.render`` (every format; one escaping of every value
for every format, :func:`safe_report`), :func:`output_text` over everything ``emit`` writes
(collect, diff, check, triage, hook, plan-memory), the CLI's error messages and ``InputError``.
"""

from __future__ import annotations

import enum
import re
import sys
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import fields, is_dataclass, replace
from functools import lru_cache
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from envdoctor.report.interface import Report


class _Lazy:
    """A pattern compiled on first use: a check's report needs about half of them (compiling
    all 19 cost ~5 ms a run)."""

    __slots__ = ("_args", "_re")

    def __init__(self, pattern: str, flags: int = 0) -> None:
        self._args = (pattern, flags)
        self._re: re.Pattern[str] | None = None

    @property
    def compiled(self) -> re.Pattern[str]:
        if self._re is None:
            self._re = re.compile(*self._args)
        return self._re

    @property
    def pattern(self) -> str:
        return self._args[0]

    def search(self, text: str, pos: int = 0, endpos: int = sys.maxsize) -> re.Match[str] | None:
        return self.compiled.search(text, pos, endpos)

    def match(self, text: str, pos: int = 0, endpos: int = sys.maxsize) -> re.Match[str] | None:
        return self.compiled.match(text, pos, endpos)

    def fullmatch(self, text: str, pos: int = 0, endpos: int = sys.maxsize) -> re.Match[str] | None:
        return self.compiled.fullmatch(text, pos, endpos)

    def finditer(self, text: str, pos: int = 0, endpos: int = sys.maxsize) -> Iterator[re.Match[str]]:
        return self.compiled.finditer(text, pos, endpos)

    def split(self, text: str) -> list[str]:
        return self.compiled.split(text)

    def sub(self, repl: str | Callable[[re.Match[str]], str], text: str) -> str:
        return self.compiled.sub(repl, text)


MASK = "****"
#: Output strings longer than this are cut (an 8 MiB config value is not shown whole).
MAX_SHOWN = 2000
#: Strings of a ``Report`` object (the API's) are cut here: still no 8 MiB value kept whole.
KEPT = 20_000
#: Known secret values at least this long are also masked wherever they appear; shorter ones
#: (``vllm``, ``1``) only where they stand after their name, or every fix would be garbled.
MIN_GLOBAL = 8

# ------------------------------------------------------------------------------ names
#: Words that make a name secret wherever they stand in it (``HF_TOKEN``, ``db-password``).
_SECRET_PARTS = {
    "TOKEN",
    "SECRET",
    "SECRETS",
    "PASSWORD",
    "PASSWORDS",
    "PASSWD",
    "PASSPHRASE",
    "APIKEY",
    "APIKEYS",
    "CREDENTIAL",
    "CREDENTIALS",
    "AUTHORIZATION",
    "COOKIE",
    "COOKIES",
    "SESSIONID",
    "SESSID",
}
#: The same words run together with what precedes them: ``PGPASSWORD``, ``JSESSIONID``,
#: ``PHPSESSID``, ``CLIENTSECRET``, ``authtoken``.
_SECRET_SUFFIXES = ("TOKEN", "SECRET", "PASSWORD", "PASSWD", "PASSPHRASE", "APIKEY", "SESSIONID", "SESSID")
#: Words of measurements (``kv_bytes_per_token``, ``max_token``, ``num_keys``).
_MEASURES = {"PER", "MAX", "MIN", "NUM", "N", "TOTAL", "AVG", "MEAN", "COUNT", "BYTES"}
#: Before ``TOKEN``: tokenizer settings (``pad_token``, ``eos_token``) and measurements
#: (``kv_bytes_per_token``, ``prompt_token``) are named like secrets but are not.
_NOT_SECRET_BEFORE_TOKEN = _MEASURES | {
    "PAD",
    "EOS",
    "BOS",
    "UNK",
    "SEP",
    "CLS",
    "MASK",
    "SPECIAL",
    "CHAT",
    "IMAGE",
    "VISION",
    "AUDIO",
    "VIDEO",
    "THINK",
    "ADDED",
    "START",
    "END",
    "STOP",
    "BEGIN",
    "FIM",
    "DECODER",
    "PROMPT",
    "COMPLETION",
    "INPUT",
    "OUTPUT",
    "NEW",
    "GENERATED",
    "GENERATION",
    "FIRST",
    "LAST",
    "NEXT",
    "PREV",
    "KV",
}
#: After ``TOKEN``: what describes tokens (``bos_token_id``, ``token_count``) or where a secret
#: is kept (``HF_TOKEN_PATH``), not a secret itself.
_NOT_SECRET_AFTER_TOKEN = {
    "ID",
    "IDS",
    "TYPE",
    "TYPES",
    "COUNT",
    "COUNTS",
    "LEN",
    "LENGTH",
    "LENGTHS",
    "LIMIT",
    "BUDGET",
    "INDEX",
    "INDICES",
    "LEVEL",
    "LOGPROB",
    "LOGPROBS",
    "PROBS",
    "SIZE",
    "USAGE",
    "RATE",
    "BYTES",
    "PER",
    "POS",
    "POSITION",
    "ENTROPY",
    "LOSS",
    "WISE",
    "PATH",
    "FILE",
    "DIR",
}
#: Before ``KEY``: lookup keys (``sort_key``, ``cache_key``), not keys that open anything.
_NOT_SECRET_BEFORE_KEY = _MEASURES | {
    "SORT",
    "CACHE",
    "PRIMARY",
    "FOREIGN",
    "DICT",
    "GROUP",
    "PARTITION",
    "LOOKUP",
    "HASH",
    "ROUTING",
    "PUBLIC",
    "FEATURE",
    "COLUMN",
    "FIELD",
    "DATASET",
    "TEXT",
    "PROMPT",
    "REWARD",
    "CONFIG",
    "MONITOR",
    "METRIC",
    "LABEL",
    "INPUT",
    "OUTPUT",
    "MAPPING",
    "SHARD",
    "LOG",
    "PREFIX",
}
_QUERY_SECRET = {
    "KEY",
    "TOKEN",
    "SIG",
    "SIGNATURE",
    "PASSWORD",
    "PASS",
    "PWD",
    "SECRET",
    "AUTH",
    "CODE",
    "CREDENTIAL",
    "SESSION",
    "SID",
}
_CAMEL = _Lazy(r"(?<=[a-z0-9])(?=[A-Z])")
_SPLIT = _Lazy(r"[^A-Za-z0-9]+")


def _parts(name: str) -> list[str]:
    return [p for p in _SPLIT.split(_CAMEL.sub("_", name).upper()) if p]


def _token_part(parts: list[str], i: int) -> bool:
    before = parts[i - 1] if i else ""
    after = parts[i + 1] if i + 1 < len(parts) else ""
    return before not in _NOT_SECRET_BEFORE_TOKEN and after not in _NOT_SECRET_AFTER_TOKEN


@lru_cache(maxsize=4096)
def is_secret(name: str) -> bool:
    """Whether a variable / option / key name holds a secret (``HF_TOKEN``, ``--api-key``,
    ``WANDB_API_KEY``, ``apiKey``, ``PGPASSWORD``, ``MYSQL_PWD``, ``jsessionid``), not a
    measurement or tokenizer setting (``kv_bytes_per_token``, ``max_tokens``, ``pad_token``)
    nor a lookup key (``key``, ``sort_key``)."""
    if len(name) > 200:
        return False
    parts = _parts(name)
    for i, part in enumerate(parts):
        if part == "TOKEN":
            if _token_part(parts, i):
                return True
        elif part in _SECRET_PARTS:
            return True
        elif part == "PWD":  # MYSQL_PWD, DB_PWD; the shell's PWD / OLDPWD are folders
            if i and parts[i - 1] != "OLD":
                return True
        elif part == "KEY":  # API_KEY, SSH_KEY, NCCL_IB_KEY; a bare ``key`` is not
            if i and parts[i - 1] not in _NOT_SECRET_BEFORE_KEY:
                return True
        elif part == "KEYS":  # API_KEYS, not script_keys or sort_keys
            if i and parts[i - 1] in ("API", "ACCESS", "SECRET", "PRIVATE", "SSH"):
                return True
        else:
            suffix = next((s for s in _SECRET_SUFFIXES if part.endswith(s)), None)
            if suffix is None:
                continue
            if suffix != "TOKEN" or _token_part(
                [*parts[:i], part[: -len(suffix)], "TOKEN", *parts[i + 1 :]], i + 1
            ):
                return True
    return False


def mask_argv(argv: list[str]) -> list[str]:
    """A command line's words with the values of secret options masked word by word, before
    anything joins them: ``--api-key 'a b'`` keeps no part of ``a b`` (joined first, only its
    first word would be recognised as the value)."""
    out = list(argv)
    for i, word in enumerate(argv):
        if not word.startswith("-") or word == "-":
            continue
        name, eq, _value = word.lstrip("-").partition("=")
        if not is_secret(name):
            continue
        if eq:
            out[i] = word[: len(word) - len(_value)] + MASK
        elif i + 1 < len(argv) and not argv[i + 1].startswith("--"):
            out[i + 1] = MASK
    return out


def _query_secret(name: str) -> bool:
    return is_secret(name) or any(p in _QUERY_SECRET for p in _parts(name))


# ------------------------------------------------------------------------ token shapes
_WORD = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-")


def _token_starts(text: str, i: int) -> bool:
    """Whether a token may start at ``i``: after a character that cannot continue it, or after
    a repr() escape (``'\\x07hf_…'``, ``'\\nhf_…'``: the escape is one character of the text
    it stands for)."""
    return i == 0 or text[i - 1] not in _WORD or _escape_ends_at(text, i)


#: (Each pattern opens with a look-ahead at its possible first characters: ``re`` then skips
#: most positions at once, several times faster on long text.)
_TOKENS = _Lazy(
    r"(?=[hagAsxlw])(?:"
    r"hf_[A-Za-z0-9]{30,}"  # Hugging Face user / org tokens
    r"|api_org_[A-Za-z0-9]{30,}"  # legacy Hugging Face org tokens
    r"|gh[pousr]_[A-Za-z0-9]{30,}"  # GitHub classic tokens
    r"|github_pat_[A-Za-z0-9_]{30,}"  # GitHub fine-grained tokens
    r"|(?:AKIA|ASIA|AGPA|AIDA|AROA|ANPA)[0-9A-Z]{16}(?![0-9A-Z])"  # AWS access key ids
    r"|sk-[A-Za-z0-9_\-]{20,}"  # OpenAI-style (sk-, sk-proj-, sk-ant-)
    r"|xox[abposr]-[A-Za-z0-9\-]{10,}"  # Slack
    r"|local-[0-9a-f]{40}"  # W&B keys of self-hosted servers
    r"|wandb_v1_[A-Za-z0-9_]{20,}"  # W&B's longer keys
    r")"
)
#: What each token above starts with: a text without any holds none (its pattern is not run).
_TOKEN_HINTS = (
    "hf_",
    "api_org_",
    "ghp_",
    "gho_",
    "ghu_",
    "ghs_",
    "ghr_",
    "github_pat_",
    "AKIA",
    "ASIA",
    "AGPA",
    "AIDA",
    "AROA",
    "ANPA",
    "sk-",
    "xox",
    "local-",
    "wandb_v1_",
)
#: HTTP bearer tokens and basic credentials (the span of group 1).
_AUTH_SCHEME = _Lazy(r"[Bb](?:earer ([A-Za-z0-9._~+/\-]{8,}=*)|asic ([A-Za-z0-9+/]{8,}=*))")

# ------------------------------------------------------------------------------- URLs
_QUERY = _Lazy(r"([?&;])([A-Za-z0-9_.\-]{1,100})=([^&;\s#'\"<>`]*)")
_URL_END = _Lazy(r"[\s'\"<>`]")
#: What may stand right before a scheme-relative ``//user:pw@host``.
_BEFORE_SLASHES = " \t\n'\"(<[=,`"
#: ``user:password@host`` without a scheme (``bob:pw@10.0.0.1``, ``DB=bob:pw@db.example``):
#: the host must look like one (an IPv4 / IPv6 address, localhost or a dotted name, followed by a
#: port, a path or the word's end), so ``image:tag@sha256:…`` and ``a:b@c`` stay.
_BARE_USERINFO = _Lazy(
    r"(?<![A-Za-z0-9._%+~/:@\\-])[A-Za-z0-9._%+~-]{1,64}:(?!//)([^\s'\"<>`]{1,256}?)@(?="
    r"(?:\d{1,3}(?:\.\d{1,3}){3}|\[[0-9A-Fa-f:.]{2,45}\]|localhost"
    r"|[A-Za-z0-9-]{1,63}(?:\.[A-Za-z0-9-]{1,63})+)(?::\d{1,5})?(?:[/?#\s'\"<>`),;]|$))"
)


def _mask_urls(text: str) -> list[tuple[int, int]]:
    """Spans of the user information of every ``scheme://…@host`` and ``//…@host``: everything
    up to the last ``@`` of the URL's word (a password may hold ``/`` or ``@``; a ``/`` before
    any ``:`` means a path followed by a git ref, which is kept)."""
    spans = []
    pos = 0
    while True:
        i = text.find("//", pos)
        if i < 0:
            break
        start = i + 2
        m = _URL_END.search(text, start)
        end = m.start() if m else len(text)
        pos = end  # the rest of this URL's word is not scanned for another '//' again
        if not (i == 0 or text[i - 1] == ":" or text[i - 1] in _BEFORE_SLASHES):
            pos = start
            continue
        at = text.rfind("@", start, end)
        info = text[start:at] if at > start else ""
        slash = info.find("/")
        if slash >= 0 and ":" not in info[:slash]:
            continue  # git+https://github.com/o/r@v1.0: a path then a ref, not user information
        if info:
            spans.append((start, at))
    if "@" in text:
        spans += [(m.start(), m.end() - 1) for m in _BARE_USERINFO.finditer(text)]
    return spans


def _mask_query(text: str) -> list[tuple[int, int]]:
    if "=" not in text or not ("?" in text or "&" in text or ";" in text):
        return []
    return [m.span(3) for m in _QUERY.finditer(text) if m.group(3) and _query_secret(m.group(2))]


# ------------------------------------------------------------------------ assignments
_HINT = _Lazy(
    r"(?=[TtSsPpKkCcAa])(?i:token|secret|passw|pwd|key|credential|passphrase|"
    r"authorization|cookie|sessid|sessionid)"
)
_NAME_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-.")
#: An unquoted value ends at white space or one of these.
_VALUE_STOP = frozenset(",;&|}])\"'`<>")
_REPR_ESCAPE = _Lazy(r"\\(?:[abfnrtv0]|x[0-9a-fA-F]{2}|u[0-9a-fA-F]{4})\Z")
_REPR_ESCAPE_AT = _Lazy(r"\\(?:[abfnrtv0]|x[0-9a-fA-F]{2}|u[0-9a-fA-F]{4})")


def _escape_ends_at(text: str, i: int) -> bool:
    """Whether a repr() escape (``\\n``, ``\\x1b``, ``\\u202e``) ends right before ``i``: the
    name after it starts at ``i`` (``'\\ntoken=…'`` names ``token``)."""
    return bool(_REPR_ESCAPE.search(text, max(0, i - 6), i))


def _shell_word_end(text: str, i: int, eol: int) -> int:
    """End of a shell word starting with a quote at ``i``: quoted and unquoted pieces run
    together (``'ab'"'"'cd'`` is what ``shlex.join`` makes of ``ab'cd``); a quote that never
    closes on its line runs to the end of the line."""
    n = i
    while n < eol and not text[n].isspace():
        c = text[n]
        if c in "\"'":
            close = text.find(c, n + 1, eol)
            if close < 0:
                return eol
            n = close + 1
        elif c in _VALUE_STOP:
            break
        else:
            n += 1
    return n


def _masked_already(text: str, k: int, eol: int) -> bool:
    """Whether the value at ``k`` is one an earlier pass masked: ``****`` or ``"****"`` as a
    whole word, ended by white space, the line's end, a delimiter or an escape the text report
    wrote (``HF_TOKEN=****\\nexport A=1``). ``"****"hunter2`` (a shell word that goes on) and
    ``****\\hunter2`` are not: their rest is masked as the value's."""
    q = text[k] if text[k] in "\"'" else ""
    if not text.startswith(f"{q}{MASK}{q}", k):
        return False
    after = k + len(MASK) + 2 * len(q)
    if after >= eol or text[after].isspace():
        return True
    if text[after] in _VALUE_STOP and text[after] not in "\"'":
        return True
    return bool(_REPR_ESCAPE_AT.match(text, after))


def _value_span(text: str, k: int, header: str = "") -> tuple[int, int] | None:
    """The span to mask of the value starting at ``k``: inside a lone quoted string, a whole
    quoted shell word, an unquoted run up to white space or a delimiter; a header's value (``header``
    names the quote the header stands in, if any) runs to the end of its line."""
    n = len(text)
    if k >= n:
        return None
    eol = text.find("\n", k)
    eol = n if eol < 0 else eol
    if header and text[k] not in "\"'":
        close = text.find(header, k, eol) if header in ("'", '"') else -1
        end = close if close >= 0 else eol
        return (k, end) if end > k else None
    if _masked_already(text, k, eol):
        return None  # ``"****"``, ``****\\n``: masked by an earlier pass, the word ends there
    if text[k] in "\"'":
        end = _shell_word_end(text, k, eol)
        close = text.find(text[k], k + 1, eol)
        if end == close + 1:  # one quoted string: keep its quotes
            return (k + 1, close) if close > k + 1 else None
        if end == eol and close < 0:  # a quote that never closes: the rest of the line
            return (k + 1, eol) if eol > k + 1 else None
        return k, end
    j = k
    while j < eol and not text[j].isspace() and text[j] not in _VALUE_STOP:
        j += 1
    return (k, j) if j > k else None


def _mask_assignments(text: str) -> list[tuple[int, int]]:
    """Spans of the value after each secret-named ``NAME=value``, ``NAME = value``,
    ``NAME: value``, ``--name value``, ``--name=value``, ``"name": "value"``, and of a secret
    header's value (``Authorization: token …``, ``Cookie: …``)."""
    spans: list[tuple[int, int]] = []
    scanned = 0  # hints before this index were handled
    n = len(text)
    escapes = "\\" in text
    for m in _HINT.finditer(text):
        if m.start() < scanned:
            continue
        s = m.start()
        while (
            s > max(scanned, m.start() - 200)
            and text[s - 1] in _NAME_CHARS
            and not (escapes and _escape_ends_at(text, s))
        ):
            s -= 1
        e = m.end()
        while e < n and e - s <= 200 and text[e] in _NAME_CHARS:
            e += 1
        scanned = e
        name = text[s:e]
        option = name.startswith("-")
        bare = name.lstrip("-")
        if not option:  # ``cfg.hub_token = …`` names hub_token; ``a.key == …`` names key
            bare = bare.rsplit(".", 1)[-1]
        if not is_secret(bare):
            continue
        j = e
        if j < n and text[j] in "\"'" and not option:
            j += 1  # the closing quote of a quoted key
        k = j
        while k < n and text[k] in " \t":
            k += 1
        if text.startswith("==", k):
            continue  # a comparison (``if a.token == b``), not an assignment
        if k < n and (text[k] == "=" or text[k] == ":" and not option):
            k += 1
        elif not (option and k > j and k < n and text[k] not in "-\n"):
            continue  # ``--hub_token value`` only; ``the token expired`` is prose
        while k < n and text[k] in " \t":
            k += 1
        parts = _parts(bare)
        header = ""
        if "AUTHORIZATION" in parts or "COOKIE" in parts:
            if text.startswith(MASK, k):
                continue  # masked already (the last pass over a report): the rest is not its
            header = text[s - 1] if s and text[s - 1] in "\"'" else "\n"
        span = _value_span(text, k, header)
        if span:
            spans.append(span)
            scanned = max(scanned, span[1])
    return spans


# ---------------------------------------------------------------- commands and prose
#: ``mysql -pSECRET`` (the password glued to ``-p``), only on a mysql client's command line.
_MYSQL = _Lazy(r"(?<![\w-])mysql(?:dump|admin|import|show|check|slap|sh)?(?![\w-])")
_MYSQL_P = _Lazy(r"(?<=\s)-p(?=[^\s-])")
#: How far after ``mysql`` its options are looked for (a command line, not a whole log).
_MYSQL_LINE = 2000
#: ``… logged in with key SECRET`` (wandb), ``wandb login SECRET``, ``wandb.login(key=SECRET)``.
_KEY_PROSE = _Lazy(
    r"(?=[WwUuLl])(?i:(?<![\w-])(?:(?:with|using)[ \t]+(?:(?:the|an?|api)[ \t]+){0,2}key[ \t]+"
    r"|wandb[ \t]+login(?:[ \t]+--?[a-z-]{1,20})*[ \t]+"
    r"|login\([^)\n]{0,200}?(?<![\w-])key[ \t]*=[ \t]*))"
)
_KEYLIKE = _Lazy(r"[\"']?[A-Za-z0-9_.\-]*[0-9][A-Za-z0-9_.\-]*")
#: ``… password SECRET …`` in prose (a log line, an error message): the word after it is masked
#: unless it is a plain lower-case word (``password authentication failed``, ``the password
#: is wrong`` stay as they are).
_PASSWORD_PROSE = _Lazy(r"(?i)(?<![\w-])(?:password|passwd|passphrase)[ \t]+(?=[^\s=:])")
_PLAIN_WORD = _Lazy(r"[a-z]+[.,;:!?)]*")


def _mask_commands(text: str) -> list[tuple[int, int]]:
    spans = []
    if "mysql" in text:
        done = 0  # the command line of a mysql before this index was read
        for m in _MYSQL.finditer(text):
            if m.start() < done:
                continue
            stop = min(len(text), m.end() + _MYSQL_LINE)
            for c in "\n;&|":
                i = text.find(c, m.end(), stop)
                stop = i if i >= 0 else stop
            done = stop
            for p in _MYSQL_P.finditer(text, m.end(), stop):
                span = _value_span(text, p.end())
                if span:
                    spans.append(span)
    if "ass" in text or "ASS" in text:
        for m in _PASSWORD_PROSE.finditer(text):
            if not _PLAIN_WORD.fullmatch(text, m.end(), _word_end(text, m.end())):
                span = _value_span(text, m.end())
                if span:
                    spans.append(span)
    for m in _KEY_PROSE.finditer(text):
        value = _KEYLIKE.match(text, m.end())
        if value and value.end() - m.end() >= 8 or text[m.end() : m.end() + 1] in ("'", '"'):
            span = _value_span(text, m.end())
            if span:
                spans.append(span)
    return spans


def _word_end(text: str, i: int) -> int:
    while i < len(text) and not text[i].isspace():
        i += 1
    return i


# -------------------------------------------------------------------------- the pass
#: Text without any of these cannot hold a secret the passes below would find (fast path).
#: Looked for with ``in`` on the lowered text: a regex alternation of them under ``(?i)`` ran
#: at about 1.7 µs a character on text holding none (a 64 MiB snapshot of long ``env`` values:
#: over a minute), ``str.lower`` and ``in`` at a few ns.
_ANY_MARKS = ("//", "=", ":", "?", "&", ";", "@")
_ANY_WORDS = (
    "hf_",
    "api_org_",
    "ghp_",
    "gho_",
    "ghu_",
    "ghs_",
    "ghr_",
    "github_pat_",
    "akia",
    "asia",
    "agpa",
    "aida",
    "aroa",
    "anpa",
    "sk-",
    "xox",
    "local-",
    "wandb",
    "bearer ",
    "basic ",
    "token",
    "secret",
    "passw",
    "pwd",
    "key",
    "credential",
    "passphrase",
    "authorization",
    "cookie",
    "sessid",
    "sessionid",
    "mysql",
)
#: What :func:`_mask_assignments` looks for (``_HINT``): text holding none of them has no
#: secret-named name.
_HINT_WORDS = (
    "token",
    "secret",
    "passw",
    "pwd",
    "key",
    "credential",
    "passphrase",
    "authorization",
    "cookie",
    "sessid",
    "sessionid",
)


def _folded(text: str) -> str:
    """``text`` as the ``(?i)`` patterns here see it: lowered, and the four non-ASCII letters
    ``re`` matches to an ASCII one under ``IGNORECASE`` (İ ı ſ K) written as that letter."""
    if text.isascii():
        return text.lower()
    return text.casefold().replace("\u0131", "i").replace("i\u0307", "i")


def _lowered_if_any(text: str) -> str | None:
    """``text`` lowered when it holds a mark or a word a secret may stand by, else None."""
    if any(mark in text for mark in _ANY_MARKS):
        return _folded(text)
    low = _folded(text)
    return low if any(word in low for word in _ANY_WORDS) else None


def _apply(text: str, spans: list[tuple[int, int]]) -> str:
    if not spans:
        return text
    merged: list[list[int]] = []
    for start, end in sorted(spans):
        if merged and start <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], end)
        else:
            merged.append([start, end])
    out, pos = [], 0
    for start, end in merged:
        out.append(text[pos:start])
        out.append(MASK)
        pos = end
    out.append(text[pos:])
    return "".join(out)


def redact(text: str, known: Iterable[str] = ()) -> str:
    """``text`` with every secret it shows masked (see the module's docstring)."""
    if not text:
        return text
    low = _lowered_if_any(text)
    if low is not None:
        spans = [*_mask_urls(text), *_mask_query(text), *_mask_commands(text)]
        if any(hint in text for hint in _TOKEN_HINTS):
            spans += [m.span() for m in _TOKENS.finditer(text) if _token_starts(text, m.start())]
        if "earer " in text or "asic " in text:
            spans += [m.span(1) if m.group(1) else m.span(2) for m in _AUTH_SCHEME.finditer(text)]
        text = _apply(text, spans)
        if any(word in low for word in _HINT_WORDS):
            text = _apply(text, _mask_assignments(text))
    if known:
        for secret in _global(tuple(known)):
            text = text.replace(secret, MASK)
    return text


@lru_cache(maxsize=64)
def _global(known: tuple[str, ...]) -> tuple[str, ...]:
    return tuple(sorted({k for k in known if len(k) >= MIN_GLOBAL}, key=len, reverse=True))


# ------------------------------------------------------------------ control characters
#: C0 / C1 controls but newline and tab, bidirectional marks and overrides, line and paragraph
#: separators, lone surrogates and non-characters: never written raw.
_CONTROLS = (
    "\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2028\u2029"
    "\u2066-\u2069\ud800-\udfff\ufffe\uffff"
)
_CONTROL = _Lazy(f"[{_CONTROLS}]")
#: The same and newlines: a value shown on one line (a path, a name, a message).
_CONTROL_NL = _Lazy(f"[\n{_CONTROLS}]")
_NAMED = {"\n": "\\n"}


def _escape(m: re.Match[str]) -> str:
    char = m.group(0)
    if char in _NAMED:
        return _NAMED[char]
    code = ord(char)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def escape_controls(text: str, newlines: bool = False) -> str:
    """Control characters (ESC, BEL, CR, NUL…), bidirectional overrides and lone surrogates
    written as ``\\x1b`` / ``\\u202e``: a snapshot cannot drive the terminal, and the text is
    valid in XML. Tabs stay; newlines stay unless ``newlines`` (then ``\\n``: a value never
    starts a line of its own). A printable text holds none of them (tests/test_hostile_redact.py)."""
    if text.isprintable():
        return text
    return (_CONTROL_NL if newlines else _CONTROL).sub(_escape, text)


_ESCAPED = _Lazy(r"\\(?:n|x([0-9a-f]{2})|u([0-9a-f]{4}))")


def unescape_controls(text: str) -> str:
    """The characters :func:`escape_controls` wrote as escapes, back (for a file's URI: the
    real name, percent-encoded); every other backslash stays."""

    def back(m: re.Match[str]) -> str:
        hexa = m.group(1) or m.group(2)
        char = "\n" if hexa is None else chr(int(hexa, 16))
        return char if _CONTROL_NL.fullmatch(char) else m.group(0)

    return _ESCAPED.sub(back, text) if "\\" in text else text


_SGR_OR_CONTROL = _Lazy("\x1b\\[[0-9;]{0,20}m|" + _CONTROL.pattern)


def _escape_keep_color(m: re.Match[str]) -> str:
    return m.group(0) if len(m.group(0)) > 1 else _escape(m)


_JSON_STRING = _Lazy(r'"(?:[^"\\]|\\.)*"')


def _json_string(m: re.Match[str]) -> str:
    import json

    try:
        value = json.loads(m.group(0))
    except ValueError:
        return m.group(0)
    masked = escape_controls(redact(value))
    return m.group(0) if masked == value else json.dumps(masked)


def _xml(text: str) -> str:
    """An XML document with every attribute and text redacted and escaped (attributes on one
    line); one that does not parse is escaped as text, which makes it well-formed."""
    import xml.etree.ElementTree as ET

    try:
        root = ET.fromstring(text)  # noqa: S314 - envdoctor's own output, no DTD
    except ET.ParseError:
        return _CONTROL.sub(_escape, redact(text))
    for node in root.iter():
        for key, value in node.attrib.items():
            node.set(key, escape_controls(redact(value), newlines=True))
        if node.text:
            node.text = escape_controls(redact(node.text))
        if node.tail:
            node.tail = escape_controls(redact(node.tail))
    return '<?xml version="1.0" encoding="utf-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"


def output_text(text: str) -> str:
    """The last pass on text about to be printed or written (``emit``): secrets masked,
    control characters escaped except the colour codes the text report paints with. JSON is
    redacted and escaped string by string (it stays valid JSON); XML attribute by attribute and
    text by text (it stays well-formed)."""
    start = text.lstrip()[:5]
    if start.startswith(("{", "[")):
        return _JSON_STRING.sub(_json_string, text)
    if start == "<?xml":
        return _xml(text)
    return _SGR_OR_CONTROL.sub(_escape_keep_color, redact(text))


def cut(text: str, limit: int) -> str:
    """``text`` redacted, then cut to at most ``limit`` characters (``…`` at the cut): a cut
    before the redaction could leave part of a secret too short to be recognised
    (``hf_CANARYhfa1B…``). Only the first ``4 × limit`` characters are read, up to their last
    white space, when there is one (a word cut there is never shown)."""
    window = text[: 4 * limit]
    if len(text) > len(window):
        space = max(window.rfind(" "), window.rfind("\t"), window.rfind("\n"))
        if space > 0:
            window = window[:space]
    shown = redact(window)
    if len(shown) > limit or len(window) < len(text):
        shown = shown[: max(limit - 1, 0)] + "…"
    return shown


def clean(
    text: str, known: Iterable[str] = (), escape: bool = True, limit: int = MAX_SHOWN, newlines: bool = True
) -> str:
    """The whole pass on one string: redact, cut to ``limit`` characters, escape (newlines
    too unless ``newlines`` is off: a message or a name stays on its line). Only the first
    ``4 × limit`` characters are redacted: the rest is cut anyway, so a secret cut in two there
    is never shown."""
    head = redact(text[: 4 * limit], known)
    if len(text) > 4 * limit or len(head) > limit:
        head = f"{head[:limit]}… (cut: {len(text):,} characters in all)"
    return escape_controls(head, newlines) if escape else head


@lru_cache(maxsize=65536)
def _clean_short(text: str, known: tuple[str, ...], escape: bool, limit: int, newlines: bool) -> str:
    return clean(text, known, escape, limit, newlines)


def scrub(
    value: Any, known: Iterable[str] = (), escape: bool = True, limit: int = MAX_SHOWN, newlines: bool = True
) -> Any:
    """``value`` with :func:`clean` applied to every string inside it (dict keys, lists,
    dataclasses); other values unchanged."""
    known = tuple(known)
    if isinstance(value, enum.Enum):
        return value
    if isinstance(value, str):
        if len(value) <= 256:  # tables repeat their cells: 30,000 GPUs, three distinct rows
            return _clean_short(value, known, escape, limit, newlines)
        return clean(value, known, escape, limit, newlines)
    if isinstance(value, dict):  # a secret-named key hides its value, whatever it looks like
        return {
            scrub(k, known, escape, limit, newlines): MASK
            if _secret_item(k, v)
            else scrub(v, known, escape, limit, newlines)
            for k, v in value.items()
        }
    if isinstance(value, (list, tuple, set, frozenset)):
        items = [scrub(v, known, escape, limit, newlines) for v in value]
        return items if isinstance(value, (set, frozenset)) else type(value)(items)
    if is_dataclass(value) and not isinstance(value, type):
        changes = {
            f.name: scrub(getattr(value, f.name), known, escape, limit, newlines)
            for f in fields(value)
            if f.init and f.name != "secrets"
        }
        return replace(value, **changes)
    return value


def _secret_item(key: Any, value: Any) -> bool:
    return (
        isinstance(key, str)
        and isinstance(value, (str, int, float))
        and not isinstance(value, bool)
        and value != ""
        and is_secret(key)
    )


# --------------------------------------------------------------------- the plan's secrets
class _LaunchView(Protocol):
    """What ``plan_secrets`` reads of a ``plan.interface.Launch`` (a layer up)."""

    @property
    def env(self) -> dict[str, str]: ...
    @property
    def options(self) -> dict[str, Any]: ...
    @property
    def script_args(self) -> list[str]: ...


class PlanView(Protocol):
    """What ``plan_secrets`` reads of a ``plan.interface.Plan`` (a layer up)."""

    @property
    def launches(self) -> Sequence[_LaunchView]: ...
    @property
    def config(self) -> dict[str, Any]: ...


def plan_secrets(plan: PlanView) -> set[str]:
    """Values of secret-named variables, options and config keys of a ``Plan``: masked in the
    report wherever they stand (when at least ``MIN_GLOBAL`` characters long)."""
    from envdoctor.script_args import parse_script_args

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


def redact_report(report: Report, secrets: Iterable[str] = ()) -> None:
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


#: Formats that are data, not lines to read: a newline in a value stays a newline (the JSON
#: encoder writes it ``\n``, the same escape text shows).
_DATA_FORMATS = ("json",)


def safe_report(report: Report, fmt: str = "text") -> Report:
    """A copy of ``report`` ready to render in ``fmt``: every string redacted, cut, its
    control characters escaped as text shows them (``\x1b``, ``\u202e``), and its newlines
    (``\n``) in every format but JSON: no value starts a line of its own."""
    known = tuple(getattr(report, "secrets", ()))
    safe: Report = scrub(report, known, newlines=fmt not in _DATA_FORMATS)
    return safe
