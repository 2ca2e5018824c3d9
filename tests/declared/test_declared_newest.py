"""DCL009: TRL declared with no upper bound gets, on a fresh install, the newest release the declared
requirements allow; a config key that release removed stops every such install (TiandaSun/KG_GRPO,
hama-jp/Open-R1_Tutorial, yoenoo/unsloth_vllm_profiling: max_prompt_length with trl unpinned or
trl>=0.14.0, after TRL 0.28.0 removed it)."""

from __future__ import annotations

import pytest

from tests.conftest import run_cli
from tests.declared.stack_repos import CONFIGS, committed_repo


def _hook(repo, *rules: str) -> str:
    out = run_cli("hook", *CONFIGS, *[a for r in rules for a in ("--select", r)], cwd=repo)
    assert out.returncode in (0, 1), out.stderr
    return " ".join(out.stdout.split())


@pytest.mark.parametrize("line", ["trl>=0.14.0", "trl", "trl[vllm]>=0.18"])
def test_an_open_range_resolves_to_the_newest_release_which_refuses_the_key(tmp_path, line):
    repo = committed_repo(tmp_path, {"requirements.txt": line + "\n"})
    text = _hook(repo, "DCL009", "DCL001")
    assert (
        "DCL009" in text and "max_prompt_length" in text and "removed `max_prompt_length` in 0.28.0" in text
    )
    # one finding per key: which release a fresh install gets, not that the range spans it
    assert "spans the removal of `max_prompt_length`" not in text


def test_a_pin_of_a_dependency_holds_trl_back(tmp_path):
    # transformers 4.46 is below what TRL 0.28+ requires: pip backtracks to an older TRL
    repo = committed_repo(tmp_path, {"requirements.txt": "trl>=0.14.0\ntransformers==4.46.0\n"})
    assert "DCL009" not in _hook(repo, "DCL009")


@pytest.mark.parametrize(
    "files",
    [
        {"requirements.txt": "trl>=0.14.0,<0.28\n"},  # an upper bound: DCL001's to judge
        {"requirements.txt": "trl==0.27.2\n"},
        {
            "requirements.txt": "trl>=0.14.0\n",
            ".gitmodules": '[submodule "trl"]\n\tpath = trl\n\turl = https://github.com/me/trl\n',
        },
        {
            "requirements.txt": "trl>=0.14.0\n",
            "README.md": "```bash\npip install trl==0.19.0\npip install -r requirements.txt\n```\n",
        },
    ],
)
def test_quiet_where_the_release_is_bounded_or_trl_comes_from_elsewhere(tmp_path, files):
    repo = committed_repo(tmp_path, files)
    assert "DCL009" not in _hook(repo, "DCL009")


SCRIPT = """\
from typing import Any
from trl import GRPOConfig


def build(cfg) -> GRPOConfig:
    kwargs: dict[str, Any] = {"output_dir": "out", "max_prompt_length": cfg.max_prompt_length}
    kwargs.update({"loss_type": cfg.loss_type})
    kwargs["beta"] = 0.0
    try:
        return GRPOConfig(**kwargs)
    except TypeError:
        kwargs.pop(cfg.drop, None)
        return GRPOConfig(**kwargs)
"""


def test_keys_of_a_mapping_changed_in_place_before_the_call_are_read(tmp_path):
    """TiandaSun/KG_GRPO: GRPOConfig(**grpo_kwargs), the dict display updated, then popped only
    after the first call: its keys reach that call (values unknown)."""
    repo = committed_repo(tmp_path, {"requirements.txt": "trl>=0.14.0\n", "src/train.py": SCRIPT})
    out = run_cli("hook", "--select", "DCL009", cwd=repo)
    text = " ".join(out.stdout.split())
    assert "DCL009" in text and "src/train.py:10" in text and "train.py:13" not in text


def test_a_subfolders_readme_install_step_declares_what_no_file_does(tmp_path):
    """hama-jp/Open-R1_Tutorial: examples/README.md's `uv pip install … trl …` is the only install."""
    script = 'from trl import GRPOConfig\nGRPOConfig(output_dir="o", max_prompt_length=64)\n'
    files = {
        "examples/README.md": "```bash\n$ uv pip install torch transformers trl\n```\n",
        "examples/ch1/train.py": script,
    }
    repo = committed_repo(tmp_path, files)
    text = " ".join(run_cli("hook", "--select", "DCL009", cwd=repo).stdout.split())
    assert "DCL009" in text and "examples/README.md" in text
    # a vendored project's README (its folder has a project file) is not the repository's install
    (repo / "examples" / "setup.py").write_text("from setuptools import setup\nsetup(name='x')\n")
    assert "DCL009" not in " ".join(run_cli("hook", "--select", "DCL009", cwd=repo).stdout.split())


def test_a_run_scripts_install_line_declares_what_no_file_does(tmp_path):
    """yoenoo/unsloth_vllm_profiling: run_grpo_qwq.sh's `uv pip install … vllm trl peft` before its
    launch is the repository's only install of TRL."""
    run = "set -xe\nuv pip install bitsandbytes accelerate vllm trl peft\naccelerate launch train.py\n"
    repo = committed_repo(tmp_path, {"run_grpo.sh": run})
    text = " ".join(run_cli("hook", *CONFIGS, "--select", "DCL009", cwd=repo).stdout.split())
    assert "DCL009" in text and "run_grpo.sh" in text
    # a file that declares TRL wins over the script's step
    (repo / "requirements.txt").write_text("trl==0.27.2\n")
    assert "DCL009" not in " ".join(run_cli("hook", *CONFIGS, "--select", "DCL009", cwd=repo).stdout.split())


def test_a_run_scripts_exact_pin_is_not_the_repositorys_install(tmp_path):
    """Neelectric/open-r1_safety: launch.sh upgrades vLLM to 0.11.2 in the author's venv while
    setup.py pins torch 2.6.0; the script's pin is no declaration of the stack (no false PKG004)."""
    run = "source /root/venv/bin/activate\nuv pip install vllm==0.11.2\naccelerate launch train.py\n"
    repo = committed_repo(tmp_path, {"launch.sh": run, "requirements.txt": "torch==2.6.0\ntrl==0.18.0\n"})
    out = run_cli("hook", *CONFIGS, cwd=repo)
    text = " ".join(out.stdout.split())
    assert "vllm 0.11.2" not in text and "PKG004" not in text


@pytest.mark.parametrize(
    "reqs",
    [
        # Kevin-Li-2025/grpo-deepseek-r1-t4 8830af5 (held-out set 17, healthy: 100 steps on a Kaggle
        # T4): Unsloth beside an open trl; unsloth_zoo caps trl, so a fresh install does not get
        # the newest TRL
        "transformers>=4.48.0\ntrl>=0.14.0\npeft>=0.14.0\nunsloth\ntorch\n",
        "trl>=0.14.0\nunsloth[colab-new] @ git+https://github.com/unslothai/unsloth.git\n",
        "trl\nunsloth_zoo\n",
    ],
)
def test_a_package_that_bounds_trl_itself_leaves_the_release_open_at_warning(tmp_path, reqs):
    repo = committed_repo(tmp_path, {"requirements.txt": reqs})
    text = _hook(repo, "DCL009", "DCL001")
    assert "DCL009" not in text and "resolves TRL" not in text
    # the range still spans the removal: said, at warning, as 'TRL 0.28.0 and newer reject it'
    assert "DCL001" in text and "0.28.0 and newer reject it" in text


#: HumyuShi/LoPT d4cb99e's train_grpo.py (held-out set 15, healthy): the keys GRPOConfig takes on the
#: installed TRL kept through inspect.signature, the rest dropped before the call
FILTERED = """\
import inspect
from trl import GRPOConfig


def config_kwargs_for_current_trl(kwargs):
    params = inspect.signature(GRPOConfig.__init__).parameters
    return {k: v for k, v in kwargs.items() if k in params}


training_args = GRPOConfig(**config_kwargs_for_current_trl({"output_dir": "o", "max_prompt_length": 512}))
"""


def _gate(repo) -> str:
    args = ["--launch", "python train.py", "--select", "DCL001", "--select", "DCL009", "grpo.yaml"]
    return " ".join(run_cli("hook", *args, cwd=repo).stdout.split())


@pytest.mark.parametrize("line", ["trl>=0.29.0,<0.30.0", "trl>=0.14.0"])
def test_a_script_that_keeps_only_the_keys_its_trl_takes_refuses_none(tmp_path, line):
    files = {
        "requirements.txt": line + "\n",
        "train.py": FILTERED,
        "grpo.yaml": "output_dir: o\nmax_prompt_length: 512\nnum_generations: 4\n",
    }
    repo = committed_repo(tmp_path, files)
    text = _gate(repo)
    assert "DCL001" not in text and "DCL009" not in text
    # without the filter, the same key is refused (LoPT's range allows no release that has it)
    (repo / "train.py").write_text(
        'from trl import GRPOConfig\nGRPOConfig(output_dir="o", max_prompt_length=512)\n'
    )
    text = _gate(repo)
    assert "DCL001" in text or "DCL009" in text
