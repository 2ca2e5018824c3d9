"""A package of the stack refused a setting and said which one and which bound (TRI039).

Two shapes say it in the log's own words:

1. **Pydantic's validation block** (``pydantic_blocks``): "1 validation error for
   DeepSpeedZeroConfig / stage3_prefetch_bucket_size / Input should be a valid integer, got a
   number with a fractional part [type=int_from_float, input_value=15099494.4, …]", its header
   optional ("max_num_seqs / Input should be greater than or equal to 1 [type=greater_than_equal,
   input_value=0 …]"). The model names where its fields are set (``refused_settings.yaml``
   ``models``: DeepSpeed's models -> the DeepSpeed JSON's section; vLLM's config classes ->
   engine arguments); without a header the field itself must be a setting of the stack.
2. **A bound between named settings** on the failing exception's line: "A v1 is greater than B
   v2", "A (v1) must be <= B (v2)", "A v1 exceeds B v2", "A must be divisible by B", "A must be at
   least v".

A name counts only where envdoctor's knowledge has it as a setting of the stack (``setting``):
vLLM's engine arguments, TRL's GRPOConfig keys, transformers' TrainingArguments, PEFT's LoraConfig
fields, DeepSpeed's config keys. The refusal must be the log's failure: the failing exception's
line (or the block right after it), or — no exception line found — a block that is no warning's
text and after which the run did not go on. Then it is an error (the message states the cause); the
fix names the setting, where it is set, and a value that meets the bound where the message gives it.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from envdoctor.findings import Finding, Severity
from envdoctor.triage.draft import _WARNING, Draft, Log
from envdoctor.triage.interface import Match
from envdoctor.triage.pydantic_blocks import Block, FieldError, blocks
from envdoctor.triage.settings_known import Setting, _table, _vllm_classes, setting

RULE = "TRI039"
MAX_TEXT = 2000  # characters of a failing message read for a bound
AFTER = 8  # lines after the failing exception's line where its pydantic block may start


def _named(words: str) -> str:
    """A name as a message writes it ("max_lora_rank", "`max_num_seqs`", "tensor parallel size")
    as an identifier."""
    w = words.strip().strip("`'\"").rstrip(".,:")
    if re.fullmatch(r"[A-Za-z_][\w.]{0,80}", w):
        return w.rsplit(".", 1)[-1]
    return "_".join(w.lower().split()) if re.fullmatch(r"[A-Za-z]+(?: [A-Za-z]+){1,4}", w) else ""


# -- a bound stated in a sentence --------------------------------------------------------------------

_NUM = r"-?\d{1,15}(?:\.\d{1,12})?(?:[eE][+-]?\d{1,3})?"
_NAME = r"[`'\"]?(?P<G>[A-Za-z_][\w.]{1,80}|[A-Za-z]+(?: [A-Za-z]+){0,4}?)[`'\"]?"
_VAL = r"(?: ?\(?=? ?(?P<G>" + _NUM + r")\)?)?"
_A = _NAME.replace("<G>", "<a>") + _VAL.replace("<G>", "<va>")
_B = (
    r"(?:the )?(?:(?P<num>"
    + _NUM
    + r")\b|[`'\"]?(?P<b>[A-Za-z]+(?: [A-Za-z]+){1,4}(?!\w)|[A-Za-z_][\w.]{1,80})"
    r"[`'\"]?" + _VAL.replace("<G>", "<vb>") + ")"
)
_KINDS = (
    ("le", r"(?:is|are) (?:greater|larger|bigger|higher|more) than"),
    ("le", r"exceeds?"),
    (
        "le",
        r"(?:must|should|has to|needs to) (?:be )?(?:<=?|less than(?: or equal to)?|"
        r"smaller than(?: or equal to)?|at most|no (?:more|greater|larger) than|lower than|"
        r"not (?:exceed|be (?:greater|larger) than))",
    ),
    ("ge", r"(?:is|are) (?:less|smaller|lower|fewer) than"),
    (
        "ge",
        r"(?:must|should|has to|needs to) (?:be )?(?:>=?|greater than(?: or equal to)?|"
        r"larger than(?: or equal to)?|at least|no (?:less|smaller|fewer) than|not be (?:less|smaller) than)",
    ),
    ("div", r"(?:must|should|has to|needs to) be (?:evenly )?(?:divisible by|a multiple of)"),
)


def _numbered(pattern: str, i: int) -> str:
    """``pattern`` with its groups named for alternative ``i`` (a name stands once in a regex)."""
    return re.sub(r"\(\?P<(a|va|b|vb|num)>", lambda m: f"(?P<{m.group(1)}{i}>", pattern)


_BOUND = re.compile(
    "|".join(rf"(?P<k{i}>{_numbered(_A, i)} {verb} {_numbered(_B, i)})" for i, (_, verb) in enumerate(_KINDS))
)
_WORDS_OFF = {"input", "value", "it", "this", "that", "the value", "size", "number"}


@dataclass(frozen=True)
class Bound:
    """A bound a message states: ``a`` (its value ``va``) against ``b`` (its value ``vb``) or a
    number; ``kind``: a ≤ b ("le"), a ≥ b ("ge"), a divisible by b ("div")."""

    kind: str
    a: str
    va: str
    b: str
    vb: str
    text: str


def _num(x: str) -> float | None:
    try:
        return float(x)
    except ValueError:
        return None


def stated_bounds(text: str) -> list[Bound]:
    """The bounds ``text`` states between names (and values), in order."""
    out = []
    for m in _BOUND.finditer(text[:MAX_TEXT]):
        i = next(int(k[1:]) for k, v in m.groupdict().items() if v is not None and k.startswith("k"))
        a, va = m.group(f"a{i}") or "", m.group(f"va{i}") or ""
        num, b, vb = m.group(f"num{i}"), m.group(f"b{i}") or "", m.group(f"vb{i}") or ""
        if num:
            b, vb = "", num
        out.append(Bound(_KINDS[i][0], a, va, b, vb, m.group(0)))
    return out


def _int(x: str) -> str:
    n = _num(x)
    return str(int(n)) if n is not None and n == int(n) else x


def _bound_fix(bound: Bound, sa: Setting | None, sb: Setting | None) -> tuple[str, str] | None:
    """(the setting to change, how) for a stated bound; None where neither side is a setting."""
    if bound.kind == "le":
        if sb is not None and bound.va:
            return sb.name, f"set {sb.name} to {_int(bound.va)} or more"
        if sa is not None and bound.vb:
            return sa.name, f"set {sa.name} to {_int(bound.vb)} or less"
        if sa is not None or sb is not None:
            s = sa or sb
            assert s is not None
            return s.name, f"make {bound.a} no greater than {bound.b or bound.vb}"
    if bound.kind == "ge":
        if sa is not None and bound.vb:
            return sa.name, f"set {sa.name} to {_int(bound.vb)} or more"
        if sb is not None and bound.va:
            return sb.name, f"set {sb.name} to {_int(bound.va)} or less"
        if sa is not None or sb is not None:
            s = sa or sb
            assert s is not None
            return s.name, f"make {bound.a} at least {bound.b or bound.vb}"
    if bound.kind == "div":
        if sa is not None and bound.vb:
            return sa.name, f"set {sa.name} to a multiple of {_int(bound.vb)}"
        if (
            sb is not None
            and bound.va
            and (n := _num(bound.va)) is not None
            and n == int(n)
            and 0 < n < 10**7
        ):
            divisors = [d for d in range(1, min(int(n), 64) + 1) if int(n) % d == 0]
            return sb.name, f"set {sb.name} to a divisor of {int(n)} ({', '.join(map(str, divisors[:8]))}…)"
        if sa is not None or sb is not None:
            s = sa or sb
            assert s is not None
            return s.name, f"make {bound.a} divisible by {bound.b or bound.vb}"
    return None


def _known(words: str, tail: bool, log: Log, context: Sequence[str]) -> Setting | None:
    """The setting a name stands for: an identifier itself; words ("Total number of attention
    heads", "tensor parallel size (8)") by their last (``tail``) or first runs of two or more,
    the longest first."""
    n = _named(words)
    if not n or n.lower() in _WORDS_OFF:
        return None
    if "_" in words or " " not in words.strip():
        return setting(n, log=log, context=context)
    parts = n.split("_")
    runs = (
        [parts[i:] for i in range(len(parts) - 1)] if tail else [parts[:i] for i in range(len(parts), 1, -1)]
    )
    return next((x for r in runs if (x := setting("_".join(r), log=log, context=context)) is not None), None)


def _sentence(text: str, log: Log, context: Sequence[str]) -> tuple[Bound, Setting, str] | None:
    for bound in stated_bounds(text):
        sa = _known(bound.a, True, log, context)
        sb = _known(bound.b, False, log, context) if bound.b else None
        fix = _bound_fix(bound, sa, sb)
        if fix is None:
            continue
        s = sb if sb is not None and fix[0] == sb.name else sa
        if s is not None:
            return bound, s, fix[1]
    return None


# -- pydantic's words --------------------------------------------------------------------------------

_LIMIT = re.compile(
    r"Input should be (?P<rel>greater than or equal to|greater than|less than or equal to|less than|"
    r"a multiple of) (?P<n>" + _NUM + ")"
)


def _pydantic_fix(err: FieldError, s: Setting) -> str:
    """A value of ``s`` that meets pydantic's constraint, else the constraint in its words."""
    limit = _LIMIT.search(err.msg)
    if limit is not None:
        n, rel = _int(limit.group("n")), limit.group("rel")
        said = {
            "greater than or equal to": f"{n} or more",
            "greater than": f"more than {n}",
            "less than or equal to": f"{n} or less",
            "less than": f"less than {n}",
            "a multiple of": f"a multiple of {n}",
        }[rel]
        return f"set {s.name} to {said}"
    if err.type in ("int_from_float", "int_parsing", "int_type"):
        v = _num(err.value.strip("'\""))
        example = f" (e.g. {int(v)})" if v is not None else ""
        return f"set {s.name} to an integer{example}"
    said = err.msg.removeprefix("Input should be ").strip()
    return (
        f"set {s.name} to a value that is {said}"
        if err.msg.startswith("Input should be")
        else (f"change {s.name} as the message says")
    )


def _auto_fill(section: str, name: str) -> str:
    """Where a Hugging Face integration fills the key in for "auto" and a release casts it."""
    entry = (_table().get("auto_fills") or {}).get(f"{section}.{name}")
    if not isinstance(entry, dict):
        return ""
    since = entry.get("refused_since") or {}
    casts = " / ".join(f"{c['package']}>={c['version']}" for c in entry.get("cast_in") or [])
    return (
        f"; a value of \"auto\" is filled in as {entry.get('formula')} by transformers' / accelerate's "
        f"DeepSpeed integration, a float that {since.get('package')} >= {since.get('version')} "
        f'refuses: write an integer in the JSON in place of "auto", or upgrade the integration that '
        f"fills it ({casts} cast it to an integer), or keep {since.get('package')} below "
        f"{since.get('version')}, whose models still took the float"
    )


# -- the log's failure -------------------------------------------------------------------------------


def _raw(log: Log, line_no: int) -> str:
    lines = log.head.split(b"\n", line_no)
    return lines[line_no - 1].decode("utf-8", "replace")[:4096] if 0 < line_no <= len(lines) else ""


def _failing_block(log: Log, first: Match | None) -> Block | None:
    from envdoctor.triage.missing import went_on
    from envdoctor.triage.refusal import _lines

    lines = _lines(log)
    found = blocks(lines) if any("[type=" in x for x in lines) else []
    for b in found:
        if first is not None:
            if first.line_no <= b.start <= first.line_no + AFTER:
                return b
            continue
        if any(_WARNING.search(_raw(log, n)) for n in range(b.start, b.end + 1)):
            continue  # a warning's text: the run went on
        if went_on(log, b.end):
            continue
        return b
    return None


_VALUE_SAID = re.compile(r"^set \S+ to (?:an integer \(e\.g\. )?(?P<v>-?\d[\d.]*)(?:\)| or (?:more|less))")


def _where(fix: str, s: Setting) -> str:
    """``fix`` with where the run sets ``s``, the value it names written into the spellings
    (``LLM(max_lora_rank=64)``, ``vllm serve --max-lora-rank 64``)."""
    m = _VALUE_SAID.match(fix)
    where = s.where
    if m is not None:
        v = m.group("v")
        where = where.replace(f"{s.name}=…", f"{s.name}={v}").replace(f'"{s.name}": …', f'"{s.name}": {v}')
        flag = "--" + s.name.replace("_", "-")
        where = re.sub(rf"{re.escape(flag)}(?=\))", f"{flag} {v}", where)
    return f"{fix}, in {where}"


def _draft(line_no: int, what: str, fix: str, **evidence: Any) -> Draft:
    evidence = {"line": line_no, **{k: v for k, v in evidence.items() if v}}
    return Draft(line_no, Finding(RULE, Severity.ERROR, what, fix, evidence))


def _from_block(b: Block, log: Log, context: Sequence[str]) -> Draft | None:
    for err in b.errors:
        if not err.loc and err.type == "value_error" and (not b.model or b.model in _vllm_classes()):
            said = _sentence(err.msg, log, context)  # vLLM's model validator: a bound in its words
            if said is not None:
                _, named, fix = said
                what = (
                    f"vLLM refused the setting {named.name}: its config validation"
                    f"{' for ' + b.model if b.model else ''} says “{err.msg[:400]}” (line {err.line_no})"
                )
                return _draft(err.line_no, what, _where(fix, named), setting=named.name, model=b.model)
        if not err.loc:
            continue
        s = setting(err.field, b.model, log, context)
        if s is None:
            continue
        value = f" = {err.value}" if err.value and not err.value.startswith("ArgsKwargs") else ""
        model = f" for {b.model}" if b.model else ""
        name = {"deepspeed": "DeepSpeed", "vllm": "vLLM"}.get(s.package, s.package)
        what = (
            f"{name} refused the setting {err.loc}{value}: its config validation{model} says "
            f"“{err.msg[:400]}” [type={err.type}] (line {err.line_no})"
        )
        section = str(((_table().get("models") or {}).get(b.model) or {}).get("section", ""))
        fix = _where(_pydantic_fix(err, s), s) + (_auto_fill(section, s.name) if section else "")
        return _draft(err.line_no, what, fix, setting=s.name, model=b.model, type=err.type, value=err.value)
    return None


def refused_setting(head: bytes, log: Log, first: Match | None) -> Draft | None:
    """TRI039 (module docstring): the failing line's stated bound, or the failing pydantic block."""
    if not head:
        return None
    from envdoctor.triage.draft import logged_as_warning

    if first is not None and logged_as_warning(first):
        return None  # a warning's text: the run went on
    context = first.context if first is not None else ()
    b = _failing_block(log, first)
    if b is not None:
        d = _from_block(b, log, context)
        if d is not None:
            return d
    if first is None:
        return None
    from envdoctor.triage.raisesites import continuation

    text = " ".join([first.text.strip(), *(x.strip() for x in continuation(log, first.line_no, AFTER))])
    found = _sentence(text[:MAX_TEXT], log, context)
    if found is None:
        return None
    bound, s, fix = found
    name = {"deepspeed": "DeepSpeed", "vllm": "vLLM", "trl": "TRL", "peft": "PEFT"}.get(s.package, s.package)
    what = (
        f"The run's setting {s.name} ({name}'s) was refused: the failing line states the bound it breaks, "
        f"“{bound.text[:300]}” (line {first.line_no}): “{text[:500]}”"
    )
    return _draft(first.line_no, what, _where(fix, s), setting=s.name, bound=bound.kind)
