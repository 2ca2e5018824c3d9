"""A shell script that runs a Python script which writes (and starts) another framework's command
line: DUET's `bash scripts/run_duet.sh` runs `python src/run_duet_verl.py`, whose module
src/duet/pipeline.py writes a launcher holding `"$PYTHON_BIN" -m verl.trainer.main_ppo`. verl
trains that run: TRL's key, layout and trainer rules stay out (ENV002), so no PKG008 error for the
TRL it never imports and no CFG004 on its own keys. A module the running Python cannot parse
(Python 3.12's f-strings) is read as text for its imports and the modules its strings run.
Issue 35 (gate16; dev set 15's DUET-82bd6f4, healthy)."""

from __future__ import annotations

from pathlib import Path

from envdoctor.plan.script_reader import read_script
from tests.conftest import run_cli, snapshot

PIPELINE = """import shlex
import subprocess


def write_launcher(path, overrides):
    lines = [
        '("$PYTHON_BIN" -m verl.trainer.main_ppo \\\\\\\\',
        *[f"  {shlex.quote(o)} \\\\\\\\" for o in overrides],
        ")",
    ]
    path.write_text("\\\\n".join(lines))
    subprocess.run(["bash", str(path)], check=True)
"""
PY312 = 'x = f"{"\\\\n".join(["a", "b"])}"\n'  # PEP 701: not Python before 3.12


def _repo(tmp: Path, trainer: str, pipeline: str = PIPELINE, extra: str = "") -> None:
    (tmp / "scripts").mkdir()
    (tmp / "src" / "duet").mkdir(parents=True)
    (tmp / "scripts" / "run.sh").write_text(
        "#!/bin/bash\nset -euo pipefail\nexport VLLM_USE_V1=0\nARGS=(--model m)\n"
        f'exec python {trainer} "${{ARGS[@]}}" --launch "$@"\n'
    )
    (tmp / "src" / "duet" / "__init__.py").write_text("")
    (tmp / "src" / "duet" / "pipeline.py").write_text(pipeline + extra)
    (tmp / "src" / "run.py").write_text(
        "import argparse\nimport sys\nfrom pathlib import Path\n"
        "sys.path.insert(0, str(Path(__file__).resolve().parent))\n"
        "from duet.pipeline import write_launcher\n\n"
        "p = argparse.ArgumentParser()\np.add_argument('--model')\n"
        "p.add_argument('--launch', action='store_true')\n"
        "a = p.parse_args()\nwrite_launcher(Path('l.sh'), [f'actor_rollout_ref.model.path={a.model}'])\n"
    )
    (tmp / "src" / "train_trl.py").write_text(
        "from trl import GRPOConfig, GRPOTrainer\n\n"
        "t = GRPOTrainer(model='m', args=GRPOConfig(output_dir='o'), reward_funcs=[])\nt.train()\n"
        "HELP = 'or run python -m verl.trainer.main_ppo instead'\n"
    )
    (tmp / "config.yaml").write_text(
        "beta1: 0.9\nbeta2: 0.999\ntrain_batch_size: 128\nmax_prompt_length: 512\n"
    )


def _check(tmp: Path, write_json) -> str:
    snap = snapshot(8, packages={"torch": "2.7.0", "transformers": "4.51.3", "vllm": "0.9.2"})
    facts = str(write_json(snap))
    proc = run_cli(
        "check", "--facts", facts, "--config", "config.yaml", "-v", "--", "bash", "scripts/run.sh", cwd=tmp
    )
    return proc.stdout


def test_shell_runs_a_script_that_writes_verl_command(tmp_path: Path, write_json) -> None:
    _repo(tmp_path, "src/run.py")
    out = _check(tmp_path, write_json)
    # the shell script followed (plan/shell_follow): its line is the trainer's, src/run.py read
    assert "ENV002 verl trains this run (src/duet/pipeline.py:7 writes the command" in out, out
    assert "LAY020 `bash scripts/run.sh` runs `python src/run.py" in out
    assert "-m verl.trainer.main_ppo" in out
    assert "✗ PKG008" not in out and "! CFG004" not in out and "! CFG001" not in out
    assert "— TRL's process layout not judged: verl trains this run (ENV002)" in out


def test_module_newer_python_read_as_text(tmp_path: Path, write_json) -> None:
    _repo(tmp_path, "src/run.py", extra=PY312)
    out = _check(tmp_path, write_json)
    assert "ENV002 verl trains this run" in out, out
    assert "✗ PKG008" not in out


def test_text_read_module_still_says_its_trl_import(tmp_path: Path) -> None:
    _repo(tmp_path, "src/run.py", pipeline="from trl import GRPOTrainer\n" + PIPELINE, extra=PY312)
    decl = read_script(str(tmp_path / "src" / "run.py"))
    assert decl.trl_import is not None and decl.trl_import.endswith("pipeline.py:1")
    assert "verl.trainer.main_ppo" in decl.writes_modules


def test_trl_script_behind_the_shell_stays_trls(tmp_path: Path, write_json) -> None:
    """A TRL script the shell script runs (its text names verl's module in a help string): TRL's
    run, PKG008 an error where TRL is missing."""
    _repo(tmp_path, "src/train_trl.py")
    out = _check(tmp_path, write_json)
    assert "ENV002" not in out.split("GPU layout:")[0], out
    assert "✗ PKG008" in out


def test_text_read_of_a_hostile_module_is_bounded(tmp_path: Path) -> None:
    """The text reading of a module Python cannot parse stays linear in the line's length: a line
    `from aaaa…` of 200,000 word characters (no `import`) took the import pattern's nested
    `\\w*[\\w.]*` into quadratic backtracking (minutes); its packages still come out."""
    import time

    hostile = "from " + "a" * 200_000 + "\nfrom trl import GRPOTrainer\n"
    _repo(tmp_path, "src/run.py", pipeline=hostile + PIPELINE, extra=PY312)
    start = time.monotonic()
    decl = read_script(str(tmp_path / "src" / "run.py"))
    assert time.monotonic() - start < 5
    assert decl.trl_import is not None and decl.trl_import.endswith("pipeline.py:2")
    assert "verl.trainer.main_ppo" in decl.writes_modules


LAUNCHER = '''"""Launch GRPO training.

Usage (the verl backend, see README):
    python -m verl.trainer.main_ppo data.train_batch_size=8
Default: TRL's GRPOTrainer through accelerate.
"""
import subprocess
import sys


def main():
    """Or: `python -m openrlhf.cli.train_ppo_ray --pretrain m`."""
    subprocess.run(["accelerate", "launch", "src/train_trl.py", *sys.argv[1:]], check=True)


main()
'''


def test_a_docstring_naming_another_frameworks_module_is_no_command(tmp_path: Path, write_json) -> None:
    """A launcher whose docstrings quote a README's `python -m verl.trainer.main_ppo` (a bare string
    statement is prose, not a command line the file writes) and that starts TRL's script: TRL's
    run, PKG008 an error where TRL is missing (gate16 took it for verl: a silent pass)."""
    _repo(tmp_path, "launch.py")
    (tmp_path / "launch.py").write_text(LAUNCHER)
    assert read_script(str(tmp_path / "launch.py")).writes_modules == {}
    out = _check(tmp_path, write_json)
    assert "ENV002" not in out.split("GPU layout:")[0], out
    # the shell script followed: launch.py is the script read (it imports no TRL: PKG008 said)
    assert "PKG008 TRL is not installed here" in out


def test_a_helper_line_importing_a_framework_does_not_outweigh_trls_training_line(
    tmp_path: Path, write_json
) -> None:
    """A TRL repository whose shell script first runs a data step copied from verl (its
    examples/data_preprocess/gsm8k.py imports verl.utils.hdfs_io), then TRL's training script:
    TRL's run, PKG008 an error where TRL is missing (gate16 took the data step for verl's
    training: a silent pass)."""
    _repo(tmp_path, "src/train_trl.py")
    (tmp_path / "data_preprocess").mkdir()
    (tmp_path / "data_preprocess" / "gsm8k.py").write_text(
        "import datasets\nfrom verl.utils.hdfs_io import copy, makedirs\n"
    )
    (tmp_path / "scripts" / "run.sh").write_text(
        "#!/bin/bash\nset -e\npython data_preprocess/gsm8k.py\n"
        "accelerate launch --num_processes 8 src/train_trl.py\n"
    )
    out = _check(tmp_path, write_json)
    assert "ENV002" not in out.split("GPU layout:")[0], out
    assert "✗ PKG008" in out
    # the data step alone beside a verl script that writes verl's command: verl's, as before
    (tmp_path / "scripts" / "run.sh").write_text(
        "#!/bin/bash\nset -e\npython data_preprocess/gsm8k.py\npython src/run.py --model m\n"
    )
    assert "ENV002 verl trains this run" in _check(tmp_path, write_json)


ARGV_LAUNCHER = """import os
import subprocess

overrides = ["algorithm.adv_estimator=grpo", "data.train_batch_size=64"]
argv = [
    "python", "-m", "verl.trainer.main_ppo",
    *overrides,
]
subprocess.run(argv, env=dict(os.environ), check=True)
"""


def test_an_argument_list_running_another_frameworks_module_is_a_written_command(
    tmp_path: Path, write_json
) -> None:
    """A launcher that starts verl through an argument list (`["python", "-m",
    "verl.trainer.main_ppo", *overrides]` to subprocess.run, as real launchers do), not one
    string: verl trains, TRL's layout and trainer rules stay out (no LAY003 / PKG008 error on a
    run TRL never starts)."""
    _repo(tmp_path, "launch.py")
    (tmp_path / "launch.py").write_text(ARGV_LAUNCHER)
    (where,) = read_script(str(tmp_path / "launch.py")).writes_modules.items()
    assert where[0] == "verl.trainer.main_ppo" and where[1].endswith("launch.py:6")
    out = _check(tmp_path, write_json)
    assert "ENV002 verl trains this run (launch.py:6 writes the command" in out, out
    assert "✗ PKG008" not in out
