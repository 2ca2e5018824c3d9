"""A log cut inside a traceback whose deepest frame is a stack package's own guard (TRI012).

A pasted excerpt often ends before the exception's line; when the last frame shown is a stack
package's ``assert <condition>[, message]`` or ``raise SomeError(<literal message>)``, the log still
shows which check failed: the condition and the message name the options. The finding names the
package's check, those options (TRL's GRPOConfig keys, vLLM's engine fields with where the run sets
them, the package's own ``args.X``; else as written) and, where the message is shown and refuses
something, the refusal's wording (``refusal.package_refusal``). A warning: deeper frames may be
cut off. Quiet where the deepest frame is a call, the user's code, torch's or a data library's, or
where the guard is about resources (memory, timeouts) or the data.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from envdoctor.findings import Finding, Severity
from envdoctor.knowledge import knowledge
from envdoctor.triage.draft import Draft, Log, finding
from envdoctor.triage.interface import Match
from envdoctor.triage.traceback import PACKAGES, Frame, Traceback, _body

RULE = "TRI012"
_ASSERT = re.compile(r"^assert\b\s*(?P<rest>.{1,1500})$")
#: ``raise ValueError(…`` (a guard's own exception), not ``raise`` / ``raise e`` / ``raise … from e``
_RAISE = re.compile(
    r"^raise (?:[\w.]{1,100}\.)?(?P<type>ValueError|NotImplementedError|AssertionError|RuntimeError|"
    r"TypeError|[A-Z]\w{0,60}(?:Config|Configuration|Validation|Argument|Option)\w{0,20}Error)\((?P<rest>.{0,1500})$"
)
_STRING = re.compile(
    r"""(?P<prefix>(?<!\w)[rRfFbBuU]{0,2})(?P<q>"|')(?P<s>(?:\\.|(?!(?P=q)).){0,1000})(?P=q)"""
)
_UNCLOSED = re.compile(r"""(?P<prefix>(?<!\w)[rRfFbBuU]{0,2})(?P<q>"|')(?P<s>[^"']{1,1000})$""")
_PLACEHOLDER = re.compile(r"\{(?P<expr>[^{}]{1,200})\}")
_NAME = re.compile(r"\b(?:self\.)?(?P<path>(?:[A-Za-z_]\w{0,60}\.){0,4}[A-Za-z_]\w{0,80})(?P<call>\()?")
#: the package's own options object: ``self.args.X``, ``training_args.X``, ``config.X``
_OPTIONS_OBJECT = re.compile(r"^(?:\w{0,40}args|\w{0,40}config|cfg|opts?|options|\w{0,20}_config)$")
_KEYWORDS = frozenset(
    re.split(
        r"\s+",
        "and or not in is None True False if else for lambda len isinstance int str float bool list dict "
        "tuple set type getattr hasattr self all any min max sum abs round",
    )
)
#: a guard about the data, tensors or resources (memory, time): not the run's options
_NOT_OPTIONS = re.compile(
    r"(?i)\.shape\b|\.size\(|\.dtype\b|\.device\b|\bnumel\(|\bis_cuda\b|\binput_ids\b|attention_mask|"
    r"\blogits\b|\btensors?\b|hidden_states|\bisinstance\(|\bdataset\b|\bprompts?\b|\bcompletions?\b|"
    r"\bimages?\b|\btokens?\b|\blabels?\b|\bmemory\b|\bmem_\w|_mem\b|\bbytes\b|\btimeout\b|\bseconds\b|"
    r"\bcache_blocks\b|\bnum_gpu_blocks\b|\bfree_\w|\bweights?\b|state_dict|\bkeys?\b|\bshard\w*|"
    r"\bpath\b|\bexists\("
)
#: a message about resources, the machine or the network
_RESOURCES = re.compile(
    r"(?i)out of memory|\bOOM\b|\bmemory\b|timed? ?out|\bNCCL\b|CUDA error|illegal memory|socket|"
    r"connection|address already|no such file|not found\b|checkpoint|state_dict|\bnan\b"
)
_NOT_CONFIG_PACKAGES = {"torch", "datasets", "xformers", "flash-attn", "flashinfer-python", "lm-eval"}
MAX_NAMES = 4
MAX_MORE = 8  # lines of one statement after its first
_CUT_MESSAGE = " (the log ends inside the message: paste the whole exception line, and the lines after it)"


#: IPython's numbering of a frame's source lines: ``-> 1787     raise ImportError(``, ``   1788  "…"``
_IPYTHON_LINE = re.compile(r"^(?:-{0,3}> ?)?\d{1,6} {1,40}(?=\S)")


def _open(text: str) -> int:
    """How many brackets ``text`` leaves open (outside its string literals)."""
    bare = _STRING.sub("", text)
    return sum(bare.count(c) for c in "([{") - sum(bare.count(c) for c in ")]}")


def _statement(frame: Frame, lines: Sequence[str]) -> str:
    """The deepest frame's source line, with the lines after it while its brackets stay open
    (Python 3.13 prints a multi-line statement whole; a paste may keep the call's arguments)."""
    out = [frame.code]
    seen = False
    for raw in lines:
        body = _IPYTHON_LINE.sub("", _body(raw))
        if not seen:
            seen = body == frame.code
            continue
        if _open(" ".join(out)) <= 0 or len(out) > MAX_MORE:
            break
        if not body or set(body) <= set("^~ "):
            continue
        if body.startswith(('File "', "Traceback")):
            break
        out.append(body)
    return " ".join(out)[:2000]


def _split_assert(rest: str) -> tuple[str, str]:
    """An assert's condition and its message expression (after the top-level comma)."""
    depth = 0
    quote = ""
    for i, ch in enumerate(rest):
        if quote:
            quote = "" if ch == quote and rest[i - 1] != "\\" else quote
        elif ch in "\"'":
            quote = ch
        elif ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
        elif ch == "," and depth == 0:
            return rest[:i].strip(), rest[i + 1 :].strip()
    return rest.strip(), ""


def _literal(expr: str) -> str:
    """The text of the string literals in ``expr`` (implicitly joined), f-string fields kept as
    ``{name}`` with the object removed (``{self.args.x}``: ``{x}``)."""
    parts = []
    unclosed = _UNCLOSED.search(_STRING.sub(" ", expr))  # the log cuts the literal off
    found = [*_STRING.finditer(expr), *([unclosed] if unclosed else [])]
    for m in found:
        s = m.group("s").replace("\\n", " ").replace('\\"', '"').replace("\\'", "'")
        if "f" in m.group("prefix").lower():
            s = _PLACEHOLDER.sub(lambda p: "{" + _short(p.group("expr").split("!")[0].split(":")[0]) + "}", s)
        parts.append(s)
    text = re.sub(r"\s{2,}", " ", "".join(parts)).strip()
    return f"{text} …" if unclosed and text else text


def _short(expr: str) -> str:
    return re.sub(r"^(?:self\.)?(?:\w{1,40}\.)?", "", expr.strip()) if "." in expr else expr.strip()


def _names(condition: str, message: str) -> list[tuple[str, str]]:
    """The names a guard's condition and its message's fields name, each with the package's own
    options object it is read from (``self.args.X``: ``args``), else ``""``."""
    text = _STRING.sub(" ", condition)
    fields = " ".join(p.group("expr") for p in _PLACEHOLDER.finditer(message))
    out: dict[str, str] = {}
    for m in _NAME.finditer(f"{text} {fields}"):
        parts = m.group("path").split(".")
        leaf = parts[-1]
        if leaf in _KEYWORDS or leaf.isupper() or len(leaf) < 3 or leaf[0].isdigit():
            continue
        owner = parts[-2] if len(parts) >= 2 else ""
        own = owner if owner and _OPTIONS_OBJECT.match(owner) is not None else ""
        said = leaf + ("()" if m.group("call") else "")
        out[said] = out.get(said) or own
    return list(out.items())[:MAX_NAMES]


def _said(names: list[tuple[str, str]], package: str, frame: Frame, log: Log, m: Match) -> list[str]:
    """Each name as the user sets it: a GRPOConfig key, vLLM's engine field with its setters, the
    package's option, else as written."""
    from envdoctor.triage.refusal import _DISPLAY, _ENGINE_CONFIG, _setters

    kb = log.ctx.kb if log.ctx is not None else knowledge()
    who = _DISPLAY.get(package, package)
    engine = package == "vllm" and frame.module_path.startswith(_ENGINE_CONFIG)
    out = []
    for name, own in names:
        if name.endswith("()"):
            out.append(f"`{name}`")
        elif kb.config_key(name) is not None:
            out.append(f"TRL's GRPOConfig {name}")
        elif engine:
            out.append("; ".join(_setters(name, log, m.context)))
        elif own:
            out.append(f"{who}'s option {name}" if own.endswith("args") else f"{who}'s {own}.{name}")
        else:
            out.append(f"`{name}`")
    return out


def _match(lines: Sequence[str], total: int, statement: str) -> Match | None:
    """The guard's line as the finding's match (the log's last line; its context before it)."""
    from envdoctor.triage.signatures import signatures

    sig = next((x for x in signatures() if x.id == "unrecognized-exception"), None)
    if sig is None:
        return None
    return Match(sig, total, statement[:1000], {}, None, tuple(lines[-41:-1]))


def cut_guard(tb: Traceback, lines: Sequence[str], log: Log, total: int) -> Draft | None:
    """The check of a stack package whose guard is the deepest frame of a cut traceback, or None."""
    from envdoctor.triage.refusal import _DISPLAY, package_refusal

    if not tb.frames or tb.exc_type:
        return None
    frame = tb.frames[-1]
    package = frame.package
    if package is None or package in _NOT_CONFIG_PACKAGES or package not in set(PACKAGES.values()):
        return None
    statement = _statement(frame, lines)
    a = _ASSERT.match(statement)
    r = None if a else _RAISE.match(statement)
    if a is None and r is None:
        return None  # a call, a re-raise: the check failed deeper, in frames the log does not show
    condition, message_expr = _split_assert(a.group("rest")) if a else ("", r.group("rest") if r else "")
    message = _literal(message_expr)
    fields = " ".join(p.group("expr") for p in _PLACEHOLDER.finditer(message_expr))
    if _NOT_OPTIONS.search(f"{condition} {fields}") or _RESOURCES.search(f"{condition} {message}"):
        return None  # a guard about the data, tensors or resources
    names = _names(condition, message_expr)
    if not names and not message:
        return None  # ``raise ValueError(`` cut before its message: which check is not shown
    m = _match(lines, total, statement)
    if m is None:
        return None
    cut = "; the log ends inside the traceback, so deeper frames may be missing: paste its end to confirm"
    kind = "AssertionError" if a else (r.group("type") if r else "")
    if message:
        shown = Traceback(list(tb.frames), kind, message, total)
        d = package_refusal(shown, m, log)
        if d is not None:
            f = d.finding
            text = f.message.replace(_CUT_MESSAGE, "")  # the message is the source's: not cut
            ev = {**f.evidence, "cut_traceback": True}
            d.finding = Finding(f.rule, Severity.WARNING, text + cut, f.fix, ev)
            return d
    if not names and not message.endswith(" …"):
        return None  # a whole message that refuses nothing (``NotImplementedError("subclasses …")``)
    name = _DISPLAY.get(package, package)
    where = f"{frame.at}{' in ' + frame.function if frame.function else ''}"
    said = _said(names, package, frame, log, m)
    check = f"`assert {condition}`" if a else f"`raise {kind}(…)`"
    whose = f"{name}'" if name.endswith("s") else f"{name}'s"
    what = f"{whose} own check failed in {where}: {check}" + (f" (“{message[:400]}”)" if message else "")
    what += (f"; what it names: {', '.join(said)}" if said else "") + cut
    options = [n for (n, own), s in zip(names, said, strict=True) if own or not s.startswith("`")]
    reads = ", ".join(options) if options else f"the setting {whose} {frame.function or 'check'} refuses"
    fix = (
        f"change {reads} so that {'the check holds: ' + condition[:200] if condition else 'it passes'}; "
        f"where the values already hold, the check is {whose} own bug: a newer {name} release may have "
        "fixed it (its release notes); the traceback's end (the exception line) says which"
    )
    d = finding(
        RULE,
        [m],
        log,
        what,
        fix,
        package=package,
        options=options,
        names=[n for n, _ in names],
        check=condition or message,
    )
    f = d.finding
    d.finding = Finding(f.rule, Severity.WARNING, f.message, f.fix, {**f.evidence, "cut_traceback": True})
    return d
