"""A script's `import os` is the standard library's, not a file named os.py in a folder above
the script: with no repository marker the reader looks a few folders up for the repository's
modules, and a stray /tmp/os.py (a copied notebook) became the run's GRPOConfig (a verl launcher
judged as a TRL run: PKG008 error)."""

from __future__ import annotations

from pathlib import Path

from envdoctor.plan.script_reader import read_script

STRAY = "from trl import GRPOConfig\nconfig = GRPOConfig(output_dir='o', vllm_device='cuda:0')\n"


def test_a_stdlib_name_is_not_a_file_in_a_folder_above(tmp_path: Path) -> None:
    run = tmp_path / "a" / "b"
    run.mkdir(parents=True)
    (tmp_path / "os.py").write_text(STRAY)
    (tmp_path / "helpers.py").write_text("X = 1\n")
    (run / "launch.py").write_text("import os\nimport helpers\nprint(os.getcwd(), helpers.X)\n")
    script = read_script(str(run / "launch.py"))
    read = [Path(f).name for f in script.files]
    assert "os.py" not in read and not script.builds_grpo
    assert "helpers.py" in read  # a repository module above the script is still read


def test_a_stdlib_name_beside_the_script_is_still_read(tmp_path: Path) -> None:
    (tmp_path / "random.py").write_text("SEED = 1\n")
    (tmp_path / "train.py").write_text("import random\nprint(random.SEED)\n")
    assert "random.py" in [Path(f).name for f in read_script(str(tmp_path / "train.py")).files]
