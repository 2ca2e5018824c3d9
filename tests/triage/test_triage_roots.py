# ruff: noqa: E501 - log lines are quoted as programs print them
"""TRI037: the package that failed was imported from another installation than the run's (the
user site, another Python's site-packages, a conda base, Debian's dist-packages under conda)."""

from __future__ import annotations

from pathlib import Path

import pytest

from envdoctor.triage.roots import odd_pair, root_of
from tests.triage.helpers import findings, scan_bytes

DEV = Path(__file__).resolve().parents[2] / "docs" / "validation"

# Set 17's settled case (heldout-2026-11-29i/logs17a/logs/004.log; the author's HPC_SETUP_README
# marks it FIXED by PYTHONNOUSERSITE=1): the verl container's torch imports a triton that a
# pip install --user left in ~/.local. The dev log holds the message alone; here with the frames
# and the path the ImportError prints (the shape of torch 2.6's inductor import of triton).
SET17 = """Traceback (most recent call last):
  File "/usr/local/lib/python3.10/dist-packages/verl/trainer/main_ppo.py", line 21, in <module>
    from verl.trainer.ppo.ray_trainer import RayPPOTrainer
  File "/usr/local/lib/python3.10/dist-packages/vllm/model_executor/layers/fused_moe/fused_moe.py", line 9, in <module>
    import torch._inductor.runtime.hints
  File "/usr/local/lib/python3.10/dist-packages/torch/_inductor/runtime/hints.py", line 36, in <module>
    from triton.compiler.compiler import AttrsDescriptor
ImportError: cannot import name 'AttrsDescriptor' from 'triton.compiler.compiler' (/home/jz4391/.local/lib/python3.10/site-packages/triton/compiler/compiler.py)
"""

# conda/conda-build#235 (the reporter's traceback): a conda environment's Python 2.7 importing
# requests from Debian's /usr/lib/python2.7/dist-packages (an apt-get install put it there)
CONDA_BUILD_235 = """Traceback (most recent call last):
  File "/home/tra/anaconda3/envs/bioinformatics/bin/binstar", line 4, in <module>
    from binstar_client.scripts.cli import main
  File "/home/tra/anaconda3/envs/bioinformatics/lib/python2.7/site-packages/binstar_client/__init__.py", line 5, in <module>
    import requests
  File "/usr/lib/python2.7/dist-packages/requests/__init__.py", line 58, in <module>
    from . import utils
  File "/usr/lib/python2.7/dist-packages/requests/utils.py", line 25, in <module>
    from .compat import parse_http_list as _parse_list_header
  File "/usr/lib/python2.7/dist-packages/requests/compat.py", line 92, in <module>
    from urllib3.packages.ordered_dict import OrderedDict
  File "/usr/lib/python2.7/dist-packages/urllib3/__init__.py", line 16, in <module>
    from .connectionpool import (
  File "/usr/lib/python2.7/dist-packages/urllib3/connectionpool.py", line 33, in <module>
    from ssl import CertificateError
ImportError: cannot import name CertificateError
"""

# a user-site trl (an old pip install --user) run by a conda environment's Python whose
# transformers is newer: the failing frame is the user site's
USER_TRL = """Traceback (most recent call last):
  File "/home/u/rl/train_grpo.py", line 3, in <module>
    from trl import GRPOConfig, GRPOTrainer
  File "/home/u/.local/lib/python3.11/site-packages/trl/__init__.py", line 4, in <module>
    from .trainer import DPOTrainer
  File "/home/u/.local/lib/python3.11/site-packages/trl/trainer/dpo_trainer.py", line 30, in <module>
    from transformers import top_k_top_p_filtering
ImportError: cannot import name 'top_k_top_p_filtering' from 'transformers' (/home/u/miniconda3/envs/rl/lib/python3.11/site-packages/transformers/__init__.py)
"""
# the same with the user site's module attribute missing
USER_ATTR = """Traceback (most recent call last):
  File "/opt/conda/envs/rl/lib/python3.10/site-packages/trl/trainer/grpo_trainer.py", line 600, in __init__
    self.llm = LLM(model=model.name_or_path)
  File "/root/.local/lib/python3.10/site-packages/vllm/entrypoints/llm.py", line 180, in __init__
    torch.cuda.memory._set_allocator_settings("expandable_segments:False")
AttributeError: module 'torch.cuda.memory' has no attribute '_set_allocator_settings'
"""
# PYTHONPATH holding another Python's site-packages
TWO_PYTHONS = """Traceback (most recent call last):
  File "/home/u/proj/train.py", line 2, in <module>
    from trl import SFTTrainer
  File "/opt/conda/envs/ft/lib/python3.11/site-packages/trl/__init__.py", line 5, in <module>
    from .core import set_seed
  File "/usr/local/lib/python3.10/dist-packages/transformers/utils/import_utils.py", line 1500, in __getattr__
    raise ModuleNotFoundError(f"No module named '{name}'")
ModuleNotFoundError: No module named 'transformers.generation.utils'
"""
CONDA_BASE = """Traceback (most recent call last):
  File "/data/miniconda3/envs/grpo/lib/python3.10/site-packages/trl/trainer/grpo_trainer.py", line 25, in <module>
    from accelerate.utils import broadcast_object_list, gather_object
  File "/data/miniconda3/lib/python3.10/site-packages/accelerate/utils/__init__.py", line 1, in <module>
    from .constants import MODEL_NAME
ImportError: cannot import name 'gather_object' from 'accelerate.utils' (/data/miniconda3/lib/python3.10/site-packages/accelerate/utils/__init__.py)
"""


def _rules(text: str) -> dict[str, str]:
    return {f.rule: f.severity.value for f in findings(scan_bytes(text))}


def _one(text: str, rule: str = "TRI037"):
    return next(f for f in findings(scan_bytes(text)) if f.rule == rule)


def test_set17_user_site_triton_under_the_containers_torch_is_tri037_not_drift():
    got = _rules(SET17)
    assert got.get("TRI037") == "error"
    assert "TRI009" not in got  # the second installation, not a release pair, is the cause
    f = _one(SET17)
    assert "triton" in f.message and "/home/jz4391/.local/lib/python3.10/site-packages" in f.message
    assert "torch comes from /usr/local/lib/python3.10/dist-packages" in f.message
    assert "PYTHONNOUSERSITE=1" in f.fix and "pip uninstall triton" in f.fix
    assert "--user" not in f.fix.replace("pip install --user", "")  # pip uninstall has no --user


def test_conda_build_235_debian_dist_packages_under_a_conda_python_is_tri037():
    f = _one(CONDA_BUILD_235)
    assert f.severity.value == "error" and "urllib3" in f.message and "PYTHONPATH" in f.fix


@pytest.mark.parametrize("text", [USER_TRL, USER_ATTR])
def test_the_failure_in_the_user_site_beside_an_environment_is_tri037(text):
    f = _one(text)
    assert "user site" in f.message and "PYTHONNOUSERSITE=1" in f.fix


def test_two_pythons_in_one_traceback_is_tri037():
    f = _one(TWO_PYTHONS)
    assert "Python 3.10" in f.message and "Python 3.11" in f.message and "PYTHONPATH" in f.fix


def test_a_conda_base_beside_one_of_its_environments_is_tri037():
    f = _one(CONDA_BASE)
    assert "conda" in f.message and "accelerate" in f.message


# -- quiet ----------------------------------------------------------------------------------------

# deepspeedai/DeepSpeed#3941 (the reporter's traceback): ~/.local is the only root the log shows
ONLY_USER = """Traceback (most recent call last):
  File "/home/ubuntu/project/openalpaca_training/training.py", line 6, in <module>
    from transformers import LlamaTokenizer, LlamaForCausalLM, GenerationConfig
ImportError: cannot import name 'LlamaTokenizer' from 'transformers' (/home/ubuntu/.local/lib/python3.10/site-packages/transformers/__init__.py)
"""
DEBIAN_MIX = """Traceback (most recent call last):
  File "/usr/local/lib/python3.10/dist-packages/trl/trainer/grpo_trainer.py", line 30, in <module>
    import yaml
  File "/usr/lib/python3/dist-packages/yaml/__init__.py", line 2, in <module>
    from transformers import is_wandb_available
ImportError: cannot import name 'is_wandb_available' from 'transformers' (/usr/local/lib/python3.10/dist-packages/transformers/__init__.py)
"""
# the user's own stack in ~/.local with Debian's apt packages (a system Python's normal mix)
USER_WITH_APT = """Traceback (most recent call last):
  File "/usr/lib/python3/dist-packages/yaml/__init__.py", line 2, in <module>
    import trl
  File "/home/u/.local/lib/python3.10/site-packages/trl/__init__.py", line 4, in <module>
    from transformers import is_wandb_available
ImportError: cannot import name 'is_wandb_available' from 'transformers' (/home/u/.local/lib/python3.10/site-packages/transformers/__init__.py)
"""
# NeMo RL's per-actor venvs (heldout-2026-11-28b/logs2/106.log's paths): two venvs of one Python
RAY_VENVS = """Traceback (most recent call last):
  File "/opt/nemo_rl_venv/lib/python3.13/site-packages/ray/_private/workers/default_worker.py", line 323, in <module>
    worker.main_loop()
  File "/opt/ray_venvs/nemo_rl.models.policy.workers.megatron_policy_worker.MegatronPolicyWorker/lib/python3.13/site-packages/megatron/core/__init__.py", line 3, in <module>
    from megatron.core.parallel_state import get_pg
ImportError: cannot import name 'get_pg' from 'megatron.core.parallel_state' (/opt/ray_venvs/nemo_rl.models.policy.workers.megatron_policy_worker.MegatronPolicyWorker/lib/python3.13/site-packages/megatron/core/parallel_state.py)
"""
# one conda environment through two mount points (heldout-2026-11-29h/logs16b/logs/001.log's paths)
MOUNTS = """Traceback (most recent call last):
  File "/home/wac/johnson/anaconda3/envs/gpt/lib/python3.10/site-packages/torch/distributed/run.py", line 918, in main
    from transformers import Qwen3ForCausalLM
  File "/media/wac/backup/anaconda3/envs/gpt/lib/python3.10/site-packages/transformers/__init__.py", line 9, in <module>
    from .models import qwen3
ImportError: cannot import name 'Qwen3ForCausalLM' from 'transformers' (/media/wac/backup/anaconda3/envs/gpt/lib/python3.10/site-packages/transformers/__init__.py)
"""
# a user-site launcher over the environment's own packages: the failure lies in the environment
ENV_FAILS = """Traceback (most recent call last):
  File "/home/u/.local/lib/python3.11/site-packages/accelerate/commands/launch.py", line 10, in <module>
    import trl
  File "/home/u/miniconda3/envs/rl/lib/python3.11/site-packages/trl/trainer/grpo_trainer.py", line 25, in <module>
    from transformers import Trainer
ImportError: cannot import name 'Trainer' from 'transformers' (/home/u/miniconda3/envs/rl/lib/python3.11/site-packages/transformers/__init__.py)
"""
# a source checkout beside the user site (no second installation root)
CHECKOUT = """Traceback (most recent call last):
  File "/home/u/trl/trl/trainer/grpo_trainer.py", line 25, in <module>
    from transformers import Trainer
  File "/home/u/.local/lib/python3.11/site-packages/transformers/__init__.py", line 26, in <module>
    from . import dependency_versions_check
ImportError: cannot import name 'Trainer' from 'transformers' (/home/u/.local/lib/python3.11/site-packages/transformers/__init__.py)
"""
# a None's attribute in the user site beside the environment: a bug, not an installation's
NONE_ATTR = USER_ATTR.replace(
    "AttributeError: module 'torch.cuda.memory' has no attribute '_set_allocator_settings'",
    "AttributeError: 'NoneType' object has no attribute 'shape'",
)


@pytest.mark.parametrize(
    "text",
    [ONLY_USER, DEBIAN_MIX, USER_WITH_APT, RAY_VENVS, MOUNTS, ENV_FAILS, CHECKOUT, NONE_ATTR],
    ids=[
        "only-user",
        "debian-mix",
        "user-with-apt",
        "ray-venvs",
        "mounts",
        "env-fails",
        "checkout",
        "none-attr",
    ],
)
def test_quiet(text):
    assert "TRI037" not in _rules(text)


@pytest.mark.parametrize(
    "log",
    [
        "heldout-2026-11-29e/logs13c/logs/004.log",  # SkyRL's .venv with Ray's anaconda3 (a ValueError)
        "heldout-2026-11-29c/logs11c/logs/003.log",  # pip show's Location: of another Python
        "heldout-2026-11-28b/logs2/106.log",  # NeMo RL's Ray venvs
        "heldout-2026-11-28c/logs/004.log",  # ~/.local the only root
        "heldout-2026-11-29g/logs15b/logs/017.log",  # one env spelled Lib and lib
    ],
)
def test_quiet_on_dev_logs_with_two_paths(log):
    path = DEV / log
    if not path.exists():
        pytest.skip("dev log not in this checkout")
    assert "TRI037" not in _rules(path.read_text(errors="replace"))


def test_roots_and_pairs():
    user = root_of("/root/.local/lib/python3.10/site-packages/triton/compiler/compiler.py")
    assert user is not None and user.user and user.python == "3.10"
    deb = root_of("/usr/lib/python3/dist-packages/yaml/__init__.py")
    local = root_of("/usr/local/lib/python3.10/dist-packages/torch/__init__.py")
    assert deb and local and deb.debian and local.debian and odd_pair(deb, local) is None
    mamba = root_of("/home/k/.local/share/mamba/envs/trl/lib/python3.11/site-packages/trl/x.py")
    assert mamba is not None and not mamba.user  # an environment under ~/.local, not the user site
    win = root_of("C:\\Users\\m\\AppData\\Roaming\\Python\\Python311\\site-packages\\trl\\x.py")
    assert win is not None and win.user and win.python == "3.11"
    assert root_of("/home/u/trl/trl/trainer/grpo_trainer.py") is None


# -- the facts: the log shows no paths (set 17's own log), the machine shows two copies ----------

SET17_LINE = "ImportError: cannot import name 'AttrsDescriptor' from 'triton.compiler.compiler'\n"


def _snap(triton: dict) -> dict:
    from tests.conftest import MODERN, snapshot

    return snapshot(packages={**MODERN, "triton": triton})


def test_set17s_line_with_facts_showing_a_user_site_triton_is_pkg013_in_checks_words():
    from tests.triage.helpers import judge

    two = {
        "version": "3.2.0",
        "path": "~/.local/lib/python3.10/site-packages",
        "path_kind": "user site",
        "other_copies": [
            {
                "version": "3.1.0",
                "path": "/usr/local/lib/python3.10/dist-packages",
                "path_kind": "environment",
            }
        ],
    }
    got = {f.rule: f for f in findings(scan_bytes(SET17_LINE), judge(_snap(two)))}
    # one failure, one id, one text: check's PKG013, in the words check gives it (issue #35)
    assert "PKG013" in got and "TRI037" not in got and "TRI009" not in got
    assert "triton 3.2.0 in ~/.local" in got["PKG013"].message and "PYTHONNOUSERSITE=1" in got["PKG013"].fix
    from envdoctor.checks.context import Context
    from envdoctor.checks.import_shadow import installed_twice
    from envdoctor.facts.snapshot import from_dict

    facts = from_dict(_snap(two), "t")
    pkg = facts.packages["triton"]
    what, fix = installed_twice("triton", pkg, pkg.shadowed())
    assert got["PKG013"].message.startswith(what) and got["PKG013"].fix == fix
    from envdoctor.checks.engine import run_rules

    checked = [f for f in run_rules(Context(facts=facts)).findings if f.rule == "PKG013"]
    assert checked and checked[0].message == what and checked[0].fix == fix


@pytest.mark.parametrize(
    "triton",
    [
        {"version": "3.2.0"},  # installed once
        {  # the copies agree
            "version": "3.1.0",
            "path": "~/.local/lib/python3.10/site-packages",
            "path_kind": "user site",
            "other_copies": [{"version": "3.1.0", "path": "/env", "path_kind": "environment"}],
        },
        {  # the environment's copy first
            "version": "3.1.0",
            "path": "/usr/local/lib/python3.10/dist-packages",
            "path_kind": "environment",
            "other_copies": [{"version": "3.2.0", "path": "/opt/x", "path_kind": "environment"}],
        },
    ],
    ids=["once", "agree", "env-first"],
)
def test_set17s_line_without_a_second_copy_in_the_facts_is_not_tri037(triton):
    from tests.triage.helpers import judge

    got = {f.rule for f in findings(scan_bytes(SET17_LINE), judge(_snap(triton)))}
    assert "TRI037" not in got and "PKG013" not in got


# Debian's own Python with apt's python3-torch and the user's pip install --user transformers (how
# a system Python's users add packages): the user site's frame fails on its own line, a call into
# the system's torch; nothing shows a second transformers the user site hides
SYSTEM_PY_USER_STACK = """Traceback (most recent call last):
  File "/home/u/proj/train_grpo.py", line 30, in <module>
    trainer.train()
  File "/home/u/.local/lib/python3.10/site-packages/transformers/trainer.py", line 2122, in train
    return inner_training_loop(
  File "/usr/lib/python3/dist-packages/torch/nn/modules/module.py", line 1500, in _call_impl
    return forward_call(*args, **kwargs)
  File "/home/u/.local/lib/python3.10/site-packages/transformers/models/qwen2/modeling_qwen2.py", line 200, in forward
    attn = torch.nn.functional.scaled_dot_product_attention(q, k, v, enable_gqa=True)
TypeError: scaled_dot_product_attention() got an unexpected keyword argument 'enable_gqa'
"""
# an HPC module's Python (no conda): the user-site trl calls the module's transformers
MODULE_PY_USER_TRL = USER_TRL.replace(
    "/home/u/miniconda3/envs/rl/lib/python3.11", "/sw/eb/software/Python/3.11.3/lib/python3.11"
)


@pytest.mark.parametrize("text", [SYSTEM_PY_USER_STACK, MODULE_PY_USER_TRL], ids=["debian", "module"])
def test_a_user_site_stack_on_a_system_python_failing_on_its_own_line_is_not_tri037(text):
    assert "TRI037" not in _rules(text)


def test_a_system_pythons_import_resolved_into_the_user_site_is_still_tri037():
    """The container's (or system's) own code imported the name, and the module came from ~/.local."""
    text = SET17.replace(
        "/usr/local/lib/python3.10/dist-packages",
        "/sw/eb/software/Python/3.10.8/lib/python3.10/site-packages",
    )
    assert _rules(text).get("TRI037") == "error"


def test_macos_user_site_is_a_user_root():
    """A macOS framework or Homebrew Python's user site (~/Library/Python/3.X/lib/python/site-packages)."""
    user = root_of("/Users/ann/Library/Python/3.11/lib/python/site-packages/triton/compiler/compiler.py")
    env = root_of("/opt/homebrew/anaconda3/envs/rl/lib/python3.11/site-packages/torch/__init__.py")
    assert user is not None and user.user and user.minor == "3.11"
    assert env is not None and odd_pair(user, env) == "user site"
    text = SET17.replace(
        "/home/jz4391/.local/lib/python3.10/site-packages",
        "/Users/ann/Library/Python/3.10/lib/python/site-packages",
    )
    assert _rules(text).get("TRI037") == "error"
