"""What the user intends to run: the plan, and the GPU layout it resolves to."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from envdoctor.coerce import as_int
from envdoctor.plan.values import as_bool

#: Where TRL's client looks for its server unless told (GRPOConfig ``vllm_server_host`` /
#: ``vllm_server_port``) and where ``trl vllm-serve`` listens unless told (``--host`` / ``--port``).
DEFAULT_SERVER_HOST = "0.0.0.0"
DEFAULT_SERVER_PORT = 8000
#: where the keys of a config given as a mapping come from; a config *object* (a GRPOConfig the
#: API was given) is "<Type> object": its __post_init__ fills fields the user never set
MAPPING_ORIGIN = "config object"


def from_config_object(origin: str) -> bool:
    """Whether a config key's origin is a config object (every field present, set or not)."""
    return origin.endswith(" object") and origin != MAPPING_ORIGIN


@dataclass
class Launch:
    """One parsed launch line, e.g. ``CUDA_VISIBLE_DEVICES=0,1 accelerate launch … train.py …``.

    ``launcher`` is one of python, accelerate, torchrun, deepspeed, trl-grpo, trl-vllm-serve,
    unknown; ``options`` holds the launcher's own flags (names with underscores), ``program`` the
    argv up to the user's script, ``script_args`` what follows it. ``wrappers`` are the commands
    that start it (``srun --nodes=4``, ``bash -c``), ``nodes`` the nodes they spread it over;
    ``unresolved`` says why what runs on a node is not known (the layout is then not resolved).
    """

    raw: str
    launcher: str
    env: dict[str, str] = field(default_factory=dict)
    options: dict[str, Any] = field(default_factory=dict)
    program: list[str] = field(default_factory=list)
    script: str | None = None
    module: str | None = None
    script_args: list[str] = field(default_factory=list)
    wrappers: list[str] = field(default_factory=list)
    nodes: int | None = None
    placed_by: str | None = None  # srun / mpirun: the scheduler picks its node(s)
    unresolved: str | None = None
    #: given as the command after ``--`` (``check … -- accelerate launch train.py``): the trainer's
    #: line by the CLI's convention, whatever other ``--launch`` lines run beside it
    from_argv: bool = False
    #: read from a shell script the launch runs (``bash train.sh``): the script's file and line
    #: the command came from (``launch/grpo.sh:63``), and the script launch as given
    source: str | None = None
    via: str | None = None
    #: what the script could not give statically (a command substitution, a loop variable, a
    #: branch chosen at run time): each said once; the words stay as written (``$N``)
    unknown: tuple[str, ...] = ()
    #: the launcher's own options written with one dash (``-num_processes=7``), as typed:
    #: argparse reads them as no option of the launcher (``launch_files``' LAY024)
    single_dash: tuple[str, ...] = ()
    #: where a literal ``cd`` before it went (``cd pipeline && python -m training.train``:
    #: "pipeline"), from where the commands started: a ``-m`` module is found from there
    folder: str = ""
    #: a script the launch runs holds an unresolved git merge conflict: its file and the lines of
    #: the first one (``bin/run.sh:53-57``); the launch is then unresolved (LAY026)
    conflict: str | None = None

    @property
    def is_server(self) -> bool:
        return self.launcher in ("trl-vllm-serve", "vllm-serve")


@dataclass(frozen=True)
class CodeKeyword:
    """Where a ``GRPOConfig(...)`` call of the training script sets a key, as line edits of the
    script (``envdoctor fix`` editing what the code sets): ``drop`` the keyword taken out of the
    call (first line, the lines now, the lines after), ``value`` where its value is written (line,
    UTF-8 byte columns of its start and end, the line's text); None where it cannot be cut cleanly
    (a ``**mapping``, a later ``cfg.key = …``, a value over several lines)."""

    where: str  # "GRPOConfig(...) in train.py:12"
    drop: tuple[int, tuple[str, ...], tuple[str, ...]] | None = None
    value: tuple[int, int, int, str] | None = None

    @property
    def written_in(self) -> str | None:
        """The file the call is written in (``GRPOConfig(...) in src/runner.py:99``): the
        script, or the repository module that builds the trainer and its config."""
        if CODE_ORIGIN not in self.where:
            return None
        path, _, line = self.where.rsplit(CODE_ORIGIN, 1)[-1].rpartition(":")
        return path if path and line.isdigit() else None


#: kinds of ``ConfigClass``: TRL's GRPOConfig, a subclass of it in the script or the repository
#: (its fields read), another TRL trainer config (SFTConfig, DPOConfig), a class or factory of
#: another package (verifiers' ``vf.grpo_defaults``, Unsloth's ``UnslothGRPOConfig``)
CONFIG_KINDS = ("trl", "own", "trl-other", "foreign")
#: TRL classes named ``…Config`` that are not a trainer's config (they hold no trainer's keys)
TRL_NOT_TRAINER_CONFIGS = frozenset({"ModelConfig", "DatasetMixtureConfig", "DatasetConfig"})


@dataclass(frozen=True)
class ConfigClass:
    """The config class the script builds and hands its trainer (``args=``): ``kind`` (one of
    ``CONFIG_KINDS``), ``name`` as the script writes it, ``package`` it comes from (``trl``,
    ``verifiers``; "" for the script's own), ``where`` (``train.py:19``)."""

    kind: str
    name: str
    package: str
    where: str

    @property
    def said(self) -> str:
        """``vf.grpo_defaults (verifiers, train.py:19)`` / ``TRL's SFTConfig (train.py:8)``."""
        if self.kind in ("trl", "trl-other"):
            return f"TRL's {self.name} ({self.where})"
        return f"{self.name} ({self.package + ', ' if self.package else ''}{self.where})"


@dataclass
class TrainingScript:
    """The training script a launch line runs, as envdoctor read it (``plan/script_reader``):
    ``problem`` says why it was not read; ``options``: its argparse option strings when argparse
    alone reads its command line, and ``refused``: the launch line's options it does not declare
    (key -> the option as typed), which stop it at start-up; ``parses``: TRL's dataclasses it
    hands HfArgumentParser / TrlParser, when every class it hands them was read."""

    path: str
    problem: str | None = None
    options: tuple[str, ...] = ()
    refused: dict[str, str] = field(default_factory=dict)
    parses: tuple[str, ...] | None = None  # TRL's dataclasses it parses, when all it parses was read
    unread: tuple[str, ...] = ()  # classes it parses that envdoctor could not read (imported from afar)
    #: its argparse parser is handed to code envdoctor does not read (``add_bool_arg(parser, …)``
    #: from another module, ``parents=``) or names options it computes: it has more options than seen
    flags_open: bool = False
    #: it starts vLLM inside the training process by design (Unsloth's fast_inference=True): where
    vllm_in_process: str | None = None
    #: it imports such a trainer but whether it asks for vLLM in-process was not seen: why
    vllm_in_process_unseen: str | None = None
    #: it loads the model with such a trainer's loader (Unsloth's ``FastLanguageModel.
    #: from_pretrained``) and every such call read leaves vLLM off (``fast_inference`` False, from
    #: a flag's default, or left out: the loader's default): where the first is
    vllm_in_process_off: str | None = None
    #: the attention implementations its model loaders ask for, literal values only: (where,
    #: value, conditional: a branch of ``a if cond else b``, the literal's file:line: where an edit
    #: goes) (ScriptDecl.attn_requests)
    attn_requests: tuple[tuple[str, str, bool, str], ...] = ()
    #: GRPOConfig keys its code takes from one of its argparse flags: key -> (the flag's option
    #: string, the value the flag sets alone for a store_true / store_false flag, else None)
    #: the names its own code consumes where no HfArgumentParser / TrlParser reads a config file:
    #: keywords it hands other consumers (``get_peft_model(use_gradient_checkpointing=…)``), keys
    #: it reads from the config it loads itself -> what says so (a config file's key among them
    #: is the script's, not a GRPOConfig typo: CFG004)
    consumed: dict[str, str] = field(default_factory=dict)
    #: the keys its config calls write as literal values (``num_generations=1``) -> the value
    code_values: dict[str, Any] = field(default_factory=dict)
    flag_keys: dict[str, tuple[str, bool | None]] = field(default_factory=dict)
    model_by_name: bool | None = None  # GRPOTrainer(model=…) gets a name or path (not an object)
    #: a model it loads with a device map over several GPUs ("spread"), or a computed one
    #: ("unknown"); None: none (ScriptDecl.model_split)
    model_split: str | None = None
    #: a package it imports that patches TRL's trainers and configs at import ("unsloth")
    patched_by: str | None = None
    #: the trainer it builds is a class of the repository that does not derive from TRL's
    #: GRPOTrainer (``CustomTrainer (GRPO_Trainer.py:85), a transformers Trainer``): TRL's checks
    #: in GRPOTrainer.__init__ do not run
    own_trainer: str | None = None
    #: the class it builds as ``GRPOTrainer`` is the repository's own, deriving from no GRPOTrainer
    #: (a GRPO loop of its own on transformers / torch); None otherwise
    own_grpo: str | None = None
    #: it imports a trainer class of the repository's own that envdoctor could not read and
    #: builds no GRPOTrainer of TRL's itself: whether TRL's __init__ checks run is unknown
    unread_trainer: str | None = None
    #: a trainer class it imports from trl that no TRL release has (``RankGRPOTrainer``): the
    #: installed trl is a modified copy, whose code the catalogue's TRL ranges do not describe
    trl_added: str | None = None
    #: its calls into TRL's trainer classes with keywords (``TrlCall``: class, method, where,
    #: keywords), checked against the symbol history of the TRL release that runs
    trl_calls: tuple[Any, ...] = ()
    #: methods of its classes deriving from a TRL trainer that they define (``TrlOverride``: class,
    #: TRL base, method, where, parameters), checked against how the TRL that runs calls them
    trl_overrides: tuple[Any, ...] = ()
    #: the files read: the script, then the repository modules it imports
    files: tuple[str, ...] = ()
    #: where the script or the repository modules it imports hand a reference model to DeepSpeed
    #: themselves (``prepare_deepspeed(self.ref_model) in trainer.py:437``)
    ref_ds_prepares: tuple[str, ...] = ()
    #: it keeps only the keys the installed GRPOConfig takes (``signature(GRPOConfig.__init__)
    #: in train.py:289``): a key this release lacks is dropped by the script, not refused
    config_filter: str | None = None
    #: the keys that filter covers where it only tests named keys (``if "kl_coef" in sig:``);
    #: None where it filters every key (``{k: v for k, v in kw.items() if k in sig}``)
    config_filter_keys: tuple[str, ...] | None = None
    #: the keys its calls of TRL's own GRPOConfig class (not a subclass of the repository's)
    #: always pass, as keywords or from a mapping it spreads -> the call (``GRPOConfig(...) in
    #: train.py:556``): each reaches GRPOConfig.__init__, whatever a config file also sets
    trl_config_keys: dict[str, str] = field(default_factory=dict)
    #: its parser hands back the config keys no dataclass has instead of refusing them
    #: (``parse_args_and_config(return_remaining_strings=True) in train.py:94``): a key this
    #: release lacks is dropped, not refused
    keeps_unknown_keys: str | None = None
    #: it builds only TRL trainers that derive from no GRPOTrainer (``AsyncGRPOTrainer``) and no
    #: GRPOConfig: GRPO's batch checks do not run
    trl_other_trainer: str | None = None
    #: where it builds TRL's GRPOTrainer or a class deriving from it (``GRPOTrainer(...) in
    #: train.py:40``): the evidence that the run is GRPO's; None when none was seen
    builds_grpo: str | None = None
    #: where a repository module it imports builds TRL's GRPOTrainer (or a class deriving from
    #: it) when it builds none itself (``GRPOTrainer(...) in src/train_lib.py:88``)
    grpo_in_module: str | None = None
    #: GRPOConfig keys its calls take from the config file it reads itself -> (the place in the
    #: file, the call): ``per_device_train_batch_size=conf["training"].get(…)`` reads
    #: ("training", "per_device_train_batch_size")
    file_keys: dict[str, tuple[tuple[str, ...], str]] = field(default_factory=dict)
    #: the keys of the config file the script loads itself (``yaml.safe_load``) that it reads
    #: besides handing them to a TRL config keyword (``build_dataset(cfg["max_prompt_length"])``)
    #: -> where (``src/training/grpo.py:142``): ``fix`` never removes such a key from the file
    #: (the script's own read would stop on a KeyError); it drops the keyword at the call
    own_reads: dict[str, str] = field(default_factory=dict)
    #: TRL config keyword -> the key its value reads from a mapping or namespace
    #: (``max_prompt_length=cfg["max_prompt_length"]``, ``beta=cfg.beta``)
    keyword_reads: dict[str, str] = field(default_factory=dict)
    #: sections of that file its calls spread (``**conf["grpo"]``) -> the call
    file_spreads: dict[tuple[str, ...], str] = field(default_factory=dict)
    #: the config a Hydra entry composes (``@hydra.main(config_path=…, config_name=…)``): the
    #: primary file read, or why it was not (``hydra_unread``); both None for no Hydra entry
    hydra_config: str | None = None
    hydra_unread: str | None = None
    #: the composed Hydra config (``plan.build`` follows the sections the script reads in it)
    hydra_values: dict[str, Any] = field(default_factory=dict)
    #: each key its GRPOConfig(...) calls set -> every place that sets it (``CodeKeyword``)
    config_keywords: dict[str, tuple[CodeKeyword, ...]] = field(default_factory=dict)
    #: where it (or a repository module it imports) builds a chat message (``{"role": …,
    #: "content": …}`` in prompts.py:30): its prompts are likely conversational
    chat_messages: str | None = None
    #: the config class it builds for its trainer (``ConfigClass``), None when not placed
    config_class: ConfigClass | None = None
    #: where it (or a repository module it imports) builds a vLLM engine that no ``use_vllm``
    #: test guards (``LLM(...) in train.py:214``): it generates with vLLM whatever the config says
    vllm_engine: str | None = None
    #: how its module-level code reaches a vLLM engine it builds itself and what runs before
    #: (``plan.engine_start.EngineStart``); None when none is reached
    engine_start: Any = None
    #: where it (or a repository module it imports) names a vLLM server's start as text (``trl
    #: vllm-serve`` in a notebook's ``!`` line, a subprocess, a comment: ``train.py:12``)
    server_start: str | None = None
    #: where the files read build a trainer class of any package (``Trainer(model=…) in
    #: train.py:40``); None where none is built
    builds_trainer: str | None = None
    #: names the files read assign onto a module they import, ``module:name`` -> where
    #: (``torch.distributed.fsdp:FSDPModule`` -> ``train.py:38``): a stand-in for an older release
    stubs: dict[str, str] = field(default_factory=dict)
    #: attribute name -> where the files read first assign it on an object (``model.
    #: warnings_issued = {}`` in train.py:264, or ``setattr``): a catalogue entry's
    #: ``when.unless_script_sets`` escape
    attr_writes: dict[str, str] = field(default_factory=dict)
    #: where it (or a repository module it imports) replaces TRL's VLLMClient calls: methods
    #: assigned onto the class (``VLLMClient.{init_communicator, generate} replaced in
    #: scripts/train_grpo.py:54``) or a subclass handed a trainer as its ``vllm_client``: it talks
    #: to the server its own way (a plain ``vllm serve`` may be the server it means)
    client_patched: str | None = None
    #: where it reads its config file into plain data itself (``yaml.safe_load in train.py:19``)
    #: while every GRPOConfig(...) call names its keywords: the file's keys reach GRPOConfig only
    #: through those keywords (``trl_config_keys``); None otherwise
    self_load: str | None = None
    #: where it reads its config file into plain data itself (``yaml.safe_load in
    #: src/config.py:8``) while building GRPOConfig in a call envdoctor did not read
    #: (``config_cls(**kwargs)``), with no TRL parser and no Hydra: the GRPOConfig values of
    #: keys the file does not name are the script's, not TRL's defaults; None otherwise
    config_unread: str | None = None
    #: it (or a repository module it imports) reads a command line (a parser, sys.argv, a CLI
    #: library, Hydra): recorded once by the reader; without one the launch line's flags reach
    #: nothing
    reads_command_line: bool = True
    #: it can hand a config file's keys to GRPOConfig: it parses dataclasses (HfArgumentParser /
    #: TrlParser), reads a config file itself (``yaml.safe_load``, ``json.load``) or composes one
    #: with Hydra; False: what its GRPOConfig(...) calls write is what runs, whatever a file says
    reads_config: bool = True
    #: the top-level packages the script itself imports (absolute imports) -> the line of the
    #: first import of each (``verl`` -> 3): which framework trains (``plan.framework``)
    packages: dict[str, int] = field(default_factory=dict)
    #: where it or a repository module it imports (read) first imports TRL or Unsloth
    #: (``src/grpo.py:1``); None where none read does
    trl_import: str | None = None
    #: the modules its text (or that of a repository module it imports) writes into a command
    #: line it starts or generates (``"$PYTHON_BIN" -m verl.trainer.main_ppo`` in a launcher it
    #: writes) -> where (``src/duet/pipeline.py:678``): another framework's entry point trains
    writes_modules: dict[str, str] = field(default_factory=dict)

    @property
    def other_config(self) -> ConfigClass | None:
        """The config class it builds when that is not TRL's GRPOConfig or a subclass of it read
        in the repository (another package's, another TRL trainer's): its keys are not
        GRPOConfig's to judge."""
        c = self.config_class
        return c if c is not None and not self.problem and c.kind in ("trl-other", "foreign") else None


#: the origin of a config key a ``GRPOConfig(...)`` call in the script sets to an expression
#: envdoctor does not evaluate: the key is in ``Plan.config_origin``, not in ``Plan.config``
VALUE_UNKNOWN = "set in code, value unknown"
#: how the origin of a key the script's code sets begins: ``GRPOConfig(...) in train.py:12``
CODE_ORIGIN = "(...) in "
#: a vLLM server's start as text: ``trl vllm-serve``, ``vllm serve``, ``trl.scripts.vllm_serve``,
#: vLLM's own OpenAI server module (``vllm.entrypoints``)
SERVER_START = re.compile(r"vllm[-_ ]serve\b|vllm\.entrypoints\.")


class _Computed:
    """The value of a config key the training script computes (``COMPUTED``)."""

    def __repr__(self) -> str:
        return "<computed by the script>"


#: ``Plan.value`` of a key the training script sets to an expression envdoctor does not evaluate
#: (``bf16=is_bf16_supported()``, ``max_prompt_length=cfg["max_prompt_length"]``): neither a
#: literal to judge nor TRL's default
COMPUTED: Any = _Computed()


def from_code(origin: str) -> bool:
    """Whether a config key's origin is a ``GRPOConfig(...)`` call of the training script (its
    value never went through TRL's parser)."""
    return CODE_ORIGIN in origin.split(", ")[0]


@dataclass
class Plan:
    """The run as the user intends it: config files, CLI overrides and launch lines.

    ``script_keys``: keys the training script's (or the repository's) own dataclasses and
    GRPOConfig subclasses declare -> what declares them; they are not GRPOConfig's to judge.
    """

    config: dict[str, Any] = field(default_factory=dict)
    config_origin: dict[str, str] = field(default_factory=dict)
    config_path: str | None = None
    accelerate: dict[str, Any] = field(default_factory=dict)
    accelerate_path: str | None = None
    launches: list[Launch] = field(default_factory=list)
    script: TrainingScript | None = None
    script_keys: dict[str, str] = field(default_factory=dict)
    #: the hook read the repository's own dataclasses into ``script_keys`` (a key none declares is judged)
    repository_read: bool = False
    #: keys set twice in one mapping of the config files read (parsing.duplicate_keys, with "file")
    duplicate_keys: list[dict[str, Any]] = field(default_factory=list)
    #: files as ``envdoctor fix`` edited them in memory (path -> text; envdoctor.remedy.file_edit)
    edited: dict[str, str] = field(default_factory=dict)
    #: the job launcher the repository declares for a bare ``python`` trainer line (an Azure ML
    #: job, a SageMaker estimator, a Slurm script…: envdoctor.plan.launchers.JobLaunch)
    job: Any = None
    #: files the launch line names that are not where it names them from here
    #: (plan.launch_files.LaunchFile: read from elsewhere, as a config envdoctor knows, or not read)
    launch_files: list[Any] = field(default_factory=list)
    #: the training framework the trainer line starts when it is not TRL's GRPOTrainer script
    #: (envdoctor.plan.framework.Framework: verl, OpenRLHF, ms-swift…); None: TRL, as judged always
    framework: Any = None

    @property
    def trainer(self) -> Launch | None:
        """The trainer's line: the command after ``--`` where one was given (the other lines,
        ``--launch``, run beside it: a repository's own server started by ``python
        vllm_server.py`` is no trainer), else the first line that is not a vLLM server."""
        given = next((lx for lx in self.launches if lx.from_argv and not lx.is_server), None)
        return given or next((lx for lx in self.launches if not lx.is_server), None)

    @property
    def server(self) -> Launch | None:
        return next((lx for lx in self.launches if lx.is_server), None)

    @property
    def use_vllm(self) -> bool:
        return bool(as_bool(self.config.get("use_vllm", False)))  # "maybe": refused, CFG005

    @property
    def empty(self) -> bool:
        return not (self.config or self.accelerate or self.launches)

    def computed(self, key: str) -> bool:
        """Whether the training script sets ``key`` to a value envdoctor does not evaluate: the
        plan keeps it out of ``config``, its origin ending in ``VALUE_UNKNOWN``."""
        return key not in self.config and self.config_origin.get(key, "").endswith(f", {VALUE_UNKNOWN}")

    def value(self, key: str, default: Any = None) -> Any:
        """The value the run gives config ``key``: the plan's, ``COMPUTED`` where the script
        computes it (never TRL's default then), else ``default``. Every rule that reads a
        GRPOConfig value with a default reads it here."""
        if self.computed(key):
            return COMPUTED
        return self.config.get(key, default)

    def not_grpo_key(self, key: str, origin: str) -> bool:
        """Whether config key ``key`` (from ``origin``) is not GRPOConfig's to judge: the script's
        (or the repository's) own dataclass declares it, or the script builds another config
        class (``TrainingScript.other_config``); a keyword of a GRPOConfig(...) call in code is
        GRPOConfig's whoever declares it."""
        if from_code(origin):
            return False
        return key in self.script_keys or (self.script is not None and self.script.other_config is not None)


@dataclass
class Rank:
    """Where one training process runs. ``gpu`` is the NVML index (None: unknown / CPU)."""

    rank: int
    local_rank: int
    gpu: int | None
    visible: list[int] = field(default_factory=list)


@dataclass
class ServerPlan:
    """A ``trl vllm-serve`` process: from a launch line or found running on a GPU."""

    host: str = DEFAULT_SERVER_HOST
    port: int = DEFAULT_SERVER_PORT
    tensor_parallel_size: int = 1
    data_parallel_size: int = 1
    gpus: list[int] = field(default_factory=list)
    source: str = "launch"  # launch | nvml | config | srun / mpirun (a node they pick)
    pid: int | None = None


def server_address(config: dict[str, Any], server: ServerPlan | None) -> tuple[str, int]:
    """Host (or base URL) and port where the trainer will look for its vLLM server: the GRPO
    config's ``vllm_server_base_url``, ``vllm_server_host`` and ``vllm_server_port``, else the
    server the layout resolved, else TRL's defaults."""
    base = config.get("vllm_server_base_url")
    host = str(config.get("vllm_server_host", server.host if server else DEFAULT_SERVER_HOST))
    port = as_int(
        config.get("vllm_server_port", server.port if server else DEFAULT_SERVER_PORT), DEFAULT_SERVER_PORT
    )
    return str(base or host), port


@dataclass
class GpuLayout:
    """Who runs where, resolved with the semantics of the installed TRL / accelerate / torch.

    Resolution records what it saw (``problems`` name impossible requests); rules judge it.
    """

    launcher: str = "python"
    num_machines: int = 1
    num_processes: int = 1  # on this node
    world_size: int = 1
    visible: list[int] = field(default_factory=list)  # NVML indices visible to the trainer
    visible_source: str = ""  # e.g. "CUDA_VISIBLE_DEVICES=0,1 (launch line)"
    ranks: list[Rank] = field(default_factory=list)
    process_gpus: int = 0  # GPUs one process sees (n_gpu) when a single process runs
    generation_mode: str | None = None  # legacy | server | colocate | None
    #: why the mode is not known (None then): the script decides use_vllm / vllm_mode at run time
    generation_unknown: str | None = None
    generation: list[int] = field(default_factory=list)
    vllm_device: str | None = None  # legacy: as configured ("auto", "cuda:4")
    vllm_device_resolved: str | None = None  # legacy: "cuda:4"
    server: ServerPlan | None = None
    unresolved: str | None = None  # why the launch's processes are not known (no ranks then)
    problems: dict[str, Any] = field(default_factory=dict)

    @property
    def training(self) -> list[int]:
        return sorted({r.gpu for r in self.ranks if r.gpu is not None})

    def role(self, gpu: int) -> str:
        roles = [f"rank {r.rank}" for r in self.ranks if r.gpu == gpu]
        trained = bool(roles)
        if gpu in self.generation:
            roles.append("vLLM" if self.generation_mode != "colocate" else "vLLM (colocated)")
        if not trained and self.process_gpus > 1 and gpu in self.visible:
            roles.append("visible to rank 0 too")  # one process sees several GPUs (LAY003)
        return " + ".join(roles)
