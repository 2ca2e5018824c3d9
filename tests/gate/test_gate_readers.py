"""The declared stack a real repository writes: setup.py (read as a syntax tree), setup.cfg, git
pins of TRL placed among its releases, a Dockerfile installing the repository, requirement files
below the root, and the repository being the package itself."""

from __future__ import annotations

from pathlib import Path

from envdoctor.facts.declared import discover, read_stack
from envdoctor.facts.declared.resolve import stack_facts
from envdoctor.knowledge import knowledge
from envdoctor.knowledge.trl_commits import place

#: the shape of huggingface/open-r1's setup.py (b806e10): one list of pins, looked up by name
OPEN_R1_SETUP = """\
import re
from setuptools import find_packages, setup

_deps = [
    "accelerate==1.4.0",
    "distilabel[vllm,ray,openai]>=1.5.2",
    "lighteval @ git+https://github.com/huggingface/lighteval.git@d3da6b9",
    "torch==2.6.0",
    "transformers==4.52.3",
    "trl[vllm]==0.18.0",
    "pytest",
]
deps = {re.split(r"[=<>@ \\[]", x)[0].strip(): x for x in _deps}


def deps_list(*pkgs):
    return [deps[pkg] for pkg in pkgs]


extras = {}
extras["torch"] = deps_list("torch")
extras["tests"] = deps_list("pytest")
extras["dev"] = extras["tests"]
install_requires = [deps["accelerate"], deps["transformers"], deps["trl"]]

setup(
    name="open-r1",
    version="0.1.0.dev0",
    python_requires=">=3.10.9",
    install_requires=install_requires,
    extras_require=extras,
)
"""


def stack(root: Path, files: dict[str, str]):
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    return read_stack(discover(root), root)


def said(found) -> dict[str, str]:
    return {d.text: d.where for d in found.declarations}


def test_setup_py_deps_table_is_looked_up_by_name_never_run(tmp_path):
    found = stack(tmp_path, {"setup.py": OPEN_R1_SETUP + "open('RAN', 'w')\n"})
    got = said(found)
    assert got["trl[vllm]==0.18.0"] == "setup.py:10"
    assert got["torch==2.6.0"] == "setup.py:8" and got["transformers==4.52.3"] == "setup.py:9"
    assert got["python>=3.10.9"].startswith("setup.py:")
    assert "distilabel[openai,ray,vllm]>=1.5.2" not in got  # in the table, never installed
    assert not (tmp_path / "RAN").exists()


def test_setup_py_lists_bound_to_names_and_plus(tmp_path):
    text = (
        "from setuptools import setup\n"
        "BASE = ['trl==0.16.0', 'torch>=2.5']\n"
        "GPU = ['vllm==0.8.3']\n"
        "setup(name='x', install_requires=BASE + ['peft'], extras_require={'gpu': GPU})\n"
    )
    got = said(stack(tmp_path, {"setup.py": text}))
    assert {"trl==0.16.0", "torch>=2.5", "vllm==0.8.3", "peft"} <= set(got)


def test_setup_cfg_install_requires_and_extras(tmp_path):
    text = (
        "[metadata]\nname = trainer\n\n[options]\ninstall_requires =\n    trl==0.19.1\n"
        "    accelerate>=1.4.0\npython_requires = >=3.10\n\n[options.extras_require]\n"
        "vllm =\n    vllm==0.9.2\n"
    )
    got = said(stack(tmp_path, {"setup.cfg": text}))
    assert got["trl==0.19.1"] == "setup.cfg:6" and got["vllm==0.9.2"] == "setup.cfg:12"
    assert "trainer" in got  # the repository's own package, version not read


def test_a_trl_commit_is_placed_between_the_releases_around_it():
    p = place("1bca49515ecd5b85d16e68c42c76670e252e19f1")  # open-r1's pin of April 2025
    assert (p.version, p.before, p.after) == ("0.18.0.dev0", "0.17.0", "0.18.0")
    assert "after TRL 0.17.0, before 0.18.0: installs as 0.18.0.dev0" in p.said()
    assert place("1bca495").version == "0.18.0.dev0"  # a short sha
    assert place("v0.15.2").version == "0.15.2"
    assert place("main").version is None and "moves" in place("main").said()
    unknown = place("0123456789abcdef0123456789abcdef01234567")
    assert unknown.version is None and "a TRL commit envdoctor cannot place" in unknown.said()


def test_a_git_pin_in_requirements_is_judged_as_the_release_it_installs_as(tmp_path):
    req = "trl @ git+https://github.com/huggingface/trl.git@1bca49515ecd5b85d16e68c42c76670e252e19f1\ntorch==2.6.0\n"
    found = stack(tmp_path, {"requirements.txt": req})
    facts = stack_facts(found, {}, knowledge(), "declared")
    assert facts.version("trl") == "0.18.0.dev0"
    notes = " ".join(facts.extra["declared"]["notes"])
    assert "after TRL 0.17.0, before 0.18.0" in notes and "judged as trl 0.18.0.dev0" in notes
    egg = stack(
        tmp_path / "egg", {"requirements.txt": "git+https://github.com/huggingface/trl.git@v0.16.1#egg=trl\n"}
    )
    assert stack_facts(egg, {}, knowledge(), "declared").version("trl") == "0.16.1"


def test_an_unplaceable_trl_commit_is_declared_but_judged_as_no_release(tmp_path):
    found = stack(tmp_path, {"requirements.txt": "trl @ git+https://github.com/huggingface/trl.git@main\n"})
    facts = stack_facts(found, {}, knowledge(), "declared")
    assert facts.version("trl") is None and "trl" in facts.extra["declared"]["stack"]
    assert any("release is not decided" in n for n in facts.extra["declared"]["notes"])


def test_dockerfile_pip_install_editable_reads_the_package(tmp_path):
    found = stack(
        tmp_path,
        {
            "Dockerfile": 'FROM python:3.11\nCOPY . /app\nRUN pip install -e "./pkg[dev]"\n',
            "pkg/pyproject.toml": '[project]\nname = "pkg"\ndependencies = ["trl==0.17.0"]\n',
        },
    )
    assert said(found)["trl==0.17.0"] == "pkg/pyproject.toml:3"


def test_requirement_files_below_the_root_but_not_of_vendored_projects(tmp_path):
    found = stack(
        tmp_path,
        {
            "src/requirements.txt": "trl==0.19.0\n",
            "third_party/verl/setup.py": "from setuptools import setup\nsetup(name='verl')\n",
            "third_party/verl/requirements.txt": "transformers==4.40.0\n",
        },
    )
    got = said(found)
    assert got["trl==0.19.0"] == "src/requirements.txt:1" and "transformers==4.40.0" not in got


def test_the_repository_that_is_trl_declares_trl(tmp_path):
    found = stack(
        tmp_path,
        {
            "pyproject.toml": '[project]\nname = "trl"\ndynamic = ["version"]\n',
            "VERSION": "0.19.0.dev0\n",
        },
    )
    facts = stack_facts(found, {}, knowledge(), "declared")
    assert facts.version("trl") == "0.19.0.dev0"


def test_a_dev_build_of_trl_belongs_to_the_line_it_leads_to():
    """PEP 440 keeps 0.18.0.dev0 out of both `<0.18.0` and `>=0.18.0`: a main commit of the 0.18
    cycle is judged with the 0.18 line (its vLLM extra, its requirements)."""
    kb = knowledge()
    assert kb.trl_line("0.18.0.dev0") is kb.trl_line("0.18.0")
    assert kb.trl_line("0.17.1") is kb.trl_line("0.17.0")


def test_dockerfile_in_a_folder_installing_the_build_context(tmp_path):
    """docker/Dockerfile with `COPY . /app` and `pip install -e /app[train]`: the package of the
    Dockerfile's folder (the build context), named as the repository names it."""
    from envdoctor.facts.declared import dockerfile

    (tmp_path / "docker").mkdir()
    (tmp_path / "docker" / "Dockerfile").write_text("FROM x\nCOPY . /app\nRUN pip install -e /app[train]\n")
    (tmp_path / "docker" / "setup.py").write_text(
        "from setuptools import setup\nsetup(install_requires=['trl==0.19.1'])\n"
    )
    found = dockerfile.read(tmp_path / "docker" / "Dockerfile", "docker/Dockerfile")
    assert said(found) == {"trl==0.19.1": "docker/setup.py:2"}


def test_a_notebooks_launch_line_is_read_from_its_own_folder(tmp_path):
    """A launch line in a notebook cell (``!accelerate launch …``, run in the notebook's folder)
    names the recipe and accelerate config relative to that folder."""
    import json as _json

    from envdoctor.plan.repo_launches import read_launches

    (tmp_path / "training" / "configs").mkdir(parents=True)
    (tmp_path / "training" / "receipes").mkdir()
    (tmp_path / "training" / "configs" / "zero3.yaml").write_text("distributed_type: DEEPSPEED\n")
    (tmp_path / "training" / "receipes" / "grpo.yaml").write_text("num_generations: 8\n")
    cell = (
        "!accelerate launch --num_processes 3 --config_file configs/zero3.yaml run.py "
        "--config receipes/grpo.yaml"
    )
    notebook = {"cells": [{"cell_type": "code", "source": ["%%bash\n", cell]}]}
    (tmp_path / "training" / "r1.ipynb").write_text(_json.dumps(notebook))
    (launch,) = read_launches(tmp_path).launches
    assert (launch.config, launch.accelerate, launch.processes) == (
        "training/receipes/grpo.yaml",
        "training/configs/zero3.yaml",
        3,
    )
    (tmp_path / "training" / "bad.ipynb").write_text("{not json")  # not a notebook: no launch, no error
    assert len(read_launches(tmp_path).launches) == 1
