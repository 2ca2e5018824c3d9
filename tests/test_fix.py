"""Fixes as data, proved before they are printed, and `envdoctor fix` (issue 35 items 2, 3, 5, 8)."""

from __future__ import annotations

import json
import shutil

import pytest

from envdoctor.checks.context import Context
from envdoctor.checks.engine import run_rules
from envdoctor.doctor import check as doctor_check
from envdoctor.facts.snapshot import from_dict
from envdoctor.findings import Remedy, Severity
from envdoctor.plan.build import build_plan
from envdoctor.remedy import Rerun, close, prove
from envdoctor.remedy.config_edit import edit_config, edit_yaml
from tests.conftest import A100_40, LEGACY, MODERN, ROOT, run_cli, snapshot

COLOCATE = {"use_vllm": True, "vllm_mode": "colocate", "num_generations": 4, "per_device_train_batch_size": 4}


def _found(snap, config=None, launch=None):
    facts = from_dict(snap, "snap")
    plan = build_plan(launch=launch, config_dict=config, live=False)
    _, report = doctor_check(facts, plan, network=False)
    return facts, plan, {f.rule: f for f in report.findings}


# ---- remedies per rule family ---------------------------------------------------------------


def test_cfg001_stale_vllm_device_in_colocate_is_removed():
    """Issue 35: colocate + a stale `vllm_device: cuda:1` on TRL 1.16: remove it; never a
    server key for a colocate run, never a `trl<0.18` pin (under which vllm_mode is unknown)."""
    _, _, found = _found(
        snapshot(2), {**COLOCATE, "vllm_device": "cuda:1"}, "torchrun --nproc_per_node 2 t.py"
    )
    f = found["CFG001"]
    assert f.remedy == Remedy(config_remove=("vllm_device",), fix=f.remedy.fix)
    assert f.fix.startswith("remove `vllm_device`")
    assert "vllm_server_host" not in f.fix.split("(")[0] and "trl<" not in f.fix


def test_cfg001_key_too_new_pins_the_exact_release():
    snap = snapshot(2, packages={**MODERN, "trl": "0.17.0"})
    facts = from_dict(snap, "snap")
    plan = build_plan(config_dict={"use_vllm": True, "vllm_mode": "colocate"}, live=False)
    f = next(
        f for f in run_rules(Context(facts=facts, plan=plan, network=False)).findings if f.rule == "CFG001"
    )
    cands = [f.remedy, *f.alternatives]
    assert Remedy(packages={"trl": "0.18.0"}, fix="pip install 'trl==0.18.0'") in cands


def test_config_layout_allocator_gpu_remedies():
    _, _, found = _found(
        snapshot(2, env={"PYTORCH_CUDA_ALLOC_CONF": "expandable_segments:True,bogus_opt:3"}),
        {**COLOCATE, "num_generations": 3},
        "python train.py",
    )
    assert found["CFG002"].remedy.config_set.get("num_generations") in (2, 4)
    assert found["LAY003"].remedy.launch == ("torchrun --nproc_per_node 2 train.py",)
    assert found["ALC001"].remedy.env_set == {"PYTORCH_CUDA_ALLOC_CONF": "expandable_segments:True"}
    _, _, found = _found(
        snapshot(2, model={**A100_40, "compute_capability": "7.0"}), {**COLOCATE, "bf16": True}
    )
    assert found["GPU004"].remedy.config_set == {"bf16": False, "fp16": True}


def test_server_gpu_remedy_is_the_server_line():
    _, _, found = _found(
        snapshot(4),
        {"use_vllm": True, "vllm_mode": "server", "num_generations": 4, "per_device_train_batch_size": 4},
        "CUDA_VISIBLE_DEVICES=0 trl vllm-serve --model Qwen/Qwen2.5-0.5B\n"
        "CUDA_VISIBLE_DEVICES=0,1,2 accelerate launch --num_processes 3 train.py",
    )
    f = found["LAY006"]
    server, trainer = f.remedy.launch
    assert server.startswith("CUDA_VISIBLE_DEVICES=3 trl vllm-serve") and trainer.endswith("train.py")


def test_package_remedies_are_exact_versions():
    snap = snapshot(
        2, packages={**LEGACY, "vllm": {"version": "0.7.2", "requires": ["torch==2.5.1"]}, "torch": "2.6.0"}
    )
    _, _, found = _found(
        snap, {"use_vllm": True, "vllm_device": "auto"}, "accelerate launch --num_processes 1 t.py"
    )
    pins = [r.packages for r in [found["PKG004"].remedy, *found["PKG004"].alternatives]]
    assert {"torch": "2.5.1"} in pins
    for name_version in pins:
        assert all(v[0].isdigit() for v in name_version.values())


# ---- the closure ------------------------------------------------------------------------------


def _cfg001_colocate():
    facts = from_dict(snapshot(2), "snap")
    plan = build_plan(
        config_dict={**COLOCATE, "vllm_device": "cuda:1"},
        launch="torchrun --nproc_per_node 2 t.py",
        live=False,
    )
    found = run_rules(Context(facts=facts, plan=plan, network=False)).findings
    return facts, plan, found


def test_closure_drops_a_remedy_that_does_not_hold():
    """The back-and-forth of issue 35: pinning TRL below 0.18 makes `vllm_mode` unknown. The
    closure refuses it, keeps the next candidate, and says why when none holds."""
    facts, plan, found = _cfg001_colocate()
    f = next(x for x in found if x.rule == "CFG001")
    pin = Remedy(packages={"trl": "0.17.1"}, fix="pip install 'trl==0.17.1'")
    noop = Remedy(config_set={"beta": 0.0}, fix="set beta: 0.0")
    from dataclasses import replace

    proved = prove(facts, plan, [replace(f, remedy=pin, alternatives=(f.remedy,))], Rerun())
    assert proved[0].remedy.config_remove == ("vllm_device",) and "trl" not in proved[0].fix
    assert (
        "trl==0.17.1" in proved[0].evidence["not_proved"]
        and "would add CFG001" in proved[0].evidence["not_proved"]
    )
    proved = prove(facts, plan, [replace(f, remedy=pin, alternatives=(noop,))], Rerun())
    assert proved[0].remedy is None
    why = proved[0].evidence["unfixable"]
    assert "would add CFG001" in why and "vllm_mode" in why and "leaves CFG001" in why
    assert proved[0].fix.startswith("no fix envdoctor could prove")


def test_all_fixes_together_clean_in_one_round():
    facts = from_dict(snapshot(2), "snap")
    plan = build_plan(
        config_dict={**COLOCATE, "num_generations": 5, "vllm_device": "cuda:1"},
        launch="accelerate launch --num_processes 3 train.py",
        live=False,
    )
    closure = close(facts, plan, Rerun())
    assert set(closure.fixed) >= {"CFG001", "LAY004", "CFG002"}
    assert closure.one_round and not [f for f in closure.after if f.severity is not Severity.INFO]
    assert closure.changes.launch == ("accelerate launch --num_processes 2 train.py",)


def test_a_config_key_on_the_command_line_is_fixed_there():
    facts = from_dict(snapshot(2), "snap")
    plan = build_plan(
        config_dict=COLOCATE, launch="torchrun --nproc_per_node 2 t.py --num_generations 3", live=False
    )
    closure = close(facts, plan, Rerun())
    assert "--num_generations 3" not in closure.changes.launch[-1]
    assert not closure.changes.config_set and closure.one_round


# ---- the config file edit ---------------------------------------------------------------------

YAML = """# GRPO run
use_vllm: true
vllm_mode: colocate   # one GPU
vllm_device: cuda:1   # stale
lora_target_modules:
  - q_proj
  - v_proj
num_generations: 3  # groups
"""


def test_yaml_edit_keeps_comments_and_order():
    out = edit_yaml(YAML, {"num_generations": 4, "beta": 0.04}, ["vllm_device"])
    assert (
        out
        == YAML.replace("vllm_device: cuda:1   # stale\n", "").replace(
            "num_generations: 3  # groups", "num_generations: 4  # groups"
        )
        + "beta: 0.04\n"
    )
    edit_config(YAML, "grpo.yaml", {"num_generations": 4}, ["lora_target_modules"])  # reads back


def test_json_config_edit():
    text = '{\n  "use_vllm": true,\n  "num_generations": 3\n}\n'
    assert json.loads(edit_config(text, "c.json", {"num_generations": 4}, [])) == {
        "use_vllm": True,
        "num_generations": 4,
    }


# ---- envdoctor fix ----------------------------------------------------------------------------


def _seed(tmp_path):
    work = tmp_path / "seed"
    shutil.copytree(ROOT / "examples" / "seed-000", work)
    return work


def test_fix_seed_000_then_check_is_clean(tmp_path):
    work = _seed(tmp_path)
    args = ["--facts", "facts.json", "--config", "grpo.yaml"]
    proc = run_cli("fix", *args, "--format", "json", "--", "python", "train.py", cwd=work)
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert set(out) == {"schema", "changes", "commands", "fixed", "unfixed", "before", "after"}
    assert out["schema"] == "envdoctor.fix/1" and out["fixed"] == ["LAY003"] and out["unfixed"] == []
    assert set(out["changes"]) == {"packages", "config", "env", "launch"}
    assert out["changes"]["config"] == {"set": {}, "remove": []}
    assert out["changes"]["launch"] == ["torchrun --nproc_per_node 1 train.py"]
    assert out["before"]["summary"]["errors"] == 1 and out["after"]["summary"]["errors"] == 0
    again = run_cli("check", *args, "--", *out["changes"]["launch"][-1].split(), cwd=work)
    assert again.returncode == 0, again.stdout


def test_fix_writes_the_config_in_place_and_diff_writes_nothing(tmp_path):
    (tmp_path / "facts.json").write_text(json.dumps(snapshot(2)))
    cfg = tmp_path / "grpo.yaml"
    cfg.write_text(YAML)
    args = [
        "--facts",
        "facts.json",
        "--config",
        "grpo.yaml",
        "--",
        "torchrun",
        "--nproc_per_node",
        "2",
        "t.py",
    ]
    proc = run_cli("fix", "--diff", *args, cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert cfg.read_text() == YAML
    assert "-vllm_device: cuda:1   # stale" in proc.stdout and "+num_generations: 2  # groups" in proc.stdout
    assert "→ 0 errors, 0 warnings" in proc.stdout
    proc = run_cli("fix", *args, cwd=tmp_path)
    assert proc.returncode == 0 and "config grpo.yaml changed" in proc.stdout
    text = cfg.read_text()
    assert "vllm_device" not in text and "# GRPO run" in text and "vllm_mode: colocate   # one GPU" in text
    assert run_cli("check", *args, cwd=tmp_path).returncode == 0


def test_fix_on_a_healthy_setup_changes_nothing(tmp_path):
    (tmp_path / "facts.json").write_text(json.dumps(snapshot(2)))
    (tmp_path / "grpo.yaml").write_text("use_vllm: true\nvllm_mode: colocate\nnum_generations: 4\n")
    before = (tmp_path / "grpo.yaml").read_text()
    proc = run_cli(
        "fix", "--facts", "facts.json", "--config", "grpo.yaml", "--format", "json", "--",
        "torchrun", "--nproc_per_node", "2", "t.py", cwd=tmp_path,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout
    out = json.loads(proc.stdout)
    assert out["fixed"] == [] and out["commands"] == []
    assert out["changes"] == {
        "packages": {},
        "config": {"set": {}, "remove": []},
        "env": {"set": {}, "unset": []},
        "launch": None,
    }
    assert (tmp_path / "grpo.yaml").read_text() == before


def test_fix_bad_input_exits_2(tmp_path):
    proc = run_cli("fix", "--config", str(tmp_path / "absent.yaml"), cwd=tmp_path)
    assert proc.returncode == 2 and "absent.yaml" in proc.stderr


def test_fix_unfixable_exits_1_and_says_why(tmp_path):
    snap = snapshot(2, used={0: 70000}, processes={0: [{"pid": 4242, "name": "python", "used_mib": 70000}]})
    (tmp_path / "facts.json").write_text(json.dumps(snap))
    (tmp_path / "grpo.yaml").write_text("use_vllm: true\nvllm_mode: colocate\nnum_generations: 4\n")
    proc = run_cli(
        "fix", "--facts", "facts.json", "--config", "grpo.yaml", "--format", "json", "--",
        "torchrun", "--nproc_per_node", "2", "t.py", cwd=tmp_path,
    )  # fmt: skip
    out = json.loads(proc.stdout)
    assert proc.returncode == (1 if out["after"]["summary"]["errors"] else 0)
    assert all(u["why"] for u in out["unfixed"])


# ---- the other wrong answers of issue 35 ------------------------------------------------------


def test_assumed_trl_is_said_assumed(tmp_path):
    cfg = tmp_path / "grpo.yaml"
    cfg.write_text("use_vllm: true\nvllm_mode: colocate\nvllm_device: cuda:1\n")
    proc = run_cli(
        "check", "--assume", "trl==1.16.0", "--config", str(cfg), "--format", "json", "--no-network"
    )
    f = next(f for f in json.loads(proc.stdout)["findings"] if f["rule"] == "CFG001")
    assert "TRL 1.16.0 (assumed) refuses it" in f["message"] and "installed TRL" not in f["message"]


@pytest.mark.parametrize(
    ("name", "hint"),
    [
        ("Qwen/Qwen2.5-1.5B-Instruct", "--model-params 1.5B"),
        ("HuggingFaceTB/SmolLM2-360M", "--model-params 360M"),
        ("Qwen/Qwen3-30B-A3B", "--model-params 30B"),
        ("mistralai/Mixtral-8x7B-v0.1", "--model-params N"),
        ("/data/run/checkpoint-500", "--model-params N"),
    ],
)
def test_uncached_model_suggests_its_own_size(name, hint):
    from envdoctor.plan.model_name import model_params_hint

    assert model_params_hint(name).startswith(hint)
    if hint.endswith("N"):
        assert "7B)" in model_params_hint(name)  # only as an example of the form


def test_uncached_model_skip_reason_names_its_size(tmp_path):
    facts = from_dict(snapshot(2), "snap")
    facts.env["HF_HOME"] = str(tmp_path / "hf")
    plan = build_plan(config_dict={**COLOCATE, "model_name_or_path": "Qwen/Qwen2.5-1.5B"}, live=False)
    out = run_rules(Context(facts=facts, plan=plan, network=False), select=["MEM101"])
    assert "--model-params 1.5B" in out.skipped["MEM101"] and "7B" not in out.skipped["MEM101"]


def test_plan_memory_72b_colocate_runs_the_weight_check(tmp_path):
    """72B at tensor parallel 1 in a 0.3 × 80 GiB colocate budget: vLLM cannot hold its weights
    (MEM103), with or without a config.json; never 'every GPU holds its planned peak'."""
    cfg = tmp_path / "grpo.yaml"
    cfg.write_text(
        "use_vllm: true\nvllm_mode: colocate\nvllm_gpu_memory_utilization: 0.3\nuse_peft: true\n"
        "per_device_train_batch_size: 4\nnum_generations: 8\n"
    )
    acc = tmp_path / "z3.yaml"
    acc.write_text("distributed_type: DEEPSPEED\ndeepspeed_config:\n  zero_stage: 3\nnum_processes: 8\n")
    proc = run_cli(
        "plan-memory", "--assume", "trl==1.16.0", "--model-params", "72B", "--gpu-memory", "80GiB",
        "--config", str(cfg), "--accelerate-config", str(acc), "--",
        "accelerate", "launch", "--num_processes", "8", "train.py",
    )  # fmt: skip
    assert proc.returncode == 1, proc.stdout
    assert "MEM103" in proc.stdout and "Every GPU holds" not in proc.stdout
    assert "vllm_gpu_memory_utilization: 0.05" not in proc.stdout


def test_hook_fix_renames_in_place(tmp_path):
    cfg = tmp_path / "grpo.yaml"
    cfg.write_text("# run\nuse_vllm: true\nvllm_mode: colocate\nvllm_gpu_memory_utilisation: 0.3  # typo\n")
    proc = run_cli("hook", "--assume", "trl==1.16.0", "--fix", "grpo.yaml", cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert (
        cfg.read_text()
        == "# run\nuse_vllm: true\nvllm_mode: colocate\nvllm_gpu_memory_utilization: 0.3  # typo\n"
    )


#: broken conformance setups, one per rule family the fix reaches (config, launch, server line,
#: packages, the catalogue with look-ahead)
CONFORMANCE = [
    "openr1-server-zero2-code:one-gpu-too-many",
    "trl-1.9-server:trainer-on-a-server-gpu",
    "kfb-trl-0.27-server-vllm-0.12:server-short-of-gpus",
    "trl-0.19-colocate:vllm-built-for-another-torch",
    "openr1-colocate-zero2:colocate-launched-with-python",
    "trl-1.9-grpo-vlm-example:misspelt-config-key",
]


@pytest.mark.parametrize("case_id", CONFORMANCE)
def test_fix_then_check_has_no_error_and_adds_nothing(case_id, tmp_path):
    import shlex

    import yaml

    from tests.conformance.setups import SETUPS, cases, cli_args

    case = next(c for c in cases() if c.id == case_id)
    work = tmp_path / case.setup
    shutil.copytree(SETUPS / case.setup, work)
    for rel, values in case.files.items():
        data = yaml.safe_load((work / rel).read_text(encoding="utf-8")) or {}
        data.update(values)
        (work / rel).write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    facts = tmp_path / "facts.json"
    facts.write_text(json.dumps(case.facts), encoding="utf-8")
    args = cli_args(case, facts)[1:]
    proc = run_cli("fix", *args, cwd=work)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    out = json.loads(proc.stdout)
    assert out["fixed"] and out["after"]["summary"]["errors"] == 0
    changes = out["changes"]
    head = args[: args.index("--")]
    if changes["launch"]:
        keep = [a for i, a in enumerate(head) if a != "--launch" and (i == 0 or head[i - 1] != "--launch")]
        *servers, trainer = changes["launch"]
        head = [*keep, *[x for s in servers for x in ("--launch", s)]]
        tail = shlex.split(trainer)
    else:
        tail = args[args.index("--") + 1 :]
    for name, version in changes["packages"].items():
        head += ["--assume", f"{name}=={version}"]
    again = json.loads(run_cli("check", *head, "--", *tail, cwd=work).stdout)
    loud = lambda r: {(f["rule"], f["severity"]) for f in r["findings"] if f["severity"] != "info"}  # noqa: E731
    assert again["summary"]["errors"] == 0, loud(again)
    assert loud(again) <= loud(out["before"]) | loud(out["after"])


def test_known_failure_remedy_is_the_fixed_release(tmp_path):
    from tests.conformance.setups import SETUPS, cases, cli_args

    case = next(c for c in cases() if c.id == "kfc-trl-1.9-grpo-vlm-smolvlm:deepspeed-0.19.2-on-trl-1.6")
    work = tmp_path / case.setup
    shutil.copytree(SETUPS / case.setup, work)
    facts = tmp_path / "facts.json"
    facts.write_text(json.dumps(case.facts), encoding="utf-8")
    report = json.loads(run_cli(*cli_args(case, facts), cwd=work).stdout)
    knf = [f for f in report["findings"] if f["rule"] == "KNF001" and f["severity"] == "error"]
    assert knf and all(f["remedy"]["packages"] for f in knf)
    for f in knf:
        assert all(v[0].isdigit() and not set(v) & set("<>=,") for v in f["remedy"]["packages"].values())
        assert f["fix"].startswith("pip install '") and "==" in f["fix"]


def test_typo_of_an_old_era_key_is_not_moved_into_a_server_key():
    _, _, found = _found(
        snapshot(2), {**COLOCATE, "vllm_devic": "cuda:1"}, "torchrun --nproc_per_node 2 t.py"
    )
    f = found["CFG004"]
    assert f.remedy.config_remove == ("vllm_devic",) and not f.remedy.config_set


def test_gpu_held_by_another_process_keeps_the_advice_by_hand():
    snap = snapshot(2, used={0: 70000}, processes={0: [{"pid": 4242, "name": "python", "used_mib": 70000}]})
    _, _, found = _found(snap, COLOCATE, "torchrun --nproc_per_node 2 t.py")
    f = found["MEM001"]
    assert f.fix.startswith("free GPU 0 (stop those processes)")
    assert f.remedy is not None or "no other fix holds" in f.fix
