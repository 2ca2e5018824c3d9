"""Which training framework the run's trainer line starts: TRL's GRPOTrainer (None: as envdoctor
has always judged it) or another framework's entry point (verl, OpenRLHF, ms-swift, …), from the
launch line (``-m MODULE``, a console script, a script path) and the training script's imports
read by AST. The frameworks and their entry points are data: ``rules/knowledge/frameworks.yaml``.

A framework that does not run TRL's GRPOTrainer, or whose config keys are not GRPOConfig's,
breaks the premise of TRL's rules: the engine leaves those out (``checks/engine.py``) and the
report says so once (ENV002)."""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass, replace
from typing import Any

from envdoctor.plan import shell_words
from envdoctor.plan.interface import Launch, TrainingScript


@dataclass(frozen=True)
class Framework:
    """The framework that trains: ``key`` (frameworks.yaml), ``name`` as said, ``runs_trl`` (TRL's
    GRPOTrainer does the step), ``trl_keys`` (its keys are GRPOConfig's), ``trl_layout`` (TRL's
    process layout holds), ``evidence`` (``python -m verl.trainer.main_ppo (the launch line)``)."""

    key: str
    name: str
    runs_trl: bool
    trl_keys: bool
    trl_layout: bool
    evidence: str
    sources: tuple[str, ...] = ()


def _table() -> dict[str, dict[str, Any]]:
    from envdoctor.knowledge import knowledge

    table = knowledge().frameworks.get("frameworks") or {}
    return table if isinstance(table, dict) else {}


def _make(key: str, entry: dict[str, Any], evidence: str) -> Framework:
    return Framework(
        key=key,
        name=str(entry.get("name") or key),
        runs_trl=bool(entry.get("runs_trl")),
        trl_keys=bool(entry.get("trl_keys")),
        trl_layout=bool(entry.get("trl_layout")),
        evidence=evidence,
        sources=tuple(str(s) for s in entry.get("sources") or ()),
    )


def _words(raw: str) -> list[str]:
    try:
        return shell_words.split(raw, comments=True)
    except ValueError:
        return raw.split()


def _under(module: str, prefix: str) -> bool:
    return module == prefix or module.startswith(prefix + ".")


def _by_module(module: str, table: dict[str, dict[str, Any]]) -> tuple[str, str] | None:
    """The framework whose module ``module`` is (the longest prefix wins: EasyR1's
    ``verl.trainer.main`` over verl's ``verl.trainer``), with the prefix matched."""
    best: tuple[str, str] | None = None
    for key, entry in table.items():
        for prefix in entry.get("modules") or ():
            if _under(module, str(prefix)) and (best is None or len(str(prefix)) > len(best[1])):
                best = (key, str(prefix))
    return best


#: a package's own script found through its install path: ``$(python -c "import swift;
#: print(swift.__path__[0])")/cli/rlhf.py`` runs ``swift/cli/rlhf.py``, and so does
#: ``$(python -c 'import swift, os; print(os.path.dirname(swift.__file__) + "/cli/rlhf.py")')``
_PACKAGE_PATH = re.compile(
    r"import\s+(?P<pkg>\w+)\b.{0,80}?(?:(?P=pkg)\.__path__\[0\]\W*\)(?P<rest>/[\w/.-]+\.py)"
    r"|os\.path\.dirname\((?P=pkg)\.__file__\)\s*\+\s*[\"'](?P<added>/[\w/.-]+\.py)[\"'])"
)
#: a Hydra override's config root: ``actor_rollout_ref`` of ``+actor_rollout_ref.model.path=…``
_OVERRIDE = re.compile(r"^(?:~|\+\+?)?(?P<root>[A-Za-z_]\w*)\.[\w.]+=")
#: a shell script the line runs (``bash scripts/train.sh``), read for the launch lines it holds
_SHELL = re.compile(r"^(?:ba|z|da)?sh$")
MAX_SHELL_BYTES = 200_000


def _program(words: list[str]) -> str | None:
    """The program one command runs once its wrappers and ``VAR=value`` prefixes are taken off
    (``nohup uv run --extra gpu swift rlhf …``: ``swift``), as the launch parser peels them
    (``plan/wrappers.py``); inside ``bash -c '…'``, the first command's."""
    from envdoctor.plan.wrappers import peel

    peeled = peel(words, {})
    if peeled.inner is not None:
        inner = _words(peeled.inner.split(";")[0].split("&&")[0])
        peeled = peel(inner, {}) if inner else peeled
    return peeled.command[0] if peeled.command and peeled.inner is None else None


def _from_words(
    words: list[str],
    table: dict[str, dict[str, Any]],
    module: str | None = None,
    script: str | None = None,
    where: str = "the launch line",
) -> Framework | None:
    """The framework one command's words start: ``-m MODULE``, a script path, a console script."""
    modules = [module] if module else []
    modules += [words[i + 1] for i, w in enumerate(words[:-1]) if w == "-m"]
    for mod in modules:
        found = _by_module(mod, table)
        if found:
            return _make(found[0], table[found[0]], f"`-m {mod}` on {where}")
    scripts = [script] if script else []
    scripts += [w for w in words if w.endswith(".py")]
    scripts += [m["pkg"] + (m["rest"] or m["added"]) for w in words for m in _PACKAGE_PATH.finditer(w)]
    for path in scripts:
        path = path.replace("\\", "/")
        for key, entry in table.items():
            for tail in entry.get("scripts") or ():
                if path == tail or path.endswith("/" + str(tail)):
                    return _make(key, entry, f"{where} runs {path}")
    program = _program(words)
    if program:
        name = program.rsplit("/", 1)[-1]
        for key, entry in table.items():
            if name in (entry.get("consoles") or ()):
                return _make(key, entry, f"{where} runs `{name}`")
    roots = [(m["root"], w) for w in words if (m := _OVERRIDE.match(w))]
    for root, word in roots:  # a Hydra override of the framework's own config tree (a recipe)
        for key, entry in table.items():
            if root in (entry.get("overrides") or ()):
                return _make(key, entry, f"`{word.split('=', 1)[0]}=` on {where}")
    return None


def _from_shell(words: list[str], table: dict[str, dict[str, Any]]) -> Framework | None:
    """The framework a shell script the line runs starts (``bash scripts/train.sh``: its
    ``swift rlhf …`` line), read as text, never run."""
    import os

    from envdoctor.plan.shell_lines import command_runs

    for i, word in enumerate(words):
        shell = i > 0 and _SHELL.match(words[i - 1].rsplit("/", 1)[-1])
        if not word.endswith(".sh") or not (shell or i == 0 or word.startswith("./")):
            continue
        try:
            if os.path.getsize(word) > MAX_SHELL_BYTES:
                continue
            with open(word, encoding="utf-8", errors="replace") as fh:
                text = fh.read()
        except OSError:
            continue
        runs = list(command_runs(text))
        for number, run, _ in runs:
            found = _from_words(run, table, where=f"{word}:{number}")
            if found is not None:
                return found
        # none runs a framework itself: a Python script that does, unless a line's script is
        # TRL's (a data step copied from verl imports verl; the training line's script is TRL's)
        first: Framework | None = None
        for number, run, _ in runs:
            trls, found = _shell_script(run, word)
            if trls:
                return None
            if found is not None and first is None:
                first = replace(found, evidence=f"{word}:{number} runs {found.evidence}")
        if first is not None:
            return first
    return None


def from_launch(trainer: Launch | None) -> Framework | None:
    """The framework the trainer's launch line starts (or a shell script it runs), or None (TRL's
    or not known)."""
    if trainer is None or trainer.is_server:
        return None
    table = _table()
    words = _words(trainer.raw)
    where = trainer.source or "the launch line"  # a shell script's line the launch runs (followed)
    return _from_words(words, table, trainer.module, trainer.script, where) or _from_shell(words, table)


def from_script(script: TrainingScript | None) -> Framework | None:
    """The framework the training script read imports and hands the training to: it imports a
    framework's package and builds no TRL GRPOTrainer itself (a script that builds one is TRL's,
    whatever helpers it imports)."""
    if script is None or script.problem or script.builds_grpo or script.grpo_in_module:
        return None  # its own code, or a repository module it imports, builds TRL's GRPOTrainer
    if script.config_class is not None and script.config_class.kind in ("trl", "own"):
        return None  # it builds TRL's GRPOConfig (or a subclass) for its trainer
    if script.own_grpo and script.trl_import is None:
        # the GRPOTrainer it builds is a class of the repository and nothing it reads imports TRL: a
        # GRPO loop of its own (on transformers / torch), whose config is its own, not a GRPOConfig
        # (transformers' own Trainer, with envdoctor's callback, is still judged as before)
        return Framework(
            key="own",
            name="the repository's own trainer",
            runs_trl=False,
            trl_keys=False,
            trl_layout=False,
            evidence=f"{script.path} builds {script.own_grpo}; no module it reads imports TRL",
        )
    table = _table()
    for key, entry in table.items():
        for package in entry.get("packages") or ():
            line = script.packages.get(str(package))
            if line is not None:
                return _make(key, entry, f"{script.path}:{line} imports {package}")
    if script.trl_import is None:  # a launcher it writes runs the framework's entry point
        for module, where in script.writes_modules.items():
            found = _by_module(module, table)
            if found:
                return _make(found[0], table[found[0]], f"{where} writes the command `-m {module}`")
    return None


def _shell_script(run: list[str], shell: str) -> tuple[bool, Framework | None]:
    """Whether a Python script that a shell script's line runs (``exec python src/run.py …``)
    is TRL's (it or a repository module it imports imports TRL or builds its GRPOTrainer), and
    the framework it hands the training to (``from_script``): its imports, or the command line
    it or a repository module it imports writes (``-m verl.trainer.main_ppo``). Found beside
    the working directory, or beside the shell script's folder."""
    import os

    from envdoctor.plan.launch import parse_launch
    from envdoctor.plan.script_plan import _read
    from envdoctor.plan.script_reader import read_script

    try:
        launch = parse_launch(shlex.join(run))
    except Exception:  # a line the launch parser refuses: not one to follow
        return False, None
    path = launch.script
    if not path or launch.unresolved or not path.endswith(".py"):
        return False, None
    if not os.path.isfile(path):
        beside = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(shell))), path)
        if not os.path.isfile(beside):
            return False, None
        path = beside
    decl = _read(path, read_script)
    if not decl.problem and (decl.builds_grpo or decl.grpo_in_module or decl.trl_import):
        return True, None
    found = from_script(
        TrainingScript(
            decl.path,
            problem=decl.problem,
            builds_grpo=decl.builds_grpo,
            grpo_in_module=decl.grpo_in_module,
            config_class=decl.config_class,
            packages=decl.packages,
            trl_import=decl.trl_import,
            writes_modules=decl.writes_modules,
        )
    )
    return False, replace(found, evidence=f"{launch.script} ({found.evidence})") if found else None


def detect(trainer: Launch | None, script: TrainingScript | None) -> Framework | None:
    """The run's training framework when it is not TRL's own GRPOTrainer script (None: TRL, or
    nothing known, judged as before)."""
    if script is not None and not script.problem and script.builds_grpo:
        return None  # the script read builds TRL's GRPOTrainer: TRL's, whatever the line or its imports
    return from_launch(trainer) or from_script(script)


#: how the report names the rule families a framework's run leaves out
FAMILIES = {
    "trl-keys": "TRL's config-key rules (GRPOConfig fields, values and batch arithmetic)",
    "trl-layout": "TRL's process-layout rules (accelerate / torchrun ranks, vllm_device, trl vllm-serve)",
    "trl-trainer": "TRL-release rules that need GRPOTrainer to run (TRL's vLLM range, TRL's known failures)",
}

#: the Framework field whose truth keeps a rule family (a need of registry.NEEDS)
_KEPT_BY = {"trl-keys": "trl_keys", "trl-layout": "trl_layout", "trl-trainer": "runs_trl"}


def leaves_out(framework: Framework | None, need: str) -> bool:
    """Whether a rule that needs ``need`` (``trl-keys`` …) is left out for this framework."""
    field = _KEPT_BY.get(need)
    return framework is not None and field is not None and not getattr(framework, field)
