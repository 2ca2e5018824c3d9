"""Rules on a repository's declared stack (``envdoctor hook``): what its ranges leave open.

Exact versions are checked by the package rules, as installed versions are; these rules judge
what only a declaration has: ranges (by their bounds, against the curated releases), conflicting
declarations, and releases newer than the knowledge. They stay quiet on installed facts.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from envdoctor import versions
from envdoctor.checks.config import NOT_CONFIG, _script_drops, replace_or_remove
from envdoctor.checks.context import Context
from envdoctor.checks.registry import Hit, hit, rule
from envdoctor.findings import FileEdit, Remedy

if TYPE_CHECKING:
    from envdoctor.facts.declared.resolve import Entry

# The range and resolve helpers load inside the rules, once a declared stack is there: a check
# of this machine alone loads none of the declared-stack readers.


def _stack(ctx: Context) -> dict[str, Entry]:
    return (ctx.facts.extra.get("declared") or {}).get("stack") or {}


def _said(e: Entry) -> str:
    """``trl>=0.17 (requirements.txt:2)``, or how an exact version came to be."""
    if e.how == "assumed":
        return f"{e.name}=={e.version} (--assume)"
    return ", ".join(dict.fromkeys(d.said for d in e.decls[:2]))


def _where(e: Entry) -> dict[str, Any]:
    d = e.origin
    return {"declared_file": d.file, "declared_line": d.line} if d else {}


def _releases(names: list[str]) -> str:
    if not names:
        return "none known"
    return names[0] if len(names) == 1 else f"{names[0]} … {names[-1]}"


def _they(names: list[str], verb: str, many: bool = False) -> str:
    """``verb`` agreeing with the releases named (``accepts`` for one, ``accept`` for several)."""
    return verb if many or len(names) != 1 else verb + "s"


@rule("DCL001", needs=("plan", "trl-keys"))
def declared_trl_range_vs_config(ctx: Context) -> Iterator[Hit]:
    trl = _stack(ctx).get("trl")
    tags = [str(t) for t in ctx.kb.grpo_keys.get("tags_scanned") or []]
    # "trl" with no version: any GRPO release (a fresh install gets the newest); a git pin
    # envdoctor cannot place is none it can judge
    bare = trl is not None and not trl.spec and not any(d.url for d in trl.decls) and bool(tags)
    spec = (trl.spec or (f">={tags[0]}" if bare else "")) if trl is not None else ""
    if trl is None or trl.version or not spec:
        return
    from envdoctor.facts.declared.ranges import known_in, upper_open, within

    keys = ctx.kb.grpo_keys.get("keys") or {}
    for key, origin in ctx.plan.config_origin.items():
        entry = keys.get(key)
        if entry is None or key in NOT_CONFIG or entry.get("overrides_training_arguments"):
            continue
        if ctx.plan.not_grpo_key(key, origin):
            continue  # the repository's own dataclass declares it (a GRPOConfig(...) keyword is GRPOConfig's)
        if _script_drops(ctx.plan.script, key, spec, origin):
            continue  # the script keeps only the keys the installed GRPOConfig takes: none refuses it
        since, until = entry.get("since"), entry.get("until")
        since, until = (str(since) if since else None), (str(until) if until else None)
        if not since and not until:
            continue
        repl = entry.get("replaced_by")
        ok = known_in(spec, [t for t in tags if within(f"=={t}", since, until)])
        bad_new = bool(until) and within(spec, until, None)
        bad_old = bool(since) and within(spec, None, since)
        if not within(spec, since, until):
            spanned = known_in(spec, tags)
            if spanned and all(ctx.kb.feature("config_unknown_keys_fail", t) is False for t in spanned):
                yield hit(  # TRL < 0.19's parser drops a key no dataclass has: dead, not fatal
                    f"`{key}` ({origin}) exists in TRL {since or 'any'} up to "
                    f"{'(not including) ' + until if until else 'now'}; the declared {_said(trl)} "
                    f"allows none of these releases, and its releases ({_releases(spanned)}) drop "
                    "unknown config keys silently: the key is dead, its setting has no effect",
                    fix=(f"replace `{key}` with `{repl}`" if repl and bad_new else f"remove `{key}`"),
                    severity="warning",
                    key=key,
                    trl=spec,
                    **_where(trl),
                )
                continue
            yield hit(
                f"`{key}` ({origin}) exists in TRL {since or 'any'} up to "
                f"{'(not including) ' + until if until else 'now'}; the declared "
                f"{_said(trl)} allows none of these releases: TRL rejects it",
                fix=(f"replace `{key}` with `{repl}`" if repl and bad_new else f"remove `{key}`")
                + (f", or require 'trl<{until}'" if until and bad_new else f", or require 'trl>={since}'"),
                remedy=replace_or_remove(ctx, key, repl if bad_new else None, ctx.config.get(key)),
                severity="error",
                key=key,
                trl=spec,
                **_where(trl),
            )
            continue
        if bad_new and until and _fresh_install_refuses(ctx, until):
            continue  # DCL009 says which release a fresh install gets, and that it refuses the key
        if bad_new and until:
            gone = known_in(spec, [t for t in tags if versions.at_least(t, until)])
            newest = f"{until} and newer" if upper_open(spec) else _releases(gone)
            msg = (
                f"the declared {_said(trl)} spans the removal of `{key}` ({origin}) in "
                f"TRL {until}: TRL {_releases(ok)} {_they(ok, 'accept')} it, TRL {newest} "
                f"{_they(gone, 'reject', upper_open(spec))} it — which one a fresh install "
                "gets is left open"
            )
            fix = f"require 'trl<{until}' to keep `{key}`" + (
                f", or replace it with `{repl}` and require 'trl>={until}'"
                if repl
                else f", or remove it and require 'trl>={until}'"
            )
        elif bad_old and since and not bare:  # a bare `trl` installs the newest: not older
            old = known_in(spec, [t for t in tags if versions.below(t, since)])
            msg = (
                f"the declared {_said(trl)} allows TRL {_releases(old)}, older than "
                f"`{key}` ({origin}), which exists from TRL {since}: those releases reject it"
            )
            fix = f"require 'trl>={since}'"
        else:
            continue
        yield hit(msg, fix=fix, key=key, trl=spec, accepting=ok, **_where(trl))


def _fresh_install_refuses(ctx: Context, until: str) -> bool:
    from envdoctor.checks.declared_newest import fresh_install

    placed = fresh_install(ctx)
    return placed is not None and versions.at_least(placed[0], until) is True


@rule("DCL002")
def declared_range_excludes_requirement(ctx: Context) -> Iterator[Hit]:
    stack = _stack(ctx)
    if not stack:
        return
    from envdoctor.facts.declared.ranges import meet
    from envdoctor.facts.declared.resolve import requires

    for src, e in stack.items():
        if not e.version:
            continue
        for line in requires(src, e.version, ctx.kb) or []:
            m = re.match(r"\s*([A-Za-z0-9._-]+)\s*([^;]*)", line)
            if m is None or ("extra ==" in line and not any("vllm" in d.extras for d in e.decls)):
                continue
            target, spec = m.group(1), m.group(2).strip()
            other = stack.get(target)
            own = [d for d in other.decls if d.specifier and not d.via] if other else []
            if other is None or other.version or not own or not spec:
                continue
            if meet(spec, *(d.specifier for d in own)) is None:
                said = ", ".join(d.said for d in own[:2])
                yield hit(
                    f"{src} {e.version} ({_said(e)}) requires {target}{spec}; the declared "
                    f"{said} excludes it: pip cannot install both",
                    fix=f"require '{target}{spec}'",
                    package=target,
                    requirement=line,
                    declared_file=own[0].file,
                    declared_line=own[0].line,
                )


@rule("DCL003")
def declared_vllm_range_vs_torch(ctx: Context) -> Iterator[Hit]:
    stack = _stack(ctx)
    vllm, torch = stack.get("vllm"), stack.get("torch")
    if vllm is None or vllm.version or torch is None:
        return
    from envdoctor.facts.declared.ranges import known_in, upper_open

    pins = [p for p in ctx.kb.vllm.get("torch_pins") or [] if p.get("vllm") and p.get("torch")]
    in_range = known_in(vllm.spec or ">=0", [str(p["vllm"]) for p in pins])
    torch_of = {str(p["vllm"]): str(p["torch"]) for p in pins}
    pinned = versions.parse(torch.version)
    tspec = f"=={pinned.public}" if pinned is not None else torch.spec
    if not tspec or not in_range:
        return
    if any(versions.satisfies(torch_of[v], tspec) for v in in_range):
        return
    newest_torch = max((str(p["torch"]) for p in pins), key=versions.sort_key)
    if upper_open(vllm.spec or ">=0") and (
        not torch.version or not versions.below(torch.version, newest_torch)
    ):
        return  # a later vLLM may be built for that torch (DCL005 says it is newer than known)
    needed = sorted({torch_of[v] for v in in_range}, key=versions.sort_key)
    mine = versions.parse(torch.version) if torch.version else None
    nearest = next((t for t in needed if mine is None or versions.sort_key(t) >= mine), needed[-1])
    for_it = [v for v in in_range if torch_of[v] == nearest]
    built = [str(p["vllm"]) for p in pins if versions.satisfies(str(p["torch"]), tspec)]
    fix = f"require 'torch=={nearest}' (vLLM {_releases(for_it)} are built for it)"
    if built:
        fix += f", or keep torch{tspec} with 'vllm=={built[-1]}' (built for torch {torch_of[built[-1]]})"
    yield hit(
        f"no vLLM release in the declared {_said(vllm)} is built for the declared "
        f"{_said(torch)}: vLLM {_releases(in_range)} need torch {_releases(needed)}; "
        "pip cannot install them together",
        fix=fix,
        vllm=vllm.spec,
        torch=tspec,
        **_where(torch),
    )


@rule("DCL004")
def declared_conflict(ctx: Context) -> Iterator[Hit]:
    stack = _stack(ctx)
    if not stack:
        return
    from envdoctor.facts.declared.resolve import conflicts

    for e, a, b in conflicts(stack, (ctx.facts.extra.get("declared") or {}).get("projects")):
        yield hit(
            f"{e.name} is declared as {a.said} and as {b.said}: no version satisfies both"
            + (f"; judged as {e.version}" if e.version else ""),
            fix=f"declare one {e.name} version in every file the training image uses",
            package=e.name,
            declared_file=b.file,
            declared_line=b.line,
        )


@rule("DCL005")
def declared_newer_than_knowledge(ctx: Context) -> Iterator[Hit]:
    stack = _stack(ctx)
    if not stack:
        return  # nothing declared: the curated tables are not even read
    from envdoctor.checks.packages import EXTRAPOLATED
    from envdoctor.knowledge import beyond_horizon, horizon

    for name in horizon(ctx.kb):  # rules/knowledge/horizon.yaml: each package's newest known release
        e = stack.get(name)
        past = beyond_horizon(name, e.version, ctx.kb) if e is not None and e.version else None
        if e is None or past is None:
            continue
        what = EXTRAPOLATED.get(name, "the known failures and requirements stop at the newest known release")
        yield hit(
            f"{name} {e.version} ({_said(e)}) is newer than envdoctor's knowledge "
            f"(newest {name} known: {past.newest}, released {past.released}): {what}",
            fix="upgrade envdoctor (its knowledge follows new releases), and read the "
            f"{name} {e.version} release notes",
            package=name,
            **_where(e),
        )


def _line_start(line: dict[str, Any]) -> str:
    m = re.search(r">=\s*([\w.]+)", str(line.get("trl", "")))
    return m.group(1) if m else "?"


@rule("DCL006", needs=("vllm", "trl-trainer"))
def declared_trl_range_vs_vllm(ctx: Context) -> Iterator[Hit]:
    stack = _stack(ctx)
    trl, vllm = stack.get("trl"), stack.get("vllm")
    if trl is None or trl.version or not trl.spec or vllm is None or not vllm.version:
        return
    from envdoctor.facts.declared.ranges import meet

    lines = [
        ln
        for ln in ctx.kb.trl.get("trl_lines") or []
        if ln.get("vllm") and meet(str(ln.get("trl", "")), trl.spec) is not None
    ]
    good = [ln for ln in lines if versions.satisfies(vllm.version, str(ln["vllm"]))]
    bad = [ln for ln in lines if ln not in good]
    if not bad:
        return
    starts = [_line_start(ln) for ln in bad]
    if good:
        ok = [_line_start(ln) for ln in good]
        msg = (
            f"the declared {_said(trl)} allows TRL lines that do not support the declared "
            f"vLLM {vllm.version} ({_said(vllm)}): TRL {_releases(ok)} support it, TRL "
            f"{_releases(starts)} do not (e.g. TRL {starts[-1]} supports vLLM "
            f"{bad[-1]['vllm']}) — which one a fresh install gets is left open"
        )
        first_bad = min(starts, key=versions.sort_key)
        fix = (
            f"require 'trl{trl.spec},<{first_bad}'"
            if versions.at_least(first_bad, ok[0])
            else f"require a TRL whose line supports vLLM {vllm.version}"
        )
    else:
        msg = (
            f"no TRL line in the declared {_said(trl)} supports the declared vLLM "
            f"{vllm.version} ({_said(vllm)}): TRL {_releases(starts)} support vLLM "
            f"{bad[0]['vllm']} … {bad[-1]['vllm']}"
        )
        fix = (
            f"require a vLLM in the range of the TRL you train with (TRL {starts[-1]}: "
            f"'vllm{bad[-1]['vllm']}')"
        )
    yield hit(msg, fix=fix, trl=trl.spec, vllm=vllm.version, **_where(trl))


#: the training stack's packages whose git pins DCL007 judges
_MOVING_JUDGED = frozenset(
    {"trl", "transformers", "vllm", "torch", "accelerate", "deepspeed", "peft", "datasets", "liger-kernel"}
)
_FIXED_REF = re.compile(r"^(?:[0-9a-fA-F]{7,40}|v?\d+(?:\.\d+)+(?:[.-]?[A-Za-z0-9]+)*)$")


@rule("DCL007")
def declared_moving_branch(ctx: Context) -> Iterator[Hit]:
    for name, e in sorted(_stack(ctx).items()):
        if name not in _MOVING_JUDGED or e.how in ("assumed", "locked"):
            continue
        d = next((d for d in e.decls if d.url and not _FIXED_REF.match(d.ref)), None)
        if d is None:
            continue
        branch = f"the branch `{d.ref}`" if d.ref else "the repository's default branch"
        yield hit(
            f"{name} is declared as {d.said}: {branch}, not a release or a commit, so each install "
            f"gets whatever the branch holds that day; {name}'s main moves between releases "
            "(config keys and APIs the repository's code uses are renamed or removed), so the run "
            "the repository was written for is not what a user installs",
            fix=(
                f"Pin {name} to the release the repository was tested with (`{name}==X.Y.Z`), or to "
                f"a commit (`{name} @ {d.url.split('@')[0] if d.ref else d.url}@<commit sha>`)."
            ),
            declared_file=d.file,
            declared_line=d.line,
        )


#: packages PyTorch's own index serves under a local version (``torch==2.5.1+cu121``)
_PYTORCH_INDEX = frozenset({"torch", "torchvision", "torchaudio", "xformers", "pytorch-triton", "triton"})
_PYTORCH_TAG = re.compile(r"^(?:cu\d{2,3}|cpu|rocm\d+(?:\.\d+)*|xpu)$")


def _local_pin_remedies(
    ctx: Context, file: str, line: int, name: str, version: str, local: str
) -> list[Remedy]:
    """DCL008's fixes as line edits of the requirement file (its lines as ``hook --fix`` read
    them): PyTorch's index for the tag added at the top, else the local part dropped."""
    lines = (ctx.facts.extra.get("repo_texts") or {}).get(file)
    if not isinstance(lines, list) or not 1 <= line <= len(lines):
        return []
    out = []
    if name in _PYTORCH_INDEX and _PYTORCH_TAG.match(local) and lines:
        index = f"--extra-index-url https://download.pytorch.org/whl/{local}"
        out.append(
            Remedy(
                files=(FileEdit(path=file, line=1, old=(), new=(index,)),),
                fix=f"add `{index}` at the top of {file}",
            )
        )
    old = lines[line - 1]
    at = old.find("+" + local)
    if at > 0 and old.count("+" + local) == 1:
        new = old[:at] + old[at + 1 + len(local) :]
        out.append(
            Remedy(
                files=(FileEdit(path=file, line=line, old=(old,), new=(new,)),),
                fix=f"pin {name}=={version.partition('+')[0]} in {file} (PyPI's build)",
            )
        )
    return out


def _dev_pin(name: str, version: str, file: str, line: int) -> Hit:
    """DCL008 for a development release (``trl==0.16.0.dev0``): the version of a main-branch
    checkout, which ``pip list`` of a git install writes and PyPI never had."""
    release = re.sub(r"\.?dev\d*$", "", version)
    return hit(
        f"{file}:{line} pins {name}=={version}, a development version ({name}'s main branch between "
        f"releases, as `pip list` writes a git install), and neither {file}, a file it includes, nor "
        f"the repository's install steps give pip an index besides PyPI: {name} publishes no "
        f"development release on PyPI, so `pip install -r {file}` stops with "
        f'"No matching distribution found for {name}=={version}"',
        fix=(
            f"pin the release it led to (`{name}=={release}`, where that release is out) or the commit "
            f"the repository was tested with (`{name} @ git+<{name}'s repository>@<commit sha>`)"
        ),
        declared_file=file,
        declared_line=line,
        package=name,
        version=version,
    )


@rule("DCL008")
def declared_local_version_without_index(ctx: Context) -> Iterator[Hit]:
    """A requirement file pins a local version (``torch==2.12.0+cu126``) and neither it, a
    file it includes, nor the repository's install steps name an index: PyPI holds no local
    version, so ``pip install -r`` stops with "No matching distribution"."""
    for pin in (ctx.facts.extra.get("declared") or {}).get("local_pins") or []:
        name, version, file, line = pin["name"], str(pin["version"]), pin["file"], pin["line"]
        if "+" not in version:
            yield _dev_pin(name, version, file, line)
            continue
        public, _, local = version.partition("+")
        if name in _PYTORCH_INDEX and _PYTORCH_TAG.match(local):
            index = f"https://download.pytorch.org/whl/{local}"
            add = f"add the line `--extra-index-url {index}` at the top of {file} (PyTorch's {local} index)"
        else:
            add = (
                f"add an `--extra-index-url` line naming the index that serves {name} {version} "
                f"at the top of {file}"
            )
        cands = _local_pin_remedies(ctx, file, int(line), name, version, local)
        yield hit(
            f"{file}:{line} pins {name}=={version}, a local version (`+{local}`), and neither {file}, "
            "a file it includes, nor the repository's install steps give pip an index besides PyPI: "
            f"PyPI holds no local version, so `pip install -r {file}` stops with "
            f'"No matching distribution found for {name}=={version}"',
            fix=f"{add}, or drop the local part (`{name}=={public}`: PyPI's build)",
            declared_file=file,
            declared_line=line,
            package=name,
            version=version,
            remedy=cands or None,
        )


def _newest_vllm(ctx: Context, stack: dict[str, Entry], spec: str) -> str | None:
    """The newest vLLM release envdoctor knows that ``spec`` allows and whose own pins (torch,
    transformers: rules/knowledge/vllm.yaml) the declared torch and transformers admit: what a
    fresh install resolves the declared range to."""
    from envdoctor.facts.declared.ranges import known_in, meet

    pins = [p for p in ctx.kb.vllm.get("torch_pins") or [] if p.get("vllm")]
    by = {str(p["vllm"]): p for p in pins}

    def admits(name: str, want: str) -> bool:
        e = stack.get(name)
        if e is None or not want:
            return True
        if e.version:
            return versions.satisfies(e.version, want) is not False
        return not e.spec or meet(want, e.spec) is not None

    for release in reversed(known_in(spec or ">=0", list(by))):
        pin = by[release]
        torch, tf = str(pin.get("torch") or ""), str(pin.get("transformers") or "")
        if admits("torch", f"=={torch}" if torch else "") and admits("transformers", tf):
            return release
    return None


_SPEC_IN_LINE = r"(?P<name>{name}\s*(?:\[[^\]]*\])?\s*)(?P<spec>(?:[<>=!~]=?\s*[\w.*+!-]+\s*,?\s*)+)"


def _narrowed(ctx: Context, decl: Any, name: str, spec: str) -> Remedy | None:
    """The declaration's line with its specifier replaced by ``spec`` (a line edit ``hook --fix``
    applies once the closure proved it), or None where the line is not read as written."""
    lines = (ctx.facts.extra.get("repo_texts") or {}).get(decl.file)
    if not isinstance(lines, list) or not 1 <= decl.line <= len(lines):
        return None
    old = lines[decl.line - 1]
    found = list(re.finditer(_SPEC_IN_LINE.format(name=re.escape(name)), old, re.IGNORECASE))
    if len(found) != 1:
        return None
    m = found[0]
    trailing = m.group("spec")[len(m.group("spec").rstrip()) :]
    new = old[: m.start("spec")] + spec + trailing + old[m.end("spec") :]
    return Remedy(
        files=(FileEdit(path=decl.file, line=decl.line, old=(old,), new=(new,)),),
        fix=f"declare '{name}{spec}' in {decl.file}:{decl.line}",
    )


def _generates_with_vllm(ctx: Context) -> bool:
    """Whether the run may generate with vLLM: ``use_vllm`` on (at the config's top, or in a section
    of a repository's own config layout: ``grpo: {use_vllm: true}``), a launch line serving vLLM, or
    no config nor launch to tell (the repository declares vLLM beside TRL: for its generation)."""
    if ctx.plan.empty or ctx.plan.use_vllm or any(lx.is_server for lx in ctx.plan.launches):
        return True
    from envdoctor.plan.values import as_bool

    sections = [v for v in ctx.plan.config.values() if isinstance(v, dict)]
    return any(as_bool(sec.get("use_vllm")) is True for sec in sections)


@rule("DCL010", needs=("trl-trainer",))
def declared_vllm_range_past_trl(ctx: Context) -> Iterator[Hit]:
    """TRL pinned, vLLM declared as a range that reaches past the vLLM releases that TRL release
    supports (its ``vllm`` extra and its import-time check: trl_lines[].vllm), without TRL's
    ``[vllm]`` extra (which would bind pip to TRL's range): a fresh install resolves the newest
    vLLM the range and the declared pins allow, outside TRL's support."""
    stack = _stack(ctx)
    trl, vllm = stack.get("trl"), stack.get("vllm")
    if trl is None or not trl.version or vllm is None or vllm.version or not vllm.spec:
        return  # an exact vLLM (or one resolved from the declared torch) is judged as installed: PKG006
    if any("vllm" in d.extras for d in trl.decls) or any(d.url for d in vllm.decls):
        return
    if not _generates_with_vllm(ctx):
        return  # vLLM declared for another use (evaluation): TRL's band does not judge it
    line = ctx.kb.trl_line(trl.version) or {}
    band = str(line.get("vllm") or "")
    newest = _newest_vllm(ctx, stack, vllm.spec) if band else None
    if newest is None or versions.satisfies(newest, band) is not False:
        return
    from envdoctor.checks.packages import _api_fits
    from envdoctor.facts.declared.ranges import meet

    fits = _api_fits(ctx, trl.version, newest, band)
    target = _tightest(vllm.spec, band)
    target = target if meet(target) is not None else band
    own = next((d for d in vllm.decls if d.specifier and not d.via), None)
    remedy = _narrowed(ctx, own, "vllm", target) if own is not None else None
    yield hit(
        f"the declared {_said(vllm)} reaches past the vLLM releases TRL {trl.version} "
        f"({_said(trl)}) supports ({band}: its `vllm` extra, and the range its import-time check "
        f"warns outside): a fresh install resolves vLLM {newest} (the newest release the declared "
        "requirements allow), which TRL was not released for" + (f"; but {fits}" if fits else ""),
        fix=remedy.fix if remedy else f"declare 'vllm{target}' (or trl[vllm]=={trl.version})",
        severity="info" if fits else None,
        remedy=remedy,
        trl=trl.version,
        vllm=vllm.spec,
        resolves_to=newest,
        supported=band,
        **_where(vllm),
    )


def _tightest(declared: str, band: str) -> str:
    """``declared`` narrowed to ``band``: the declared floor where it is above TRL's, else TRL's,
    and TRL's ceiling (``>=0.8.5`` -> ``>=0.12.0,<=0.19.0``; ``>=0.14`` -> ``>=0.14,<=0.19.0``)."""
    lows = [s for s in versions.spec(declared) or () if s.operator in (">=", ">")]
    band_lows = [s for s in versions.spec(band) or () if s.operator in (">=", ">")]
    highs = [str(s) for s in versions.spec(band) or () if s.operator in ("<", "<=")]
    keep = [
        str(s) for s in lows if all(versions.satisfies(str(b.version), str(s)) is False for b in band_lows)
    ]
    return ",".join((keep or [str(s) for s in band_lows]) + highs)
