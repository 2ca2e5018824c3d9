"""A package of the stack refusing the run's configuration with a check of its own (TRI012).

An exception a stack package raises on purpose from its own guard is that package refusing this
configuration: the same configuration fails on every run, so it is an error. Whether it fails
whatever the releases is read from the raise-site index (``raisesites.release_bound``): a check
every copy of which later releases dropped (its function gone, no look-alike naming the same
settings left) or that a release added to a function it had is bound to those releases: the
finding says which refuse and the release without it, as a fix beside the setting's. A value ≤ 0
of a count the framework derives from the inputs (``DERIVED``: max_tokens from the length budget
less the prompt, the steps per epoch from the dataset and the batch) that the log's config and
command lines do not set to that value is the inputs' doing: the fix is on them, not the option.
Shapes, read from the traceback model (``traceback.Traceback``):

1. **A guard's refusal**: a ``ValueError`` / ``NotImplementedError`` / ``AssertionError`` /
   ``RuntimeError`` whose message refuses something ("… is not supported", "… must be …",
   "cannot be used together with …", "Please set …") and that was raised in a stack package's own
   frame (its source line a ``raise`` or ``assert``), or, with no frame shown, whose message names
   the package (``Unsloth: …``, ``[swift] …``, "… by the V1 Engine"). A message about resources
   (out of memory, a timeout, NCCL, a socket) or about the data is no refusal of the configuration.
2. **vLLM's config validation**: pydantic's ``N validation error(s) for SchedulerConfig`` (a vLLM
   config class, ``rules/knowledge/vllm.yaml`` ``engine_options``) with the field and its
   ``Value error, …`` lines: the field, the value and vLLM's own words, and where the run sets
   that field (the engine argument, TRL's GRPOConfig key or ``trl vllm-serve`` flag, verl's or
   ms-swift's option where the log shows that stack).

3. **A reserved environment variable**: a guard refusing an environment variable that its package
   keeps for its own use ("The env var, __RAY_WORKER_PROCESS_SETUP_HOOK_ENV_VAR, is not permitted
   because it is reserved for the internal use."): the package is the variable's owner (its name's
   prefix), the environment handed to it (a runtime_env's env_vars, variables a worker inherited and
   passes on) is what it refused, and the process where it was refused is named from the log's
   prefix or frames.

The finding names the package, the options the message names and the fix the message gives
(else: change the option it names). A message continued on the lines after the exception's line
(pydantic's details, a wrapped sentence) is read from the log's head.
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Any

from envdoctor.findings import Finding, Severity
from envdoctor.triage.draft import Draft, Log, finding
from envdoctor.triage.interface import Match
from envdoctor.triage.pydantic_blocks import blocks
from envdoctor.triage.raisesites import Bound, locate_tb, release_bound, standing
from envdoctor.triage.raisesites import message as continued
from envdoctor.triage.settings_known import engine_options as _engine_options
from envdoctor.triage.settings_known import setters as _setters
from envdoctor.triage.settings_known import setting
from envdoctor.triage.traceback import PACKAGES, Traceback

RULE = "TRI012"
_TYPES = ("ValueError", "NotImplementedError", "AssertionError", "RuntimeError")
#: packages whose own guards refuse a configuration (torch's and the data libraries' exceptions are
#: about tensors and data, not the run's options)
_NOT_CONFIG_PACKAGES = {"torch", "datasets", "xformers", "flash-attn", "flashinfer-python", "lm-eval"}
#: how a message names the package that raised it, at its start or as the subject of the refusal
_NAMES = {
    "unsloth": r"Unsloth(?:[ _]?Zoo)?",
    "vllm": r"vLLM|VLLM|V1 [Ee]ngine",
    "ms-swift": r"\[?swift\]?|ms-swift",
    "verl": r"verl",
    "openrlhf": r"OpenRLHF",
    "trl": r"TRL|GRPOTrainer|GRPOConfig",
    "deepspeed": r"DeepSpeed",
    "peft": r"PEFT",
    "accelerate": r"Accelerate",
    "liger-kernel": r"Liger",
}
_ALTS = list(_NAMES.values())
_PREFIX = re.compile(r"^\W{0,3}(?:" + "|".join(f"(?P<p{i}>{v})" for i, v in enumerate(_ALTS)) + r")\s*[:\]-]")
_SUBJECT = re.compile(
    r"(?:\b(?:by|in|with|for) (?:the )?(?:"
    + "|".join(f"(?P<s{i}>{v})" for i, v in enumerate(_ALTS))
    + r")\b)|(?:^|\. )(?:"
    + "|".join(f"(?P<t{i}>{v})" for i, v in enumerate(_ALTS))
    + r") (?:currently |yet )?(?:does not|doesn't|only|cannot|can't|requires)"
)
_REFUSING = re.compile(
    r"(?i)\bnot (?:yet |currently )?supported|\bunsupported\b|"
    r"\b(?:does not|doesn't|do not|cannot|can ?not|can't) (?:currently |yet )?"
    r"(?:support|be used|be combined|be set|be enabled|work (?:with|on|in|for)|run (?:on|with))|"
    r"\bonly (?:supports?|supported|available|compatible|works?)\b|\bis only\b|"
    r"\bmust (?:be|not|have|set|match|equal)\b|\bshould be\b|\b(?:needs?|has) to be\b|"
    r"\bplease (?:set|use|specify|pass|provide|make sure|disable|enable|reduce|increase|lower)\b|"
    r"\bnot compatible\b|\bincompatible\b|\bmutually exclusive\b|\bis not (?:allowed|valid|a valid)\b|"
    r"\binvalid (?:value|choice|option|argument|config\w*)\b|\bexpected (?:one of|either)\b|"
    r"\bnot implemented\b|\bcannot be (?:used|combined|set|enabled)\b|\brequires?\b.{0,80}\bto be\b|"
    r"\bis not equal to\b|"
    # a bound a check holds a value to ("LoRA rank 32 is greater than max_lora_rank 16")
    r"\b(?:is|are) (?:greater|larger|bigger|higher|more) than (?:the )?(?:max|maximum)\w*"
)
#: a value over the bound a setting sets: "<what> N is greater than <setting> M"
_OVER_BOUND = re.compile(
    r"(?P<what>[A-Za-z][\w ]{0,60}?) \(?(?P<n>\d{1,9})\)? (?:is|are) "
    r"(?:greater|larger|bigger|higher|more) than "
    r"(?:the )?`?(?P<bound>[a-z][a-z0-9]*(?:_[a-z0-9]+)+)`? \(?(?P<m>\d{1,9})\)?"
)
#: resources, the run's data and the machine: a guard about them refuses no option
_NOT_CONFIG = re.compile(
    r"(?i)out of memory|\bOOM\b|(?:free|enough|insufficient|available) (?:GPU )?memory|KV cache|cache blocks|"
    r"timed? ?out|\bNCCL\b|CUDA error|illegal memory|socket|connection|address already|"
    r"\bdataset\b|\bcolumns?\b|input_ids|\bprompt\b|\bimages? (?:items?|tokens?|placeholders?)|"
    r"\bcheckpoint(?:s|ing)?\b|state_dict|no such file|not found\b|\bnan\b|"
    # a model's tensors ("model.embed_tokens.weight is unsupported LoRA weight") and a function's
    # keyword argument ("Optional kwarg `mesh_dim` needs to be specified"): what the calling code
    # handed over, not an option of the run
    r"\w\.weight\b|\bLoRA weights?\b|\bkwargs?\b"
)
#: a message that demands an option's value in its own words ("… needs `reward_model_type=full`",
#: "requires --use_vllm=True"): the setting and its value are the refusal and its fix
_DEMAND = re.compile(
    r"\b(?:needs?|requires?|only (?:works|runs) with|please set|you must set|must be run with) "
    r"(?P<q>[`'\"]?)(?P<kv>-{0,2}[A-Za-z_][\w.]{1,60} ?= ?[\w.\-]{1,60})(?P=q)"
)
_OPTION_EQ = re.compile(r"`?(?P<k>[A-Za-z_][\w.]{1,60})`?\s?=\s?`?(?P<v>[\w.\-'\"]{1,60})`?")
_TICKED = re.compile(r"[`'\"](?P<k>[A-Za-z_][\w.\-]{1,60})[`'\"]")
#: a check that demands an object of a class: "model must be a PreTrainedModelWrapper, got <class
#: '…CodeGenForCausalLM'>" (TRL's PPOTrainer): the class it takes is its remedy
_TYPE_DEMAND = re.compile(
    r"\b(?P<what>[a-z_][\w.]{0,40})`? must be (?:an? |of type |an instance of )?`?(?P<cls>[A-Z]\w{1,80})`?,? "
    r"(?:but )?got (?:<class '|an? |type )?(?P<got>[\w.]{1,200})"
)
_SUPPORTED_TYPES = re.compile(
    r"(?i)supported (?:architectures|classes|types|models) (?:are|is):? (?P<list>[^\n]{1,600})"
)
#: a quoted word the message itself calls an argument, option or parameter ("not compatible with the
#: `packing` argument"): an option though it has no underscore
_CALLED_OPTION = re.compile(
    r"\bthe [`'\"](?P<k>[a-z][a-z0-9]{2,40})[`'\"] (?:argument|option|parameter|flag|setting|field|kwarg)\b"
)
_SNAKE = re.compile(r"\b(?P<k>--?[a-z][a-z0-9-]{2,60}|[a-z][a-z0-9]*(?:_[a-z0-9]+)+)\b")
_FIX = re.compile(
    r"(?i)^(?:please(?! (?:understand|note|be patient|bear with|report|open an issue|contact))|set|use|"
    r"try|consider|you (?:can|should|must|may|need)|either|to (?:fix|use|enable)|"
    r"increase|decrease|reduce|lower|raise|disable|enable|remove|pass|specify|install|upgrade|downgrade)\b"
    r"|\binstead\b"
)
_VALIDATION = re.compile(r"\b(?P<n>\d{1,3}) validation errors? for (?P<cls>[A-Za-z_]\w{0,80})")
#: the functions where a package checks its configuration (a config's ``__post_init__``, a
#: trainer's ``__init__``, ``validate_*``): a message placed by the raise-site index alone is a
#: refusal of the configuration only when raised there, not in a data structure's own assertion
_CONFIG_CHECK = re.compile(r"(?i)__post_init__|__init__|valid|check|config|_args|setup|verify")
#: how findings name a package
_DISPLAY = {
    "unsloth": "Unsloth",
    "unsloth-zoo": "unsloth_zoo",
    "vllm": "vLLM",
    "trl": "TRL",
    "deepspeed": "DeepSpeed",
    "peft": "PEFT",
    "accelerate": "Accelerate",
    "openrlhf": "OpenRLHF",
    "transformers": "transformers",
}
#: vLLM's modules that check the engine's configuration (a field there is an engine argument)
_ENGINE_CONFIG = ("config", "engine/arg_utils.py")
MAX_MORE = 8  # lines after the exception's line read as the rest of its message


def _more(log: Log, line_no: int) -> list[str]:
    """The lines after the exception's line (the log's head) that continue its message: up to a
    blank line, a frame, another exception, a logger's or another program's line
    (``raisesites.continuation``)."""
    from envdoctor.triage.raisesites import continuation

    return continuation(log, line_no, MAX_MORE)


def _package_named(message: str) -> str | None:
    """The stack package a message names as the one refusing: its prefix (``Unsloth: …``) or the
    refusal's subject ("… is not supported by the V1 Engine", "vLLM does not support …")."""
    names = list(_NAMES)
    m = _PREFIX.match(message)
    if m is not None:
        return next(names[int(k[1:])] for k, v in m.groupdict().items() if v)
    m = _SUBJECT.search(message)
    if m is not None:
        return next(names[int(k[1:])] for k, v in m.groupdict().items() if v)
    return None


def _options(text: str) -> list[str]:
    """The options a message names: ``key=value`` pairs, quoted names, snake_case identifiers and
    flags (at most four, in order)."""
    found: list[str] = []
    for m in _OPTION_EQ.finditer(text):
        if text[m.end() : m.end() + 1] == "(":
            continue  # ``accelerator = Accelerator()``: code that builds an object, not an option's value
        if "_" in m.group("k") or m.group("k").islower():
            found.append(f"{m.group('k')}={m.group('v').rstrip('.')}")
    taken = {f.split("=", 1)[0] for f in found}
    for m in _CALLED_OPTION.finditer(text):  # "the `packing` argument": one word, named as an option
        if m.group("k") not in taken:
            found.append(m.group("k"))
            taken.add(m.group("k"))
    for rx in (_TICKED, _SNAKE):
        for m in rx.finditer(text):
            k = m.group("k")
            before, after = text[m.start() - 1 : m.start()], text[m.end() : m.end() + 1]
            if rx is _SNAKE and (
                k.startswith("-")
                and (before.isalnum() or before in "/._-")  # "gpt-oss-20b": a name's piece
                or before in ("/", ".")
                and after in ("/", ".", ":")  # "sweb.eval.x86_64.*": a path's piece
            ):
                continue
            if k not in taken and ("_" in k or k.startswith("-")) and not k.startswith(("http", "www")):
                found.append(k)
                taken.add(k)
    return list(dict.fromkeys(found))[:4]


#: what a refusal refuses, in its own words where it names no option: "does not work on multi GPU
#: setups", "not supported with <Y>", "<Y> is not supported", "only supports <Y>"
#: where the words of what it refuses end: a sentence's stop (not a version's dot, "2.0"), a
#: comma that does not go on with a list of numbers ("versions 2.0, 2.5"), a dash, the end
_STOP = r"(?=\.(?!\d)|,(?! ?\d)|[;:!()?]| [-–] |$)"
_REFUSED = re.compile(
    r"(?i)\b(?:does not|doesn't|do not|cannot|can ?not|can't) (?:currently |yet )?"
    rf"(?:work|run|be used|be combined) (?:on|with|in|for|together with) (?P<a>[^;:!()?\n]{{3,80}}?){_STOP}"
    rf"|\b(?:does not|doesn't|do not) (?:currently |yet )?support (?P<b>[^;:!()?\n]{{3,80}}?){_STOP}"
    rf"|\bnot (?:yet |currently )?supported (?:on|with|for|in|when|by) (?P<c>[^;:!()?\n]{{3,80}}?){_STOP}"
    r"|\bonly (?:supports?|works? (?:on|with)|supported (?:on|with|for)|available (?:on|with|for)) "
    rf"(?P<d>[^;:!()?\n]{{3,80}}?){_STOP}"
    r"|(?:^|[.!;] )(?P<e>[A-Za-z][^;:!()?\n]{2,80}?) (?:is|are) not (?:yet |currently )?supported\b"
)


#: a refusal that states what the release supports, not a rule of the configuration
_SUPPORT = re.compile(
    r"(?i)not (?:yet |currently )?supported|unsupported|only supported|only supports"
    r"|\bcurrently\b.{0,60}\bsupport"
)


#: a refusal that speaks of the present release only: a later one may add what it refuses
_FOR_NOW = re.compile(r"(?i)\b(?:yet|currently|for now|at the moment|at present|so far)\b")
#: the values a refusal lists as supported ("Supported dtypes: [torch.float16]")
_SUPPORTED_LIST = re.compile(r"(?i)\bsupported [\w ]{1,30}?:\s*\[(?P<list>[^\]\n]{1,200})\]")


#: a fix that is code to write: an object built by a call (``accelerator = Accelerator()``,
#: ``call Trainer()``), not an option's value
_CODE_FIX = re.compile(r"\b\w{1,40} ?= ?[A-Z]\w{0,60}\(|\b[A-Z]\w{0,60}\(\)")


def _refused(text: str) -> str:
    """What the message refuses in its own words (``_REFUSED``), "" where it names nothing."""
    m = _REFUSED.search(text)
    if m is None:
        return ""
    return next((v.strip() for v in m.groups() if v and v.strip()), "")


def _own_fix(text: str) -> str:
    """The fix the message itself gives: its first sentence (or clause after a comma: "…, please
    use a model that has one") that says what to do."""
    for sentence in re.split(r"(?<=[.!;])\s+|\n|,\s+(?=please\b)", text, flags=re.IGNORECASE):
        s = sentence.strip().strip("`*")
        if len(s) > 8 and _FIX.search(s):
            return s[:400]
    return ""


def _raised_in_guard(tb: Traceback) -> str | None:
    """The stack package whose own code raised ``tb`` (its last frame, the source line a ``raise``
    or an ``assert`` where it is shown), or None."""
    if not tb.frames:
        return None
    last = tb.frames[-1]
    if last.package is None or last.package in _NOT_CONFIG_PACKAGES:
        return None
    if last.package not in set(PACKAGES.values()):
        return None
    if last.code and not last.code.startswith(("raise", "assert")):
        return None  # raised below the shown frame (a call, a C extension): not this guard
    return last.package


#: a check's own words: "key must be (either|one of) <allowed>, got <value>"
CONTRADICTION = re.compile(
    r"(?P<key>\w{1,80})`? must be (?:either |one of )?(?P<allowed>[^\n]{1,300}?),? (?:but )?got "
    r"(?P<q>['\"`]?)(?P<got>[\w.-]{1,80})(?P=q)"
)


def _contradicts_itself(text: str) -> bool:
    """A check that refuses a value it lists as allowed (``structural.self_contradiction``): a
    bug of the release, not the configuration."""
    m = CONTRADICTION.search(text)
    return m is not None and m.group("got") in re.findall(r"['\"`]([\w.-]{1,80})['\"`]", m.group("allowed"))


#: an environment variable a guard refuses because its package keeps it for itself
_RESERVED_ENV = re.compile(
    r"\b(?:env(?:ironment)?[ _]?var(?:iable)?s?|variable)\b[ ,:'\"`]{0,4}(?P<var>_{0,2}[A-Z][A-Z0-9]{1,30}"
    r"(?:_[A-Z0-9]{1,30}){1,12})\b[ ,'\"`]{0,4}(?:is|are)? ?(?:not permitted|not allowed|reserved)"
    r"[^.\n]{0,80}?\breserved\b|\b(?P<var2>_{0,2}[A-Z][A-Z0-9]{1,30}(?:_[A-Z0-9]{1,30}){1,12})\b[ ,'\"`]{0,4}"
    r"is reserved for (?:the )?internal use"
)
#: the owner of an environment variable, by its name's prefix (what the finding names)
_ENV_OWNERS = (
    ("RAY_", "Ray"),
    ("VLLM_", "vLLM"),
    ("NCCL_", "NCCL"),
    ("TORCH_", "torch"),
    ("PYTORCH_", "torch"),
    ("ACCELERATE_", "Accelerate"),
    ("HF_", "Hugging Face Hub"),
    ("CUDA_", "CUDA"),
)
#: what sets a reserved variable where the package does so from an option of its own (the variable
#: the user never set: the option is what to change). Ray's setup-hook export:
#: https://github.com/ray-project/ray/blob/master/python/ray/_private/runtime_env/setup_hook.py
_SET_BY = {
    "__RAY_WORKER_PROCESS_SETUP_HOOK_ENV_VAR": (
        "Ray sets it itself in every worker's environment from a worker_process_setup_hook "
        "(ray.init(runtime_env={'worker_process_setup_hook': …}), in your code or the RL stack's); "
        "a process started by Ray inherits it, and a Ray job it starts in turn (vLLM's Ray executor, "
        "distributed_executor_backend='ray') hands it back to Ray in its env_vars",
        "remove the worker_process_setup_hook from ray.init's runtime_env (or use the RL stack's "
        "release without it), or keep the variable out of the env_vars passed on to Ray; where the "
        "engine fits one node, vLLM's multiprocessing executor (distributed_executor_backend='mp') "
        "starts no Ray job",
    ),
}


def reserved_env(tb: Traceback, m: Match, log: Log) -> Draft | None:
    """A guard refusing an environment variable its package reserves (module docstring, 3)."""
    if tb.name not in _TYPES or "reserved" not in tb.message:
        return None
    found = _RESERVED_ENV.search(tb.message[:2000])
    if found is None:
        return None
    var = found.group("var") or found.group("var2")
    bare = var.lstrip("_")
    owner = next((name for prefix, name in _ENV_OWNERS if bare.startswith(prefix)), None)
    raised = _raised_in_guard(tb)
    if owner is None and raised is None:
        return None  # a variable of no package envdoctor can name: the first-exception answer
    name = owner or _DISPLAY.get(str(raised), str(raised))
    from envdoctor.triage.missing import _worker

    worker = _worker(tb, m.context, m.text)
    where = f" in {worker}" if worker else ""
    what = (
        f"{name} refused the environment handed to it{where}: {var} is an environment variable {name} "
        f"reserves for its own use, and the environment it was given (a runtime_env's env_vars, or "
        f"variables a worker inherited and passed on) already held it: “{tb.message.strip()[:400]}”"
    )
    why, fix = _SET_BY.get(
        var,
        (
            "",
            f"do not set {var} in the environment or runtime_env handed to {name}: {name} sets it "
            "itself (unset it in the launch environment, or drop it from the env_vars your code or "
            "the RL stack passes on)",
        ),
    )
    if why:
        what += f" — {why}"
    d = finding(RULE, [m], log, what, fix, package=name, variable=var, worker=worker or None)
    f = d.finding  # the same environment is refused on every start: an error
    d.finding = Finding(f.rule, Severity.ERROR, f.message, f.fix, f.evidence)
    return d


def _in_copy(tb: Traceback) -> bool:
    """``tb`` was raised in Unsloth's generated copy of a TRL trainer (``raisesites._COPIED``),
    no package's frame shown: TRL's own check, as frameless as a cut log for placing it."""
    from envdoctor.triage.raisesites import _COPIED

    return all(f.package is None for f in tb.frames) and bool(
        _COPIED.search(tb.frames[-1].path.replace("\\", "/"))
    )


def _placed_with_fix(tb: Traceback, log: Log, text: str) -> bool:
    """A message in no refusal's words that the raise-site index places in a package's config check
    (``_CONFIG_CHECK``: a trainer's ``__init__``, a config's ``__post_init__``) and that says what to
    set, naming an option ("When `padding_free=True` without packing, `max_length` is not enforced.
    Either enable packing (e.g., `packing=True, …`), …, or set `max_length=None`."): the check
    refuses the configuration it was handed, its remedy is the fix. Frameless logs only, or a
    frame in Unsloth's copy of the trainer (``_in_copy``): a package's frame shows the guard
    itself (``_raised_in_guard``)."""
    if tb.frames and not _in_copy(tb) or not _own_fix(text) or not _options(text):
        return False  # a package's frame shows the guard itself (``_raised_in_guard``)
    from envdoctor.triage.raisesites import locate_tb

    return _guard_placed(locate_tb(tb, log), tb, text)


def _guard_placed(loc: Any, tb: Traceback, text: str) -> bool:
    """The raise sites the index placed a frameless message in are a guard of the configuration:
    a package's config check (``_CONFIG_CHECK``), or a ``NotImplementedError`` — a refusal by its
    type, wherever raised — whose message gives its own fix naming an option (Unsloth's "Backwards
    pass using MXFP4 is still under construction! Instead, use `unsloth/gpt-oss-20b-BF16` … Or, use
    `load_in_4bit = True`")."""
    if loc is None:
        return False
    if all(_CONFIG_CHECK.search(x.function) for x in loc.sites):
        return True
    if _as_framed(loc, tb, text):
        return True
    return tb.name == "NotImplementedError" and bool(_own_fix(text)) and bool(_options(text))


def _as_framed(loc: Any, tb: Traceback, text: str) -> bool:
    """A log that shows no frame, whose whole message the index places in one stack package's
    ``raise`` of the exception's own class: read as the frame that raises it would be
    (``_raised_in_guard``: the answer a traceback with that frame gets, with its severity). A
    ``raise ValueError`` of a refusal that names a setting ("DeepSpeed Zero-3 is not compatible with
    `low_cpu_mem_usage=True` or with passing a `device_map`", transformers' from_pretrained); an
    ``assert`` (a data structure's invariant: "must have identical batch size") is not, nor a
    ``NotImplementedError`` (a path not written for the data's value: "Reward function is not
    implemented for data_source=''"; ``_guard_placed`` asks it for a fix of its own), nor a
    value its template formats that is no setting envdoctor knows (``bounds.setting``)."""
    if not (
        not tb.frames
        and tb.name == "ValueError"
        and loc.complete
        and loc.package in set(PACKAGES.values())
        and loc.package not in _NOT_CONFIG_PACKAGES
        and all(x.exc == tb.name for x in loc.sites)
    ):
        return False
    named = [o.split("=", 1)[0] for o in _options(text)]
    # a name the raise formats in ("shard_dim=0 is not a valid data dimension") is a value the
    # function was handed, a setting only where envdoctor knows it as one; one its template
    # spells out is what the check refuses
    formatted = {n for x in loc.sites for n in x.names}
    return bool(named) and all(n not in formatted or setting(n) is not None for n in named)


def package_refusal(tb: Traceback, m: Match, log: Log) -> Draft | None:
    """A stack package's own guard refused the configuration (module docstring, 1)."""
    if tb.name not in _TYPES or not tb.message.strip():
        return None
    reserved = reserved_env(tb, m, log)
    if reserved is not None:
        return reserved
    # a message the line breaks mid-sentence goes on on the next lines
    cut = not tb.message.rstrip().endswith((".", "!", "?", ")", "]", "}", "'", '"', "`"))
    more = _more(log, tb.line_no or m.line_no) if cut else []
    # no frame, or the last one in Unsloth's generated copy of a TRL trainer (no package's frame)
    unowned = not tb.frames or _in_copy(tb)
    if not more and unowned:
        # a whole sentence on the exception's line that a raise's template goes on after (TRL's
        # "When `padding_free=True` without packing, …" and its remedy on the next two lines)
        whole = continued(tb, log)
        more = [whole[len(tb.message.strip()) :].strip()] if whole != tb.message else []
    from envdoctor.triage.scanner import squeeze  # a wrap turned to spaces or a newline: as it reads

    text = squeeze(" ".join([tb.message.strip(), *(x.strip() for x in more)]))[:2000]
    demand = _DEMAND.search(text)
    refusing = bool(_REFUSING.search(text) or demand) or _placed_with_fix(tb, log, text)
    if not refusing or _NOT_CONFIG.search(text) or _contradicts_itself(text):
        return None
    from envdoctor.triage.hostenv import _NONE_SEEN

    if _NONE_SEEN.search(text):
        return None  # no device found: the environment the process saw (hostenv.no_device_seen)
    package = _raised_in_guard(tb)
    where = ""
    formatted: set[str] = set()  # the names of the values the placed raise formats
    if package is not None:
        last = tb.frames[-1]
        where = f" in {last.at}{' in ' + last.function if last.function else ''}"
        caller = next((f for f in reversed(tb.frames) if f.package != package), None)
        if caller is not None:  # the package (or the user's code) that handed it the configuration
            who = _DISPLAY.get(caller.package or "", caller.package) or "your code"
            where += f", called from {who} ({caller.at})"
    elif unowned or all(f.package is None for f in tb.frames):
        package = _package_named(tb.message)  # the message's own prefix or subject names it
        if package is None:  # the raise that prints it (rules/knowledge/raises/)
            from envdoctor.triage.raisesites import locate_tb

            loc = locate_tb(tb, log)
            if loc is not None and _guard_placed(loc, tb, text):
                package = loc.package
                formatted = {x for site in loc.sites for x in site.names}
                new = f", a check that came with {loc.package} {loc.new_in}" if loc.new_in else ""
                where = f" in {loc.places()} ({loc.package} {loc.span()}; placed by its message{new})"
    value = refused_value(text)
    drv = derived(value[0], value[1], log, tb.line_no or m.line_no) if value and package else None
    if drv is not None and value is not None:
        return _derived_draft(tb, m, log, package or "", where, text, value, drv)
    bound = release_bound(tb, log) if package else None
    # the release before a support gate came is no fix: the gate names what the releases support,
    # and the earlier ones without it support no more (Unsloth's fast-inference list of models)
    offer = bound is not None and bool(bound.first_without or not _SUPPORT.search(text))
    if bound is not None and not tb.frames:  # the check named once for its copies
        where = f" in {bound.check} (placed by its message)"
    options = _options(text)
    said_fix = _own_fix(text)
    refused = "" if options else _refused(text)  # what it refuses, in its words: the setting named
    own = said_fix or (f"set {demand.group('kv').replace(' ', '')}" if demand else "")
    over = _OVER_BOUND.search(text)
    if not own and over is not None and int(over.group("n")) > int(over.group("m")):
        own = (
            f"set {over.group('bound')} to {over.group('n')} or more (or bring {over.group('what').strip()} "
            f"down to {over.group('m')} or less)"
        )
    if own and not options and _CODE_FIX.search(own) and not any(f.package is None for f in tb.frames):
        # its fix is code to write (``accelerator = Accelerator()`` before any use), no setting of
        # the run: a guard of a program's order, and no frame shows the user's code in that order
        # (a library called it: the library's order or release is the question, not the config)
        return None
    typed = _TYPE_DEMAND.search(text) if not own else None
    if typed is not None:  # the class the check takes, in its own words: that is its remedy
        supported = _SUPPORTED_TYPES.search(text)
        shown = (
            re.findall(r"(?:<class ')?(?:[\w]+\.)*(\w+)'?>?", supported.group("list")) if supported else []
        )
        listed = ", ".join(dict.fromkeys(x for x in shown if x[:1].isupper())) if shown else ""
        own = (
            f"pass {typed.group('what')} as a {typed.group('cls')}"
            + (f" ({listed})" if listed else "")
            + f", not a {typed.group('got').rsplit('.', 1)[-1]}"
        )
    if package is None:
        # no frame and no name: a refusal whose own fix changes an option it names is still the
        # configuration's (``expandable_segments:True`` … "Consider using expandable_segments:False")
        if tb.frames or not own or not any(o.split("=", 1)[0] in own for o in options):
            return None
        package = ""
    name = _DISPLAY.get(package, package)
    named = ", ".join(options)
    what = (
        f"{name} refused the run's configuration with a check of its own{where}: “{text[:600]}”"
        if package
        else "A check refused the run's configuration (the log shows no frame to say which package's): "
        f"“{text[:600]}”"
    )
    if options:
        what += f" (what it names: {named})"
    if cut and not more and log.lines and m.line_no >= log.lines:
        what += " (the log ends inside the message: paste the whole exception line, and the lines after it)"
    named = named or refused
    change = f"change what it refuses ({named})" if named else "change the setting the message names"
    if typed is not None:
        fix = f"{own}: the class the check takes, in its words (where your code or a wrapper builds it)"
    elif own and not said_fix:  # the value it demands: that is the fix
        fix = f"{own}, the value the check demands (on the command line or in the run's config file)"
    elif own:
        fix = f"the message's own fix: {own} (or {change})"
    elif named and package and _SUPPORT.search(text):
        # what the installed release supports ("Currently, MiniCPMV only supports versions 2.0, …"):
        # a later release may add it, so no claim that every release refuses it
        only = re.search(r"(?i)\bonly (?:supports?|supported|works?|available)\b", text)
        keep = f"keep to what it supports ({named})" if only and not options else change
        values = _SUPPORTED_LIST.search(text)
        if values is not None and not (only and not options):
            keep += f" to one it supports ({values.group('list').strip()})"
        # a list of what "only" is supported, or a refusal that says "yet" / "currently", expects
        # a later release to add to it; one stated as a fact (X is not supported for Y) whose check,
        # in the same words, is in the newest release indexed: another release is no lead
        newest = "" if only or _FOR_NOW.search(text) else standing(tb, log, package)
        fix = (
            f"{keep}: {name} {newest}, the newest release envdoctor indexes, makes the same check in "
            "the same words, so another release helps only where its release notes say it adds this"
            if newest
            else f"the installed {name} release does not support what this run asks for: install a "
            f"release of {name} that does (its release notes say which), or {keep}"
        )
    elif named and bound is not None and bound.first_without:  # a check the later releases dropped
        fix = f"{bound.fix()}; or {change} {_in_range(bound)}"
    elif named and bound is not None and offer:
        fix = f"{change} {_in_range(bound)}, or {bound.fix()}"
    elif named:
        fix = f"{change}: {_every_release(tb, log, name)}"
    else:  # it names no setting and says no fix: what it refused is not said, nor that no release runs it
        what += " (it names no setting the run could change)"
        fix = (
            f"read the check that raised it ({where.removeprefix(' in ').strip() or 'its raise'}): its "
            "condition says what it tests, a setting of the run or the environment it found; where that is a "
            "setting, change it"
        )
    if bound is not None:  # a refusal of some releases only: which, and the release that accepts it
        what += f" — {bound.said()}"
        if offer and not (named and not own and not _SUPPORT.search(text)):
            fix += f"; or {bound.fix()}"
    engine = (
        package == "vllm" and tb.frames[-1].module_path.startswith(_ENGINE_CONFIG) if tb.frames else False
    )
    # a field is named with its value ("max_model_len (4096)", "quantization=gptq"), a value is not
    named_ = [o.split("=", 1)[0] for o in options if not o.startswith("-")]
    fields = [x for x in named_ if re.search(rf"\b{re.escape(x)}`?\s?[(=]", text)][:2] if engine else []
    if not fields and package == "vllm" and formatted:  # placed by its message: the values its raise formats
        fields = [x for x in named_ if x in formatted][:2]
    if fields:  # vLLM's engine configuration: where the run sets the fields it names
        fix += "; set by " + "; ".join(w for x in fields for w in _setters(x, log, m.context))
    d = finding(RULE, [m], log, what, fix, package=package or None, options=options or None)
    f = d.finding  # a setting it names is the cause, whatever the releases: an error; none named: likely
    severity = Severity.ERROR if named or own else Severity.WARNING
    d.finding = Finding(f.rule, severity, f.message, f.fix, f.evidence)
    return d


# -- vLLM's config validation ---------------------------------------------------------------------


def vllm_validation(tb: Traceback, m: Match, log: Log) -> Draft | None:
    """vLLM's pydantic validation refused the engine's configuration (module docstring, 2)."""
    if tb.name != "ValidationError":
        return None
    head = _VALIDATION.search(tb.message)
    if head is None:
        return None
    classes = set(_engine_options().get("config_classes", []))
    in_vllm = any(f.package == "vllm" for f in tb.frames)
    if head.group("cls") not in classes and not in_vllm:
        return None  # another package's pydantic model
    more = _more(log, tb.line_no or m.line_no)
    field, said, value = "", "", ""
    found = blocks(more)  # pydantic's block after the header: field, words, [type=…, input_value=…]
    if found and found[0].errors:
        err = found[0].errors[0]
        field, said = err.field, err.msg
        value = "" if err.value.startswith("ArgsKwargs") else err.value
    else:  # words without pydantic's [type=…] tail (a paste that dropped it)
        for line in more:
            text = line.strip()
            if re.fullmatch(r"[A-Za-z_][\w.]{0,80}", text):
                field = text.rsplit(".", 1)[-1]
            elif text and not text.startswith("For further information"):
                said = text.removeprefix("Value error, ").strip()
                break
    if not said:
        said = "(the log does not show vLLM's reason: paste the lines after the exception's line)"
    options = _options(said)
    if not field:
        field = next((o.split("=", 1)[0] for o in options if not o.startswith("-")), "")
    shown = re.search(rf"\b{re.escape(field)}\s?[(=]\s?(?P<v>[\w.\-'\"]{{1,60}})", said) if field else None
    value = value or (shown.group("v") if shown else "")
    what = f"vLLM refused the engine's configuration: {head.group(0)}"
    if field:
        what += f", field {field}" + (f" = {value}" if value else "")
    what += f": “{said[:500]}”"
    own = _own_fix(said)
    fields = list(dict.fromkeys([field, *(o.split("=", 1)[0] for o in options if not o.startswith("-"))]))
    fields = [x for x in fields if x][:2]
    if fields:
        where = "; ".join(w for x in fields for w in _setters(x, log, m.context))
        change = " or ".join(fields)
        fix = (f"the message's own fix: {own}; " if own else f"change {change} to values vLLM accepts; ") + (
            f"set by {where}"
        )
    else:
        fix = f"the message's own fix: {own}" if own else "change the engine option the message names"
    d = finding(
        RULE, [m], log, what, fix, package="vllm", field=field or None, config_class=head.group("cls")
    )
    f = d.finding  # vLLM refuses this configuration on every start: an error
    d.finding = Finding(f.rule, Severity.ERROR, f.message, f.fix, f.evidence)
    return d


def _in_range(bound: Bound) -> str:
    """Which releases of ``bound``'s range refuse it: every one, or (the check copied into several
    classes, the log not showing whose copy raised it) those whose copy is the model's class's; a
    release of the range whose class dropped its copy accepts it (Llama's rope check before 4.45)."""
    if bound.not_indexed:
        return f"(the older releases whose {bound.not_indexed} class has the check make it)"
    if bound.unsure_copy:
        return (
            "(the releases in that range where your model's class still has its copy make it; one "
            "where that class no longer has it accepts it, as that class's release notes say)"
        )
    return "(every release in that range has this check)"


# -- a refused value the framework derived from the data --------------------------------------------

#: the values a framework derives from the run's inputs rather than reads from an option: the
#: option's name, what it is derived from, and the fix on those inputs (a value ≤ 0 there is the
#: inputs' doing: a prompt longer than the length budget, a dataset smaller than one batch)
DERIVED = (
    (
        re.compile(
            r"max_(?:new_)?tokens|max_completion_(?:length|tokens)|max_gen(?:eration)?_(?:len|length|tokens)|"
            r"response_length|num_tokens_to_generate|remaining_tokens"
        ),
        "the room left for the completion: the length budget (vLLM's max_model_len, the trainer's "
        "max_length) less the prompt's tokens, so a prompt as long as the budget or longer leaves "
        "nothing or less than nothing",
        "raise the length budget (max_model_len / max_length) to hold the longest prompt plus the "
        "completion, or drop or truncate the prompts longer than it before generation (max_prompt_length, "
        "a length filter on the dataset)",
    ),
    (
        re.compile(
            r"(?:\w+_)?steps_per_epoch|num_(?:training_|update_|train_)?steps|total_(?:training_)?steps|"
            r"num_batches|len_dataloader|num_update_steps_per_epoch|total_steps"
        ),
        "the number of steps: the dataset's size divided by the batch size (an integer division, so a "
        "dataset smaller than one batch gives 0)",
        "check the training dataset's row count (the file the run reads, its split and filters) and give "
        "it at least one batch of samples, or lower the batch size (train_batch_size) to at most the "
        "dataset's size",
    ),
)
#: "x must be at least 1, got -3173", "x must be > 0 (got 0)", "x=-5 must be positive"
_VALUE_REFUSED = re.compile(
    r"(?<![\w.])`?(?P<k>[a-z][a-z0-9]*(?:_[a-z0-9]+)+)`?(?:\s?[=:]\s?(?P<v0>-?\d{1,12})\b|\s\((?P<v1>-?\d{1,12})\))?"
    r"[^.\n]{0,80}?\b(?:must|should|has to|needs to|cannot|can't)\b[^\n]{0,80}?"
    r"(?:\bgot:?\s?|\bbut (?:is|was|got)\s|\(got\s)?(?P<v2>-?\d{1,12})?"
)
_GOT = re.compile(r"\b(?:got|but (?:is|was|got)|found|received)\b:?\s?`?(?P<v>-?\d{1,12})\b")
MAX_SCAN = 1 << 20  # bytes of the log's head read for where it sets an option


def refused_value(text: str) -> tuple[str, int] | None:
    """The option a message refuses and the number it refused ("max_tokens must be at least 1,
    got -3173" -> (max_tokens, -3173)), or None."""
    m = _VALUE_REFUSED.search(text[:2000])
    if m is None:
        return None
    raw = m.group("v0") or m.group("v1")
    if raw is None:
        got = _GOT.search(text[m.start() : m.start() + 300])
        raw = got.group("v") if got else None
    return (m.group("k"), int(raw)) if raw is not None else None


def _lines(log: Log) -> tuple[str, ...]:
    return _cleaned(log.head[:MAX_SCAN])


@lru_cache(maxsize=4)  # one log's head, read for each option and each line deriving it: cleaned once
def _cleaned(head: bytes) -> tuple[str, ...]:
    from envdoctor.triage.scanner import clean, split_prefix

    return tuple(split_prefix(clean(raw[:4096]))[0] for raw in head.split(b"\n"))


def sets_option(log: Log, option: str, skip: int = 0) -> str:
    """The line where the log sets ``option`` (a flag or an override on a command line, a key of a
    config dump or a YAML file), "" where it sets it nowhere; ``skip``: the failing line (1-based)."""
    k = re.escape(option)
    dashed = re.escape(option.replace("_", "-"))
    rx = re.compile(
        rf"--(?:{k}|{dashed})(?:[= ]|$)|(?:^|[\s,\[(])(?:[\w.+]+\.)?{k}\s?=\s?\S|"
        rf"['\"]{k}['\"]\s?:|^\s*{k}\s?:\s?\S"
    )
    for n, line in enumerate(_lines(log), 1):
        found = rx.search(line) if n != skip else None
        if found is not None and not re.search(r"\b(?:must|got)\b", line):
            # the setting and its value, not the line's first 200 characters: a config dump (swift's
            # ``InferArguments(model=…, …, max_new_tokens=32, …)``) sets it far into its line
            start = max(0, found.start() - 80)
            return ("…" if start else "") + line[start : found.end() + 120].strip()
    return ""


def _set_to(line: str, option: str) -> int | None:
    """The number ``line`` sets ``option`` to (``--max_new_tokens 4096``, ``'max_tokens': 512``)."""
    k = f"(?:{re.escape(option)}|{re.escape(option.replace('_', '-'))})"
    m = re.search(rf"(?<!\w){k}['\"]?\s?[=: ]\s?['\"]?(?P<v>-?\d{{1,12}})\b", line)
    return int(m.group("v")) if m else None


def _derivation(log: Log, option: str, value: int, skip: int = 0) -> str:
    """A line of the log where the framework says how it came to the value (swift's "max_model_len(2048)
    - num_tokens(5221) < max_tokens(1024). Setting max_tokens: -3173", verl's "Number of steps/epoch 0")."""
    words = [w for w in option.split("_") if w not in ("num", "per", "of", "max", "len", "total")] or [option]
    number = re.compile(rf"(?<![\w.-]){value}(?![\w.])")
    for n, line in enumerate(_lines(log), 1):
        low = line.lower()
        if n == skip or "error" in low[:40] or not number.search(line):
            continue
        if option in line or all(re.search(rf"\b{w}", low) for w in words):
            return line.strip()[:240]
    # a line where the framework computes the option for other inputs (swift's "… < max_tokens(10240).
    # Setting max_tokens: 8735" next to a refused 0): how it derives it, not its value this time
    how = re.compile(rf"\bSetting {re.escape(option)}\b|\b{re.escape(option)}\(\d{{1,12}}\)")
    for n, line in enumerate(_lines(log), 1):
        if n != skip and how.search(line):
            return line.strip()[:240]
    return ""


def derived(option: str, value: int, log: Log, skip: int = 0) -> tuple[str, str, str, str] | None:
    """A refused value ≤ 0 of an option the framework derives from the run's inputs (``DERIVED``)
    where the log sets no such option: (what it is derived from, the log's line saying so, the fix
    on those inputs, how the finding says the value is not the run's setting), or None (an option
    the run set to that value, or one no table names)."""
    if value > 0:
        return None
    entry = next(((what, fix) for rx, what, fix in DERIVED if rx.fullmatch(option)), None)
    if entry is None:
        return None
    line = sets_option(log, option, skip)
    configured = _set_to(line, option) if line else None
    if line and (configured is None or configured == value or configured <= 0):
        return None  # the run set it: the option it refused
    said = _derivation(log, option, value, skip)
    if value in (0, -1) and not said and configured is None:
        # 0 and -1 are values a run sets itself ("no limit": ``SamplingParams(max_tokens=-1)``, a
        # config the log does not show): without a line of the log deriving it, the option's answer stands
        return None
    not_set = (
        f"is not the run's setting (it sets {option} {configured}; the framework turned it into {value})"
        if configured is not None
        else f"is no setting of the run (the log's config and command lines set no {option})"
    )
    return entry[0], said, entry[1], not_set


def _derived_draft(
    tb: Traceback,
    m: Match,
    log: Log,
    package: str,
    where: str,
    text: str,
    value: tuple[str, int],
    drv: tuple[str, str, str, str],
) -> Draft:
    """A check refused a value the framework derived from the run's inputs (``derived``): what it is
    derived from, and the fix on those inputs, not on the option."""
    option, number = value
    source, said, fix, not_set = drv
    name = _DISPLAY.get(package, package) or "A check"
    caller = next((f for f in reversed(tb.frames) if f.package not in (package, None)), None)
    by = (
        f"{_DISPLAY.get(caller.package or '', caller.package)} (the caller)"
        if caller
        else "the code that called it"
    )
    what = (
        f"{name} refused a value it was handed{where}: “{text[:400]}” — {option}={number} {not_set}: "
        f"{by} derived it from {source}"
    )
    if said:
        what += f"; the log shows it: “{said}”"
    d = finding(RULE, [m], log, what, fix, package=package or None, options=[option], derived=True)
    f = d.finding  # the same inputs fail the same way on every run: an error
    d.finding = Finding(f.rule, Severity.ERROR, f.message, f.fix, f.evidence)
    return d


def _every_release(tb: Traceback, log: Log, name: str) -> str:
    """What the raise-site index tells of the releases that refuse: every release it indexes has
    the check (it came with the oldest), so a release before the index's first is not known to
    (deepspeed 0.11.1 had no `no_sync` check; the index starts at 0.13.0); without the index, only
    what the installed release does."""
    from envdoctor.knowledge.raise_sites import raise_index

    loc = locate_tb(tb, log)
    index = raise_index(loc.package) if loc is not None else None
    if loc is None or index is None or not index.releases or loc.releases[-1] != index.releases[-1]:
        return f"the installed {name} release refuses this configuration"
    if loc.releases[0] != index.releases[0]:
        return (
            f"{name} refuses this configuration in every release from {loc.releases[0]} on (in these words)"
        )
    return (
        f"{name} refuses this configuration in every release envdoctor indexes ({index.releases[0]} "
        f"to {index.releases[-1]}); a release before {index.releases[0]} is not indexed"
    )
