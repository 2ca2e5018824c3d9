"""`envdoctor hook` judges the stack a repository declares (real git repositories)."""

from __future__ import annotations

import json
import re

import pytest

from tests.conftest import run_cli, snapshot
from tests.declared.stack_repos import CONFIGS, LEGACY, OPEN_R1_PINS, committed_repo, requirements

OLD_TORCH = {**OPEN_R1_PINS, "torch": "2.5.1"}


def hook(repo, *args):
    return run_cli("hook", *CONFIGS, *args, cwd=repo)


def test_open_r1_pins_and_recipes_are_clean(tmp_path):
    repo = committed_repo(
        tmp_path, {"requirements.txt": requirements(OPEN_R1_PINS), "setup.py": "open('RAN', 'w')\n"}
    )
    out = hook(repo, "--strict", "-v")
    assert out.returncode == 0, out.stdout + out.stderr
    assert "No issues found" in out.stdout
    assert "vllm 0.8.5.post1 (requirements.txt:6)" in out.stdout
    assert "torch 2.6.0 (requirements.txt:3)" in out.stdout
    assert "setup.py: no setup(...) call; not read" in out.stderr and not (repo / "RAN").exists()
    # the hook's own environment (torch 2.13 CPU, no vLLM) is not what is judged
    assert "2.13" not in out.stdout and "not installed" not in out.stdout


def test_torch_that_vllm_was_not_built_for_is_an_error_naming_both(tmp_path):
    repo = committed_repo(tmp_path, {"requirements.txt": requirements(OLD_TORCH)})
    out = hook(repo)
    assert out.returncode == 1, out.stdout
    text = " ".join(out.stdout.split())
    assert "PKG004 vllm 0.8.5.post1 requires torch==2.6.0, declared torch 2.5.1" in text
    assert "fix: require 'torch==2.6.0'" in text
    # issue 35: keeping torch 2.5.1 means vLLM 0.7.x, below TRL 0.18's range (>=0.8.3) and a
    # known failure of its server (no worker_extension_cls); with this recipe no TRL release
    # resolves either, so no alternative is offered
    assert "vllm==0.7.3" not in text


def test_vllm_from_the_trl_extra_resolves_for_the_pinned_torch(tmp_path):
    """Without a vLLM pin, trl[vllm]==0.18.0 asks vllm>=0.8.3: with torch 2.6.0 pip installs
    0.8.5.post1; with torch 2.5.1 no release of the range fits."""
    pins = {k: v for k, v in OPEN_R1_PINS.items() if k != "vllm"}
    good = hook(committed_repo(tmp_path / "good", {"requirements.txt": requirements(pins)}))
    assert good.returncode == 0, good.stdout
    assert "vllm 0.8.5.post1 (resolved from >=0.8.3 for torch 2.6.0)" in good.stdout
    bad = hook(
        committed_repo(tmp_path / "bad", {"requirements.txt": requirements({**pins, "torch": "2.5.1"})})
    )
    text = " ".join(bad.stdout.split())
    assert bad.returncode == 1 and "DCL003" in text
    assert "vllm>=0.8.3 via trl[vllm]==0.18.0 (requirements.txt:5)" in text
    assert "torch==2.5.1 (requirements.txt:3)" in text and "require 'torch==2.6.0'" in text


def test_trl_range_spanning_the_vllm_device_removal_is_a_warning(tmp_path):
    # a bounded range (an open one resolves to the newest release on a fresh install: DCL009)
    repo = committed_repo(
        tmp_path,
        {"requirements.txt": "trl>=0.17,<0.19\nvllm==0.8.5.post1\ntorch==2.6.0\n", "legacy.yaml": LEGACY},
    )
    out = run_cli("hook", "legacy.yaml", cwd=repo)
    text = " ".join(out.stdout.split())
    assert out.returncode == 0, text  # a warning: some releases of the range accept it
    assert "DCL001" in text and "spans the removal of `vllm_device`" in text
    assert "TRL 0.17.0 accepts it, TRL 0.18.0 … 0.18.2 reject it" in text
    assert "require 'trl<0.18.0'" in text
    assert run_cli("hook", "legacy.yaml", "--strict", cwd=repo).returncode == 1
    closed = committed_repo(
        tmp_path / "closed", {"requirements.txt": "trl>=0.15,<0.18\n", "legacy.yaml": LEGACY}
    )
    quiet = run_cli("hook", "legacy.yaml", "--select", "DCL", cwd=closed)
    assert quiet.returncode == 0 and "DCL001" not in quiet.stdout
    newer = committed_repo(tmp_path / "newer", {"requirements.txt": "trl>=0.18\n", "legacy.yaml": LEGACY})
    error = run_cli("hook", "legacy.yaml", "--select", "DCL", cwd=newer)
    assert error.returncode == 1 and "allows none of these releases" in error.stdout


UV_LOCK = """version = 1
requires-python = ">=3.10"

[[package]]
name = "torch"
version = "{torch}"
source = {{ registry = "https://pypi.org/simple" }}

[[package]]
name = "vllm"
version = "0.8.5.post1"
source = {{ registry = "https://pypi.org/simple" }}
"""
POETRY_LOCK = """[[package]]
name = "torch"
version = "{torch}"
description = "Tensors"
optional = false

[[package]]
name = "vllm"
version = "0.8.5.post1"
optional = false
"""
CONDA = """name: grpo
channels: [pytorch, conda-forge]
dependencies:
  - python=3.11
  - pytorch::pytorch={torch}
  - pip
  - pip:
    - vllm==0.8.5.post1
"""
DOCKERFILE = """FROM nvidia/cuda:12.4.1-devel-ubuntu22.04
RUN pip install --no-cache-dir \\
      "torch=={torch}" \\
    && pip install vllm==0.8.5.post1
"""
#: format → (files, the file and line where torch is declared)
VARIANTS = {
    "uv.lock": (
        {
            "pyproject.toml": '[project]\nname = "x"\nversion = "0"\ndependencies = ["vllm", "torch"]\n',
            "uv.lock": UV_LOCK,
        },
        "uv.lock:5",
    ),
    "poetry.lock": ({"poetry.lock": POETRY_LOCK}, "poetry.lock:2"),
    "environment.yml": ({"environment.yml": CONDA}, "environment.yml:5"),
    "Dockerfile": ({"Dockerfile": DOCKERFILE}, "Dockerfile:3"),
    "requirements-includes": (
        {
            "requirements.txt": "-r requirements/gpu.txt\n-c constraints.txt\n",
            "requirements/gpu.txt": "vllm==0.8.5.post1\n-r ../requirements.txt\n",
            "constraints.txt": "torch=={torch}\n",
        },
        "constraints.txt:1",
    ),
}


@pytest.mark.parametrize("variant", sorted(VARIANTS))
def test_formats_good_and_bad_torch(tmp_path, variant):
    files, where = VARIANTS[variant]
    good = committed_repo(tmp_path / "good", {k: v.format(torch="2.6.0") for k, v in files.items()})
    ok = hook(good, "--select", "PKG,DCL", "--format", "json")
    assert ok.returncode == 0, ok.stdout
    report = json.loads(ok.stdout)["files"][0]["report"]
    assert "torch 2.6.0" in report["areas"][0]["summary"]
    bad = committed_repo(tmp_path / "bad", {k: v.format(torch="2.5.1") for k, v in files.items()})
    out = hook(bad, "--select", "PKG,DCL", "--format", "json")
    assert out.returncode == 1, out.stdout
    found = json.loads(out.stdout)["files"][0]["report"]["findings"]
    (finding,) = [f for f in found if f["severity"] == "error"]
    assert finding["rule"] == "PKG004" and "declared torch 2.5.1" in finding["message"]
    assert f"{finding['evidence']['file']}:{finding['evidence']['line']}" == where


def test_no_declared_stack_judges_the_configs_alone(tmp_path):
    repo = committed_repo(tmp_path, {})
    out = hook(repo, "-v")
    assert out.returncode == 0, out.stdout
    assert "Packages — not checked: no declared stack" in out.stdout
    assert not re.search(r"[✗!] PKG", out.stdout)  # vLLM absent here: not a finding


def test_requirements_option_and_assume_override(tmp_path):
    repo = committed_repo(
        tmp_path,
        {"requirements.txt": requirements(OPEN_R1_PINS), "deploy/train.txt": requirements(OLD_TORCH)},
    )
    assert hook(repo).returncode == 0
    explicit = hook(repo, "--requirements", "deploy/train.txt")
    assert explicit.returncode == 1 and "PKG004" in explicit.stdout
    assert "deploy/train.txt" in explicit.stdout
    assumed = hook(repo, "--requirements", "deploy/train.txt", "--assume", "torch==2.6.0")
    assert assumed.returncode == 0, assumed.stdout
    missing = hook(repo, "--requirements", "nope.txt")
    assert missing.returncode == 2 and "nope.txt" in missing.stderr
    both = hook(repo, "--requirements", "deploy/train.txt", "--installed")
    assert both.returncode == 2 and "give one of them" in both.stderr


def test_conflicting_declarations_and_newer_than_knowledge(tmp_path):
    repo = committed_repo(
        tmp_path,
        {
            "requirements.txt": "torch==2.6.0\nvllm==0.99.0\n",
            "environment.yml": "dependencies:\n  - pytorch=2.5.1\n",
        },
    )
    out = hook(repo, "--select", "DCL")
    text = " ".join(out.stdout.split())
    assert (
        "DCL004 torch is declared as torch==2.6.0 (requirements.txt:1) and as torch==2.5.1 "
        "(environment.yml:2)" in text
    )
    assert "DCL005 vllm 0.99.0" in text and "newer than envdoctor's knowledge" in text
    quiet = committed_repo(tmp_path / "q", {"requirements.txt": requirements(OPEN_R1_PINS)})
    assert "DCL" not in hook(quiet, "--select", "DCL").stdout


def _dcl004(repo, *files):
    out = run_cli("hook", "--format", "json", "--select", "DCL004", *CONFIGS, *files, cwd=repo)
    assert out.returncode in (0, 1), out.stderr
    found = json.loads(out.stdout)["files"][0]["report"]["findings"]
    return [f["message"] for f in found if f["rule"] == "DCL004"]


def test_two_sub_projects_are_two_environments_one_project_is_one(tmp_path):
    """Issue 35 (QingyangZhang/EMPO): trl/ and verl-empo/ each with its own requirements and
    setup.py are two installs; their pins never meet. Within one project (a requirements file
    and the setup.py beside it) a clash is still one."""
    setup = "from setuptools import setup\nsetup(name='{}', install_requires=['{}'])\n"
    subs = {
        "trl/setup.py": setup.format("a", "datasets>=3.2.0"),
        "trl/requirements.txt": "torch==2.5.1\ntransformers==4.48.3\n",
        "verl/setup.py": setup.format("b", "torch==2.6.0"),
        "verl/requirements-npu.txt": "transformers>=4.52.4\n",
        "eval/requirements.txt": "transformers==4.40.0\n",
    }
    passed = [f for f in subs if not f.startswith("eval/")] + ["eval/requirements.txt"]
    quiet = committed_repo(tmp_path / "q", subs)
    assert _dcl004(quiet, *passed) == []
    clash = committed_repo(
        tmp_path / "c", {**subs, "trl/requirements.txt": "datasets==3.1.0\ntorch==2.5.1\n"}
    )
    (msg,) = _dcl004(clash, *passed, "trl/requirements.txt")
    assert msg.startswith("datasets is declared as ") and "datasets==3.1.0 (trl/requirements.txt:1)" in msg
    assert "datasets>=3.2.0 (trl/setup.py:2)" in msg


def test_folders_with_their_own_pins_and_no_project_file_are_environments_of_their_own(tmp_path):
    """alexchilton/CAS_NLP_MODULE4_GRPO (fourth held-out set, after its measurement): lara/ and
    expert_guy/post_training_project/ each pin their own stack with a requirements file and no
    project file; 66 DCL004 warnings set one against the other. A requirements/ folder still holds
    the pins of its parent: base.txt against gpu.txt there is one environment."""
    subs = {
        "lara/requirements_cluster.txt": "huggingface-hub==0.36.0\ntorch==2.6.0\n",
        "expert_guy/post/requirements.txt": "huggingface-hub==0.30.2\ntorch==2.5.1\n",
    }
    quiet = committed_repo(tmp_path / "q", subs)
    assert _dcl004(quiet, *subs) == []
    folder = {"requirements/base.txt": "torch==2.6.0\n", "requirements/gpu.txt": "torch==2.5.1\n"}
    clash = committed_repo(tmp_path / "c", folder)
    (msg,) = _dcl004(clash, *folder)
    assert msg.startswith("torch is declared as ")


def test_a_lock_files_entries_split_by_markers_are_not_a_conflict(tmp_path):
    """Issue 35 (RLDiary/Wordle-GRPO): uv.lock keeps one entry per resolution fork (triton 3.3.0
    for Linux, 3.3.1 for macOS): not two declarations of one environment; the Linux one is what
    is judged. Two lock files of one project that disagree still clash."""
    lock = (
        'version = 1\n\n[[package]]\nname = "triton"\nversion = "3.3.0"\n'
        "resolution-markers = [\n    \"python_full_version < '3.13' and sys_platform == 'linux'\",\n]\n\n"
        '[[package]]\nname = "triton"\nversion = "3.3.1"\n'
        "resolution-markers = [\n    \"sys_platform == 'darwin'\",\n]\n\n"
        '[[package]]\nname = "torch"\nversion = "2.7.0"\n'
        "resolution-markers = [\n    \"python_full_version >= '3.13' and sys_platform == 'linux'\",\n]\n\n"
        '[[package]]\nname = "torch"\nversion = "2.7.1"\n'
        "resolution-markers = [\n    \"python_full_version < '3.13' and sys_platform == 'linux'\",\n]\n"
    )
    repo = committed_repo(tmp_path / "q", {"uv.lock": lock})
    assert _dcl004(repo, "uv.lock") == []
    from envdoctor.commands.hook_stack import declared_facts

    facts = declared_facts([], [], repo)
    triton = facts.extra["declared"]["stack"]["triton"]
    assert [d.specifier for d in triton.decls] == ["==3.3.0"]
    clash = committed_repo(tmp_path / "c", {"uv.lock": lock, "requirements.txt": "triton==3.2.0\n"})
    (msg,) = _dcl004(clash, "uv.lock")
    assert "triton==3.3.0 (uv.lock" in msg and "triton==3.2.0 (requirements.txt:1)" in msg


def test_range_that_excludes_a_pinned_requirement(tmp_path):
    repo = committed_repo(tmp_path, {"requirements.txt": "vllm==0.8.5.post1\ntorch<2.6\n"})
    out = hook(repo, "--select", "DCL")
    text = " ".join(out.stdout.split())
    assert out.returncode == 1 and "DCL002 vllm 0.8.5.post1" in text
    assert "requires torch==2.6.0; the declared torch<2.6 (requirements.txt:2) excludes it" in text
    ok = committed_repo(tmp_path / "ok", {"requirements.txt": "vllm==0.8.5.post1\ntorch>=2.5\n"})
    assert "DCL002" not in hook(ok, "--select", "DCL").stdout


def test_installed_flag_judges_the_hook_environment(tmp_path):
    repo = committed_repo(tmp_path, {"requirements.txt": requirements(OPEN_R1_PINS)})
    from importlib.metadata import version

    out = hook(repo, "--installed", "--select", "PKG")
    packages = next(line for line in out.stdout.splitlines() if "Packages (" in line)
    assert f"trl {version('trl')}" in packages and "0.18.0" not in packages


def test_a_range_the_trl_extra_excludes_is_an_error_and_json_lists_the_stack(tmp_path):
    repo = committed_repo(tmp_path, {"requirements.txt": "trl[vllm]==0.18.0\nvllm<0.8\n"})
    out = hook(repo, "--select", "DCL", "--format", "json")
    report = json.loads(out.stdout)["files"][0]["report"]
    (finding,) = report["findings"]
    assert out.returncode == 1 and finding["rule"] == "DCL002"
    assert finding["message"] == (
        "trl 0.18.0 (trl[vllm]==0.18.0 (requirements.txt:1)) requires "
        "vllm>=0.8.3; the declared vllm<0.8 (requirements.txt:2) "
        "excludes it: pip cannot install both"
    )
    assert (finding["evidence"]["file"], finding["evidence"]["line"]) == ("requirements.txt", 2)
    stack = report["extra"]["declared_stack"]
    assert stack["trl"]["version"] == "0.18.0" and stack["trl"]["how"] == "pinned"
    assert stack["vllm"]["version"] is None and stack["vllm"]["specifier"] == "<0.8,>=0.8.3"


def test_conda_python_outside_the_python_range_of_the_vllm_release(tmp_path):
    env = "dependencies:\n  - python={py}\n  - pip:\n    - vllm==0.8.5.post1\n    - torch==2.6.0\n"
    bad = committed_repo(tmp_path / "bad", {"environment.yml": env.format(py="3.13")})
    out = run_cli("hook", "environment.yml", cwd=bad)
    text = " ".join(out.stdout.split())
    assert (
        out.returncode == 1
        and "requires python<3.13,>=3.9; the declared python==3.13.* (environment.yml:2) excludes it" in text
    )
    good = committed_repo(tmp_path / "good", {"environment.yml": env.format(py="3.11")})
    assert run_cli("hook", "environment.yml", cwd=good).returncode == 0


def test_trl_range_reaching_lines_that_do_not_support_the_declared_vllm(tmp_path):
    pins = "vllm==0.8.5.post1\ntorch==2.6.0\n"
    repo = committed_repo(tmp_path, {"requirements.txt": "trl>=0.18\n" + pins})
    out = " ".join(hook(repo, "--select", "DCL").stdout.split())
    assert "DCL006" in out and "TRL 0.18.0 … 0.20.0 support it, TRL 0.21.0 … " in out
    assert "require 'trl>=0.18,<0.21.0'" in out
    narrow = committed_repo(tmp_path / "n", {"requirements.txt": "trl>=0.18,<0.21\n" + pins})
    assert "DCL006" not in hook(narrow, "--select", "DCL").stdout


def test_vllm_missing_from_a_declared_stack_is_a_warning(tmp_path):
    """use_vllm with a stack that names TRL but not vLLM: said, not a failed commit (a README
    step may install it); with vLLM declared (trl[vllm]) nothing is said."""
    plain = committed_repo(tmp_path / "p", {"requirements.txt": "trl==0.18.0\ntorch==2.6.0\n"})
    out = hook(plain, "--select", "PKG")
    text = " ".join(out.stdout.split())
    assert out.returncode == 0 and "! PKG001 use_vllm is on but vLLM is not declared" in text
    extra = committed_repo(tmp_path / "e", {"requirements.txt": "trl[vllm]==0.18.0\ntorch==2.6.0\n"})
    assert "PKG001" not in hook(extra, "--select", "PKG").stdout


def test_a_broken_declaration_file_is_an_input_error_naming_it(tmp_path):
    repo = committed_repo(tmp_path, {"uv.lock": "[[package]\nname = 'torch'\n"})
    out = hook(repo)
    assert out.returncode == 2 and "uv.lock" in out.stderr and "invalid TOML" in out.stderr
    assert "Traceback" not in out.stderr


def test_a_torch_newer_than_the_knowledge_is_said_not_failed(tmp_path):
    repo = committed_repo(tmp_path, {"requirements.txt": "trl[vllm]==0.18.0\ntorch==2.99.0\n"})
    out = hook(repo, "--select", "DCL")
    text = " ".join(out.stdout.split())
    assert out.returncode == 0, text  # a vLLM newer than the knowledge may be built for it
    assert "DCL003" not in text and "DCL005 torch 2.99.0" in text


def test_known_bad_combinations_are_judged_on_the_declared_pins(tmp_path):
    """The package rules run on the declared stack as on installed packages: TRL 0.15.2 with
    vLLM 0.7.3 (the gather hang TRL's setup.py names) is PKG007, located at the vLLM pin."""
    repo = committed_repo(
        tmp_path, {"requirements.txt": "trl==0.15.2\nvllm==0.7.3\ntorch==2.5.1\n", "legacy.yaml": LEGACY}
    )
    out = run_cli("hook", "legacy.yaml", "--select", "PKG", "--format", "json", cwd=repo)
    (finding,) = json.loads(out.stdout)["files"][0]["report"]["findings"]
    assert finding["rule"] == "PKG007" and "trl 0.15.2" in finding["message"]
    assert (finding["evidence"]["file"], finding["evidence"]["line"]) == ("requirements.txt", 2)


def test_an_evaluation_stage_requirements_file_is_not_the_training_stack(tmp_path):
    """WeiKangda/MMR-GRPO db07f71: requirements_train.txt pins the training environment (torch
    2.5.1, transformers 4.49), requirements_eval.txt another one for evaluation (torch 2.7.1,
    vLLM 0.10.0, installed apart). Merged they read as one stack pip cannot install (DCL004,
    PKG004 errors on a published setup); the evaluation file is left out of the training stack."""
    eval_pins = {"torch": "2.7.1", "transformers": "4.53.2", "vllm": "0.10.0"}
    files = {
        "requirements_train.txt": requirements(OPEN_R1_PINS),
        "requirements_eval.txt": requirements(eval_pins),
    }
    out = hook(committed_repo(tmp_path / "a", files))
    assert out.returncode == 0, out.stdout
    assert "DCL004" not in out.stdout and "PKG004" not in out.stdout
    # a development add-on file is installed into the same environment: its clash still shows
    files = {"requirements.txt": requirements(OPEN_R1_PINS), "requirements-dev.txt": "torch==2.7.1\n"}
    out = hook(committed_repo(tmp_path / "b", files))
    assert "DCL004" in out.stdout


PYPROJECT_OVERRIDE = """\
[project]
name = "grpo-run"
version = "0.1.0"
dependencies = [
    "torch==2.10.0",
    "transformers==5.5.4",
    "trl==1.2.0",
    "vllm==0.18.0",
]
{uv}
"""


@pytest.mark.parametrize("override", [True, False])
def test_a_requirement_the_repository_overrides_on_purpose_is_a_warning(tmp_path, override):
    """DhrumanGupta/self-supervision-rl (a reach case): vLLM 0.18.0 requires transformers<5, and
    the repository declares transformers 5.5.4 in [tool.uv] override-dependencies as well, so uv
    installs it over vLLM's pin on purpose; the gate went red on it (PKG004 error). Without the
    override the same pins are an error still."""
    uv = '[tool.uv]\noverride-dependencies = [\n    "transformers==5.5.4",\n]\n' if override else ""
    repo = committed_repo(tmp_path, {"pyproject.toml": PYPROJECT_OVERRIDE.format(uv=uv)})
    out = hook(repo, "--select", "PKG004")
    text = " ".join(out.stdout.split())
    assert "PKG004 vllm 0.18.0 requires transformers" in text
    if override:
        assert out.returncode == 0, out.stdout
        assert "pyproject.toml:12 declares transformers as an override" in text
    else:
        assert out.returncode == 1 and "override" not in text


@pytest.mark.parametrize("override", [True, False])
def test_check_on_the_installed_stack_reads_the_same_override(tmp_path, override):
    """Set 22's small-rl: the hook said the override made PKG004 a warning, and `check` on the
    same installed stack (vLLM 0.17 with transformers 5.2, which the fix commit ran 3/3 steps on)
    said an error: the two commands disagreed on one stack. `check` run in the repository reads
    the override the hook reads."""
    uv = '[tool.uv]\noverride-dependencies = [\n    "transformers==5.5.4",\n]\n' if override else ""
    repo = committed_repo(tmp_path, {"pyproject.toml": PYPROJECT_OVERRIDE.format(uv=uv)})
    pins = {"torch": "2.10.0", "transformers": "5.5.4", "trl": "1.2.0", "vllm": "0.18.0"}
    (repo / "facts.json").write_text(json.dumps(snapshot(1, packages=pins)))
    out = run_cli("check", "--facts", "facts.json", "--select", "PKG004", cwd=repo)
    text = " ".join(out.stdout.split())
    assert "PKG004 vllm 0.18.0 requires transformers" in text
    if override:
        assert out.returncode == 0, out.stdout
        assert "pyproject.toml:12 declares transformers as an override" in text
    else:
        assert out.returncode == 1 and "override" not in text


def test_requires_python_is_no_package_of_a_fix(tmp_path):
    """Set 22's rebus-grpo: pyproject.toml's `requires-python = ">=3.9"` entered the package plan,
    and PKG001's fix read "require 'peft==0.21.2' 'python==3.9' 'vllm==0.33.0'": pip installs no
    python. The interpreter bound is not a package of any fix."""
    pyproject = (
        '[project]\nname = "r"\nversion = "0.1.0"\nrequires-python = ">=3.9"\n'
        'dependencies = ["peft>=0.15.0"]\n'
    )
    script = (
        "from unsloth import FastLanguageModel\n"
        'model, tok = FastLanguageModel.from_pretrained("m", fast_inference=True)\n'
    )
    repo = committed_repo(tmp_path, {"pyproject.toml": pyproject, "train.py": script})
    out = hook(repo, "--launch", "python train.py", "pyproject.toml")
    text = " ".join(out.stdout.split())
    assert "PKG001" in text and "vllm==" in text
    assert "python==" not in text
