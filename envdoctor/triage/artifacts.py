"""Files and code written for another release than the one that reads or calls them (TRI038).

The failure is a meeting of two releases where one side is not a package's code but what another
release left behind: a file it wrote, or a model's code written before it.

1. **A file a loader reads** (``loaded_file``): the failing frames are a stack package's loader
   (``from_pretrained``, ``PeftConfig.from_pretrained``, a tokenizer's ``from_file``; the table
   ``loaders`` of ``rules/knowledge/artifacts.yaml``), so the file being read is the other party:

   * a form of the knowledge's ``forms`` (transformers 5's ``extra_special_tokens`` list in
     tokenizer_config.json, tokenizers 0.20's merge pairs in tokenizer.json): written by the
     package from ``written_by`` on, read by an installed release before it;
   * a configuration class's constructor handed a key of the saved file (``LoraConfig.__init__()
     got an unexpected keyword argument 'exclude_modules'`` inside peft's ``from_pretrained``):
     the symbol history says which release added the field, so adapter_config.json was written by
     that release or a later one.

   Quiet where the log's release of the reader already reads the form (the same message has
   another cause), and for a constructor called by the user's own code (TRI009's drift).
2. **A keyword the caller's release started passing** (``passed_keyword``): a ``forward()`` of a
   class defined outside the stack (a model repository's remote code in ``transformers_modules``,
   a project's model file) refuses a keyword that some releases of a stack package pass into every
   model's forward (transformers 4.54.0-4.55.2's generate passes ``cu_seq_lens_q``; the table
   ``passed_keywords``): the model's code is older than the caller. An error where the frames show
   the caller's generate or the log's release of it passes the keyword; a warning from the message
   alone; quiet where the log's release does not pass it, or the frames show another caller.
3. **An attribute another architecture has** (``foreign_attribute``): a project's frame reads an
   attribute that the model class the message names lacks in every release of the model index
   (``rules/knowledge/model_attributes.json.gz``) while other model families have it: the project's
   code path was written for another architecture. A warning (the project may support the model
   through a setting): it names the attribute, the class, the project's file and line and the
   families that have it, and a setting the project's function is named for.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from functools import lru_cache
from typing import Any

from envdoctor import versions
from envdoctor.findings import Severity
from envdoctor.triage.draft import Draft, Log, at_severity, finding
from envdoctor.triage.interface import Match
from envdoctor.triage.traceback import Frame, Traceback

SOURCE = "the release-forms table (rules/knowledge/artifacts.yaml)"


@lru_cache(maxsize=1)
def _table() -> dict[str, Any]:
    from envdoctor.resources import read_yaml, rules_dir

    return read_yaml(rules_dir() / "knowledge" / "artifacts.yaml") or {}


def _version(log: Log, dist: str) -> tuple[str, str, bool]:
    """The log's release of ``dist``: (lowest, highest, inferred from frames); empty when not shown."""
    v = log.versions.get(dist)
    if v is None:
        return "", "", False
    if v.inferred:
        return v.low or v.version, v.version, True
    return v.version, v.version, False


def _shown(log: Log, dist: str) -> str:
    low, high, inferred = _version(log, dist)
    if not high:
        return ""
    if inferred:
        return f"{dist} {low if low == high else f'{low} to {high}'} (inferred from the traceback's frames)"
    return f"{dist} {high}"


_UPPER = re.compile(r"<(=?)\s*([\w.]{1,40})")


def _refused_by(log: Log, pkg: str, first: str) -> str:
    """The packages the log shows whose release caps ``pkg`` below ``first`` (their declared
    requirement, ``optional_imports.base_specifier``: llamafactory 0.9.4's transformers<=4.57.1),
    so that ``pip install 'pkg>=first'`` would be refused beside them; "" where none does."""
    from envdoctor.knowledge import optional_imports

    said = []
    for dist, v in sorted(log.versions.items()):
        if dist == pkg or v.how == "frames":
            continue
        spec = optional_imports.base_specifier(dist, pkg, v.version)
        caps = _UPPER.findall(spec or "")
        if any(versions.below(cap, first) or (not eq and cap == first) for eq, cap in caps):
            said.append(f"{dist} {v.version} requires {pkg}{spec}")
    if not said:
        return ""
    return (
        f" — but the log shows {'; '.join(said)}, which refuses {pkg} {first}: upgrade "
        f"{'it' if len(said) == 1 else 'them'} with it, or take the other remedy"
    )


def _loader_frame(tb: Traceback, package: str | None = None) -> Frame | None:
    """The outermost frame of a stack package's loader (the table's ``loaders``)."""
    loaders = _table().get("loaders") or {}
    for f in tb.shown_frames():
        wanted = package is None or f.package == package
        if wanted and f.package in loaders and f.function in loaders[f.package]:
            return f
    return None


def _at(f: Frame | None) -> str:
    return f"{f.package or 'your code'} {f.at} in {f.function}" if f is not None else ""


# -- 1. a file a loader reads ------------------------------------------------------------------


def _form(tb: Traceback) -> dict[str, Any] | None:
    functions = {f.function for f in tb.shown_frames()}
    for form in _table().get("forms") or []:
        said = form["message"] if isinstance(form["message"], list) else [form["message"]]
        if tb.name != form["exception"] or not all(part in tb.message for part in said):
            continue
        if form.get("function") and form["function"] not in functions:
            continue
        return dict(form)
    return None


_SAVED_NEWER = re.compile(
    r"Unexpected keyword arguments \[(?P<keys>[^\]]{1,2000})\] for class (?P<cls>\w{1,100}), "
    r"these are ignored"
)


def _peft_warning(log: Log) -> tuple[str, str] | None:
    """peft's own warning that it ignored keys of a newer release's adapter_config.json (peft >=
    0.15 prints it): the class and the newest release that added one of the keys."""
    if b"Unexpected keyword arguments [" not in log.head:
        return None
    m = _SAVED_NEWER.search(log.head.decode("utf-8", errors="replace"))
    if m is None:
        return None
    keys = re.findall(r"'(\w{1,100})'", m.group("keys"))
    newest = ""
    for key in keys:
        v = _config_verdict(m.group("cls"), key)
        first = v.fits().removeprefix(">=") if v is not None and v.fits().startswith(">=") else ""
        if first and (not newest or versions.at_least(first, newest)):
            newest = first
    return (m.group("cls"), newest) if newest else None


def _init_call(cls: str, key: str) -> Traceback:
    """The constructor's refusal of ``key`` as the symbol history's questions take it."""
    return Traceback(
        exc_type="TypeError", message=f"{cls}.__init__() got an unexpected keyword argument '{key}'"
    )


def _config_verdict(cls: str, key: str) -> Any:
    from envdoctor.triage import symbols

    return symbols.verdict(_init_call(cls, key), {})


_INIT_KEY = re.compile(
    r"(?:(?P<cls>\w{1,100})\.)?__init__\(\) got an unexpected keyword argument '(?P<key>\w{1,100})'"
)


def _added(cls: str, key: str) -> tuple[str, str, str] | None:
    """The package of configuration class ``cls``, the release that added ``key`` to its
    constructor, and the knowledge's words for it: the symbol history's verdict, else the
    config-field index of the releases before it (``symbols.added_field``: peft 0.9.0's use_dora)."""
    v = _config_verdict(cls, key)
    if v is not None:
        if not v.fits().startswith(">="):
            return None  # a key a release removed: not a newer release's
        return v.package, v.fits().removeprefix(">="), f"{v.said()}; envdoctor's symbol history"
    from envdoctor.triage import symbols

    t = _init_call(cls, key)
    a = symbols.added_field(t)
    if a is None:
        return None
    said = (
        f"{a.cls}.__init__() takes {key}= from {a.package} {a.since}, {a.before} and earlier do not; "
        "envdoctor's config-field index"
    )
    return a.package, a.since, said


def _init_verdict(cls: str, key: str, tb: Traceback) -> tuple[str, tuple[str, str, str]] | None:
    """The class and ``_added``'s answer for ``cls.__init__`` taking ``key``; where the message
    names no class (Python before 3.10), the configuration classes of the package whose loader the
    frames show, LoraConfig first."""
    if cls:
        found = _added(cls, key)
        return (cls, found) if found is not None else None
    loader = _loader_frame(tb)
    if loader is None or loader.package is None:
        return None
    names = sorted(n for n in _top_names(loader.package) if n.endswith("Config"))
    for name in sorted(names, key=lambda n: n != "LoraConfig"):
        found = _added(name, key)
        if found is not None:
            return name, found
    return None


#: a log's own words that the configuration was read from a saved adapter (the frames cut off)
_ADAPTER_READ = re.compile(
    rb"adapter_config\.json|PeftModel\.from_pretrained|AutoPeftModel\w{0,40}\.from_pretrained|"
    rb"PeftConfig\.from_pretrained|\.load_adapter\("
)


def _reader(tb: Traceback, log: Log, package: str, key: str) -> tuple[Frame | None, bool]:
    """The loader frame of ``package`` reading the file, and whether the file is the party: its
    loader's frame shown, or (no frames of it) the log's own words name the saved adapter, unless
    the innermost frame shown is the user's own line passing ``key=`` (``LoraConfig(use_dora=True)``
    in a script that loaded an adapter earlier: TRI009's drift, not a file)."""
    loader = _loader_frame(tb, package)
    if loader is not None:
        return loader, True
    frames = tb.shown_frames()
    if package == "peft" and not any(f.package == package for f in frames):
        if frames and frames[-1].package is None and re.search(rf"\b{re.escape(key)}\s*=", frames[-1].code):
            return None, False
        return None, _ADAPTER_READ.search(log.head) is not None
    return None, False


def loaded_file(tb: Traceback, m: Match, log: Log) -> Draft | None:
    """TRI038, 1 (module docstring)."""
    form = _form(tb)
    if form is not None:
        return _form_answer(tb, m, log, form)
    if tb.name != "TypeError":
        return None
    k = _INIT_KEY.search(tb.message)
    if k is None:
        return None
    key = k.group("key")
    found = _init_verdict(k.group("cls") or "", key, tb)
    if found is None:
        return _older_file(tb, m, log, k.group("cls") or "", key)
    cls, (package, first, said) = found
    named = f"{cls}()"
    if not k.group("cls"):
        named += (
            f" (the message names no class: the first of {package}'s configuration classes that takes it)"
        )
    loader, read = _reader(tb, log, package, key)
    if not read:
        return None  # the user's own call: TRI009's
    low, high, _ = _version(log, package)
    if high and versions.at_least(low, first):
        return None  # the installed release takes the key: another cause
    saved = "adapter_config.json" if package == "peft" else "the saved configuration (its JSON file)"
    shown = _shown(log, package)
    by = (
        f"{_at(loader)} reads it"
        if loader is not None
        else f"{package}'s loader reads it (the log names the saved adapter; its frames are not shown)"
    )
    what = (
        f"{saved} was written by a newer {package} than the one reading it: {by} and hands its keys "
        f"to {named}, and {key}= is a field {package} added in {first} ({said}); the file came from "
        f"{package} >= {first}, the installed {package} is older"
        + (f"; the log shows {shown}" if shown else "")
    )
    fix = (
        f"pip install '{package}>={first}' (the first release that reads {key})"
        + _refused_by(log, package, first)
        + f"; or re-save the "
        f'adapter with the installed {package}, or delete "{key}" from {saved} where its value is the '
        f"default"
    )
    d = finding(
        "TRI038",
        [m],
        log,
        what,
        fix,
        package=package,
        written_by=first,
        file=saved,
        answer_from="symbol history",
    )
    return at_severity(d, Severity.ERROR)


def _older_file(tb: Traceback, m: Match, log: Log, cls: str, key: str) -> Draft | None:
    """A saved configuration's key that only releases older than the installed one had (the
    config-field index's ``was``: peft 0.0.1-0.2.0's ``enable_lora``), read by the package's loader:
    the file was written by an older release."""
    if not cls:
        return None
    from envdoctor.triage import symbols

    t = _init_call(cls, key)
    u = symbols.unknown_keyword(t)
    f = symbols.foreign_field(u) if u is not None else None
    if u is None or f is None or not f.was:
        return None
    lo, hi, gone = f.was
    loader, read = _reader(tb, log, u.package, key)
    if not read:
        return None  # the user's own call of an old field: TRI009's (foreign_field)
    saved = "adapter_config.json" if u.package == "peft" else "the saved configuration (its JSON file)"
    span = lo if lo == hi else f"{lo}–{hi}"
    by = (
        f"{_at(loader)} reads it"
        if loader is not None
        else f"{u.package}'s loader reads it (the log names the saved adapter)"
    )
    what = (
        f"{saved} was written by an older {u.package} than the one reading it: {by} and hands its keys "
        f"to {cls}(), and {key}= is a field of {u.package}'s {cls} in {span} only (removed in {gone}; "
        f"envdoctor's config-field index): the file came from {u.package} {hi} or earlier"
    )
    fix = (
        f're-save the adapter with the installed {u.package} (or delete "{key}" from {saved}, after '
        f"checking in {u.package} {gone}'s release notes what replaced it); or pip install "
        f"'{u.package}<={hi}', the release that wrote it"
    )
    d = finding(
        "TRI038",
        [m],
        log,
        what,
        fix,
        package=u.package,
        written_by=f"<={hi}",
        file=saved,
        answer_from=CONFIG_FIELDS,
    )
    return at_severity(d, Severity.ERROR if loader is not None else Severity.WARNING)


CONFIG_FIELDS = "the config-field index of older releases (rules/knowledge/config_fields/)"


def _form_answer(tb: Traceback, m: Match, log: Log, form: dict[str, Any]) -> Draft | None:
    pkg, first = str(form["package"]), str(form["written_by"])
    low, high, _ = _version(log, pkg)
    if high and versions.at_least(low, first):
        return None  # the installed release reads the form: the same message has another cause
    loader = _loader_frame(tb)
    framed = bool(tb.shown_frames())
    shown = _shown(log, pkg)
    peft = _peft_warning(log)
    also = ""
    if peft is not None:
        also = (
            f"; the same folder's adapter_config.json came from peft >= {peft[1]} too (the log's peft "
            f"warning: keys {peft[0]} has only from {peft[1]} were ignored)"
        )
    where = f" ({_at(loader)} reads it)" if loader is not None else ""
    what = (
        f"{form['file']} was written by a newer {pkg} than the one reading it{where}: {form['form']}; "
        f"{pkg} {first} and later write and read that form, the installed {pkg} is older"
        + (f"; the log shows {shown}" if shown else "; the log shows no version of it")
        + also
    )
    extra = f" ({form['with']})" if form.get("with") else ""
    # the first release that reads the file whole: `floor` where the first to read the form itself
    # fails on it (4.43.0's LlamaRotaryEmbedding), with why
    floor = str(form.get("floor") or first)
    if form.get("floor_why"):
        extra += f" ({form['floor_why']})"
    refused = _refused_by(log, pkg, floor)
    fix = f"pip install '{pkg}>={floor}'{extra}{refused}"
    # re-saving needs a release that reads the file and writes the older form: not where the
    # older releases have no such form at all (rope_type llama3), where `resave` is false
    alternatives = [f"re-save the files with the installed {pkg}"] if form.get("resave", True) else []
    if form.get("instead"):
        alternatives.append(str(form["instead"]))
    if alternatives:
        fix += "; or " + ", or ".join(alternatives)
    d = finding(
        "TRI038",
        [m],
        log,
        what,
        fix,
        package=pkg,
        written_by=first,
        file=form["file"],
        form=form["id"],
        answer_from=SOURCE,
    )
    # the message raised in the form's own function (or the form's message with its loader's
    # frames): the file will fail the same way each time; a message alone: likely
    certain = framed and (loader is not None or bool(form.get("function")))
    return at_severity(d, Severity.ERROR if certain else Severity.WARNING)


# -- 2. a keyword the caller's release started passing -----------------------------------------

_FORWARD_KEY = re.compile(
    r"(?:(?P<cls>\w{1,200})\.)?(?P<func>\w{0,60}forward\w{0,60})\(\) got an unexpected keyword argument "
    r"'(?P<key>\w{1,100})'"
)


def _stack_class(cls: str, package: str) -> bool:
    """Whether ``package`` itself exports ``cls`` in some release (its symbol history's top-level
    names)."""
    return bool(_top_names(package) and cls in _top_names(package))


def _top_names(package: str) -> dict[str, Any]:
    """The top-level names of ``package``'s symbol history (the shared loader's, read once)."""
    from envdoctor.knowledge.symbol_history import history

    h = history(package)
    node = h.modules.get(package.replace("-", "_")) if h is not None else None
    names = node.get("n") if isinstance(node, dict) else None
    return names if isinstance(names, dict) else {}


def passed_keyword(tb: Traceback, m: Match, log: Log) -> Draft | None:
    """TRI038, 2 (module docstring)."""
    if tb.name != "TypeError":
        return None
    k = _FORWARD_KEY.search(tb.message)
    if k is None:
        return None
    key, cls = k.group("key"), k.group("cls") or ""
    row = next((r for r in _table().get("passed_keywords") or [] if key in r["keywords"]), None)
    if row is None:
        return None
    pkg, first, last, after = str(row["package"]), str(row["first"]), str(row["last"]), str(row["after"])
    if cls and _stack_class(cls, pkg):
        return None  # the package's own model: its forward takes what its release passes
    frames = tb.shown_frames()
    callee = frames[-1] if frames else None
    if callee is not None and callee.package == pkg:
        return None  # raised inside the package's own code: another call
    where = str(row.get("caller_path") or "")
    caller = next((f for f in reversed(frames) if f.package == pkg and where in f.module_path), None)
    if frames and caller is None:
        return None  # the frames show another caller (a collator's or a trainer's batch)
    low, high, _ = _version(log, pkg)
    inside = bool(high) and versions.at_least(high, first) and not versions.at_least(low, after)
    if high and not inside:
        return None  # the log's release does not pass it: another cause
    shown = _shown(log, pkg)
    func = k.group("func")
    named = f"{cls}.{func}()" if cls else f"{func}()" if func != "forward" else "the forward() called"
    model = (
        f"{callee.path} ({_at(callee)})"
        if callee is not None and callee.package is None
        else "code outside it (a model repository's remote code, the project's model file or patch)"
    )
    what = (
        f"{named} is older than the {pkg} that calls it: {pkg} {first} to {last} pass {key}= "
        f"({', '.join(row['keywords'])}) from {row['by']} {row['when']}, and {named}, defined in "
        f"{model}, was written before and does not take it"
        + (f"; the frames show {_at(caller)}" if caller is not None else "; the log shows no frames")
        + (f"; the log shows {shown}" if shown else "")
    )
    until = str(row.get("until") or "")
    later = (
        f"'{pkg}>={after},<{until}' (which no longer passes {key}=; {row['until_why']})"
        if until
        else f"'{pkg}>={after}' (which no longer passes {key}=)"
    )
    fix = (
        f"pip install '{pkg}<{first}' (the release the model's code was written for; or the project's "
        f"pinned {pkg}) or {later}; or update that code so "
        f"that {named} accepts {key}= or **kwargs (a newer revision of the model repository or the project)"
    )
    d = finding(
        "TRI038", [m], log, what, fix, package=pkg, keyword=key, model_class=cls or None, answer_from=SOURCE
    )
    certain = caller is not None or inside
    return at_severity(d, Severity.ERROR if certain else Severity.WARNING)


# -- 3. an attribute another architecture has --------------------------------------------------

_NO_ATTR = re.compile(r"^'(?P<cls>\w{1,200})' object has no attribute '(?P<attr>\w{1,200})'")
_FAMILY = re.compile(r"(?:For[A-Z]\w*|Model)$")
MAX_FAMILIES = 6
MIN_FAMILIES = 3  # model families that have the attribute for it to be an architecture's part


@lru_cache(maxsize=1)
def _model_attributes() -> dict[str, Any]:
    from envdoctor.knowledge.gzip_json import load
    from envdoctor.resources import rules_dir

    path = rules_dir() / "knowledge" / "model_attributes.json.gz"
    doc = load(path, "envdoctor.model_attributes/1", 16 << 20)  # bounded, its schema checked
    if doc is None:
        return {}
    return {
        "releases": doc.get("releases") or [],
        "common": frozenset(str(doc.get("common") or "").split()),
        "classes": {c: frozenset(n.split()) for c, n in (doc.get("classes") or {}).items()},
    }


@lru_cache(maxsize=1)
def _config_keys() -> frozenset[str]:
    """TRL's GRPOConfig keys (and so TrainingArguments' the trainers share): the settings a
    project's function may be named for."""
    from envdoctor.resources import read_yaml, rules_dir

    data = read_yaml(rules_dir() / "knowledge" / "grpo_config_keys.yaml") or {}
    return frozenset(str(k) for k in (data.get("keys") or {}))


def _setting(frames: Sequence[Frame]) -> str:
    """A setting that a project frame's function is named for (``_enable_gradient_checkpointing``:
    gradient_checkpointing), the innermost first."""
    for f in reversed(frames):
        if f.package is not None:
            continue
        hits = [k for k in _config_keys() if len(k) >= 8 and k in f.function]
        if hits:
            return max(hits, key=len)
    return ""


def foreign_attribute(tb: Traceback, m: Match, log: Log) -> Draft | None:
    """TRI038, 3 (module docstring): a warning."""
    if tb.name != "AttributeError":
        return None
    a = _NO_ATTR.match(tb.message.strip())
    index = _model_attributes()
    if a is None or not index:
        return None
    cls, attr = a.group("cls"), a.group("attr")
    names = index["classes"].get(cls)
    if names is None or attr in names or attr in index["common"]:
        return None  # not a model class of the index, or one of its releases has the attribute
    frames = tb.shown_frames()
    reader = next((f for f in reversed(frames) if f.package is None and f".{attr}" in f.code), None)
    if reader is None:
        return None  # no project line reads it (a package's own code, or no frames)
    own = _FAMILY.sub("", cls)
    families: list[str] = []
    for other, held in index["classes"].items():
        family = _FAMILY.sub("", other)
        if attr not in held or not family:
            continue
        if family == own:
            return None  # another class of the same family has it: a head or a wrapper, not an architecture
        if family not in families:
            families.append(family)
    if len(families) < MIN_FAMILIES:
        # no model has it (a typo, the project's own attribute), or one or two families set it
        # themselves (peft_config, hf_device_map): not an architecture's part
        return None
    vlm = [f for f in families if f"{f}ForConditionalGeneration" in index["classes"]]
    shown = (vlm + [f for f in families if f not in vlm])[:MAX_FAMILIES]
    more = f" and {len(families) - len(shown)} more" if len(families) > len(shown) else ""
    releases = index["releases"]
    setting = _setting(frames)
    what = (
        f"the project's code at {reader.path}:{reader.line} (in {reader.function}) reads .{attr} of "
        f"{cls}, which has no such attribute in any transformers release envdoctor read "
        f"({len(releases)}, {releases[0]} to {releases[-1]}), while other model families' classes have "
        f"it ({', '.join(shown)}{more}): that code path was written for another architecture than "
        f"the model it was given"
    )
    fix = (
        f"use the project's support for {own} models (a model the project lists for this script, or "
        f"a release of the project that supports {own}), or adapt {reader.function}'s line to {cls}'s "
        f"own submodules"
    )
    if setting:
        fix += f"; or set {setting}=False (the setting {reader.function} applies) to avoid the path"
    d = finding(
        "TRI038",
        [m],
        log,
        what,
        fix,
        package="transformers",
        model_class=cls,
        attribute=attr,
        setting=setting or None,
        answer_from="the model-attribute index (rules/knowledge/model_attributes.json.gz)",
    )
    return at_severity(d, Severity.WARNING)


# -- 4. a base class's __init__ that calls the subclass earlier ------------------------------------


def native_since(model_type: str) -> str | None:
    """The first transformers release that has ``model_type`` natively (the model index), or None."""
    from envdoctor.knowledge.models import lookup

    support = lookup("transformers", model_type) if model_type else None
    return support.first if support is not None else None


def _outside_stack(cls: str, package: str) -> bool:
    """``cls`` is no class of ``package``'s releases envdoctor read (its symbol history, the model
    index): a model repository's or a project's own class. False where the histories are not there."""
    names = _top_names(package)
    classes = _model_attributes().get("classes") or {}
    return bool(names) and cls not in names and cls not in classes


def base_init(tb: Traceback, m: Match, log: Log) -> Draft | None:
    """TRI038, 4 (``base_init_calls``): an error where the frames show the base's path into the
    subclass, a warning from the message alone; quiet where the log's release is before the call."""
    if tb.name != "AttributeError":
        return None
    a = _NO_ATTR.match(tb.message.strip())
    if a is None:
        return None
    cls, attr = a.group("cls"), a.group("attr")
    for row in _table().get("base_init_calls") or []:
        pkg, suffix = str(row["package"]), str(row["suffix"])
        if not cls.endswith(suffix) or cls == suffix or not _outside_stack(cls, pkg):
            continue
        frames = tb.shown_frames()
        path = [
            f
            for f in frames
            if f.package == pkg
            and f.function in row["functions"]
            and any(f.module_path.endswith(x) for x in row["files"])
        ]
        if frames and (not path or frames[-1].package == pkg):
            return None  # frames of another path, or raised inside the package itself
        first, before = str(row["first"]), str(row["last_before"])
        low, high, _ = _version(log, pkg)
        if high and not versions.at_least(high, first):
            return None  # the log's release does not call it from __init__: another cause
        shown = _shown(log, pkg)
        native = native_since(cls[: -len(suffix)].lower())
        what = (
            f"{cls} is defined outside {pkg} (no {pkg} release envdoctor read has it: a model repository's "
            f"remote code, trust_remote_code) and its .{attr} is not set yet when {pkg} {first} and later "
            f"read it: {row['base']}.__init__ there calls {row['calls']}, before the subclass's own "
            f"__init__ (which sets .{attr} after super().__init__()) goes on; the code was written for "
            f"{pkg} {before} or earlier"
            + (f"; the frames show {_at(path[-1])}" if path else "; the log shows no frames")
            + (f"; the log shows {shown}" if shown else "")
        )
        fix = (
            f"pip install '{pkg}<{first}' ({before}: the last release whose {row['base']}.__init__ does "
            f"not call it), or load the model repository at a revision whose {cls} sets .{attr} before "
            f"super().__init__() (from_pretrained(..., revision=...))"
        )
        if native:
            fix += (
                f"; or load it without trust_remote_code with {pkg}>={native}, which has the model type "
                f"'{cls[: -len(suffix)].lower()}' natively"
            )
        d = finding(
            "TRI038",
            [m],
            log,
            what,
            fix,
            package=pkg,
            model_class=cls,
            attribute=attr,
            sources=list(row.get("references") or ()),
            answer_from=SOURCE,
        )
        return at_severity(d, Severity.ERROR if path else Severity.WARNING)
    return None


# -- the entry point -------------------------------------------------------------------------------


def answer(tb: Traceback, ms: Sequence[Match], log: Log) -> Draft | None:
    """TRI038 for the failure ``tb`` of the line ``ms[0]``, or None."""
    return (
        loaded_file(tb, ms[0], log)
        or passed_keyword(tb, ms[0], log)
        or base_init(tb, ms[0], log)
        or foreign_attribute(tb, ms[0], log)
    )
