"""Checkpoint tensors torch refused to copy, read by the parameter's role and the dimension that differs.

torch's ``Module.load_state_dict`` lists each refused tensor as ``size mismatch for P: copying a
param with shape A from checkpoint, the shape in current model is B`` under ``Error(s) in loading
state_dict for X:`` (transformers' ``from_pretrained`` and peft's adapter loading raise it or log
it). A pasted log breaks the list anywhere: a line wrap inside a record, a ``[rank0]:`` prefix on
each line, the message quoted as a JSON string (``\\n\\t`` between records). Each record is read
as its words read (prefixes off, escapes and whitespace runs one space), then by its parameter:

- a record a catalogue symptom reads (the vocabulary rows of ``embed_tokens`` / ``lm_head``, a
  classification head's labels: ``usage.yaml``): that entry's cause and fix (TRI011);
- an attention projection (``q_proj`` / ``o_proj``: the rows / columns; ``k_proj`` / ``v_proj``:
  the rows) where the model built here is square (hidden_size × hidden_size: its release derived
  the width from hidden_size) and the checkpoint's other dimension is that same hidden_size: the
  checkpoint was saved with a configuration field that sizes the projection (``head_dim``,
  ``num_key_value_heads``) and the installed transformers' model code does not read it (TRI038).
  The release that first reads it comes from ``config_fields_read`` (rules/knowledge/artifacts.yaml)
  for the model family ``X`` names: an error where the log shows a transformers before it, quiet
  where it shows one from it (the field is read: another cause), a warning otherwise.

Anything else (two dimensions differ, a packed or quantized shape) is not read: no finding.
Bounded: the log's head only, at most ``MAX_RECORDS`` records of ``WINDOW`` characters each.
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Any

from envdoctor import versions
from envdoctor.findings import Finding, Severity
from envdoctor.triage.draft import Draft, Log

RULE = "TRI038"
KEY = "size mismatch for "
MAX_RECORDS = 40
WINDOW = 700  # characters from a record's start: its parameter and two shapes, wrapped
_RECORD = re.compile(
    r"size mismatch for (?P<param>[\w.]{1,300}): copying a param with shape (?:torch\.Size\()?"
    r"\[(?P<checkpoint>[\d, ]{0,60})\]\)? from checkpoint, the shape in current model is "
    r"(?:torch\.Size\()?\[(?P<model>[\d, ]{0,60})\]\)?"
)
_OWNER = re.compile(r"Error\(s\) in loading state_dict for (?P<cls>[A-Za-z_]\w{0,200}):")
_ESCAPES = re.compile(r"\\[ntr]")
_PROJ = re.compile(r"(?:^|\.)(?P<proj>[qkvo]_proj)\.weight$")
_FAMILY = re.compile(r"(?:For[A-Z]\w*|Model|PreTrainedModel)$")
#: the field a projection's differing width reads, by projection
_FIELD = {
    "q_proj": "head_dim",
    "o_proj": "head_dim",
    "k_proj": "num_key_value_heads",
    "v_proj": "num_key_value_heads",
}


@lru_cache(maxsize=1)
def _rows() -> tuple[dict[str, Any], ...]:
    from envdoctor.resources import read_yaml, rules_dir

    doc = read_yaml(rules_dir() / "knowledge" / "artifacts.yaml") or {}
    return tuple(r for r in doc.get("config_fields_read") or () if isinstance(r, dict))


def _unwrap(window: str) -> str:
    """A record as its words read: each line's launcher prefix off, escapes and blanks one space."""
    from envdoctor.triage.scanner import split_prefix, squeeze

    lines = _ESCAPES.sub(" ", window).split("\n")
    return squeeze(" ".join(split_prefix(line)[0] for line in lines))


def _shape(text: str) -> tuple[int, ...]:
    return tuple(int(p) for p in text.replace(" ", "").split(",") if p.isdecimal())


class Record:
    """One refused tensor: its parameter, both shapes, the line it starts on, the model class."""

    def __init__(self, text: str, groups: dict[str, str], line_no: int, owner: str) -> None:
        self.text = text
        self.groups = groups
        self.param = groups["param"]
        self.checkpoint = _shape(groups["checkpoint"])
        self.model = _shape(groups["model"])
        self.line_no = line_no
        self.owner = owner


def records(head: bytes) -> list[Record]:
    """The size-mismatch records of the log's head, read across wraps (module docstring)."""
    if not head or KEY.encode() not in head:
        return []
    text = head.decode("utf-8", errors="replace")
    out: list[Record] = []
    start = 0
    for _ in range(MAX_RECORDS):
        at = text.find(KEY, start)
        if at < 0:
            break
        start = at + len(KEY)
        flat = _unwrap(text[at : at + WINDOW])
        m = _RECORD.match(flat)
        if m is None:
            continue
        before = text.rfind("in loading state_dict for ", max(0, at - 20000), at)
        owner = _OWNER.match(text, max(0, before - len("Error(s) "))) if before >= 0 else None
        line_no = text.count("\n", 0, at) + 1
        out.append(Record(m.group(0), m.groupdict(), line_no, owner["cls"] if owner else ""))
    return out


def _catalogue(rec: Record, log: Log) -> Draft | None:
    """A catalogue entry whose symptom the record is (the vocabulary rows, a head's labels)."""
    from envdoctor.triage import catalogue, classes
    from envdoctor.triage.interface import Match

    best: Draft | None = None
    for sig in catalogue.catalogue()[0]:
        if not any(k.decode("utf-8", errors="replace") in rec.text for k in sig.keywords):
            continue
        found = sig.pattern.search(rec.text)
        if found is None:
            continue
        groups = {k: v for k, v in found.groupdict().items() if v is not None}
        for d in classes.known_failure([Match(sig, rec.line_no, rec.text, groups, None)], log):
            if best is None or d.finding.severity.rank > best.finding.severity.rank:
                best = d
    return best


def _projection(rec: Record) -> tuple[str, str, int, int] | None:
    """(projection, field, the checkpoint's width, the model's) where the model's projection is
    square and only the width the field sizes differs; None where the reading is not unambiguous."""
    m = _PROJ.search(rec.param)
    ck, md = rec.checkpoint, rec.model
    if m is None or len(ck) != 2 or len(md) != 2 or md[0] != md[1] or ck == md:
        return None
    proj = m["proj"]
    out_dim = 1 if proj == "o_proj" else 0  # o_proj's input is the heads' width; the others' output
    if ck[1 - out_dim] != md[1 - out_dim]:
        return None  # the hidden size differs too: another model's checkpoint
    width, hidden = ck[out_dim], md[out_dim]
    if proj in ("k_proj", "v_proj") and (width >= hidden or hidden % width):
        return None  # fewer KV heads divide the width; more is not a grouped-query reading
    return proj, _FIELD[proj], width, hidden


def _attention(rec: Record, log: Log) -> Draft | None:
    read = _projection(rec)
    if read is None:
        return None
    proj, field, width, hidden = read
    family = _FAMILY.sub("", rec.owner) if rec.owner else ""
    row = next(
        (
            r
            for r in _rows()
            if r.get("family") == family and r.get("field") == field and proj in r.get("projections", ())
        ),
        None,
    )
    shown = log.versions.get("transformers")
    have = shown.version if shown is not None and shown.exact else ""
    first = str(row["first"]) if row is not None else ""
    if row is not None and have and versions.at_least(have, first):
        return None  # the log's release reads the field: the shapes differ for another reason
    sized = (
        "num_attention_heads × a head_dim of its own (config.head_dim)"
        if field == "head_dim"
        else "fewer key/value heads than query heads (config.num_key_value_heads: grouped-query attention)"
    )
    model_cls = rec.owner or "the model"
    what = (
        f"{rec.param}: the checkpoint holds {list(rec.checkpoint)}, the {model_cls} built here "
        f"{list(rec.model)}: the model's {proj} is hidden_size × hidden_size ({hidden}), the width its "
        f"transformers derives when it does not read config.{field}, while the checkpoint's {width} is "
        f"{sized}; the checkpoint was saved by a transformers whose model code reads config.{field}, and "
        f"the one that loads it builds the attention without it"
    )
    if row is not None:
        what += f" ({family} reads config.{field} from transformers {first}"
        what += (
            f"; the log shows transformers {have})" if have else "; the log shows no transformers version)"
        )
        fix = (
            f"pip install 'transformers>={first}' (the first release whose {family} attention reads "
            f"config.{field}; the checkpoint's config.json names the release that saved it: "
            f"transformers_version)"
        )
    else:
        fix = (
            f"install the transformers release that saved the checkpoint or a later one (its config.json's "
            f"transformers_version; one whose {family or 'model'} code reads config.{field}); or, where the "
            f"checkpoint is another architecture's, load it with its own class and config"
        )
    ev: dict[str, Any] = {
        "line": rec.line_no,
        "param": rec.param,
        "checkpoint": list(rec.checkpoint),
        "model": list(rec.model),
        "config_field": field,
        "model_class": rec.owner or None,
        "answer_from": "the state-dict reader (envdoctor/triage/statedict.py) and config_fields_read "
        "(rules/knowledge/artifacts.yaml)",
    }
    if row is not None:
        ev["references"] = list(row.get("references") or ())
    certain = row is not None and bool(have)  # the log's release is before the one that reads it
    severity = Severity.ERROR if certain else Severity.WARNING
    message = f"{what} (line {rec.line_no}): “{rec.text[:400]}”"
    return Draft(rec.line_no, Finding(RULE, severity, message, fix, ev))


def answer(head: bytes, log: Log) -> Draft | None:
    """The first size-mismatch record whose role reads unambiguously (module docstring), or None."""
    for rec in records(head):
        found = _catalogue(rec, log) or _attention(rec, log)
        if found is not None:
            return found
    return None
