"""The cause of a failure that no signature names, from its traceback's structure.

Tried on the log's first failing line when nothing known matched (or its handler rejected it):

1. a catalogue entry that says where its bug is raised (``raised``: exception, message, frames)
   and whose release ranges the log's versions do not contradict: a release bug behind a generic
   message (``TypeError: 'NoneType' object is not iterable`` in TRL 0.19.0's colocate generation);
   an error when the log's versions fall in its ranges (and its traceback, if shown, holds the
   entry's frame), a warning when the frame is shown but the versions are not; the message alone
   (no frame, no versions) is no diagnosis;
2. API drift at a package boundary (``boundary.py``): TRI009 with both packages, their versions and
   frames, and the pair that works;
3. (after the refusals) a fix in a later release that changed the function that raised
   (``fixhist.py``): TRI014, from the fix history of the stack's functions.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from envdoctor import versions
from envdoctor.findings import Finding, Severity
from envdoctor.knowledge import knowledge
from envdoctor.triage import (
    boundary,
    columns,
    compiled,
    guards,
    hostenv,
    hydra,
    inference,
    missing,
    namedrift,
    optional,
    programs,
    pyboundary,
    refusal,
    rewardout,
    roots,
    samename,
    structclass,
    usercode,
    wrapped,
)
from envdoctor.triage.combine import Literals
from envdoctor.triage.draft import Draft, Log, at_severity, finding, reject
from envdoctor.triage.interface import Match, Signature
from envdoctor.triage.remotecode import stale_call
from envdoctor.triage.traceback import Frame, Traceback, bare_exception, failure


def _entries() -> list[Any]:
    from envdoctor.triage import catalogue

    return list(catalogue.catalogue()[2].values())


def _frame_text(f: Frame | None) -> str:
    if f is None:
        return ""
    where = f.at
    return f"{f.package or 'your code'} ({where}{' in ' + f.function if f.function else ''})"


def _holds(tb: Traceback, frames: tuple[tuple[str, str, str], ...]) -> bool | None:
    """``classes.frames_hold`` (the catalogue's matcher holds it: one home for both)."""
    from envdoctor.triage.classes import frames_hold

    return frames_hold(tb, frames)


def _line_refused(e: Any, tb: Traceback) -> bool:
    """Whether an entry's symptoms all spell out its exception's line (``KeyError: '…qkv_proj…'``:
    which keys are its failure's) and the traceback's exception line is none of them: the same
    exception at the same frame for another reason (a checkpoint's own name vLLM's model does not
    know, not a fused name a weight sync pushed)."""
    exc = e.raised[0]
    symptoms = getattr(e, "symptoms", ())
    if not symptoms or not all(f"{exc}:" in s.text for s in symptoms):
        return False
    line = f"{tb.name}: {tb.message}"[:2000]
    return not any(s.found_in(line) for s in symptoms)


def _symptom_line(e: Any, tb: Traceback) -> bool:
    """Whether the exception's line is one of the entry's symptoms (an entry without symptoms: yes).
    A log without frames has only its message: the raise-site index says which function raised it,
    and a function raises several messages (``convert_to_tensors``: unequal lengths, and a slow
    tokenizer's overflowing tokens), so the placement counts only for the entry's own line."""
    symptoms = getattr(e, "symptoms", ())
    line = f"{tb.name}: {tb.message}"[:2000]
    return not symptoms or any(s.found_in(line) for s in symptoms)


def _placed_at(tb: Traceback, log: Log, frames: tuple[tuple[str, str, str], ...]) -> str:
    """Where the raise-site index places ``tb``'s whole message, in a log that shows no frame,
    when every raise that prints it is one of an entry's frames (package, file ending, function):
    the frame a traceback would show ("" where it shows frames, the index does not place it
    whole, or a raise lies elsewhere)."""
    if not frames or any(t.frames for t in tb.all()):
        return ""
    from envdoctor.triage.raisesites import locate_tb

    loc = locate_tb(tb, log)
    if loc is None or not loc.complete:
        return ""
    fits = all(
        any(
            x.package == p and (not file or x.module.endswith(file)) and (not fn or x.function.endswith(fn))
            for p, file, fn in frames
        )
        for x in loc.sites
    )
    return f"{loc.package} ({loc.places()})" if fits else ""


def raised_entry(tb: Traceback, m: Match, log: Log) -> Draft | None:
    """A catalogue entry located by its exception, message and frames (module docstring, 1)."""
    from envdoctor.triage.classes import _unshown_bounds, versionless, versions_verdict
    from envdoctor.triage.runkind import generation_only

    best: tuple[int, Any, bool, bool | None, str] | None = None
    for e in _entries():
        raised = getattr(e, "raised", None)
        if not raised:
            continue
        exc, message, frames = raised
        if tb.name != exc or (message and message not in tb.message):
            continue
        if generation_only(e, log):
            continue  # a failure of GRPO's generation path, on a run that trains offline
        if _line_refused(e, tb):
            continue  # the entry spells out its exception's line, and this one is another
        held = _holds(tb, frames)
        if held is None and _symptom_line(e, tb) and _placed_at(tb, log, frames):
            held = True  # no frame shown: the raise-site index places its message at the entry's frame
        if held is False:
            continue
        verdict, detail = versions_verdict(e.packages, log)
        if verdict is False or (held is None and verdict is not True):
            continue  # neither the frame nor the versions show it: the message alone is everywhere
        score = (2 if held else 0) + (1 if verdict else 0)
        if best is None or score > best[0]:
            best = (score, e, bool(held), verdict, detail)
    if best is None:
        return None
    _, e, held, verdict, detail = best
    frame = next(
        (
            f
            for t in tb.all()
            for f in t.frames
            for p, _, fn in e.raised[2]
            if f.package == p and f.function.endswith(fn or f.function)
        ),
        None,
    )
    placed = _placed_at(tb, log, e.raised[2]) if held and frame is None else None
    shown = (
        f"raised in {_frame_text(frame)}"
        if held and frame
        else f"raised in {placed} (placed by its message in envdoctor's raise-site index; no frame shown)"
        if placed
        else "the log shows no frame of it"
    )
    d = finding(
        "TRI011",
        [m],
        log,
        f"{e.title} — {e.cause} ({e.id}); {shown}; {detail}",
        e.fix + (f" (fixed in {', '.join(f'{k} {v}' for k, v in e.fixed_in.items())})" if e.fixed_in else ""),
        known_failure=e.id,
        sources=list(e.sources),
        versions_match=verdict,
        unshown_bounds=_unshown_bounds(e.packages, log),
        located_by="raise-site index" if placed else "frames" if held else "exception and versions",
    )
    # the log's releases are the entry's, or its own frame raised what the entry says and its
    # cause does not hinge on releases the log hides (classes.versionless)
    certain = verdict is True or (held and verdict is None and versionless(e))
    return at_severity(d, Severity.ERROR if certain else Severity.WARNING)


def _versions(log: Log) -> dict[str, str]:
    return {d: v.version for d, v in log.versions.items() if v.exact}


def _seen(log: Log, dist: str) -> bool:
    """Whether the log shows ``dist``'s version (not a release its traceback's frames fit)."""
    v = log.versions.get(dist)
    return v is None or not v.inferred


def _inferred(log: Log, dists: Sequence[str]) -> list[str]:
    """``deepspeed 0.16.0 to 0.16.3 (inferred from the traceback's frames)`` for each of ``dists``
    whose release the log does not show but its traceback's frames place."""
    out: list[str] = []
    for dist in dict.fromkeys(dists):
        v = log.versions.get(dist)
        if v is not None and v.inferred:
            out.append(f"{dist} {v.range_text()} (inferred from the traceback's frames)")
    return out


def drift(tb: Traceback, ms: Sequence[Match], log: Log, matched: Sequence[Any] = ()) -> Draft | None:
    """API drift at a package boundary (module docstring, 2): the one answer of TRI009, for the
    signatures of drift (an import, an attribute, a call) and for any failing line alike."""
    for t in (tb, *reversed(tb.chain)):  # a folder of the user's code in the package's place
        shadow = structclass.shadowed_by_folder(t, ms[0], log) or roots.two_roots(t, ms[0], log)
        if shadow is not None:
            return shadow
    from envdoctor.triage import artifacts  # a file or a model's code of another release

    loaded = artifacts.answer(tb, ms, log)
    if loaded is not None:
        return loaded
    have = _versions(log)
    if tb.name == "TypeError":
        from envdoctor.triage import (
            patches,
            symbols,  # the history is read only for such a failure
        )

        stand_in = patches.verdict(tb, have)  # a wrapper's patch in place of another package's method
        patch = symbols.patched_keyword(tb, have)
        if patch is not None:
            d = patched(patch, tb, ms, log, have)
            if stand_in is not None:  # the original's change too: the pin of the patched package
                f = d.finding
                more = (
                    f"; or pip install '{stand_in.package}<{stand_in.pin}' ({stand_in.package}' "
                    f"{stand_in.qualname}, which {patch.func}() stands in for, is called differently "
                    f"from {stand_in.pin}: {stand_in.changed})"
                )
                d.finding = Finding(f.rule, f.severity, f.message, f.fix + more, f.evidence)
                if stand_in.certain:
                    d = at_severity(d, Severity.ERROR)
            return d
        if stand_in is not None:
            return patch_drift(stand_in, ms, log)
    if tb.name == "AttributeError" and tb.frames:
        from envdoctor.triage import symbols

        sub = symbols.subclass_attribute(tb)
        if sub is not None:  # a trainer handed its config's base class
            return unfit(tb, ms, log, have, sub)
    b = boundary.find(tb)
    if b is not None and b.intra:
        return own_drift(b, ms, log, have)
    history = None
    by_history = False  # the boundary placed by the symbol history alone (no table, no frames)
    if tb.name in ("ImportError", "ModuleNotFoundError", "AttributeError", "TypeError"):
        from envdoctor.triage import symbols  # the history is read only for such a failure

        if b is None:
            found = symbols.find(tb, have, ms[0].context)
            if found is None:
                return unfit(tb, ms, log, have)  # a name no release has: meant another name or class
            b, history = found
            by_history = True
            own = _own_frame_call(tb, b)
            if own is not None:  # the package's own frame made the call: it does not fit itself
                return own_drift(own, ms, log, have)
        elif b.override is None or b.caller is not None:
            history = symbols.verdict(tb, have, b.callee)
        # else an override of the user's (or of a class no package defines): the callee's history
        # tells of its own method, which its installed release calls as it takes it
        if history is not None and history.contradicted:
            return _not_drift(tb, ms, history)
    if b is None:
        return None
    logged = dict(have)
    if log.ctx is not None and log.ctx.facts.source != "live":  # --facts, where the log shows none
        for dist in {b.caller, b.callee, "trl", "vllm"} - {None}:
            v = log.ctx.version(str(dist))
            if v and dist not in have:
                have[str(dist)] = v
    kb = log.ctx.kb if log.ctx is not None else knowledge()
    fix, source = boundary.pair_fix(b, have, kb, _entries(), ms[0].context, matched)
    if b.callee == "torch" and b.caller == "vllm" and not source and have.get("vllm"):
        pin = next((p for p in kb.vllm.get("torch_pins") or [] if str(p.get("vllm")) == have["vllm"]), None)
        if pin is not None and pin.get("torch"):  # vLLM's own pin of torch (its wheel's Requires-Dist)
            fix = (
                f"pip install 'torch=={pin['torch']}' (vllm {have['vllm']} requires it: its wheel's "
                f"Requires-Dist); or install the vllm release made for your torch"
            )
            source = "vLLM's torch pins (rules/knowledge/vllm.yaml)"
    if history is not None and not source:
        from envdoctor.triage import symbols

        # the release of B that the log's A requires (A's Requires-Dist), then B's history's range
        fix, source = symbols.pin_fix(b.caller, history, have) or ("", "")
    if history is not None and not source:
        # the release where the symbol appeared or vanished: the pair that works, from B's history
        fix, source = _history_fix(b, history), HISTORY
    elif history is not None and history.fits() and not source.startswith("the known-failures catalogue"):
        fix += f"; or pip install '{history.package}{history.fits()}' ({history.said()})"
    imported = None
    if tb.name == "ImportError" and source in ("", HISTORY):
        from envdoctor.triage import importers  # which package's releases import the name

        framed = any(t.frames for t in tb.all())
        imported = importers.answer(tb, b, history, have, framed, importers.notebook(tb, log.head))
        if imported is not None:
            fix, source = imported.fix, importers.SOURCE
    if history is not None and tb.name == "TypeError":
        from envdoctor.triage import symbols

        now = symbols.renamed(tb)  # the name the keyword has now: the code's own fix
        if now is not None:
            fix = (
                f"rename {now[0]}= to {now[1]}= in the call ({history.package} takes {now[1]} from "
                f"{now[2]}); or {fix}"
            )
        moved = symbols.config_field(tb) if now is None else None  # the option went to its config
        if moved is not None:
            kwarg, cls, config, since = moved
            passed = " (the config passed as args=)" if cls.endswith("Trainer") else ""
            when = f"from {history.package} {since}" if since else f"in every {history.package} release read"
            fix = (
                f"move {kwarg}= from {cls}(…) to {config}({kwarg}=…){passed}: {config} takes {kwarg} "
                f"{when}; or {fix}"
            )
    if source == HISTORY and not boundary.shape_certain(tb, b) and _catalogued(ms[0], log):
        return None  # a catalogue entry names this very line: its answer, not the history's
    certain = bool(source) or boundary.shape_certain(tb, b)
    if source == HISTORY and history is not None and not history.certain:
        certain = False  # an attribute a base class sets in one of its methods: maybe not yet run
    elif not certain and (b.caller is None or b.ambiguous and not b.forwarded or tb.name == "AttributeError"):
        # the user's code against a package, a message that a bug of the caller gives too, an
        # object's attribute (another kind of object): nothing known of the pair for the log's
        # versions, the first-exception answer
        return None
    if imported is not None and not imported.certain:
        certain = False  # (c): the importer's requirement covers the name, the log's versions tell
    if (
        source == HISTORY
        and history is not None
        and history.placed is None
        and tb.name == "AttributeError"
        and _module_wrapper(tb.message, kb)
    ):
        # a module wrapper's own attribute (DeepSpeedEngine.no_sync) that the history has in some
        # releases of B, and the log shows no B: whether the installed wrapper lacks it, or the
        # attribute was read through it from the model, hinges on that version (wrapped.py's warning)
        certain = False
    if history is not None and history.older_possible and source == HISTORY:
        # removed later, or not yet added in a release older than those read: the fix covers both
        upper = history.fits()
        fix += (
            f"; if `pip show {history.package}` gives a release older than {history.older_possible}, it "
            f"may predate it: pip install '{history.package}>={history.older_possible}"
            + (f",{upper}" if upper.startswith("<") else "")
            + "'"
        )
    cut_off = b.caller_frame is None and tb.name in ("ImportError", "ModuleNotFoundError")
    unseen = source == HISTORY and not any(t.frames for t in tb.all())  # who called is not shown
    caller = b.caller or (
        f"the importing code (cut off in the log; envdoctor's knowledge names {imported.caller})"
        if cut_off and imported is not None and imported.caller
        else "the importing code (cut off in the log)"
        if cut_off
        else "the calling code (the log shows no frames)"
        if unseen
        else "your code"
    )
    shown = [f"{d} {logged[d]}" for d in (b.caller, b.callee) if d and d in logged and _seen(log, d)]
    entry = None
    if source.startswith("the known-failures catalogue"):  # and the versions of the entry's packages
        entry = next((e for e in _entries() if e.id in source), None)
        also = [d for d in (entry.packages if entry else {}) if d in logged and _seen(log, d)]
        shown = list(dict.fromkeys(shown + [f"{d} {logged[d]}" for d in also]))
    at = ""
    if b.caller_frame is not None or b.callee_frame is not None:
        sides = [s for s in (_frame_text(b.caller_frame), _frame_text(b.callee_frame)) if s]
        at = f" at {' → '.join(sides)}"
    note = (
        " (vLLM's V1 engine, the default from 0.8, runs the model in its own process: "
        "llm_engine.model_executor is gone)"
        if b.callee == "vllm" and b.name == "model_executor"
        else ""
    )
    if source.startswith("the known-failures catalogue"):
        note += f" ({source.removeprefix('the known-failures catalogue ').strip('()')}, a known failure)"
    if b.forwarded:
        note += f" ({caller} passes on keywords it was given: one may come from your configuration)"
    if history is not None:
        note += f" ({history.text()})"
    if imported is not None:
        note += imported.note
    no_release = fix.startswith(f"remove {b.name}=")  # a keyword no release takes: the call itself
    head = (
        f"{caller} calls {b.func}() with '{b.name}', which no {b.callee} release envdoctor knows "
        f"takes: the call, not the releases, is wrong{at}; "
        if no_release
        else f"API drift between {caller} and {b.callee}: {b.text(have, caller)}{note}: "
        f"the two releases do not fit{at}; "
    )
    what = head + (f"the log shows {', '.join(shown)}" if shown else "the log shows neither version")
    placed = _inferred(log, [d for d in (b.caller, b.callee, *(entry.packages if entry else {})) if d])
    if placed:
        what += f"; the traceback's frames place {', '.join(placed)}"
    d = finding(
        "TRI009",
        list(ms),
        log,
        what,
        fix,
        caller=b.caller,
        callee=b.callee,
        exception=tb.name,
        answer_from=source or None,
        boundary_from="history" if by_history else None,
    )
    # the failure is the drift's symptom: an error when its shape at the boundary is drift whatever
    # the pair, or the answer is proved by the knowledge; an attribute of an unknown pair: likely
    return at_severity(d, Severity.ERROR if certain else Severity.WARNING)


HISTORY = "the symbol history (rules/knowledge/symbols/)"
#: the configuration classes of the trainers most runs use, named first in a fix that cannot see
#: which trainer read the field
COMMON_CONFIGS = ("GRPOConfig", "DPOConfig", "SFTConfig", "RLOOConfig", "KTOConfig", "ORPOConfig")


def _calling(tb: Traceback, package: str) -> Frame | None:
    """The innermost frame that is not ``package``'s nor Python's own: the code that called or
    read (the user's, or a wrapper package's)."""
    frames = tb.shown_frames()
    return next(
        (f for f in reversed(frames) if f.package != package and (f.package or boundary._user(f))), None
    )


def unfit(
    tb: Traceback, ms: Sequence[Match], log: Log, have: dict[str, str], found: Any = None
) -> Draft | None:
    """TRI009 for code that fits no release of a package as written (``symbols.Unfit``): a keyword
    no release of the class takes, where the class takes a name close to it (a rename: the code was
    written for another package's naming, or another release's); an attribute no release of a class
    has that its subclasses of another package have (the code expected such a subclass). An error:
    the history of every release read settles it."""
    from envdoctor.triage import symbols

    tb = symbols.as_init(tb)  # "SFTConfig() got an unexpected keyword argument": its constructor's
    u = found or symbols.unknown_keyword(tb) or symbols.subclass_attribute(tb)  # ``found``: the caller's
    if u is None:
        added = symbols.added_field(tb)
        return None if added is None else added_field(added, tb, ms, log, have)
    if u.func and not u.close:
        # a keyword no release takes and nothing close: a configuration class's constructor handed
        # another class's field (a wrapper's own arguments passed on); any other call, TRI003's
        foreign = symbols.foreign_field(u)
        return None if foreign is None else foreign_field(foreign, tb, ms, log, have)
    innermost = tb.frames[-1] if tb.frames else None
    if u.func and innermost is not None and innermost.package == u.package:
        return None  # the package's own call (a call's shape raises in the caller): TRI031's, not the user's
    frame = _calling(tb, u.package)
    caller = _frame_text(frame) if frame is not None else "your code"
    read = f"{len(u.releases)} {u.package} releases read, {u.releases[0]} to {u.releases[-1]}"
    version = have.get(u.package)
    shown = f"; the log shows {u.package} {version}" if version else ""
    span = _span_said(u.package, u.since, u.until, u.releases)
    if u.func:
        call = u.cls if u.func == "__init__" else f"{u.cls}.{u.func}"
        what = (
            f"{caller} calls {call}() with '{u.name}', which no {u.package} release takes ({read}): "
            f"{u.package} names it '{u.close}' ({span}): the code was written for another naming of that "
            f"option (a wrapper's, or another release's){shown}"
        )
        pin = f"{u.package}>={u.since}" + (f",<{u.until}" if u.until else "")
        fix = (
            f"rename {u.name}= to {u.close}= in the {call}(...) call "
            f"({u.package} takes {u.close} {span}: pip install '{pin}' where the installed release is "
            "older); where a package of yours (a wrapper) builds the call, upgrade it to a release that "
            "uses the new name"
        )
    else:
        subs = list(u.subclasses)
        trainer = _trainer_config(tb, u.package, subs)
        if trainer is not None:  # the package's trainer that read it: its own configuration class
            subs.remove(trainer[0])
            subs.insert(0, trainer[0])
            caller = f"{trainer[0].removesuffix('Config')}Trainer ({u.package} {trainer[1]})"
            h = symbols.history(u.package)
            since, until = symbols._span(h, h.member(trainer[0], "a", u.name)[0]) if h else ("", "")
            if since:  # the span said is that class's, not the first subclass's
                span = _span_said(u.package, since, until, u.releases)
        named = ", ".join(subs[:3]) + (f" and {len(subs) - 3} more" if len(subs) > 3 else "")
        what = (
            f"{caller} reads {u.name} from a {u.cls}, which no release of {u.cls} has: {u.name} is a "
            f"field of {u.package}'s {named} (subclasses of {u.cls}; {subs[0]} has it {span}; {read}): "
            f"the code expected one of them and was given a plain {u.cls} — code written for the "
            f"{u.package} release whose configuration it builds, run with another{shown}"
        )
        # the trainer that reads it is not in the log: the config class of the trainer the code
        # runs, of those that have the field (a DPOTrainer run needs DPOConfig, not GRPOConfig)
        common = [c for c in COMMON_CONFIGS if c in subs] or subs[:1]
        each = ", ".join(f"{c} for {c.removesuffix('Config')}Trainer" for c in common)
        fix = (
            f"make the code build the configuration class of the trainer it runs where it creates its "
            f"arguments, not a plain {u.cls} ({each}: each has {u.name}), or install the {u.package} "
            f"release the code was written for (its requirements or README pin it; {subs[0]} has "
            f"{u.name} {span})"
        )
        if trainer is not None:
            fix = (
                f"pass args={subs[0]}(...) (from {u.package} import {subs[0]}) to "
                f"{subs[0].removesuffix('Config')}Trainer instead of a {u.cls}, with the same values (the "
                f"trainer's own settings the code passes as keywords belong there too); or install the "
                f"{u.package} release the code was written for (its requirements or README pin it)"
            )
    d = finding(
        "TRI009",
        list(ms),
        log,
        what,
        fix,
        caller=frame.package if frame is not None else None,
        callee=u.package,
        exception=tb.name,
        answer_from=HISTORY,
    )
    return at_severity(d, Severity.ERROR)


def _span_said(package: str, since: str, until: str, releases: Sequence[str]) -> str:
    """``from trl 0.14.0 until 0.29.0 (removed there)``; the oldest release read said as such (the
    history starts there: maybe earlier)."""
    oldest = bool(releases) and since == releases[0]
    start = f"by {package} {since}, the oldest release read" if oldest else f"from {package} {since}"
    return start + (f" until {until} (removed there)" if until else "")


def _trainer_config(tb: Traceback, package: str, configs: Sequence[str]) -> tuple[str, str] | None:
    """The configuration class (among ``configs``) of ``package``'s trainer whose frame read the
    attribute: from the frame's class (``DPOTrainer.__init__``) or file (``dpo_trainer.py``);
    (class, the frame's place), or None."""
    by_stem = {c.lower().removesuffix("config"): c for c in configs}
    for f in reversed(tb.frames):
        if f.package != package:
            continue
        owner = f.function.split(".")[0] if "." in f.function else ""
        if owner.endswith("Trainer") and f"{owner.removesuffix('Trainer')}Config" in configs:
            return f"{owner.removesuffix('Trainer')}Config", f.at
        stem = f.module_path.rsplit("/", 1)[-1].removesuffix(".py")
        if stem.endswith("_trainer") and stem.removesuffix("_trainer").replace("_", "") in by_stem:
            return by_stem[stem.removesuffix("_trainer").replace("_", "")], f.at
    return None


def foreign_field(f: Any, tb: Traceback, ms: Sequence[Match], log: Log, have: dict[str, str]) -> Draft | None:
    """TRI009 for a configuration class's constructor handed a keyword that no release read of the
    class takes (``symbols.Foreign``): the code building it passes a field the class never had (a
    wrapper passing its own arguments on, another class's field): the key to remove. An error where
    the releases read are the class's whole history (it first appears after the oldest read); a
    warning otherwise (a release before them is not read)."""
    u = f.unfit
    innermost = tb.frames[-1] if tb.frames else None
    if innermost is not None and innermost.package == u.package:
        return None  # the package's own call (a call's shape raises in the caller): TRI031's
    frame = _calling(tb, u.package)
    if frame is not None:
        by = _frame_text(frame)
    else:
        by = "the code that builds it (the log shows no frame: a wrapper package, or your script)"
    read = f"{len(u.releases)} {u.package} releases read, {u.releases[0]} to {u.releases[-1]}"
    if f.older:
        read += f", and {f.older} older ones' configuration classes"
    if f.complete:
        whole = (
            f"{u.cls} first appears in {u.package} {f.first}: these are all its releases up to "
            f"{u.releases[-1]}, the newest envdoctor reads"
        )
    elif f.older and f.unasked:  # its older releases are read, a base the index does not hold is not
        bases = ", ".join(f.unasked[:3])
        whole = (
            f"{u.cls}'s base{'s' if len(f.unasked) > 1 else ''} {bases} in those older releases "
            f"{'are' if len(f.unasked) > 1 else 'is'} not read"
        )
    else:
        whole = f"{u.cls} is older than {u.releases[0]}: releases before it are not read"
    if f.was:  # a field of the class in releases before the symbol history: removed, drift
        lo, hi, gone = f.was
        span = lo if lo == hi else f"{lo}–{hi}"
        what = (
            f"{by} passes {u.name}= to {u.cls}(), a field of {u.package}'s {u.cls} in {span} only "
            f"(removed in {gone}; {read}): code written for {u.package} {hi} or earlier, run with a later "
            "release"
        )
        fix = (
            f"remove {u.name}= from the {u.cls}(...) call (or rename it to the field that replaced it, "
            f"{u.package} {gone}'s release notes name it); or pip install '{u.package}<={hi}', the "
            "release the calling code was written for"
        )
        d = finding(
            "TRI009",
            list(ms),
            log,
            what,
            fix,
            caller=frame.package if frame is not None else None,
            callee=u.package,
            exception=tb.name,
            answer_from=CONFIG_FIELDS,
        )
        return at_severity(d, Severity.ERROR)
    others = ""
    if f.owners:
        named = ", ".join(f.owners[:3]) + (f" and {len(f.owners) - 3} more" if len(f.owners) > 3 else "")
        others = f"; {u.package}'s {named} take{'s' if len(f.owners) == 1 else ''} {u.name}="
    version = have.get(u.package)
    shown = f"; the log shows {u.package} {version}" if version else ""
    what = (
        f"{by} passes {u.name}= to {u.cls}(), a field no {u.package} release of {u.cls} has ({read}; "
        f"{whole}){others}: the caller hands {u.cls} another class's field (its own arguments, or "
        f"another configuration's), not a field a release read renamed or removed{shown}"
    )
    fix = (
        f"remove {u.name}= from the {u.cls}(...) call (or set it on the class that has it"
        + (f": {f.owners[0]}" if len(f.owners) == 1 else "")
        + "); where a wrapper package builds the call from its own arguments, upgrade it to a "
        f"release written for the installed {u.package} (its release notes or requirements name it); "
        f"where the calling code follows {u.package}'s main branch, a {u.package} newer than "
        f"{u.releases[-1]} may have added it: its release notes say"
    )
    d = finding(
        "TRI009",
        list(ms),
        log,
        what,
        fix,
        caller=frame.package if frame is not None else None,
        callee=u.package,
        exception=tb.name,
        answer_from=HISTORY,
    )
    return at_severity(d, Severity.ERROR if f.complete else Severity.WARNING)


CONFIG_FIELDS = "the config-field index of older releases (rules/knowledge/config_fields/)"


def added_field(a: Any, tb: Traceback, ms: Sequence[Match], log: Log, have: dict[str, str]) -> Draft | None:
    """TRI009 for a configuration class's keyword that came with a release older than the symbol
    history (``symbols.Added``): the installed release predates it. An error: every release from
    that one on takes it, every release before it that has the class does not."""
    innermost = tb.frames[-1] if tb.frames else None
    if innermost is not None and innermost.package == a.package:
        return None  # the package's own call: TRI031's
    frame = _calling(tb, a.package)
    by = _frame_text(frame) if frame is not None else "the calling code (the log shows no frames)"
    version = have.get(a.package)
    if versions.at_least(version, a.since):
        return None  # the log's release takes it: the call met another one (another environment's)
    shown = f"; the log shows {a.package} {version}" if version else ""
    what = (
        f"{by} passes {a.name}= to {a.cls}(), which {a.package} takes from {a.since} on ({a.before} and "
        f"earlier have no such field; envdoctor's config-field index and symbol history): the installed "
        f"{a.package} is older than {a.since}, the code was written for a later release{shown}"
    )
    fix = (
        f"pip install '{a.package}>={a.since}' (the first release whose {a.cls} takes {a.name}); or "
        f"remove {a.name}= from the {a.cls}(...) call where the run must keep the older {a.package}"
    )
    d = finding(
        "TRI009",
        list(ms),
        log,
        what,
        fix,
        caller=frame.package if frame is not None else None,
        callee=a.package,
        exception=tb.name,
        answer_from=CONFIG_FIELDS,
    )
    return at_severity(d, Severity.ERROR)


def patch_drift(p: Any, ms: Sequence[Match], log: Log) -> Draft:
    """TRI009 for a wrapper's patch that no longer fits the call of the package it patches
    (``patches.Drift``): an error where the wrapper's own history has a release whose patch gives
    the log's very message, or the log's release of the patched package makes the new call; else a
    warning (the cause hinges on releases the log does not show)."""
    from envdoctor.triage import patches

    what, fix = patches.text(p)
    d = finding(
        "TRI009",
        list(ms),
        log,
        what,
        fix,
        caller=p.package,
        callee=p.wrappers[0],
        exception="TypeError",
        answer_from="the patch history (rules/knowledge/patches.json.gz) and the signature history",
    )
    return at_severity(d, Severity.ERROR if p.certain else Severity.WARNING)


def patched(p: Any, tb: Traceback, ms: Sequence[Match], log: Log, have: dict[str, str]) -> Draft:
    """TRI009 for a patching package's replacement that does not take a keyword its caller passes
    (``symbols.Patch``): liger-kernel's ``lce_forward`` in place of a model's forward, called by a
    transformers that passes ``cache_position``. The answer is the patch's first release whose every
    definition takes the keyword; where none does yet, the caller's release before it passed it.
    An error where the log names the patching package (its patch is in the run), else a warning:
    another package may define a function of that name."""
    frames = [f for t in tb.all() for f in t.frames]
    forward = any(
        f.package == "torch" and f.function in ("_call_impl", "_wrapped_call_impl") for f in frames[-2:]
    )
    caller_frame = next(
        (f for f in reversed(frames) if f.package not in (None, "torch", p.package)),
        None,
    )
    caller = caller_frame.package if caller_frame is not None else None
    owner = f"{caller}'" if caller and caller.endswith("s") else f"{caller}'s"
    # called through torch's module call: the function stands in for the model's forward
    role = f", which {p.package} puts in place of {owner} model forward," if forward and caller else ""
    where = ", ".join(p.modules[:3]) + (f" and {len(p.modules) - 3} more" if len(p.modules) > 3 else "")
    version = have.get(p.package)
    shown = f"; the log shows {p.package} {version}" if version else f"; the log shows no {p.package} version"
    # a release newer than the history: whether it takes the keyword is past envdoctor's knowledge
    past = bool(version) and version not in p.releases and versions.below(p.releases[-1], str(version))
    if past:
        shown += f", newer than the releases read: whether it takes '{p.name}' is not known"
    by = f"{_frame_text(caller_frame)} passes it" if caller_frame is not None else "its caller passes it"
    read = f"{len(p.releases)} releases read, {p.releases[0]} to {p.releases[-1]}"
    if p.since and not past:
        span = f"every {p.func}() of {p.package} takes it from {p.package} {p.since} ({read})"
        fix = (
            f"pip install '{p.package}=={p.since}' (the first release whose every {p.func}() takes "
            f"{p.name}; a later one does too)"
            + (
                f"; or pin {caller} to the release your {p.package} was written for (its requirements)"
                if caller
                else ""
            )
        )
    elif past:
        took = f"{p.package} {p.since} to {p.releases[-1]} take it" if p.since else "no release read takes it"
        span = f"{took} ({read})"
        fix = (
            f"check whether your {p.package} {version} takes {p.name}= (its release notes); if not, pin "
            f"{caller or 'the calling package'} to the release your {p.package} was written for"
        )
    else:
        span = f"no {p.package} release read takes it ({read})"
        fix = (
            f"pin {caller} to the release before it passed {p.name}= (the range your {p.package} release "
            f"supports), or run without the {p.package} patch until a release of it takes {p.name}"
            if caller
            else f"run without the {p.package} patch until a release of it takes {p.name}, or pin the "
            f"calling package to the release your {p.package} was written for"
        )
    what = (
        f"API drift between {caller or 'the calling package'} and {p.package}: {p.package}'s {p.func}() "
        f"({where}){role} does not take '{p.name}', and {by}: "
        + (
            f"{p.package} is older than the code that calls it; "
            if p.since
            else f"the calling code was written for another {p.package} API; "
        )
        + f"{span}{shown}"
    )
    d = finding(
        "TRI009",
        list(ms),
        log,
        what,
        fix,
        caller=caller,
        callee=p.package,
        exception=tb.name,
        answer_from=HISTORY,
    )
    head = log.head.lower()  # its distribution or import name (liger_ce of another package is not it)
    named = p.package.encode() in head or p.package.replace("-", "_").encode() in head
    return at_severity(d, Severity.ERROR if named and not past else Severity.WARNING)


def _own_frame_call(tb: Traceback, b: boundary.Boundary) -> boundary.Boundary | None:
    """The boundary the symbol history placed (no frame index knows the callee: a dataclass's
    generated ``__init__``) as the package's call of its own function, where the innermost frame
    (a call that does not bind raises in the caller's frame) is that package's and its source line
    calls the function by name, passing no keywords it was given (``**``)."""
    from dataclasses import replace

    frames = tb.shown_frames()
    caller = frames[-1] if frames else None
    if (
        tb.name != "TypeError"
        or b.caller is not None
        or caller is None
        or caller.package != b.callee
        or not caller.code
        or "**" in caller.code
        or not b.func
        or not boundary.calls_by_name(caller.code, b.func)
    ):
        return None
    call = boundary.CALL_SHAPE.search(tb.message)
    kwarg = call.group("kwarg") if call else None
    verb = f"calls {b.func}() with {kwarg}=" if kwarg else b.verb
    lacks = "does not take in the installed release" if kwarg else b.lacks
    return replace(b, caller=b.callee, caller_frame=caller, intra=True, verb=verb, lacks=lacks)


def own_drift(b: boundary.Boundary, ms: Sequence[Match], log: Log, have: dict[str, str]) -> Draft:
    """A package's call of its own function that does not fit it (``boundary.own_call``): TRI031,
    an error for a method (``Class.method``: a subclass of the user's would print its own class),
    a warning for a bare function (the package may call a function of the user's of that name, a
    reward function) or where the log shows a package that patches others' functions at run time
    (Unsloth replaces TRL's and transformers' with its own: the callee may be the patch)."""
    pkg = str(b.callee)
    version = have.get(pkg)
    shown = f"{pkg} {version}" if version else pkg
    where = f" ({', '.join(b.defined_in)})" if b.defined_in else ""
    what = (
        f"{shown}'s own code does not fit itself: {_frame_text(b.caller_frame)} {b.verb}, which "
        f"{pkg}'s {b.func}(){where} {b.lacks}: the caller and the callee are of two {pkg} "
        "revisions (a regression inside that release, or files of two revisions mixed: a source "
        "checkout or a Ray working_dir copy beside the installed package)"
    )
    fix = (
        f"reinstall the {pkg} release you run so no file of another revision is left (pip install "
        f"--force-reinstall --no-deps '{pkg}=={version or '<the release `pip show ' + pkg + '` names>'}'); "
        "from a source checkout, update it (git pull) and install it again (pip install -e .). If "
        f"that release fails the same way, the call and {b.func}() disagree inside it: the newest "
        f"(pip install -U '{pkg}'), or pin the release you ran before, and report it upstream with "
        "this traceback"
    )
    patched = any(p in ("unsloth", "unsloth-zoo") for p in log.versions) or any(
        "unsloth" in (f.path or "").lower() for t in b.exc.all() for f in t.frames
    )
    # a function, not a method nor a class: the package may call one of yours so named
    bare = "." not in b.func and not b.func[:1].isupper()
    if bare:
        what += (
            f"; unless {b.func} here is a function of yours the package calls by that name (a reward "
            "or scoring function you gave it): then yours lacks the argument"
        )
    d = finding("TRI031", list(ms), log, what, fix, caller=pkg, callee=pkg, exception=b.exc.name)
    f = d.finding
    evidence = {**f.evidence, "defined_in": list(b.defined_in)}
    severity = Severity.WARNING if patched or bare else Severity.ERROR
    d.finding = Finding(f.rule, severity, f.message, f.fix, evidence)
    return d


def _module_wrapper(msg: str, kb: Any) -> bool:
    """The message's object is a module wrapper of rules/knowledge/wrappers.yaml."""
    m = boundary._OBJECT_ATTR.search(msg)
    table = (getattr(kb, "wrappers", None) or {}).get("wrappers") or {}
    return m is not None and m.group("obj").rsplit(".", 1)[-1] in table


def _catalogued(m: Match, log: Log) -> bool:
    """A catalogue entry's symptom matched the failing line ``m`` itself."""
    from envdoctor.triage import catalogue

    entries = catalogue.catalogue()[2]
    return any(o.line_no == m.line_no and o.signature.id in entries for ms in log.by_sig.values() for o in ms)


def _history_fix(b: boundary.Boundary, v: Any) -> str:
    """The pair that works from B's symbol history ``v``: B in the range where the failing line
    works, or A's release made for the installed B."""
    fits = v.fits()
    pin = f"pip install '{v.package}{fits}'"
    why = v.said()
    a = b.caller
    if a is not None:
        other = f"install the {a} release made for the installed {v.package}" + (
            f" {v.shown}" if v.shown else f" (`pip show {a}` lists its requirements)"
        )
    elif b.exc.name in ("ImportError", "ModuleNotFoundError") and b.caller_frame is None:
        other = "update the importing code (cut off in the log) for the installed release"
    elif not any(t.frames for t in b.exc.all()):
        other = f"update the calling code (not shown in the log) for the installed {v.package}"
    else:
        other = f"update your code for the installed {v.package}{' ' + v.shown if v.shown else ''}"
    return f"{pin} ({why}); or {other}"


def _not_drift(tb: Traceback, ms: Sequence[Match], v: Any) -> Draft:
    """The log's version of B has the symbol: the failure is not that release's API (TRI003)."""
    m = ms[0]
    what = (
        f"{tb.name}: {tb.message[:300]} — not API drift of {v.package}: the log's {v.package} {v.shown} "
        f"has {v.what} (envdoctor's symbol history, {v.span()}), so another copy of {v.package} "
        "is the one imported (a second install on the path, a local file or folder of the same name), "
        "or the install is partial"
        + (
            ", or the object has not set it yet (an attribute set by a method that has not run: "
            "evaluate() before train())"
            if tb.name == "AttributeError" and not v.what.startswith("the module")
            else ""
        )
    )
    module = v.package.replace("-", "_")
    fix = (
        f"python -c 'import {module}; print({module}.__file__, {module}.__version__)' in the run's "
        f"environment: the path and version must be the {v.package} the log shows; reinstall it "
        f"(pip install --force-reinstall --no-deps '{v.package}=={v.shown}') or remove the shadowing copy"
    )
    ev = {"line": m.line_no, "exception": tb.name, "package": v.package, "symbol": v.what, "shown": v.shown}
    return Draft(m.line_no, Finding("TRI003", Severity.WARNING, what, fix, ev))


#: TRL's own configuration checks: its config dataclasses' ``__post_init__`` and its trainers'
#: ``__init__`` (``trl/trainer/grpo_config.py``, ``trl/trainer/grpo_trainer.py``, base_config.py)
_TRL_CHECK = re.compile(r"(?:^|/)trainer/\w{1,60}_(?:config|trainer)\.py$")
_REFUSALS = ("ValueError", "NotImplementedError")


def trl_refusal(tb: Traceback, m: Match, log: Log) -> Draft | None:
    """TRL's own check refused the configuration (TRI012): the exception raised in TRL's config
    ``__post_init__`` or trainer ``__init__`` frame, which names what it refused; no versions are
    needed. A message the log cuts off (the log ends on it) is said to be cut, with what to paste."""
    if tb.name not in _REFUSALS or not tb.frames or not tb.message:
        return None  # a bare exception names nothing it refused
    last = tb.frames[-1]
    if last.package != "trl" or not _TRL_CHECK.search(last.module_path):
        return None
    if last.function not in ("__init__", "__post_init__") or not last.code.startswith("raise"):
        return None
    where = _frame_text(last)
    what = f"TRL's own check refused the configuration, in {where}: {tb.message}"
    cut_off = log.lines and m.line_no >= log.lines and not tb.message.rstrip().endswith((".", ")", "'", '"'))
    if cut_off:
        what += " (the log ends inside the message: paste the whole exception line, and the lines after it)"
    fix = (
        "change the setting the message names in your GRPOConfig / GRPOTrainer(...) call (TRL checks it "
        "before any step, whatever the releases); envdoctor check --config FILE checks a config "
        "against the TRL release before a run"
    )
    bound = refusal.release_bound(tb, log)  # a check of some releases only: which, and the others
    if bound is not None:
        what += f" — {bound.said()}"
    if bound is not None and (bound.first_without or not refusal._SUPPORT.search(tb.message)):
        fix = (
            "change the setting the message names in your trainer's config or call (TRL checks it before "
            f"any step, in every release of that range), or {bound.fix()}"
        )
    d = finding("TRI012", [m], log, what, fix, raised_in=where)
    return at_severity(d, Severity.ERROR)


def diagnose_failure(m: Match, log: Log) -> Draft | None:
    """The cause of the failing line ``m`` from its traceback, or None."""
    tb = failure(m.context, m.text, m.line_no) or missing.bare(m)
    if tb is None:
        return None
    # the exception itself, then those it was raised from, the latest first: a wrapper's re-raise
    # ("RuntimeError: Failed to import trl.trainer … (look up to see its traceback)") names no
    # cause, the exception it wraps does
    inner = structclass.lazy_inner(tb, m, log)  # a lazy import's re-raise: what it wraps first
    for t in ((inner,) if inner is not None else ()) + (tb, *reversed(tb.chain)):
        found = (
            structclass.shadowed_by_folder(t, m, log)
            or roots.two_roots(t, m, log)  # two installations: before any version's answer
            or raised_entry(t, m, log)
            or structclass.python_older(t, m, log)
            or pyboundary.stdlib_newer(t, m, log)
            or structclass.source_tree(t, m, log)
            or compiled.missing_part(t, m, log)  # an installed package without its compiled part
            or usercode.grouped_reshape(t, m, log)
            or missing.not_installed(tb, t, m, log)
            or missing.asked_install(tb, t, m, log)
            or namedrift.undefined_name(t, m, log)  # a name of one package's releases only
            or optional.undefined_name(t, m, log)
            or structclass.package_name_error(t, m, log)
            or columns.missing_column(t, m, log)
            or rewardout.reward_output(t, m, log)
            or inference.inference_tensor(t, m, log)
            or programs.missing_program(t, m, log)
            or wrapped.through_wrapper(t, m, log)
            or drift(t, [m], log)
            or stale_call(t, m, log)  # a model's code calling transformers (after drift's histories)
            or samename.foreign_object(t, m, log)
            or _lifted_raise(t, m, log)
            or trl_refusal(t, m, log)
            or hostenv.from_traceback(t, m, log)
            or hydra.config_error(tb, t, m, log)
            or refusal.vllm_validation(t, m, log)
            or guards.from_traceback(t, m, log)
            or refusal.package_refusal(t, m, log)
            or guards.any_check(t, m, log)
            or usercode.user_code(t, m, log)  # raised in the user's code (a check of its own: above)
            or _fixed_after(t, m, log)
            or wrapped.wrapper_api_on_bare_model(t, m, log)
            or hostenv.library_member_missing(t, m, log)  # a warning: after every certain answer
            or _new_raise(t, m, log)
        )
        if found is not None:
            return found
    return None


def _lifted_raise(t: Traceback, m: Match, log: Log) -> Draft | None:
    """The raise that printed the message is gone from a later release (TRI014, ``raisesites.py``)."""
    from envdoctor.triage import raisesites

    d = raisesites.lifted(t, m, log)
    if d is not None and d.finding.severity != Severity.ERROR and refusal.package_refusal(t, m, log):
        # a raise gone from a later release with no removal that says it lifts the restriction
        # (lifted or reworded: a warning), printed by a guard refusing the configuration: the
        # refusal's answer, which names the setting and the releases that have the check
        return None
    return d


def _new_raise(t: Traceback, m: Match, log: Log) -> Draft | None:
    """The raise that printed the message came with a release (TRI034, ``raisesites.py``)."""
    from envdoctor.triage import raisesites

    return raisesites.new_in_release(t, m, log)


def _fixed_after(t: Traceback, m: Match, log: Log) -> Draft | None:
    """A fix in a later release changed the function that raised (TRI014, ``fixhist.py``): from the
    frames of an exception with frames; of one the log shows without any, from the function its
    message places it in, or the attribute it says an object lacks (``fixhist.unframed``); else, for
    API drift, a later release's change that removed the raising line (``linehist.py``)."""
    if not t.exc_type:
        return None
    from envdoctor.triage import fixhist

    made = fixhist.generated(t.message, m, log, syntax=t.name in ("SyntaxError", "IndentationError"))
    if made is not None:  # a module Unsloth generated does not compile: its generator's bug
        return made
    if not t.frames:
        return fixhist.unframed(t, m, log)
    found = fixhist.fixed_after(t, m, log)
    if found is not None:
        return found
    from envdoctor.triage import linehist  # API drift: the release that changed the raising line

    return linehist.changed_line(t, m, log)


MAX_HEAD_HITS = 50  # lines tried per catalogue keyword in the head
HEAD_KEYWORD = 16  # characters of a symptom's literal that make it specific enough to be read in prose


#: the catalogue's signatures the trie was built from (held, so that a reload is told apart) -> it
_HEAD_KEYWORDS: list[tuple[tuple[Signature, ...], Literals[str] | None, dict[str, list[Signature]]]] = []


def _head_keywords() -> tuple[Literals[str] | None, dict[str, list[Signature]]]:
    """The catalogue keywords read in prose (``head_symptoms``) as one trie, and their signatures;
    built once per catalogue (keyed by the catalogue's signatures, which a reload replaces)."""
    from envdoctor.triage import catalogue, classes

    sigs, _, entries = catalogue.catalogue()
    if _HEAD_KEYWORDS and _HEAD_KEYWORDS[0][0] is sigs:
        return _HEAD_KEYWORDS[0][1], _HEAD_KEYWORDS[0][2]
    by_kw: dict[str, list[Signature]] = {}
    for sig in sigs:
        if getattr(entries.get(sig.id), "kind", "") not in classes.SEEN_KINDS:
            continue  # only a failure's own message: a warning's line is an anchor already
        for k in sig.keywords:
            if len(k) >= HEAD_KEYWORD:
                by_kw.setdefault(k.decode("utf-8", errors="replace"), []).append(sig)
    lits = Literals(by_kw) if by_kw else None
    _HEAD_KEYWORDS[:] = [(sigs, lits, by_kw)]
    return lits, by_kw


_BLANKS = re.compile(r"[^\S\n]{2,}")


def head_symptoms(head: bytes, log: Log) -> Draft | None:
    """A catalogue symptom on a line that the scan's anchors do not find, in a log that fits in
    its head (``ScanResult.head``, 1 MiB: a pasted excerpt, an issue's text): a message without
    its ``ValueError:`` prefix, quoted inside an issue's own words, in prose with full-width
    punctuation (``error：size mismatch``: the text is NFKC-normalised first). Only the symptoms
    of crashes and refusals whose literal has ``HEAD_KEYWORD`` characters or more (a short or
    generic word in prose is no failure), on lines the scan did not judge. Tried only when nothing
    else is named: one pass of the keywords' trie over the head, then the lines it hit (at most
    ``MAX_HEAD_HITS``). A shipped signature's message on such a line is ``toollines.unanchored``'s,
    tried before this."""
    import unicodedata

    from envdoctor.triage import classes
    from envdoctor.triage.scanner import clean, split_prefix

    lits, by_kw = _head_keywords()
    if not head or lits is None or lits.any is None:
        return None
    text = head.decode("utf-8", errors="replace")
    if not text.isascii():
        text = unicodedata.normalize("NFKC", text)
    text = _BLANKS.sub(" ", text)  # a line wrap pasted as a run of spaces: the words as they read
    seen = {m.line_no for ms in log.by_sig.values() for m in ms}  # judged by the scan already
    hit_lines: list[int] = []
    for found in lits.any.finditer(text):
        line_no = text.count("\n", 0, found.start()) + 1
        if not hit_lines or hit_lines[-1] != line_no:
            hit_lines.append(line_no)
        if len(hit_lines) >= MAX_HEAD_HITS:
            break
    if not hit_lines:
        return None
    lines = text.split("\n")
    best: Draft | None = None
    for line_no in hit_lines:
        if line_no in seen:
            continue
        raw = lines[line_no - 1]
        body = split_prefix(clean(raw.encode()))[0][:8192]
        sigs = {id(sig): sig for kw in lits.held(raw) for sig in by_kw.get(kw, ())}
        for sig in sigs.values():
            m = sig.pattern.search(body)
            if m is None:
                continue
            groups = {k: v for k, v in m.groupdict().items() if v is not None}
            match = Match(
                sig, line_no, body[:1000], groups, None, tuple(lines[max(0, line_no - 41) : line_no - 1])
            )
            for d in classes.known_failure([match], log):
                if best is None or d.finding.severity.rank > best.finding.severity.rank:
                    best = d
    return best


_CONTRADICTION = refusal.CONTRADICTION  # a check's "X must be A or B, got C"


def self_contradiction(head: bytes, log: Log) -> Draft | None:
    """A check that refused a value it lists as allowed (``vllm_mode must be either 'server' or
    'colocate', got 'server'``): a bug in the release that raised it, not the configuration. The
    key names the package where it is a TRL config key (GRPOConfig's keys per release)."""
    if not head or b" must be " not in head:
        return None
    text = head.decode("utf-8", errors="replace")
    for line_no, line in enumerate(text.split("\n")[:20000], 1):
        if " must be " not in line:
            continue
        m = _CONTRADICTION.search(line[:2000])
        if m is None:
            continue
        allowed = re.findall(r"['\"`]([\w.-]{1,80})['\"`]", m.group("allowed"))
        if m.group("got") not in allowed:
            continue
        kb = log.ctx.kb if log.ctx is not None else knowledge()
        trl = kb.config_key(m.group("key")) is not None
        owner = "TRL" if trl else "the package that raised it"
        version = log.versions.get("trl") if trl else None
        version = version if version is not None and version.exact else None
        what = (
            f"{owner}{' ' + version.version if version else ''} refused {m.group('key')}="
            f"'{m.group('got')}', a value its own check lists as allowed: a bug of that build's check "
            f"(a development build or a regression), not your configuration (line {line_no}): "
            f"“{m.group(0)[:300]}”"
        )
        fix = (
            "install a TRL release (pip install 'trl==<the latest release>') in place of the development "
            "build, or a commit after the regression was fixed; keep the configuration"
            if trl
            else "install a release of the package that raised it in place of the one installed; keep the "
            "configuration"
        )
        return Draft(
            line_no, Finding("TRI012", Severity.ERROR, what, fix, {"line": line_no, "key": m.group("key")})
        )
    return None


def _one_rank(lines: list[str]) -> list[str]:
    """The lines of the last line's rank (and those of no rank), where ranks interleave their
    tracebacks (``[rank0]: …`` and ``[rank1]: …`` lines mixed): one rank's traceback."""
    from envdoctor.triage.scanner import split_prefix

    last = next((line for line in reversed(lines) if line.strip()), "")
    rank = split_prefix(last)[1] if last[:1] in "[(" else None
    if rank is None:
        return lines
    ranks = [split_prefix(line)[1] if line[:1] in "[(" else None for line in lines]
    return [line for line, r in zip(lines, ranks, strict=True) if r is None or r == rank]


def _ends_in_frames(lines: Sequence[str]) -> bool:
    """The log's last lines are a traceback's frames (a frame, its source line, the ``^^^``
    marks under it, the next frame's line cut short): an excerpt taken from the middle of a
    traceback."""
    from envdoctor.triage.traceback import parse

    return any(parse([line]) for line in [line for line in lines if line.strip()][-4:])


_BARE_KEYS = (
    b"() got an unexpected",
    b"positional argument",
    b"required ",
    b"cannot import name",
    b"has no attribute",
)
MAX_BARE_LINES = 20


def bare_message(head: bytes, log: Log) -> Draft | None:
    """API drift told by a message that a pasted log or an issue quotes without its exception's
    name (``MyTrainer.compute_loss() got an unexpected keyword argument 'num_items_in_batch'``,
    ``cannot import name 'X' from 'vllm.y'``): Python's message shape names the exception
    (``_BARE``), read as that exception on a line no signature found. In a log that fits in its
    head; at most ``MAX_BARE_LINES`` lines tried, each cut at 8 KiB."""
    from envdoctor.triage.scanner import clean, split_prefix
    from envdoctor.triage.signatures import signatures

    if not head or not any(k in head for k in _BARE_KEYS):
        return None
    sig = next((x for x in signatures() if x.id == "unrecognized-exception"), None)
    if sig is None:
        return None
    lines = head.decode("utf-8", errors="replace").split("\n")
    seen = {m.line_no for ms in log.by_sig.values() for m in ms}
    tried = 0
    for line_no, raw in enumerate(lines, 1):
        if line_no in seen or not any(k.decode() in raw for k in _BARE_KEYS):
            continue
        body = split_prefix(clean(raw[:8192].encode()))[0]
        tb = Traceback(message=body, line_no=line_no)
        if not bare_exception(tb):
            continue
        tried += 1
        context = tuple(lines[max(0, line_no - 41) : line_no - 1])
        m = Match(sig, line_no, body[:1000], {}, None, context)
        if tb.exc_type == "AttributeError" and missing.went_on(log, line_no):
            continue  # words a run printed and trained on after: no crash
        d = raised_entry(tb, m, log) or wrapped.through_wrapper(tb, m, log) or drift(tb, [m], log)
        if d is not None:
            return d
        if tried >= MAX_BARE_LINES:
            break
    return None


#: an exception written as its constructor (``ValueError("…")``: ``repr(e)`` in a log, or the
#: exception of a raise statement quoted as the failure): the type and the message literal; the whole
#: line, and not a frame's source line (a ``raise …`` statement is ``cutguard``'s to read)
_REPR = re.compile(
    r"^(?P<type>(?:[\w]{1,60}\.){0,4}[A-Z]\w{0,60}(?:Error|Exception))\("
    r"(?P<prefix>[rRfFbBuU]{0,2})(?P<q>['\"])(?P<msg>.{1,2000}?)(?P=q)\)\s*$"
)
MAX_REPR_LINES = 20


def repr_exception(head: bytes, log: Log) -> Draft | None:
    """An exception a log shows as its constructor (``ValueError('…')``, ``ValueError(f"…")``) on a
    line of its own, read as ``ValueError: …`` and diagnosed as any failing line
    (``diagnose_failure``). In a log that fits in its head; at most
    ``MAX_REPR_LINES`` such lines tried."""
    from envdoctor.triage.scanner import clean, split_prefix
    from envdoctor.triage.signatures import signatures

    if not head or b"Error(" not in head and b"Exception(" not in head:
        return None
    sig = next((x for x in signatures() if x.id == "unrecognized-exception"), None)
    if sig is None:
        return None
    lines = head.decode("utf-8", errors="replace").split("\n")
    tried = 0
    for line_no, raw in enumerate(lines, 1):
        if "Error(" not in raw and "Exception(" not in raw:
            continue
        body = split_prefix(clean(raw[:4096].encode()))[0].strip()
        found = _REPR.match(body)
        if found is None:
            continue
        above = next((x for x in reversed(lines[max(0, line_no - 4) : line_no - 1]) if x.strip()), "")
        if 'File "' in above:
            continue  # a frame's source line
        tried += 1
        text = f"{found.group('type')}: {found.group('msg')}"
        m = Match(sig, line_no, text[:1000], {}, None, tuple(lines[max(0, line_no - 41) : line_no - 1]))
        d = diagnose_failure(m, log)
        if d is not None:
            return d
        if tried >= MAX_REPR_LINES:
            break
    return None


#: Ray's header of a task's failure: ``ray.exceptions.RayTaskError(ModuleNotFoundError): ray::…``
_RAY_WRAPPED = re.compile(r"RayTaskError\((?P<exc>[A-Z]\w{0,60}(?:Error|Exception))\)")


def cut_traceback(head: bytes, log: Log) -> Draft | None:
    """A log that ends inside a traceback (a pasted excerpt cut before the exception line): no
    cause can be settled from it, so say where it was cut — the last frames shown, by package —
    and what to paste (TRI003, a warning)."""
    from envdoctor.triage.cutguard import cut_guard
    from envdoctor.triage.traceback import parse

    tail = head[-65536:]
    header = b"Traceback (most recent call last)" in tail
    if not head or not header and b'File "' not in tail[-8192:] or b"(most recent call first)" in tail:
        return None  # no traceback; or a faulthandler dump (a hang's stacks, not a cut traceback)
    lines = tail.decode("utf-8", errors="replace").rstrip("\n").split("\n")
    lines = _one_rank(lines[-2000:])
    found = parse(lines[-400:])
    if not found or found[-1].exc_type or not found[-1].frames:
        return None  # the last traceback ends with its exception: not cut
    from envdoctor.triage.logging_errors import ends_in_call_stack

    if ends_in_call_stack(lines[-400:]):
        return None  # the caller logging's report names after its traceback: the run went on
    tb = found[-1]
    if not header and (len(tb.frames) < 2 or not _ends_in_frames(lines[-400:])):
        return None  # frames without a header that do not run to the log's end: a quoted stack
    total = head.count(b"\n") + (0 if head.endswith(b"\n") else 1)
    guard = cut_guard(tb, lines[-400:], log, total)  # the deepest frame is a package's own check
    if guard is not None:
        return guard
    if any(f.code for f in tb.frames[-1:]):  # the last frame prints a line a later fix removed
        from envdoctor.triage.fixhist import cut_fixed

        fixed = cut_fixed(tb, log, total)
        if fixed is not None:
            return fixed
    from envdoctor.triage import cutknown

    # a raise whose message the paste shows
    raised = cutknown.raised_line(tb, lines[-400:], log, total, diagnose_failure)
    if raised is not None:
        return raised
    runs: list[Frame] = []  # the last frame of each package's run, the last three runs
    for f in tb.frames:
        if runs and runs[-1].package == f.package:
            runs[-1] = f
        else:
            runs.append(f)
    shown = " → ".join(_frame_text(f) for f in runs[-3:])
    found_known = cutknown.candidates(tb, log)
    what = (
        f"the log ends inside a traceback, before its exception line: the last frames shown are {shown}"
        f"{cutknown.where_text(tb, log)}; "
        + (cutknown.offer_text(found_known) if found_known else "no cause can be named without the exception")
    )
    wrapped = _RAY_WRAPPED.findall(tail[-65536:].decode("utf-8", errors="replace"))
    if wrapped:  # Ray's header names the exception its task raised, before the frames
        what += f" (Ray's header names it a {wrapped[-1]}"
        if wrapped[-1] in ("ModuleNotFoundError", "ImportError") and runs[-1].package:
            what += f": an import failed inside {runs[-1].package}'s {runs[-1].function or 'code'}"
        what += ")"
    fix = (
        "paste the traceback to its end: the lines after the last frame, down to the one shaped "
        "'SomeError: message' (and any 'During handling of the above exception' part after it); "
        "with the versions (`trl env` or pip list | grep -E 'trl|vllm|transformers|torch')"
    )
    if found_known:
        fix = cutknown.offer_fix(found_known) + "; to confirm, " + fix
    ev: dict[str, object] = {
        "line": total,
        "cut_traceback": True,
        "last_frames": [_frame_text(f) for f in runs[-3:]],
    }
    if found_known:
        ev["candidates"] = [c.id for c in found_known]
        ev["sources"] = [u for c in found_known for u in c.sources]
    return Draft(total, Finding("TRI003", Severity.WARNING, what, fix, ev))


def api_drift(ms: list[Match], log: Log) -> list[Draft]:
    """An import, an attribute or a call that does not fit between two packages: TRI009 from the
    traceback's structure (``boundary.find``, ``structural.drift``), the same answer as for a line
    no signature names; what it cannot place is left to the first-exception answer."""
    from envdoctor.triage import catalogue

    first = ms[0]
    tb = failure(first.context, first.text, first.line_no)
    entries = catalogue.catalogue()[2]
    matched = [
        entries[m.signature.id]
        for sms in log.by_sig.values()
        for m in sms
        if m.line_no == first.line_no and m.signature.rule == "TRI011" and m.signature.id in entries
    ]
    found = drift(tb, ms, log, matched) if tb is not None else None
    if found is None or _catalogue_first(first, found, log):
        return reject(ms)  # the first-exception answer, or a catalogue entry of the same line
    return [found]


def _catalogue_first(m: Match, found: Draft, log: Log) -> bool:
    """A catalogue entry matched the same line and knows more than the drift's answer: the drift
    has no answer from the knowledge, or the log's versions confirm the entry."""
    from envdoctor.triage import catalogue
    from envdoctor.triage.classes import versions_verdict

    entries = catalogue.catalogue()[2]
    for ms in log.by_sig.values():
        for other in ms:
            if other.line_no != m.line_no or other.signature.rule != "TRI011":
                continue
            entry = entries.get(other.signature.id)
            if entry is None:
                continue
            source = str(found.finding.evidence.get("answer_from") or "")
            if entry.id in source:
                if (
                    found.finding.evidence.get("boundary_from") == "history"
                    and not versions_verdict(entry.packages, log)[0]
                ):
                    # the generic history placed the boundary and borrowed this entry's answer, which
                    # the log's versions do not confirm: the entry itself, at the certainty they give
                    return True
                continue  # the drift's answer is this entry's
            if not source or versions_verdict(entry.packages, log)[0]:
                return True
    return False


def later_shadow(by_sig: dict[str, list[Match]], first: Match, log: Log) -> Draft | None:
    """TRI036 from a later exception of the log where the first names no cause: a folder of the
    user's code in a package's place fails each import differently (a circular import first, the
    package's own name next: OpenRLHF's datasets/ as Ray's working_dir), and the later line shows
    the folder."""
    seen: set[int] = set()
    for ms in by_sig.values():
        for m in ms[:20]:
            if m.line_no <= first.line_no or m.line_no in seen:
                continue
            seen.add(m.line_no)
            tb = failure(m.context, m.text, m.line_no)
            for t in (tb, *reversed(tb.chain)) if tb is not None else ():
                found = structclass.shadowed_by_folder(t, m, log)
                if found is not None:
                    return found
    return None
