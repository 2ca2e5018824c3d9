# ruff: noqa: E501 - log lines are quoted as programs print them
"""Two classes no signature covers, found by a traceback's structure and knowledge derived from the
packages' sources: a model attribute read through a module wrapper (TRI035, rules/knowledge/wrappers.yaml
from scripts/derive_wrappers.py) and an optional dependency not installed (TRI013: a NameError on a
name a package imports only when another package is available, rules/knowledge/optional_imports.json.gz
from scripts/derive_optional_imports.py). Each fires on its shapes and stays quiet on near-misses."""

from __future__ import annotations

import ast
import importlib.util
import shutil
import sys
from pathlib import Path
from types import ModuleType

import pytest

from envdoctor.findings import Severity
from tests.triage.helpers import findings, scan_bytes
from tests.triage.test_triage_fix_history import _commit, _git

ROOT = Path(__file__).resolve().parents[2]


def _script(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, ROOT / "scripts" / f"{name}.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules.setdefault(name, mod)
    spec.loader.exec_module(mod)
    return mod


def _found(text: str):
    return findings(scan_bytes(text))


def _rules(text: str) -> set[str]:
    return {f.rule for f in _found(text)}


# -- a model attribute read through a wrapper (TRI035) ------------------------------------------

DEEPSPEED_PEFT = """\
Traceback (most recent call last):
[rank6]:   File "/raid/u/trl/examples/scripts/ppo/ppo.py", line 211, in <module>
[rank6]:     trainer.train()
[rank6]:   File "/raid/u/trl/trl/trainer/ppo_trainer.py", line 462, in train
[rank6]:     _, score, _ = get_reward(
[rank6]:   File "/raid/u/trl/trl/trainer/utils.py", line 1179, in get_reward
[rank6]:     lm_backbone = getattr(model, model.base_model_prefix)
[rank6]:   File "/raid/u/env/lib/python3.12/site-packages/deepspeed/runtime/engine.py", line 519, in __getattr__
[rank6]:     raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")
[rank6]: AttributeError: 'DeepSpeedEngine' object has no attribute 'base_model_prefix'
"""

DDP_USER = """\
Traceback (most recent call last):
  File "/home/u/train.py", line 88, in <module>
    print(model.config.hidden_size)
  File "/opt/env/lib/python3.11/site-packages/torch/nn/modules/module.py", line 1931, in __getattr__
    raise AttributeError(
AttributeError: 'DistributedDataParallel' object has no attribute 'config'
"""

DDP_PACKAGE = """\
Traceback (most recent call last):
  File "/home/u/swift/trainers/ppo.py", line 40, in _save_checkpoint
    self.create_model_card(model_name=name)
  File "/opt/env/lib/python3.11/site-packages/trl/trainer/utils.py", line 1500, in create_model_card
    base_model = self.model.config._name_or_path
  File "/opt/env/lib/python3.11/site-packages/torch/nn/modules/module.py", line 1931, in __getattr__
    raise AttributeError(
AttributeError: 'DistributedDataParallel' object has no attribute 'config'
"""


def test_a_dir_forwarding_engine_holding_a_peft_model_names_the_package_and_a_plain_model():
    (f,) = _found(DEEPSPEED_PEFT)
    assert f.rule == "TRI035" and f.severity == Severity.ERROR
    assert "trl's get_reward" in f.message and "dir()" in f.message and "PeftModel" in f.message
    assert "AutoModelForSequenceClassification" in f.fix and "peft_config" in f.fix
    assert f.evidence["reader"] == "trl" and f.evidence["forwards"] == "dir"


def test_ddp_read_by_the_users_code_reads_it_from_the_unwrapped_model():
    (f,) = _found(DDP_USER)
    assert f.rule == "TRI035" and f.severity == Severity.ERROR
    assert "your code" in f.message and "accelerator.unwrap_model(model).config" in f.fix
    assert "model.module.config" in f.fix


def test_ddp_read_by_a_package_names_its_function_and_the_unwrapped_model():
    (f,) = _found(DDP_PACKAGE)
    assert f.rule == "TRI035" and "trl's create_model_card" in f.message
    assert "was handed the DistributedDataParallel-wrapped model" in f.fix
    assert "accelerator.unwrap_model(model)" in f.fix


def test_a_one_line_ddp_message_is_still_the_class():
    (f,) = _found("AttributeError: 'DataParallel' object has no attribute 'generate'\n")
    assert f.rule == "TRI035" and "model.module.generate" in f.fix


USER_CLASS = """\
Traceback (most recent call last):
  File "/home/u/train.py", line 12, in <module>
    model.config
  File "/home/u/mylib/parallel.py", line 30, in __getattr__
    raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")
AttributeError: 'DataParallel' object has no attribute 'config'
"""

PEFT_CHAIN = """\
Traceback (most recent call last):
  File "/home/u/env/lib/python3.12/site-packages/peft/peft_model.py", line 824, in __getattr__
    return super().__getattr__(name)  # defer to nn.Module's logic
  File "/home/u/env/lib/python3.12/site-packages/torch/nn/modules/module.py", line 1931, in __getattr__
    raise AttributeError(
AttributeError: 'PeftModelForCausalLM' object has no attribute 'vllm_engine'
"""

ENGINE_API = """\
Traceback (most recent call last):
  File "/opt/env/lib/python3.11/site-packages/accelerate/accelerator.py", line 2500, in backward
    self.deepspeed_engine_wrapped.backward(loss, **kwargs)
  File "/opt/env/lib/python3.11/site-packages/accelerate/utils/deepspeed.py", line 270, in backward
    self.engine.{attr}()
  File "/opt/env/lib/python3.11/site-packages/deepspeed/runtime/engine.py", line 519, in __getattr__
    raise AttributeError(f"'{{type(self).__name__}}' object has no attribute '{{name}}'")
AttributeError: 'DeepSpeedEngine' object has no attribute '{attr}'
"""


def test_quiet_on_a_users_class_named_like_a_wrapper():
    assert "TRI035" not in _rules(USER_CLASS)


def test_quiet_on_a_forwarding_wrapper_whose_model_lacks_the_attribute_too():
    assert "TRI035" not in _rules(
        PEFT_CHAIN
    )  # PeftModel forwards: the base model lacks it (unsloth's fast_inference)


def test_quiet_on_the_wrappers_own_api_of_another_release_and_on_a_custom_attribute_of_a_dir_wrapper():
    # an engine method accelerate calls: DeepSpeed's own API (drift, TRI009's), not a model attribute
    assert "TRI035" not in _rules(ENGINE_API.format(attr="get_global_grad_norm"))
    assert "TRI035" not in _rules(ENGINE_API.format(attr="my_custom_head"))
    assert "TRI035" not in _rules(
        "AttributeError: 'DistributedDataParallel' object has no attribute 'no_sync'\n"
    )


def test_quiet_on_another_class():
    assert "TRI035" not in _rules("AttributeError: 'Qwen2ForCausalLM' object has no attribute 'config_x'\n")


# -- the wrapper table's derivation ---------------------------------------------------------------

WRAPPERS_SRC = """
class Engine(Module):
    def __init__(self, model):
        self.module = model
        self.steps = 0

    def __getattr__(self, name):
        _module = self.__dict__["module"]
        if name in dir(_module):
            return getattr(_module, name)
        raise AttributeError(name)

    def backward(self, loss):
        pass


class PipeEngine(Engine):
    def train_batch(self):
        pass


class Plain(Module):
    def __init__(self, module):
        super().__init__()
        self.module = module


class Forward(Module):
    def __getattr__(self, name):
        return getattr(self._orig_mod, name)
"""


def test_the_wrapper_reader_tells_how_each_class_forwards():
    s = _script("derive_wrappers")
    by = {c.name: c for c in ast.parse(WRAPPERS_SRC).body if isinstance(c, ast.ClassDef)}
    assert s.forwarding(by["Engine"]) == ("dir", "module")
    assert s.forwarding(by["Forward"]) == ("getattr", "_orig_mod")
    assert s.forwarding(by["Plain"]) is None and s.holds_module(by["Plain"]) == "module"
    assert {"backward", "steps", "module"} <= s.own_names(by["Engine"])
    assert [c.name for c in s.classes(WRAPPERS_SRC, "Engine*")] == ["Engine", "PipeEngine"]
    table: dict[str, dict[str, object]] = {}
    table["Engine"] = s._entry(by["Engine"], "x", "u", s.own_names(by["Engine"]), table)
    pipe = s._entry(by["PipeEngine"], "x", "u", s.own_names(by["PipeEngine"]), table)
    assert pipe["forwards"] == "dir" and "backward" in pipe["own"] and "train_batch" in pipe["own"]


def test_the_shipped_table_holds_the_wrappers_and_model_attributes():
    from envdoctor.knowledge import knowledge

    doc = knowledge().wrappers
    w = doc["wrappers"]
    assert w["DistributedDataParallel"]["forwards"] == "none" and w["DataParallel"]["forwards"] == "none"
    assert w["DeepSpeedEngine"]["forwards"] == "dir"
    assert (
        w["PeftModelForCausalLM"]["forwards"] == "getattr" and w["OptimizedModule"]["forwards"] == "getattr"
    )
    assert {"config", "base_model_prefix", "generate"} <= set(doc["model_attributes"])


# -- an optional dependency not installed (TRI013 on a NameError) --------------------------------

PEFT_MISSING = """\
Traceback (most recent call last):
  File "/content/trl/examples/scripts/sft.py", line 112, in <module>
    peft_config=get_peft_config(model_config),
  File "/usr/local/lib/python3.10/dist-packages/trl/trainer/utils.py", line 718, in get_peft_config
    peft_config = LoraConfig(
NameError: name 'LoraConfig' is not defined. Did you mean: 'ModelConfig'?
"""


def test_a_name_imported_only_when_peft_is_available_is_peft_not_installed():
    found = _found(PEFT_MISSING)
    assert [f.rule for f in found] == ["TRI013"]  # no competing TRI014 (a later trl commit)
    (f,) = found
    assert f.severity == Severity.ERROR
    assert "peft is not installed" in f.message and "is_peft_available()" in f.message
    assert "pip install 'peft>=0.4.0'" in f.fix  # trl 0.7.11's extra [peft], not a bare name
    assert f.evidence["guard"] == "is_peft_available"


def test_quiet_on_a_name_error_in_the_users_code_and_on_a_name_the_package_does_not_guard():
    user = "Traceback (most recent call last):\n  File \"/home/u/train.py\", line 5, in <module>\n    LoraConfig(r=8)\nNameError: name 'LoraConfig' is not defined\n"
    assert "TRI013" not in _rules(user)
    unguarded = PEFT_MISSING.replace("LoraConfig", "MadeUpConfigName").replace(
        "Did you mean: 'ModelConfig'?", ""
    )
    assert "TRI013" not in _rules(unguarded)


def test_a_module_not_found_inside_a_package_that_lists_it_as_an_extra_asks_its_version():
    log = (
        'Traceback (most recent call last):\n  File "/home/u/train.py", line 3, in <module>\n'
        "    from trl.trainer.utils import get_peft_config\n"
        '  File "/usr/local/lib/python3.10/dist-packages/trl/trainer/utils.py", line 31, in <module>\n'
        "    from peft import LoraConfig, PeftConfig\nModuleNotFoundError: No module named 'peft'\n"
    )
    (f,) = _found(log)
    assert f.rule == "TRI013" and f.severity == Severity.ERROR
    assert "pip install 'peft>=" in f.fix and "extra [peft]" in f.fix


# -- the optional-import index's derivation -------------------------------------------------------

GUARDED = """
import os
from typing import TYPE_CHECKING
from .import_utils import is_peft_available
from trl.core import thing

if is_peft_available():
    from peft import LoraConfig, PeftConfig as PC

if TYPE_CHECKING:
    from deepspeed import DeepSpeedEngine

try:
    import wandb
except ImportError:
    wandb = None

if not is_peft_available() and os.name == "nt":
    pass

def f():
    if is_peft_available():
        from peft import get_peft_model
"""

SETUP_V1 = 'EXTRAS = {"peft": ["peft>=0.4.0"], "test": ["pytest"]}\nsetup(name="trl", install_requires=["torch>=1.4.0", "transformers"], extras_require=EXTRAS)\n'
SETUP_V2 = SETUP_V1.replace("peft>=0.4.0", "peft>=0.8.0")


def test_guarded_imports_reads_module_level_guards_only():
    rows = _script("derive_optional_imports").guarded_imports(GUARDED, "trl")
    assert ("LoraConfig", "peft", "is_peft_available") in rows and ("PC", "peft", "is_peft_available") in rows
    assert ("wandb", "wandb", "except ImportError") in rows
    names = {r[0] for r in rows}
    assert "DeepSpeedEngine" not in names and "get_peft_model" not in names and "thing" not in names


def test_requirements_from_pyproject_and_setup_cfg():
    s = _script("derive_optional_imports")
    toml = '[project]\ndependencies = ["torch>=2"]\n[project.optional-dependencies]\nvllm = ["vllm>=0.10.2,<0.12.0"]\n'
    assert s.requirements({"pyproject.toml": toml}) == {"": ["torch>=2"], "vllm": ["vllm>=0.10.2,<0.12.0"]}
    cfg = "[options]\ninstall_requires =\n    torch>=2\n[options.extras_require]\npeft =\n    peft>=0.8.0\n"
    assert s.requirements({"setup.cfg": cfg}) == {"": ["torch>=2"], "peft": ["peft>=0.8.0"]}


@pytest.mark.skipif(shutil.which("git") is None, reason="needs git")
def test_derive_on_a_repository_of_two_releases(tmp_path: Path) -> None:
    r = tmp_path / "trl"
    r.mkdir()
    _git(r, "init", "-q", "-b", "main")
    _commit(r, {"trl/__init__.py": "", "trl/utils.py": GUARDED, "setup.py": SETUP_V1}, "Initial")
    _git(r, "tag", "v0.1.0")
    _commit(
        r,
        {"trl/utils.py": GUARDED.replace("import wandb", "import wandb as wb"), "setup.py": SETUP_V2},
        "Bump",
    )
    _git(r, "tag", "v0.2.0")
    data = _script("derive_optional_imports").derive(r / ".git", "trl", "trl", since="2020-01-01")
    assert data["releases"] == ["0.1.0", "0.2.0"]
    imports = {(m, n): ranges for m, n, _, _, ranges in data["imports"]}  # type: ignore[union-attr]
    assert imports[("utils.py", "LoraConfig")] == [[0, 1]]
    assert imports[("utils.py", "wandb")] == [[0, 0]] and imports[("utils.py", "wb")] == [[1, 1]]
    requires = {(d, req, extra): ranges for d, req, extra, ranges in data["requires"]}  # type: ignore[union-attr]
    assert requires[("peft", "peft>=0.4.0", "peft")] == [[0, 0]]
    assert requires[("peft", "peft>=0.8.0", "peft")] == [[1, 1]]
    assert requires[("torch", "torch>=1.4.0", "")] == [[0, 1]]


# -- the wrapper's own API of another release: drift (TRI009) -------------------------------------

NO_SYNC = """\
{versions}Traceback (most recent call last):
  File "/opt/env/lib/python3.11/site-packages/transformers/trainer.py", line 2480, in _inner_training_loop
    with self.accelerator.accumulate(model):
  File "/opt/env/lib/python3.11/site-packages/accelerate/accelerator.py", line 1180, in no_sync
    with context():
  File "/opt/env/lib/python3.11/site-packages/deepspeed/runtime/engine.py", line 519, in __getattr__
    raise AttributeError(f"'{{type(self).__name__}}' object has no attribute '{{name}}'")
AttributeError: 'DeepSpeedEngine' object has no attribute 'no_sync'
"""


def test_an_engine_method_of_later_releases_is_drift_with_the_range_that_has_it():
    from envdoctor.knowledge import knowledge

    first, _ = knowledge().wrappers["wrappers"]["DeepSpeedEngine"]["api"]["no_sync"]
    (f,) = _found(NO_SYNC.format(versions=""))
    assert f.rule == "TRI009" and f.severity == Severity.WARNING  # the log shows no deepspeed
    assert "accelerate" in f.message and f"pip install 'deepspeed>={first}'" in f.fix
    (f,) = _found(NO_SYNC.format(versions="deepspeed==0.9.5\n"))
    assert f.rule == "TRI009" and f.severity == Severity.ERROR  # the log's release lacks it
    has = _found(NO_SYNC.format(versions="deepspeed==0.19.5\n"))
    assert all(f.rule not in ("TRI009", "TRI035") for f in has)  # that release has it: not drift


def test_the_api_of_a_subclass_includes_its_parents_and_only_methods_that_came_or_went():
    from envdoctor.knowledge import knowledge

    w = knowledge().wrappers["wrappers"]
    assert set(w["DeepSpeedEngine"]["api"]) <= set(w["PipelineEngine"]["api"])
    assert set(w["DeepSpeedEngine"]["api"]) <= set(w["DeepSpeedEngine"]["own"])


IPYTHON_DP = """\
---------------------------------------------------------------------------
AttributeError                            Traceback (most recent call last)
Cell In[12], line 3
----> 3 out = model.generate(**inputs, max_new_tokens=64)

File ~/miniconda3/envs/rl/lib/python3.10/site-packages/torch/nn/modules/module.py:1931, in Module.__getattr__(self, name)
-> 1931 raise AttributeError(
   1932     f"'{type(self).__name__}' object has no attribute '{name}'"
   1933 )

AttributeError: 'DataParallel' object has no attribute 'generate'
"""


def test_an_ipython_traceback_through_nn_module_getattr_is_the_class():
    (f,) = _found(IPYTHON_DP)
    # the notebook cell that read it is the user's frame (IPython 8's "Cell In[12], line 3")
    assert f.rule == "TRI035" and "model.module.generate" in f.fix
    assert f.message.startswith("your code (In[12]:3) reads generate through DataParallel")


# -- a wrapper's own API read from the bare model (TRI035, the other way round) -------------------

BARE_MODULE = """\
Traceback (most recent call last):
  File "/home/u/train.py", line 88, in <module>
    out = model.module.generate(**batch)
  File "/usr/local/lib/python3.11/site-packages/torch/nn/modules/module.py", line 1940, in __getattr__
    raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")
AttributeError: 'Qwen2ForCausalLM' object has no attribute 'module'
"""

BARE_NO_SYNC = BARE_MODULE.replace("out = model.module.generate(**batch)", "with model.no_sync():").replace(
    "attribute 'module'", "attribute 'no_sync'"
)


def test_unwrapping_a_bare_model_with_module_asks_for_unwrap_model():
    f = next(f for f in _found(BARE_MODULE) if f.rule == "TRI035")
    assert f.severity == Severity.ERROR
    assert "bare Qwen2ForCausalLM" in f.message and "DistributedDataParallel" in f.message
    assert "accelerator.unwrap_model(model)" in f.fix


def test_a_wrapper_method_read_from_the_bare_model_in_user_code_is_an_error():
    f = next(f for f in _found(BARE_NO_SYNC) if f.rule == "TRI035")
    assert f.severity == Severity.ERROR and "no_sync" in f.message
    assert "read no_sync from the wrapper" in f.fix


def test_a_one_line_engine_attribute_on_a_bare_model_is_a_warning():
    f = next(
        f
        for f in _found("AttributeError: 'GPTNeoXForCausalLM' object has no attribute 'optimizer'\n")
        if f.rule == "TRI035"
    )
    assert f.severity == Severity.WARNING and "DeepSpeedEngine" in f.message


def test_quiet_on_a_model_attribute_a_private_name_and_a_raise_outside_getattr():
    assert "TRI035" not in _rules(BARE_MODULE.replace("attribute 'module'", "attribute 'generate'"))
    assert "TRI035" not in _rules(BARE_MODULE.replace("attribute 'module'", "attribute '_module'"))
    own_raise = BARE_MODULE.replace("in __getattr__", "in forward")
    assert "TRI035" not in _rules(own_raise)
    assert "TRI035" not in _rules("AttributeError: 'Trainer' object has no attribute 'optimizer'\n")
