"""LAY023: TRL's server mode (its 0.18-0.29 default, or chosen) while no launch line of the run
starts a vLLM server (HarleyCoops/OneShotGRPO 00a5a2b, held-out set 21: a Colab notebook's
``GRPOConfig(use_vllm=True)`` under TRL 0.25 waited for a server nothing started; check said
nothing)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from envdoctor.checks.context import Context
from envdoctor.doctor import check
from envdoctor.facts.snapshot import from_dict
from envdoctor.plan.build import build_plan
from tests.conftest import A100_40, findings, run_cli, snapshot

TRL25 = {
    "trl": "0.25.1",
    "vllm": "0.11.2",
    "torch": "2.9.0+cu128",
    "transformers": "4.57.3",
    "accelerate": "1.11.0",
}
TRL17 = {
    "trl": "0.17.0",
    "vllm": "0.8.5.post1",
    "torch": "2.6.0+cu124",
    "transformers": "4.51.3",
    "accelerate": "1.6.0",
}
TRL116 = {
    "trl": "1.16.0",
    "vllm": "0.30.0",
    "torch": "2.13.0+cu128",
    "transformers": "5.23.0",
    "accelerate": "1.15.0",
}
MODEL = "Qwen/Qwen2.5-0.5B-Instruct"
CFG = {"model_name_or_path": MODEL, "use_vllm": True, "per_device_train_batch_size": 8, "num_generations": 8}
LAUNCH = "CUDA_VISIBLE_DEVICES=0,1 accelerate launch --num_processes 2 train.py"

#: a notebook exported as a script (Colab): its install cells are IPython magics
NOTEBOOK = """\
!pip install -q trl vllm
from trl import GRPOConfig, GRPOTrainer

training_args = GRPOConfig(
    output_dir="o",
    per_device_train_batch_size=8,
    num_generations=8,
    use_vllm=True,
    vllm_gpu_memory_utilization=0.3,
)
GRPOTrainer(model="Qwen/Qwen2.5-0.5B-Instruct", reward_funcs=[], args=training_args).train()
"""


def _lay023(snap: dict | None = None, config: dict | None = None, launch: str | None = LAUNCH, **kw) -> list:
    snap = snap or snapshot(4, packages=TRL25)
    return [
        f
        for f in findings(snap, config=CFG if config is None else config, launch=launch, **kw)
        if f.rule == "LAY023"
    ]


def test_trls_default_server_mode_with_no_server_line_is_a_warning():
    (f,) = _lay023()
    assert f.severity.value == "warning"
    assert 'TRL 0.25.1 defaults it to "server"' in f.message and "240 s" in f.message
    assert "0.0.0.0:8000" in f.message and "ConnectionError" in f.message


def test_a_chosen_server_mode_is_info_only():
    (f,) = _lay023(config={**CFG, "vllm_mode": "server"})
    assert f.severity.value == "info" and "started elsewhere" in f.message
    (g,) = _lay023(config={**CFG, "vllm_server_port": 8001})  # a server set up on purpose
    assert g.severity.value == "info" and "0.0.0.0:8001" in g.message


@pytest.mark.parametrize(
    ("packages", "config"),
    [
        (TRL25, {**CFG, "vllm_mode": "colocate"}),
        (TRL17, CFG),  # before 0.18: server mode is the only one (not this rule's)
        (TRL116, CFG),  # 1.x: colocate is the default
        ({**TRL116, "trl": "1.17.0"}, CFG),  # past the horizon: the newest known default
        (TRL25, {**CFG, "vllm_server_host": "10.0.0.5"}),  # another machine's server
        (TRL25, {**CFG, "vllm_server_base_url": "http://gpu-node-2:8000"}),
        (TRL25, {**CFG, "use_vllm": False}),
    ],
)
def test_quiet_where_no_server_of_this_run_is_missing(packages, config):
    assert _lay023(snapshot(4, packages=packages), config=config) == []


def test_quiet_with_a_server_line():
    for server in (
        f"CUDA_VISIBLE_DEVICES=2 trl vllm-serve --model {MODEL}",
        f"CUDA_VISIBLE_DEVICES=2 python -m trl.scripts.vllm_serve --model {MODEL}",
        f"CUDA_VISIBLE_DEVICES=2 vllm serve {MODEL} --worker-extension-cls "
        "trl.scripts.vllm_serve.WeightSyncWorkerExtension",
    ):
        assert _lay023(launch=f"{server}\n{LAUNCH}") == [], server


def test_quiet_without_a_trainer_line_and_with_a_server_up_on_a_gpu():
    assert _lay023(launch=None) == []
    up = snapshot(
        4, packages=TRL25, processes={3: [{"pid": 7, "name": "VLLM::EngineCore", "used_mib": 60000}]}
    )
    assert _lay023(up) == []


def test_quiet_where_the_network_check_asks_the_server():
    facts = from_dict(snapshot(4, packages=TRL25), "x")
    facts.source = "live"
    plan = build_plan(config_dict=CFG, launch=LAUNCH, live=False)
    from envdoctor.checks.engine import run_rules

    assert run_rules(Context(facts=facts, plan=plan, network=True), select=["LAY023"]).findings == []
    assert run_rules(Context(facts=facts, plan=plan, network=False), select=["LAY023"]).findings


def test_a_notebook_script_fires_and_its_own_server_cell_quiets_it(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "train.py").write_text(NOTEBOOK)
    snap = snapshot(1, model=A100_40, packages=TRL25)
    (f,) = _lay023(snap, config={}, launch="python train.py")
    assert f.severity.value == "warning" and "`python train.py`" in f.message
    started = NOTEBOOK.replace(
        "!pip install -q trl vllm\n", f"!pip install -q trl vllm\n!nohup trl vllm-serve --model {MODEL} &\n"
    )
    (tmp_path / "train.py").write_text(started)
    assert _lay023(snap, config={}, launch="python train.py") == []


def test_a_shell_script_launch_fires_and_names_it_and_a_comment_to_start_the_server_quiets_it(
    tmp_path, monkeypatch
):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "run.sh").write_text(f"#!/bin/bash\nset -e\n{LAUNCH} --config c.yaml\n")
    (f,) = _lay023(launch="bash run.sh")
    assert "run.sh" in f.message
    (tmp_path / "run.sh").write_text(
        f"#!/bin/bash\n# first, in another terminal: trl vllm-serve --model {MODEL}\n"
        f"{LAUNCH} --config c.yaml\n"
    )
    assert _lay023(launch="bash run.sh") == []


def _proved(snap: dict, config: dict, launch: str):
    facts = from_dict(snap, "x")
    plan = build_plan(config_dict=config, launch=launch, live=False)
    _, report = check(facts, plan, network=False)
    return next(f for a in report.areas for f in a.findings if f.rule == "LAY023")


def test_the_fixes_are_proved_colocate_first_then_the_server_on_an_idle_gpu():
    f = _proved(snapshot(4, packages=TRL25), CFG, LAUNCH)
    assert f.remedy is not None and f.remedy.config_set == {"vllm_mode": "colocate"}
    (serve,) = f.alternatives
    assert serve.launch == (f"CUDA_VISIBLE_DEVICES=2 trl vllm-serve --model {MODEL}", LAUNCH)


def test_a_chosen_server_mode_gets_the_server_first_on_a_split_machine():
    launch = "accelerate launch --num_processes 4 train.py"
    f = _proved(snapshot(4, packages=TRL25), {**CFG, "vllm_mode": "server"}, launch)
    assert f.remedy is not None and f.remedy.launch == (
        f"CUDA_VISIBLE_DEVICES=3 trl vllm-serve --model {MODEL}",
        "CUDA_VISIBLE_DEVICES=0,1,2 accelerate launch --num_processes 3 train.py",
    )
    assert f.alternatives[0].config_set == {"vllm_mode": "colocate"}


def _fix(tmp_path: Path, *args: str) -> dict:
    out = run_cli("fix", "--format", "json", *args, cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


def _rules(report: dict) -> set[str]:
    return {f["rule"] for f in report["findings"] if f["severity"] in ("warning", "error")}


def test_fix_writes_the_keyword_into_the_notebooks_own_config_call(tmp_path):
    (tmp_path / "train.py").write_text(NOTEBOOK)
    (tmp_path / "facts.json").write_text(json.dumps(snapshot(1, model=A100_40, packages=TRL25)))
    out = _fix(tmp_path, "--facts", "facts.json", "--", "python", "train.py")
    assert "LAY023" in out["fixed"] and "LAY023" in _rules(out["before"]) and not _rules(out["after"])
    (edit,) = out["changes"]["files"]
    assert edit["line"] == 8 and edit["new"] == ['    vllm_mode="colocate", use_vllm=True,']
    assert 'vllm_mode="colocate", use_vllm=True,' in (tmp_path / "train.py").read_text()
    again = run_cli(
        "check", "--facts", "facts.json", "--format", "json", "--", "python", "train.py", cwd=tmp_path
    )
    assert not _rules(json.loads(again.stdout))


def test_fix_sets_the_config_file_and_the_check_after_is_clean(tmp_path):
    (tmp_path / "c.yaml").write_text("".join(f"{k}: {v}\n" for k, v in CFG.items()).replace("True", "true"))
    (tmp_path / "facts.json").write_text(json.dumps(snapshot(4, packages=TRL25)))
    out = _fix(tmp_path, "--facts", "facts.json", "--config", "c.yaml", "--", *LAUNCH.split())
    assert out["fixed"] == ["LAY023"] and not _rules(out["after"])
    assert out["changes"]["config"]["set"] == {"vllm_mode": "colocate"}
    assert "vllm_mode: colocate" in (tmp_path / "c.yaml").read_text()


def test_the_hook_judges_no_line_of_its_own_but_the_lines_it_is_given(tmp_path):
    """A repository's recipe under the hook runs on the hook's own `accelerate launch` line: the
    repository may start the server in a README step (open-r1's recipes: use_vllm and TRL's
    default mode, `trl vllm-serve` started first), so only the lines given are judged."""
    (tmp_path / "grpo.yaml").write_text(f"model_name_or_path: {MODEL}\nuse_vllm: true\nnum_generations: 8\n")
    args = ("hook", "grpo.yaml", "--select", "LAY023", "--assume", "trl==0.25.1", "--format", "json")
    own = json.loads(run_cli(*args, cwd=tmp_path).stdout)
    assert _found(own) == [] and "the hook's own" in json.dumps(own)  # said as skipped
    given = json.loads(
        run_cli(*args, "--launch", "accelerate launch --num_processes 2 train.py", cwd=tmp_path).stdout
    )
    assert _found(given) == ["warning"]


def _found(report: object) -> list[str]:
    """The severities of every LAY023 finding anywhere in a JSON report."""
    if isinstance(report, dict):
        here = [report["severity"]] if report.get("rule") == "LAY023" and "severity" in report else []
        return here + [s for v in report.values() for s in _found(v)]
    if isinstance(report, list):
        return [s for v in report for s in _found(v)]
    return []


UNSLOTH = """\
import sys
from unsloth import FastLanguageModel
from trl import GRPOConfig, GRPOTrainer

fast = "gemma" not in sys.argv[1]
model, tokenizer = FastLanguageModel.from_pretrained("unsloth/Qwen2.5-3B", fast_inference={fast})
args = GRPOConfig(output_dir="o", use_vllm=True, per_device_train_batch_size=8, num_generations=8)
GRPOTrainer(model=model, reward_funcs=[], args=args).train()
"""


@pytest.mark.parametrize("fast", ["fast", "False"])
def test_quiet_where_unsloth_drives_the_trainer(tmp_path, monkeypatch, fast):
    """fahyjo/llm-final-project 5f9a74b (held-out set 17, healthy): Unsloth's fast_inference,
    computed by the script, starts vLLM in the trainer's process; its patched GRPOTrainer is not
    TRL's server client either way."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "train.py").write_text(UNSLOTH.format(fast=fast))
    assert _lay023(snapshot(1, model=A100_40, packages=TRL25), config={}, launch="python train.py x") == []
