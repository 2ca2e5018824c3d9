"""API drift told by the symbol history (envdoctor/triage/symbols.py, rules/knowledge/symbols/):
a failure that names a symbol (an imported name, a module, a class's attribute, a call's keyword
or positional arguments) of a stack package whose history shows it added or removed at a release
is drift, with the release and the pin that works, also without frames and without versions.

Two kinds of tests: scripts/derive_symbol_history.py on wheels built here (offline), then triage
against the history derived from them (the lookups' logic, with releases chosen here); and triage
against the shipped history (real releases: TRL's selective_log_softmax, vLLM's LoRAConfig)."""

from __future__ import annotations

import gzip
import importlib.util
import json
import sys
import textwrap
import zipfile
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pytest

from envdoctor.findings import Severity
from envdoctor.knowledge import symbol_history
from envdoctor.triage import symbols
from tests.triage.helpers import findings, scan_bytes

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def derive() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "derive_symbol_history", ROOT / "scripts" / "derive_symbol_history.py"
    )
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    sys.modules["derive_symbol_history"] = mod
    spec.loader.exec_module(mod)
    return mod


def _wheel(folder: Path, name: str, version: str, files: dict[str, str]) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    whl = folder / f"{name}-{version}-py3-none-any.whl"
    with zipfile.ZipFile(whl, "w") as zf:
        for path, src in files.items():
            zf.writestr(path, textwrap.dedent(src))
        zf.writestr(f"{name}-{version}.dist-info/METADATA", f"Name: {name}\nVersion: {version}\n")
    return whl


UTILS = """
    def helper(x, y=1):
        return x

    def collate(batch):
        return batch
"""
UTILS_2 = (
    UTILS
    + """
    def fancy_softmax(logits, index):
        return logits

    def shared_softmax(logits):
        return logits

    def twice_added():
        pass
"""
)
UTILS_3 = UTILS_2.replace("def collate(batch):", "def collate(batch, num_workers, rank):")
PEFT = """
    def shared_softmax(logits):
        return logits

    class BaseTrainer:
        def __init__(self):
            self.model = None
"""
PEFT_2 = (
    PEFT
    + """
        def train(self):
            self.late_steps = 0

    def twice_added():
        pass
"""
)
TRAINER = """
    from dataclasses import dataclass
    from peft.tuners import BaseTrainer
    from .utils import helper

    class SubTrainer(BaseTrainer):
        pass

    def build_plan(model, legacy_flag=False):
        return model

    @dataclass
    class PlanConfig:
        beta: float = 0.1
        old_knob: int = 3

    class PlanTrainer:
        def __init__(self, model, args=None):
            self.model = model
            self.legacy_buffer = []

        def generate(self, prompts):
            return prompts
"""
TRAINER_3 = """
    from dataclasses import dataclass
    from peft.tuners import BaseTrainer
    from .utils import helper

    class SubTrainer(BaseTrainer):
        pass

    def build_plan(model, **kwargs):
        return model

    @dataclass
    class PlanConfig:
        beta: float = 0.1

    class PlanTrainer:
        def __init__(self, model, args=None, reward_scale=1.0):
            self.model = model

        def train(self):
            pass
"""
INIT = """
    from .trainer.utils import helper
    _import_structure = {"trainer": ["PlanTrainer", "PlanConfig"]}
"""


@pytest.fixture(scope="module")
def cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A wheel cache of three synthetic TRL releases (the layout refresh_knowledge.py keeps)."""
    root = tmp_path_factory.mktemp("wheels")
    base = {"trl/__init__.py": INIT, "trl/trainer/__init__.py": ""}
    first = {**base, "trl/trainer/utils.py": UTILS, "trl/trainer/plan.py": TRAINER}
    _wheel(root / "trl", "trl", "1.0.0", first)
    _wheel(
        root / "trl",
        "trl",
        "1.1.0",
        {**base, "trl/trainer/utils.py": UTILS_2, "trl/trainer/plan.py": TRAINER, "trl/cli/serve.py": ""},
    )
    _wheel(
        root / "trl",
        "trl",
        "1.2.0",
        {**base, "trl/trainer/utils.py": UTILS_3, "trl/trainer/plan.py": TRAINER_3, "trl/cli/serve.py": ""},
    )
    _wheel(root / "peft", "peft", "0.13.0", {"peft/__init__.py": "", "peft/tuners.py": PEFT})
    _wheel(root / "peft", "peft", "0.14.0", {"peft/__init__.py": "", "peft/tuners.py": PEFT_2})
    return root


@pytest.fixture(scope="module")
def derived(derive: ModuleType, cache: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("symbols")
    argv = ["--cache", str(cache), "--offline", "--out", str(out), "--package", "trl", "--package", "peft"]
    assert derive.main(argv) == 0
    return out


def _doc(out: Path, package: str) -> dict:
    return json.loads(gzip.decompress((out / f"{package}.json.gz").read_bytes()))


def test_the_history_holds_each_symbol_with_its_releases(derived: Path) -> None:
    doc = _doc(derived, "trl")
    assert doc["schema"] == symbol_history.SCHEMA and doc["releases"] == ["1.0.0", "1.1.0", "1.2.0"]
    mods = doc["symbols"]["m"]
    assert mods["trl.cli.serve"] == "1-2"  # a module added in 1.1.0
    assert mods["trl.trainer.utils"]["n"]["fancy_softmax"] == "1-2"  # a name added in 1.1.0
    assert mods["trl.trainer.utils"]["f"]["helper"] == {"@": 0, "x": 0, "y": 0}  # parameters
    plan = mods["trl.trainer.plan"]
    assert "helper" not in plan["n"]  # a plain module's own import is not its API
    assert mods["trl"]["n"]["helper"] == 0  # a package's re-export of its own module's name is
    trainer = plan["c"]["PlanTrainer"]
    assert trainer["a"]["legacy_buffer"] == "0-1" and trainer["a"]["generate"] == "0-1"  # self.X, a method
    assert trainer["a"]["train"] == "2"
    assert trainer["p"]["__init__"]["reward_scale"] == "2"  # a keyword added in 1.2.0
    config = plan["c"]["PlanConfig"]
    assert config["a"]["old_knob"] == "0-1" and config["p"]["__init__"]["old_knob"] == "0-1"  # a field
    assert mods["trl"]["n"]["PlanTrainer"] == 0  # a lazy export of the package's __init__


def test_a_file_is_parsed_once_per_content(derive: ModuleType, cache: Path, monkeypatch) -> None:
    calls: list[bool] = []
    real = derive.file_facts
    monkeypatch.setattr(derive, "file_facts", lambda src, init: calls.append(init) or real(src, init))
    facts = derive.FactsCache(None)
    archives = derive.releases_of("trl", cache, offline=True, since="1.0.0")
    derive.derive("trl", archives, facts, log=lambda _: None)
    # 14 files read in 3 releases, 8 distinct texts (the two __init__s, three of utils, two of
    # the trainers' module, the empty cli/serve.py): each parsed once
    assert len(calls) == 8


def test_the_budget_is_held(derive: ModuleType, cache: Path, tmp_path: Path) -> None:
    argv = ["--cache", str(cache), "--offline", "--out", str(tmp_path), "--package", "trl", "--budget", "10"]
    assert derive.main(argv) == 1


def test_the_cache_is_refused_inside_the_repository(derive: ModuleType) -> None:
    with pytest.raises(SystemExit):
        derive.main(["--cache", str(ROOT / "rules"), "--offline", "--package", "trl"])


@pytest.fixture
def synthetic(derived: Path, monkeypatch) -> Iterator[Path]:
    """Triage reads the history derived from the wheels above in place of the shipped one."""
    monkeypatch.setattr(symbol_history, "_dir", lambda: derived)
    symbols.history.cache_clear()
    symbols.packages.cache_clear()
    yield derived
    symbols.history.cache_clear()
    symbols.packages.cache_clear()


def _drift(text: str):
    return [f for f in findings(scan_bytes(text)) if f.rule in ("TRI009", "TRI003")]


def test_a_name_added_at_a_release_with_its_module_cut_off(synthetic: Path) -> None:
    (f,) = _drift("ImportError: cannot import name 'fancy_softmax'\n")
    assert f.rule == "TRI009" and f.severity == Severity.ERROR
    assert "added in trl 1.1.0" in f.message and "trl.trainer.utils" in f.message
    assert f.fix.startswith("pip install 'trl>=1.1.0'")


def test_names_the_user_code_defines_get_no_claim(synthetic: Path) -> None:
    for line in (
        "ImportError: cannot import name 'my_reward_fn'\n",
        "AttributeError: 'MyTrainer' object has no attribute 'legacy_buffer'\n",
        "TypeError: my_func() got an unexpected keyword argument 'reward_scale'\n",
        # a folder named like the package shadows it; a circular import
        "ImportError: cannot import name 'fancy_softmax' from 'trl.trainer.utils' (unknown location)\n",
        "ImportError: cannot import name 'fancy_softmax' from partially initialized module "
        "'trl.trainer.utils' (most likely due to a circular import)\n",
    ):
        assert all(f.rule != "TRI009" for f in _drift(line)), line


def test_a_name_several_packages_define(synthetic: Path) -> None:
    """``shared_softmax`` is TRL's from 1.1.0 and peft's in every release: only TRL's releases
    lack it, so only TRL can be the package the failure names. ``twice_added`` came in both
    TRL 1.1.0 and peft 0.14.0: the message does not say whose, no claim."""
    (f,) = _drift("ImportError: cannot import name 'shared_softmax'\n")
    assert f.rule == "TRI009" and "pip install 'trl>=1.1.0'" in f.fix
    assert all(f.rule != "TRI009" for f in _drift("ImportError: cannot import name 'twice_added'\n"))


def test_an_attribute_another_packages_base_class_sets(synthetic: Path) -> None:
    """TRL's SubTrainer extends peft's BaseTrainer, whose train() sets late_steps from peft 0.14.0:
    drift between trl and peft; a warning without versions (a method that has not run yet gives
    the same message), an error where the log's peft lacks it."""
    line = "AttributeError: 'SubTrainer' object has no attribute 'late_steps'\n"
    (f,) = _drift(line)
    assert f.rule == "TRI009" and f.severity == Severity.WARNING and "between trl and peft" in f.message
    assert "pip install 'peft>=0.14.0'" in f.fix
    (g,) = _drift("peft==0.13.0\n" + line)
    assert g.severity == Severity.ERROR and "peft 0.13.0 lacks it" in g.message
    (h,) = _drift("peft==0.14.0\n" + line)
    assert h.rule == "TRI003" and "has not set it yet" in h.message


def test_an_attribute_removed_at_a_release(synthetic: Path) -> None:
    text = (
        "[rank0]: Traceback (most recent call last):\n"
        '[rank0]:   File "/home/u/proj/train.py", line 12, in <module>\n'
        "[rank0]:     out = trainer.generate(batch)\n"
        "[rank0]: AttributeError: 'PlanTrainer' object has no attribute 'generate'\n"
    )
    (f,) = _drift(text)
    assert f.rule == "TRI009" and f.severity == Severity.ERROR
    assert "removed in trl 1.2.0" in f.message
    assert f.fix.startswith("pip install 'trl<1.2.0'") and "update your code" in f.fix


def test_a_dataclass_field_and_a_keyword(synthetic: Path) -> None:
    (f,) = _drift("TypeError: PlanConfig.__init__() got an unexpected keyword argument 'old_knob'\n")
    assert f.severity == Severity.ERROR and f.fix.startswith("pip install 'trl<1.2.0'")
    (g,) = _drift("TypeError: PlanTrainer.__init__() got an unexpected keyword argument 'reward_scale'\n")
    assert g.severity == Severity.ERROR and g.fix.startswith("pip install 'trl>=1.2.0'")


def test_a_keyword_named_by_some_releases_and_taken_by_kwargs_in_others(synthetic: Path) -> None:
    """build_plan(legacy_flag=) is named until 1.1.0, and 1.2.0 takes **kwargs: the releases that
    name it decide; a keyword no release names is taken only where **kwargs is."""
    (f,) = _drift("TypeError: build_plan() got an unexpected keyword argument 'legacy_flag'\n")
    assert f.fix.startswith("pip install 'trl<1.2.0'")
    (g,) = _drift("TypeError: build_plan() got an unexpected keyword argument 'seed'\n")
    assert g.fix.startswith("pip install 'trl>=1.2.0'")


def test_positional_arguments_a_release_added(synthetic: Path) -> None:
    text = "TypeError: collate() missing 2 required positional arguments: 'num_workers' and 'rank'\n"
    (f,) = _drift(text)
    assert f.rule == "TRI009" and f.severity == Severity.ERROR
    assert "added in trl 1.2.0" in f.message and f.fix.startswith("pip install 'trl<1.2.0'")


def test_a_module_added_at_a_release_with_the_callers_frame(synthetic: Path) -> None:
    text = (
        "Traceback (most recent call last):\n"
        '  File "/env/lib/python3.11/site-packages/swift/llm/rollout.py", line 3, in <module>\n'
        "    from trl.cli.serve import main\n"
        "ModuleNotFoundError: No module named 'trl.cli.serve'\n"
        "trl==1.0.0\n"
    )
    (f,) = _drift(text)
    assert f.rule == "TRI009" and "between ms-swift and trl" in f.message
    assert "the log's trl 1.0.0 lacks it" in f.message
    assert "pip install 'trl>=1.1.0'" in f.fix
    assert "the ms-swift release made for the installed trl 1.0.0" in f.fix


def test_the_logs_version_that_has_the_symbol_is_not_drift(synthetic: Path) -> None:
    text = "trl version: 1.1.0\nImportError: cannot import name 'fancy_softmax' from 'trl.trainer.utils'\n"
    (f,) = _drift(text)
    assert f.rule == "TRI003" and f.severity == Severity.WARNING
    assert "not API drift of trl" in f.message and "trl 1.1.0 has" in f.message


def test_a_version_past_the_history_says_so(synthetic: Path) -> None:
    text = "trl version: 1.3.0\nAttributeError: 'PlanTrainer' object has no attribute 'generate'\n"
    (f,) = _drift(text)
    assert f.rule == "TRI009" and "newer than the history" in f.message
    # a symbol the newest release read still has, missing from a newer one: changed past the horizon
    text = "trl version: 1.3.0\nImportError: cannot import name 'fancy_softmax' from 'trl.trainer.utils'\n"
    (g,) = _drift(text)
    assert "changed after that release" in g.message and "horizon" in g.message
    assert g.fix.startswith("pip install 'trl>=1.1.0,<=1.2.0'")


# -- the shipped history (real releases) -------------------------------------------------------


def _shipped(text: str):
    if not symbols.packages():
        pytest.skip("no symbol history shipped")
    return _drift(text)


def test_trl_selective_log_softmax_one_line() -> None:
    (f,) = _shipped("ImportError: cannot import name 'selective_log_softmax'\n")
    assert f.rule == "TRI009" and f.severity == Severity.ERROR
    assert "pip install 'trl>=0.15.0'" in f.fix


def test_vllm_lora_config_attribute_removed() -> None:
    if "vllm" not in symbols.packages():
        pytest.skip("no vLLM history shipped")
    (f,) = _shipped(
        "AttributeError: 'LoRAConfig' object has no attribute 'lora_extra_vocab_size'. "
        "Did you mean: '_return_value'?\n"
    )
    assert f.rule == "TRI009" and f.severity == Severity.ERROR
    assert "vllm<" in f.fix and "LoRAConfig.lora_extra_vocab_size" in f.message
    assert "the calling code (the log shows no frames)" in f.message  # not "your code": unseen


def test_vllm_submodule_added() -> None:
    if "vllm" not in symbols.packages():
        pytest.skip("no vLLM history shipped")
    (f,) = _shipped("ModuleNotFoundError: No module named 'vllm.utils.argparse_utils'\n")
    assert f.severity == Severity.ERROR and "pip install 'vllm>=0.11.1'" in f.fix  # 0.11.1's wheel has it


def test_the_history_is_read_only_for_a_drift_shaped_failure(monkeypatch) -> None:
    """A log whose failure names no symbol (an OOM, a ValueError) never opens the history."""

    def refuse(package: str) -> None:
        raise AssertionError(f"the history of {package} was read")

    monkeypatch.setattr(symbols, "history", refuse)
    monkeypatch.setattr(symbols, "packages", lambda: ("trl",))
    findings(scan_bytes("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB\n"))
    findings(scan_bytes("ValueError: num_generations must divide the batch\n"))
    findings(scan_bytes("step 1 loss 0.5\nstep 2 loss 0.4\n"))


def test_a_member_whose_class_went_later_is_said_added_where_it_came():
    """PolicyAndValueWrapper.gradient_checkpointing_disable came in TRL 1.0.0 and went with its
    class in 1.13.0: the change that matters for a run that lacks it is its addition."""
    from envdoctor.triage import symbols
    from envdoctor.triage.traceback import Traceback

    tb = Traceback(
        exc_type="AttributeError",
        message="'PolicyAndValueWrapper' object has no attribute 'gradient_checkpointing_disable'",
    )
    v = symbols.verdict(tb, {})
    assert v is not None and v.change() == "added in trl 1.0.0"
    assert v.fits() == ">=1.0.0,<1.13.0"


def test_a_keyword_there_since_the_oldest_release_read_says_an_older_release_may_lack_it_too():
    """DPOTrainer took loss_type= up to TRL 0.12 and already in the oldest release read: without the
    log's version the keyword may be refused by a newer TRL (removed) or an older one (not yet
    there), so the message says so and the fix covers both ways."""
    from tests.triage.helpers import findings, scan_bytes

    log = "TypeError: DPOTrainer.__init__() got an unexpected keyword argument 'loss_type'\n"
    (f,) = [f for f in findings(scan_bytes(log)) if f.rule == "TRI009"]
    assert "removed in trl 0.13.0" in f.message and "oldest trl release read" in f.message
    assert "DPOConfig(loss_type=" in f.fix and "may predate it: pip install 'trl>=" in f.fix
    shown = "trl 0.14.0\n" + log  # the log's version settles the direction: no caveat
    (g,) = [f for f in findings(scan_bytes(shown)) if f.rule == "TRI009"]
    assert "may predate it" not in g.fix
