"""PKG014: a feature the run asks for whose package is not installed (rules/knowledge/
optional_features.yaml): each row family fires and stays quiet, the severity follows the evidence
(facts read vs assumed, a request certain vs conditional, transformers' Hub-kernel fallback), and
every fix printed holds (the closure)."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from envdoctor.checks.context import Context
from envdoctor.checks.engine import run_rules
from envdoctor.facts.snapshot import from_dict
from envdoctor.findings import Severity
from envdoctor.plan.build import build_plan
from envdoctor.remedy.closure import Rerun, close
from tests.conftest import A100_40, MODERN, snapshot

FIXTURE = Path(__file__).parent / "fixtures" / "fa2_qwen05"
#: transformers before the Hub-kernel fallback of a missing flash-attn (4.56.0)
OLD_TF = {**MODERN, "transformers": "4.55.4"}


def _facts(
    packages: dict, live: bool = False, env: dict | None = None, assumed: bool = False, collected: bool = True
):
    """Facts of one GPU; ``collected``: a snapshot `envdoctor collect` wrote (it lists the whole
    stack, so what it lacks is absent), else one written by hand (a stack's note)."""
    snap = snapshot(1, packages={k: v for k, v in packages.items() if v}, env=env or {})
    if collected:
        snap |= {"envdoctor": "0.1.0", "taken_at": "2026-11-30T12:00:00Z"}
    facts = from_dict(snap, "snap")
    if live:
        facts.source = "live"
    if assumed:
        facts.extra["assumed"] = list(packages)
    return facts


def _run(facts, config: dict | None = None, launch: str | None = None) -> list:
    plan = build_plan(config_dict=config, launch=launch, live=False)
    return [f for f in run_rules(Context(facts=facts, plan=plan)).findings if f.rule == "PKG014"]


def _one(found: list):
    assert len(found) == 1, [f.message for f in found]
    return found[0]


# --- FlashAttention 2 -------------------------------------------------------------------------


def test_fa2_in_model_init_kwargs_without_flash_attn_is_an_error_before_the_fallback():
    f = _one(_run(_facts(OLD_TF), {"model_init_kwargs": {"attn_implementation": "flash_attention_2"}}))
    assert f.severity is Severity.ERROR and "flash-attn is not installed" in f.message
    assert "transformers 4.55.4 has no fallback (it came in 4.56.0)" in f.message
    assert f.remedy is not None
    assert f.remedy.config_set == {"model_init_kwargs": {"attn_implementation": "sdpa"}}


def test_fa2_quiet_where_flash_attn_is_installed():
    config = {"model_init_kwargs": {"attn_implementation": "flash_attention_2"}}
    assert not _run(_facts({**OLD_TF, "flash-attn": "2.8.3"}), config)


def test_fa2_quiet_for_another_implementation():
    assert not _run(_facts(OLD_TF), {"model_init_kwargs": {"attn_implementation": "sdpa"}})


def test_fa2_from_transformers_4_56_says_the_hub_fallback():
    config = {"model_init_kwargs": {"attn_implementation": "flash_attention_2"}}
    # a snapshot does not say whether `kernels` is installed: the fallback may serve the run
    f = _one(_run(_facts(MODERN), config))
    assert f.severity is Severity.WARNING
    assert "falls back to the Hub kernel" in f.message and "network" in f.message
    # a live check knows it is absent: the load raises
    f = _one(_run(_facts(MODERN, live=True), config))
    assert f.severity is Severity.ERROR and "kernels is not installed either" in f.message
    # kernels installed: transformers serves FA2 from the Hub
    assert not _run(_facts({**MODERN, "kernels": "0.18.2"}, live=True), config)
    # ... unless the Hub is kept offline
    f = _one(_run(_facts({**MODERN, "kernels": "0.18.2"}, live=True, env={"HF_HUB_OFFLINE": "1"}), config))
    assert f.severity is Severity.ERROR and "HF_HUB_OFFLINE" in f.message


def test_fa2_flag_is_likely_not_certain_and_its_fix_is_on_the_line():
    f = _one(_run(_facts(OLD_TF), launch="python train.py --attn_implementation flash_attention_2"))
    assert f.severity is Severity.WARNING  # ModelConfig's key: the script hands it on
    assert f.remedy is not None and f.remedy.config_set == {"attn_implementation": "sdpa"}


def test_fa2_assumed_versions_say_nothing_of_flash_attn():
    config = {"model_init_kwargs": {"attn_implementation": "flash_attention_2"}}
    assert not _run(_facts(OLD_TF, assumed=True), config)


def _script(tmp_path: Path, code: str) -> str:
    (tmp_path / "train.py").write_text(code)
    return f"python {tmp_path / 'train.py'}"


LOAD = (
    "from transformers import AutoModelForCausalLM\n"
    "{pre}m = AutoModelForCausalLM.from_pretrained('m', attn_implementation={value})\n"
)


def test_fa2_literal_in_the_script_is_an_error_and_the_fix_names_the_edit(tmp_path):
    launch = _script(tmp_path, LOAD.format(pre="", value="'flash_attention_2'"))
    f = _one(_run(_facts(OLD_TF), launch=launch))
    assert f.severity is Severity.ERROR and "train.py:2" in f.message
    assert f.remedy is None and "ask for 'sdpa' there" in f.fix and "find_spec('flash_attn')" in f.fix


def test_fa2_conditional_in_the_script_is_a_warning(tmp_path):
    pre = (
        "import torch\n"
        "impl = 'flash_attention_2' if torch.cuda.get_device_capability()[0] >= 8 else 'eager'\n"
    )
    launch = _script(tmp_path, LOAD.format(pre=pre, value="impl"))
    f = _one(_run(_facts(OLD_TF), launch=launch))
    assert f.severity is Severity.WARNING and "one branch of a conditional" in f.message


def test_fa2_computed_value_in_the_script_is_no_request(tmp_path):
    pre = "import sys\nimpl = sys.argv[1]\n"
    assert not _run(_facts(OLD_TF), launch=_script(tmp_path, LOAD.format(pre=pre, value="impl")))
    pre = "impl = 'flash_attention_2'\nimpl = 'eager'\n"  # assigned twice: not read
    assert not _run(_facts(OLD_TF), launch=_script(tmp_path, LOAD.format(pre=pre, value="impl")))


def test_a_hand_written_snapshot_says_nothing_of_what_it_does_not_list():
    """A stack's note lists what it pins (open-r1's README installs flash-attn; sets 13a/13b's
    healthy R1-Onevision, RS-GRPO, open-r1, grpo-vision-reasoning, wd1): quiet unless the
    snapshot names the package in ``absent``."""
    config = {"model_init_kwargs": {"attn_implementation": "flash_attention_2"}}
    assert not _run(_facts(OLD_TF, collected=False), config)
    snap = snapshot(1, packages=OLD_TF, absent=["flash-attn"])
    assert _one(_run(from_dict(snap, "snap"), config)).severity is Severity.ERROR


def test_set21_repository_own_grpo_loop_asks_for_fa2_without_flash_attn(tmp_path):
    """thread-grpo-qwen0.5-08a79cb (set 21): the repository's own GRPOTrainer loads the policy
    and the reference with FA2 on an Ampere GPU; flash-attn is not installed (its stack says so)."""
    shutil.copytree(FIXTURE, tmp_path / "repo")
    stack = {"torch": "2.11.0", "transformers": "5.6.2", "datasets": "4.8.4", "tokenizers": "0.22.2"}
    facts = from_dict(snapshot(1, A100_40, packages=stack, absent=["flash-attn"]), "snap")
    cwd = os.getcwd()
    os.chdir(tmp_path / "repo")
    try:
        launch = "python -m src.train --config configs/baseline.yaml --reward_fn binary"
        plan = build_plan(config="configs/baseline.yaml", launch=launch, live=False)
        found = [f for f in run_rules(Context(facts=facts, plan=plan)).findings if f.rule == "PKG014"]
        f = _one(found)
        assert f.severity is Severity.WARNING  # one branch of `… if capability >= 8 else "eager"`
        assert "src/grpo.py:24" in f.message and "flash_attention_2" in f.message
        assert "find_spec('flash_attn')" in f.fix
        assert "edit src/grpo.py:19:" in f.fix and "grpo.py:29" not in f.fix  # the literal, once
        # the config's keys are the repository's loop's own: nothing of TRL's report_to etc.
        facts.packages["flash-attn"] = type(facts.packages["torch"])(version="2.8.3")
        assert not [f for f in run_rules(Context(facts=facts, plan=plan)).findings if f.rule == "PKG014"]
    finally:
        os.chdir(cwd)


# --- Liger ------------------------------------------------------------------------------------


def test_liger_without_liger_kernel_is_an_error_with_a_drop_and_a_pinned_install():
    f = _one(_run(_facts(MODERN), {"use_liger_kernel": True}))
    assert f.severity is Severity.ERROR and "liger-kernel is not installed" in f.message
    assert f.remedy is not None and f.remedy.config_set == {"use_liger_kernel": False}
    assert [r.packages for r in f.alternatives] == [{"liger-kernel": "0.8.5"}]
    assert not _run(_facts({**MODERN, "liger-kernel": "0.6.1"}), {"use_liger_kernel": True})
    assert not _run(_facts(MODERN), {"use_liger_kernel": False})


# --- bitsandbytes -----------------------------------------------------------------------------


@pytest.mark.parametrize("optim", ["paged_adamw_8bit", "adamw_bnb_8bit", "lion_8bit"])
def test_bnb_optimizer_without_bitsandbytes_is_an_error(optim):
    f = _one(_run(_facts(MODERN), {"optim": optim}))
    assert f.severity is Severity.ERROR and "bitsandbytes" in f.message
    assert f.remedy is not None and f.remedy.config_set == {"optim": "adamw_torch"}


def test_bnb_quiet_for_a_torch_optimizer_or_with_bitsandbytes():
    assert not _run(_facts(MODERN), {"optim": "adamw_torch"})
    assert not _run(_facts({**MODERN, "bitsandbytes": "0.48.1"}), {"optim": "paged_adamw_8bit"})


def test_load_in_4bit_is_a_warning_whose_fix_installs():
    f = _one(_run(_facts(MODERN), launch="python train.py --load_in_4bit"))
    assert f.severity is Severity.WARNING and f.remedy is not None
    assert f.remedy.packages == {"bitsandbytes": "0.50.2"} and not f.remedy.config_set
    assert not _run(_facts({**MODERN, "bitsandbytes": "0.48.1"}), launch="python train.py --load_in_4bit")


# --- PEFT -------------------------------------------------------------------------------------


def test_use_peft_without_peft_installs_the_release_trls_extra_allows():
    f = _one(_run(_facts(MODERN), launch="python train.py --use_peft"))
    assert f.severity is Severity.WARNING
    assert f.remedy is not None and f.remedy.packages == {"peft": "0.21.2"}
    assert f.fix == "pip install 'peft==0.21.2'"  # dropping LoRA is no fix: install only
    assert not _run(_facts({**MODERN, "peft": "0.17.0"}), launch="python train.py --use_peft")


# --- loggers ----------------------------------------------------------------------------------


def test_report_to_wandb_without_wandb_on_a_live_machine_is_an_error():
    f = _one(_run(_facts(MODERN, live=True), {"report_to": "wandb"}))
    assert f.severity is Severity.ERROR and "WandbCallback requires wandb" in f.message
    assert f.remedy is not None and f.remedy.config_set == {"report_to": "none"}
    assert [r.packages for r in f.alternatives] == [{"wandb": "0.31.0"}]


def test_report_to_keeps_the_other_loggers_of_a_list():
    f = _one(
        _run(_facts({**MODERN, "tensorboard": "2.20.0"}, live=True), {"report_to": ["wandb", "tensorboard"]})
    )
    assert f.remedy is not None and f.remedy.config_set == {"report_to": ["tensorboard"]}


def test_report_to_quiet_where_installed_or_not_known():
    assert not _run(_facts({**MODERN, "wandb": "0.22.0"}, live=True), {"report_to": "wandb"})
    assert not _run(_facts({**MODERN, "tensorboardX": "2.6"}, live=True), {"report_to": "tensorboard"})
    assert not _run(_facts(MODERN), {"report_to": "wandb"})  # a collected snapshot: the stack only
    assert not _run(_facts(MODERN, live=True), {"report_to": "none"})
    assert not _run(_facts(MODERN, live=True), {"report_to": "all"})  # only what is installed


# --- the closure proves each fix ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("packages", "config", "launch", "live"),
    [
        (MODERN, {"use_liger_kernel": True}, None, False),
        (MODERN, {"optim": "paged_adamw_8bit"}, None, False),
        (OLD_TF, {"model_init_kwargs": {"attn_implementation": "flash_attention_2"}}, None, False),
        (OLD_TF, None, "python train.py --attn_implementation flash_attention_2", False),
        (MODERN, None, "python train.py --use_peft", False),
        (MODERN, {"report_to": "wandb"}, None, True),
    ],
)
def test_fix_closure_proves_the_fix(packages, config, launch, live):
    facts = _facts(packages, live=live)
    plan = build_plan(config_dict=config, launch=launch, live=False)
    closure = close(facts, plan, Rerun(select=["PKG014"]))
    assert any(f.rule == "PKG014" for f in closure.before)
    assert "PKG014" in closure.fixed, closure.unfixed
    assert not [f for f in closure.after if f.rule == "PKG014"]


def test_quiet_where_an_installed_wrapper_may_have_brought_the_package():
    """hello-rl-93aa990 (set 21, healthy): `uv pip install unsloth vllm`, optim paged_adamw_8bit;
    the snapshot names Unsloth without its requirements, and Unsloth brings bitsandbytes."""
    assert not _run(_facts({**MODERN, "unsloth": "2025.9.1"}), {"optim": "paged_adamw_8bit"})
    # TRL brings liger-kernel only through its `liger` extra: not brought by a plain install
    assert _run(_facts(MODERN), {"use_liger_kernel": True})


def test_quiet_for_a_declared_stack():
    """The hook's facts: a requirements file names what it pins, not what comes with it."""
    facts = _facts(MODERN)
    facts.extra["declared"] = {"stack": {}}
    assert not _run(facts, {"use_liger_kernel": True})


# --- DeepSpeed: asked for by the launch or TrainingArguments' deepspeed -------------------------

#: a stack whose torch DeepSpeed 0.18.9's CI ran (the pin of the table)
DS_STACK = {"trl": "0.29.0", "transformers": "4.57.3", "torch": "2.9.1", "accelerate": "1.12.0"}
ZERO2 = "distributed_type: DEEPSPEED\nnum_processes: 8\ndeepspeed_config:\n  zero_stage: 2\n"


def _accelerate(tmp_path: Path, text: str = ZERO2) -> str:
    (tmp_path / "zero2.yaml").write_text(text)
    (tmp_path / "train.py").write_text("print('train')\n")
    return str(tmp_path / "zero2.yaml")


def _ds(facts, launch: str, config: dict | None = None, accelerate: str | None = None) -> list:
    plan = build_plan(config_dict=config, accelerate_config=accelerate, launch=launch, live=False)
    found = run_rules(Context(facts=facts, plan=plan)).findings
    return [f for f in found if f.rule == "PKG014" and f.evidence.get("package") == "deepspeed"]


def test_a_deepspeed_accelerate_config_without_deepspeed_is_an_error_with_a_pin(tmp_path):
    """dpo-exp-b578d3b (set 25): accelerate launch --config_file zero2.yaml (DEEPSPEED) in an
    image without deepspeed: accelerate's DeepSpeed launcher raises ImportError at once."""
    cfg = _accelerate(tmp_path)
    f = _one(_ds(_facts(DS_STACK), f"accelerate launch --config_file {cfg} {tmp_path / 'train.py'}"))
    assert f.severity is Severity.ERROR and "distributed_type: DEEPSPEED" in f.message
    assert "DeepSpeed is not installed" in f.message
    assert f.fix == "pip install 'deepspeed==0.18.9'"
    assert f.remedy is not None and f.remedy.packages == {"deepspeed": "0.18.9"}


def test_each_deepspeed_request_fires(tmp_path):
    script = tmp_path / "train.py"
    script.write_text("print('train')\n")
    facts = _facts(DS_STACK)
    assert _one(_ds(facts, f"accelerate launch --use_deepspeed {script}")).severity is Severity.ERROR
    assert _one(_ds(facts, f"deepspeed --num_gpus 8 {script}")).severity is Severity.ERROR
    f = _one(_ds(facts, f"python {script}", config={"deepspeed": "ds_zero3.json"}))
    assert f.severity is Severity.ERROR and "`deepspeed: ds_zero3.json`" in f.message
    f = _one(_ds(facts, f"torchrun --nproc_per_node 2 {script} --deepspeed ds.json"))
    assert "deepspeed: ds.json" in f.message


def test_deepspeed_quiet_where_installed_not_known_or_not_asked(tmp_path):
    cfg = _accelerate(tmp_path)
    line = f"accelerate launch --config_file {cfg} {tmp_path / 'train.py'}"
    assert not _ds(_facts({**DS_STACK, "deepspeed": "0.18.9"}), line)
    assert not _ds(_facts(DS_STACK, collected=False), line)  # a snapshot written by hand
    assert not _ds(_facts(DS_STACK, assumed=True), line)  # --assume names versions only
    # the line's own mode wins over the config file's (accelerate's _validate_launch_command)
    assert not _ds(
        _facts(DS_STACK), f"accelerate launch --config_file {cfg} --multi_gpu {tmp_path / 'train.py'}"
    )
    multi = _accelerate(tmp_path, "distributed_type: MULTI_GPU\nnum_processes: 2\n")
    assert not _ds(_facts(DS_STACK), f"accelerate launch --config_file {multi} {tmp_path / 'train.py'}")
    # --deepspeed_config_file alone does not switch accelerate to DeepSpeed's launcher
    assert not _ds(
        _facts(DS_STACK), f"accelerate launch --deepspeed_config_file ds.json {tmp_path / 'train.py'}"
    )


def test_deepspeed_without_a_provable_pin_names_no_release(tmp_path):
    """torch 2.13 is past the torch DeepSpeed's CI ran at the releases of the table: no pin."""
    cfg = _accelerate(tmp_path)
    f = _one(_ds(_facts(MODERN), f"accelerate launch --config_file {cfg} {tmp_path / 'train.py'}"))
    assert f.remedy is None and "==" not in f.fix


def test_deepspeed_fix_closure_proves_the_pin(tmp_path):
    cfg = _accelerate(tmp_path)
    facts = _facts(DS_STACK)
    plan = build_plan(accelerate_config=cfg, launch=f"accelerate launch --config_file {cfg} x.py", live=False)
    closure = close(facts, plan, Rerun(select=["PKG014"]))
    assert any(f.rule == "PKG014" for f in closure.before)
    assert "PKG014" in closure.fixed, closure.unfixed
    assert not [f for f in closure.after if f.rule == "PKG014"]
    assert closure.changes.to_dict()["packages"] == {"deepspeed": "0.18.9"}
