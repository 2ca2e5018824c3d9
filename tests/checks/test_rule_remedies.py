"""Issue 35 item 2: fixes as data for CFG005, GPU002, LAY005 and LAY009; LAY008 and LAY013 say
in words that their fix is not machine-applicable. For each fixable rule: `envdoctor fix` (the
closure) then `check` leaves no finding of that rule, and no fix adds one."""

from __future__ import annotations

import socket

import pytest

from envdoctor.checks.context import Context
from envdoctor.checks.engine import run_rules
from envdoctor.facts.snapshot import from_dict
from envdoctor.findings import Severity
from envdoctor.plan.build import build_plan
from envdoctor.remedy.closure import Rerun, close
from tests.conftest import MODERN, snapshot


def _loud(found: list) -> dict:
    out: dict = {}
    for f in found:
        if f.severity is not Severity.INFO:
            out[(f.rule, f.severity)] = out.get((f.rule, f.severity), 0) + 1
    return out


def _closed(rule: str, snap: dict, config: dict | None = None, launch: str | None = None):
    facts = from_dict(snap, "test-snapshot")
    plan = build_plan(config_dict=config, launch=launch, live=False)
    closure = close(facts, plan, Rerun())
    assert any(f.rule == rule for f in closure.before), f"{rule} does not fire"
    assert rule in closure.fixed, closure.unfixed
    assert not [f for f in closure.after if f.rule == rule and f.severity is not Severity.INFO]
    was, now = _loud(closure.before), _loud(closure.after)
    assert not {k: n for k, n in now.items() if n > was.get(k, 0)}
    assert closure.one_round
    return closure


@pytest.mark.parametrize(
    ("config", "removed"),
    [({"num_generations": "eight"}, "num_generations"), ({"use_vllm": "maybe"}, "use_vllm")],
)
def test_cfg005_fix_removes_the_bad_value_so_trls_default_applies(config, removed):
    closure = _closed("CFG005", snapshot(packages=MODERN), config=config)
    assert removed in closure.changes.config_remove


def test_gpu002_fix_keeps_the_valid_indices_once():
    closure = _closed("GPU002", snapshot(n_gpus=2, env={"CUDA_VISIBLE_DEVICES": "0,5"}))
    assert closure.changes.env_set == {"CUDA_VISIBLE_DEVICES": "0"}


def test_gpu002_fix_on_the_launch_line_where_it_is_set_there():
    closure = _closed(
        "GPU002", snapshot(n_gpus=4), launch="CUDA_VISIBLE_DEVICES=1,1,2 torchrun --nproc_per_node 2 train.py"
    )
    assert closure.changes.launch and "CUDA_VISIBLE_DEVICES=1,2 " in closure.changes.launch[-1]


def test_lay005_fix_edits_gpu_ids_on_the_line():
    closure = _closed(
        "LAY005", snapshot(n_gpus=4), launch="accelerate launch --num_processes 2 --gpu_ids 0,0,1 train.py"
    )
    assert closure.changes.launch and "--gpu_ids 0,1" in closure.changes.launch[-1]


def test_lay009_fix_is_a_port_free_now():
    busy = socket.socket()
    busy.bind(("127.0.0.1", 0))
    busy.listen()
    port = busy.getsockname()[1]
    try:
        facts = from_dict(snapshot(n_gpus=2), "live")
        plan = build_plan(
            config_dict={"use_vllm": True, "vllm_mode": "server", "vllm_group_port": port},
            launch="CUDA_VISIBLE_DEVICES=1 accelerate launch train.py",
            live=False,
        )
        found = run_rules(Context(facts=facts, plan=plan, network=True), select=["LAY009"]).findings
        [f] = found
        assert f.remedy is not None
        free = f.remedy.config_set["vllm_group_port"]
        assert free != port and f"vllm_group_port: {free}" in f.remedy.fix
        with socket.socket() as probe:  # free when found: nothing listens there
            assert probe.connect_ex(("127.0.0.1", free)) != 0
    finally:
        busy.close()


def test_lay008_and_lay013_say_their_fix_is_not_machine_applicable():
    facts = from_dict(snapshot(n_gpus=2), "live")
    for config, rule in (
        ({"use_vllm": True, "vllm_mode": "server", "vllm_server_host": "10.1.2.3"}, "LAY013"),
        ({"use_vllm": True, "vllm_mode": "server", "vllm_server_port": 1}, "LAY008"),
    ):
        plan = build_plan(
            config_dict=config, launch="CUDA_VISIBLE_DEVICES=1 accelerate launch train.py", live=False
        )
        found = [
            f for f in run_rules(Context(facts=facts, plan=plan, network=True)).findings if f.rule == rule
        ]
        assert found and "not machine-applicable" in found[0].fix and found[0].remedy is None


@pytest.mark.parametrize(
    ("n", "trainer", "want_server", "want_trainer"),
    [
        (2, "accelerate launch train_grpo.py", "CUDA_VISIBLE_DEVICES=1 trl", "--num_processes 1"),
        (4, "torchrun --nproc_per_node 4 train.py", "CUDA_VISIBLE_DEVICES=3 trl", "--nproc_per_node 3"),
    ],
)
def test_lay006_server_on_every_training_gpu_gets_the_split_of_trls_docs(
    n, trainer, want_server, want_trainer
):
    """Issue 35 (held-out trl-3885, TRL 0.16's docs lines): `trl vllm-serve` and a trainer that
    takes every GPU share GPU 0. No GPU is free, so the fix splits them as TRL's docs do (the
    server on the last GPU, the trainer on the rest with as many processes); proved by the closure."""
    snap = snapshot(n_gpus=n, packages=MODERN)
    facts = from_dict(snap, "test-snapshot")
    plan = build_plan(
        config_dict={"use_vllm": True, "vllm_mode": "server"},
        launch=f"trl vllm-serve --model m\n{trainer}",
        live=False,
    )
    closure = close(facts, plan, Rerun())
    assert "LAY006" in closure.fixed and not [f for f in closure.after if f.severity is Severity.ERROR]
    server, train = closure.changes.launch
    assert server.startswith(want_server) and want_trainer in train
    assert not {k: m for k, m in _loud(closure.after).items() if m > _loud(closure.before).get(k, 0)}


def test_lay006_a_server_over_every_gpu_is_split_to_one_gpu_at_tensor_parallel_1():
    """The server takes both GPUs (tensor parallel 2) and the trainer runs on both: no GPU is
    left to move the server to, so the split serves on one GPU at tensor parallel 1 and trains
    on the other (what a published gpt-oss-20b setup's fix commit did)."""
    launch = (
        "CUDA_VISIBLE_DEVICES=0,1 trl vllm-serve --model Qwen/Qwen2.5-0.5B --tensor_parallel_size 2\n"
        "CUDA_VISIBLE_DEVICES=0,1 accelerate launch --num_processes 2 train.py"
    )
    config = {"use_vllm": True, "vllm_mode": "server"}
    closure = _closed("LAY006", snapshot(2, packages=MODERN), config=config, launch=launch)
    change = next(r for rule, r in closure.steps if rule == "LAY006")
    assert "tensor parallel 1" in change.fix
    server, trainer = change.launch
    assert server.startswith("CUDA_VISIBLE_DEVICES=1 trl vllm-serve") and "--tensor_parallel_size 1" in server
    assert trainer.startswith("CUDA_VISIBLE_DEVICES=0 accelerate launch --num_processes 1")


def test_lay003_keeps_the_variables_the_launch_line_sets():
    """One process sees both GPUs: the fix's line keeps the line's own variables (the script reads
    VLLM_SERVER_HOST / _PORT from them), not only CUDA_VISIBLE_DEVICES."""
    launch = (
        "CUDA_VISIBLE_DEVICES=1 trl vllm-serve --model Qwen/Qwen2.5-0.5B\n"
        "CUDA_VISIBLE_DEVICES=0,1 VLLM_SERVER_HOST=localhost VLLM_SERVER_PORT=8000 python train.py"
    )
    config = {"use_vllm": True, "vllm_mode": "server"}
    closure = _closed("LAY003", snapshot(2, packages=MODERN), config=config, launch=launch)
    change = next(r for rule, r in closure.steps if rule == "LAY003")
    trainer = change.launch[-1]
    assert trainer.startswith("CUDA_VISIBLE_DEVICES=0 ")
    assert "VLLM_SERVER_HOST=localhost VLLM_SERVER_PORT=8000 python train.py" in trainer


def test_cfg005_a_null_save_steps_is_read_only_under_the_steps_save_strategy():
    """transformers reads save_steps only when save_strategy is "steps" (its default): a null there
    fails; under "epoch" or "no" it is never read (trl.yaml read_under_strategy)."""
    from tests.conftest import findings

    def cfg005(config: dict) -> list:
        return [f for f in findings(snapshot(packages=MODERN), config=config) if f.rule == "CFG005"]

    assert cfg005({"save_steps": None})
    assert cfg005({"save_steps": None, "save_strategy": "steps"})
    assert not cfg005({"save_steps": None, "save_strategy": "epoch"})
    assert not cfg005({"save_steps": None, "save_strategy": "no"})
