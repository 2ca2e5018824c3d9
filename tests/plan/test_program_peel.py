"""One reading of which program a launch line runs: the launch parser's wrapper peel
(plan/wrappers.py) serves the framework detection too (plan/framework.py had its own list of
words to skip, which read an argument after `run` as the program and missed a runner's option
values). `uv run -m pkg.train` runs the module with the environment's python (uv's
`run --module`). Issue 35 (gate16)."""

from __future__ import annotations

import pytest

from envdoctor.plan import framework
from envdoctor.plan.launch import parse_launch
from tests.conftest import run_cli, snapshot


@pytest.mark.parametrize(
    "line, module, args",
    [
        ("uv run -m pkg.train --lr 1e-6", "pkg.train", ["--lr", "1e-6"]),
        ("uv run --with vllm --module pkg.train", "pkg.train", []),
        (
            "CUDA_VISIBLE_DEVICES=0 nohup uv run --project . -m verl.trainer.main_ppo a=1",
            "verl.trainer.main_ppo",
            ["a=1"],
        ),
    ],
)
def test_uv_run_module_is_python_m(line: str, module: str, args: list[str]) -> None:
    launch = parse_launch(line)
    assert launch.unresolved is None
    assert (launch.launcher, launch.module, launch.script) == ("python", module, None)
    assert launch.script_args == args


@pytest.mark.parametrize(
    "line, key",
    [
        ("uv run --extra gpu swift rlhf --rlhf_type grpo", "ms-swift"),  # an option's value before it
        ("nohup uv run --project x swift rlhf", "ms-swift"),
        ("conda run -n rl llamafactory-cli train x.yaml", "llamafactory"),
        ("bash -c 'swift rlhf --rlhf_type grpo'", "ms-swift"),
        ("uv run -m verl.trainer.main_ppo data.train_batch_size=8", "verl"),
        # an argument of the script that happens to follow `run`, or to be named like a console
        ("python train.py run swift", None),
        ("python train.py --mode run swift", None),
        ("accelerate launch train.py env swift", None),
    ],
)
def test_framework_program_is_the_peeled_one(line: str, key: str | None) -> None:
    found = framework.from_launch(parse_launch(line))
    assert (found.key if found else None) == key


def test_layout_line_not_unresolved_beside_env002(tmp_path, write_json) -> None:
    """A framework that places its own processes: the layout line says ENV002 left TRL's layout
    out, not that the launch was not resolved (the shell script it runs is the framework's)."""
    (tmp_path / "run.sh").write_text(
        "#!/bin/bash\nset -x\npython3 -m verl.trainer.main_ppo trainer.n_gpus_per_node=8\n"
    )
    facts = str(write_json(snapshot(8)))
    proc = run_cli("check", "--facts", facts, "--", "bash", "run.sh", cwd=tmp_path)
    assert "ENV002" in proc.stdout, proc.stdout
    assert "launch not resolved" not in proc.stdout
    assert "TRL's process layout not judged: verl trains this run (ENV002)" in proc.stdout


def test_a_shell_scripts_uv_run_module_line_is_read(tmp_path, write_json) -> None:
    """A shell script whose lines start verl as `uv run -m verl.trainer.main_ppo \\` (a data step
    `uv run -m examples.data_preprocess.prepare` before it, as verl-agent's scripts do): the
    shell-line filter knew no `uv run` word, so the line was never read and TRL's rules judged a
    verl run (PKG008 error)."""
    (tmp_path / "run.sh").write_text(
        "export VLLM_USE_V1=0\nBSZ=32\n"
        "uv run -m examples.data_preprocess.prepare \\\n    --train_data_size ${BSZ}\n\n"
        "uv run -m verl.trainer.main_ppo \\\n    algorithm.adv_estimator=grpo \\\n"
        "    data.train_batch_size=${BSZ} \\\n    trainer.n_gpus_per_node=8 \\\n\necho done\n"
    )
    facts = str(write_json(snapshot(8, packages={"torch": "2.7.0", "vllm": "0.9.2"})))  # no TRL
    proc = run_cli("check", "--facts", facts, "-v", "--", "bash", "run.sh", cwd=tmp_path)
    assert "ENV002 verl trains this run (`-m verl.trainer.main_ppo` on run.sh:" in proc.stdout, proc.stdout
    assert "✗ PKG008" not in proc.stdout
