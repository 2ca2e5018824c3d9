"""A model attribute read through a module wrapper that does not forward it (TRI035).

``AttributeError: '<Wrapper>' object has no attribute 'a'`` where the class is a module wrapper of
the stack (rules/knowledge/wrappers.yaml, derived from the wrappers' sources by
scripts/derive_wrappers.py). How the wrapper forwards decides what the message means:

- ``none`` (DistributedDataParallel, DataParallel: nn.Module's ``__getattr__`` only): no attribute
  of the wrapped model is reached through the wrapper; ``a`` (``config``, ``generate``, a custom
  method) was read through it;
- ``dir`` (DeepSpeedEngine): an attribute is forwarded only when ``dir()`` of the held module lists
  it; a transformers model's attribute (``base_model_prefix``, ``config``) missing means the held
  module is not a plain transformers model (a PeftModel, which reaches it through its own
  ``__getattr__``, or a custom module);
- ``getattr`` (FullyShardedDataParallel, OptimizedModule, PeftModel): every missing attribute is
  forwarded, so the held model lacks it too: not a read through the wrapper (quiet).

Whose frame read it gives the fix: the user's code reads it from the unwrapped model; a package's
frame was handed a wrapped (or PEFT) model where it expects a plain one. An attribute of the
wrapper's own API in another release (a DeepSpeedEngine method accelerate calls that this DeepSpeed
lacks) is drift, left to TRI009 (``boundary.py``). Quiet where the traceback's innermost frame is
not the wrapper's ``__getattr__`` (a class of the user's named like a wrapper).
"""

from __future__ import annotations

import re
from typing import Any

from envdoctor import versions
from envdoctor.findings import Severity
from envdoctor.knowledge import knowledge
from envdoctor.triage.draft import Draft, Log, at_severity, finding, warning_line
from envdoctor.triage.interface import Match
from envdoctor.triage.traceback import Frame, Traceback

RULE = "TRI035"
_NO_ATTR = re.compile(
    r"^'(?P<cls>[A-Za-z_]\w{0,100})' object has no attribute '(?P<attr>[A-Za-z_]\w{0,200})'"
)


def _table() -> tuple[dict[str, Any], frozenset[str]]:
    doc = knowledge().wrappers
    wrappers = doc.get("wrappers") or {}
    return (wrappers if isinstance(wrappers, dict) else {}), frozenset(doc.get("model_attributes") or ())


def _raised_by_wrapper(f: Frame, package: str) -> bool:
    """``f`` is the wrapper's attribute lookup: its own package's ``__getattr__``, or nn.Module's."""
    return f.function.endswith("__getattr__") and (
        f.package == package or f.package == "torch" and f.module_path.endswith("nn/modules/module.py")
    )


def _reader(t: Traceback, package: str) -> Frame | None:
    """The frame that read the attribute: the innermost one outside the wrapper's lookup."""
    frames = list(t.frames)
    while frames and _raised_by_wrapper(frames[-1], package):
        frames.pop()
    return frames[-1] if frames else None


def _where(f: Frame) -> str:
    at = f.at
    if not f.function or f.function.startswith("<"):  # a notebook cell, a module's top level
        return f"{f.package or 'your code'} ({at})"
    return f"{f.package or 'your code'}'s {f.function} ({at})"


def _api_drift(
    t: Traceback, m: Match, log: Log, cls: str, attr: str, w: dict[str, Any], reader: Frame | None
) -> Draft | None:
    """TRI009 for an attribute of the wrapper's own API that came or went with a release
    (``api``: its first and last release read): the caller was written for another release of the
    wrapper's package. None where every release read has it, where the caller is the wrapper's own
    package (TRI031's), or where the log's release of the package has it (not drift)."""
    package = str(w.get("package"))
    span = (w.get("api") or {}).get(attr)
    read = list((knowledge().wrappers.get("releases") or {}).get(package) or ())
    if not span or len(span) != 2 or not read or reader is not None and reader.package == package:
        return None
    first, last = str(span[0]), str(span[1])
    shown = log.versions.get(package)
    version = shown.version if shown is not None and shown.how != "frames" else None
    oldest = first == read[0]  # it may be older than the releases read
    if (
        version is not None
        and (versions.at_least(version, first) or oldest)
        and not versions.below(last, version)
    ):
        return None  # the log's release has it (or may: older than the releases read): not drift
    gone = last != read[-1]
    after = read[read.index(last) + 1] if gone and last in read and read.index(last) + 1 < len(read) else None
    bounds = ([] if oldest else [f">={first}"]) + ([f"<{after}"] if after else [])
    pin = package + ",".join(bounds)
    caller = reader.package or "your code" if reader is not None else "the calling code"
    has = (
        f"up to {last} (removed after it)"
        if oldest
        else f"from {first} to {last} (added in {first}, removed after {last})"
        if gone
        else f"from {first} (added there)"
    )
    at = f" at {_where(reader)}" if reader is not None else ""
    what = (
        f"API drift between {caller} and {package}: {caller} uses {cls}.{attr}, which {package} has "
        f"only {has} among the {package} releases envdoctor read ({read[0]}–{read[-1]}){at}; "
        + (f"the log shows {package} {version}" if version else f"the log shows no {package} version")
    )
    fix = f"pip install '{pin}' (the releases whose {cls} has {attr})" + (
        f"; or install the {caller} release made for the installed {package}"
        if reader is not None and reader.package
        else f"; or update the code for the installed {package}"
    )
    d = finding(
        "TRI009",
        [m],
        log,
        what,
        fix,
        caller=reader.package if reader is not None else None,
        callee=package,
        exception=t.name,
        answer_from="the wrapper table (rules/knowledge/wrappers.yaml)",
    )
    return at_severity(d, Severity.ERROR if version else Severity.WARNING)


def through_wrapper(t: Traceback, m: Match, log: Log) -> Draft | None:
    """TRI035 for ``t`` (module docstring), or None."""
    if t.name != "AttributeError" or warning_line(m):
        return None
    found = _NO_ATTR.match(t.message.strip())
    if found is None:
        return None
    wrappers, model_attrs = _table()
    cls, attr = found.group("cls"), found.group("attr")
    w = wrappers.get(cls)
    if not isinstance(w, dict) or w.get("forwards") not in ("none", "dir"):
        return None  # not a wrapper, or one that forwards everything: the held model lacks it too
    package, forwards, holds = str(w.get("package")), str(w.get("forwards")), str(w.get("holds") or "module")
    if t.frames and not _raised_by_wrapper(t.frames[-1], package):
        return None  # raised elsewhere: a class of the user's so named, or another lookup
    model_attr = attr in model_attrs
    reader = _reader(t, package)
    if not model_attr and attr in set(w.get("own") or ()):
        return _api_drift(t, m, log, cls, attr, w, reader)  # the wrapper's own API of another release
    if not model_attr and forwards == "dir":
        return None  # an attribute the module a dir()-forwarding wrapper holds may lack itself
    what_attr = (
        f"{attr} is an attribute of a transformers model" if model_attr else f"{attr} is not {cls}'s own"
    )
    by = (
        _where(reader)
        if reader is not None
        else "the calling code (its frame not shown)"
        if t.frames
        else "the code (the log shows no frame)"
    )
    if forwards == "none":
        what = (
            f"{by} reads {attr} through {cls} ({package}), which forwards no attribute of the model it "
            f"wraps (it holds it as .{holds}): {what_attr}; the code read it from the wrapper instead "
            "of the model"
        )
        unwrap = f"model.{holds}"
    else:
        what = (
            f"{by} reads {attr} from a {cls} ({package}), which forwards an attribute only when dir() "
            f"of the module it holds (.{holds}) lists it: {what_attr}, so the module it holds is not a "
            "plain transformers model — a PEFT PeftModel (which reaches it only through its own "
            "__getattr__) or another wrapper or custom module"
        )
        unwrap = f"model.{holds}"
    if cls == "DataParallel":
        # nn.DataParallel in a trainer's path is transformers' Trainer's own doing (n_gpu > 1 in one
        # process without a distributed environment): the run's layout, not the reading code, is wrong
        what += (
            "; transformers' Trainer (and every TRL trainer on it) wraps the model in DataParallel itself "
            "when one process sees several GPUs and no distributed launcher set one up (n_gpu > 1), "
            "the DataParallel trap (LAY003 in check)"
        )
        fix = (
            "launch one process per training GPU (torchrun --nproc_per_node N, or accelerate launch "
            "--num_processes N with a multi-GPU config) or make only one GPU visible to the trainer "
            "(CUDA_VISIBLE_DEVICES); where your own code wraps the model in nn.DataParallel, use "
            f"{unwrap}.{attr}"
        )
    elif reader is not None and reader.package is None:
        fix = (
            f"read it from the unwrapped model: accelerator.unwrap_model(model).{attr} (or {unwrap}.{attr}"
            + ("; for a PEFT model inside, .get_base_model()" if forwards == "dir" else "")
            + ")"
        )
    elif reader is not None:
        p = reader.package
        if forwards == "none":
            fix = (
                f"{p}'s {reader.function} was handed the {cls}-wrapped model where it expects the plain "
                f"model: pass it the unwrapped one (accelerator.unwrap_model(model) or {unwrap}) — where "
                f"your code or a package on top of {p} (a trainer subclass, a wrapper library) makes the "
                "call, unwrap there, or upgrade that package to a release that does"
            )
        else:
            fix = (
                f"{p}'s {reader.function} expects a plain transformers model where the run gave "
                f"{package} a wrapped one: pass {p} an unwrapped model there (e.g. "
                "AutoModelForSequenceClassification / AutoModelForCausalLM, not a PeftModel) and give "
                "LoRA to the trained policy only (the trainer's peft_config), or merge the adapter "
                "first (model.merge_and_unload())"
            )
    else:
        fix = (
            f"read {attr} from the unwrapped model (accelerator.unwrap_model(model).{attr} or "
            f"{unwrap}.{attr}); where a package reads it, pass that package the unwrapped model"
        )
    d = finding(
        RULE,
        [m],
        log,
        what,
        fix,
        wrapper=cls,
        wrapper_package=package,
        attribute=attr,
        forwards=forwards,
        reader=reader.package or "user code" if reader is not None else None,
        sources=[str(w.get("source"))] if w.get("source") else None,
    )
    return at_severity(d, Severity.ERROR)


#: class names of transformers models (``Qwen2ForCausalLM``, ``GPTNeoXForCausalLM``, ``LlamaModel``)
_MODEL_CLASS = re.compile(
    r"^[A-Z]\w{0,80}(?:For[A-Z]\w{0,60}|LMHeadModel|PreTrainedModel|Model|WithValueHead)$"
)


#: the wrappers named first where several have the attribute
_PREFERRED = ("DistributedDataParallel", "DeepSpeedEngine", "DataParallel", "FullyShardedDataParallel")


def _bare_reader(t: Traceback) -> Frame | None:
    """The frame that read the attribute: the innermost one outside an ``__getattr__``."""
    frames = list(t.frames)
    while frames and frames[-1].function.endswith("__getattr__"):
        frames.pop()
    return frames[-1] if frames else None


def wrapper_api_on_bare_model(t: Traceback, m: Match, log: Log) -> Draft | None:
    """TRI035 for the other way round: ``'<Model>' object has no attribute 'a'`` where the class is
    a transformers model (or a PEFT model, which forwards to one) and ``a`` is no model attribute but
    the own API of a wrapper that holds the model (DeepSpeedEngine's ``optimizer``, DDP's ``module``
    or ``no_sync``): the code expected the wrapped model and was handed the bare one. Quiet on an
    attribute a transformers model has, on private names, and where the innermost frame is not a
    ``__getattr__`` (a class of the user's own that raised it some other way)."""
    if t.name != "AttributeError" or warning_line(m):
        return None
    found = _NO_ATTR.match(t.message.strip())
    if found is None:
        return None
    wrappers, model_attrs = _table()
    cls, attr = found.group("cls"), found.group("attr")
    held = wrappers.get(cls)
    if isinstance(held, dict):
        if held.get("forwards") != "getattr" or held.get("package") == "torch":
            return None  # a wrapper itself (through_wrapper's), or torch.compile's module
    elif not _MODEL_CLASS.match(cls):
        return None
    if attr.startswith("_") or attr in model_attrs:
        return None
    owners = sorted(
        (
            name
            for name, w in wrappers.items()
            if isinstance(w, dict)
            and w.get("forwards") in ("none", "dir")
            and attr in set(w.get("own") or ())
        ),
        key=lambda name: (_PREFERRED.index(name) if name in _PREFERRED else len(_PREFERRED), name),
    )[:2]
    if not owners:
        return None
    if t.frames and not t.frames[-1].function.endswith("__getattr__"):
        return None
    reader = _bare_reader(t)
    owner_text = " / ".join(f"{o} ({wrappers[o].get('package')})" for o in owners)
    by = (
        _where(reader)
        if reader is not None
        else "the calling code (its frame not shown)"
        if t.frames
        else "the code (the log shows no frame)"
    )
    what = (
        f"{by} reads {attr} from a bare {cls}: {attr} is the own API of {owner_text}, the wrapper "
        "that holds the model in a distributed run, not an attribute of a transformers model — the "
        f"code expected the wrapped model and was handed the unwrapped one"
    )
    unwraps = any(attr == str(wrappers[o].get("holds") or "module") for o in owners)
    if unwraps:
        fix = (
            f"unwrap with accelerator.unwrap_model(model) (or `model.{attr} if hasattr(model, '{attr}') "
            f"else model`), which works whether or not the run wraps the model, instead of .{attr}"
            + (
                f"; in {reader.package}'s {reader.function}: upgrade {reader.package}"
                if reader is not None and reader.package
                else ""
            )
        )
    elif reader is not None and reader.package is None:
        fix = (
            f"read {attr} from the wrapper, not the model: the object accelerator.prepare(...) returned "
            f"(trainer.model_wrapped in a Trainer), or guard it (hasattr(model, '{attr}')) for runs "
            "without that wrapper (one process, or another ZeRO stage / launcher)"
        )
    elif reader is not None:
        p = reader.package
        fix = (
            f"{p}'s {reader.function} expects the {owners[0]}-wrapped model here and got the bare one: "
            f"upgrade {p} (its later releases changed how it unwraps the model) or, where your code or "
            f"a package on top of {p} calls {reader.function}, pass it the wrapped model "
            "(trainer.model_wrapped)"
        )
    else:
        fix = (
            f"pass the wrapped model where {attr} is read (the object accelerator.prepare(...) returned, "
            "trainer.model_wrapped), or upgrade the package whose code reads it"
        )
    d = finding(
        RULE,
        [m],
        log,
        what,
        fix,
        wrapper=owners[0],
        wrapper_package=str(wrappers[owners[0]].get("package")),
        attribute=attr,
        forwards="bare model",
        reader=reader.package or "user code" if reader is not None else None,
    )
    return at_severity(d, Severity.ERROR if reader is not None else Severity.WARNING)
