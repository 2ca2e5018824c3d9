"""PKG014: a feature the run asks for (FlashAttention 2, Liger, a bitsandbytes optimizer or
quantization, PEFT, a logger) whose package is not installed.

The requests are read from the run's config (file, flags, GRPOConfig keywords in code) and from
the model loaders of the scripts the run reads (``from_pretrained(attn_implementation=…)``,
literal values only); the features, their packages and what raises without them are data
(rules/knowledge/optional_features.yaml).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from envdoctor import versions
from envdoctor.checks.context import Context
from envdoctor.checks.registry import Hit, hit, rule
from envdoctor.facts.interface import normalize_name
from envdoctor.facts.packages import STACK
from envdoctor.findings import Remedy
from envdoctor.plan.interface import from_code
from envdoctor.plan.values import as_bool

#: the variables that keep huggingface_hub (and so a Hub kernel's download) offline
OFFLINE = ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE")


@dataclass(frozen=True)
class Request:
    """One place that asks for a feature: ``key`` as asked, ``value``, ``where`` (a config
    origin or a loader call), ``certain`` (unconditional, and it reaches the consumer), ``top``
    (the config key a remedy changes; None for a keyword in the script's code)."""

    key: str
    value: str
    where: str
    certain: bool
    top: str | None
    at: str = ""  # for a keyword in the code: the file:line of its literal (where the edit goes)
    said: str = ""  # for the launch: how the line asks for it (no config change drops it)


def _rows(ctx: Context) -> list[dict[str, Any]]:
    rows = ctx.kb.optional_features.get("requests")
    return [r for r in rows if isinstance(r, dict)] if isinstance(rows, list) else []


def _asks(row: dict[str, Any], value: Any) -> str | None:
    """The value among ``row``'s that ``value`` asks for (a list asks when an item does)."""
    wanted = row.get("values") or []
    items = value if isinstance(value, list) else [value]
    for item in items:
        for w in wanted:
            if w == "any" and isinstance(item, (str, dict)) and item and as_bool(item) is not False:
                return item if isinstance(item, str) else "an inline mapping"  # a path, or the config
            if w is True and as_bool(item) is True:
                return "true"
            if isinstance(w, str) and isinstance(item, str) and item.strip().lower() == w:
                return w
    return None


def _config_requests(ctx: Context, row: dict[str, Any]) -> list[Request]:
    script = ctx.plan.script
    out = []
    for key in row.get("keys") or []:
        top, _, inner = str(key).partition(".")
        value = ctx.plan.config.get(top)
        if inner:
            value = value.get(inner) if isinstance(value, dict) else None
        asked = _asks(row, value) if value is not None else None
        if asked is None:
            continue
        origin = ctx.plan.config_origin.get(top, "")
        if script is not None and script.own_grpo and not from_code(origin):
            continue  # the repository's own loop reads its config itself: not TRL's keys
        consumer = row.get("consumer")
        certain = consumer == "trainer" or (consumer == "model" and bool(inner) and script_by_name(ctx))
        out.append(Request(str(key), asked, origin or "the config", certain, top))
    return out


def script_by_name(ctx: Context) -> bool:
    """TRL's GRPOTrainer loads the model itself (by name), so ``model_init_kwargs`` reach it."""
    script = ctx.plan.script
    return script is None or script.model_by_name is not False


def _code_requests(ctx: Context, row: dict[str, Any]) -> list[Request]:
    script = ctx.plan.script
    if script is None or "attn_implementation" not in (row.get("keys") or []):
        return []
    return [
        Request("attn_implementation", asked, where, not cond, None, at)
        for where, value, cond, at in script.attn_requests
        if (asked := _asks(row, value)) is not None
    ]


def _launch_requests(ctx: Context, row: dict[str, Any]) -> list[Request]:
    """DeepSpeed asked for by the launch (``launch: deepspeed``): the ``deepspeed`` launcher (a
    command the package installs), or ``accelerate launch`` with ``--use_deepspeed`` or a config
    file whose ``distributed_type`` is DEEPSPEED (where the line passes no other mode): accelerate
    then runs its DeepSpeed launcher, which raises ImportError when the package is missing."""
    trainer = ctx.plan.trainer
    if row.get("launch") != "deepspeed" or trainer is None:
        return []
    if trainer.launcher == "deepspeed":
        said = "the `deepspeed` launcher (the launch line; the deepspeed package installs the command)"
        return [Request("deepspeed_launcher", "true", "the launch line", True, None, said=said)]
    if trainer.launcher != "accelerate":
        return []
    opts, acc = trainer.options, ctx.plan.accelerate or {}
    if opts.get("cpu") or acc.get("use_cpu") is True:
        return []
    if opts.get("use_deepspeed"):
        said = "`accelerate launch --use_deepspeed` (the launch line)"
    elif str(acc.get("distributed_type", "")).upper() == "DEEPSPEED" and not any(
        opts.get(k) for k in ("multi_gpu", "use_fsdp", "use_megatron_lm", "tpu")
    ):
        said = f"`distributed_type: DEEPSPEED` ({ctx.plan.accelerate_path or 'the accelerate config'})"
    else:
        return []
    return [Request("use_deepspeed", "true", "the launch line", True, None, said=said)]


def _installed(ctx: Context, row: dict[str, Any]) -> bool:
    return any(ctx.version(d) for d in [row.get("package"), *(row.get("also") or [])] if d)


#: the packages of the optional-import index that only bring ``dist`` through an extra named for
#: it (``trl[liger]``, ``accelerate[deepspeed]``): installed without that extra they do not
OPT_IN = frozenset({"trl", "accelerate", "peft", "deepspeed"})


def brought_by(ctx: Context, dist: str) -> str | None:
    """An installed package whose requirements the facts do not list and which is known to bring
    ``dist`` (rules/knowledge/optional_imports.json.gz: a base requirement, or any requirement of
    a framework that wraps the stack: Unsloth's own loaders need bitsandbytes): ``dist`` may be
    there without being listed (a snapshot written by hand, or by a harness from a stack's note)."""
    from envdoctor.knowledge.optional_imports import base_requirement, packages, requirement

    for name, pkg in ctx.facts.packages.items():
        if pkg.requires is not None or name not in packages():
            continue
        if base_requirement(name, dist) or (name not in OPT_IN and requirement(name, dist, None)):
            return name
    return None


def absent(ctx: Context, dist: str) -> bool | None:
    """Whether ``dist`` is known absent (True), installed (False) or not known (None). A fact of
    a live check (collect reads the stack and FEATURES), of a snapshot ``envdoctor collect`` wrote
    (for the stack it collects), and of a snapshot that names it in ``absent``; versions named with
    ``--assume`` say nothing of the rest, nor does a declared stack (a requirements file names what
    it pins, not what comes with it), nor a snapshot written by hand that lists some packages
    (a stack's note lists what it pins: open-r1's flash-attn is installed by its README), nor a
    listed package whose requirements are not given and which is known to bring ``dist``."""
    name = normalize_name(dist)
    if ctx.version(dist):
        return False
    if name in (ctx.facts.extra.get("absent") or ()):
        return True
    if ctx.facts.unknown(dist) or ctx.facts.extra.get("declared") is not None:
        return None
    collected = bool((ctx.facts.extra.get("snapshot") or {}).get("envdoctor"))
    if not ctx.facts.live and not (collected and name in {normalize_name(s) for s in STACK}):
        return None
    return None if brought_by(ctx, dist) else True


def _fallback(ctx: Context, row: dict[str, Any]) -> tuple[str, bool | None]:
    """What transformers does instead where it falls back to a Hub kernel: (said, fails: True
    when it raises all the same, None when not known, False when the fallback serves the run)."""
    fb = row.get("fallback")
    if not isinstance(fb, dict):
        return "", True
    since, pkg, kernel = str(fb.get("since")), str(fb.get("package")), str(fb.get("kernel"))
    tf = ctx.version("transformers")
    if tf and versions.below(tf, since):
        return f"transformers {tf} has no fallback (it came in {since})", True
    who = f"transformers {tf}" if tf else f"transformers from {since}"
    said = (
        f"{who} falls back to the Hub kernel {kernel} where the `{pkg}` package is installed (it "
        "downloads it: the network is needed at load)"
    )
    gone = absent(ctx, pkg)
    if gone is False:
        off = [v for v in OFFLINE if as_bool(ctx.facts.env.get(v)) is True]
        if off:
            return f"{said}; {pkg} is installed but {off[0]} keeps the Hub offline", True
        return said, False
    if gone and tf:
        return f"{said}; {pkg} is not installed either", True
    return f"{said}; whether {pkg} is installed is not known", None


def _pin(ctx: Context, row: dict[str, Any]) -> str | None:
    """The release to install where it is provable: the table's (``releases``: the first whose
    torch range holds the installed torch), where the installed TRL's extra for the package and
    the ``floors`` of the installed packages that require it allow it."""
    dist, release = str(row.get("package")), row.get("release")
    table = [r for r in row.get("releases") or () if isinstance(r, dict)]
    if table:
        torch = ctx.version("torch")
        release = next(
            (
                r.get("release")
                for r in table
                if torch and versions.satisfies(torch, str(r.get("torch"))) is True
            ),
            None,
        )
    if not release:
        return None
    from envdoctor.knowledge.optional_imports import requirement

    asked = requirement("trl", dist, ctx.version("trl")) if ctx.version("trl") else None
    spec = (asked[0].split(";")[0][len(dist) :].strip()) if asked else ""
    if spec and versions.satisfies(str(release), spec) is False:
        return None
    floors = row.get("floors") or {}
    if any(ctx.version(n) and versions.below(str(release), str(f)) for n, f in floors.items()):
        return None
    return str(release)


def _drop(ctx: Context, row: dict[str, Any], req: Request) -> dict[str, Any] | None:
    """The config change that drops ``req`` (None: none that keeps the run's meaning)."""
    drop = row.get("drop")
    if not isinstance(drop, dict) or req.top is None:
        return None
    inner = req.key.partition(".")[2]
    if inner:
        current = ctx.plan.config.get(req.top)
        return {req.top: {**current, inner: drop.get(inner)}} if isinstance(current, dict) else None
    if req.top not in drop:
        return None
    current = ctx.plan.config.get(req.top)
    if isinstance(current, list):
        rest = [v for v in current if not (isinstance(v, str) and v.strip().lower() == req.value)]
        return {req.top: rest or drop[req.top]}
    return {req.top: drop[req.top]}


def _drop_value(row: dict[str, Any], req: Request) -> Any:
    drop = row.get("drop")
    return drop.get(req.key.partition(".")[2] or req.key) if isinstance(drop, dict) else None


def _edit(row: dict[str, Any], req: Request, dist: str) -> str:
    """The exact edit of a request in the script's code (no machine-applicable change)."""
    instead = _text(_drop_value(row, req))
    module, at = dist.replace("-", "_"), req.at or req.where.split(" in ", 1)[-1]
    return (
        f"edit {at}: ask for '{instead}' there, or take '{req.value}' only "
        f"where importlib.util.find_spec('{module}') finds {dist}"
    )


def _text(value: Any) -> str:
    if isinstance(value, bool):
        return str(value).lower()
    return str(value)


@rule("PKG014")
def feature_package_missing(ctx: Context) -> Iterator[Hit]:
    for row in _rows(ctx):
        dist = str(row.get("package") or "")
        if not dist or _installed(ctx, row):
            continue
        gone = absent(ctx, dist)
        if gone is not True and not (row.get("declared") and undeclared(ctx, dist)):
            continue  # assumed versions, or a snapshot that does not list it: not known
        reqs = _launch_requests(ctx, row) + _config_requests(ctx, row) + _code_requests(ctx, row)
        if not reqs:
            continue
        said, fails = _fallback(ctx, row)
        if fails is False:
            continue  # transformers serves it from the Hub's kernel
        if gone is not True:  # the hook: the declared stack lacks it (the image may still have it)
            yield _undeclared_finding(ctx, row, dist, reqs)
            continue
        yield _finding(ctx, row, dist, reqs, said, fails)


def undeclared(ctx: Context, dist: str) -> bool:
    """Whether a declared stack (the hook's, or ``--assume``'s read from the repository) names
    neither ``dist`` nor a package that brings it (``accelerate[deepspeed]``, a declared package
    whose base requirements hold it: rules/knowledge/optional_imports.json.gz)."""
    declared = ctx.facts.extra.get("declared")
    stack = (declared or {}).get("stack") if isinstance(declared, dict) else None
    if not stack:
        return False
    from envdoctor.knowledge.optional_imports import base_requirement

    name = normalize_name(dist)
    for other, entry in stack.items():
        if normalize_name(other) == name:
            return False
        if any(name in {normalize_name(x) for x in d.extras} for d in entry.decls):
            return False  # accelerate[deepspeed], trl[deepspeed]
        if base_requirement(normalize_name(other), dist):
            return False
    return True


def _undeclared_finding(ctx: Context, row: dict[str, Any], dist: str, reqs: list[Request]) -> Hit:
    first = next((r for r in reqs if r.certain), reqs[0])
    files = [str(f) for f in ((ctx.facts.extra.get("declared") or {}).get("files") or [])][:3]
    where = ", ".join(files) or "the repository's requirements"
    raises = _raises(row, first)
    pin = _pin(ctx, row)
    return hit(
        f"The run asks for {_how(first)}, but {where} declare{'s' if len(files) == 1 else ''} no "
        f"{dist} (nor a package that brings it): an environment built from them lacks it, and then "
        f"{raises} (a warning: the image may install it elsewhere)",
        fix=f"declare '{dist}=={pin}'" if pin else f"declare {dist} beside the training stack",
        severity="warning",
        package=dist,
        feature=row.get("id"),
        requests=[f"{r.key}={r.value} ({r.where})" for r in reqs],
    )


def _raises(row: dict[str, Any], req: Request) -> str:
    """What raises without the package, for this request (``raises_by`` its key), else the row's."""
    by = row.get("raises_by")
    text = by.get(req.key) if isinstance(by, dict) else None
    return " ".join(str(text or row.get("raises") or "").split())


def _how(req: Request) -> str:
    if req.said:
        return req.said
    if req.top is not None:
        return f"`{req.key}: {req.value}` ({req.where})"
    return f"attn_implementation='{req.value}' in {req.where.split(' in ', 1)[-1]}" + (
        "" if req.certain else ", one branch of a conditional expression"
    )


def _finding(
    ctx: Context, row: dict[str, Any], dist: str, reqs: list[Request], said: str, fails: bool | None
) -> Hit:
    first = next((r for r in reqs if r.certain), reqs[0])
    severity = "error" if first.certain and fails else "warning"
    how = _how(first)
    more = f" (and {len(reqs) - 1} more place{'s' if len(reqs) > 2 else ''})" if len(reqs) > 1 else ""
    raises = _raises(row, first)
    message = f"The run asks for {how}{more}, but {dist} is not installed: {raises}"
    if said:
        message += f"; {said}"
    if not first.certain:
        message += " (a warning: the request depends on the script's code or a condition at run time)"
    elif not fails:
        message += " (a warning: whether the fallback serves the run is not known)"
    remedies: list[Remedy] = []
    fixes: list[str] = []
    changes = [_drop(ctx, row, req) for req in reqs]
    if all(changes):  # every request is a config key the fix can change (none in the code)
        merged: dict[str, Any] = {}
        for change in changes:
            merged.update(change or {})
        fix = "set " + ", ".join(f"{req.key}: {_text(_drop_value(row, req))} ({req.where})" for req in reqs)
        remedies.append(Remedy(config_set=merged, fix=fix))
        fixes.append(fix)
    elif any(r.top is None and not r.said for r in reqs):  # a keyword in the code: the edit, and the keys
        sets = [f"set {r.key}: {_text(_drop_value(row, r))} ({r.where})" for r in reqs if r.top is not None]
        edits = list(dict.fromkeys(_edit(row, r, dist) for r in reqs if r.top is None and not r.said))
        fixes.append(" and ".join(sets + edits))
    pin = _pin(ctx, row)
    if pin:
        remedies.append(Remedy(packages={dist: pin}, fix=f"pip install '{dist}=={pin}'"))
        fixes.append(f"pip install '{dist}=={pin}'")
    elif row.get("fallback"):
        torch = ctx.version("torch")
        fixes.append(
            f"install the {dist} wheel built for {'torch ' + torch if torch else 'the installed torch'} "
            "and its CUDA (compiled against one torch: no pin is provable)"
        )
    return hit(
        message,
        fix="; or ".join(fixes) or f"install {dist} (the release your TRL and transformers support)",
        severity=severity,
        remedy=remedies,
        package=dist,
        feature=row.get("id"),
        requests=[f"{r.key}={r.value} ({r.where})" for r in reqs],
    )
