"""The catalogue of confirmed GRPO + vLLM breakages (``rules/knowledge/known_failures/*.yaml``).

One schema, ``envdoctor.known_failures/1``, validated here on first load; every entry becomes a
frozen ``KnownFailure``. ``check`` matches an entry's ``when`` against the stack (KNF001), triage
reads its ``symptoms``. Parsing only: ``envdoctor.knowledge.catalogue`` reads the files, lazily,
once per process (``known_failures()``).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from functools import cache
from typing import Any

from envdoctor import versions
from envdoctor.knowledge.quotes import ascii_quotes, compile_soft, soft_regex

SCHEMA = "envdoctor.known_failures/1"
KINDS = ("crash", "hang", "silent-wrong", "refusal", "degraded", "slower")
#: Kinds whose outcome is never in doubt once the entry matches: their certainty must be certain.
CERTAIN_KINDS = ("crash", "hang", "silent-wrong")
CERTAINTIES = ("certain", "depends")
#: What a failure's outcome depends on once its ``when`` matches (``depends_on``): ``run`` - it
#: happens on every run of that configuration (an error); the others name what envdoctor cannot
#: see before the run - the training data, the load (hours in, a checkpoint save, timing), the
#: hardware (interconnect, GPU family, accelerator), an install detail (how a binary was built or
#: obtained, a cache, the cluster's setup), the model (architecture, checkpoint, distribution) or
#: the training code (arguments and values the script passes that envdoctor does not evaluate):
#: advice (info) saying what to check (``evidence``), a warning where a fact envdoctor reads makes
#: it likely (``likely_with``)
DEPENDS_ON = ("run", "data", "load", "hardware", "install", "model", "code")
#: facts envdoctor reads that ``likely_with.facts`` may name: the training data is conversational
#: (the dataset sample read is chat messages, or the training code builds role/content messages);
#: the training script starts vLLM in its own process (Unsloth's fast_inference=True)
LIKELY_FACTS = ("conversational", "vllm_in_process")
#: facts of the training script that ``when.facts`` may require (all must hold; a script not read
#: holds none): ``vllm_in_process_off`` - it loads the model with Unsloth's loader and every such
#: call leaves fast_inference off (False, a flag's default False, or left out: the default)
WHEN_FACTS = ("vllm_in_process_off",)
PLATFORMS = ("linux", "windows", "macos", "rocm", "xpu")
_ID = re.compile(r"^[a-z0-9]+(?:[-.][a-z0-9]+)*$")
_RULE = re.compile(r"^[A-Z]{2,4}[0-9]{3}$")
_READ = re.compile(r"\{[a-z_]{1,40}\}")  # a value a template of ``reads`` names
_KEYS = {
    "id",
    "title",
    "kind",
    "certainty",
    "when",
    "symptoms",
    "cause",
    "fix",
    "fixed_in",
    "workaround",
    "sources",
    "rule",
    "note",
    "triage_only",
    "raised",
    "symptom_decides",
    "certain_with",
    "ruled_out_by",
    "depends_on",
    "evidence",
    "likely_with",
    "at_import",
    "reads",
    "read_fixes",
    "program_fixes",
    "older_fix",
    "usage",
    "own_line",
}
_RAISED_KEYS = {"exception", "message", "frames"}
_WHEN_KEYS = {
    "packages",
    "config",
    "launch",
    "platform",
    "env",
    "unless_env",
    "unless_config",
    "unless_imported",
    "unless_script_sets",
    "data",
    "trainer",
    "facts",
}
#: ``when.trainer``: the trainer the run must build for the entry to hold (``grpo``: TRL's
#: GRPOTrainer or a class deriving from it, as the training script is read or the launch line
#: asks for it; ``checks.matching.runs_grpo``)
TRAINERS = ("grpo",)
#: ``program_fixes``: the programs a log may show running (``triage.runkind.program``)
PROGRAMS = ("vllm-server",)
#: ``when.launch`` aspects and the values each may take.
LAUNCH_VALUES = {
    "launcher": ("python", "torchrun", "accelerate", "deepspeed", "trl"),
    "server": ("trl-vllm-serve", "vllm-serve"),  # what the second --launch line runs
    # from the accelerate / DeepSpeed config; "fsdp2": FSDP with fsdp_version 2 only ("fsdp": either)
    "strategy": ("ddp", "zero1", "zero2", "zero3", "fsdp", "fsdp2"),
}


class KnownFailuresError(ValueError):
    """A catalogue file breaks the schema; the message names the file and the entry."""


@dataclass(frozen=True)
class Symptom:
    """One phrasing of a failure in a log: a literal substring, or a regex (``re:`` prefix),
    compiled on first use (``check`` never reads symptoms: 89 regexes cost it ~50 ms)."""

    text: str
    where: str = ""  # the file and entry, for the error of a regex that does not compile

    @property
    def regex(self) -> re.Pattern[str] | None:
        """The symptom's regex, its quotes soft (``quotes.soft_regex``: a message pasted from a
        rendered page lost its backticks to markup, or shows other quotes)."""
        return _regex(self.text, self.where) if self.text.startswith("re:") else None

    def found_in(self, log: str) -> bool:
        log = ascii_quotes(log)  # typographic quotes as the soft patterns know them
        regex = self.regex
        if regex:
            return bool(regex.search(log))
        if self.text in log:
            return True
        soft = _soft_literal(self.text)  # the text with other quotes or none (a rendered page)
        return bool(soft) and re.search(soft, log) is not None


@cache
def _soft_literal(text: str) -> str:
    """A literal symptom as a regex with its quotes soft; '' where it holds none."""
    escaped = re.escape(text)
    got = soft_regex(escaped)
    return "" if got == escaped else got


@cache
def _regex(text: str, where: str) -> re.Pattern[str]:
    try:
        return compile_soft(text[3:])
    except re.error as exc:
        raise KnownFailuresError(f"{where}: symptom {text!r} is not a valid regex: {exc}") from None


@dataclass(frozen=True)
class KnownFailure:
    """A confirmed breakage: when it happens, how it looks, why, and the fix."""

    id: str
    title: str
    kind: str
    depends_on: str  # DEPENDS_ON: "run" (every run of the configuration) or what it hinges on
    packages: dict[str, str]  # dist name (PEP 503) -> PEP 440 specifier
    config: dict[str, tuple[Any, ...]]  # GRPO config key -> the values that match
    launch: dict[str, tuple[str, ...]]  # launch aspect (LAUNCH_VALUES) -> the values that match
    platform: tuple[str, ...]
    env: dict[str, str]  # must be set in the run's environment ("A|B": either; "*": any value)
    unless_env: dict[str, str]  # the failure is avoided where the run's environment has these
    symptoms: tuple[Symptom, ...]
    cause: str
    fix: str
    sources: tuple[str, ...]
    fixed_in: dict[str, str] = field(default_factory=dict)
    workaround: str | None = None
    rule: str | None = None  # an existing rule that already reports this failure
    note: str | None = None
    #: GRPO config key -> values ("*": any) with which the run escapes the failure, so that an
    #: entry certain for the rest (an unset key, e.g. generation_kwargs) can say so
    unless_config: dict[str, tuple[Any, ...]] = field(default_factory=dict)
    #: library -> releases (PEP 440) that patch the failure away when the training script imports
    #: it (Unsloth aliases vLLM's removed GuidedDecodingParams on import): the run escapes it
    unless_imported: dict[str, str] = field(default_factory=dict)
    #: attributes whose absence is the failure: a training script (or a repository module it
    #: imports) that assigns one on an object (``model.warnings_issued = {}``) escapes it
    unless_script_sets: tuple[str, ...] = ()
    triage_only: bool = False  # its trigger is invisible before the run: triage reads it, check does not
    #: conditions on the training data (in words) that must also hold and that envdoctor cannot
    #: see before the run: ``check`` reports the entry as advice (info), naming them
    data: tuple[str, ...] = ()
    file: str = ""
    #: where it is raised, for triage to find it behind a generic message: the exception's class
    #: name, a part of its message ("" : any), the frames (package, file ending, function; "" :
    #: any) one of which the traceback must hold
    raised: tuple[str, str, tuple[tuple[str, str, str], ...]] | None = None
    #: the symptom arises from this cause alone, in the entry's releases only (a message naming the
    #: entry's own class and method, an assertion unique to it): a log that shows it is the entry's
    #: failure whatever versions it shows, so triage says it as an error without them
    symptom_decides: bool = False
    #: lines that, shown before the symptom (in its traceback's context), settle the cause among the
    #: several the note names (a level-2 sleep before garbage completions): an error with them
    certain_with: tuple[Symptom, ...] = ()
    #: lines that, shown with the symptom (where ``certain_with``'s are looked for) and none of
    #: ``certain_with``'s beside them, rule the entry out: the log shows the very evidence that would
    #: tell its cause, and it says otherwise (torch's recomputed metadata without a [0] shape)
    ruled_out_by: tuple[Symptom, ...] = ()
    #: which fact would show it, in words (what the user checks), for an entry not ``run``
    evidence: str | None = None
    #: facts envdoctor reads that make it likely (a warning): ``config`` (GRPO config key ->
    #: values, as ``when.config``) and ``facts`` (LIKELY_FACTS), all of which must hold
    likely_config: dict[str, tuple[Any, ...]] = field(default_factory=dict)
    likely_facts: tuple[str, ...] = ()
    #: it strikes when the stack is imported (TRL's grpo_trainer imports vLLM at module level
    #: whenever vLLM is installed), not when vLLM generates: it holds in a run that never
    #: generates with vLLM (``checks.context.vllm_unused``) too
    at_import: bool = False
    #: the trainer the run must build (``TRAINERS``), None for any: an entry of GRPOTrainer's own
    #: (TRL before 0.14 has none) does not hold for a run that builds SFTTrainer
    trainer: str | None = None
    #: facts of the training script that must hold (``WHEN_FACTS``), read from the script
    facts: tuple[str, ...] = ()
    #: what the log shows of the user's inputs, said with the values its symptom's named groups
    #: read (``{target}``, ``{checkpoint}``): each template is said where all its names were read
    reads: tuple[str, ...] = ()
    #: (a value ``reads`` names, the fix where it was read): the log's evidence picks the fix of the
    #: reading it shows (labels among the inputs: the model's forward, not the data); the first
    #: read wins; ``fix`` where none was
    read_fixes: tuple[tuple[str, str], ...] = ()
    #: (a program the log runs, ``PROGRAMS``, the fix there): the same failure met outside the
    #: trainer the entry is about (vLLM's own server refusing a chat request) is fixed there
    program_fixes: tuple[tuple[str, str], ...] = ()
    #: the fix where the run's release of a package is older than the one ``fix`` needs (peft's
    #: target_modules="all-linear" from 0.8.0): ``package``, ``below`` (that release), ``released``
    #: (its date: a log dated before it ran an older one), ``shown_by`` (symptoms whose wording only
    #: releases below print) and ``fix`` (``envdoctor/triage/olderfix.py``); empty: none
    older_fix: dict[str, Any] = field(default_factory=dict)
    #: the failure is in what the user's own code passed (its data, arguments, a checkpoint it
    #: loads): triage names the user's frame that passed it where the traceback shows one
    usage: bool = False
    #: its symptoms are lines of their own (a device-side assertion's line, the list under
    #: "Error(s) in loading state_dict"), not an exception's line: their rare literals are anchors
    own_line: bool = False

    @property
    def certainty(self) -> str:
        """``certain`` for an entry that fails on every run of its configuration, else ``depends``."""
        return "certain" if self.depends_on == "run" else "depends"

    @property
    def likely_with(self) -> bool:
        return bool(self.likely_config or self.likely_facts)

    @property
    def severity(self) -> str:
        """Its severity when only what ``when`` says is known: an error for ``run``, advice
        (info) for an entry that hinges on what envdoctor cannot see; ``check`` raises the latter
        to a warning where ``likely_with`` holds (``checks.known_failures.severity``)."""
        if self.kind == "slower":  # the run works, only slower: advice
            return "info"
        return "error" if self.depends_on == "run" else "info"


def _norm(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _text(entry: dict[str, Any], key: str, where: str, required: bool = True) -> str | None:
    value = entry.get(key)
    if value is None and not required:
        return None
    if not isinstance(value, str) or not value.strip():
        raise KnownFailuresError(f"{where}: '{key}' must be a non-empty string")
    return " ".join(value.split())


def _values(value: Any, where: str) -> tuple[Any, ...]:
    items = value if isinstance(value, list) else [value]
    if not items or not all(isinstance(v, (str, bool, int, float)) for v in items):
        raise KnownFailuresError(f"{where}: expected a scalar or a non-empty list of scalars")
    return tuple(items)


def _env_map(value: Any, where: str) -> dict[str, str]:
    if not isinstance(value, dict) or not all(isinstance(v, str) for v in value.values()):
        raise KnownFailuresError(f'{where}: expected {{VAR: VALUE}} ("*": set at all; "A|B": either var)')
    return {str(k): v for k, v in value.items()}


def _when(
    when: Any, where: str
) -> tuple[
    dict[str, str],
    dict[str, tuple[Any, ...]],
    dict[str, tuple[str, ...]],
    tuple[str, ...],
    dict[str, str],
    dict[str, str],
]:
    if not isinstance(when, dict) or not when.get("packages"):
        raise KnownFailuresError(f"{where}.when: needs 'packages' (at least one PEP 440 specifier)")
    unknown = set(when) - _WHEN_KEYS
    if unknown:
        raise KnownFailuresError(
            f"{where}.when: unknown keys {sorted(unknown)} (known: {sorted(_WHEN_KEYS)})"
        )
    packages: dict[str, str] = {}
    if not isinstance(when["packages"], dict):
        raise KnownFailuresError(f"{where}.when.packages: expected a mapping of dist name to spec")
    for name, spec in when["packages"].items():
        if versions.spec_error(str(spec)):
            raise KnownFailuresError(f"{where}.when.packages.{name}: {spec!r} is not a PEP 440 specifier")
        if not str(spec).strip():
            raise KnownFailuresError(f"{where}.when.packages.{name}: empty specifier")
        packages[_norm(str(name))] = str(spec)
    config = when.get("config") or {}
    if not isinstance(config, dict):
        raise KnownFailuresError(f"{where}.when.config: expected a mapping of GRPO config keys")
    conf = {str(k): _values(v, f"{where}.when.config.{k}") for k, v in config.items()}
    launch = when.get("launch") or {}
    if not isinstance(launch, dict) or set(launch) - set(LAUNCH_VALUES):
        raise KnownFailuresError(
            f"{where}.when.launch: expected a mapping with keys among {sorted(LAUNCH_VALUES)}"
        )
    lau = {k: tuple(str(x) for x in _values(v, f"{where}.when.launch.{k}")) for k, v in launch.items()}
    for key, values in lau.items():
        bad = [x for x in values if x not in LAUNCH_VALUES[key]]
        if bad:
            raise KnownFailuresError(f"{where}.when.launch.{key}: {bad} not in {list(LAUNCH_VALUES[key])}")
    plat = (
        tuple(str(x) for x in _values(when["platform"], f"{where}.when.platform"))
        if "platform" in when
        else ()
    )
    bad = [x for x in plat if x not in PLATFORMS]
    if bad:
        raise KnownFailuresError(f"{where}.when.platform: {bad} not in {list(PLATFORMS)}")
    env = _env_map(when.get("env") or {}, f"{where}.when.env")
    unless = _env_map(when.get("unless_env") or {}, f"{where}.when.unless_env")
    return packages, conf, lau, plat, env, unless


def _symptoms(value: Any, where: str, silent: bool, eager: bool = True) -> tuple[Symptom, ...]:
    if (
        not isinstance(value, list)
        or not (value or silent)
        or not all(isinstance(s, str) and s for s in value)
    ):
        raise KnownFailuresError(
            f"{where}: 'symptoms' must be a non-empty list of strings (empty only for a silent-wrong failure)"
        )
    out = tuple(Symptom(s, where) for s in value)
    if eager:
        for symptom in out:
            symptom.regex  # noqa: B018 - compiles it: a bad regex is an error of this entry now
    return out


def _raised(value: Any, where: str) -> tuple[str, str, tuple[tuple[str, str, str], ...]] | None:
    """``raised: {exception: TypeError, message: "…", frames: [{package, file, function}]}``."""
    if value is None:
        return None
    if (
        not isinstance(value, dict)
        or set(value) - _RAISED_KEYS
        or not isinstance(value.get("exception"), str)
    ):
        raise KnownFailuresError(
            f"{where}: 'raised' must map exception (a class name), and optionally message and frames"
        )
    frames = value.get("frames") or []
    if not isinstance(frames, list) or not all(
        isinstance(f, dict)
        and isinstance(f.get("package"), str)
        and set(f) <= {"package", "file", "function"}
        for f in frames
    ):
        raise KnownFailuresError(f"{where}: 'raised.frames' must be a list of {{package, file, function}}")
    message = value.get("message") or ""
    if not isinstance(message, str):
        raise KnownFailuresError(f"{where}: 'raised.message' must be a string")
    return (
        value["exception"],
        message,
        tuple((_norm(f["package"]), str(f.get("file", "")), str(f.get("function", ""))) for f in frames),
    )


def _depends(
    entry: dict[str, Any], where: str
) -> tuple[str, str | None, dict[str, tuple[Any, ...]], tuple[str, ...]]:
    """``depends_on``, ``evidence`` and ``likely_with`` of an entry. The older ``certainty`` is
    read where ``depends_on`` is absent (``certain``: ``run``); a ``depends`` entry without
    ``depends_on`` is refused (it must say what it hinges on)."""
    depends_on = entry.get("depends_on")
    certainty = entry.get("certainty")
    if certainty is not None and certainty not in CERTAINTIES:
        raise KnownFailuresError(f"{where}: 'certainty' must be certain or depends, got {certainty!r}")
    if depends_on is None:
        if certainty != "certain":
            raise KnownFailuresError(
                f"{where}: 'depends_on' must say what the failure depends on, one of {list(DEPENDS_ON)}"
            )
        depends_on = "run"
    if depends_on not in DEPENDS_ON:
        raise KnownFailuresError(
            f"{where}: 'depends_on' must be one of {list(DEPENDS_ON)}, got {depends_on!r}"
        )
    if certainty is not None and (certainty == "certain") != (depends_on == "run"):
        raise KnownFailuresError(f"{where}: 'certainty: {certainty}' contradicts 'depends_on: {depends_on}'")
    evidence = _text(entry, "evidence", where, required=False)
    if depends_on != "run" and evidence is None:
        raise KnownFailuresError(
            f"{where}: 'evidence' must say which fact would show the failure (what to check), "
            f"for an entry that depends on the {depends_on}"
        )
    likely = entry.get("likely_with") or {}
    if not isinstance(likely, dict) or set(likely) - {"config", "facts"} or (likely and depends_on == "run"):
        raise KnownFailuresError(
            f"{where}: 'likely_with' must map config and/or facts, on an entry not depends_on: run"
        )
    config = likely.get("config") or {}
    if not isinstance(config, dict):
        raise KnownFailuresError(f"{where}.likely_with.config: expected a mapping of GRPO config keys")
    facts = likely.get("facts") or []
    if not isinstance(facts, list) or any(f not in LIKELY_FACTS for f in facts):
        raise KnownFailuresError(f"{where}.likely_with.facts: expected a list among {list(LIKELY_FACTS)}")
    return (
        depends_on,
        evidence,
        {str(k): _values(v, f"{where}.likely_with.config.{k}") for k, v in config.items()},
        tuple(facts),
    )


def _strings_ok(value: Any) -> bool:
    return isinstance(value, list) and all(isinstance(x, str) and x for x in value)


def parse_entry(entry: Any, where: str, file: str = "", eager: bool = True) -> KnownFailure:
    """One validated entry; ``where`` names the file and position in errors; ``eager``: compile
    its symptom regexes now (else on first use, with the same error)."""
    if not isinstance(entry, dict):
        raise KnownFailuresError(f"{where}: expected a mapping")
    fid = entry.get("id")
    if not isinstance(fid, str) or not _ID.match(fid):
        raise KnownFailuresError(f"{where}: 'id' must be lowercase-with-dashes, got {fid!r}")
    where = f"{where} ({fid})"
    unknown = set(entry) - _KEYS
    if unknown:
        raise KnownFailuresError(f"{where}: unknown keys {sorted(unknown)}")
    kind = entry.get("kind")
    if kind not in KINDS:
        raise KnownFailuresError(f"{where}: 'kind' must be one of {list(KINDS)}, got {kind!r}")
    depends_on, evidence, likely_config, likely_facts = _depends(entry, where)
    certainty = "certain" if depends_on == "run" else "depends"
    if kind in CERTAIN_KINDS and certainty != "certain" and not entry.get("note"):
        raise KnownFailuresError(
            f"{where}: a {kind} happens on every run (depends_on: run) unless a "
            "'note' says what envdoctor cannot see (the data, the model)"
        )
    packages, config, launch, platform, env, unless_env = _when(entry.get("when"), where)
    raw = (entry.get("when") or {}).get("unless_config") or {}
    if not isinstance(raw, dict):
        raise KnownFailuresError(f"{where}.when.unless_config: expected a mapping of GRPO config keys")
    unless_config = {str(k): _values(v, f"{where}.when.unless_config.{k}") for k, v in raw.items()}
    imported = (entry.get("when") or {}).get("unless_imported") or {}
    if not isinstance(imported, dict) or any(versions.spec_error(str(v)) for v in imported.values()):
        raise KnownFailuresError(
            f"{where}.when.unless_imported: expected a mapping of a library to the PEP 440 "
            "releases of it that patch the failure away"
        )
    script_sets = (entry.get("when") or {}).get("unless_script_sets") or []
    if not isinstance(script_sets, list) or not all(
        isinstance(a, str) and a.isidentifier() for a in script_sets
    ):
        raise KnownFailuresError(
            f"{where}.when.unless_script_sets: expected a list of attribute names the training "
            "script may assign to escape the failure"
        )
    data = (entry.get("when") or {}).get("data") or []
    if not isinstance(data, list) or not all(isinstance(d, str) and d.strip() for d in data):
        raise KnownFailuresError(f"{where}.when.data: expected a list of conditions on the data, in words")
    if data and certainty != "depends":
        raise KnownFailuresError(
            f"{where}.when.data: an entry that depends on the data is not depends_on: run"
        )
    sources = entry.get("sources")
    if (
        not isinstance(sources, list)
        or not sources
        or not all(isinstance(s, str) and s.startswith("https://") for s in sources)
    ):
        raise KnownFailuresError(f"{where}: 'sources' must be a non-empty list of https:// URLs")
    fixed_in = entry.get("fixed_in") or {}
    if not isinstance(fixed_in, dict) or not all(isinstance(v, str) for v in fixed_in.values()):
        raise KnownFailuresError(f"{where}: 'fixed_in' must map dist names to version strings")
    triage_only = entry.get("triage_only", False)
    if not isinstance(triage_only, bool) or (triage_only and not entry.get("note")):
        raise KnownFailuresError(
            f"{where}: 'triage_only' must be true or false, and true needs a "
            "'note' saying what envdoctor cannot see before the run"
        )
    decides = entry.get("symptom_decides", False)
    if not isinstance(decides, bool) or (decides and kind not in ("crash", "refusal")):
        raise KnownFailuresError(
            f"{where}: 'symptom_decides' must be true or false, and true only for a crash or a refusal"
        )
    settles = entry.get("certain_with") or []
    if settles and (certainty != "depends" or not _strings_ok(settles)):
        raise KnownFailuresError(
            f"{where}: 'certain_with' must be a list of strings (literals or re:), "
            "on an entry of certainty depends"
        )
    rules_out = entry.get("ruled_out_by") or []
    if rules_out and not _strings_ok(rules_out):
        raise KnownFailuresError(f"{where}: 'ruled_out_by' must be a list of strings (literals or re:)")
    at_import = entry.get("at_import", False)
    if not isinstance(at_import, bool):
        raise KnownFailuresError(f"{where}: 'at_import' must be true or false")
    trainer = (entry.get("when") or {}).get("trainer")
    if trainer is not None and trainer not in TRAINERS:
        raise KnownFailuresError(f"{where}.when.trainer: {trainer!r} not in {list(TRAINERS)}")
    facts = (entry.get("when") or {}).get("facts") or []
    if not isinstance(facts, list) or any(f not in WHEN_FACTS for f in facts):
        raise KnownFailuresError(f"{where}.when.facts: expected a list among {list(WHEN_FACTS)}")
    reads = entry.get("reads") or []
    if not isinstance(reads, list) or not all(isinstance(r, str) and _READ.search(r) for r in reads):
        raise KnownFailuresError(f"{where}: 'reads' must be a list of templates naming a value ({{name}})")
    read_fixes = entry.get("read_fixes") or {}
    named = {n for r in reads for n in _READ.findall(r)}
    if not isinstance(read_fixes, dict) or not all(
        isinstance(v, str) and v.strip() and "{" + str(k) + "}" in named for k, v in read_fixes.items()
    ):
        raise KnownFailuresError(f"{where}: 'read_fixes' must map a value its 'reads' name to a fix")
    program_fixes = entry.get("program_fixes") or {}
    if not isinstance(program_fixes, dict) or not all(
        k in PROGRAMS and isinstance(v, str) and v.strip() for k, v in program_fixes.items()
    ):
        raise KnownFailuresError(
            f"{where}: 'program_fixes' must map a program among {list(PROGRAMS)} to a fix"
        )
    older_fix = _older_fix(entry.get("older_fix"), where)
    for flag in ("usage", "own_line"):
        if not isinstance(entry.get(flag, False), bool):
            raise KnownFailuresError(f"{where}: '{flag}' must be true or false")
    rule = entry.get("rule")
    if rule is not None and not (isinstance(rule, str) and _RULE.match(rule)):
        raise KnownFailuresError(f"{where}: 'rule' must be a rule id such as PKG002")
    return KnownFailure(
        id=fid,
        title=str(_text(entry, "title", where)),
        kind=kind,
        depends_on=depends_on,
        evidence=evidence,
        likely_config=likely_config,
        likely_facts=likely_facts,
        packages=packages,
        config=config,
        launch=launch,
        platform=platform,
        env=env,
        unless_env=unless_env,
        unless_config=unless_config,
        unless_imported={_norm(str(k)): str(v) for k, v in imported.items()},
        unless_script_sets=tuple(script_sets),
        symptoms=_symptoms(entry.get("symptoms"), where, kind == "silent-wrong", eager),
        cause=str(_text(entry, "cause", where)),
        fix=str(_text(entry, "fix", where)),
        sources=tuple(sources),
        fixed_in={_norm(k): v for k, v in fixed_in.items()},
        workaround=_text(entry, "workaround", where, required=False),
        rule=rule,
        note=_text(entry, "note", where, required=False),
        triage_only=triage_only,
        data=tuple(" ".join(d.split()) for d in data),
        file=file,
        raised=_raised(entry.get("raised"), where),
        symptom_decides=decides,
        certain_with=tuple(Symptom(x, where) for x in settles),
        ruled_out_by=tuple(Symptom(x, where) for x in rules_out),
        at_import=at_import,
        trainer=trainer,
        facts=tuple(facts),
        reads=tuple(" ".join(r.split()) for r in reads),
        read_fixes=tuple((str(k), " ".join(str(v).split())) for k, v in read_fixes.items()),
        program_fixes=tuple((str(k), " ".join(str(v).split())) for k, v in program_fixes.items()),
        older_fix=older_fix,
        usage=bool(entry.get("usage", False)),
        own_line=bool(entry.get("own_line", False)),
    )


_ISO_DATE = re.compile(r"^20\d\d-[01]\d-[0-3]\d$")


def _older_fix(value: Any, where: str) -> dict[str, Any]:
    """``older_fix`` checked: {package, below, released, shown_by, fix}; {} where absent."""
    if value is None:
        return {}
    keys = {"package", "below", "released", "shown_by", "fix"}
    if not isinstance(value, dict) or set(value) - keys or not {"package", "below", "fix"} <= set(value):
        raise KnownFailuresError(
            f"{where}: 'older_fix' must map package, below, fix (and released, shown_by)"
        )
    released = str(value.get("released") or "")
    if released and not _ISO_DATE.match(released):
        raise KnownFailuresError(f"{where}: 'older_fix.released' must be a date YYYY-MM-DD")
    shown_by = value.get("shown_by") or []
    if not isinstance(shown_by, list) or (shown_by and not _strings_ok(shown_by)):
        raise KnownFailuresError(f"{where}: 'older_fix.shown_by' must be a list of symptoms")
    for text in shown_by:
        Symptom(text, where).regex  # noqa: B018 - a regex that does not compile fails here
    if not str(value["fix"]).strip():
        raise KnownFailuresError(f"{where}: 'older_fix.fix' must be a fix")
    return {
        "package": _norm(str(value["package"])),
        "below": str(value["below"]),
        "released": released,
        "shown_by": [str(x) for x in shown_by],
        "fix": " ".join(str(value["fix"]).split()),
    }


def parse_file(
    name: str, data: Any, eager: bool = True, keep: Callable[[dict[str, Any]], bool] | None = None
) -> list[KnownFailure]:
    """The entries of one parsed catalogue file ``name``; raises ``KnownFailuresError``."""
    if not isinstance(data, dict) or data.get("schema") != SCHEMA:
        raise KnownFailuresError(f"{name}: 'schema: {SCHEMA}' missing")
    failures = data.get("failures")
    if not isinstance(failures, list) or not failures:
        raise KnownFailuresError(f"{name}: 'failures' must be a non-empty list")
    return [
        parse_entry(e, f"{name}: failures[{i}]", name, eager)
        for i, e in enumerate(failures)
        if keep is None or not isinstance(e, dict) or keep(e)
    ]


def parse_catalogue(
    files: Iterable[tuple[str, Any]], eager: bool = True, keep: Callable[[dict[str, Any]], bool] | None = None
) -> list[KnownFailure]:
    """Every entry of the parsed catalogue files ``(name, data)``, ids unique across files."""
    out: list[KnownFailure] = []
    seen: dict[str, str] = {}
    for name, data in files:
        for failure in parse_file(name, data, eager, keep):
            if failure.id in seen:
                raise KnownFailuresError(f"{name}: id {failure.id} already used in {seen[failure.id]}")
            seen[failure.id] = name
            out.append(failure)
    return out


def checkable(entry: dict[str, Any]) -> bool:
    """Whether ``check`` reports an entry itself (KNF001): no older rule reports it and its
    trigger shows before the run (not ``triage_only``)."""
    return entry.get("rule") is None and not entry.get("triage_only")


#: Where rules/compiled.jsonl keeps the checkable entries, parsed and validated (not a path).
CHECKABLE_KEY = "knowledge/known_failures/*.yaml (checkable entries)"


def to_record(f: KnownFailure) -> dict[str, Any]:
    """``f`` as JSON data that ``from_record`` turns back into an equal ``KnownFailure``."""
    record = {name: getattr(f, name) for name in f.__dataclass_fields__}
    record["symptoms"] = [[s.text, s.where] for s in f.symptoms]
    record["certain_with"] = [[s.text, s.where] for s in f.certain_with]
    record["ruled_out_by"] = [[s.text, s.where] for s in f.ruled_out_by]
    return record


def from_record(record: dict[str, Any]) -> KnownFailure:
    """The ``KnownFailure`` of a ``to_record`` record (validated when it was written)."""
    fields = dict(record)
    fields["config"] = {k: tuple(v) for k, v in fields["config"].items()}
    fields["launch"] = {k: tuple(v) for k, v in fields["launch"].items()}
    fields["unless_config"] = {k: tuple(v) for k, v in fields.get("unless_config", {}).items()}
    fields["platform"] = tuple(fields["platform"])
    fields["data"] = tuple(fields.get("data", ()))
    fields["likely_config"] = {k: tuple(v) for k, v in fields.get("likely_config", {}).items()}
    fields["likely_facts"] = tuple(fields.get("likely_facts", ()))
    fields["facts"] = tuple(fields.get("facts", ()))
    fields["unless_script_sets"] = tuple(fields.get("unless_script_sets", ()))
    fields["reads"] = tuple(fields.get("reads", ()))
    fields["read_fixes"] = tuple(tuple(p) for p in fields.get("read_fixes", ()))
    fields["program_fixes"] = tuple(tuple(p) for p in fields.get("program_fixes", ()))
    fields["symptoms"] = tuple(Symptom(text, where) for text, where in fields["symptoms"])
    fields["certain_with"] = tuple(Symptom(text, where) for text, where in fields.get("certain_with", ()))
    fields["ruled_out_by"] = tuple(Symptom(text, where) for text, where in fields.get("ruled_out_by", ()))
    fields["sources"] = tuple(fields["sources"])
    raised = fields.get("raised")
    if raised is not None:
        fields["raised"] = (raised[0], raised[1], tuple(tuple(f) for f in raised[2]))
    return KnownFailure(**fields)
