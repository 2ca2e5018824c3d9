"""What a training script declares, read from its syntax tree (``ast``; never imported or run).

``read_script(path)`` gives a ``ScriptDecl``: the script's argparse flags (``add_argument``, in
any function, on any parser or argument group), the dataclasses it hands to ``HfArgumentParser``
/ ``TrlParser`` (its own, with their fields, and TRL's by name), the subclasses of TRL's
``GRPOConfig`` it defines or imports from the repository, and the ``GRPOConfig(...)`` calls it
makes, their literal keywords read as config values. Modules of the repository the script
imports (``from open_r1.configs import GRPOConfig``) are read the same way, a few levels deep.

The hook's walk of a whole repository for its own keys is ``repository_keys.py``, on the same
reading of one file.

Everything is bounded: a file over ``MAX_FILE_BYTES`` is not read, a file that is not Python
text (binary, a syntax error, a directory, a symlink loop, a FIFO) is reported with the reason,
never a traceback.
"""

from __future__ import annotations

import ast
import builtins
import os
import re
import stat
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from envdoctor.knowledge.trl_hook_calls import self_calls, signature_text
from envdoctor.plan.engine_start import EngineStart, read_engine_start
from envdoctor.plan.interface import (
    CODE_ORIGIN,
    CONFIG_KINDS,
    SERVER_START,
    TRL_NOT_TRAINER_CONFIGS,
    CodeKeyword,
    ConfigClass,
)
from envdoctor.units import size_text

#: a training script (or a module it imports) larger than this is not read: parsing is linear
#: but not interruptible (256 KiB of dense code: 1.3 s on a loaded 2-core machine,
#: bench/script_reader.py); real training scripts are tens of KiB
MAX_FILE_BYTES = 256 * 1024
#: repository modules followed from one script (its imports, and theirs)
MAX_IMPORTED_FILES = 24
MAX_IMPORT_DEPTH = 3
#: bytes of repository modules read for one script, all files together
MAX_FOLLOWED_BYTES = 1024 * 1024
#: TRL's config class and the parsers that turn dataclasses into command-line options
CONFIG_CLASS = "GRPOConfig"
TRAINER_CLASS = "GRPOTrainer"
PARSERS = frozenset({"HfArgumentParser", "TrlParser"})
#: the parser methods that read a config file's keys (TrlParser's --config, HfArgumentParser's
#: YAML / JSON / dict readers): told to keep the keys no dataclass has, they hand them back
#: instead of refusing them (trl/scripts/utils.py TrlParser.parse_args_and_config)
KEEPS_CONFIG_KEYS = frozenset({"parse_args_and_config", "parse_yaml_file", "parse_json_file", "parse_dict"})
#: trainers that start vLLM inside the training process by design (colocation), by the package
#: their loader comes from: Unsloth's ``FastLanguageModel.from_pretrained(..., fast_inference=True)``
#: loads vLLM beside the model and its patched GRPOTrainer generates with it (``model.vllm_engine``;
#: unslothai/unsloth unsloth/models/llama.py, unsloth/models/rl.py)
IN_PROCESS_VLLM = {"unsloth": "fast_inference"}
#: functions that hand a (frozen) model to DeepSpeed outside the trainer's own prepare: TRL's
#: ``trl.models.prepare_deepspeed`` (its trainers' reference / reward models) and the private copies
#: of older trainers (``DPOTrainer._prepare_deepspeed``)
DS_PREPARE = frozenset({"prepare_deepspeed", "_prepare_deepspeed"})
#: command-line libraries other than argparse: a script that imports one (and no argparse or
#: dataclass parser) reads its command line with code envdoctor does not follow
OTHER_CLIS = frozenset(
    {"click", "typer", "fire", "tyro", "jsonargparse", "simple_parsing", "hydra", "absl", "docopt", "defopt"}
    | {"cyclopts", "draccus", "pyrallis", "plac", "clize", "omegaconf"}
)


@dataclass(frozen=True)
class Flag:
    """One argparse option: its ``dest`` (the key), the option strings as written, its default
    when it is a literal (``has_default``)."""

    dest: str
    options: tuple[str, ...]
    line: int
    has_default: bool = False
    default: Any = None
    switch: bool | None = None  # takes no value: the value it sets (store_true: True)


@dataclass(frozen=True)
class DataClass:
    """A class of the script or the repository: its fields (its own and those of the
    repository's classes it inherits) and its bases as written."""

    name: str
    path: str
    line: int
    fields: tuple[str, ...]
    bases: tuple[str, ...]
    #: the methods it defines: (name, line, parameter list as ``signature_text`` writes it)
    methods: tuple[tuple[str, int, str], ...] = ()
    #: the calls its methods make of its other methods on ``self``: (method, shape as
    #: ``trl_hook_calls.call_shape`` writes it)
    self_calls: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True)
class ConfigCall:
    """A ``GRPOConfig(...)`` (or subclass) call: literal keywords (``values``), keywords that take
    an argparse flag's value (``args.<dest>``: ``from_flags``), the others (``unknown``: set in
    code, value not known); ``spread``: a ``**mapping`` adds keys envdoctor cannot see."""

    cls: str
    path: str
    line: int
    values: dict[str, Any] = field(default_factory=dict)
    from_flags: dict[str, str] = field(default_factory=dict)
    unknown: tuple[str, ...] = ()
    spread: bool = False
    #: each key the call sets -> where, as line edits (a keyword written in the call, or an
    #: entry on its own line of a dict display it spreads, can be cut; one a ``**mapping`` gets
    #: elsewhere or a later ``cfg.key = …`` sets cannot)
    places: dict[str, CodeKeyword] = field(default_factory=dict)
    #: the class called is TRL's own GRPOConfig (not a subclass of the repository's)
    trl_class: bool = False
    #: the keys the call always passes (keywords, a spread dict's entries; not ``cfg.key = …``)
    passed: tuple[str, ...] = ()
    #: key -> the place in the config file the script reads that its value comes from
    #: (``per_device_train_batch_size=training_conf.get("per_device_train_batch_size")``:
    #: ("training", "per_device_train_batch_size")); its value is the file's there
    from_file: dict[str, tuple[str, ...]] = field(default_factory=dict)
    #: keyword -> (the text key its value reads from a mapping, the line of that read):
    #: ``max_prompt_length=cfg["max_prompt_length"]``
    key_reads: dict[str, tuple[str, int]] = field(default_factory=dict)
    #: the sections of that file it spreads (``**conf["grpo"]``: ("grpo",)): their keys are its
    file_spreads: tuple[tuple[str, ...], ...] = ()

    @property
    def where(self) -> str:
        return f"{self.cls}{CODE_ORIGIN}{self.path}:{self.line}"


@dataclass(frozen=True)
class TrlCall:
    """A call of the script into a TRL class: ``GRPOTrainer(reward_kwargs=…)`` is (GRPOTrainer,
    __init__, its keywords); ``trainer.create_model_card(finetuned_from=…)`` on the object the
    script built from it is (GRPOTrainer, create_model_card, …)."""

    cls: str
    method: str
    where: str  # "train.py:262"
    keywords: tuple[str, ...]
    spread: bool = False  # also ``**kwargs`` of keys envdoctor does not follow
    #: each keyword's removal from the call as a line edit of the script: (keyword, first line,
    #: the lines as written, the lines without it); a keyword whose text could not be cut is absent
    drops: tuple[tuple[str, int, tuple[str, ...], tuple[str, ...]], ...] = ()
    #: where each keyword's name is written: (keyword, line, UTF-8 byte column, the line's text)
    places: tuple[tuple[str, int, int, str], ...] = ()


@dataclass(frozen=True)
class TrlOverride:
    """A method of a repository class deriving from a TRL trainer that the class defines itself
    (``ProtocolGRPOTrainer._generate_and_score_completions(self, inputs, mode)``): TRL's trainer
    calls it on ``self`` with the arguments of the release that runs."""

    cls: str  # the repository's class
    base: str  # the TRL trainer it derives from (GRPOTrainer)
    method: str
    where: str  # "src/pkg/trainer.py:154"
    signature: str  # its parameters as ``signature_text`` writes them
    #: the shapes the repository's classes of the hierarchy (this one and its bases) call it with
    #: on ``self`` from their other methods (``_prepare_inputs`` overridden to call
    #: ``self._generate_and_score_completions(batch, mode)``): the project drives it itself
    own_calls: tuple[str, ...] = ()


@dataclass
class ScriptDecl:
    """What a training script declares. ``problem`` says why it was not read (then the rest is
    empty)."""

    path: str
    problem: str | None = None
    #: the top-level packages the script imports (absolute imports) -> the line of the first
    packages: dict[str, int] = field(default_factory=dict)
    #: where the script or a repository module it imports (read, ``_Resolver.follow``) first
    #: imports TRL or Unsloth (``src/grpo.py:1``); None where none read does
    trl_import: str | None = None
    #: modules a text of the script or of a repository module it imports (read) runs with
    #: ``-m`` (a command line it writes) -> where (``src/duet/pipeline.py:678``)
    writes_modules: dict[str, str] = field(default_factory=dict)
    flags: dict[str, Flag] = field(default_factory=dict)  # dest -> flag
    argparse: bool = False  # it declares argparse options
    makes_parser: bool = False  # it builds its argparse parser itself (not one from elsewhere)
    allow_abbrev: bool = True  # argparse takes a unique prefix of an option
    lenient: bool = False  # parse_known_args: options it does not declare pass
    dynamic_flags: bool = False  # add_argument with computed names: more flags than these
    other_cli: str | None = None  # a command-line library it imports besides argparse (click…)
    model_by_name: bool | None = None  # every GRPOTrainer(...) call gets the model by name or path
    #: a model it loads with a device map over several GPUs: "spread" (a literal such map), "unknown"
    #: (a computed device_map), None (none, or one device): Trainer keeps n_gpu 1 for a model split
    #: with device_map (is_model_parallel), so no nn.DataParallel wraps it
    model_split: str | None = None
    trl_classes: tuple[str, ...] = ()  # TRL dataclasses it parses (ScriptArguments, GRPOConfig…)
    dataclasses: dict[str, DataClass] = field(default_factory=dict)  # its own parsed dataclasses
    unresolved: tuple[str, ...] = ()  # parsed classes it imports from where envdoctor cannot read
    config_subclasses: dict[str, DataClass] = field(default_factory=dict)
    config_calls: list[ConfigCall] = field(default_factory=list)
    files: tuple[str, ...] = ()  # the files read: the script, then the modules it imports
    #: the files read name something that reads a command line (a parser, argparse built
    #: elsewhere and called, sys.argv, a CLI library, Hydra): without it, none is read
    reads_command_line: bool = True
    #: every trainer it builds (``…Trainer(...)``) is a class of the repository that derives from
    #: no GRPOTrainer but from a known other base (transformers' Trainer): which, else None
    own_trainer: str | None = None
    own_grpo: str | None = None  # its GRPOTrainer is the repository's own class (_repo_grpo)
    #: its calls into TRL's trainer classes with keywords (the constructor, methods of the object
    #: it built): each keyword is checked against the TRL release that runs
    trl_calls: list[TrlCall] = field(default_factory=list)
    #: methods its repository classes deriving from a TRL trainer override (the script and the
    #: modules it imports, read)
    trl_overrides: list[TrlOverride] = field(default_factory=list)
    #: it builds no GRPOTrainer of TRL's itself and imports a trainer class of the repository's
    #: own that envdoctor could not read (``Qwen2VLGRPOTrainer (from open_r1_video.trainer)``)
    unread_trainer: str | None = None
    #: a trainer class it imports from trl that no TRL release has (``RankGRPOTrainer``): the
    #: installed trl is a modified copy, whose code the catalogue's TRL ranges do not describe
    trl_added: str | None = None
    #: packages it imports that may start vLLM in-process (``IN_PROCESS_VLLM``)
    in_process_imports: tuple[str, ...] = ()
    #: their loader calls that ask for vLLM: (where, value: True / False / None for unknown, the
    #: argparse dest it takes its value from or None)
    in_process_calls: list[tuple[str, bool | None, str | None]] = field(default_factory=list)
    #: their loader calls that do not pass the keyword (a literal, read): where, each leaving
    #: in-process vLLM off (the loaders' default, ``fast_inference=False``)
    in_process_defaults: list[str] = field(default_factory=list)
    #: those that spread a ``**mapping`` instead, which may pass it (not read): where
    in_process_spreads: list[str] = field(default_factory=list)
    #: the attention implementations its model loaders ask for (``from_pretrained(...,
    #: attn_implementation="flash_attention_2")``, here or in a module it imports): (where, value,
    #: conditional: one branch of an ``x if cond else y`` of literals, the literal's file:line),
    #: literal values only
    attn_requests: list[tuple[str, str, bool, str]] = field(default_factory=list)
    #: where the files read (the script and the repository modules it imports) hand a reference
    #: model to DeepSpeed themselves: ``prepare_deepspeed(self.ref_model) in trainer.py:437``
    ref_ds_prepares: tuple[str, ...] = ()
    #: where it reads the keys GRPOConfig takes to drop those the installed release lacks before
    #: building it (``signature(GRPOConfig.__init__) in train.py:289``), or None
    config_filter: str | None = None
    #: the keys that filter covers where it only tests named keys, else None (every key)
    config_filter_keys: tuple[str, ...] | None = None
    #: where its TrlParser / HfArgumentParser hands back the config keys no dataclass has
    #: instead of refusing them (``parse_args_and_config(return_remaining_strings=True) in
    #: train.py:94``; ``fail_with_unknown_args=False``, ``allow_extra_keys=True``), or None
    keeps_unknown_keys: str | None = None
    #: it builds a trainer of TRL's that derives from no GRPOTrainer in any release TRL's symbol
    #: history holds (``AsyncGRPOTrainer (trl.experimental)``) and no GRPOConfig: GRPO's checks
    #: in GRPOTrainer.__init__ and GRPOConfig.__post_init__ do not run
    trl_other_trainer: str | None = None
    #: where it builds TRL's GRPOTrainer or a class deriving from it (``GRPOTrainer(...) in
    #: train.py:40``): the evidence that the run is GRPO's, None when none was seen
    builds_grpo: str | None = None
    #: where a repository module it imports (read) builds TRL's GRPOTrainer or a class deriving
    #: from it (``GRPOTrainer(...) in src/train_lib.py:88``), when the script itself builds none
    grpo_in_module: str | None = None
    #: its ``@hydra.main(config_path=…, config_name=…)`` as written (None: not a literal), or None
    hydra_config: tuple[str | None, str | None] | None = None
    #: where the files read build a chat message (``{"role": …, "content": …}`` in prompts.py:30):
    #: the prompts are likely conversational
    chat_messages: str | None = None
    #: the config class the script builds for its trainer (``ConfigClass``), None when not seen
    config_class: ConfigClass | None = None
    #: where the files read build a vLLM engine that no ``use_vllm`` test guards (``LLM(...)
    #: in train.py:214``): the run generates with vLLM whatever its config says; None for none
    vllm_engine: str | None = None
    #: how the script's module-level code reaches a vLLM engine it builds itself (``LLM(...)``)
    #: and what it runs before on that path (``plan.engine_start``); None when none is reached
    engine_start: EngineStart | None = None
    #: where the files read name a vLLM server's start (``trl vllm-serve`` in a ``!`` cell line,
    #: a subprocess, a comment that says to run it first: ``train.py:12``); None for none
    server_start: str | None = None
    #: where the files read build a trainer class of any package (a class call named ``…Trainer``
    #: with keywords: ``Trainer(model=…)``, ``SFTTrainer(…)``); None where none is built
    builds_trainer: str | None = None
    #: names the files read assign onto a module they import (``_fsdp.FSDPModule = Stub``) as
    #: ``module:name`` -> where: a stub that stands in for what an older release of it lacks
    stubs: dict[str, str] = field(default_factory=dict)
    #: attribute name -> where the files read first assign it on an object (``model.
    #: warnings_issued = {}`` in train.py:264; ``setattr(model, "warnings_issued", …)``)
    attr_writes: dict[str, str] = field(default_factory=dict)
    #: where the files read replace TRL's VLLMClient calls (``_client_patched``), None for none
    client_patched: str | None = None
    #: the options a loader's ``device_map=args.<name>`` reads: (name, its text default or None);
    #: the launch line's value or that default decides whether the model is split
    split_flags: tuple[tuple[str, str | None], ...] = ()
    #: where the script or a module it imports reads a config file into plain data itself
    #: (``yaml.safe_load in train.py:19``), None when none does
    self_load: str | None = None
    #: the fields of the repository's dataclasses (with their repository bases) where the script
    #: or a module it imports reads the config file itself (``yaml.safe_load``): key -> what
    #: declares it
    self_loaded: dict[str, str] = field(default_factory=dict)
    #: the names its own code consumes (the files read): keywords it writes in calls to other
    #: consumers than TRL's config (Unsloth's loaders, PEFT, its own functions) and, where it
    #: reads a config file itself, the text keys it reads from mappings: key -> what says so
    consumed: dict[str, str] = field(default_factory=dict)
    #: keys of the config file it loads itself that it reads besides a TRL config keyword's
    #: value (``_own_reads``): key -> ``path:line``
    own_reads: dict[str, str] = field(default_factory=dict)

    @property
    def readable(self) -> bool:
        return self.problem is None

    @property
    def parses_dataclasses(self) -> bool:
        """Whether it hands dataclasses to HfArgumentParser / TrlParser."""
        return bool(self.trl_classes or self.dataclasses or self.unresolved)

    @property
    def closed_parses(self) -> tuple[str, ...] | None:
        """The TRL dataclasses it parses when every class it hands HfArgumentParser / TrlParser
        was read (the parser then refuses any other key); else None."""
        if not self.parses_dataclasses or self.unresolved or self.lenient or self.dynamic_flags:
            return None
        return self.trl_classes

    @property
    def closed_options(self) -> tuple[str, ...]:
        """Its option strings when argparse alone reads its command line and every flag was
        seen (argparse then refuses any other option); else ()."""
        if not self.makes_parser or self.parses_dataclasses or self.lenient or self.dynamic_flags:
            return ()
        return tuple(o for f in self.flags.values() for o in f.options)

    def keys(self) -> dict[str, str]:
        """Key -> what declares it: the fields of its own parsed dataclasses and GRPOConfig
        subclasses (TRL's classes are not its own: envdoctor knows their keys by release)."""
        out: dict[str, str] = {}
        for kind, classes in (
            ("GRPOConfig subclass", self.config_subclasses),
            ("dataclass", self.dataclasses),
        ):
            for cls in classes.values():
                for name in cls.fields:
                    out.setdefault(name, f"a field of {kind} {cls.name} ({cls.path}:{cls.line})")
        for name, said in self.self_loaded.items():
            out.setdefault(name, said)
        return out


# --------------------------------------------------------------------------------------------
# reading one file


def read_source(path: Path) -> tuple[bytes | None, str | None]:
    """The file's bytes, or why not: not there, not a regular file, too large, unreadable."""
    try:
        st = path.stat()  # follows symlinks; a loop raises
    except FileNotFoundError:
        return None, "no such file"
    except (OSError, RuntimeError, ValueError) as exc:
        return None, f"cannot be read ({type(exc).__name__}: {getattr(exc, 'strerror', None) or exc})"
    if stat.S_ISDIR(st.st_mode):
        return None, "is a directory"
    if not stat.S_ISREG(st.st_mode):
        return None, "is not a regular file"
    if st.st_size > MAX_FILE_BYTES:
        size, cap = (size_text(n, "MiB", step_down=True) for n in (st.st_size, MAX_FILE_BYTES))
        return None, f"is {size}, over the {cap} envdoctor reads"
    try:
        with path.open("rb") as fh:
            data = fh.read(MAX_FILE_BYTES + 1)
    except OSError as exc:
        return None, f"cannot be read ({exc.strerror or type(exc).__name__})"
    if len(data) > MAX_FILE_BYTES:
        return None, "grew past the size envdoctor reads"
    return data, None


def parse_source(data: bytes, label: str) -> tuple[ast.Module | None, str | None]:
    """The syntax tree, or why the text is not Python."""
    if b"\x00" in data:
        return None, "is not Python text (binary: a NUL byte)"
    try:
        return ast.parse(data, filename=label), None
    except SyntaxError as exc:
        cells = _without_magics(data)
        if cells is not None:  # a notebook's cells with their IPython magics (!pip, %%capture)
            try:
                return ast.parse(cells, filename=label), None
            except (SyntaxError, ValueError, UnicodeError, RecursionError, MemoryError):
                pass
        what = (exc.msg or "invalid syntax").splitlines()[0][:120]
        return None, f"is not valid Python ({what}, line {exc.lineno})"
    except (ValueError, UnicodeError) as exc:
        return None, f"is not Python text ({str(exc)[:120]})"
    except (RecursionError, MemoryError):
        return None, "is too deeply nested to parse"


#: a magic line: ``!cmd``, ``%magic``, or a bare ``pip install`` / ``conda install`` that IPython
#: runs as the %pip / %conda magic (automagic, on by default: Colab and course notebooks write it)
_MAGIC = re.compile(rb"^([ \t]*)(?:[!%]|(?:pip|conda)[ \t]+(?:install|uninstall)\b)")
#: cell magics whose cell runs its body as Python in the kernel (any other, ``%%bash`` or
#: ``%%writefile``, makes the rest of its cell something else)
_PYTHON_CELLS = (b"%%capture", b"%%time", b"%%timeit", b"%%prun", b"%%debug")
_CELL = re.compile(rb"^# ?(?:%%|In\[)")


def _without_magics(data: bytes) -> bytes | None:
    """A notebook's code cells as Python: each IPython magic line (``!pip install …``,
    ``%%capture``, ``%env``; never valid Python), with the lines its trailing backslash continues,
    as ``pass`` at its indentation, and the body of a cell that a non-Python cell magic
    (``%%bash``, ``%%writefile``) opens as blank lines up to the next cell marker (``# %%``), so
    lines keep their numbers; None when there is no magic, or such a cell with no marker to end it
    (where its body ends is unknown: the script is not read rather than read as less)."""
    lines = data.split(b"\n")
    marked = any(_CELL.match(line) for line in lines)
    found = False
    skip_cell = continued = False
    for i, line in enumerate(lines):
        if _CELL.match(line):
            skip_cell = continued = False
            continue
        if skip_cell or continued:
            continued = continued and line.rstrip(b"\r").endswith(b"\\")
            lines[i] = b""
            continue
        magic = _MAGIC.match(line)
        if not magic:
            continue
        found = True
        body = line.strip()
        if body.startswith(b"%%") and not body.startswith(_PYTHON_CELLS):
            if not marked:
                return None
            skip_cell = True
        continued = line.rstrip(b"\r").endswith(b"\\")
        lines[i] = magic.group(1) + b"pass"
    return b"\n".join(lines) if found else None


def _dotted(node: ast.AST) -> str | None:
    """``a.b.C`` for a name or attribute chain, else None."""
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
        return ".".join(reversed(parts))
    return None


def _literal(node: ast.AST) -> tuple[bool, Any]:
    """(True, value) for a literal a config may hold (str, number, bool, None, lists and
    mappings of them), else (False, None)."""
    try:
        value = ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, RecursionError, MemoryError):
        return False, None
    return _plain(value)


def _plain(value: Any, depth: int = 0) -> tuple[bool, Any]:
    if depth > 8:
        return False, None
    if value is None or isinstance(value, (bool, int, float, str)):
        return True, value
    if isinstance(value, (list, tuple)):
        items = [_plain(v, depth + 1) for v in value]
        return all(ok for ok, _ in items), [v for _, v in items]
    if isinstance(value, dict):
        pairs = [(k, _plain(v, depth + 1)) for k, v in value.items()]
        ok = all(isinstance(k, str) and good for k, (good, _) in pairs)
        return ok, {k: v for k, (_, v) in pairs} if ok else None
    return False, None


@dataclass
class SourceFacts:
    """What one file holds, before names are resolved across files."""

    path: str
    imports: dict[str, tuple[str, str, int]] = field(default_factory=dict)  # name -> (module, attr, level)
    modules: dict[str, str] = field(default_factory=dict)  # alias -> module (import trl as t)
    #: the top-level packages it imports (absolute imports) -> the first line that imports each
    packages: dict[str, int] = field(default_factory=dict)
    #: modules a string literal runs with ``-m`` (a command line the file writes) -> first line
    writes: dict[str, int] = field(default_factory=dict)
    classes: dict[str, DataClass] = field(default_factory=dict)  # own fields only
    flags: dict[str, Flag] = field(default_factory=dict)
    argparse: bool = False
    allow_abbrev: bool = True
    lenient: bool = False
    dynamic_flags: bool = False
    other_cli: str | None = None  # click, typer, fire… (OTHER_CLIS), or sys.argv read directly
    #: name -> whether every value bound to it is text (a literal, an f-string, an environment
    #: variable with a text default: ``POLICY = os.environ.get("POLICY", "Qwen/Qwen3-0.6B")``)
    texts: dict[str, bool] = field(default_factory=dict)
    model_by_name: list[bool | str | None] = field(default_factory=list)  # each GRPOTrainer(model=…);
    # a str: the attribute it reads (``args.model``), by name when an argparse flag of that dest
    # has a string default
    parsed: list[tuple[str, ...]] = field(default_factory=list)  # class refs, one tuple a parser
    calls: list[tuple[str, int, ast.Call]] = field(default_factory=list)  # candidate config calls
    #: ``name.method(k=…)`` calls with keywords: (name, method, line, call)
    method_calls: list[tuple[str, str, int, ast.Call]] = field(default_factory=list)
    bound: dict[int, str] = field(default_factory=dict)  # id(call) -> the name it is assigned to
    #: name -> (the function it is bound to a call of, line): ``cfg = vf.grpo_defaults(...)``
    made: dict[str, tuple[str, int]] = field(default_factory=dict)
    sets: dict[str, list[tuple[str, ast.expr]]] = field(default_factory=dict)  # name.attr = value
    #: attribute name -> first line it is assigned on any object (``model.warnings_issued = {}``,
    #: ``self.m.x = …``, ``setattr(model, "warnings_issued", {})``)
    attr_writes: dict[str, int] = field(default_factory=dict)
    #: TRL's VLLMClient methods it replaces (``VLLMClient.init_communicator = patched``,
    #: ``setattr(VLLMClient, "generate", …)``): (method, line); a class deriving from VLLMClient
    #: that it hands a trainer (``self.vllm_client = MyClient(…)``): (class, line)
    client_patches: list[tuple[str, int]] = field(default_factory=list)
    client_classes: dict[str, int] = field(default_factory=dict)  # class X(VLLMClient) -> line
    client_handed: list[tuple[str, int]] = field(default_factory=list)  # x.vllm_client = C(…)
    #: class-body fields with a text default (``device_map: str = field(default="auto")``)
    field_defaults: dict[str, str] = field(default_factory=dict)
    #: from_pretrained(<kw>=…) calls: the keyword's value; a call without it: None (the loader's
    #: default), or an empty ``ast.Starred`` where it spreads a ``**mapping`` (which may pass it)
    loaders: list[tuple[str, int, ast.expr | None]] = field(default_factory=list)
    #: each ``from_pretrained(device_map=…)``: (line, "spread" / "one" / "unknown": _device_map)
    device_maps: list[tuple[int, str]] = field(default_factory=list)
    #: each ``from_pretrained(attn_implementation=…)``: (line, the keyword's value)
    attn: list[tuple[int, ast.expr]] = field(default_factory=list)
    #: names assigned once in the file (``attn_impl = …``) -> the value; None: assigned again
    assigned: dict[str, ast.expr | None] = field(default_factory=dict)
    #: name -> the mapping bound to it once (``args = {"k": v}`` / ``dict(k=v)``), None when it
    #: is bound more than once or changed in place (``args["k"] = v``, ``args.update(…)``)
    mappings: dict[str, ast.Dict | ast.Call | None] = field(default_factory=dict)
    #: calls that hand a model to DeepSpeed themselves (``prepare_deepspeed(self.ref_model, …)``,
    #: ``deepspeed.initialize(model=…)``): (function, line, the model argument as written)
    ds_prepares: list[tuple[str, int, str]] = field(default_factory=list)
    #: name -> (line, dict display) of its first binding: the keys a ``**name`` spread hands a call
    #: at least, while nothing before the call removes one (``mappings`` is None once it changes)
    floors: dict[str, tuple[int, ast.Dict]] = field(default_factory=dict)
    #: name -> lines where a key may leave it: ``.pop()``, ``.clear()``, ``del name[k]``, a rebinding
    removals: dict[str, list[int]] = field(default_factory=dict)
    lines: list[str] = field(default_factory=list)  # the text's lines (a fix's edit is cut from them)
    #: where it reads the fields GRPOConfig takes (``signature(GRPOConfig.__init__)``, line)
    config_filters: list[tuple[str, int]] = field(default_factory=list)
    unknown_keys_kept: list[tuple[str, int]] = field(default_factory=list)  # (call, line)
    #: lines where it writes a chat message (a dict display with "role" and "content" keys)
    chat_messages: list[int] = field(default_factory=list)
    #: where it reads a config file into plain data itself (``FILE_LOADS``): (call, line)
    file_loads: list[tuple[str, int]] = field(default_factory=list)
    #: keyword -> (the function called, line): the keywords it writes in its calls (the first
    #: call of each), the TRL config and trainer classes' aside (``get_peft_model(
    #: use_gradient_checkpointing="unsloth")``): the names its own code hands other consumers
    keywords: dict[str, tuple[str, int]] = field(default_factory=dict)
    #: text keys it reads from a mapping (``cfg["gpu_memory_utilization"]``, ``cfg.get("lr")``):
    #: key -> line of the first read
    reads: dict[str, int] = field(default_factory=dict)
    #: text key -> every line that reads it from a mapping (``cfg["max_prompt_length"]``,
    #: ``cfg.get("lr")``), the first ``MAX_READS`` of each
    key_reads: dict[str, list[int]] = field(default_factory=dict)
    #: attribute -> (the name it is read from, line) of every ``name.attr`` read (``cfg.lr``), the
    #: first ``MAX_READS`` of each: a dataclass or namespace config read field by field
    attr_reads: dict[str, list[tuple[str, int]]] = field(default_factory=dict)
    #: the places it assigns with a text key (``generation_config["max_prompt_length"] = n``): a
    #: config file's value read there is not the one the script hands on
    written: list[ast.Subscript] = field(default_factory=list)
    #: the line of its first Hydra entry (``@hydra.main``, ``instantiate(...)``): 0 for none
    hydra: int = 0
    #: where it builds a vLLM engine (``LLM(...)``, ``AsyncLLMEngine.from_engine_args(...)``):
    #: (line, whether a test that reads ``use_vllm`` guards it: ``if self.use_vllm:``)
    vllm_engines: list[tuple[int, bool]] = field(default_factory=list)
    #: names bound to a read of GRPOConfig's fields (``sig = signature(GRPOConfig.__init__)
    #: .parameters``), the keys tested against them by name (``"kl_coef" in sig``), and whether
    #: any other use of them was seen (a filter over every key, or code envdoctor does not follow)
    filter_names: set[str] = field(default_factory=set)
    filter_tests: list[str] = field(default_factory=list)
    filter_other_use: bool = False
    #: its text names something that reads a command line (``COMMAND_LINE``)
    reads_command_line: bool = False
    #: name -> the place in the config file it reads that the name holds (``conf =
    #: yaml.safe_load(f)``: (); ``training_conf = conf["training"]``: ("training",)), None when
    #: it is bound to more than one; the Hydra entry's config argument is the file's root too
    sections: dict[str, tuple[str, ...] | None] = field(default_factory=dict)
    #: ``name = <expr>`` candidates for ``sections``, resolved after the walk (its order is not
    #: the file's)
    section_binds: list[tuple[str, ast.expr]] = field(default_factory=list)
    #: its functions that return what a config file load gives (``def load_config(p): with
    #: open(p) as f: return yaml.safe_load(f)``)
    load_functions: set[str] = field(default_factory=set)
    #: its Hydra entry's ``config_path`` and ``config_name`` as written (literal strings; None
    #: where not given or not a literal), or None for no ``@hydra.main``
    hydra_config: tuple[str | None, str | None] | None = None


#: calls that read the parameters or fields of a class: a script that reads GRPOConfig's keeps
#: only the keys the installed release takes (ledgerlab-openenv's train_finbench_grpo.py)
FIELD_READS = ("signature", "getfullargspec", "fields")
#: Hydra's entry points: a script that calls one builds its objects from the config's ``_target_``
HYDRA_CALLS = frozenset({"hydra.main", "hydra.utils.instantiate", "hydra.utils.call"})
#: calls that read a config file into plain data: a script that calls one reads its config itself
#: (into its own dataclass), not through TRL's parser
FILE_LOADS = frozenset(
    {
        "yaml.safe_load",
        "yaml.load",
        "yaml.full_load",
        "json.load",
        "OmegaConf.load",
        "tomllib.load",
        "toml.load",
    }
)

MAX_CALLS = 2000  # calls with keywords kept per file as config-call candidates
MAX_KEYS = 2000  # keywords and mapping reads kept per file
MAX_READS = 16  # lines kept per text key read
#: calls whose keywords go to TRL's config or trainer (not another consumer of the script's)
_NOT_CONSUMERS = frozenset(
    {CONFIG_CLASS, TRAINER_CLASS, "TrainingArguments", "UnslothGRPOConfig", "UnslothGRPOTrainer", "dict"}
)


def _is_dataclass_field(stmt: ast.stmt) -> str | None:
    if not (isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name)):
        return None
    ann = _dotted(stmt.annotation.value if isinstance(stmt.annotation, ast.Subscript) else stmt.annotation)
    if ann and ann.rsplit(".", 1)[-1] in ("ClassVar", "InitVar"):
        return None
    return stmt.target.id


def _flag(call: ast.Call) -> Flag | None | bool:
    """The flag an ``add_argument`` call declares; None for a positional; False when its names
    are not literal (``*names``)."""
    options: list[str] = []
    for arg in call.args:
        if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
            options.append(arg.value)
        else:
            return False
    kw = {k.arg: k.value for k in call.keywords if k.arg}
    spread = any(k.arg is None for k in call.keywords)  # **common: default and action unknown
    dashed = [o for o in options if o.startswith(("-", "+"))]
    if not dashed:
        return None  # a positional argument: not a --key
    dest_node = kw.get("dest")
    if isinstance(dest_node, ast.Constant) and isinstance(dest_node.value, str):
        dest = dest_node.value
    elif dest_node is not None:
        return False
    else:
        longs = [o for o in dashed if o.startswith("--")]
        dest = (longs or dashed)[0].lstrip("-+").replace("-", "_")
    action = kw.get("action")
    action_name: str | None = None
    if isinstance(action, ast.Constant) and isinstance(action.value, str):
        action_name = action.value
    elif action is not None:
        action_name = _dotted(action)
    switch = None  # the value a flag without a value gives, for the actions that take none
    if action_name in ("store_true", "store_false"):
        switch = action_name == "store_true"
    elif action_name and action_name.endswith("BooleanOptionalAction"):
        switch = True
        dashed += ["--no-" + o[2:] for o in dashed if o.startswith("--")]
    has_default, default = False, None
    if "default" in kw:
        has_default, default = _literal(kw["default"])
    elif spread:
        pass
    elif switch is not None:
        has_default, default = True, (action_name == "store_false")
        if action_name and action_name.endswith("BooleanOptionalAction"):
            default = None
    elif action is None:
        has_default, default = True, None  # argparse's default
    return Flag(
        dest=dest,
        options=tuple(dashed),
        line=call.lineno,
        has_default=has_default,
        default=default,
        switch=switch,
    )


def record(mod: SourceFacts, node: ast.AST) -> bool:
    """Record an import or a class definition; whether ``node`` was one."""
    if isinstance(node, ast.Import):
        for alias in node.names:
            first = alias.name.split(".")[0]
            mod.modules[alias.asname or first] = alias.name if alias.asname else first
            mod.packages.setdefault(first, node.lineno)
            if first in OTHER_CLIS:
                mod.other_cli = mod.other_cli or first
    elif isinstance(node, ast.ImportFrom):
        top = (node.module or "").split(".")[0]
        if not node.level and top:
            mod.packages.setdefault(top, node.lineno)
        if not node.level and top in OTHER_CLIS:
            mod.other_cli = mod.other_cli or top
        for alias in node.names:
            if alias.name != "*":
                mod.imports[alias.asname or alias.name] = (node.module or "", alias.name, node.level)
    elif isinstance(node, ast.ClassDef):
        fields = tuple(f for f in map(_is_dataclass_field, node.body) if f)
        bases = tuple(b for b in map(_dotted, node.bases) if b)
        methods = tuple(
            (n.name, n.lineno, signature_text(n))
            for n in node.body
            if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))
        )
        mod.classes.setdefault(
            node.name,
            DataClass(
                node.name, mod.path, node.lineno, fields, bases, methods, self_calls(node) if methods else ()
            ),
        )
    else:
        return False
    return True


_BUILTINS = frozenset(dir(builtins))  # print(parser) adds no option
#: calls that make an argparse parser or a part of one
_MAKES_PARSER = frozenset(
    {"ArgumentParser", "add_argument_group", "add_mutually_exclusive_group", "add_parser"}
)


def _chat_message(node: ast.Dict) -> bool:
    """A dict display with literal "role" and "content" keys (``{"role": "user", "content": q}``)."""
    keys = {k.value for k in node.keys if isinstance(k, ast.Constant) and isinstance(k.value, str)}
    return {"role", "content"} <= keys


#: a command line's ``-m pkg.module`` inside a string the file holds (a launcher it writes)
_WRITTEN_MODULE = re.compile(r"""(?:^|[\s"'(;&|])-m\s+([A-Za-z_]\w*(?:\.\w+)+)""")
#: a dotted module name alone (an argument list's item after ``-m``)
_MODULE_NAME = re.compile(r"[A-Za-z_]\w*(?:\.\w+)+")


def _argv_modules(node: ast.List | ast.Tuple, writes: dict[str, int]) -> None:
    """A command line written as an argument list (``["python", "-m", "verl.trainer.main_ppo",
    *overrides]`` handed to ``subprocess.run`` or ``os.execvp``): the module its ``-m`` runs."""
    elts = node.elts
    for flag, name in zip(elts, elts[1:], strict=False):
        if (
            isinstance(flag, ast.Constant)
            and flag.value == "-m"
            and isinstance(name, ast.Constant)
            and isinstance(name.value, str)
            and _MODULE_NAME.fullmatch(name.value)
        ):
            writes.setdefault(name.value, name.lineno)


def _scan(tree: ast.Module, path: str) -> SourceFacts:
    """Everything a training script declares (every node is looked at)."""
    mod = SourceFacts(path=path)
    functions: set[str] = set()
    parsers: set[str] = set()  # names bound to a parser or an argument group
    handed: list[tuple[ast.expr, set[str]]] = []  # calls and the plain names they are given
    rebound: list[tuple[str, str]] = []  # ``name = other`` (a module alias bound to another name)
    prose: set[int] = set()  # bare string statements (docstrings): text, not a command written
    for node in ast.walk(tree):
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant):
            prose.add(id(node.value))  # ast.walk reaches the statement before its string
        written = _attr_written(node)
        if written and (written in mod.attr_writes or len(mod.attr_writes) < MAX_KEYS):
            mod.attr_writes.setdefault(written, getattr(node, "lineno", 0))
        _note_client(mod, node)
        if isinstance(node, ast.ClassDef) and len(mod.field_defaults) < MAX_KEYS:
            _field_defaults(node, mod.field_defaults)
        read = _key_read(node)
        if read and (read in mod.key_reads or len(mod.key_reads) < MAX_KEYS):
            lines = mod.key_reads.setdefault(read, [])
            if len(lines) < MAX_READS:
                lines.append(getattr(node, "lineno", 0))
        elif (
            isinstance(node, ast.Attribute)
            and _attr_read(node)
            and (node.attr in mod.attr_reads or len(mod.attr_reads) < MAX_KEYS)
        ):
            reads = mod.attr_reads.setdefault(node.attr, [])
            if len(reads) < MAX_READS:
                reads.append((_dotted(node.value) or "", node.lineno))
        if (
            isinstance(node, ast.Constant)
            and isinstance(node.value, str)
            and "-m" in node.value
            and id(node) not in prose
        ):
            for m in _WRITTEN_MODULE.finditer(node.value[:2000]):
                if len(mod.writes) < MAX_CALLS:
                    mod.writes.setdefault(m.group(1), node.lineno)
        if isinstance(node, (ast.List, ast.Tuple)) and len(mod.writes) < MAX_CALLS:
            _argv_modules(node, mod.writes)
        if isinstance(node, ast.Dict) and len(mod.device_maps) < MAX_CALLS:  # loader kwargs built
            for key, value in zip(node.keys, node.values, strict=True):  # first: {"device_map": …}
                if isinstance(key, ast.Constant) and key.value == "device_map":
                    mod.device_maps.append((node.lineno, _device_map(value)))
        if record(mod, node):
            continue
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            functions.add(node.name)
            _note_config_function(mod, node)
        elif isinstance(node, ast.Call):
            scan_call(mod, node)
            names = {a.id for a in [*node.args, *(k.value for k in node.keywords)] if isinstance(a, ast.Name)}
            if names and len(handed) < MAX_CALLS:
                handed.append((node.func, names))
        elif isinstance(node, ast.AnnAssign) and node.value is not None:
            _note_mapping(mod, node.target, node.value)  # kwargs: dict[str, Any] = {...}
        elif isinstance(node, ast.Delete):
            for t in node.targets:
                name = t.value if isinstance(t, ast.Subscript) else t
                if isinstance(name, ast.Name):
                    mod.removals.setdefault(name.id, []).append(node.lineno)
        elif (
            isinstance(node, ast.Subscript)
            and isinstance(node.ctx, ast.Load)
            and isinstance(node.slice, ast.Constant)
            and isinstance(node.slice.value, str)
            and len(mod.reads) < MAX_KEYS
        ):
            mod.reads.setdefault(node.slice.value, node.lineno)  # cfg["gpu_memory_utilization"]
        elif (
            isinstance(node, ast.Subscript)
            and isinstance(node.ctx, ast.Store)
            and isinstance(node.slice, ast.Constant)
            and isinstance(node.slice.value, str)
            and len(mod.written) < MAX_KEYS
        ):
            mod.written.append(node)  # gen["max_prompt_length"] = computed
        elif isinstance(node, ast.Dict) and not mod.chat_messages and _chat_message(node):
            mod.chat_messages.append(node.lineno)
        elif isinstance(node, ast.Attribute) and node.attr == "argv" and _dotted(node.value) == "sys":
            mod.other_cli = mod.other_cli or "sys.argv"  # read by hand
        elif isinstance(node, ast.Assign) and len(node.targets) == 1:
            target = node.targets[0]
            _note_mapping(mod, target, node.value)
            if isinstance(target, ast.Name) and (target.id in mod.assigned or len(mod.assigned) < MAX_CALLS):
                mod.assigned[target.id] = None if target.id in mod.assigned else node.value
            if isinstance(target, ast.Name) and len(mod.section_binds) < MAX_CALLS:
                mod.section_binds.append((target.id, node.value))
            if isinstance(target, ast.Name) and (target.id in mod.texts or len(mod.texts) < MAX_CALLS):
                mod.texts[target.id] = mod.texts.get(target.id, True) and _is_text(node.value)
            if isinstance(target, ast.Name) and isinstance(node.value, ast.Name) and len(rebound) < MAX_CALLS:
                rebound.append((target.id, node.value.id))
            if isinstance(target, ast.Name) and _reads_config_fields(node.value):
                mod.filter_names.add(target.id)  # sig = inspect.signature(GRPOConfig.__init__).parameters
            if isinstance(target, ast.Name) and isinstance(node.value, ast.Call):
                mod.bound[id(node.value)] = target.id  # cfg = GRPOConfig(...)
                made = _dotted(node.value.func)
                if made and (target.id in mod.made or len(mod.made) < MAX_CALLS):
                    mod.made[target.id] = (made, node.lineno)
                if (_dotted(node.value.func) or "").rsplit(".", 1)[-1] in _MAKES_PARSER:
                    parsers.add(target.id)
            elif isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name):
                sets = mod.sets.setdefault(target.value.id, [])
                if len(sets) < MAX_CALLS:
                    sets.append((target.attr, node.value))  # cfg.gradient_checkpointing = ...
    _resolve_sections(mod)
    for alias, source in rebound:  # ``import trl as _trl; trl = _trl`` (a lazy import bound to a
        # global): the name is the module too, where nothing else binds it as one
        if source in mod.modules and alias not in mod.modules and alias not in mod.imports:
            mod.modules[alias] = mod.modules[source]
    if mod.config_filters:
        _filter_uses(tree, mod)
    for func, names in handed:  # a parser handed to code envdoctor does not read: more options
        own = isinstance(func, ast.Name) and (func.id in functions or func.id in _BUILTINS)
        if names & parsers and not own:
            mod.dynamic_flags = True
    return mod


#: calls that hand their first argument back as plain data or a typed value: a config section
#: passed through one is still that section (``OmegaConf.to_container(cfg.grpo)``, ``int(x)``)
_PASS_THROUGH = frozenset({"to_container", "to_object", "dict", "int", "float", "bool", "str", "deepcopy"})
#: methods of a mapping (or an OmegaConf node) that are not a key read
_MAPPING_METHODS = frozenset({"get", "items", "keys", "values", "pop", "update", "copy", "setdefault"})


def _is_load(mod: SourceFacts, node: ast.expr) -> bool:
    """Whether ``node`` is a call that reads a config file into data (``FILE_LOADS``, one of the
    file's functions that returns one, or a pass-through of either)."""
    if not isinstance(node, ast.Call):
        return False
    func = _dotted(node.func) or ""
    if func in FILE_LOADS or func in mod.load_functions:
        return True
    return func.rsplit(".", 1)[-1] in _PASS_THROUGH and bool(node.args) and _is_load(mod, node.args[0])


def _note_config_function(mod: SourceFacts, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
    """Record a function that returns a config file's data (``return yaml.safe_load(f)``, or a
    name bound to it), and the config argument of a Hydra entry (``@hydra.main(...) def
    main(cfg)``), which is the composed file's root."""
    for deco in node.decorator_list:
        func = _dotted(deco.func) if isinstance(deco, ast.Call) else _dotted(deco)
        if func and func.rsplit(".", 1)[-1] == "main" and "hydra" in func and node.args.args:
            mod.sections[node.args.args[0].arg] = ()
            said = {k.arg: k.value for k in deco.keywords} if isinstance(deco, ast.Call) else {}
            text = [
                v.value if isinstance(v, ast.Constant) and isinstance(v.value, str) else None
                for v in (said.get("config_path"), said.get("config_name"))
            ]
            mod.hydra_config = (text[0], text[1])
    loaded: set[str] = set()
    for sub in ast.walk(node):
        if isinstance(sub, ast.Assign) and len(sub.targets) == 1 and isinstance(sub.targets[0], ast.Name):
            if isinstance(sub.value, ast.Call) and (_dotted(sub.value.func) or "") in FILE_LOADS:
                loaded.add(sub.targets[0].id)
        elif isinstance(sub, ast.Return) and sub.value is not None:
            value = sub.value
            if (isinstance(value, ast.Call) and (_dotted(value.func) or "") in FILE_LOADS) or (
                isinstance(value, ast.Name) and value.id in loaded
            ):
                mod.load_functions.add(node.name)


def _attr_read(node: ast.AST) -> bool:
    """``name.attr`` read (``cfg.max_prompt_length``)."""
    return (
        isinstance(node, ast.Attribute)
        and isinstance(node.ctx, ast.Load)
        and isinstance(node.value, ast.Name)
    )


def _key_read(node: ast.AST) -> str | None:
    """The text key ``node`` reads from a mapping (``x["key"]``, ``x.get("key", …)``), or None."""
    if isinstance(node, ast.Subscript):
        key: Any = node.slice.value if isinstance(node.slice, ast.Constant) else None
        return key if isinstance(node.ctx, ast.Load) and isinstance(key, str) else None
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == "get"
        and node.args
        and isinstance(node.args[0], ast.Constant)
        and isinstance(node.args[0].value, str)
    ):
        return node.args[0].value
    return None


def section_path(mod: SourceFacts, node: ast.expr, depth: int = 0) -> tuple[str, ...] | None:
    """The place in the config file the script reads that ``node`` reads (``conf["training"]
    .get("num_generations")``: ("training", "num_generations")), None when it reads none."""
    if depth > 8:
        return None
    if isinstance(node, ast.Name):
        return mod.sections.get(node.id)
    if _is_load(mod, node):
        return ()
    if isinstance(node, ast.Subscript):
        key = node.slice
        if isinstance(key, ast.Constant) and isinstance(key.value, str):
            inner = section_path(mod, node.value, depth + 1)
            return None if inner is None else (*inner, key.value)
        return None
    if isinstance(node, ast.Attribute) and node.attr not in _MAPPING_METHODS:
        inner = section_path(mod, node.value, depth + 1)
        return None if inner is None else (*inner, node.attr)
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "get":
        got = node.args[0] if node.args else None
        if isinstance(got, ast.Constant) and isinstance(got.value, str):
            inner = section_path(mod, node.func.value, depth + 1)
            return None if inner is None else (*inner, got.value)
        return None
    if isinstance(node, ast.Call) and node.args and not node.keywords:
        func = _dotted(node.func) or ""
        if func.rsplit(".", 1)[-1] in _PASS_THROUGH:
            return section_path(mod, node.args[0], depth + 1)
    return None


def _resolve_sections(mod: SourceFacts) -> None:
    """``SourceFacts.sections`` from the bindings seen: a name bound to a config file load or to
    a key read of a name that holds one; a name bound to two different things holds neither."""
    binds: dict[str, list[ast.expr]] = {}
    for name, value in mod.section_binds:
        binds.setdefault(name, []).append(value)
    for _ in range(4):  # chains of bindings, in any order
        changed = False
        for name, values in binds.items():
            paths = {section_path(mod, v) for v in values}
            got = next(iter(paths)) if len(paths) == 1 else None
            if name in mod.sections and mod.sections[name] == () and got is None:
                continue  # the Hydra entry's argument
            if got is not None and mod.sections.get(name) != got:
                mod.sections[name] = got
                changed = True
        if not changed:
            break
    mod.section_binds = []


_MEMBER = (ast.In, ast.NotIn)


def _filter_uses(tree: ast.Module, mod: SourceFacts) -> None:
    """How a file that reads GRPOConfig's fields uses them (a second walk, for such files only): it
    filters named keys only where every use of the name the read is bound to tests a key written
    in the script (``if "kl_coef" in sig: kw["kl_coef"] = …``); any other use, or a read not bound
    to a name, filters every key (``filter_other_use``)."""
    if len(mod.config_filters) > len(mod.filter_names):
        mod.filter_other_use = True  # a read used in place
        return
    loads = dict.fromkeys(mod.filter_names, 0)
    tested = dict.fromkeys(mod.filter_names, 0)
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load) and node.id in loads:
            loads[node.id] += 1
        elif isinstance(node, ast.Compare) and len(node.ops) == 1 and isinstance(node.ops[0], _MEMBER):
            name, left = _tested_name(node.comparators[0]), node.left
            if name in tested and isinstance(left, ast.Constant) and isinstance(left.value, str):
                tested[name] += 1
                if len(mod.filter_tests) < MAX_CALLS:
                    mod.filter_tests.append(left.value)
    mod.filter_other_use = any(loads[n] != tested[n] for n in loads)


def _tested_name(node: ast.expr) -> str | None:
    """The name a membership test reads: ``sig`` in ``"k" in sig`` and ``"k" in sig.parameters``."""
    while isinstance(node, ast.Attribute):
        node = node.value
    return node.id if isinstance(node, ast.Name) else None


def _reads_config_fields(node: ast.expr) -> bool:
    """Whether ``node`` is a read of GRPOConfig's fields (``FIELD_READS``), maybe with an
    attribute after it (``inspect.signature(GRPOConfig.__init__).parameters``, ``.keys()``)."""
    while isinstance(node, (ast.Attribute, ast.Call)):
        if isinstance(node, ast.Call):
            func = _dotted(node.func) or ""
            if func.rsplit(".", 1)[-1] in FIELD_READS and node.args:
                read_of = _dotted(node.args[0]) or ""
                return CONFIG_CLASS in read_of.split(".")
            node = node.func
        else:
            node = node.value
    return False


def _dict_call_display(value: ast.expr) -> ast.Dict | None:
    """``dict(k=v, …)`` (keywords only) as the dict display it builds, each key placed where its
    keyword is written (a line edit cuts ``k=v,`` as it cuts ``"k": v,``); None for another
    expression."""
    if not (
        isinstance(value, ast.Call)
        and isinstance(value.func, ast.Name)
        and value.func.id == "dict"
        and not value.args
        and all(k.arg for k in value.keywords)
    ):
        return None
    keys: list[ast.expr | None] = []
    for k in value.keywords:
        key = ast.Constant(k.arg)
        key.lineno, key.col_offset = k.lineno, k.col_offset
        key.end_lineno, key.end_col_offset = k.lineno, k.col_offset + len(str(k.arg))
        keys.append(key)
    display = ast.Dict(keys=keys, values=[k.value for k in value.keywords])
    display.lineno, display.col_offset = value.lineno, value.col_offset
    display.end_lineno, display.end_col_offset = value.end_lineno, value.end_col_offset
    return display


def _note_mapping(mod: SourceFacts, target: ast.expr, value: ast.expr) -> None:
    """Record ``name = {…}`` / ``name = dict(…)`` (a ``**name`` spread of a config call reads it)
    and ``name[key] = …`` (the mapping then holds keys envdoctor does not follow)."""
    if isinstance(target, ast.Name):
        if target.id in mod.floors or target.id in mod.mappings:
            mod.removals.setdefault(target.id, []).append(value.lineno)  # bound again
        elif isinstance(value, ast.Dict) and len(mod.floors) < MAX_CALLS:
            mod.floors[target.id] = (value.lineno, value)
        elif len(mod.floors) < MAX_CALLS and (display := _dict_call_display(value)) is not None:
            mod.floors[target.id] = (value.lineno, display)  # kwargs = dict(k=v, …)
        is_map = isinstance(value, ast.Dict) or (
            isinstance(value, ast.Call) and isinstance(value.func, ast.Name) and value.func.id == "dict"
        )
        if target.id in mod.mappings or (is_map and len(mod.mappings) >= MAX_CALLS):
            mod.mappings[target.id] = None  # bound twice: which one reaches the call is not known
        elif is_map:
            mod.mappings[target.id] = value  # type: ignore[assignment]
    elif isinstance(target, ast.Subscript) and isinstance(target.value, ast.Name):
        mod.mappings[target.value.id] = None


def scan_call(mod: SourceFacts, node: ast.Call) -> None:
    func = _dotted(node.func)
    if func is None:
        return
    last = func.rsplit(".", 1)[-1]
    if last in ("update", "setdefault", "pop") and isinstance(node.func, ast.Attribute):
        owner = node.func.value
        if isinstance(owner, ast.Name) and owner.id in mod.mappings:
            mod.mappings[owner.id] = None  # changed in place
        if isinstance(owner, ast.Name) and last == "pop":
            mod.removals.setdefault(owner.id, []).append(node.lineno)
    if last in ("popitem", "clear") and isinstance(node.func, ast.Attribute):
        owner = node.func.value
        if isinstance(owner, ast.Name):
            mod.removals.setdefault(owner.id, []).append(node.lineno)
    if not mod.hydra and (
        func in HYDRA_CALLS
        or func.split(".")[0] in mod.imports
        and mod.imports[func.split(".")[0]][0].split(".")[0] == "hydra"
    ):
        mod.hydra = node.lineno
    if func in FILE_LOADS and len(mod.file_loads) < MAX_CALLS:
        mod.file_loads.append((func, node.lineno))
    if last not in _NOT_CONSUMERS and len(mod.keywords) < MAX_KEYS:
        for kw in node.keywords:
            if kw.arg:
                mod.keywords.setdefault(kw.arg, (func, node.lineno))
    if (
        last == "get"
        and isinstance(node.func, ast.Attribute)
        and node.args
        and isinstance(node.args[0], ast.Constant)
        and isinstance(node.args[0].value, str)
        and len(mod.reads) < MAX_KEYS
    ):
        mod.reads.setdefault(node.args[0].value, node.lineno)
    if last in FIELD_READS and node.args and len(mod.config_filters) < MAX_CALLS:
        read_of = _dotted(node.args[0])
        if read_of and CONFIG_CLASS in read_of.split("."):
            mod.config_filters.append((f"{func}({read_of})", node.lineno))
    if last == "add_argument" and "." in func:
        found = _flag(node)
        if found is False:
            mod.dynamic_flags = True
        elif isinstance(found, Flag):
            had = mod.flags.get(found.dest)
            if had is not None:  # the same dest in two parsers: both spellings count
                found = Flag(
                    had.dest,
                    tuple(dict.fromkeys(had.options + found.options)),
                    had.line,
                    had.has_default,
                    had.default,
                    had.switch,
                )
            mod.flags[found.dest] = found
    elif last == "ArgumentParser":
        mod.argparse = True
        for kw in node.keywords:
            if kw.arg == "allow_abbrev" and isinstance(kw.value, ast.Constant) and kw.value.value is False:
                mod.allow_abbrev = False
            elif kw.arg == "parents":
                mod.dynamic_flags = True  # options of other parsers, maybe from elsewhere
    elif (
        last in ("parse_known_args", "parse_known_intermixed_args")
        or (last == "parse_args" and (node.args or node.keywords))  # not the command line as given
        or _kw_true(node, "return_remaining_strings")
        or _kw_true(node, "allow_extra_keys")
        or _kw_false(node, "fail_with_unknown_args")
    ):
        mod.lenient = True  # keys it does not declare pass
        kept = next(
            (k for k in ("return_remaining_strings", "allow_extra_keys") if _kw_true(node, k)),
            "fail_with_unknown_args" if _kw_false(node, "fail_with_unknown_args") else None,
        )
        if kept and last in KEEPS_CONFIG_KEYS and len(mod.unknown_keys_kept) < MAX_CALLS:
            value = "False" if kept == "fail_with_unknown_args" else "True"
            mod.unknown_keys_kept.append((f"{last}({kept}={value})", node.lineno))
    elif last == TRAINER_CLASS:
        first = node.args[0] if node.args else None
        model = next((k.value for k in node.keywords if k.arg == "model"), first)
        mod.model_by_name.append(_model_by_name(model))
    elif last in PARSERS:
        target = (
            node.args[0]
            if node.args
            else next((k.value for k in node.keywords if k.arg == "dataclass_types"), None)
        )
        items = target.elts if isinstance(target, (ast.Tuple, ast.List)) else [target] if target else []
        mod.parsed.append(tuple(d for d in map(_dotted, items) if d))
    if node.keywords and len(mod.calls) < MAX_CALLS and last[:1].isupper():
        mod.calls.append((func, node.lineno, node))
    receiver = node.func.value if isinstance(node.func, ast.Attribute) else None
    if node.keywords and isinstance(receiver, ast.Name) and len(mod.method_calls) < MAX_CALLS:
        mod.method_calls.append((receiver.id, last, node.lineno, node))
    if (last in DS_PREPARE or func == "deepspeed.initialize") and len(mod.ds_prepares) < MAX_CALLS:
        model = (
            node.args[0] if node.args else next((k.value for k in node.keywords if k.arg == "model"), None)
        )
        mod.ds_prepares.append((func, node.lineno, (_dotted(model) if model is not None else None) or "?"))
    if last in ("from_pretrained", "dict") and len(mod.device_maps) < MAX_CALLS:  # dict(device_map=…)
        placed = next((kw.value for kw in node.keywords if kw.arg == "device_map"), None)
        if placed is not None:
            mod.device_maps.append((node.lineno, _device_map(placed)))
    if last == "from_pretrained" and len(mod.attn) < MAX_CALLS:
        asked = next((kw.value for kw in node.keywords if kw.arg == "attn_implementation"), None)
        if asked is not None:
            mod.attn.append((node.lineno, asked))
    if last == "from_pretrained" and len(mod.loaders) < MAX_CALLS:
        kws = set(IN_PROCESS_VLLM.values())
        given = [kw for kw in node.keywords if kw.arg in kws]
        for kw in given:
            mod.loaders.append((func, node.lineno, kw.value))
        if not given:  # the loader's default (False), unless a **mapping passes it (not evaluated)
            spread = next((kw.value for kw in node.keywords if kw.arg is None), None)
            mod.loaders.append((func, node.lineno, ast.Starred(value=spread) if spread else None))


def _attn_values(node: ast.expr | None, mod: SourceFacts) -> list[tuple[str, bool, int]]:
    """The literal values an ``attn_implementation=`` keyword gives: a string (unconditional), the
    string branches of ``a if cond else b`` (conditional), or a name the module assigns once to
    such an expression (``attn_impl = "flash_attention_2" if … else "eager"``), each with the line
    of the literal (where an edit goes); nothing for a value computed otherwise (a flag, a
    function's result: not a request envdoctor can read)."""
    if isinstance(node, ast.Name):
        node = mod.assigned.get(node.id)
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return [(node.value, False, node.lineno)]
    if isinstance(node, ast.IfExp):
        return [
            (b.value, True, b.lineno)
            for b in (node.body, node.orelse)
            if isinstance(b, ast.Constant) and isinstance(b.value, str)
        ]
    return []


#: accelerate's device maps that place a model's layers over every visible GPU (``sequential``
#: fills GPU 0 first: over several only where the model does not fit one, so it is not known)
SPREAD_MAPS = ("auto", "balanced", "balanced_low_0")


def _attr_written(node: ast.AST) -> str | None:
    """The attribute name a node writes onto an object: ``x.attr = …`` (any target: ``self.m.attr``),
    ``setattr(x, "attr", …)``; None otherwise."""
    if isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
        return node.attr
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id == "setattr"
        and len(node.args) == 3
        and isinstance(node.args[1], ast.Constant)
        and isinstance(node.args[1].value, str)
    ):
        return node.args[1].value
    return None


def _note_client(mod: SourceFacts, node: ast.AST) -> None:
    """Record where the file replaces TRL's VLLMClient calls (``SourceFacts.client_patches``)."""
    if len(mod.client_patches) + len(mod.client_handed) >= MAX_CALLS:
        return
    if isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
        owner = _dotted(node.value) or ""
        if owner.rsplit(".", 1)[-1] == "VLLMClient":
            mod.client_patches.append((node.attr, node.lineno))
    elif isinstance(node, ast.Call) and _dotted(node.func) == "setattr" and len(node.args) == 3:
        owner, name = _dotted(node.args[0]) or "", node.args[1]
        if owner.rsplit(".", 1)[-1] == "VLLMClient" and isinstance(name, ast.Constant):
            mod.client_patches.append((str(name.value), node.lineno))
    elif isinstance(node, ast.ClassDef) and any(
        (_dotted(b) or "").rsplit(".", 1)[-1] == "VLLMClient" for b in node.bases
    ):
        mod.client_classes.setdefault(node.name, node.lineno)
    elif isinstance(node, ast.Assign) and isinstance(node.value, ast.Call):
        made = (_dotted(node.value.func) or "").rsplit(".", 1)[-1]
        for target in node.targets:
            if isinstance(target, ast.Attribute) and target.attr == "vllm_client" and made:
                mod.client_handed.append((made, node.lineno))


def _flag_default(name: str, mods: list[SourceFacts]) -> str | None:
    """The text default of the command-line option ``name`` of the files read: an argparse
    flag's, else a dataclass field's of that name (HfArgumentParser); None when not known."""
    for mod in mods:
        flag = mod.flags.get(name)
        if flag is not None:
            return flag.default if isinstance(flag.default, str) else None
    return next((mod.field_defaults[name] for mod in mods if name in mod.field_defaults), None)


def _field_defaults(node: ast.ClassDef, out: dict[str, str]) -> None:
    """The text defaults of a class body's annotated fields (``x: str = "auto"``, ``x: str =
    field(default="auto")``) into ``out``."""
    for stmt in node.body:
        if not (isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name) and stmt.value):
            continue
        value: ast.expr | None = stmt.value
        if isinstance(value, ast.Call) and (_dotted(value.func) or "").rsplit(".", 1)[-1] == "field":
            value = next((k.value for k in value.keywords if k.arg == "default"), None)
        if isinstance(value, ast.Constant) and isinstance(value.value, str):
            out.setdefault(stmt.target.id, value.value)


def _client_patched(mods: list[SourceFacts]) -> str | None:
    """Where the files read replace TRL's VLLMClient calls: methods assigned onto it, or a
    class deriving from it that they hand a trainer as its ``vllm_client``; None for none."""
    for mod in mods:
        if mod.client_patches:
            names = ", ".join(dict.fromkeys(m for m, _ in mod.client_patches))
            return f"VLLMClient.{{{names}}} replaced in {mod.path}:{mod.client_patches[0][1]}"
    classes = {name for mod in mods for name in mod.client_classes}
    for mod in mods:
        for made, line in mod.client_handed:
            if made in classes:
                return f"vllm_client = {made}(…) (a VLLMClient subclass) in {mod.path}:{line}"
    return None


def _device_map(node: ast.expr) -> str:
    """A ``device_map=`` value: "spread" (a map that places the model over the visible GPUs),
    "one" (a single device, or a dict of one), "unknown" (computed: a name, a call, a branch)."""
    if isinstance(node, ast.Constant):
        if node.value is None:
            return "one"
        if node.value == "sequential":
            return "unknown"
        return "spread" if node.value in SPREAD_MAPS else "one"
    if isinstance(node, ast.Dict) and all(isinstance(v, ast.Constant) for v in node.values):
        devices = {v.value for v in node.values if isinstance(v, ast.Constant)} - {"cpu", "disk"}
        return "spread" if len(devices) > 1 else "one"
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
        return f"flag:{node.attr}"  # args.device_map: the flag's value (``ScriptDecl.split_flags``)
    return "unknown"


def _model_by_name(node: ast.expr | None) -> bool | str | None:
    """Whether a ``GRPOTrainer(model=…)`` argument is a name or path (a string, or
    ``args.model_name_or_path``) rather than a model object (a call); None: not known; an
    attribute's name (``args.model``) to look up among the argparse flags."""
    if isinstance(node, ast.Constant):
        return isinstance(node.value, str)
    if isinstance(node, (ast.Attribute, ast.Name)):
        name = node.attr if isinstance(node, ast.Attribute) else node.id
        if name in ("model_name_or_path", "model_name", "model_id"):
            return True
        return name if isinstance(node, ast.Attribute) else f"${name}"  # $NAME: a name bound to text?
    if isinstance(node, ast.JoinedStr):
        return True
    return False if isinstance(node, ast.Call) else None


def _is_text(node: ast.expr) -> bool:
    """Whether an expression is text: a string literal, an f-string, ``os.environ.get(k, "…")`` /
    ``os.getenv(k, "…")`` / ``os.environ[k]``, text joined with ``+``."""
    if isinstance(node, ast.Constant):
        return isinstance(node.value, str)
    if isinstance(node, ast.JoinedStr):
        return True
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        return _is_text(node.left) or _is_text(node.right)
    if isinstance(node, ast.Subscript):
        return _dotted(node.value) == "os.environ"
    if isinstance(node, ast.Call) and _dotted(node.func) in ("os.environ.get", "os.getenv", "getenv"):
        default = node.args[1] if len(node.args) > 1 else None
        return default is not None and _is_text(default)
    return False


def _all_known(
    found: list[bool | str | None], flags: dict[str, Flag], texts: dict[str, bool] | None = None
) -> bool | None:
    """All of ``found`` when each is known (and there is one), else None; ``args.<dest>`` is a
    name when the flag of that dest has a string default, ``$NAME`` when every value the file
    binds to NAME is text (``texts``)."""
    texts = texts or {}
    known = [
        f
        if not isinstance(f, str)
        else (texts.get(f[1:]) or None)
        if f.startswith("$")
        else (True if f in flags and isinstance(flags[f].default, str) else None)
        for f in found
    ]
    return all(known) if known and None not in known else None


def _kw_false(node: ast.Call, name: str) -> bool:
    return any(
        k.arg == name and isinstance(k.value, ast.Constant) and k.value.value is False for k in node.keywords
    )


def _kw_true(node: ast.Call, name: str) -> bool:
    return any(
        k.arg == name and isinstance(k.value, ast.Constant) and k.value.value is True for k in node.keywords
    )


#: what reads a command line, in any of its forms (a parser built elsewhere and called, sys.argv,
#: the CLI libraries, Hydra, OmegaConf's from_cli): a file with none of them reads none
COMMAND_LINE = re.compile(
    rb"parse_(?:known_|intermixed_)?args|argv|ArgumentParser|TrlParser|hydra|[Ff]ire\b|typer|click|tyro"
    rb"|docopt|absl|from_cli|jsonargparse|simple_parsing|parse_args_into_dataclasses"
)


def _load(path: Path, label: str, data: bytes | None = None) -> tuple[SourceFacts | None, str | None]:
    problem = None
    if data is None:
        data, problem = read_source(path)
    if data is None:
        return None, problem
    tree, problem = parse_source(data, label)
    if tree is None:
        return None, problem
    try:
        mod = _scan(tree, label)
    except (RecursionError, MemoryError):
        return None, "is too deeply nested to read"
    mod.lines = data.decode("utf-8", errors="replace").splitlines()
    mod.reads_command_line = COMMAND_LINE.search(data) is not None
    if b"vllm" in data:  # only a file that names vLLM can build its engine
        mod.vllm_engines = _vllm_engines(tree)
    return mod, None


#: an import line's top-level package; the dotted name is one class run (``[\w.]*``, then the
#: top-level name is split off): ``\w*[\w.]*`` backtracked quadratically on a long word line
_TEXT_IMPORT = re.compile(r"^\s*(?:from\s+([A-Za-z_][\w.]*)\s+import\b|import\s+([A-Za-z_]\w*))")


def _text_facts(path: Path, label: str) -> SourceFacts | None:
    """A repository module the running Python cannot parse (a newer grammar: an f-string that
    holds a backslash, Python 3.12's PEP 701), read as text for what text alone says: the
    packages its lines import and the ``-m`` modules its strings run; nothing else of it is
    read."""
    data, _ = read_source(path)
    if data is None:
        return None
    mod = SourceFacts(path=label)
    mod.lines = data.decode("utf-8", errors="replace").splitlines()
    for number, line in enumerate(mod.lines, 1):
        found = _TEXT_IMPORT.match(line)
        if found:
            mod.packages.setdefault((found.group(1) or found.group(2)).split(".")[0], number)
        if "-m" in line and len(mod.writes) < MAX_CALLS:
            for m in _WRITTEN_MODULE.finditer(line):
                mod.writes.setdefault(m.group(1), number)
    return mod


#: vLLM's engine classes: calling one (or its ``from_engine_args``) starts an engine that generates
VLLM_ENGINES = frozenset({"LLM", "LLMEngine", "AsyncLLMEngine", "AsyncLLM"})


def _vllm_engines(tree: ast.Module) -> list[tuple[int, bool]]:
    """Where ``tree`` builds a vLLM engine, each with whether an ``if`` whose test reads
    ``use_vllm`` (``if self.use_vllm:``, ``if args.use_vllm:``) guards it: such a build follows
    the run's ``use_vllm`` (R1-V's trainers hold one under ``if self.use_vllm:`` and generate with
    HF's ``generate`` otherwise); ``if is_vllm_available():`` guards nothing of the config's."""
    classes: set[str] = set()  # names bound to an engine class by ``from vllm import LLM``
    modules: set[str] = set()  # names bound to vllm or one of its modules
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and not node.level and _top(node.module) == "vllm":
            classes |= {a.asname or a.name for a in node.names if a.name in VLLM_ENGINES}
        elif isinstance(node, ast.Import):
            heads = [(a, a.name.split(".")[0]) for a in node.names]
            modules |= {a.asname or head for a, head in heads if head == "vllm"}
    if not classes and not modules:
        return []
    out: list[tuple[int, bool]] = []

    def engine(call: ast.Call) -> bool:
        parts = (_dotted(call.func) or "").split(".")
        if parts[-1] == "from_engine_args":
            parts = parts[:-1]
        if len(parts) == 1:
            return parts[0] in classes
        return parts[0] in modules and parts[-1] in VLLM_ENGINES

    def visit(node: ast.AST, guarded: bool) -> None:
        if isinstance(node, (ast.If, ast.IfExp)) and "use_vllm" in ast.dump(node.test).lower():
            visit(node.test, guarded)
            for child in [*_as_list(node.body), *_as_list(node.orelse)]:
                visit(child, True)
            return
        if isinstance(node, ast.Call) and engine(node) and len(out) < MAX_CALLS:
            out.append((node.lineno, guarded))
        for child in ast.iter_child_nodes(node):
            visit(child, guarded)

    try:
        visit(tree, False)
    except RecursionError:  # too deep to walk: it imports an engine class, so say it may build one
        return [(0, False)]
    return out


def _top(module: str | None) -> str:
    return (module or "").split(".")[0]


def _as_list(part: Any) -> list[ast.AST]:
    return list(part) if isinstance(part, list) else [part]


# --------------------------------------------------------------------------------------------
# one script and the repository modules it imports


class _Resolver:
    """Names of a script resolved to TRL's classes or to classes of the repository's files."""

    def __init__(self, script: Path, main: SourceFacts, edited: dict[str, str] | None = None) -> None:
        self.script = script
        self.main = main
        self.edited = edited or {}  # normalised label -> text as `envdoctor fix` edited it
        self.roots = _import_roots(script)
        self.loaded: dict[Path, SourceFacts | None] = {}
        self.files: list[str] = [main.path]
        self.bytes = 0  # read of repository modules so far (MAX_FOLLOWED_BYTES)

    def module(self, dotted: str, level: int, home: Path) -> SourceFacts | None:
        """A repository module by its import name (relative to ``home``'s folder when ``level``)."""
        found = self.locate(dotted, level, home)
        return None if found is None else self._get(found)

    def locate(self, dotted: str, level: int, home: Path) -> Path | None:
        """The file of a repository module by its import name, not read."""
        if level:
            base = home.parent
            for _ in range(level - 1):
                base = base.parent
            bases = [base]
        elif _top(dotted) in sys.stdlib_module_names:
            # the standard library's name: a file of that name shadows it only from the script's
            # own folder (sys.path[0]), never from a folder above it (a stray /tmp/os.py)
            bases = self.roots[:1]
        else:
            bases = list(self.roots)
        parts = [p for p in dotted.split(".") if p]
        for base in bases:
            for candidate in (
                base.joinpath(*parts).with_suffix(".py") if parts else None,
                base.joinpath(*parts, "__init__.py"),
            ):
                if candidate is not None and candidate.is_file():
                    return candidate
        return None

    def tree(self, path: Path) -> tuple[ast.Module, str] | None:
        """A repository file's syntax tree and label (as ``envdoctor fix`` edited it), within the
        bounds of the modules followed; None when not read."""
        if len(self.loaded) >= MAX_IMPORTED_FILES:
            return None
        label = _label(path)
        text = self.edited.get(os.path.normpath(label))
        data, _ = (text.encode("utf-8"), None) if text is not None else read_source(path)
        if data is None:
            return None
        tree, _ = parse_source(data, label)
        return None if tree is None else (tree, label)

    def _get(self, path: Path) -> SourceFacts | None:
        key = path.resolve()
        if key not in self.loaded:
            if len(self.loaded) >= MAX_IMPORTED_FILES:
                return None
            try:
                size = path.stat().st_size
            except OSError:
                size = 0
            if self.bytes + size > MAX_FOLLOWED_BYTES:
                return None
            self.bytes += size
            text = self.edited.get(os.path.normpath(_label(path)))
            mod, problem = _load(path, _label(path), None if text is None else text.encode("utf-8"))
            if mod is None and problem and "not valid Python" in problem:
                mod = _text_facts(path, _label(path))
            self.loaded[key] = mod
            if mod is not None:
                self.files.append(mod.path)
        return self.loaded[key]

    def follow(self) -> list[SourceFacts]:
        """The repository modules the script imports, and theirs, breadth first, read (never
        imported or run) up to ``MAX_IMPORT_DEPTH`` levels, ``MAX_IMPORTED_FILES`` files and
        ``MAX_FOLLOWED_BYTES``: what they establish (a loader that starts vLLM in-process, a
        library imported for its patches) is the run's wherever it is written."""
        out: list[SourceFacts] = []
        seen = {id(self.main)}
        queue: list[tuple[SourceFacts, Path, int]] = [(self.main, self.script, 0)]
        while queue:
            mod, home, depth = queue.pop(0)
            if depth >= MAX_IMPORT_DEPTH:
                continue
            for dotted, level in _imported_names(mod):
                found = self.module(dotted, level, home)
                if found is None or id(found) in seen:
                    continue
                seen.add(id(found))
                out.append(found)
                queue.append((found, Path(found.path), depth + 1))
        return out

    def resolve(
        self, ref: str, mod: SourceFacts, home: Path, depth: int = 0, local: bool = True
    ) -> tuple[str, Any]:
        """("trl", name) / ("own", (DataClass, module, its path)) / ("unknown", ref).
        ``local=False``: not a class of ``mod`` itself (``class GRPOConfig(GRPOConfig)``)."""
        if depth > MAX_IMPORT_DEPTH:
            return "unknown", ref
        head, _, rest = ref.partition(".")
        if not rest:
            if local and head in mod.classes:
                return "own", (mod.classes[head], mod, home)
            if head not in mod.imports:
                return "unknown", ref
            source, attr, level = mod.imports[head]
            if not level and source.split(".")[0] == "trl":
                return "trl", attr
            found = self.module(source, level, home)
            if found is not None:
                return self.resolve(attr, found, Path(found.path), depth + 1)
            return "unknown", ref
        *middle, name = rest.split(".")
        if head in mod.modules:
            module, level = mod.modules[head], 0
        elif head in mod.imports:  # from pkg import module; module.Class
            source, attr, level = mod.imports[head]
            module = f"{source}.{attr}" if source else attr
        else:
            return "unknown", ref
        if not level and module.split(".")[0] == "trl":
            return "trl", name
        found = self.module(".".join([module, *middle]), level, home)
        if found is not None:
            return self.resolve(name, found, Path(found.path), depth + 1)
        return "unknown", ref


def _imported_names(mod: SourceFacts) -> list[tuple[str, int]]:
    """The modules ``mod`` imports as (dotted name, relative level): ``import a.b``, ``from a
    import b`` (``a``, and ``a.b`` where b is a submodule), ``from . import b``; not TRL's."""
    names: list[tuple[str, int]] = [(m, 0) for m in mod.modules.values()]
    for source, attr, level in mod.imports.values():
        if source:
            names.append((source, level))
        if attr and attr != "*":
            names.append((f"{source}.{attr}" if source else attr, level))
    return [(n, lvl) for n, lvl in dict.fromkeys(names) if lvl or n.split(".")[0] != "trl"]


def _label(path: Path) -> str:
    """The path as the report shows it: relative to the working folder when under it."""
    try:
        return str(path.resolve().relative_to(Path.cwd().resolve()))
    except (ValueError, OSError, RuntimeError):
        return str(path)


def _import_roots(script: Path) -> list[Path]:
    """Where the script's absolute imports of repository modules are looked for: its folder, the
    folders above it up to the repository root (a .git, pyproject.toml or setup.py), and the
    root's src/."""
    try:
        here = script.resolve().parent
    except (OSError, RuntimeError):
        return []
    roots = [here]
    for parent in list(here.parents)[:5]:
        roots.append(parent)
        if any((parent / m).exists() for m in (".git", "pyproject.toml", "setup.py", "setup.cfg")):
            break
    roots += [r / "src" for r in roots if (r / "src").is_dir()]
    return roots


#: bases that add no field
_NO_FIELDS = frozenset({"object", "ABC", "Generic", "Protocol", "NamedTuple", "Enum"})


def _fields(
    cls: DataClass, mod: SourceFacts, home: Path, res: _Resolver, depth: int = 0
) -> tuple[tuple[str, ...], list[str], list[str]]:
    """A repository class's fields with those of its repository bases; the names of its TRL
    bases; the bases envdoctor cannot read (their fields are unknown)."""
    fields, trl, unknown = list(cls.fields), list[str](), list[str]()
    if depth > 6:
        return tuple(fields), trl, [cls.name]
    for base in cls.bases:
        kind, found = res.resolve(base, mod, home, local=base != cls.name)
        if kind == "own" and found[0] is not cls:
            more, more_trl, more_unknown = _fields(found[0], found[1], found[2], res, depth + 1)
            fields += [f for f in more if f not in fields]
            trl += more_trl
            unknown += more_unknown
        elif kind == "trl":
            trl.append(found)
        elif base.rsplit(".", 1)[-1] not in _NO_FIELDS:
            unknown.append(f"{base} (a base of {cls.name})")
    return tuple(fields), trl, unknown


def _is_config(cls: DataClass, mod: SourceFacts, home: Path, res: _Resolver, depth: int = 0) -> bool:
    """Whether a class descends from TRL's GRPOConfig."""
    if depth > 6:
        return False
    for base in cls.bases:
        kind, found = res.resolve(base, mod, home, local=base != cls.name)
        if kind == "trl" and found == CONFIG_CLASS:
            return True
        if kind == "own" and found[0] is not cls and _is_config(found[0], found[1], found[2], res, depth + 1):
            return True
    return False


def read_script(
    path: str | os.PathLike[str], text: str | None = None, edited: dict[str, str] | None = None
) -> ScriptDecl:
    """What the training script at ``path`` declares (see the module's docstring); never raises
    for what the file holds: ``ScriptDecl.problem`` says why it was not read. ``text``: the
    script's text as ``envdoctor fix`` edited it in memory; ``edited``: the texts of other files
    it edited (normalised path -> text): a module the script imports is read from there."""
    script = Path(path)
    label = str(path)
    main, problem = _load(script, label, None if text is None else text.encode("utf-8"))
    if main is None:
        return ScriptDecl(path=label, problem=f"{label} {problem}")
    res = _Resolver(script, main, edited)
    own_grpo = _own_grpo(main, script, res)
    decl = ScriptDecl(
        path=label,
        flags=dict(main.flags),
        argparse=main.argparse or bool(main.flags),
        makes_parser=main.argparse,
        allow_abbrev=main.allow_abbrev,
        lenient=main.lenient,
        dynamic_flags=main.dynamic_flags,
        other_cli=main.other_cli,
        model_by_name=_all_known(main.model_by_name, main.flags, main.texts),
        packages=dict(main.packages),
    )
    trl_classes: list[str] = []
    unresolved: list[str] = []
    for ref in (r for group in main.parsed for r in group):
        kind, found = res.resolve(ref, main, script)
        if kind == "trl":
            trl_classes.append(found)
        elif kind == "own":
            cls, mod, home = found
            fields, bases_trl, bases_unknown = _fields(cls, mod, home, res)
            own = DataClass(cls.name, cls.path, cls.line, fields, cls.bases)
            if _is_config(cls, mod, home, res):
                decl.config_subclasses.setdefault(cls.name, own)
            else:
                decl.dataclasses.setdefault(cls.name, own)
            trl_classes += bases_trl
            unresolved += bases_unknown
        else:
            unresolved.append(ref)
    for name, cls in main.classes.items():  # subclasses the script defines, parsed or not
        if name not in decl.config_subclasses and _is_config(cls, main, script, res):
            fields = _fields(cls, main, script, res)[0]
            decl.config_subclasses[name] = DataClass(name, cls.path, cls.line, fields, cls.bases)
    decl.trl_classes = tuple(dict.fromkeys(trl_classes))
    decl.unresolved = tuple(dict.fromkeys(unresolved))
    decl.config_calls = _config_calls(main, script, res, decl)
    targets = _trl_targets(script) if main.hydra else frozenset()
    decl.config_class = _config_class(main, script, res, decl, targets)
    decl.own_trainer = _own_trainer(main, script, res)
    decl.unread_trainer = None if decl.own_trainer else _unread_trainer(main, script, res)
    decl.trl_added = next((name for name in main.imports if _trl_added(name, main)), None)
    hydra_trainer = main.hydra and TRAINER_CLASS not in targets  # Hydra builds it from a `_target_`
    if hydra_trainer and not (decl.own_trainer or decl.unread_trainer or main.model_by_name):
        decl.unread_trainer = f"the class a Hydra `_target_` names ({main.path}:{main.hydra})"
    decl.trl_calls = _trl_calls(main, script, res)
    followed = res.follow()  # after the names above are resolved: they come first in the bounds
    decl.trl_import = next(
        (
            f"{mod.path}:{mod.packages[name]}"
            for mod in [main, *followed]
            for name in TRL_USERS
            if name in mod.packages
        ),
        None,
    )
    if decl.trl_import is None and not own_grpo and not main.model_by_name:
        own_grpo = _defined_grpo([main, *followed], res)  # built through a factory of its own
    if own_grpo and decl.trl_import is None:
        # its GRPOTrainer(...) calls are the repository's own class and nothing it reads imports
        # TRL: a GRPO loop of its own, no call of TRL's trainer
        main.model_by_name = []
        decl.model_by_name, decl.unread_trainer = None, None
        decl.own_grpo = decl.own_trainer = own_grpo
    for mod in [main, *followed]:
        for name, line in mod.writes.items():
            decl.writes_modules.setdefault(name, f"{mod.path}:{line}")
    decl.ref_ds_prepares = tuple(
        f"{func}({arg}) in {mod.path}:{line}"
        for mod in [main, *(m for m in res.loaded.values() if m is not None and m is not main)]
        for func, line, arg in mod.ds_prepares
        if "ref" in arg.rsplit(".", 1)[-1].lower()
    )
    decl.trl_overrides = _trl_overrides(main, script, res)
    decl.trl_other_trainer = None if decl.config_calls else _trl_other_trainer(main, script, res)
    decl.builds_grpo = _builds_grpo(main, script, res, targets)
    decl.grpo_in_module = None if decl.builds_grpo else _grpo_in_module(followed, res)
    if decl.grpo_in_module and not decl.config_calls:
        # the module that builds the trainer builds its config too (``GRPOConfig(**kwargs)`` in
        # pipeline/training/grpo_runner.py of master-thesis-code): its calls are the run's
        home = decl.grpo_in_module.rsplit(" in ", 1)[-1].rsplit(":", 1)[0]
        builder = next((m for m in followed if m.path == home), None)
        if builder is not None:
            decl.config_calls = _config_calls(builder, Path(builder.path), res, decl)
    decl.hydra_config = main.hydra_config
    decl.config_filter = next(
        (
            f"{read} in {mod.path}:{line}"
            for mod in [main, *(m for m in res.loaded.values() if m is not None and m is not main)]
            for read, line in mod.config_filters
        ),
        None,
    )
    filtering = [
        mod
        for mod in [main, *(m for m in res.loaded.values() if m is not None and m is not main)]
        if mod.config_filters
    ]
    if filtering and not any(mod.filter_other_use for mod in filtering):
        decl.config_filter_keys = tuple(dict.fromkeys(k for mod in filtering for k in mod.filter_tests))
    decl.keeps_unknown_keys = next(
        (f"{call} in {main.path}:{line}" for call, line in main.unknown_keys_kept), None
    )
    _in_process(main, decl, followed)
    decl.attn_requests = [
        (f"from_pretrained(attn_implementation=…) in {mod.path}:{line}", value, cond, f"{mod.path}:{at}")
        for mod in [main, *followed]
        for line, node in mod.attn
        for value, cond, at in _attn_values(node, mod)
    ]
    kinds = {kind for mod in [main, *followed] for _, kind in mod.device_maps}
    flagged = sorted(k[5:] for k in kinds if k.startswith("flag:"))
    decl.model_split = "spread" if "spread" in kinds else "unknown" if "unknown" in kinds or flagged else None
    decl.split_flags = tuple((name, _flag_default(name, [main, *followed])) for name in flagged)
    decl.self_loaded = _self_loaded(main, script, res, followed)
    decl.self_load = next(
        (f"{call} in {m.path}:{line}" for m in [main, *followed] for call, line in m.file_loads), None
    )
    decl.consumed = _consumed(main, followed, decl)
    decl.own_reads = _own_reads([main, *followed], decl)
    decl.files = tuple(dict.fromkeys(res.files))
    decl.reads_command_line = any(m.reads_command_line for m in [main, *res.loaded.values()] if m is not None)
    decl.chat_messages = next(
        (f"{mod.path}:{mod.chat_messages[0]}" for mod in [main, *followed] if mod.chat_messages), None
    )
    decl.vllm_engine = next(
        (
            f"{mod.path}:{line}"
            for mod in [main, *followed]
            for line, guarded in mod.vllm_engines
            if not guarded
        ),
        None,
    )
    if any(mod.vllm_engines for mod in [main, *followed]):
        data = text.encode("utf-8") if text is not None else read_source(script)[0]
        tree = parse_source(data, label)[0] if data is not None else None
        if tree is not None and data is not None:
            # IPython magics run only in a notebook, whose __main__ spawn does not re-import
            notebook = script.suffix == ".ipynb" or _without_magics(data) is not None
            decl.engine_start = read_engine_start(script, tree, label, res.tree, res.locate, notebook)
    decl.stubs = _module_stubs([main, *followed])
    for mod in [main, *followed]:
        for attr, line in mod.attr_writes.items():
            decl.attr_writes.setdefault(attr, f"{mod.path}:{line}")
    decl.client_patched = _client_patched([main, *followed])
    decl.builds_trainer = next(
        (
            f"{func}(...) in {mod.path}:{line}"
            for mod in [main, *followed]
            for func, line, _ in mod.calls
            if func.rsplit(".", 1)[-1].endswith("Trainer")
        ),
        None,
    )
    decl.server_start = next(
        (
            f"{mod.path}:{number}"
            for mod in [main, *followed]
            for number, line in enumerate(mod.lines, 1)
            if "vllm" in line and SERVER_START.search(line)
        ),
        None,
    )
    return decl


def _module_stubs(mods: list[SourceFacts]) -> dict[str, str]:
    """``module:name`` -> ``file:line`` for every attribute the files assign onto a module they
    import by name (``import torch.distributed.fsdp as _fsdp; _fsdp.FSDPModule = Stub``)."""
    out: dict[str, str] = {}
    for mod in mods:
        for alias, sets in mod.sets.items():
            module = mod.modules.get(alias)
            if module is None:
                continue
            for attr, value in sets:
                out.setdefault(f"{module}:{attr}", f"{mod.path}:{getattr(value, 'lineno', 0)}")
    return out


def trl_calls_of_text(path: str, text: str) -> tuple[list[TrlCall], str | None]:
    """The calls into TRL's trainer (``ScriptDecl.trl_calls``) of the script at ``path`` as
    ``text`` holds it (``envdoctor fix`` proving an edit of it), the modules it imports read
    from disk; (``[]``, why) when the text does not parse."""
    script = Path(path)
    tree, problem = parse_source(text.encode("utf-8"), str(path))
    if tree is None:
        return [], problem
    try:
        main = _scan(tree, str(path))
    except (RecursionError, MemoryError):
        return [], "is too deeply nested to read"
    main.lines = text.splitlines()
    return _trl_calls(main, script, _Resolver(script, main)), None


#: packages whose trainer classes are not TRL's GRPOTrainer (a class deriving from one of them
#: alone runs none of GRPOTrainer's checks)
OTHER_TRAINER_PACKAGES = frozenset({"transformers", "torch"})


def _derives(
    ref: str, mod: SourceFacts, home: Path, res: _Resolver, depth: int = 0, plain: bool = False
) -> str | None:
    """Whether class ``ref`` of ``mod`` is TRL's GRPOTrainer or derives from it ("grpo"), is
    a repository class deriving only from known other bases ("other: <what>"), else None.
    ``plain``: a repository class with no base (``object`` aside) is known too, a class of its own."""
    if depth > MAX_IMPORT_DEPTH:
        return None
    kind, found = res.resolve(ref, mod, home, local=depth == 0 or ref not in mod.classes)
    if kind == "trl":
        return "grpo" if found == TRAINER_CLASS else None
    if kind != "own":
        pkg = _package_of(ref, mod)
        return f"other: {pkg}.{ref.rsplit('.', 1)[-1]}" if pkg in OTHER_TRAINER_PACKAGES else None
    cls, where, path = found
    said = []
    bases = [b for b in cls.bases if b.rsplit(".", 1)[-1] not in _NO_FIELDS] if plain else cls.bases
    for base in bases:
        got = _derives(base, where, Path(path), res, depth + 1, plain)
        if got is None or got == "grpo":
            return got
        said.append(got.removeprefix("other: "))
    if not bases:
        return f"other: {cls.name} ({cls.path}:{cls.line}), a class of the repository's own"
    if not said:
        return None
    return f"other: {cls.name} ({cls.path}:{cls.line}), a subclass of {', '.join(said)}"


def _own_grpo(main: SourceFacts, script: Path, res: _Resolver) -> str | None:
    """``GRPOTrainer`` as the script names it when that is a class of the repository deriving
    from no GRPOTrainer (``from src.grpo import GRPOTrainer``: a plain class of a GRPO loop on
    transformers, or a subclass of transformers' Trainer), said as ``own_trainer`` says it; None
    for TRL's, a subclass of it, or bases not read."""
    if not main.model_by_name:
        return None
    kind, found = res.resolve(TRAINER_CLASS, main, script)
    if kind != "own":
        return None
    got = _derives(TRAINER_CLASS, main, script, res, plain=True)
    return got.removeprefix("other: ") if got and got != "grpo" else None


#: a class name of a GRPO trainer (``GRPOTrainer``, ``Qwen2VLGRPOTrainer``, ``GRPOTrainerV2``)
_GRPO_CLASS = re.compile(r"\w*GRPO\w*Trainer\w*")


def _defined_grpo(mods: list[SourceFacts], res: _Resolver) -> str | None:
    """A GRPO trainer class that the script or a repository module it reads defines and that
    derives from no GRPOTrainer (AravTewari/11868-grpo builds its ``GRPOTrainer`` through
    ``create_grpo_trainer(...)``), said as ``own_trainer`` says it; None where there is none, or
    its bases are not read."""
    for mod in mods:
        for name in mod.classes:
            if not _GRPO_CLASS.fullmatch(name):
                continue
            got = _derives(name, mod, Path(mod.path), res, plain=True)
            if got and got != "grpo":
                return got.removeprefix("other: ")
    return None


def _own_trainer(main: SourceFacts, script: Path, res: _Resolver) -> str | None:
    """What ``ScriptDecl.own_trainer`` says: every ``…Trainer(...)`` the script builds is a
    repository class that derives from no GRPOTrainer; None when it builds TRL's (or one not
    read)."""
    if main.model_by_name:
        return None  # GRPOTrainer(...) itself
    kinds = [
        _derives(func, main, script, res)
        for func, _, _ in main.calls
        if func.rsplit(".", 1)[-1].endswith("Trainer")
    ]
    if not kinds and not _names_trl_trainer(main):
        # ``trainer_cls = A if use_vllm else B; trainer_cls(...)`` (R1-V and its descendants): the
        # trainer classes it imports from the repository, where TRL's GRPOTrainer is named
        # nowhere but in an import
        kinds = [
            _derives(name, main, script, res)
            for name, (source, _, level) in main.imports.items()
            if name.endswith("Trainer")
            and (level or source.split(".")[0] not in {"trl", "unsloth", *OTHER_TRAINER_PACKAGES})
        ]
    if not kinds or any(k is None or k == "grpo" for k in kinds):
        return None
    return kinds[0].removeprefix("other: ") if kinds[0] else None


def _builds_grpo(main: SourceFacts, script: Path, res: _Resolver, targets: frozenset[str]) -> str | None:
    """What ``ScriptDecl.builds_grpo`` says: where the script builds TRL's GRPOTrainer or a class
    deriving from it (``GRPOTrainer(...) in train.py:40``; ``MyTrainer(...) in train.py:52, a
    GRPOTrainer``), a trainer class of the repository deriving from it that it picks into a
    variable, or a Hydra ``_target_`` naming it; None when none was seen."""
    for func, line, _ in main.calls:
        if _derives(func, main, script, res) == "grpo":
            last = func.rsplit(".", 1)[-1]
            return f"{func}(...) in {main.path}:{line}" + ("" if last == TRAINER_CLASS else ", a GRPOTrainer")
    if main.model_by_name:
        return f"{TRAINER_CLASS}(...) in {main.path}"
    if TRAINER_CLASS in targets:
        return f"a Hydra `_target_` naming {TRAINER_CLASS} ({main.path})"
    if not _names_trl_trainer(main):
        for name, (source, _, level) in main.imports.items():
            if not name.endswith("Trainer") or not (level or source.split(".")[0] not in {"trl", "unsloth"}):
                continue
            if _derives(name, main, script, res) == "grpo":
                return f"{name} (from {source}), a GRPOTrainer, in {main.path}"
    return None


def _grpo_in_module(followed: list[SourceFacts], res: _Resolver) -> str | None:
    """Where a repository module the script imports (read) builds TRL's GRPOTrainer or a class
    deriving from it (``GRPOTrainer(...) in src/train_lib.py:88``): the script hands the
    training to its own module, which is TRL's; None when none read does."""
    for mod in followed:
        for func, line, _ in mod.calls:
            if (
                func.rsplit(".", 1)[-1].endswith("Trainer")
                and _derives(func, mod, Path(mod.path), res) == "grpo"
            ):
                return f"{func}(...) in {mod.path}:{line}"
    return None


def _names_trl_trainer(main: SourceFacts) -> bool:
    """Whether the script names TRL's GRPOTrainer anywhere but in an import line."""
    word = re.compile(rf"\b{TRAINER_CLASS}\b")
    return any(
        word.search(line) and not line.lstrip().startswith(("from ", "import ")) for line in main.lines
    )


def _trl_other_trainer(main: SourceFacts, script: Path, res: _Resolver) -> str | None:
    """What ``ScriptDecl.trl_other_trainer`` says: every ``…Trainer(...)`` the script builds is
    a class of TRL's other than GRPOTrainer that TRL's symbol history knows and that derives from
    no GRPOTrainer in any release; None otherwise (or when the history is not there)."""
    if main.model_by_name:
        return None  # GRPOTrainer(...) itself
    found = [
        res.resolve(func, main, script)
        for func, _, _ in main.calls
        if func.rsplit(".", 1)[-1].endswith("Trainer")
    ]
    if not found or any(kind != "trl" or name == TRAINER_CLASS for kind, name in found):
        return None
    from envdoctor.knowledge.symbol_history import history

    h = history("trl")
    names = list(dict.fromkeys(str(name) for _, name in found))
    if h is None or any(not h.class_releases(n) or h.derives(n, TRAINER_CLASS) for n in names):
        return None
    return ", ".join(names)


#: TRL classes whose calls' keywords are checked against the symbol history
CHECKED_CALLS = frozenset({TRAINER_CLASS})


def _own_reads(mods: list[SourceFacts], decl: ScriptDecl) -> dict[str, str]:
    """Where the script reads itself a key of the config file it loads (``yaml.safe_load``) that
    a TRL config keyword also takes (``max_prompt_length=cfg["max_prompt_length"]``) at a line
    besides that keyword's (``build_dataset(..., cfg["max_prompt_length"])``): key -> ``path:line``.
    The key is the script's own as well as GRPOConfig's: ``fix`` changes the call, never the file."""
    if not decl.self_load:
        return {}
    out: dict[str, str] = {}
    for call in decl.config_calls:
        for read, line in call.key_reads.values():
            key = read.lstrip(".")
            for mod in mods:
                if read.startswith("."):  # cfg.max_prompt_length: not a read of a config object built
                    lines = [n for name, n in mod.attr_reads.get(key, []) if not _built_config(mod, name)]
                else:
                    lines = mod.key_reads.get(read, [])
                other = [n for n in lines if mod.path != call.path or n != line]
                if other and key not in out:
                    out[key] = f"{mod.path}:{other[0]}"
    return out


def _built_config(mod: SourceFacts, name: str) -> bool:
    """Whether ``name`` is bound to a config or trainer object the file builds (``args =
    GRPOConfig(...)``): its attribute is the object's field, not the config file's key."""
    func = mod.made.get(name, ("", 0))[0].rsplit(".", 1)[-1]
    return name == "self" or func.endswith(("Config", "Arguments", "Trainer"))


def _consumed(main: SourceFacts, followed: list[SourceFacts], decl: ScriptDecl) -> dict[str, str]:
    """The names the files read consume themselves: the keywords of their calls to consumers
    other than TRL's config classes (and the script's GRPOConfig subclasses), and the text keys
    they read from mappings by name (``cfg.get("use_lora")``): from the config file one of them
    loads itself (``yaml.safe_load``), or from what a helper envdoctor did not read hands back.
    The plan takes them only where no TRL parser reads the config file and no call spreads it
    into GRPOConfig (``script_plan``): a key such a script reads by name is its own."""
    config = {c.cls.rsplit(".", 1)[-1] for c in decl.config_calls} | set(decl.config_subclasses)
    out: dict[str, str] = {}
    mods = [main, *followed]
    for mod in mods:
        for key, (func, line) in mod.keywords.items():
            if func.rsplit(".", 1)[-1] not in config:
                out.setdefault(key, f"a keyword the script passes {func}(...) itself ({mod.path}:{line})")
    for mod in mods:
        for key, line in mod.reads.items():
            if decl.self_load:
                said = f"read by the script from the config it loads itself ({mod.path}:{line}"
                out.setdefault(key, f"{said}, {decl.self_load})")
            else:  # loaded by a helper envdoctor did not read (``from .common import load_config``)
                out.setdefault(key, f"read by name by the script ({mod.path}:{line})")
    return out


def _self_loaded(
    main: SourceFacts, script: Path, res: _Resolver, followed: list[SourceFacts]
) -> dict[str, str]:
    """Where the script or a module it imports reads a config file into plain data itself
    (``yaml.safe_load``): the fields of the dataclasses those files define, with their repository
    bases — the keys such a script fills its own configuration from (not GRPOConfig's to judge)."""
    mods = [(main, script), *((m, Path(m.path)) for m in followed)]
    load = next(((m, call, line) for m, _ in mods for call, line in m.file_loads), None)
    if load is None:
        return {}
    at = f"{load[1]} in {load[0].path}:{load[2]}"
    out: dict[str, str] = {}
    for mod, home in mods:
        for cls in mod.classes.values():
            for name in _fields(cls, mod, home, res)[0]:
                out.setdefault(
                    name,
                    f"a field of the repository's dataclass {cls.name} ({cls.path}:{cls.line}); the "
                    f"script reads its config file itself ({at})",
                )
    return out


def _trl_calls(main: SourceFacts, script: Path, res: _Resolver) -> list[TrlCall]:
    """The script's calls into ``CHECKED_CALLS`` with keywords: the constructor, and methods of
    the object it assigned the constructor's result to (``trainer = GRPOTrainer(...)``)."""
    out: list[TrlCall] = []
    built: dict[str, str] = {}
    for func, line, call in main.calls:
        kind, found = res.resolve(func, main, script)
        if kind != "trl" or found not in CHECKED_CALLS:
            continue
        out.append(_trl_call(str(found), "__init__", f"{main.path}:{line}", call, main))
        name = main.bound.get(id(call))
        if name:
            built[name] = str(found)
    for name, method, line, call in main.method_calls:
        if name in built and not method.startswith("_"):
            out.append(_trl_call(built[name], method, f"{main.path}:{line}", call, main))
    return out


def _trl_base(
    cls: DataClass, mod: SourceFacts, home: Path, res: _Resolver, depth: int = 0
) -> tuple[str, list[DataClass]] | None:
    """The TRL trainer class (``…Trainer``) ``cls`` derives from, through repository bases, and
    the repository classes on the way (``cls`` first)."""
    if depth > 6:
        return None
    for base in cls.bases:
        kind, found = res.resolve(base, mod, home, local=base != cls.name)
        if kind == "trl" and str(found).endswith("Trainer"):
            return str(found), [cls]
        if kind == "own" and found[0] is not cls:
            deeper = _trl_base(found[0], found[1], found[2], res, depth + 1)
            if deeper:
                return deeper[0], [cls, *deeper[1]]
    return None


def _trl_overrides(main: SourceFacts, script: Path, res: _Resolver) -> list[TrlOverride]:
    """The methods the repository's classes deriving from a TRL trainer define, in the script
    and the modules read (``res.loaded``), each class once."""
    out: list[TrlOverride] = []
    mods = [
        (main, script),
        *((m, Path(m.path)) for m in res.loaded.values() if m is not None and m is not main),
    ]
    for mod, home in mods:
        for cls in mod.classes.values():
            if not cls.methods:
                continue
            found = _trl_base(cls, mod, home, res)
            if found is None:
                continue
            base, chain = found
            for name, line, sig in cls.methods:
                own = tuple(dict.fromkeys(s for c in chain for m, s in c.self_calls if m == name))
                if len(out) < MAX_CALLS:
                    out.append(TrlOverride(cls.name, base, name, f"{cls.path}:{line}", sig, own))
    return out


def _trl_call(cls: str, method: str, where: str, call: ast.Call, mod: SourceFacts | None = None) -> TrlCall:
    """The call's keywords, those of a ``**mapping`` the file binds once to a dict display
    (``kwargs = {"finetuned_from": …}; trainer.create_model_card(**kwargs)``) among them;
    ``spread`` when a ``**`` hands keys envdoctor does not follow; each written keyword's removal
    and place as line edits of the script (a fix's edit is cut from the file's lines)."""
    named: list[str] = [k.arg for k in call.keywords if k.arg]
    spread = False
    for k in call.keywords:
        if k.arg is None:
            pairs = _spread(mod, k.value) if mod is not None else None
            if pairs is None:
                spread = True
            else:
                named += [key for key, _ in pairs]
    lines = mod.lines if mod is not None else []
    drops = tuple(d for d in (_drop(call, i, lines) for i in range(len(call.keywords))) if d)
    places = tuple(
        (k.arg, k.lineno, k.col_offset, lines[k.lineno - 1])
        for k in call.keywords
        if k.arg and 1 <= k.lineno <= len(lines)
    )
    return TrlCall(cls, method, where, tuple(dict.fromkeys(named)), spread, drops, places)


def _cut(lines: list[str], start: tuple[int, int], end: tuple[int, int]) -> tuple[str, ...] | None:
    """The lines ``start[0]``..``end[0]`` (1-based) with the text between the two positions
    (UTF-8 byte columns, as ``ast`` gives them) taken out; a line left blank goes."""
    if not (1 <= start[0] <= end[0] <= len(lines)):
        return None
    head = lines[start[0] - 1].encode("utf-8")[: start[1]]
    tail = lines[end[0] - 1].encode("utf-8")[end[1] :]
    if not head.strip() and tail.lstrip().startswith(b"#"):
        joined = b""  # the keyword's own comment goes with it
    elif not head.strip():
        joined = head + tail.lstrip()
    else:
        space = b" " if head.rstrip().endswith(b",") and tail.strip() else b""
        joined = head.rstrip() + space + tail.lstrip()
    text = joined.decode("utf-8", errors="replace")
    return () if not text.strip() else (text.rstrip(),)


Drop = tuple[str, int, tuple[str, ...], tuple[str, ...]]


def _drop(call: ast.Call, i: int, lines: list[str]) -> Drop | None:
    """The keyword ``call.keywords[i]`` taken out of the call, with the comma that separates it:
    (keyword, first line, the lines now, the lines after); None when it cannot be cut cleanly
    (positional arguments after it, no positions, text that is not the parsed one)."""
    kws = call.keywords
    kw = kws[i]
    if kw.arg is None or kw.end_lineno is None or kw.end_col_offset is None:
        return None
    if any((a.lineno, a.col_offset) > (kw.lineno, kw.col_offset) for a in call.args):
        return None
    own_line = (
        1 <= kw.lineno <= len(lines) and not lines[kw.lineno - 1].encode("utf-8")[: kw.col_offset].strip()
    )
    if i + 1 < len(kws) and not (own_line and kws[i + 1].lineno > kw.end_lineno):  # `k=v, ` up to the next
        start, end = (kw.lineno, kw.col_offset), (kws[i + 1].lineno, kws[i + 1].col_offset)
    elif (i > 0 or call.args) and (
        prev := kws[i - 1].value if i > 0 else call.args[-1]
    ).end_lineno == kw.lineno:  # the last, on the line of the one before: from that one's end
        if prev.end_col_offset is None:
            return None
        start, end = (kw.lineno, prev.end_col_offset), (kw.end_lineno, kw.end_col_offset)
    else:  # the only argument, or one on lines of its own: with the comma after it
        start, end = (kw.lineno, kw.col_offset), (kw.end_lineno, kw.end_col_offset)
        rest = lines[end[0] - 1].encode("utf-8")[end[1] :] if end[0] <= len(lines) else b""
        if rest.lstrip().startswith(b","):
            end = (end[0], end[1] + len(rest) - len(rest.lstrip()) + 1)
    new = _cut(lines, start, end)
    if new is None:
        return None
    return kw.arg, start[0], tuple(lines[start[0] - 1 : end[0]]), new


def _unread_trainer(main: SourceFacts, script: Path, res: _Resolver) -> str | None:
    """A trainer class (``…Trainer``) the script imports from a module envdoctor could not read
    (the repository's own package, or another library), where the script builds no trainer that
    TRL's code or a read class settles (no ``GRPOTrainer(...)`` of TRL's; ``trainer_cls =
    Imported; trainer_cls(...)`` is the usual form): whether the run keeps TRL's checks of
    GRPOTrainer.__init__ is unknown."""
    for func, _, _ in main.calls:
        if func.rsplit(".", 1)[-1].endswith("Trainer") and _derives(func, main, script, res) is not None:
            return None  # a trainer TRL's or a read class settles
    for name, (source, _, level) in main.imports.items():
        top = source.split(".")[0]
        if _trl_added(name, main):
            return f"{name} (from trl, a class no TRL release has: a copy added to the installed trl)"
        # TRL's own, a known other base, and Unsloth's (TRL's trainers, patched): settled elsewhere
        if not name.endswith("Trainer") or (not level and top in {"trl", "unsloth", *OTHER_TRAINER_PACKAGES}):
            continue
        kind, _ = res.resolve(name, main, script)
        if kind != "own":
            return f"{name} (from {'.' * level}{source})"
    return None


#: the packages whose import means the run's code uses TRL (Unsloth imports it and patches it)
TRL_USERS = ("trl", "unsloth", "unsloth_zoo")


def _trl_added(name: str, mod: SourceFacts) -> bool:
    """Whether ``mod`` imports trainer class ``name`` from trl (``from trl import RankGRPOTrainer``)
    and no TRL release has it: a copy a repository's install step added to the installed trl."""
    source, _, level = mod.imports[name]
    return not level and source.split(".")[0] == "trl" and name.endswith("Trainer") and _not_trls(name)


def _not_trls(name: str) -> bool:
    """Whether TRL's symbol history knows no class ``name`` in any release it read (a trainer a
    repository's install step copies into the installed trl, ``from trl import RankGRPOTrainer``);
    False where the history is not there."""
    from envdoctor.knowledge.symbol_history import history

    h = history("trl")
    return h is not None and not h.class_releases(name)


def _package_of(name: str, mod: SourceFacts) -> str:
    """The top-level package a name of the script comes from (``FastLanguageModel`` imported from
    ``unsloth`` -> "unsloth"), or ""."""
    head = name.split(".")[0]
    if head in mod.modules:
        return mod.modules[head].split(".")[0]
    if head in mod.imports and not mod.imports[head][2]:
        return mod.imports[head][0].split(".")[0]
    return ""


def _in_process(main: SourceFacts, decl: ScriptDecl, followed: list[SourceFacts]) -> None:
    """The packages of ``IN_PROCESS_VLLM`` the script and the repository modules it imports
    (``followed``) import, and their calls of those packages' loaders with the keyword that
    starts vLLM in-process: a literal, an argparse flag of the script (the flag's default), or
    unknown."""
    imported: set[str] = set()
    for mod in [main, *followed]:
        imported |= {m.split(".")[0] for m in mod.modules.values()}
        imported |= {src.split(".")[0] for src, _, level in mod.imports.values() if not level}
    decl.in_process_imports = tuple(sorted(imported & set(IN_PROCESS_VLLM)))
    for mod, func, line, node in [(m, *loader) for m in [main, *followed] for loader in m.loaders]:
        package = _package_of(func, mod)
        if IN_PROCESS_VLLM.get(package) is None:
            continue
        if node is None or isinstance(node, ast.Starred):  # the keyword left out
            where = f"{func}(…) in {mod.path}:{line}"
            # the loader's default (False); a **mapping may pass it: not read
            (decl.in_process_spreads if node else decl.in_process_defaults).append(where)
            continue
        where = f"{func}({IN_PROCESS_VLLM[package]}=…) in {mod.path}:{line}"
        ok, value = _literal(node)
        ref, dest = _dotted(node), None
        if not ok and mod is main and ref and ref.count(".") == 1 and ref.split(".")[1] in decl.flags:
            dest = ref.split(".")[1]
            ok, value = decl.flags[dest].has_default, decl.flags[dest].default
        decl.in_process_calls.append((where, bool(value) if ok else None, dest))


def _config_calls(main: SourceFacts, script: Path, res: _Resolver, decl: ScriptDecl) -> list[ConfigCall]:
    out = []
    for func, line, call in main.calls:
        kind, found = res.resolve(func, main, script)
        if kind == "trl" and found == CONFIG_CLASS:
            name = func
        elif kind == "own" and (
            found[0].name in decl.config_subclasses or _is_config(found[0], found[1], found[2], res)
        ):
            name = found[0].name
        else:
            continue
        values: dict[str, Any] = {}
        flags: dict[str, str] = {}
        unknown: list[str] = []
        passed: list[str] = []
        spread = False
        var = main.bound.get(id(call))
        later = main.sets.get(var, []) if var else []  # cfg.key = value
        keywords: list[tuple[str | None, ast.expr, bool]] = []
        where = f"{name}{CODE_ORIGIN}{main.path}:{line}"
        places: dict[str, CodeKeyword] = {}
        from_file: dict[str, tuple[str, ...]] = {}
        key_reads: dict[str, tuple[str, int]] = {}
        file_spreads: list[tuple[str, ...]] = []
        for i, kw in enumerate(call.keywords):
            if kw.arg is not None:
                places[kw.arg] = _code_keyword(where, call, i, main.lines)
            if kw.arg is None and section_path(main, kw.value):  # **conf["grpo"]: a section of it
                file_spreads.append(section_path(main, kw.value) or ())
            elif kw.arg is None:
                spread_keys = _spread(main, kw.value)
                spread = spread or spread_keys is None
                keywords += [(k, v, False) for k, v in spread_keys or []]
                display = _display(main, kw.value, line)
                if display is not None:  # its entries written on lines of their own: cut there
                    for k, place in _entry_places(where, display, main.lines).items():
                        places.setdefault(k, place)
                if spread_keys is None:  # changed in place: the keys it holds at least, values unknown
                    floor = _floor(main, kw.value, line)
                    unknown += [k for k in floor if k not in unknown]
                    passed += floor
                else:
                    passed += [k for k, _ in spread_keys]
            else:
                keywords.append((kw.arg, kw.value, False))
                passed.append(kw.arg)
        keywords += [(k, v, True) for k, v in later]
        for key, node, assigned in keywords:
            if key is None:
                spread = True
                continue
            if assigned or key not in places:
                places[key] = CodeKeyword(where)  # set where no line edit reaches it
            had = key in values or key in flags or key in unknown
            for got in (values, flags):
                got.pop(key, None)
            if key in unknown:
                unknown.remove(key)
            ok, value = _literal(node)
            if ok:
                values[key] = value
                continue
            ref = _dotted(node)
            from_file.pop(key, None)
            read = _key_read(node)
            if read is None and isinstance(node, ast.Attribute) and _attr_read(node):
                read = f".{node.attr}"
            key_reads.pop(key, None)
            if read and not assigned:
                key_reads[key] = (read, node.lineno)
            path = section_path(main, node)
            if path and any(section_path(main, w) == path for w in main.written):
                path = None  # the script sets that place itself (``"auto"`` replaced): value unknown
            if path:  # a value of the config file the script reads: the plan reads it there
                from_file[key] = path
            if ref and ref.count(".") == 1 and ref.split(".")[1] in decl.flags and not path:
                flags[key] = ref.split(".")[1]
            elif had or not assigned:  # `cfg.x = expr` alone may set an attribute no field has
                unknown.append(key)
        for key in passed:
            places.setdefault(key, CodeKeyword(where))
        out.append(
            ConfigCall(
                name,
                main.path,
                line,
                values,
                flags,
                tuple(unknown),
                spread,
                places,
                trl_class=kind == "trl",
                passed=tuple(dict.fromkeys(passed)),
                from_file=from_file,
                key_reads=key_reads,
                file_spreads=tuple(file_spreads),
            )
        )
    return out


def _display(mod: SourceFacts, node: ast.expr, line: int) -> ast.Dict | None:
    """The dict display a ``**node`` spread at ``line`` hands the call: inline, or first bound to
    the name before the call with nothing between that may remove a key."""
    if isinstance(node, ast.Dict):
        return node
    if not isinstance(node, ast.Name) or node.id not in mod.floors:
        return None
    start, display = mod.floors[node.id]
    if start >= line or any(start < at < line for at in mod.removals.get(node.id, [])):
        return None
    return display


def _entry_places(where: str, display: ast.Dict, lines: list[str]) -> dict[str, CodeKeyword]:
    """The entries of a dict display written each on lines of their own (``"kl_coef": 0.05,``,
    a comment after it at most), as line edits: the entry's lines deleted."""
    out: dict[str, CodeKeyword] = {}
    for k, v in zip(display.keys, display.values, strict=True):
        if not (isinstance(k, ast.Constant) and isinstance(k.value, str)) or v.end_lineno is None:
            continue
        if not (1 <= k.lineno <= v.end_lineno <= len(lines)) or v.end_col_offset is None:
            continue
        head = lines[k.lineno - 1].encode("utf-8")[: k.col_offset]
        tail = lines[v.end_lineno - 1].encode("utf-8")[v.end_col_offset :].strip()
        if head.strip() or not (tail in (b"", b",") or tail.lstrip(b",").lstrip().startswith(b"#")):
            continue
        old = tuple(lines[k.lineno - 1 : v.end_lineno])
        out[k.value] = CodeKeyword(where, (k.lineno, old, ()))
    return out


def _config_class(
    main: SourceFacts, script: Path, res: _Resolver, decl: ScriptDecl, targets: frozenset[str] = frozenset()
) -> ConfigClass | None:
    """The config class the script builds: what its trainer calls get as ``args=`` (a call, or
    the name a call was bound to: ``training_args = vf.grpo_defaults(...)``), else the
    ``…Config`` classes it calls or hands its parser. TRL's GRPOConfig (or a subclass of it read
    in the repository) wins over any other; None when none is placed (today's judgement)."""
    refs: list[tuple[str, int]] = []
    for func, _, call in main.calls:
        if not func.rsplit(".", 1)[-1].endswith("Trainer"):
            continue
        arg = next((k.value for k in call.keywords if k.arg == "args"), None)
        if isinstance(arg, ast.Call) and _dotted(arg.func):
            refs.append((str(_dotted(arg.func)), arg.lineno))
        elif isinstance(arg, ast.Name) and arg.id in main.made:
            refs.append(main.made[arg.id])
    found = [c for c in (_classify(ref, line, main, script, res, decl) for ref, line in refs) if c]
    if not found:  # the config classes it hands its parser, and TRL's (or its own) it calls
        parsed = [(r, 0) for group in main.parsed for r in group if r.rsplit(".", 1)[-1].endswith("Config")]
        called = [(f, line) for f, line, _ in main.calls if f.rsplit(".", 1)[-1].endswith("Config")]
        found = [c for c in (_classify(ref, line, main, script, res, decl) for ref, line in parsed) if c]
        found += [
            c
            for c in (_classify(ref, line, main, script, res, decl) for ref, line in called)
            if c and c.kind != "foreign"  # a class of another package named …Config is no trainer's
        ]
    for kind in CONFIG_KINDS:
        if any(c.kind == kind for c in found):
            return next(c for c in found if c.kind == kind)
    if main.hydra and CONFIG_CLASS not in targets:
        # Hydra builds the trainer's arguments from the config's ``_target_``: the repository's
        # own class (a vendored GRPOConfig), unless a config of the repository targets TRL's
        where = f"{main.path}:{main.hydra}"
        return ConfigClass("foreign", "the class a Hydra `_target_` names", "hydra", where)
    return None


#: a Hydra config that builds TRL's own config class
_TRL_TARGET = re.compile(rb"_target_\s*:\s*['\"]?trl(?:\.\w+){0,3}\.(GRPOConfig|GRPOTrainer)\b")
MAX_TARGET_FILES = 400  # YAML files of the repository read for a ``_target_``
MAX_TARGET_DEPTH = 6
#: folders of installed or built packages, not the repository's configs
_NOT_CONFIG_DIRS = frozenset(
    {"node_modules", "site-packages", "dist-packages", "build", "dist", "__pycache__"}
)
MAX_TARGET_BYTES = 4 << 20


def _trl_targets(script: Path) -> frozenset[str]:
    """TRL's classes (GRPOConfig, GRPOTrainer) that a YAML file of the script's repository (the
    nearest folder above it with a .git, pyproject.toml or setup.py, else its own folder;
    ``repo_walk``'s bounded walk) has Hydra build (``_target_: trl.GRPOConfig``)."""
    from envdoctor.plan.repo_walk import walk

    try:
        here = script.resolve().parent
    except (OSError, RuntimeError):
        return frozenset()
    root = next(
        (
            p
            for p in [here, *list(here.parents)[:4]]
            if any((p / m).exists() for m in (".git", "pyproject.toml", "setup.py", "setup.cfg"))
        ),
        here,
    )
    size, found = 0, set[str]()
    for path in walk(
        root,
        ("*.yaml", "*.yml"),
        max_files=MAX_TARGET_FILES,
        max_depth=MAX_TARGET_DEPTH,
        skip_dirs=_NOT_CONFIG_DIRS,
        skip_hidden_dirs=True,
    ):
        try:
            with open(path, "rb") as f:
                data = f.read(262144)
        except OSError:
            continue
        size += len(data)
        found.update(m.decode() for m in _TRL_TARGET.findall(data))
        if size > MAX_TARGET_BYTES:
            break
    return frozenset(found)


def _classify(
    ref: str, line: int, main: SourceFacts, script: Path, res: _Resolver, decl: ScriptDecl
) -> ConfigClass | None:
    """What config ``ref`` (a class or a factory the script calls) is, or None when not known (a
    function of the script, a TRL function)."""
    where = f"{main.path}:{line}" if line else main.path
    kind, found = res.resolve(ref, main, script)
    if kind == "trl":
        if found == CONFIG_CLASS:
            return ConfigClass("trl", CONFIG_CLASS, "trl", where)
        if str(found).endswith("Config") and found not in TRL_NOT_TRAINER_CONFIGS:
            return ConfigClass("trl-other", str(found), "trl", where)
        return None
    if kind == "own":
        cls, mod, home = found
        if cls.name in decl.config_subclasses or _is_config(cls, mod, home, res):
            return ConfigClass("own", cls.name, "", f"{cls.path}:{cls.line}")
        bases = [b for b in cls.bases if b.rsplit(".", 1)[-1] not in _NO_FIELDS]
        outside = [b for b in bases if _package_of(b, mod) not in ("", "trl")]
        if not outside:
            return None  # a class of the repository on no other package's class: not placed
        return ConfigClass(
            "foreign", f"{cls.name}, a subclass of {', '.join(outside)}", _package_of(outside[0], mod), where
        )
    package = _package_of(ref, main)
    if package and package != "trl" and not _in_repository(package, res):
        return ConfigClass("foreign", ref, package, where)
    return None  # TRL's function, or the repository's own code envdoctor did not place


def _in_repository(package: str, res: _Resolver) -> bool:
    """Whether top-level module ``package`` is the repository's own (a folder or file of that
    name where the script's imports are looked for), though the name was not placed in it."""
    return any((root / package).is_dir() or (root / f"{package}.py").is_file() for root in res.roots)


def _code_keyword(where: str, call: ast.Call, i: int, lines: list[str]) -> CodeKeyword:
    """Keyword ``i`` of a config call as line edits: its removal, and its value's place when the
    value is written on one line."""
    drop = _drop(call, i, lines)
    value = call.keywords[i].value
    place = None
    if (
        value.end_lineno == value.lineno
        and value.end_col_offset is not None
        and 1 <= value.lineno <= len(lines)
    ):
        place = (value.lineno, value.col_offset, value.end_col_offset, lines[value.lineno - 1])
    return CodeKeyword(where, drop[1:] if drop else None, place)


def _floor(mod: SourceFacts, node: ast.expr, line: int) -> list[str]:
    """The keys a ``**name`` spread at ``line`` hands the call at least: those of the dict display
    first bound to ``name`` before it, when nothing between may remove one (``pop``, ``del``, a
    rebinding); ``update`` / ``name[k] = v`` only add. Flow is read by line order (a loop that
    pops after the call is not followed back)."""
    if not isinstance(node, ast.Name) or node.id not in mod.floors:
        return []
    start, display = mod.floors[node.id]
    if start >= line or any(start < at < line for at in mod.removals.get(node.id, [])):
        return []
    keys = [k.value for k in display.keys if isinstance(k, ast.Constant) and isinstance(k.value, str)]
    return keys if len(keys) == len(display.keys) else []


def _spread(mod: SourceFacts, node: ast.expr) -> list[tuple[str, ast.expr]] | None:
    """The ``(key, value)`` pairs a ``**node`` spread hands a config call: a dict display or
    ``dict(k=v)``, inline or bound once to a name the file never changes; None when its keys
    are not all known."""
    if isinstance(node, ast.Name):
        found = mod.mappings.get(node.id)
        if found is None:
            return None
        node = found
    if isinstance(node, ast.Dict):
        out: list[tuple[str, ast.expr]] = []
        for k, v in zip(node.keys, node.values, strict=True):
            if not (isinstance(k, ast.Constant) and isinstance(k.value, str)):
                return None  # ``**other`` inside, or a computed key
            out.append((k.value, v))
        return out
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "dict":
        if node.args or any(k.arg is None for k in node.keywords):
            return None
        return [(str(k.arg), k.value) for k in node.keywords]
    return None


# --------------------------------------------------------------------------------------------
# TRL's own dataclasses, from envdoctor's knowledge


def trl_class_fields(
    name: str, script_arguments: dict[str, Any], grpo_keys: dict[str, Any]
) -> dict[str, Any] | None:
    """The fields of TRL's dataclass ``name`` in any release envdoctor knows, each with its
    knowledge entry (``since`` / ``until``: the TRL releases that have it); None for a class
    envdoctor has no table of. ``script_arguments``: rules/knowledge/parser_keys.yaml's
    ``trl_script_arguments`` (ModelConfig, ScriptArguments, GRPOScriptArguments,
    DatasetMixtureConfig, by ``in``); ``grpo_keys``: grpo_config_keys.yaml (GRPOConfig's own
    fields; it inherits transformers' TrainingArguments besides)."""
    if name == CONFIG_CLASS:
        return dict(grpo_keys.get("keys") or {}) or None
    names = {name, "ScriptArguments"} if name == "GRPOScriptArguments" else {name}  # its base in TRL
    table = script_arguments.get("keys") or {}
    found = {k: e for k, e in table.items() if names & set(e.get("in") or ())}
    return found or None


# --------------------------------------------------------------------------------------------
# a command line against the script's argparse flags


def match_option(decl: ScriptDecl, option: str) -> Flag | None:
    """The flag argparse would take ``option`` (``--vllm-server-url``, no ``=value``) for: the
    option string as written, else (``allow_abbrev``) the one long option it is a prefix of."""
    exact = [f for f in decl.flags.values() if option in f.options]
    if exact:
        return exact[0]
    if not (decl.allow_abbrev and option.startswith("--") and len(option) > 2):
        return None
    found = {f.dest: f for f in decl.flags.values() for o in f.options if o.startswith(option)}
    return next(iter(found.values())) if len(found) == 1 else None


def flag_values(decl: ScriptDecl, args: list[str]) -> tuple[dict[str, Any], dict[str, str]]:
    """``({dest: value}, {key: option})``: the command line's options the script's argparse
    declares, with their values (typed as ``script_args.coerce`` types them), and those it does
    not declare (key as ``parse_script_args`` spells it -> the option as written)."""
    from envdoctor.script_args import coerce

    values: dict[str, Any] = {}
    unmatched: dict[str, str] = {}
    i = 0
    while i < len(args):
        tok = args[i]
        i += 1
        if not tok.startswith("--") or tok == "--":
            continue
        option, eq, val = tok.partition("=")
        given = [val] if eq else []
        flag = match_option(decl, option)
        if not eq and (flag is None or flag.switch is None):
            while i < len(args) and not args[i].startswith("--"):
                given.append(args[i])
                i += 1
        if flag is None:
            unmatched[option[2:].replace("-", "_")] = option
        elif flag.switch is not None and not given:
            values[flag.dest] = (
                not flag.switch
                if option.startswith("--no-") and option not in flag.options[:1]
                else flag.switch
            )
        else:
            typed = [coerce(v) for v in given]
            values[flag.dest] = typed[0] if len(typed) == 1 else typed
    return values, unmatched
