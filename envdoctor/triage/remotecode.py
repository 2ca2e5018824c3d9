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
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Any

from envdoctor import versions
from envdoctor.findings import Finding, Severity
from envdoctor.triage.draft import Draft, Log

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
