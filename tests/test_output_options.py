"""What reaches the terminal: ``-o`` with a data format also prints the text (check, hook and
triage alike), ``--quiet`` keeps the errors and the summary line, ``--no-color`` / NO_COLOR turn
colours off on a terminal, and the hook's JSON names each file of a pair."""

from __future__ import annotations

import json
import os
import pty
import subprocess
import sys

from tests.conftest import ROOT, run_cli

SEED = ROOT / "examples" / "seed-000"
CHECK = ("check", "--facts", "facts.json", "--config", "grpo.yaml")
LAUNCH = ("--", "python", "train.py")


def test_check_o_with_sarif_also_prints_the_text_as_the_hook_does(tmp_path):
    out = tmp_path / "r.sarif"
    proc = run_cli(*CHECK, "--format", "sarif", "-o", str(out), *LAUNCH, cwd=SEED)
    assert proc.returncode == 1
    assert json.loads(out.read_text())["version"] == "2.1.0"
    assert "✗ LAY003" in proc.stdout and proc.stdout.rstrip().endswith("-v for details")
    text = run_cli(*CHECK, "-o", str(tmp_path / "r.txt"), *LAUNCH, cwd=SEED)
    assert text.stdout == "" and "LAY003" in (tmp_path / "r.txt").read_text()  # the text went there


def test_quiet_prints_the_errors_and_the_summary_line(tmp_path):
    proc = run_cli(*CHECK, "--quiet", *LAUNCH, cwd=SEED)
    assert proc.returncode == 1
    lines = proc.stdout.splitlines()
    assert lines[0].startswith("    ✗ LAY003") and lines[-1].startswith("✗ envdoctor found 1 error")
    assert "[✓] Packages" not in proc.stdout and "GPU layout:" not in proc.stdout
    clean = run_cli(*CHECK, "-q", "--", "torchrun", "--nproc_per_node", "1", "train.py", cwd=SEED)
    assert clean.returncode == 0 and clean.stdout.splitlines() == [
        "✓ No issues found. (-v shows every check)"
    ]
    (tmp_path / "t.log").write_text(
        'Traceback (most recent call last):\n  File "x.py", line 1\nFooError: odd\n'
    )
    tri = run_cli("triage", "-q", "t.log", cwd=tmp_path)
    assert tri.stdout.splitlines()[-1].startswith("! a crash was found but not recognised")
    assert "issue draft" not in tri.stdout


def _on_a_terminal(*args: str, env: dict | None = None) -> bytes:
    """The command's output as a terminal gets it (a pseudo-terminal: colours are on)."""
    main, child = pty.openpty()
    full = {k: v for k, v in os.environ.items() if k != "NO_COLOR"}
    full.update(env or {})
    proc = subprocess.Popen(
        [sys.executable, "-m", "envdoctor", *args], stdout=child, stderr=child, cwd=SEED, env=full
    )
    os.close(child)
    chunks = []
    while True:
        try:
            data = os.read(main, 65536)
        except OSError:
            break
        if not data:
            break
        chunks.append(data)
    proc.wait(timeout=120)
    os.close(main)
    return b"".join(chunks)


def test_no_color_and_NO_COLOR_turn_colours_off_on_a_terminal():  # noqa: N802
    assert b"\x1b[" in _on_a_terminal(*CHECK, *LAUNCH)
    assert b"\x1b[" not in _on_a_terminal(*CHECK, "--no-color", *LAUNCH)
    assert b"\x1b[" not in _on_a_terminal("--no-color", *CHECK, *LAUNCH)
    assert b"\x1b[" not in _on_a_terminal(*CHECK, *LAUNCH, env={"NO_COLOR": "1"})


def test_hook_json_names_each_file_of_a_pair(tmp_path):
    (tmp_path / "grpo.yaml").write_text("num_generations: 4\nper_device_train_batch_size: 4\n")
    (tmp_path / "accelerate.yaml").write_text(
        "compute_environment: LOCAL_MACHINE\ndistributed_type: MULTI_GPU\nnum_processes: 2\n"
    )
    proc = run_cli(
        "hook", "grpo.yaml", "accelerate.yaml", "--format", "json", "--assume", "trl==1.16.0", cwd=tmp_path
    )
    (entry,) = json.loads(proc.stdout)["files"]
    assert entry["paths"] == ["grpo.yaml", "accelerate.yaml"]
    assert (entry["grpo_config"], entry["accelerate_config"]) == ("grpo.yaml", "accelerate.yaml")
    assert entry["file"] == "grpo.yaml + accelerate.yaml"  # the label the text report shows


def test_shell_completion_is_click_s():
    proc = run_cli("--help")
    assert "_ENVDOCTOR_COMPLETE=bash_source" in " ".join(proc.stdout.split())
    env = {"_ENVDOCTOR_COMPLETE": "bash_complete", "COMP_WORDS": "envdoctor chec", "COMP_CWORD": "1"}
    done = subprocess.run(
        [sys.executable, "-c", "from envdoctor.cli import cli; cli(prog_name='envdoctor')"],
        capture_output=True,
        text=True,
        env={**os.environ, **env},
        timeout=60,
    )
    assert "check" in done.stdout


def test_a_config_file_without_keys_is_said_as_given_not_as_missing(tmp_path):
    (tmp_path / "grpo.yaml").write_text("# all of TRL's defaults\n")
    given = run_cli("check", "--no-color", "--config", "grpo.yaml", cwd=tmp_path).stdout
    assert "GRPO config — grpo.yaml sets no key: TRL's defaults apply" in given
    assert "no GRPO config given" not in given
    missing = run_cli("check", "--no-color", cwd=tmp_path).stdout
    assert "GRPO config — no GRPO config given (--config FILE)" in missing


def test_a_training_script_envdoctor_could_not_read_is_said_not_passed_over(tmp_path):
    """A notebook's cells saved with their shell lines: the launch runs it, its GRPOConfig(...)
    was not read, and the config line says so instead of a plain "no GRPO config given"."""
    (tmp_path / "train.py").write_text("apt-get install -y git\nfrom trl import GRPOConfig\n")
    said = run_cli("check", "--no-color", "--launch", "python train.py", cwd=tmp_path).stdout
    assert "the training script train.py is not valid Python (invalid syntax, line 1)" in said
    assert "its GRPOConfig(...) and options were not read" in said
    (tmp_path / "ok.py").write_text("from trl import GRPOConfig\n")
    quiet = run_cli("check", "--no-color", "--launch", "python ok.py", cwd=tmp_path).stdout
    assert "were not read" not in quiet
    absent = run_cli("check", "--no-color", "--launch", "python gone.py", cwd=tmp_path).stdout
    assert "were not read" not in absent  # checked away from the run's machine: not news
