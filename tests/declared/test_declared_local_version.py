"""DCL008: a requirement file pins a local version (``torch==2.6.0+cu124``) that only PyTorch's
own index serves, and neither the file, a file it includes, nor the repository's install steps
name an index: ``pip install -r`` stops ("No matching distribution", PyPI holds no local
version). Quiet with an index option anywhere pip or the author's steps give it, a lock file,
a conda environment file, uv's indexes in pyproject.toml. Issue 35."""

from __future__ import annotations

import pytest

from tests.conftest import run_cli
from tests.declared.stack_repos import CONFIGS, OPEN_R1_PINS, committed_repo, requirements

PINS = {k: v for k, v in OPEN_R1_PINS.items() if k not in ("torch", "vllm")}
INDEX = "https://download.pytorch.org/whl/cu124"
README_STEP = f"pip install -r requirements.txt --extra-index-url {INDEX}"


def _dcl008(repo, *extra: str) -> tuple[int, str]:
    out = run_cli("hook", *CONFIGS, "--select", "DCL008", *extra, cwd=repo)
    assert out.returncode in (0, 1), out.stderr
    return out.returncode, " ".join(out.stdout.split())


@pytest.mark.parametrize(
    "line, fix",
    [
        ("torch==2.6.0+cu124", f"--extra-index-url {INDEX}"),
        ("torchvision==0.21.0+cpu", "--extra-index-url https://download.pytorch.org/whl/cpu"),
        ("torch==2.5.1+rocm6.2", "--extra-index-url https://download.pytorch.org/whl/rocm6.2"),
        ("mypkg==1.0+local", "naming the index that serves mypkg 1.0+local"),
    ],
)
def test_a_local_version_without_an_index_is_an_error_at_its_line(tmp_path, line, fix):
    repo = committed_repo(tmp_path, {"requirements.txt": requirements(PINS) + line + "\n"})
    rc, text = _dcl008(repo)
    assert rc == 1 and "DCL008" in text and f"requirements.txt:{len(PINS) + 1}" in text
    assert fix in text and "drop the local part" in text


def test_the_fix_holds_and_an_index_in_an_included_file_counts(tmp_path):
    pinned = requirements(PINS) + "torch==2.6.0+cu124\n"
    repo = committed_repo(tmp_path, {"requirements.txt": f"--extra-index-url {INDEX}\n" + pinned})
    rc, text = _dcl008(repo)  # the fix as printed: the line at the top of the file
    assert rc == 0 and "DCL008" not in text
    included = committed_repo(
        tmp_path / "inc",
        {
            "requirements.txt": "-r requirements/base.txt\n-f https://download.pytorch.org/whl/torch_stable.html\n",
            "requirements/base.txt": pinned,
        },
    )
    rc, text = _dcl008(included)
    assert rc == 0 and "DCL008" not in text


@pytest.mark.parametrize(
    "files",
    [
        {"README.md": f"# Setup\n\n```bash\n{README_STEP}\n```\n"},
        {"scripts/install.sh": "export PIP_EXTRA_INDEX_URL=https://download.pytorch.org/whl/cu124\n"},
        {"Dockerfile": f"FROM python:3.11\nRUN pip install --index-url {INDEX} -r requirements.txt\n"},
    ],
)
def test_an_index_the_repository_names_elsewhere_is_quiet(tmp_path, files):
    repo = committed_repo(
        tmp_path, {"requirements.txt": requirements(PINS) + "torch==2.6.0+cu124\n", **files}
    )
    rc, text = _dcl008(repo)
    assert rc == 0 and "DCL008" not in text


def test_public_versions_and_a_conda_file_are_quiet(tmp_path):
    conda = "name: rl\ndependencies:\n  - python=3.11\n  - pip:\n    - torch==2.6.0+cu124\n"
    repo = committed_repo(
        tmp_path, {"requirements.txt": requirements(PINS) + "torch==2.6.0\n", "environment.yml": conda}
    )
    rc, text = _dcl008(repo)
    assert rc == 0 and "DCL008" not in text


def test_a_pyproject_with_uv_indexes_is_quiet(tmp_path):
    repo = committed_repo(
        tmp_path,
        {
            "pyproject.toml": (
                '[project]\nname = "x"\nversion = "0.1"\ndependencies = ["torch==2.6.0+cu124"]\n'
                '[tool.uv.sources]\ntorch = { index = "pytorch" }\n'
                f'[[tool.uv.index]]\nname = "pytorch"\nurl = "{INDEX}"\nexplicit = true\n'
            ),
        },
    )
    rc, text = _dcl008(repo)
    assert rc == 0 and "DCL008" not in text


def test_an_index_on_a_line_that_installs_other_packages_does_not_count(tmp_path):
    """rubenbalbastre/grpo-llm-unlearning's shape: a pip-freeze requirements.txt with
    ``torch==2.12.0+cu126`` and a setup script whose ``uv pip install --torch-backend=auto``
    installs a list without torch or the file: ``pip install -r requirements.txt`` still stops."""
    script = 'uv pip install \\\n    --torch-backend=auto \\\n    "trl[vllm]" \\\n    peft\n'
    pins = requirements(PINS) + "torch==2.12.0+cu126\ntorchvision==0.27.0+cu126\n"
    repo = committed_repo(tmp_path, {"requirements.txt": pins, "scripts/create-env.sh": script})
    rc, text = _dcl008(repo)
    assert rc == 1 and "found 2 errors" in text and "whl/cu126" in text
    (repo / "scripts/create-env.sh").write_text(script.replace("peft", "peft torch torchvision"))
    rc, text = _dcl008(repo)
    assert rc == 0 and "DCL008" not in text


def test_a_readme_step_without_an_index_is_the_documented_install_whatever_a_script_does(tmp_path):
    """rubenbalbastre/grpo-llm-unlearning: README's quick start is ``pip install -r
    requirements.txt``; a cluster script elsewhere installs torch with ``--torch-backend``."""
    script = 'uv pip install --torch-backend=auto "torch==2.12.0" "torchvision==0.27.0"\n'
    readme = "# X\n\n## Quick Start\n\n```bash\npip install -r requirements.txt\n```\n"
    pins = requirements(PINS) + "torch==2.12.0+cu126\n"
    files = {"requirements.txt": pins, "scripts/cluster.sh": script}
    rc, text = _dcl008(committed_repo(tmp_path / "script", files))
    assert rc == 0 and "DCL008" not in text  # no README step: the script may be the install
    rc, text = _dcl008(committed_repo(tmp_path / "readme", {**files, "README.md": readme}))
    assert rc == 1 and "DCL008" in text


def test_a_development_version_of_a_stack_package_is_an_error_and_a_release_is_quiet(tmp_path):
    """`trl==0.16.0.dev0` (TRL's main branch, as `pip list` writes a git install): TRL publishes no
    development release on PyPI, so pip stops; the release it led to is the fix, and is quiet."""
    pins = {k: v for k, v in PINS.items() if k != "trl"}
    repo = committed_repo(tmp_path, {"requirements.txt": requirements(pins) + "trl==0.16.0.dev0\n"})
    rc, text = _dcl008(repo)
    assert rc == 1 and "trl==0.16.0.dev0, a development version" in text
    assert "`trl==0.16.0`" in text
    fixed = committed_repo(tmp_path / "fixed", {"requirements.txt": requirements(pins) + "trl==0.16.0\n"})
    assert _dcl008(fixed)[0] == 0


def test_a_development_version_of_a_package_that_publishes_them_is_quiet(tmp_path):
    repo = committed_repo(tmp_path, {"requirements.txt": requirements(PINS) + "somepkg==1.2.0.dev3\n"})
    rc, text = _dcl008(repo)
    assert rc == 0 and "DCL008" not in text
