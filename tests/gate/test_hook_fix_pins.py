"""``envdoctor hook --fix`` rewrites the declared pins the fix closure proves, where the repository
declares them (requirements files, pyproject.toml, setup.py literals), keeps everything else of
the line and file, refuses what it cannot edit safely, and the hook run again finds no error from
the pin. ``--diff`` shows the change and writes nothing."""

from __future__ import annotations

from pathlib import Path

from envdoctor.facts.declared.interface import Declaration
from envdoctor.remedy.pin_edit import pin_edits, rewrite
from tests.conftest import run_cli

#: trl 0.17 + vllm 0.7.3 in server mode: trl vllm-serve fails at start (KNF001, huggingface/trl#3304);
#: the proved fix is vllm 0.8.5.post1 with the torch it is built for, and TRL 0.18 for vllm_mode
GRPO = "use_vllm: true\nvllm_mode: server\nnum_generations: 4\nper_device_train_batch_size: 4\n"
REQS = (
    "# training stack\n"
    "trl[vllm]==0.17.0  # the trainer\n"
    "vllm == 0.7.3 ; sys_platform == 'linux'\n"
    "torch==2.5.1\n"
    "transformers==4.51.3\n"
)


def repo(tmp_path: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    return tmp_path


def hook(tmp_path: Path, *args: str):
    return run_cli("hook", *args, "grpo.yaml", cwd=tmp_path)


def test_rewrite_keeps_extras_marker_and_what_follows():
    assert rewrite("trl[vllm]>=0.17,<0.19 ; python_version>'3.9'", "trl", "0.18.0") == (
        "trl[vllm]==0.18.0 ; python_version>'3.9'"
    )
    assert rewrite("Flash_Attn", "flash-attn", "2.7.4") == "Flash_Attn==2.7.4"
    assert rewrite("vllm == 0.7.3", "vllm", "0.8.5.post1") == "vllm==0.8.5.post1"
    assert rewrite("trl-extras==1.0", "trl", "0.18.0") is None  # another package
    assert rewrite("trl @ git+https://github.com/huggingface/trl.git@abc", "trl", "0.18.0") is None


def test_requirements_pins_are_rewritten_keeping_comments_markers_extras_and_the_hook_is_clean(tmp_path):
    r = repo(tmp_path, {"grpo.yaml": GRPO, "requirements.txt": REQS})
    before = hook(r)
    assert before.returncode == 1 and "KNF001" in before.stdout
    out = hook(r, "--fix")
    assert (r / "requirements.txt").read_text() == (
        "# training stack\n"
        "trl[vllm]==0.18.0  # the trainer\n"
        "vllm==0.8.5.post1 ; sys_platform == 'linux'\n"
        "torch==2.6.0\n"
        "transformers==4.51.3\n"
    )
    assert "fixed requirements.txt" in out.stderr
    again = hook(r)
    assert again.returncode == 0, again.stdout
    assert "KNF001" not in again.stdout and "CFG001" not in again.stdout


def test_diff_shows_the_pin_change_and_writes_nothing(tmp_path):
    r = repo(tmp_path, {"grpo.yaml": GRPO, "requirements.txt": REQS})
    out = hook(r, "--fix", "--diff")
    assert "-vllm == 0.7.3 ; sys_platform == 'linux'" in out.stderr
    assert "+vllm==0.8.5.post1 ; sys_platform == 'linux'" in out.stderr
    assert "would fix requirements.txt" in out.stderr
    assert (r / "requirements.txt").read_text() == REQS


def test_a_hashed_requirement_is_refused_and_nothing_half_written(tmp_path):
    hashed = REQS.replace("torch==2.5.1\n", "torch==2.5.1 \\\n    --hash=sha256:" + "a" * 64 + "\n")
    r = repo(tmp_path, {"grpo.yaml": GRPO, "requirements.txt": hashed})
    out = hook(r, "--fix")
    assert "hashed" in out.stderr
    text = (r / "requirements.txt").read_text()
    assert "torch==2.5.1" in text and "--hash=sha256:" in text
    # the other pins alone do not read back as the proved stack (vllm 0.8.5 needs torch 2.6):
    # none is written
    assert "pins not written" in out.stderr and text == hashed


def test_pyproject_dependencies_are_edited_minimally(tmp_path):
    pyproject = (
        "[project]\n"
        'name = "my-grpo"\n'
        "dependencies = [\n"
        '    "trl==0.17.0",   # keep me\n'
        "    'torch==2.5.1',\n"
        '    "transformers==4.51.3",\n'
        "]\n\n"
        "[project.optional-dependencies]\n"
        'gen = ["vllm==0.7.3"]\n'
    )
    r = repo(tmp_path, {"grpo.yaml": GRPO, "pyproject.toml": pyproject})
    hook(r, "--fix")
    assert (r / "pyproject.toml").read_text() == (
        pyproject.replace("trl==0.17.0", "trl==0.18.0")
        .replace("torch==2.5.1", "torch==2.6.0")
        .replace("vllm==0.7.3", "vllm==0.8.5.post1")
    )
    assert hook(r).returncode == 0


def test_setup_py_plain_literals_are_edited(tmp_path):
    setup = (
        "from setuptools import setup\n\n"
        "_deps = [\n"
        '    "torch==2.5.1",\n'
        '    "transformers==4.51.3",\n'
        '    "trl==0.17.0",\n'
        '    "vllm==0.7.3",\n'
        "]\n"
        'setup(name="x", install_requires=_deps)\n'
    )
    r = repo(tmp_path, {"grpo.yaml": GRPO, "setup.py": setup})
    hook(r, "--fix")
    new = (r / "setup.py").read_text()
    assert '"trl==0.18.0"' in new and '"vllm==0.8.5.post1"' in new and '"torch==2.6.0"' in new
    assert new.replace("0.18.0", "0.17.0").replace("0.8.5.post1", "0.7.3").replace("2.6.0", "2.5.1") == setup
    assert hook(r).returncode == 0


def test_a_setup_py_string_built_by_code_is_said_not_machine_editable(tmp_path):
    setup = (
        "from setuptools import setup\n"
        'V = "0.7.3"\n'
        'setup(name="x", install_requires=["trl==0.17.0", "torch==2.5.1", '
        '"transformers==4.51.3", f"vllm=={V}", "vllm==0.7.3" if True else ""])\n'
    )
    decls = [Declaration("vllm", "==0.7.3", "setup.py", 3)]
    (tmp_path / "setup.py").write_text(setup)
    edits = pin_edits(tmp_path, {"vllm": decls}, {"vllm": "0.8.5.post1"})
    assert not edits.changed
    assert edits.refused and "not machine-editable" in edits.refused[0][2]


def test_locks_dockerfiles_git_references_and_undeclared_packages_are_refused(tmp_path):
    (tmp_path / "Dockerfile").write_text("FROM x\nRUN pip install vllm==0.7.3\n")
    (tmp_path / "requirements.txt").write_text("trl @ git+https://github.com/huggingface/trl.git@abc\n")
    declared = {
        "vllm": [Declaration("vllm", "==0.7.3", "Dockerfile", 2)],
        "trl": [
            Declaration(
                "trl", "", "requirements.txt", 1, url="git+https://github.com/huggingface/trl.git@abc"
            )
        ],
        "torch": [Declaration("torch", "==2.5.1", "uv.lock", 9, locked=True)],
    }
    edits = pin_edits(
        tmp_path, declared, {"vllm": "0.8.5.post1", "trl": "0.18.0", "torch": "2.6.0", "peft": "0.15.0"}
    )
    assert not edits.changed and not edits.done
    why = {name: text for name, _, text in edits.refused}
    assert "Dockerfile" in why["vllm"] and "direct reference" in why["trl"]
    assert "lock" in why["torch"] and "not declared" in why["peft"]


def test_a_declaration_outside_the_repository_is_never_written(tmp_path):
    outside = tmp_path / "elsewhere.txt"
    outside.write_text("vllm==0.7.3\n")
    (tmp_path / "r").mkdir()
    decls = [Declaration("vllm", "==0.7.3", "../elsewhere.txt", 1)]
    edits = pin_edits(tmp_path / "r", {"vllm": decls}, {"vllm": "0.8.5.post1"})
    assert not edits.changed and "outside the repository" in edits.refused[0][2]
