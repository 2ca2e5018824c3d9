"""A model class that refuses gradient checkpointing, read against transformers' own class (TRI038).

transformers' ``PreTrainedModel.gradient_checkpointing_enable`` raises ``X does not support
gradient checkpointing.`` (5.x: ``activation checkpointing``) for a class whose
``supports_gradient_checkpointing`` is False; the model's own code sets it. The index
(``rules/knowledge/gradient_checkpointing.json.gz``, scripts/derive_gradient_checkpointing.py) says
per release read whether transformers' own ``X`` supports it:

- transformers' ``X`` supports it in every release read that has it, from ``R`` on: the ``X`` that
  refused is another code of that name, a model repository's remote code
  (``trust_remote_code=True``) written before it supported it, or a transformers before ``R``.
  An error where the log shows a frame under ``transformers_modules/`` (the remote code loaded) or
  a transformers from ``R`` on; a warning otherwise;
- ``X`` is no class of any release read: a model repository's (or a project's) own class; a
  warning, with transformers' release that has the model type natively where ``models.json.gz``
  names it (the class's family lowercased);
- transformers' own ``X`` refuses it in a release read: quiet (its own limit, not this reading).

A model's code calling transformers with an argument it no longer takes (``stale_call``):
``GenerationMixin._extract_past_from_model_output() got an unexpected keyword argument
'standardize_cache_format'`` (GLM-4's remote code on transformers 4.44). The message names the
method by the class that defines it; where that class is transformers' (the symbol history,
``rules/knowledge/symbols/transformers.json.gz``, has it with that method) and the call is not
transformers' own — a frame under ``transformers_modules/`` (a model repository's remote code), the
user's or a project's file, or no frame at all for a private method (only a model's code, which
subclasses transformers' classes, calls those) — the calling code was written for another
transformers release. Where the signature or symbol history knows the method's parameters per
release, structural.drift (before this) names the release that still took it; here the fix pins
transformers to the ``transformers_version`` of the model's ``config.json`` (the release the
repository saved its code with). An error for remote code shown (its frames, or ``trust_remote_code``
in the log) and for a private method (a model's code is what reaches into those). Quiet for a
public method without remote code shown (the user's own call: a misspelt keyword reads the same),
where the caller is another package of the stack (API drift between the two: structural.drift), and
where the class is no transformers class.
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Any

from envdoctor import versions
from envdoctor.findings import Finding, Severity
from envdoctor.triage.draft import Draft, Log, at_severity, finding, warning_line
from envdoctor.triage.interface import Match
from envdoctor.triage.traceback_model import Traceback

RULE = "TRI038"
_REFUSED = re.compile(
    r"\b(?P<cls>[A-Z]\w{0,150}) does not support (?P<what>gradient|activation) checkpointing"
)
_FAMILY = re.compile(r"(?:For[A-Z]\w*|LMHeadModel|Model)$")
KEY = b" does not support "
MAX_HITS = 20
SOURCE = "the gradient-checkpointing index (rules/knowledge/gradient_checkpointing.json.gz)"


#: the index's schema and the most bytes read of it (it is ~10 KB)
SCHEMA = "envdoctor.gradient_checkpointing/1"
MAX_BYTES = 1 << 20


@lru_cache(maxsize=1)
def _index() -> dict[str, Any]:
    """The index (bounded, its schema checked: ``knowledge.gzip_json.load``), or {} without one."""
    from envdoctor.knowledge.gzip_json import load
    from envdoctor.resources import rules_dir

    doc = load(rules_dir() / "knowledge" / "gradient_checkpointing.json.gz", SCHEMA, MAX_BYTES)
    if doc is None:
        return {}
    return {"releases": list(doc.get("releases") or ()), "classes": dict(doc.get("classes") or {})}


def _native_since(cls: str) -> str:
    """The first release read whose transformers has ``cls``, where every release read that has it
    supports gradient checkpointing; empty otherwise."""
    index = _index()
    marks = index.get("classes", {}).get(cls)
    if not marks or "n" in marks or "y" not in marks:
        return ""
    return str(index["releases"][marks.index("y")])


def _first(text: str) -> re.Match[str] | None:
    """The first refusal in ``text``, read in a window around each of at most ``MAX_HITS`` hits of
    its words (bounded on a hostile head)."""
    start = 0
    for _ in range(MAX_HITS):
        at = text.find(" does not support ", start)
        if at < 0:
            return None
        start = at + 1
        m = _REFUSED.search(text, max(0, at - 160), at + 60)
        if m is not None:
            return m
    return None


def answer(head: bytes, log: Log) -> Draft | None:
    """TRI038 for a refused gradient checkpointing (module docstring), or None."""
    if not head or KEY not in head:
        return None
    text = head.decode("utf-8", errors="replace")
    index = _index()
    m = _first(text)
    if m is None or not index:
        return None
    cls = m["cls"]
    marks = index["classes"].get(cls)
    since = _native_since(cls)
    if marks is not None and not since:
        return None  # transformers' own class refuses it in a release read: its own limit
    line_no = text.count("\n", 0, m.start()) + 1
    remote = "transformers_modules/" in text or "transformers_modules\\" in text
    shown = log.versions.get("transformers")
    have = shown.version if shown is not None and shown.exact else ""
    releases = index["releases"]
    if since:
        what = (
            f"{cls} refused gradient checkpointing (its supports_gradient_checkpointing is False), while "
            f"transformers' own {cls} supports it in every release envdoctor read from {since} on "
            f"({', '.join(r for r in releases if versions.at_least(r, since))}): the {cls} that refused is "
            f"another code of that name, a model repository's remote code loaded with trust_remote_code=True "
            f"and written before it supported gradient checkpointing"
            + ("; the log shows its frames under transformers_modules/" if remote else "")
            + (f"; the log shows transformers {have}" if have else "")
        )
        fix = (
            f"load the model without trust_remote_code (transformers>={since} builds its own {cls}, which "
            f"supports gradient checkpointing, where the repository's config.json names its model type: "
            f"a revision of the repository converted to transformers' format), or a revision whose own "
            f"code supports it; or train with gradient_checkpointing=False (more activation memory)"
        )
        certain = remote or (bool(have) and versions.at_least(have, since))
    else:
        family = _FAMILY.sub("", cls).lower()
        from envdoctor.triage.artifacts import native_since

        native = native_since(family)
        what = (
            f"{cls} refused gradient checkpointing (its supports_gradient_checkpointing is False) and is no "
            f"class of the transformers releases envdoctor read ({releases[0]} to {releases[-1]}): a model "
            f"repository's remote code (trust_remote_code=True) or a project's own model that does not "
            f"implement it"
        )
        fix = (
            "train with gradient_checkpointing=False (more activation memory), or a revision of the "
            "model's code that supports it"
        )
        if native:
            fix += (
                f"; or load it without trust_remote_code with transformers>={native}, which has the model "
                f"type '{family}' natively"
            )
        certain = False
    ev: dict[str, Any] = {
        "line": line_no,
        "model_class": cls,
        "package": "transformers",
        "answer_from": SOURCE,
        "references": [
            "https://github.com/huggingface/transformers/blob/v4.36.0/src/transformers/modeling_utils.py#L2030",
        ],
    }
    message = f"{what} (line {line_no}): “{m.group(0)}”"
    return Draft(line_no, Finding(RULE, Severity.ERROR if certain else Severity.WARNING, message, fix, ev))


# -- a model's code calling transformers with an argument it no longer takes -----------------------

_STALE = re.compile(
    r"^(?P<cls>[A-Z]\w{0,150})\.(?P<meth>\w{1,150})\(\) "
    r"got an unexpected keyword argument '(?P<kw>\w{1,150})'"
)
_REMOTE = ("transformers_modules/", "transformers_modules\\")


def stale_call(t: Traceback, m: Match, log: Log) -> Draft | None:
    """TRI038 for a model's (or project's) code calling a transformers method with an argument it
    does not take (module docstring), or None."""
    if t.name != "TypeError" or warning_line(m):
        return None
    found = _STALE.match(t.message.strip())
    if found is None:
        return None
    cls, meth, kw = found["cls"], found["meth"], found["kw"]
    from envdoctor.knowledge.symbol_history import history

    h = history("transformers")
    if h is None or not (h.member(cls, "a", meth)[0] or h.member(cls, "p", meth)[0]):
        return None  # no transformers class with that method
    caller = t.frames[-1] if t.frames else None
    path = caller.path.replace("\\", "/") if caller is not None else ""
    remote_frame = "transformers_modules/" in path
    if caller is not None and caller.package is not None and not remote_frame:
        return None  # a package's call (transformers' own, or another's: API drift, not a model's code)
    text = log.head[:262144].decode("utf-8", errors="replace") if log.head else ""
    remote = remote_frame or any(r in text for r in _REMOTE) or "trust_remote_code" in text
    private = meth.startswith("_") and not meth.startswith("__")
    if not private and not remote:
        return None  # a public method the user's code (or nothing shown) called: a keyword of theirs
    shown = log.versions.get("transformers")
    have = f"; the log shows transformers {shown.version}" if shown is not None and shown.exact else ""
    if remote_frame and caller is not None:
        who = f"the model repository's remote code ({caller.at})"
    elif caller is not None:
        who = f"the code at {caller.at} (yours or a project's)"
    else:
        who = (
            "code that is not transformers' own (a model repository's remote code loaded with "
            "trust_remote_code, whose classes subclass transformers' and call its private methods)"
        )
    what = (
        f"{who} calls transformers' {cls}.{meth}() with {kw}=, which the installed transformers' "
        f"{cls}.{meth} does not take: that code was written for another transformers release"
        + ("; the log shows trust_remote_code / transformers_modules" if remote and not remote_frame else "")
        + have
    )
    target = (
        "pip install transformers==<the transformers_version in the model's config.json>, the "
        "release the repository's code was saved with: the pin to try"
        if remote or caller is None
        else "the transformers release the project names (its requirements or README)"
    )
    fix = (
        f"pin transformers to the release that code was written for: {target}; or use a revision of "
        f"the model repository (or of the project) updated for your transformers"
    )
    d = finding(
        RULE,
        [m],
        log,
        what,
        fix,
        package="transformers",
        method=f"{cls}.{meth}",
        keyword=kw,
        answer_from="transformers' symbol history (rules/knowledge/symbols/transformers.json.gz)",
    )
    return at_severity(d, Severity.ERROR)
