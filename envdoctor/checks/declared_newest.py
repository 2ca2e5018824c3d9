"""DCL009: TRL declared with no upper bound (``trl``, ``trl>=0.14``) resolves, on a fresh install, to
the newest release the declared pins allow; a config key or a ``GRPOConfig(...)`` keyword that
release no longer has stops the run at start-up.

DCL001 says of such a range that it spans a removal; this rule says which release ``pip install``
picks (pip takes the newest release every declared requirement allows) and that it refuses the key,
where nothing else in the repository installs TRL (a git reference in a README, a ``trl``
submodule): then the declared install is the one that runs.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from functools import lru_cache
from pathlib import Path
from typing import Any

from envdoctor import versions
from envdoctor.checks.config import _script_drops, replace_or_remove
from envdoctor.checks.context import Context
from envdoctor.checks.registry import Hit, hit, rule
from envdoctor.facts.interface import normalize_name
from envdoctor.plan.interface import from_code

#: keys whose GRPOConfig entry is not TRL's config (TrainingArguments overrides, script keys)
_SKIP = frozenset({"config"})
_MODULE_LINE = re.compile(r"^\s*(path|url)\s*=\s*(\S+)", re.M)


def _stack(ctx: Context) -> dict[str, Any]:
    return (ctx.facts.extra.get("declared") or {}).get("stack") or {}


#: the last answers of ``fresh_install`` by declared stack (the hook judges many files against
#: one stack; the stack is kept so that its id is not reused while cached)
_FRESH: dict[int, tuple[dict[str, Any], tuple[str, str] | None]] = {}


def fresh_install(ctx: Context) -> tuple[str, str] | None:
    """(the TRL release a fresh install of the declared stack resolves to, the declaration) where
    TRL is declared with no upper bound and no other source; None otherwise."""
    stack = _stack(ctx)
    if not stack:
        return None
    held = _FRESH.get(id(stack))
    if held is not None and held[0] is stack:
        return held[1]
    if len(_FRESH) >= 4:
        _FRESH.clear()
    found = _fresh_install(ctx, stack)
    _FRESH[id(stack)] = (stack, found)
    return found


def _fresh_install(ctx: Context, stack: dict[str, Any]) -> tuple[str, str] | None:
    trl = stack.get("trl")
    if trl is None or trl.version or any(d.url for d in trl.decls) or trl.how != "range":
        return None
    from envdoctor.facts.declared.ranges import known_in, meet, upper_open
    from envdoctor.facts.declared.resolve import requires

    spec = trl.spec
    if spec and not upper_open(spec):
        return None
    if _capped_elsewhere(ctx, stack):
        return None
    tags = [str(t) for t in ctx.kb.grpo_keys.get("tags_scanned") or []]
    pins = {n: e.version for n, e in stack.items() if e.version and n != "trl"}
    ranges = {n: e.spec for n, e in stack.items() if not e.version and e.spec and n != "trl"}
    for release in reversed(known_in(spec or ">=0", tags)):
        ok = True
        for line in requires("trl", release, ctx.kb) or []:
            m = re.match(r"\s*([A-Za-z0-9._-]+)\s*([^;]*)", line)
            if m is None or "extra ==" in line or not m.group(2).strip():
                continue
            name, want = m.group(1).lower(), m.group(2).strip()
            pinned_out = name in pins and versions.satisfies(pins[name], want) is False
            ok = ok and not pinned_out and not (name in ranges and meet(want, ranges[name]) is None)
        if ok:
            return None if _elsewhere() else (release, ", ".join(d.said for d in trl.decls[:2]))
    return None


def _capped_elsewhere(ctx: Context, stack: dict[str, Any]) -> bool:
    """Whether the declared stack holds a package with a TRL requirement of its own (Unsloth, by
    unsloth_zoo's ``trl<=…``; rules/knowledge/trl.yaml ``trl_dependents``): the release a fresh
    install gets is then bounded by it, not the newest TRL."""
    names = {normalize_name(str(n)) for n in (ctx.kb.trl.get("trl_dependents") or {}).get("packages") or ()}
    return any(normalize_name(str(n)) in names for n in stack)


def _elsewhere() -> bool:
    """Whether the repository (the folder the hook runs in) installs TRL from somewhere else too:
    a ``trl`` git submodule, or a README install step with a git reference or a pin of TRL."""
    return _elsewhere_in(str(Path.cwd()))


@lru_cache(maxsize=4)
def _elsewhere_in(folder: str) -> bool:
    root = Path(folder)
    try:
        modules = (root / ".gitmodules").read_text(encoding="utf-8", errors="replace")[:65536]
    except OSError:
        modules = ""
    if any(re.search(r"(^|[/:])trl(\.git)?$", v.rstrip("/")) for _, v in _MODULE_LINE.findall(modules)):
        return True
    from envdoctor.facts.declared import readmes
    from envdoctor.facts.declared.readme import read

    for path in readmes(root)[:4]:
        try:
            found = read(path, path.name)
        except Exception:  # noqa: BLE001 - another reader's input errors: not this rule's to say
            continue
        if any(d.name == "trl" and (d.url or d.pinned) for d in found.declarations):
            return True
    return False


@rule("DCL009", needs=("plan", "trl-keys"))
def declared_trl_newest_refuses_key(ctx: Context) -> Iterator[Hit]:
    placed = fresh_install(ctx)
    if placed is None:
        return
    release, said = placed
    keys = ctx.kb.grpo_keys.get("keys") or {}
    for key, origin in ctx.plan.config_origin.items():
        entry = keys.get(key)
        if entry is None or key in _SKIP or entry.get("overrides_training_arguments"):
            continue
        if ctx.plan.not_grpo_key(key, origin):
            continue  # the repository's own dataclass declares it
        if _script_drops(ctx.plan.script, key, release, origin):
            continue  # the script keeps only the keys the installed GRPOConfig takes
        until = str(entry.get("until") or "")
        since = str(entry.get("since") or "")
        if not until or versions.at_least(release, until) is not True:
            continue
        if since and versions.below(release, since):
            continue
        repl = entry.get("replaced_by")
        code = from_code(origin)
        how = (
            "TypeError (unexpected keyword argument) at the call"
            if code
            else "it refuses the key at start-up"
        )
        yield hit(
            f"`{key}` ({origin}): the declared {said} has no upper bound, so a fresh install "
            f"resolves TRL {release} (the newest release the declared requirements allow), which "
            f"removed `{key}` in {until}: {how}",
            fix=(f"replace `{key}` with `{repl}`" if repl else f"remove `{key}`")
            + f", or declare 'trl<{until}' to keep it",
            # a key of a config file is edited there; a keyword of the code is the user's to change
            remedy=None if code else replace_or_remove(ctx, key, repl, ctx.config.get(key)),
            key=key,
            resolves_to=release,
            removed_in=until,
        )
