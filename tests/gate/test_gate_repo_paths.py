"""REP001-REP003: what a repository's launch scripts and configs name that is not there at launch
(a training script, a config, a DeepSpeed JSON), and CUDA_VISIBLE_DEVICES set in a shell script
without export; each fires on a tiny repository and stays quiet where the shell or the launch
would find the file (or envdoctor cannot know)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from envdoctor.plan.repo_paths import repo_paths, unexported_devices
from tests.conftest import run_cli

GRPO = "use_vllm: true\nnum_generations: 4\nper_device_train_batch_size: 4\n"
ACC_DS = "distributed_type: DEEPSPEED\nnum_processes: 2\ndeepspeed_config:\n  deepspeed_config_file: {ds}\n"


def _repo(tmp: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        (tmp / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp / name).write_text(text)
    return tmp


def _missing(tmp: Path, files: dict[str, str]) -> list[tuple[str, str, str]]:
    found = repo_paths(_repo(tmp, files))["missing"]
    return [(m["kind"], m["written"], m["certainty"]) for m in found]


# --- REP001: launch paths ---------------------------------------------------------------------

FIRES = {
    "script": (
        {
            "run.sh": "accelerate launch --num_processes 2 src/train.py --config grpo.yaml\n",
            "grpo.yaml": GRPO,
        },
        ("script", "src/train.py", "certain"),
    ),
    "accelerate config": (
        {"run.sh": "accelerate launch --config_file configs/zero3.yaml train.py\n", "train.py": ""},
        ("accelerate config", "configs/zero3.yaml", "certain"),
    ),
    "grpo config": (
        {"run.sh": "accelerate launch train.py --config recipes/grpo.yaml\n", "train.py": ""},
        ("config", "recipes/grpo.yaml", "certain"),
    ),
    "after a literal cd": (
        {
            "run.sh": "cd src\naccelerate launch --config_file recipes/zero2.yaml grpo.py\n",
            "src/grpo.py": "",
            "recipes/zero2.yaml": "num_processes: 2\n",
        },
        ("accelerate config", "recipes/zero2.yaml", "certain"),
    ),
    "plain python training script": (
        {"RUN_TRAINING.sh": "cd AGENT\npython src/rl/train.py --epochs 1\n", "AGENT/_old/rl/train.py": ""},
        ("script", "src/rl/train.py", "certain"),
    ),
    "torchrun deepspeed json": (
        {
            "run.sh": "torchrun --nproc_per_node 8 src/grpo.py --deepspeed scripts/zero3.json\n",
            "src/grpo.py": "",
            "local_scripts/zero3.json": "{}",
        },
        ("deepspeed config", "scripts/zero3.json", "certain"),
    ),
    "after an absolute cd, anchored by the script": (
        {
            "t.sh": "cd /home/me/repo\ntorchrun --nproc_per_node 8 src/grpo.py --deepspeed scripts/z3.json\n",
            "src/grpo.py": "",
        },
        ("deepspeed config", "scripts/z3.json", "likely"),
    ),
}


@pytest.mark.parametrize("case", sorted(FIRES))
def test_a_missing_launch_path_is_found_with_its_certainty(case, tmp_path):
    files, expected = FIRES[case]
    assert expected in _missing(tmp_path, files)


QUIET = {
    "all there": {
        "run.sh": "accelerate launch --config_file acc.yaml train.py --config g.yaml\n",
        "acc.yaml": "num_processes: 2\n",
        "train.py": "",
        "g.yaml": GRPO,
    },
    "from the script's own folder": {
        "scripts/run.sh": "python train_grpo.py --config cfg.yaml\n",
        "scripts/train_grpo.py": "",
        "scripts/cfg.yaml": GRPO,
    },
    "variables and globs": {
        "run.sh": "accelerate launch --config_file $ACC ${SCRIPT:-train.py} --config cfg/*.yaml\n"
    },
    "a template": {"run.sh": "accelerate launch train_{name}.py --config <your config>.yaml\n"},
    "absolute paths": {"run.sh": "accelerate launch /opt/train.py --deepspeed /etc/ds.json\n"},
    "cd into a variable": {"run.sh": "cd $WORKDIR\naccelerate launch train.py\n"},
    "cloned at run time": {"run.sh": "git clone https://github.com/x/y\naccelerate launch y/train.py\n"},
    "made at run time": {
        "run.sh": "python make_cfg.py > gen.yaml\naccelerate launch train.py --config gen.yaml\n",
        "train.py": "",
        "make_cfg.py": "",
    },
    "a copy of another project's examples": {"examples/x/train.sh": "accelerate launch swift/cli/sft.py\n"},
    "a python line that is not training": {"tools/check.sh": "python scripts/compare.py\n"},
    "commented out": {"run.sh": "# accelerate launch missing.py\n"},
    "python -m": {"run.sh": "python -m olmocr.train.grpo_train --config x.yaml\n"},
    "there from another folder of the repository": {
        "src/scripts/run.sh": "torchrun --nproc_per_node 4 src/open_r1/grpo.py\n",
        "src/r1-v/src/open_r1/grpo.py": "",
    },
}


@pytest.mark.parametrize("case", sorted(QUIET))
def test_no_error_where_the_path_is_there_or_cannot_be_known(case, tmp_path):
    found = _missing(tmp_path, QUIET[case])
    assert not [f for f in found if f[2] in ("certain", "likely")], found


# --- REP002: DeepSpeed configs named in configs --------------------------------------------------


def test_an_accelerate_configs_missing_deepspeed_json_is_found(tmp_path):
    found = _missing(tmp_path, {"AGENT/my_accel.yaml": ACC_DS.format(ds="ds_stage2.json")})
    assert found == [("deepspeed config", "ds_stage2.json", "certain")]


def test_a_grpo_configs_missing_deepspeed_json_is_found(tmp_path):
    found = _missing(tmp_path, {"recipes/grpo.yaml": GRPO + "deepspeed: configs/ds_z3.json\n"})
    assert found == [("deepspeed config", "configs/ds_z3.json", "certain")]


@pytest.mark.parametrize(
    "files",
    [
        {"a/acc.yaml": ACC_DS.format(ds="ds.json"), "a/ds.json": "{}"},  # beside the config
        {"acc.yaml": ACC_DS.format(ds="configs/ds.json"), "configs/ds.json": "{}"},  # from the root
        {"acc.yaml": ACC_DS.format(ds="/opt/ds/z3.json")},  # absolute: another machine's
        {"acc.yaml": ACC_DS.format(ds="${DS_CONFIG}")},  # a variable
        {"acc.yaml": ACC_DS.format(ds="../outside/z3.json")},  # outside the repository
        # axolotl's own `deepspeed:` (fetched by `axolotl fetch deepspeed_configs`): not a GRPOConfig
        {"pirate.yaml": "base_model: m\nlearning_rate: 1e-5\ndeepspeed: deepspeed_configs/zero2.json\n"},
    ],
)
def test_deepspeed_json_quiet_where_found_or_not_judged(files, tmp_path):
    assert _missing(tmp_path, files) == []


# --- REP003: CUDA_VISIBLE_DEVICES without export -------------------------------------------------

UNEXPORTED = [
    "CUDA_VISIBLE_DEVICES=1,2,3,4\naccelerate launch --config_file z3.yaml train.py\n",
    "CUDA_VISIBLE_DEVICES=0,1;\npython train.py\n",
    "CUDA_VISIBLE_DEVICES=0,1; python train.py\n",
    "#!/bin/bash\nCUDA_VISIBLE_DEVICES=0\necho start\ntorchrun --nproc_per_node 1 train.py\n",
]
EXPORTED = [
    "export CUDA_VISIBLE_DEVICES=1,2,3,4\naccelerate launch train.py\n",
    "CUDA_VISIBLE_DEVICES=1,2 accelerate launch train.py\n",
    "CUDA_VISIBLE_DEVICES=1,2 \\\n  accelerate launch train.py\n",
    "CUDA_VISIBLE_DEVICES=1,2\nexport CUDA_VISIBLE_DEVICES\naccelerate launch train.py\n",
    "export CUDA_VISIBLE_DEVICES\nCUDA_VISIBLE_DEVICES=1,2\naccelerate launch train.py\n",
    "set -a\nCUDA_VISIBLE_DEVICES=1,2\naccelerate launch train.py\n",
    "declare -x CUDA_VISIBLE_DEVICES=1,2\npython train.py\n",
    "CUDA_VISIBLE_DEVICES=1,2\nCUDA_VISIBLE_DEVICES=$CUDA_VISIBLE_DEVICES python train.py\n",
    "#SBATCH --gres=gpu:4\nCUDA_VISIBLE_DEVICES=0,1\nsrun python train.py\n",
    "CUDA_VISIBLE_DEVICES=0,1\necho $CUDA_VISIBLE_DEVICES\n",  # no process started after it
    "# CUDA_VISIBLE_DEVICES=0,1\npython train.py\n",
]


@pytest.mark.parametrize("text", UNEXPORTED)
def test_an_unexported_assignment_before_a_launch_is_found(text):
    found = unexported_devices(text, "run.sh")
    assert (
        len(found) == 1
        and found[0].line
        == text.splitlines().index(
            next(ln for ln in text.splitlines() if ln.startswith("CUDA_VISIBLE_DEVICES="))
        )
        + 1
    )


@pytest.mark.parametrize("text", EXPORTED)
def test_an_exported_or_prefixed_assignment_is_quiet(text):
    assert unexported_devices(text, "run.sh") == []


# --- the hook: each rule at its severity, once ---------------------------------------------------


def _hook(repo: Path, *files: str) -> tuple[int, list[dict]]:
    out = run_cli("hook", "--format", "json", *files, cwd=repo)
    assert out.returncode in (0, 1), out.stderr
    found = [
        {**f, "target": item["file"]}
        for item in json.loads(out.stdout)["files"]
        for f in item["report"]["findings"]
    ]
    return out.returncode, found


def test_the_hook_says_each_repository_path_finding_once_at_its_line(tmp_path):
    _repo(
        tmp_path,
        {
            "grpo.yaml": GRPO,
            "other.yaml": GRPO,
            "AGENT/my_accel.yaml": ACC_DS.format(ds="ds_stage2.json"),
            "run.sh": (
                "CUDA_VISIBLE_DEVICES=0,1\naccelerate launch --num_processes 2 train.py --config grpo.yaml\n"
            ),
        },
    )
    rc, found = _hook(tmp_path, "grpo.yaml", "other.yaml", "AGENT/my_accel.yaml")
    by_rule = {f["rule"]: f for f in found if f["rule"].startswith("REP")}
    assert rc == 1
    assert sorted(f["rule"] for f in found if f["rule"].startswith("REP")) == ["REP001", "REP002", "REP003"]
    assert by_rule["REP001"]["severity"] == "error" and "train.py" in by_rule["REP001"]["message"]
    assert by_rule["REP002"]["severity"] == "error"
    assert by_rule["REP002"]["evidence"]["file"] == "AGENT/my_accel.yaml"
    assert by_rule["REP002"]["evidence"]["line"] == 4
    assert by_rule["REP003"]["severity"] == "warning"
    assert (by_rule["REP003"]["evidence"]["file"], by_rule["REP003"]["evidence"]["line"]) == ("run.sh", 1)
    assert "export CUDA_VISIBLE_DEVICES=0,1" in by_rule["REP003"]["fix"]


def test_a_healthy_repository_gets_no_repository_path_finding(tmp_path):
    _repo(
        tmp_path,
        {
            "grpo.yaml": GRPO,
            "acc.yaml": ACC_DS.format(ds="ds.json"),
            "ds.json": "{}",
            "train.py": "",
            "run.sh": (
                "export CUDA_VISIBLE_DEVICES=0,1\n"
                "accelerate launch --config_file acc.yaml train.py --config grpo.yaml\n"
            ),
        },
    )
    rc, found = _hook(tmp_path, "grpo.yaml", "acc.yaml")
    assert not [f for f in found if f["rule"].startswith("REP")], found


def test_a_commit_of_scripts_alone_still_gets_its_missing_paths(tmp_path):
    _repo(tmp_path, {"run.sh": "accelerate launch --config_file missing.yaml train.py\n", "train.py": ""})
    rc, found = _hook(tmp_path)
    assert rc == 1 and [f["rule"] for f in found] == ["REP001"]
