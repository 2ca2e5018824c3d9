"""API drift at a package boundary, from a traceback's structure (TRI009 for every pair).

An ``ImportError`` / ``ModuleNotFoundError`` (a module *inside* a package: a missing package is not
drift), an ``AttributeError`` (of a module or of an object whose package is known), a ``TypeError``
of a call's shape (unexpected keyword, missing positional, wrong arity, multiple values) or a
``NotImplementedError`` raised where package A's frame calls into package B is A written for
another release of B. Which package is B: the module the message names, the class of the object
(``OBJECTS``; a trainer subclass reaching for its parent's attribute: ``PARENTS``), or the package
whose frames raised it, entered from A's last frame. A is the package of the frame that called in
(or imported), ``None`` for the user's code. The answer (``pair_fix``) is the pair that works, from
the log's versions and envdoctor's knowledge: TRL's vLLM range and ``requires`` per release
(rules/knowledge/trl.yaml), the catalogue's fixed releases; where the knowledge ends it says so.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from envdoctor import versions
from envdoctor.triage.traceback import PACKAGES, Frame, Traceback, failure

DRIFT = ("ImportError", "ModuleNotFoundError", "AttributeError", "TypeError", "NotImplementedError")
STACK = frozenset(PACKAGES.values()) - {"open-r1", "datasets"} | {"datasets"}
_CALL = re.compile(
    r"(?P<func>[\w.<>]{1,200})\(\) (?:got an unexpected keyword argument '(?P<kwarg>\w{1,200})(?:'|$)"
    r"|missing (?P<n>\d{1,3}) required (?:positional|keyword-only) arguments?: (?P<missing>.{1,300})"
    r"|takes (?P<takes>.{1,60}) positional arguments? but (?P<given>\d{1,3}) (?:were|was) given"
    r"|got multiple values for argument '(?P<dup>\w{1,200})')"
)
#: the module quoted as Python prints it, or bare where a paste lost its quotes
_IMPORT = re.compile(
    r"cannot import name '(?P<name>[\w.]{1,200})' from '?(?P<module>[A-Za-z_][\w.]{0,298}\w)"
)
_NO_MODULE = re.compile(r"No module named '(?P<module>[\w.]{1,300})'")
#: torch's config modules refusing an option they do not have (a package written for a newer torch)
_TORCH_OPTION = re.compile(r"^Unexpected optimization option (?P<key>[\w.]{1,200}), known options are ")
_MODULE_ATTR = re.compile(r"module '(?P<module>[\w.]{1,300})' has no attribute '(?P<attr>\w{1,200})'")
#: an instance's missing attribute, or a class's ("type object 'X' has no attribute 'y'")
_OBJECT_ATTR = re.compile(
    r"(?:type object )?'(?P<obj>[\w.]{1,200})' (?:object )?has no attribute '(?P<attr>\w{1,200})'"
)

#: classes and functions whose package a message names by name only
OBJECTS = {
    "Tensor": "torch",
    "Parameter": "torch",
    "DTensor": "torch",
    "Module": "torch",
    "LLM": "vllm",
    "LLMEngine": "vllm",
    "AsyncLLMEngine": "vllm",
    "SamplingParams": "vllm",
    "EngineArgs": "vllm",
    "GuidedDecodingParams": "vllm",
    "SyncMPClient": "vllm",
    "InprocClient": "vllm",
    "UniProcExecutor": "vllm",
    "GPUModelRunner": "vllm",
    "GRPOTrainer": "trl",
    "GRPOConfig": "trl",
    "VLLMClient": "trl",
    "Trainer": "transformers",
    "TrainingArguments": "transformers",
    "PreTrainedModel": "transformers",
    "GenerationConfig": "transformers",
    "seed_worker": "transformers",
    "Accelerator": "accelerate",
    "AcceleratorState": "accelerate",
    "PeftModel": "peft",
    "PeftModelForCausalLM": "peft",
    "LoraConfig": "peft",
    "DeepSpeedEngine": "deepspeed",
    "GRPOEnvTrainer": "verifiers",
    "UnslothGRPOTrainer": "unsloth",
    "_UnslothGRPOTrainer": "unsloth",
}
#: a package's trainer classes extend another package's: an attribute such a trainer lacks is one
#: its parent class (of another release) set
PARENTS = {"trl": "transformers", "verifiers": "trl", "unsloth": "trl"}
_TRANSFORMERS_CLASS = re.compile(
    r"(?:ForCausalLM|ForConditionalGeneration|TokenizerFast|Tokenizer|PreTrainedModel)$"
)


@dataclass
class Boundary:
    """Package ``caller`` (None: the user's code) calls or imports package ``callee``, and the
    exception ``exc`` says they do not fit; ``caller_frame`` / ``callee_frame``: the frames on
    either side of the boundary (when the traceback shows them), ``what``: what was missing."""

    caller: str | None
    callee: str
    exc: Traceback
    what: str
    caller_frame: Frame | None = None
    callee_frame: Frame | None = None
    #: the exception alone does not tell drift from a bug of the caller (a trainer reading an
    #: attribute its parent class sets only in the training loop: drift, or evaluate() before
    #: train()): a finding only with a known answer for the log's versions
    ambiguous: bool = False
    #: ``caller`` passed on keywords it was given (``**kwargs``) and the traceback shows no code
    #: of the user's: drift of ``caller``'s own call, or a keyword from the user's configuration
    forwarded: bool = False
    #: what the caller did and what the callee lacks, for the one text of every drift
    #: (``imports X from M`` / ``does not have``); ``name``: the name that did not fit (the
    #: imported name, the attribute, the keyword), ``func``: the callee's function or class
    verb: str = ""
    lacks: str = "does not have"
    name: str = ""
    func: str = ""
    #: a subclass's override of a transformers Trainer method, called by transformers with an
    #: argument it has no parameter for: the row of rules/knowledge/trainer_hooks.yaml
    override: dict[str, Any] | None = None
    #: the caller and the callee are one package (``own_call``): its code does not fit itself;
    #: ``defined_in``: the callee's files in that package (the frame index)
    intra: bool = False
    defined_in: tuple[str, ...] = ()

    def text(self, have: dict[str, str], caller: str = "") -> str:
        """``trl imports X from vllm.m, which the installed vllm 0.12.0 does not have``."""
        caller = caller or self.caller or "your code"
        version = f" {have[self.callee]}" if self.callee in have else ""
        if not self.verb:
            return f"{caller} was written for another {self.callee} release ({self.exc.name}: {self.what})"
        return f"{caller} {self.verb}, which the installed {self.callee}{version} {self.lacks}"


#: TRL's trainer classes a wrapper subclasses (``XGRPOTrainer``, ``UnslothGRPOTrainer``)
TRL_TRAINERS = ("GRPOTrainer", "RLOOTrainer", "DPOTrainer", "SFTTrainer", "PPOTrainer", "OnlineDPOTrainer")


def _trl_trainer(name: str) -> str | None:
    """The TRL trainer class ``name`` is or extends by its name (``XGRPOTrainer``: GRPOTrainer)."""
    base = name.rsplit(".", 1)[-1].removesuffix(".__init__").lstrip("_")
    return next((t for t in TRL_TRAINERS if base.endswith(t)), None)


def _top(module: str) -> str | None:
    return PACKAGES.get(module.split(".")[0])


def _object_package(obj: str) -> str | None:
    name = obj.rsplit(".", 1)[-1]
    if name in OBJECTS:
        return OBJECTS[name]
    return "transformers" if _TRANSFORMERS_CLASS.search(name) else None


def _last_run(frames: list[Frame], package: str) -> tuple[Frame | None, Frame | None]:
    """In ``frames`` (oldest first): the first frame of the last run of ``package``'s frames at
    the end, and the last frame of another package before it (the boundary)."""
    i = len(frames)
    while i > 0 and frames[i - 1].package in (package, None) and not _user(frames[i - 1]):
        i -= 1
    inside = next((f for f in frames[i:] if f.package == package), None)
    before = next((f for f in reversed(frames[:i]) if f.package is not None or _user(f)), None)
    return before, inside


#: a console script pip wrote for a package's entry point (``…/bin/vllm``, ``…/bin/accelerate``:
#: no ``.py``), which only imports the package's ``main``: the package's launcher, not the user's code
_CONSOLE_SCRIPT = re.compile(r"/bin/[\w.-]{1,100}$")


def _user(f: Frame) -> bool:
    """A frame of the user's code (not a package's, not Python's own ``<frozen …>`` or standard
    library, not a package's console script)."""
    return (
        f.package is None
        and not f.path.startswith("<")
        and not f.python_own
        and not (_CONSOLE_SCRIPT.search(f.path.replace("\\", "/")) and not f.path.endswith(".py"))
    )


def _forwards(f: Frame) -> bool:
    """A frame that forwards its caller's arguments (``super().__init__(``, ``**kwargs``)."""
    return (
        f.code.startswith(("super().__init__(", "super().__init__(*", "return f(*args, **kwargs)"))
        or "**kwargs" in f.code
    )


#: attribute-lookup machinery: a frame of these raised the AttributeError for the frame that
#: read the attribute (nn.Module's and PEFT's ``__getattr__`` delegate down a chain of them)
_LOOKUP = ("__getattr__", "__getattribute__")


def _reader(frames: list[Frame]) -> Frame | None:
    """The frame that read the missing attribute: the last one outside the lookup machinery;
    None when the traceback shows only that machinery (the reader was cut off)."""
    i = len(frames)
    while i > 0 and frames[i - 1].function in _LOOKUP:
        i -= 1
    return frames[i - 1] if i else None


def _caller(frames: list[Frame], callee: str) -> Frame | None:
    """The last frame that is not ``callee``'s nor Python's own: where the call or import was."""
    return next(
        (f for f in reversed(frames) if f.package != callee and (f.package is not None or _user(f))), None
    )


def find(tb: Traceback) -> Boundary | None:
    """The package boundary ``tb`` failed at, when its exception is API drift (module docstring)."""
    name, msg = tb.name, tb.message
    option = _TORCH_OPTION.match(msg.strip()) if name == "RuntimeError" else None
    if option is not None:  # a package sets a torch config option the installed torch lacks
        caller = _caller(tb.shown_frames(), "torch")
        if caller is None or caller.package is None:
            return None  # the user's code sets it: a typo or the user's torch, not a package's drift
        key = option.group("key")
        return Boundary(
            caller.package,
            "torch",
            tb,
            f"the torch._inductor / torch._dynamo option {key}",
            caller,
            verb=f"sets the torch config option {key}",
            lacks="does not have (an option of a newer torch)",
            name=key,
        )
    if name not in DRIFT:
        return None
    frames = tb.shown_frames()
    if name in ("ImportError", "ModuleNotFoundError") or _MODULE_ATTR.search(msg):
        m = _IMPORT.search(msg) or _NO_MODULE.search(msg) or _MODULE_ATTR.search(msg)
        if m is None:
            return None
        module = m.group("module")
        callee = _top(module)
        if callee is None or (
            "." not in module and not m.groupdict().get("name") and not m.groupdict().get("attr")
        ):
            return None  # another package, or a package that is not installed at all: no drift
        if "(unknown location)" in msg:
            return None  # a directory shadowing the package
        caller = _caller(frames, callee)
        missing = (m.groupdict().get("name") or m.groupdict().get("attr") or "").strip()
        what = f"{missing} of {module}" if missing else f"the module {module}"
        if caller is None and frames and all(f.package == callee for f in frames if f.package):
            return None  # the package importing itself: a broken install, not another package
        importer = next((f for f in reversed(frames) if not f.python_own), None)
        if frames and frames[-1].python_own and importer is not None and importer.package == callee:
            return None  # its own code imports it through importlib: a broken install of it
        verb = (
            f"imports {missing} from {module}"
            if m.groupdict().get("name")
            else f"reads {module}.{missing}"
            if missing
            else f"imports the module {module}"
        )
        return Boundary(
            caller.package if caller else None,
            callee,
            tb,
            what,
            caller,
            None,
            verb=verb,
            lacks="does not have (renamed or removed, or not yet added in that release)",
            name=missing or module,
        )
    if name == "AttributeError":
        m = _OBJECT_ATTR.search(msg)
        if m is None:
            return None
        obj, attr = m.group("obj"), m.group("attr")
        owner = _object_package(obj)
        reader = _reader(frames)
        if frames and reader is None:
            return None  # only the objects' own lookup is shown: who read it is not known
        raised = reader.package if reader else None
        parent = _trl_trainer(obj)
        read: dict[str, Any] = dict(verb=f"reads {obj}.{attr}", lacks="does not set", name=attr, func=obj)
        if owner is None and parent and (raised is None or raised not in STACK - {"trl"}):
            # a subclass of a TRL trainer that no package of the stack owns (a repository's
            # XGRPOTrainer): it reads what its parent class (of another release) sets
            who = raised if raised is not None and raised != "trl" else None
            return Boundary(who, "trl", tb, f"{obj}.{attr}", reader, ambiguous=True, **read)
        if owner is not None and raised is None and not frames and owner in PARENTS:
            # only the message: a wrapper's trainer lacks what its parent class set
            return Boundary(owner, PARENTS[owner], tb, f"{obj}.{attr}", ambiguous=True, **read)
        if owner is not None and raised == owner and owner in PARENTS and obj.endswith("Trainer"):
            # the trainer's own code reads an attribute of itself that its parent class sets
            return Boundary(owner, PARENTS[owner], tb, f"{obj}.{attr}", reader, ambiguous=True, **read)
        if owner is not None and raised is not None and raised != owner:
            return Boundary(
                raised,
                owner,
                tb,
                f"{obj}.{attr}",
                reader,
                verb=f"reaches for {obj}.{attr}",
                lacks="does not have (its object here has no such attribute)",
                name=attr,
                func=obj,
            )
        return None
    if name == "TypeError":
        m = _CALL.search(msg)
        if m is None:
            return None
        func = m.group("func")
        hooked = _override(tb, m) or _package_override(tb, m, frames) or _unframed_override(tb, m, frames)
        if hooked is not None:
            return hooked
        if m.group("kwarg") and not re.search(rf"'{m.group('kwarg')}'", msg):
            return None  # a keyword cut off by the log: only an override's row can tell it
        kind = (
            f"the keyword argument '{m.group('kwarg')}'"
            if m.group("kwarg")
            else f"the arguments {m.group('missing')}"
            if m.group("missing")
            else f"{m.group('given')} positional arguments (it takes {m.group('takes')})"
            if m.group("given")
            else f"argument '{m.group('dup')}' twice"
        )
        what = f"{func}() and {kind}"
        short = func.removesuffix(".__init__")
        call: dict[str, Any] = dict(
            verb=(
                f"calls {short}() with '{m.group('kwarg')}'"
                if m.group("kwarg")
                else f"calls {short}() without {m.group('missing')}"
                if m.group("missing")
                else f"calls {short}() with {m.group('given')} positional arguments"
                if m.group("given")
                else f"calls {short}() with argument '{m.group('dup')}' twice"
            ),
            lacks=(
                "does not take"
                if m.group("kwarg") or m.group("given")
                else "requires"
                if m.group("missing")
                else "does not take that way"
            ),
            name=m.group("kwarg") or m.group("dup") or "",
            func=short,
        )
        owner = _object_package(func.split(".")[0]) or _object_package(func.rsplit(".", 1)[-1])
        last = frames[-1].package if frames else None
        if owner is None and frames and _dispatches(frames[-1], func):
            # the innermost frame hands its arguments on to a function it holds in a variable
            # (torch's Module._call_impl: ``forward_call(*args, **kwargs)``): the function that
            # refused is whatever was bound there (a patched forward, a hook), not that package's
            return None
        if last is not None and owner in (None, last):
            before, inside = _last_run(frames, last)
            if before is not None and before.package != last and before.package is not None:
                if m.group("kwarg") and _forwards(before):
                    # A only passed the user's keywords on (super().__init__(…, **kwargs)): the
                    # user's code named the argument B does not take
                    user = next((f for f in reversed(frames) if _user(f)), None)
                    if user is None and frames[0].package == before.package:
                        # the traceback starts in A (a Ray actor's creation task): no code of the
                        # user's is shown, A's own call or keywords it was given (likely drift)
                        return Boundary(
                            before.package,
                            last,
                            tb,
                            what,
                            before,
                            inside,
                            ambiguous=True,
                            forwarded=True,
                            **call,
                        )
                    return Boundary(None, last, tb, what, user, inside, **call)
                return Boundary(before.package, last, tb, what, before, inside, **call)
            return own_call(tb, frames, m, what, call)
        if owner is not None and last is not None and last != owner:
            if m.group("kwarg") and _forwards(frames[-1]):
                user = next((f for f in reversed(frames) if _user(f)), None)
                return Boundary(None, owner, tb, what, user, **call)
            return Boundary(last, owner, tb, what, frames[-1], **call)
        if owner == "trl" and m.group("kwarg") and _trl_trainer(short) and (not frames or last is None):
            # the message alone (or the user's frame): the user's call of TRL's trainer; only the
            # trainer's parameters per release can answer it (``pair_fix``), else no finding
            user = next((f for f in reversed(frames) if _user(f)), None)
            return Boundary(None, "trl", tb, what, user, ambiguous=True, **call)
        return None
    # NotImplementedError: raised in B's frames, entered from A's
    last = frames[-1].package if frames else None
    if last is None or _abstract_stub(frames[-1], tb.message):
        return None
    before, inside = _last_run(frames, last)
    if before is None or before.package in (None, last):
        return None
    method = f"{inside.function if inside else 'a method'} of {last}"
    return Boundary(
        before.package,
        last,
        tb,
        method,
        before,
        inside,
        verb=f"calls {method}",
        lacks="does not implement",
        func=inside.function if inside else "",
    )


#: a call that hands on every argument it was given: ``(*args, **kwargs)``, ``(*input, **kwargs)``
_PASS_ALL = re.compile(r"\(\s*\*\w+\s*,\s*\*\*\w+\s*\)")


def _dispatches(f: Frame, func: str) -> bool:
    """The frame's line passes all its arguments on to a callable other than ``func`` by name
    (torch's ``forward_call(*args, **kwargs)``, ``*input`` before torch 2): the callee is bound
    at run time, its package is not the frame's."""
    return bool(_PASS_ALL.search(f.code)) and not _calls(f.code, func)


#: a base class's method that only says subclasses must define it (torch's Dataset.__getitem__:
#: "Subclasses of Dataset should implement __getitem__.")
_STUB = re.compile(r"subclass(?:es)?\b.{0,60}\b(?:should|must) (?:implement|override)", re.IGNORECASE)


def _abstract_stub(f: Frame, message: str) -> bool:
    """The NotImplementedError is a base class's placeholder (an abstract method or an operation
    the object's type does not offer: indexing a streaming dataset), not a release of that
    package lacking what another calls: the object handed in is of the wrong kind."""
    return bool(_STUB.search(f"{f.code} {message}")) or (
        f.function.rsplit(".", 1)[-1] in _DUNDER_OPS and "raise NotImplementedError" in f.code
    )


_DUNDER_OPS = frozenset({"__getitem__", "__len__", "__iter__", "__setitem__", "__contains__"})


#: a call's message that does not bind (the keyword, the counts), for the callers of another module
CALL_SHAPE = _CALL


def calls_by_name(code: str, func: str) -> bool:
    """``_calls``, for the callers of another module."""
    return _calls(code, func)


def _calls(code: str, func: str) -> bool:
    """The source line ``code`` calls ``func`` by its own name (``obj.send_chunks(``,
    ``Sender(``): not under another name (an import's alias: another package's function)."""
    name = func.removesuffix(".__init__").rsplit(".", 1)[-1]
    return bool(name) and re.search(rf"(?<![\w]){re.escape(name)}\(", code) is not None


def own_call(
    tb: Traceback, frames: list[Frame], m: re.Match[str], what: str, call: dict[str, Any]
) -> Boundary | None:
    """A package's call of one of its own functions that does not fit the function's signature.

    A call that does not bind raises in the caller's frame: the innermost frame is the package
    that called, and its source line shows the call by the callee's name. When the frame index
    says that name is that package's own function (``owners``), the package's code disagrees
    with itself: a regression inside it, or files of two of its revisions mixed. Not where the
    call passes on keywords it was given (``**kwargs``: one may be the user's), nor where the
    name is called under another (an import's alias: a dependency's function)."""
    from envdoctor.triage import owners

    caller = frames[-1] if frames else None
    if caller is None or caller.package is None or not caller.code or "**" in caller.code:
        return None
    func = m.group("func")
    if not _calls(caller.code, func):
        return None
    found = owners.owner(func, [caller.package])
    if found is None or found[0] != caller.package:
        return None
    cls, _, method = func.removesuffix(".__init__").rpartition(".")
    if (
        cls
        and re.search(rf"\bself\.{re.escape(method)}\(", caller.code)
        and _own_takes(caller.package, cls, method, m)
    ):
        return None  # the package's own method takes it: the callee is a subclass's override of that name
    return Boundary(
        caller.package, caller.package, tb, what, caller, intra=True, defined_in=tuple(found[1][:3]), **call
    )


def _own_takes(package: str, cls: str, method: str, m: re.Match[str]) -> bool:
    """``package``'s own ``cls.method`` (its symbol history) takes what the message says the
    callee refused, in every release the history has it: the keyword (by name or ``**kwargs``),
    or as many positional arguments as were given (its parameters by name, ``self`` and
    ``*args`` counted; a keyword-only one counted too, so the answer may be yes where the package's
    method would refuse: then no finding, never a false one). A subclass of the same class name
    (a project's ``class Trainer(transformers.Trainer)``) overrides it: the callee is that."""
    from envdoctor.knowledge.symbol_history import history, packages

    h = history(package) if package in packages() else None
    short = cls.rsplit(".", 1)[-1]
    if h is None or not short:
        return False
    if m.group("kwarg"):
        scope, have = h.params(short, method, m.group("kwarg"), var=True)
        return bool(scope) and have == scope
    if not m.group("given"):
        return False
    scope, _ = h.params(short, method, "@")
    if not scope:
        return False
    names = {p for _, _, node in h.classes(short) for p in (node.get("p", {}).get(method) or {}) if p != "@"}
    always = [p for p in names if h.params(short, method, p)[1] == scope]
    if "*" in always:
        return True
    return len([p for p in always if p != "**"]) + 1 >= int(m.group("given"))


# -- an override called with what transformers passes now --------------------------------------


def _hook_row(method: str, m: re.Match[str]) -> dict[str, Any] | None:
    """The row of rules/knowledge/trainer_hooks.yaml that a TypeError of ``method`` is: a keyword
    transformers passes (the message may cut its name: a prefix of 8 characters or more), or
    one positional argument more than the override takes."""
    from envdoctor.knowledge import knowledge

    for row in knowledge().trainer_hooks.get("trainer_hooks") or []:
        if row.get("method") != method:
            continue
        arg, kwarg = str(row.get("argument", "")), m.group("kwarg")
        if (
            row.get("how") == "keyword"
            and kwarg
            and (kwarg == arg or len(kwarg) >= 8 and arg.startswith(kwarg))
        ):
            return dict(row)
        if row.get("how") == "positional" and m.group("given") and m.group("takes"):
            takes = re.match(r"(?:from \d{1,3} to )?(\d{1,3})", m.group("takes"))
            if takes and int(m.group("given")) == int(takes.group(1)) + 1:
                return dict(row)
    return None


def _override(tb: Traceback, m: re.Match[str]) -> Boundary | None:
    """A trainer subclass's override of a transformers Trainer method (``X.compute_loss``,
    ``X.training_step``, ``X._get_train_sampler``) that the installed transformers' loop calls
    with an argument the override has no parameter for: drift between the subclass's package
    (TRL, a wrapper, the user's code) and transformers, told by the class hierarchy — the
    subclass's frame is not in the traceback, transformers' loop is the caller."""
    cls, _, method = m.group("func").rpartition(".")
    cls = cls.rsplit(".", 1)[-1]
    if not cls or not cls.endswith("Trainer") or cls == "Trainer":
        return None  # transformers' own Trainer, or no method of a trainer class
    row = _hook_row(method, m)
    frames = [f for t in tb.all() for f in t.frames] if not tb.frames else tb.frames
    if row is None:
        row = _shown_call(method, m, frames)
    if row is None:
        return None
    if frames and frames[-1].package not in ("transformers", None):
        return None  # called by another package's loop, not transformers'
    owner = "trl" if cls in _TRL_OWN_TRAINERS else _object_package(cls)
    owner = owner if owner not in (None, "transformers") else _trl_trainer_owner(cls, frames)
    arg, since = row["argument"], row["since"]
    return Boundary(
        owner,
        "transformers",
        tb,
        f"{cls}.{method}() and {arg}",
        None,
        frames[-1] if frames and frames[-1].package == "transformers" else None,
        verb=f"overrides Trainer.{method}() in {cls} without a parameter for {arg}",
        lacks=f"passes to it (from {since})" if since else "passes to it (its call in the traceback)",
        name=method,
        func=cls,
        override=row,
    )


def _shown_call(method: str, m: re.Match[str], frames: list[Frame]) -> dict[str, Any] | None:
    """A row for a hook the table lacks, from the traceback itself: transformers' frame shows its
    call ``self.<method>(a, b, c)`` with one positional argument more than the override takes —
    the call's own words say what transformers passes now (the release it began is not known)."""
    if not (m.group("given") and m.group("takes")) or not frames or frames[-1].package != "transformers":
        return None
    takes = re.match(r"(?:from \d{1,3} to )?(\d{1,3})", m.group("takes"))
    call = re.search(rf"\bself\.{re.escape(method)}\((?P<args>[^()]{{0,300}})\)", frames[-1].code)
    if takes is None or call is None or int(m.group("given")) != int(takes.group(1)) + 1:
        return None
    args = [a.strip() for a in call.group("args").split(",") if a.strip() and "=" not in a]
    if len(args) + 1 != int(m.group("given")):
        return None  # the shown call is not the one that failed (another line, keywords)
    arg = args[-1]
    return {
        "method": method,
        "argument": arg,
        "how": "positional",
        "since": None,
        "fix": f"add a parameter for {arg} to the override, as transformers' loop calls it: "
        f"self.{method}({call.group('args').strip()})",
    }


def _package_override(tb: Traceback, m: re.Match[str], frames: list[Frame]) -> Boundary | None:
    """An override of a package's method, in a class the package does not define (the user's, a
    project's, a wrapper's), that the package's own frame calls (``self.<method>(…)``, the
    traceback's innermost frame, its line calling it on ``self``) with an argument the override has
    no parameter for: the subclass was written for a release of the package that did not pass it
    (a call on another object, ``self.sender.send_chunks(``, may be the package's own class: not
    this). What ``_override``
    tells for transformers' Trainer hooks, for any package whose frame index or symbol history
    places the method: the class's code must take the argument, or the package be pinned."""
    from envdoctor.knowledge.symbol_history import defines_method, param_since
    from envdoctor.triage import owners

    cls, _, method = m.group("func").rpartition(".")
    cls = cls.rsplit(".", 1)[-1]
    last = frames[-1] if frames else None
    if not method or method.startswith("__") or last is None or last.package is None:
        return None
    # Python before 3.10 names no class (``log() takes 2 positional arguments but 3 were given``):
    # the package's own method, at the release that makes the call, takes it; the one that does
    # not is a subclass's override (the user's, or another package's trainer)
    named = cls or "a subclass"
    if not (m.group("kwarg") or m.group("given")):
        return None
    if re.search(rf"\bself\.{re.escape(method)}\(", last.code) is None:
        return None  # not the package's method calling the same object's method (``self.m(``)
    shown = re.search(rf"\bself\.{re.escape(method)}\((?P<args>[^()]{{0,300}})\)", last.code)
    if m.group("given") and m.group("takes"):
        takes = re.match(r"(?:from \d{1,3} to )?(\d{1,3})", m.group("takes"))
        args = [a for a in (shown.group("args").split(",") if shown else []) if a.strip()]
        if shown is None or takes is None or any("=" in a or "*" in a for a in args):
            return None  # the shown call cannot tell what the package passes positionally
        if len(args) + 1 != int(m.group("given")) or int(m.group("given")) != int(takes.group(1)) + 1:
            return None  # the shown call is not the one that failed
    pkg = last.package
    if (
        cls
        and (owners.modules(pkg, f"{cls}.{method}") or defines_method(pkg, method, cls))
        and not _own_takes(pkg, cls, method, m)
    ):
        return None  # the package's own class: its code against itself (own_call, TRI031)
    if not (owners.modules(pkg, method) or defines_method(pkg, method)):
        return None  # a method the package does not define: the class's own contract, not drift
    found = owners.owner(f"{cls}.{method}") if cls else None
    owner = found[0] if found is not None and found[0] != pkg else None
    kwarg = m.group("kwarg")
    arg = kwarg or "one more positional argument"
    since = param_since(pkg, method, kwarg) if kwarg else None
    row = {
        "method": method,
        "argument": arg,
        "how": "keyword" if kwarg else "positional",
        "since": since,
        "fix": f"add a parameter for {arg} to the override ({kwarg + '=None' if kwarg else 'or *args'}, or "
        f"**kwargs), as {pkg} calls it: {last.code.strip()[:160]}",
        "in": f"{cls}.{method}" if cls else f"the subclass's {method}()",
    }
    return Boundary(
        owner,
        pkg,
        tb,
        f"{cls or pkg}.{method}() and {arg}",
        None,
        last,
        verb=f"overrides {pkg}'s {method}() in {named} without a parameter for {arg}",
        lacks=f"passes to it (from {since})" if since else "passes to it (its call in the traceback)",
        name=method,
        func=cls or method,
        override=row,
    )


def _unframed_override(tb: Traceback, m: re.Match[str], frames: list[Frame]) -> Boundary | None:
    """``C.m() got an unexpected keyword argument 'k'`` quoted without a frame (a one-line paste,
    a wrapper's re-raise) where ``C`` is no class of any package envdoctor has a history of (the
    user's, a project's: verl's ``ExternalZeroMQDistributedExecutor``), ``m`` a method that exactly
    one package of the histories defines, and that package's classes took ``k`` from a release on
    (``param_added``): ``C`` overrides the package's method and was written for a release before it
    passed ``k`` — what ``_package_override`` tells from the package's calling frame, told from the
    release history where the log shows none. Not for dunders (``__init__``: every class has one),
    a method several packages define, nor a keyword no release of the package passes."""
    from envdoctor.knowledge.symbol_history import defines_method, history, packages, param_added

    kwarg = m.group("kwarg")
    cls, _, method = m.group("func").rpartition(".")
    cls = cls.rsplit(".", 1)[-1]
    if frames or not kwarg or not cls or not method or method.startswith("_") or "<" in cls:
        return None
    if not re.search(rf"'{re.escape(kwarg)}'", tb.message):
        return None  # a keyword the log cut off
    stack = packages()
    if any((h := history(p)) is not None and h.class_releases(cls) for p in stack):
        return None  # a class of a package's own: its drift is the symbol history's to tell
    owners = [p for p in stack if defines_method(p, method)]
    if len(owners) != 1:
        return None
    pkg = owners[0]
    since = param_added(pkg, method, kwarg)
    if since is None:
        return None
    row = {
        "method": method,
        "argument": kwarg,
        "how": "keyword",
        "since": since,
        "fix": f"add a parameter for {kwarg} to the override ({kwarg}=None, or **kwargs)",
    }
    return Boundary(
        None,
        pkg,
        tb,
        f"{cls}.{method}() and {kwarg}",
        None,
        None,
        verb=f"overrides {pkg}'s {method}() in {cls} without a parameter for {kwarg}",
        lacks=f"passes to it (from {since}: its classes' {method}() take {kwarg} from then)",
        name=method,
        func=cls,
        override=row,
    )


#: TRL's own trainer classes by their exact names (an override of theirs is TRL's code)
_TRL_OWN_TRAINERS = frozenset(
    (*TRL_TRAINERS, "XPOTrainer", "NashMDTrainer", "KTOTrainer", "ORPOTrainer", "CPOTrainer", "BCOTrainer")
    + ("RewardTrainer", "GKDTrainer", "PRMTrainer", "IterativeSFTTrainer", "AlignPropTrainer", "DDPOTrainer")
)


def _trl_trainer_owner(cls: str, frames: list[Frame]) -> str | None:
    """The package of a trainer class no table names: a wrapper's whose frames the traceback
    shows (``unsloth`` for ``UnslothGRPOTrainer``), else the user's code (None)."""
    low = cls.lower()
    return next((p for p in {f.package for f in frames if f.package} if p.split("-")[0] in low), None)


# -- the pair that works ----------------------------------------------------------------------


def _V1_NOTE(b: Boundary) -> str:  # noqa: N802 - a phrase, named like one
    """vLLM's V1 engine has no ``llm_engine.model_executor`` (huggingface/trl#3115)."""
    if b.callee == "vllm" and b.name == "model_executor":
        return "; or VLLM_USE_V1=0 while that vLLM still has its V0 engine (huggingface/trl#3115)"
    return ""


def _floor(spec: str) -> str | None:
    m = re.search(r">=\s*([\w.]+)", spec or "")
    return m.group(1) if m else None


def _first(spec: str) -> str | None:
    """The first release of a TRL line ``>=0.17.0,<0.18.0``."""
    return _floor(spec)


def _trl_requires(kb: Any, trl: str | None, dist: str) -> str | None:
    line = kb.trl_line(trl) if trl else None
    req = (line or {}).get("requires") or {}
    return str(req[dist]) if dist in req else None


def _newest_trl_for(kb: Any, dist: str, version: str) -> str | None:
    """The newest TRL line envdoctor knows whose ``requires`` admit ``dist`` ``version``."""
    best = None
    for line in kb.trl.get("trl_lines", []):
        spec = (line.get("requires") or {}).get(dist)
        first = _first(str(line.get("trl", "")))
        newer = best is None or versions.sort_key(first) > versions.sort_key(best)
        if spec and first and versions.satisfies(version, str(spec)) and newer:
            best = first
    return best


_TRL_SUPPORTS = re.compile(
    r"TRL currently only supports vLLM version `?(?P<want>[\w.]{1,40})`?\. "
    r"You have version (?P<have>[\w.]{1,40}) installed"
)


def _release_range(entry: dict[str, Any]) -> str:
    since, until = entry.get("since"), entry.get("until")
    return f"from TRL {since}" + (f" until {until} (removed there)" if until else "")


def _trainer_answer(b: Boundary, have: dict[str, str], kb: Any) -> tuple[str, str] | None:
    """The user's call of TRL's GRPOTrainer with a keyword, or a trainer subclass reading an
    attribute TRL's GRPOTrainer sets from a config key, judged against TRL's releases."""
    trl = have.get("trl")
    trainer = _trl_trainer(b.func) if b.func else None
    keyword = b.name.isidentifier()  # a keyword's name; not "f() requires a and b" (a call's arity)
    if b.exc.name == "TypeError" and keyword and trainer == "GRPOTrainer" and b.callee == "trl":
        table = kb.trainer_params or {}
        params: dict[str, dict[str, Any]] = table.get("parameters") or {}
        releases = [str(r) for r in table.get("releases") or []]
        if not params or not releases:
            return None
        entry = params.get(b.name)
        if entry is None:
            return (
                f"remove {b.name}= from the GRPOTrainer(...) call: no TRL release takes it (envdoctor "
                f"read GRPOTrainer.__init__ of TRL {releases[0]} to {releases[-1]}: it takes "
                f"{', '.join(params)}; GRPOTrainer builds what a transformers Trainer would take "
                "from its own arguments and GRPOConfig)",
                "GRPOTrainer's parameters per TRL release",
            )
        fits = "trl>=" + str(entry["since"]) + (f",<{entry['until']}" if entry.get("until") else "")
        return (
            f"pip install '{fits}' (GRPOTrainer takes {b.name}= {_release_range(entry)}"
            + (f"; the log shows TRL {trl}" if trl else "")
            + f"), or drop {b.name}= from the call",
            "GRPOTrainer's parameters per TRL release",
        )
    trainer_attr = trainer or b.func.endswith("Trainer")
    if b.exc.name == "AttributeError" and b.callee == "trl" and b.name and trainer_attr:
        key = kb.config_key(b.name)
        if not key or not (key.get("since") or key.get("until")):
            return None
        inside = versions.satisfies(trl, f">={key['since']}" if key.get("since") else ">=0") if trl else None
        if inside and not (key.get("until") and not versions.below(trl, str(key["until"]))):
            return None  # the log's TRL sets it: not this drift
        fits = f"trl>={key['since']}" if key.get("since") else "trl"
        if key.get("until"):
            fits += f",<{key['until']}"
        who = b.caller or f"your code's {b.func}"
        return (
            f"install the TRL release {who} was written for (its requirements pin it; one where "
            f"GRPOTrainer sets {b.name}: pip install '{fits}'"
            + (f", the log shows TRL {trl}" if trl else "")
            + f"), or update {b.func} for the installed TRL",
            "GRPOConfig's keys per TRL release",
        )
    return None


def pair_fix(
    b: Boundary,
    have: dict[str, str],
    kb: Any,
    entries: list[Any],
    context: Sequence[str] = (),
    matched: Sequence[Any] = (),
) -> tuple[str, str]:
    """``(the fix, where it comes from)`` for the pair of ``b``; ``have``: the versions the log
    shows (dist -> version); ``context``: the log's lines before the failure (TRL's own warning
    of the vLLM it supports); ``matched``: the catalogue entries whose symptom is the failing line
    itself. A catalogue entry about this drift (the pair, and the name that did not fit or a
    symptom that matched the line) answers first, with the release pairing as the other way."""
    imported = b.exc.name in ("ImportError", "ModuleNotFoundError")  # a line that is the import itself
    known = (_catalogue_fix(b, have, matched, by_line=True) if imported else None) or _catalogue_fix(
        b, have, entries
    )
    fix, source = _pair_fix(b, have, kb, context)
    if known is None:
        return fix, source
    text, entry_id = known
    other = source or b.caller is None  # the user's code (or an importer cut off) may be the one to change
    return (f"{text}; or {fix}" if other else text), f"the known-failures catalogue ({entry_id})"


def _catalogue_fix(
    b: Boundary, have: dict[str, str], entries: Sequence[Any], by_line: bool = False
) -> tuple[str, str] | None:
    """The fix of a catalogue entry about this drift, where the log's versions do not contradict
    it: one whose symptom is the failing line itself (``by_line``), or one whose packages hold the
    callee and the caller (for the user's code: the callee alone, unless the log cuts the importer
    off) and whose symptom names what did not fit."""
    if not b.name and not by_line:
        return None
    for e in entries:
        pk = e.packages
        raised = getattr(e, "raised", None) or ("", "", ())
        if b.caller and raised[2] and b.caller not in {p for p, _, _ in raised[2]}:
            continue  # the entry says which package raises it, and this caller is another
        texts = [x.text for x in getattr(e, "symptoms", ())] + [str(raised[1])]
        if b.override is not None:  # an override: the entry must name the very class and method
            own = re.compile(rf"(?<![\w.]){re.escape(b.func)}\.{re.escape(b.name)}\b")
            about = any(own.search(t) for t in texts)
        else:
            about = by_line or (
                b.callee in pk
                and (
                    # an argument the callee removed (an entry about the callee alone): any caller
                    b.caller in pk or set(pk) <= {b.callee} and b.exc.name == "TypeError"
                    if b.caller
                    else set(pk) <= {b.callee} or b.caller_frame is None
                )
                and any(_names(t, b) for t in texts)
            )
        held = all(versions.satisfies(have[d], spec) is not False for d, spec in pk.items() if d in have)
        if about and held:
            if e.fixed_in:
                fixed = ", ".join(f"{d}=={v}" for d, v in e.fixed_in.items())
                return f"pip install '{fixed}' ({e.fix}; {e.id})" + _V1_NOTE(b), e.id
            return f"{e.fix} ({e.id})" + _V1_NOTE(b), e.id
    return None


def _names(text: str, b: Boundary) -> bool:
    """A symptom's text names what did not fit: ``'name'``, or ``.name`` (of the very class where
    the failure names one: ``VLLMGeneration.generate`` is not ``PPOTrainer.generate``)."""
    if f"'{b.name}'" in text:
        return True
    if b.func and b.exc.name == "AttributeError":
        return re.search(rf"(?<![\w.]){re.escape(b.func)}\.{re.escape(b.name)}\b", text) is not None
    return f".{b.name}" in text


def _pair_fix(b: Boundary, have: dict[str, str], kb: Any, context: Sequence[str]) -> tuple[str, str]:
    """The release pairing of ``b`` from TRL's knowledge (``pair_fix``)."""
    a, c = b.caller, b.callee
    va, vc = have.get(a or ""), have.get(c)
    pair = {a, c}
    if b.override is not None:
        row = b.override
        where = row.get("in") or f"{b.func}.{row['method']}"
        since, seen = row["since"], f" (the log shows {c} {vc})" if vc else ""
        if since is None:  # a hook the table lacks: the call shown in transformers' frame says it
            pin = f"or install the {c} release the project pins (its requirements)"
            if a is not None:
                return (
                    f"pip install --upgrade {a} (a release whose {b.func}.{row['method']} takes "
                    f"{row['argument']}){seen}; {pin}",
                    f"{c}'s call shown in the traceback",
                )
            return (
                f"{row['fix']} — in {where}{seen}; {pin}",
                f"{c}'s call shown in the traceback",
            )
        pin = f"pip install '{c}<{since}'"
        if a is not None:  # a package's trainer: its release, not the user, must change
            fix = (
                f"pip install --upgrade {a} (a release made for {c} >= {since}, whose "
                f"{b.func}.{row['method']} takes {row['argument']}){seen}; or {pin}"
            )
        else:
            fix = f"{row['fix']} — in {where}; {c} passes {row['argument']} from {since}{seen}; or {pin}"
        if c != "transformers":
            return fix, f"{c}'s methods per release (rules/knowledge/symbols/)"
        return fix, "transformers' Trainer methods per release (rules/knowledge/trainer_hooks.yaml)"
    trainer = _trainer_answer(b, have, kb)
    if trainer is not None:
        return trainer
    # 2. TRL's vLLM range per release: TRL's own warning of the log, else the knowledge
    if pair == {"trl", "vllm"}:
        for said in context:
            w = _TRL_SUPPORTS.search(said)
            if w:
                return (
                    f"pip install 'vllm=={w.group('want')}' (the vLLM this TRL supports, its own warning "
                    f"says; {w.group('have')} is installed)" + _V1_NOTE(b),
                    "TRL's warning in the log",
                )
        trl = have.get("trl")
        line = kb.trl_line(trl) if trl else None
        if line and line.get("vllm"):
            vrange = str(line["vllm"])
            top = re.search(r"(?:<=|==)\s*([\w.]+)", vrange)
            if "vllm" in have and versions.satisfies(have["vllm"], vrange) is False and _floor(vrange):
                top = top or re.search(r">=\s*([\w.]+)", vrange)
            pin = f"vllm=={top.group(1)}" if top else f"trl[vllm]=={trl}"
            why = (
                f"TRL {trl} supports vLLM {vrange}"
                if top
                else f"TRL {trl}'s extra installs the vLLM it was made for: "
                f"{line.get('vllm_extra') or vrange}; its range {vrange} has no top"
            )
            return (
                f"pip install '{pin}' ({why}, rules/knowledge/trl.yaml)"
                + (f"; or the TRL release made for vLLM {have['vllm']}" if "vllm" in have else "")
                + _V1_NOTE(b),
                "TRL's vLLM range",
            )
        if trl is None and "vllm" in have:
            return (
                f"pip install 'trl[vllm]' at the TRL release made for vLLM {have['vllm']} (the log "
                "shows no TRL version: `trl env` names it)" + _V1_NOTE(b),
                "",
            )
        if trl is None and a == "trl":
            return (
                "pip install 'trl[vllm]==<the installed TRL version>': TRL's extra installs the vLLM "
                "that release was made for (`trl env` shows both versions)" + _V1_NOTE(b),
                "",
            )
    # 3. TRL's requirements per release (transformers, accelerate, datasets)
    other = c if a == "trl" else a if c == "trl" else None
    if other in ("transformers", "accelerate", "datasets") and "trl" in pair:
        tv, vo = have.get("trl"), have.get(other)
        spec = _trl_requires(kb, tv, other) if tv else None
        if spec and vo and versions.satisfies(vo, spec) is False:
            floor = _floor(spec)
            return f"pip install '{other}=={floor}' (TRL {tv} requires {other}{spec})", "TRL's requirements"
        if vo:
            newest = _newest_trl_for(kb, other, vo)
            if newest and (tv is None or versions.sort_key(newest) > versions.sort_key(tv)):
                return (
                    f"pip install 'trl=={newest}' (the newest TRL envdoctor knows whose requirements admit "
                    f"{other} {vo}: TRL {tv or 'of the log'} was made for an older {other})",
                    "TRL's requirements",
                )
        if tv and not vo:
            floor = _floor(spec or "")
            return (
                f"the log shows no {other} version: install the {other} TRL {tv} was released with"
                + (
                    f" (it requires {other}{spec}: pip install '{other}=={floor}' is its floor)"
                    if floor
                    else ""
                )
                + f", or pip install 'trl=={_newest_trl_for(kb, other, '99') or tv}'",
                "TRL's requirements",
            )
        if not tv and not vo:
            newest = _newest_trl_for(kb, other, "9999")
            floor = _floor(_trl_requires(kb, newest, other) or "") if newest else None
            return (
                f"the log shows neither the TRL nor the {other} version (`trl env` prints both); "
                f"envdoctor knows each TRL release's {other} floor (rules/knowledge/trl.yaml): keep them "
                f"paired, e.g. pip install 'trl=={newest}' '{other}>={floor}'"
                if newest and floor
                else f"the log shows neither the TRL nor the {other} version (`trl env` prints both)",
                "",
            )
    if a is None and b.exc.name in ("ImportError", "ModuleNotFoundError"):
        return (
            f"update the import for the installed {c}{' ' + vc if vc else ''} release, or pin the {c} "
            "release the code was written for",
            "",
        )
    named = " and ".join(f"{d} {v}" for d, v in ((a, va), (c, vc)) if d and v)
    return (
        f"install {c} at the release {a or 'your code'}{' ' + va if va else ''} was written for, or "
        f"upgrade {a or 'your code'} to a release made for {c}{' ' + vc if vc else ''}"
        f"{' (the log shows ' + named + ')' if named else ' (the log shows neither version)'}; "
        f"envdoctor does not know {a or 'your code'}'s requirements of {c}: `pip show {a or c}` lists them",
        "",
    )


#: exceptions whose shape at a boundary between two packages is drift whatever the pair: a name
#: one imports from the other, a call the other does not take, a method it does not implement
#: (an attribute of an object also has other causes: another kind of object, a setup not done)
_CERTAIN = ("ImportError", "ModuleNotFoundError", "TypeError", "NotImplementedError")


def shape_certain(tb: Traceback, b: Boundary) -> bool:
    """The exception's shape at the boundary is drift whatever the pair: an import, a call's shape
    (``_CERTAIN``) from a known package's frame, a module's or a class's attribute ("type object
    'X' has no attribute": the message names the very object, not an instance that another kind
    of object could have been), an override of a hook the other package calls."""
    module_attr = tb.name == "AttributeError" and (
        _MODULE_ATTR.search(tb.message) is not None or tb.message.startswith("type object '")
    )
    torch_option = b.callee == "torch" and _TORCH_OPTION.match(tb.message.strip()) is not None
    return bool(b.override) or (
        not b.ambiguous
        and (tb.name in _CERTAIN or module_attr or torch_option)
        and (b.caller is not None or tb.name in ("ImportError", "ModuleNotFoundError"))
    )


def shows_pair(m: Any, packages: Sequence[str]) -> str:
    """Where the failing line ``m`` is certain drift between exactly the two ``packages`` (a
    catalogue entry's pairing), the pair as the log shows it (``trl and transformers``): the
    failure itself shows the releases do not fit, whatever versions the log prints; else ""."""
    if len(set(packages)) != 2:
        return ""
    tb = failure(m.context, m.text, m.line_no)
    b = find(tb) if tb is not None else None
    if b is None or {b.caller, b.callee} != set(packages) or not shape_certain(tb, b):  # type: ignore[arg-type]
        return ""
    return f"{b.caller} and {b.callee}"
