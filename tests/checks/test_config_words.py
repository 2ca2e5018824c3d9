"""CFG013: an unquoted YAML word read as a boolean / None for a string or enum config key
(rules/knowledge/yaml_string_keys.yaml); set 23's Cosmos-MCQ-GRPO-Project (`eval_strategy: no`)."""

from __future__ import annotations

import json

import pytest

from envdoctor.checks.context import Context
from envdoctor.checks.engine import run_rules
from envdoctor.facts.snapshot import from_dict
from envdoctor.findings import Severity
from envdoctor.parsing import implicit_scalars
from envdoctor.plan.build import build_plan
from envdoctor.remedy import Rerun, close
from tests.conftest import MODERN, run_cli, snapshot


def _hits(tmp_path, text: str, launch: str = "accelerate launch --num_processes 1 train.py") -> list:
    cfg = tmp_path / "grpo.yaml"
    cfg.write_text(text)
    facts = from_dict(snapshot(1, packages=MODERN), "snap")
    plan = build_plan(config=str(cfg), launch=launch, live=False)
    return [f for f in run_rules(Context(facts=facts, plan=plan), select=["CFG013"]).findings]


def test_pyyaml_reads_no_off_and_null_but_not_y_or_quoted_words():
    got = implicit_scalars('a: no\nb: "no"\nc: y\nd:\ne: ~\nt:\n  eval_strategy: Off  # x\nf: true\n')
    assert [(f["path"], f["word"], f["kind"]) for f in got] == [
        (("a",), "no", "bool"),
        (("e",), "~", "null"),
        (("t", "eval_strategy"), "Off", "bool"),
    ]


@pytest.mark.parametrize(
    ("text", "said"),
    [
        ("eval_strategy: no\n", "IntervalStrategy"),
        ("save_strategy: NO  # never\n", "SaveStrategy"),
        ("logging_strategy: off\n", "IntervalStrategy"),
        ("lr_scheduler_type: ~\n", "SchedulerType"),
        ("report_to: no\n", "is not supported"),
    ],
)
def test_a_top_level_word_the_config_class_refuses_is_an_error(tmp_path, text, said):
    (hit,) = _hits(tmp_path, "learning_rate: 1.0e-6\n" + text)
    assert hit.severity is Severity.ERROR and said in hit.message


@pytest.mark.parametrize(
    "text",
    [
        'eval_strategy: "no"\n',
        "eval_strategy: steps\n",
        "scale_rewards: no\n",  # a boolean TRL maps itself
        "report_to: null\n",  # None: "all" before transformers 5, "none" from 5.0 (not judged)
        "evaluation_strategy: ~\n",  # its default was None in 4.41-4.45
        "eval_strategy: n\n",  # PyYAML keeps y / n strings
        "gradient_checkpointing: yes\n",  # a boolean field
    ],
)
def test_quiet_where_the_value_is_the_string_or_the_type_takes_it(tmp_path, text):
    assert _hits(tmp_path, text) == []


def test_the_command_line_value_runs_not_the_file(tmp_path):
    assert _hits(tmp_path, "eval_strategy: no\n", "python train.py --eval_strategy no") == []


def test_a_section_the_script_reads_itself_is_a_warning(tmp_path):
    (hit,) = _hits(tmp_path, "training:\n  eval_strategy: no\n  save_strategy: steps\n")
    assert hit.severity is Severity.WARNING and "`training` section" in hit.message


def test_the_fix_quotes_the_word_and_the_recheck_is_clean(tmp_path):
    cfg = tmp_path / "grpo.yaml"
    cfg.write_text("# run\neval_strategy: no   # no eval\nreport_to: off\nlearning_rate: 1.0e-6\n")
    facts = from_dict(snapshot(1, packages=MODERN), "snap")
    plan = build_plan(config=str(cfg), launch="python train.py", live=False)
    closure = close(facts, plan, Rerun())
    assert "CFG013" in closure.fixed
    assert not [f for f in closure.after if f.rule == "CFG013"]
    (tmp_path / "facts.json").write_text(json.dumps(snapshot(1, packages=MODERN)))
    args = ["--facts", "facts.json", "--config", "grpo.yaml", "--", "python", "train.py"]
    proc = run_cli("fix", *args, cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert (
        cfg.read_text() == '# run\neval_strategy: "no"   # no eval\nreport_to: none\nlearning_rate: 1.0e-6\n'
    )
    again = run_cli("check", "--format", "json", *args, cwd=tmp_path)
    assert not [f for f in json.loads(again.stdout)["findings"] if f["rule"] == "CFG013"]


def test_an_off_strategy_is_fixed_to_the_string_no(tmp_path):
    """`save_strategy: off` is False; the strategy that means "never" is "no" (a fix that only
    said "set it to one of …" left the error for the user)."""
    cfg = tmp_path / "grpo.yaml"
    cfg.write_text("save_strategy: off\nlogging_strategy: Off\nlearning_rate: 1.0e-6\n")
    facts = from_dict(snapshot(1, packages=MODERN), "snap")
    plan = build_plan(config=str(cfg), launch="python train.py", live=False)
    closure = close(facts, plan, Rerun())
    assert "CFG013" in closure.fixed
    assert not [f for f in closure.after if f.rule == "CFG013"]
    (tmp_path / "facts.json").write_text(json.dumps(snapshot(1, packages=MODERN)))
    args = ["--facts", "facts.json", "--config", "grpo.yaml", "--", "python", "train.py"]
    assert run_cli("fix", *args, cwd=tmp_path).returncode == 0
    assert cfg.read_text() == 'save_strategy: "no"\nlogging_strategy: "no"\nlearning_rate: 1.0e-6\n'
