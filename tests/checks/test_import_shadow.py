"""PKG011, PKG012: a folder or module of the repository on the run's import path named like a
package of the stack (set 14's Maanav-s/small-model-finetuning be9af51: scripts/train_grpo.py puts
src/ first on sys.path, src/vllm/ holds no __init__.py and vLLM is not installed: TRL 1.5.1's
is_vllm_available() took the folder for vLLM and raised InvalidVersion: 'N/A')."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from envdoctor.plan.import_path import path_entries, shadows
from envdoctor.plan.interface import Launch
from tests.conftest import findings, snapshot

STACK = {
    "trl": "1.16.0",
    "transformers": "5.24.0",
    "torch": "2.10.0",
    "accelerate": "1.12.0",
    "datasets": "4.0.0",
}
INSERT = (
    "import sys\nfrom pathlib import Path\nROOT = Path(__file__).resolve().parent.parent\n"
    "sys.path.insert(0, str(ROOT / 'src'))\nfrom trl import GRPOTrainer\n"
)


def _run(
    tmp: Path, files: dict[str, str], launch: str, packages: dict | None = None, env: dict | None = None
):
    for name, text in files.items():
        (tmp / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp / name).write_text(text)
    here = os.getcwd()
    os.chdir(tmp)
    try:
        snap = snapshot(1, packages=packages if packages is not None else dict(STACK), env=env)
        return [f for f in findings(snap, config={}, launch=launch) if f.rule in ("PKG011", "PKG012")]
    finally:
        os.chdir(here)


def test_a_namespace_vllm_folder_the_script_puts_first_with_vllm_absent_is_pkg012(tmp_path):
    got = _run(
        tmp_path,
        {"scripts/train_grpo.py": INSERT, "src/vllm/openai_agent.py": "x = 1\n"},
        "uv run python scripts/train_grpo.py --data d.jsonl",
    )
    (f,) = got
    assert f.rule == "PKG012" and f.severity.value == "error"
    assert f.evidence["path"] == os.path.join("src", "vllm") and "InvalidVersion: 'N/A'" in f.message
    assert "sys.path.insert" in f.message and "src/vllm_local" in f.fix


def test_a_regular_datasets_package_in_the_script_folder_shadows_the_installed_one(tmp_path):
    (f,) = _run(tmp_path, {"train.py": "import trl\n", "datasets/__init__.py": ""}, "python train.py")
    assert f.rule == "PKG011" and f.severity.value == "error" and f.evidence["package"] == "datasets"
    assert f.fix.endswith("and the imports of it in the repository.")  # no dangling ", ." when no other way


def test_a_module_file_in_the_working_directory_shadows_trl_under_python_m(tmp_path):
    (f,) = _run(
        tmp_path, {"trl.py": "", "pkg/train.py": "import trl\n", "pkg/__init__.py": ""}, "python -m pkg.train"
    )
    assert f.rule == "PKG011" and f.evidence["path"] == "trl.py" and f.evidence["entry"] == "."
    assert f.fix.endswith("repository, or run the script from a folder that does not hold it.")


def test_a_pythonpath_folder_is_read(tmp_path):
    (f,) = _run(
        tmp_path,
        {"train.py": "", "lib/transformers/__init__.py": ""},
        "PYTHONPATH=lib torchrun --nproc_per_node 1 train.py",
    )
    assert f.rule == "PKG011" and f.evidence["package"] == "transformers"


def test_the_packages_own_editable_checkout_is_quiet(tmp_path):
    pkgs = dict(STACK, trl={"version": "1.16.0", "origin": f"file://{tmp_path}"})
    assert _run(tmp_path, {"train.py": "import trl\n", "trl/__init__.py": ""}, "python train.py", pkgs) == []


def test_a_namespace_folder_beside_the_installed_package_is_quiet(tmp_path):
    pkgs = dict(STACK, vllm="0.26.0")
    files = {"scripts/train_grpo.py": INSERT, "src/vllm/openai_agent.py": "", "src/datasets/x.py": ""}
    assert _run(tmp_path, files, "python scripts/train_grpo.py", pkgs) == []


def test_a_folder_elsewhere_not_on_the_path_is_quiet(tmp_path):
    files = {
        "scripts/train.py": "import trl\n",
        "tools/vllm/__init__.py": "",
        "other/datasets/__init__.py": "",
    }
    assert _run(tmp_path, files, "python scripts/train.py") == []


def test_an_appended_folder_loses_to_the_installed_package(tmp_path):
    text = "import sys, os\nsys.path.append(os.path.join(os.path.dirname(__file__), 'lib'))\n"
    assert _run(tmp_path, {"train.py": text, "lib/datasets/__init__.py": ""}, "python train.py") == []


def test_path_entries_follow_python_order(tmp_path):
    (tmp_path / "scripts").mkdir()
    text = "import sys\nsys.path.insert(0, 'src')\nsys.path.insert(0, 'src/gemma')\nsys.path.append('late')\n"
    launch = Launch(
        raw="python scripts/t.py", launcher="python", script="scripts/t.py", env={"PYTHONPATH": "lib"}
    )
    got = [(e.shown, e.before_site) for e in path_entries(launch, {}, str(tmp_path), text)]
    assert got == [("src/gemma", True), ("src", True), ("scripts", True), ("lib", True), ("late", False)]


def test_the_check_stats_and_never_lists(tmp_path, monkeypatch):
    """Its cost is a few ``stat`` calls per name and path entry whatever the folder holds (a
    bound asserted as work done, never as seconds): no listing of a folder of 300 files."""
    import os

    for i in range(300):
        (tmp_path / f"f{i}.py").write_text("")
    launch = Launch(raw="python t.py", launcher="python", script="t.py")
    entries = path_entries(launch, {}, str(tmp_path), "")
    calls = {"stat": 0}

    def refuse(*args, **kwargs):
        raise AssertionError("a folder was listed")

    def counted(real):
        def stat(path):
            calls["stat"] += 1
            return real(path)

        return stat

    monkeypatch.setattr(os, "listdir", refuse)
    monkeypatch.setattr(os, "scandir", refuse)
    monkeypatch.setattr(os.path, "isdir", counted(os.path.isdir))
    monkeypatch.setattr(os.path, "isfile", counted(os.path.isfile))
    names = {"vllm": "vllm", "trl": "trl"}
    assert shadows(entries, names) == []
    assert calls["stat"] <= len(entries) * (1 + 3 * len(names)), calls


def test_set_14_dev_setup_be9af51(tmp_path):
    """docs/validation/heldout-2026-11-29f/setups14a/…be9af51…: as published, vLLM not installed."""
    import shutil

    root = Path(__file__).resolve().parents[2] / "docs" / "validation" / "heldout-2026-11-29f" / "setups14a"
    (src,) = (root / "setups").glob("thread-small-model-finetuning-be9af51*")
    shutil.copytree(src / "src", tmp_path / "src")
    shutil.copytree(src / "scripts", tmp_path / "scripts")
    pkgs = {
        "trl": "1.5.1",
        "torch": "2.11.0",
        "transformers": "5.10.2",
        "accelerate": "1.13.0",
        "peft": "0.19.1",
    }
    launch = "uv run python scripts/train_grpo.py --data data/grpo/train.jsonl --max-steps 2"
    (f,) = _run(tmp_path, {}, launch, pkgs)
    assert f.rule == "PKG012" and f.severity.value == "error" and f.evidence["path"] == "src/vllm"


def test_a_link_loop_an_unreadable_folder_and_a_dangling_link_are_absent_not_a_crash(tmp_path):
    (tmp_path / "vllm").symlink_to("vllm")  # a loop: stat raises ELOOP
    (tmp_path / "datasets.py").symlink_to("nowhere.py")
    (tmp_path / "locked").mkdir(mode=0)
    (tmp_path / "loop1").symlink_to("loop2")
    (tmp_path / "loop2").symlink_to("loop1")
    try:
        got = _run(tmp_path, {"train.py": "import trl\n"}, "PYTHONPATH=locked:loop1:missing python train.py")
    finally:
        (tmp_path / "locked").chmod(0o755)
    assert got == []


def test_a_huge_folder_is_not_listed(tmp_path, monkeypatch):
    """Only the names looked for are asked of the file system: no listing of the folder."""
    (tmp_path / "trl").mkdir()
    (tmp_path / "trl" / "__init__.py").write_text("")

    def listing(*a, **k):
        raise AssertionError("a folder of the path was listed")

    from envdoctor.plan import import_path

    monkeypatch.setattr(import_path, "_CASELESS", False)  # a caseless file system confirms a hit by a listing
    monkeypatch.setattr(os, "scandir", listing)
    monkeypatch.setattr(os, "listdir", listing)
    launch = Launch(raw="python t.py", launcher="python", script="t.py")
    (s,) = shadows(path_entries(launch, {}, str(tmp_path), ""), {"vllm": "vllm", "trl": "trl"})
    assert s.name == "trl" and s.kind == "package"


@pytest.mark.parametrize(
    ("text", "severity"),
    [
        ("import os, peft\n", "error"),
        ("def f():\n    from peft import LoraConfig\n", "error"),
        ("import os\n", "warning"),
    ],
)
def test_a_package_the_script_imports_is_an_error_else_a_warning(tmp_path, text, severity):
    """What the script imports is the plan's (TrainingScript.packages), not a second read of it."""
    pkgs = dict(STACK, peft="0.19.1")
    (f,) = _run(tmp_path, {"train.py": text, "peft/__init__.py": ""}, "python train.py", pkgs)
    assert f.rule == "PKG011" and f.evidence["package"] == "peft" and f.severity.value == severity


def test_the_sys_path_calls_of_a_module_run_with_python_m_are_read(tmp_path):
    text = "import sys, os\nsys.path.insert(0, os.path.join(os.path.dirname(__file__), '..', 'vendor'))\n"
    files = {"pkg/__init__.py": "", "pkg/train.py": text, "vendor/trl/__init__.py": ""}
    (f,) = _run(tmp_path, files, "python -m pkg.train")
    assert f.rule == "PKG011" and f.evidence["package"] == "trl" and "sys.path.insert" in f.message


def test_the_sys_path_calls_are_read_in_fixs_edited_script_not_on_disk(tmp_path):
    """`envdoctor fix` edits the script in memory (Plan.edited) and checks again: the import path
    follows the edited text (gate16: _script_paths read the file on disk whatever fix changed)."""
    (tmp_path / "scripts").mkdir()
    (tmp_path / "src" / "vllm").mkdir(parents=True)
    script = tmp_path / "scripts" / "train_grpo.py"
    script.write_text(INSERT)
    launch = Launch(raw="python scripts/train_grpo.py", launcher="python", script="scripts/train_grpo.py")
    on_disk = path_entries(launch, {}, str(tmp_path))
    assert any(e.source == "code" and e.folder == str(tmp_path / "src") for e in on_disk)
    edited = {os.path.normpath("scripts/train_grpo.py"): "from trl import GRPOTrainer\n"}
    after = path_entries(launch, {}, str(tmp_path), edited=edited)
    assert not any(e.source == "code" for e in after)
    # the same text given by its absolute path
    edited = {os.path.normpath(str(script)): INSERT.replace("'src'", "'lib'")}
    after = path_entries(launch, {}, str(tmp_path), edited=edited)
    assert [e.folder for e in after if e.source == "code"] == [str(tmp_path / "lib")]
