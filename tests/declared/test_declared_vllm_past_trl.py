"""DCL010: TRL pinned without its ``[vllm]`` extra and vLLM declared as a range reaching past the vLLM
releases that TRL supports: a fresh install resolves the newest vLLM the declared requirements allow,
outside TRL's band (its extra and its import-time check). Issue #35, set 25:
thread-GRPO_Margin-e46c6ec (trl==1.6.0, vllm>=0.8.5; the settled fix narrowed it to
>=0.12.0,<0.20.0). ``hook --fix`` narrows the line once the closure proved it."""

from __future__ import annotations

import pytest

from tests.conftest import run_cli
from tests.declared.stack_repos import committed_repo

GRPO = "use_vllm: true\nvllm_mode: colocate\nnum_generations: 4\nper_device_train_batch_size: 4\n"
PYPROJECT = """\
[project]
name = "bm"
version = "0.1"
dependencies = ["torch>=2.2"]

[project.optional-dependencies]
train = ["transformers==4.57.6", "trl==1.6.0"]
vllm = [
  "vllm{spec}; platform_system == 'Linux'",
]
"""


def _repo(tmp_path, spec: str = ">=0.8.5", config: str = GRPO, trl: str = "trl==1.6.0"):
    text = PYPROJECT.replace("{spec}", spec).replace('"trl==1.6.0"', f'"{trl}"')
    return committed_repo(tmp_path, {"pyproject.toml": text, "grpo.yaml": config})


def _hook(repo, *args: str):
    return run_cli("hook", *args, "grpo.yaml", "pyproject.toml", "--select", "DCL010", cwd=repo)


def test_a_range_past_trls_band_resolves_outside_it(tmp_path):
    out = _hook(_repo(tmp_path))
    text = " ".join(out.stdout.split())
    assert (
        "DCL010" in text and "resolves vLLM 0.23.0" in text
    )  # transformers 4.57.6 caps it (0.24 wants 5.5.3)
    assert "declare 'vllm>=0.12.0,<=0.19.0'" in text and "1 warning" in text


@pytest.mark.parametrize(
    ("spec", "config", "trl"),
    [
        (">=0.12.0,<=0.19.0", GRPO, "trl==1.6.0"),  # inside the band
        (">=0.14,<0.19", GRPO, "trl==1.6.0"),
        (">=0.8.5", GRPO, "trl[vllm]==1.6.0"),  # the extra binds pip to TRL's band
        (">=0.8.5", "use_vllm: false\nnum_generations: 4\n", "trl==1.6.0"),  # vLLM not generating
        (">=0.8.5", GRPO, "trl>=1.6.0"),  # TRL not pinned: DCL006's, not this rule's
    ],
)
def test_quiet(tmp_path, spec, config, trl):
    assert "DCL010" not in _hook(_repo(tmp_path, spec, config, trl)).stdout


def test_hook_fix_narrows_the_line_and_the_hook_is_quiet(tmp_path):
    repo = _repo(tmp_path)
    done = _hook(repo, "--fix")
    assert "DCL010" in done.stderr, done.stderr
    assert "\"vllm>=0.12.0,<=0.19.0; platform_system == 'Linux'\"," in (repo / "pyproject.toml").read_text()
    assert "DCL010" not in _hook(repo).stdout
