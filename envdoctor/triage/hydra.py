"""Hydra / OmegaConf refusing a run's configuration (TRI012, the stack's config schema).

The RL stacks that configure runs with Hydra (verl, NeMo-RL, SkyRL, …) load their config into
OmegaConf's struct mode: a key the installed release's schema lacks, or a mandatory value left
unset (``???``), stops the run before anything starts. The shapes, as exception lines or as
Hydra's own lines without a traceback (``HYDRA_FULL_ERROR`` unset):

- ``ConfigAttributeError: Key 'c' is not in struct`` / ``ConfigKeyError: Key 'c' not in 'Y'`` /
  ``Missing key c`` (OmegaConf 2.1's)
  with ``full_key: a.b.c`` on the next lines: the schema has no such key;
- ``Could not override 'a.b.c'.`` (``ConfigCompositionException``), with Hydra's ``To append to
  your config use +a.b.c=…`` and the reason on the next lines: an override of a key the schema lacks;
- ``MissingMandatoryValue: Missing mandatory value: a.b.c``: a value the config requires.

The finding names the key path, what the message says, the stack where the log shows it, and the
fix by shape: a key not in struct is not in the installed release's config (renamed, removed, a
typo: check it against that release's config, or add it with ``+a.b.c=value`` when the code reads
it); a missing value is set on the command line (``a.b.c=…``).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from envdoctor.findings import Finding, Severity
from envdoctor.triage.draft import Draft, Log, finding
from envdoctor.triage.interface import Match
from envdoctor.triage.traceback import PACKAGES, Traceback

RULE = "TRI012"
_NOT_IN_STRUCT = re.compile(
    r"Key '(?P<key>[^'\s]{1,200})' (?:is )?not in (?:struct|'(?P<owner>[\w.]{1,200})')"
    r"|^Missing key (?P<bare>[\w.\[\]-]{1,200})$"
)
_MISSING = re.compile(r"Missing mandatory value: ?(?P<key>[\w.\[\]-]{1,300})")
_OVERRIDE = re.compile(r"Could not override '(?P<key>[\w.\[\]/@+~-]{1,300})'")
_FULL_KEY = re.compile(r"^\s*full_key: ?(?P<key>[\w.\[\]-]{1,300})\s*$")
_APPEND = re.compile(r"To append to your config use (?P<plus>\+[\w.\[\]/@-]{1,300}=\S{0,200})")
#: the exceptions OmegaConf and Hydra raise for these shapes
TYPES = ("ConfigAttributeError", "ConfigKeyError", "MissingMandatoryValue", "ConfigCompositionException")
#: how a log shows the stack that loaded the config: its module in a path or a ``python -m`` line
_STACKS = {
    "verl": "verl",
    "nemo_rl": "NeMo-RL",
    "skyrl_train": "SkyRL",
    "openrlhf": "OpenRLHF",
    "areal": "AReaL",
}
_STACK_IN_TEXT = re.compile(
    r"(?:^|[\s/\"'(=])(?P<m>verl|nemo[_-]rl|skyrl(?:[_-]train)?|openrlhf|areal)[/.]", re.IGNORECASE
)
_ALIASES = {"nemo-rl": "nemo_rl", "skyrl": "skyrl_train", "skyrl-train": "skyrl_train"}
MAX_LINES = 6  # lines after the message that carry its details (full_key, the override's advice)
MAX_HEAD_LINES = 20000


def _stack(tb: Traceback | None, texts: Sequence[str]) -> str:
    """The stack whose config it is, from the frames' packages or the log's paths and commands."""
    names = {PACKAGES[k]: v for k, v in _STACKS.items() if k in PACKAGES}
    if tb is not None:
        for t in tb.all():
            for f in t.frames:
                if f.package in names:
                    return names[f.package]
    for text in texts:
        m = _STACK_IN_TEXT.search(text)
        if m is not None:
            name = m.group("m").lower()
            return _STACKS[_ALIASES.get(name, name)]
    return ""


def _details(lines: Sequence[str]) -> tuple[str, str, str]:
    """``full_key``, Hydra's ``+a.b.c=…`` advice and the reason, from the lines after a message."""
    full, plus, reason = "", "", ""
    for line in lines[:MAX_LINES]:
        if m := _FULL_KEY.match(line):
            full = full or m.group("key")
        elif m := _APPEND.search(line):
            plus = plus or m.group("plus")
        elif not reason and (_NOT_IN_STRUCT.search(line) or _MISSING.search(line)):
            reason = line.strip()
    return full, plus, reason


def _draft(message: str, after: Sequence[str], m: Match, log: Log, stack: str, line_no: int) -> Draft | None:
    """The finding for the message ``message`` and the lines after it, or None."""
    full, plus, reason = _details(after)
    override = _OVERRIDE.search(message)
    said = message.strip()
    if override is not None and reason:
        said += f" {reason}"
    missing = _MISSING.search(said)
    struct = _NOT_IN_STRUCT.search(said)
    if override is None and missing is None and struct is None:
        return None
    if override is not None and struct is None and missing is None and not plus:
        return None  # an override refused for another reason (a config group, a type): not told here
    if missing is not None and struct is None and override is None:
        key = full or missing.group("key")
        what = f"the config needs a value for {key} and none was given (“{said[:300]}”)"
        fix = f"set it on the command line: {key}=<value> (or in the config file the run loads)"
    else:
        named = (struct.group("key") or struct.group("bare")) if struct else ""
        key = override.group("key") if override else full or named or ""
        plus = plus or f"+{key}=<value>"
        what = (
            f"the config schema of the installed release has no key {key}"
            + (f" (of {struct.group('owner')})" if struct is not None and struct.group("owner") else "")
            + f": “{said[:300]}”"
        )
        fix = (
            f"check {key} against the installed release's config: a key renamed, removed or misspelled "
            f"there is refused; correct it, or, when your code reads a key the config lacks, add it "
            f"with {plus}"
        )
    who = f"{stack}'s" if stack else "the"
    what = f"{who} Hydra/OmegaConf configuration refused the run's settings: {what}"
    d = finding(RULE, [m], log, what, fix, key=key, stack=stack or None, config="hydra")
    f = d.finding  # the schema refuses it on every start, whatever else: an error
    d.finding = Finding(f.rule, Severity.ERROR, f.message, f.fix, {**f.evidence, "line": line_no})
    return d


def _bodies(lines: Sequence[str]) -> list[str]:
    """The lines without their launcher / Ray / logger prefixes (``(TaskRunner pid=7) …``)."""
    from envdoctor.triage.scanner import clean, split_prefix

    return [split_prefix(clean(x[:4096].encode()))[0] for x in lines]


def _after(log: Log, line_no: int) -> list[str]:
    if not log.head or line_no <= 0:
        return []
    lines = log.head[: 1 << 20].decode("utf-8", "replace").split("\n")
    return _bodies(lines[line_no : line_no + MAX_LINES])


def config_error(tb: Traceback, t: Traceback, m: Match, log: Log) -> Draft | None:
    """TRI012 for an OmegaConf / Hydra exception ``t`` of ``tb``'s chain (module docstring)."""
    if t.name not in TYPES:
        return None
    line_no = t.line_no or m.line_no
    after = _after(log, line_no)
    message = t.message
    if t.name == "ConfigCompositionException":  # the reason is the exception it was raised from
        reason = next((c.message for c in reversed(tb.chain) if c.name in TYPES and c is not t), "")
        after = [reason, *after] if reason else after
    head = log.head[:65536].decode("utf-8", "replace") if log.head else ""
    return _draft(message, after, m, log, _stack(tb, [*m.context, head]), line_no)


def from_head(head: bytes, log: Log, m: Match | None) -> Draft | None:
    """Hydra's lines without a traceback (``Could not override 'a.b.c'.`` then its reason, or a
    missing mandatory value) in a log that fits in its head."""
    if not head or (b"Could not override '" not in head and b"Missing mandatory value" not in head):
        return None
    from envdoctor.triage.signatures import signatures

    lines = head.decode("utf-8", "replace").split("\n")[:MAX_HEAD_LINES]
    for i, line in enumerate(lines):
        if "Could not override '" not in line and "Missing mandatory value" not in line:
            continue
        at = m
        if at is None:
            sig = next((x for x in signatures() if x.id == "unrecognized-exception"), None)
            if sig is None:
                return None
            at = Match(sig, i + 1, line.strip()[:1000], {}, None, tuple(lines[max(0, i - 40) : i]))
        text = _bodies([line])[0].strip()
        text = text.split(": ", 1)[1] if re.match(r"^[\w.]{1,200}(?:Exception|Error|Value): ", text) else text
        after = _bodies(lines[i + 1 : i + 1 + MAX_LINES])
        found = _draft(text, after, at, log, _stack(None, lines[:2000]), i + 1)
        if found is not None:
            return found
    return None
