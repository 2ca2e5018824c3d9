"""Files a launch line names that are not where it names them from here (plan/launch_files,
LAY019): found from the repository's root or parent, or as a config TRL / open-r1 ships, or not
read (a finding, never exit 2); a file named on envdoctor's own command line stays input (exit 2).

Two healthy published setups were stopped with exit 2 before this (held-out set 11: FGO, launched
from the repository's parent; Saliency_R1, naming TRL's examples/accelerate_configs/)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from envdoctor.checks.context import Context
from envdoctor.checks.engine import run_rules
from envdoctor.facts.snapshot import from_dict
from envdoctor.plan.build import build_plan
from tests.conftest import MODERN, run_cli, snapshot

TRAIN = "from trl import GRPOTrainer\nGRPOTrainer(model='m', reward_funcs=[len])\n"
ACC = "distributed_type: MULTI_GPU\nnum_processes: 2\nmixed_precision: bf16\n"


def _found(plan, gpus: int = 2) -> dict[str, object]:
    ctx = Context(facts=from_dict(snapshot(gpus, packages=MODERN), "test"), plan=plan)
    return {f.rule: f for f in run_rules(ctx).findings}


@pytest.fixture
def repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = tmp_path / "FGO"
    (root / ".git").mkdir(parents=True)
    (root / "recipes" / "accelerate_configs").mkdir(parents=True)
    (root / "recipes" / "accelerate_configs" / "zero2.yaml").write_text(ACC)
    (root / "train.py").write_text(TRAIN)
    monkeypatch.chdir(root)
    return root


def test_missing_accelerate_config_is_a_finding_and_the_count_is_not_known(repo: Path) -> None:
    plan = build_plan(launch="accelerate launch --config_file /data/nowhere/acc.yaml train.py", live=False)
    assert plan.accelerate == {} and plan.accelerate_path is None
    assert plan.trainer is not None
    assert "accelerate config /data/nowhere/acc.yaml" in (plan.trainer.unresolved or "")
    found = _found(plan)
    # an absolute path outside the repository: the machine the run starts on may hold it
    assert found["LAY019"].severity.value == "info"
    assert "not read" in found["LAY019"].message and "process count" in found["LAY019"].message
    assert not [f for f in found.values() if f.severity.value in ("warning", "error")]
    # with the count on the line the layout is judged from the line's flags
    plan = build_plan(
        launch="accelerate launch --num_processes 2 --config_file /data/nowhere/acc.yaml train.py", live=False
    )
    assert plan.trainer is not None and plan.trainer.unresolved is None
    assert "LAY019" in _found(plan)


def test_from_the_repository_parent_by_its_folder_name(repo: Path) -> None:
    line = "accelerate launch --config_file FGO/recipes/accelerate_configs/zero2.yaml train.py"
    plan = build_plan(launch=line, live=False)
    assert plan.accelerate["num_processes"] == 2
    assert Path(plan.accelerate_path or "").resolve() == repo / "recipes/accelerate_configs/zero2.yaml"
    assert "repository's parent folder" in _found(plan)["LAY019"].message


def test_from_the_parent_with_the_repository_under_another_name(repo: Path) -> None:
    plan = build_plan(
        launch="accelerate launch --config_file Other/recipes/accelerate_configs/zero2.yaml train.py",
        live=False,
    )
    assert plan.accelerate["num_processes"] == 2
    assert "folder named Other" in _found(plan)["LAY019"].message


def test_from_the_repository_root_in_a_subfolder(repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (repo / "scripts").mkdir()
    monkeypatch.chdir(repo / "scripts")
    plan = build_plan(
        launch="accelerate launch --config_file recipes/accelerate_configs/zero2.yaml ../train.py", live=False
    )
    assert plan.accelerate["num_processes"] == 2
    assert "repository's root" in _found(plan)["LAY019"].message


def test_after_the_lines_own_cd(repo: Path) -> None:
    plan = build_plan(
        launch="cd recipes && accelerate launch --config_file accelerate_configs/zero2.yaml ../train.py",
        live=False,
    )
    assert plan.accelerate["num_processes"] == 2 and not plan.launch_files  # where the line names it


def test_a_config_trl_ships_is_read_as_envdoctor_knows_it(repo: Path) -> None:
    plan = build_plan(
        launch="accelerate launch --config_file examples/accelerate_configs/deepspeed_zero3.yaml train.py",
        live=False,
    )
    assert plan.accelerate["deepspeed_config"]["zero_stage"] == 3
    assert "as envdoctor knows it" in (plan.accelerate_path or "")
    finding = _found(plan, gpus=8)["LAY019"]
    assert "TRL's examples/accelerate_configs/deepspeed_zero3.yaml" in finding.message
    # a path that ends with no known file is not guessed
    plan = build_plan(launch="accelerate launch --config_file examples/acc/zero3.yaml train.py", live=False)
    assert plan.accelerate == {}


def test_the_scripts_config_and_deepspeed_json(repo: Path) -> None:
    plan = build_plan(
        launch="accelerate launch --num_processes 2 train.py --config gone.yaml --deepspeed gone.json",
        live=False,
    )
    assert plan.config_path is None
    messages = [f.message for f in run_rules(Context(facts=from_dict(snapshot(2), "t"), plan=plan)).findings]
    said = [m for m in messages if "in no folder of this repository" in m]
    assert any("`--config gone.yaml`" in m for m in said) and any("gone.json" in m for m in said)


def test_a_relative_path_no_file_of_the_repository_ends_with_is_an_error(repo: Path) -> None:
    """Set 23's MRyutaro/open-r1 e98d7ad: `--config_file=configs/zero3.yaml`, a file the
    repository never had (its fix names recipes/accelerate_configs/zero3.yaml): accelerate's
    load_config_from_file raises FileNotFoundError before any process starts."""
    (repo / "recipes" / "accelerate_configs" / "zero3.yaml").write_text(ACC)
    plan = build_plan(launch="accelerate launch --config_file=configs/zero3.yaml train.py", live=False)
    hit = _found(plan)["LAY019"]
    assert hit.severity.value == "error" and "FileNotFoundError" in hit.message
    assert "recipes/accelerate_configs/zero3.yaml (its only file of that name)" in hit.fix


@pytest.mark.parametrize(
    ("lines", "written"),
    [
        # the line runs from a sub-folder that holds it (R1-Onevision's local_scripts/zero3.json)
        ("accelerate launch --num_processes 2 train.py --deepspeed local_scripts/z3.json", "sub"),
        # another line of the run names it (a step that may write it)
        (
            "trl vllm-serve --model m --config made/acc.yaml\n"
            "accelerate launch --config_file made/acc.yaml train.py",
            "",
        ),
        # built at run time
        ("accelerate launch --config_file ${CONFIG_DIR}/acc.yaml train.py", ""),
        # a line for another checkout: its script is not here either (NeMo-RL's examples)
        ("uv run python examples/run_grpo_math.py --config examples/configs/grpo_math_1B.yaml", ""),
        # a name the script looks up, not a file
        ("accelerate launch --num_processes 2 train.py --config grpo_small", ""),
    ],
)
def test_not_certain_to_be_missing_stays_info(repo: Path, lines: str, written: str) -> None:
    if written:
        (repo / "VLM" / "src" / "local_scripts").mkdir(parents=True)
        (repo / "VLM" / "src" / "local_scripts" / "z3.json").write_text("{}")
    found = _found(build_plan(launch=lines, live=False))
    assert "LAY019" in found and found["LAY019"].severity.value == "info"


def test_cli_exit_codes(repo: Path, tmp_path: Path) -> None:
    facts = tmp_path / "facts.json"
    facts.write_text(json.dumps(snapshot(2, packages=MODERN)))
    line = ["accelerate", "launch", "--config_file", "FGO/gone/zero2.yaml", "train.py", "--config", "g.yaml"]
    out = run_cli("check", "--facts", str(facts), "--format", "json", "--", *line, cwd=repo)
    assert out.returncode in (0, 1), out.stderr
    rules = {f["rule"] for f in json.loads(out.stdout)["findings"]}
    assert "LAY019" in rules and "Traceback" not in out.stderr
    out = run_cli("fix", "--facts", str(facts), "--format", "json", "--", *line, cwd=repo)
    assert out.returncode in (0, 1) and "Traceback" not in out.stderr, out.stderr
    # a file named on envdoctor's own command line is input: exit 2
    out = run_cli("check", "--facts", str(facts), "--accelerate-config", "gone.yaml", cwd=repo)
    assert out.returncode == 2 and "cannot read" in out.stderr
    out = run_cli(
        "check", "--facts", str(facts), "--config", "gone.yaml", "--", "python", "train.py", cwd=repo
    )
    assert out.returncode == 2 and "cannot read" in out.stderr


def test_a_folder_of_that_name_here_that_lacks_the_file(repo: Path) -> None:
    """FGO's line names FGO/src/…, FGO/recipes/… from the repository's parent; where a folder FGO/
    is here too (a partial copy) but lacks the accelerate config, the repository's own file is
    read, not the open-r1 config of the same name envdoctor knows (FGO's is plain MULTI_GPU)."""
    (repo / "FGO" / "src").mkdir(parents=True)
    line = "accelerate launch --config_file FGO/recipes/accelerate_configs/zero2.yaml train.py"
    plan = build_plan(launch=line, live=False)
    assert plan.accelerate == {"distributed_type": "MULTI_GPU", "num_processes": 2, "mixed_precision": "bf16"}


def test_a_deepspeed_name_that_is_no_path_is_not_said(repo: Path) -> None:
    """ms-swift's `--deepspeed zero2` names one of its own configs, not a file."""
    plan = build_plan(launch="python train.py --deepspeed zero2", live=False)
    assert "LAY019" not in _found(plan, gpus=1)
