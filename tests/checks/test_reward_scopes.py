"""The reward reader's reach (envdoctor.plan.rewards.from_script): the names a GRPOTrainer(...)
call sees wherever the call is, and DAT007 / DAT008 on what it resolves. Each shape fires and
stays quiet; what cannot be resolved is listed in ``unresolved`` (never a guess)."""

from __future__ import annotations

import json
from pathlib import Path

from envdoctor.plan.rewards import from_script
from tests.conftest import MODERN, findings, snapshot

HEAD = "import functools\nfrom functools import partial\nfrom trl import GRPOTrainer\n"


def _script(tmp_path: Path, body: str) -> Path:
    path = tmp_path / "train.py"
    path.write_text(HEAD + body)
    return path


def _sigs(tmp_path: Path, body: str) -> list[tuple[str, list[tuple[str, bool]]]]:
    reading = from_script(_script(tmp_path, body))
    return [(f.name, [(p.name, p.required) for p in f.params]) for f in reading.funcs]


def _dat(tmp_path: Path, body: str, rows: list[dict] | None = None) -> dict:
    script = _script(tmp_path, body)
    launch = f"python {script}"
    if rows is not None:
        data = tmp_path / "d.jsonl"
        data.write_text("".join(json.dumps(r) + "\n" for r in rows))
        launch += f" --dataset_name {data}"
    snap = snapshot(packages=MODERN, env={"HF_HOME": str(tmp_path / "hf")})
    return {f.rule: f for f in findings(snap, launch=launch) if f.rule in ("DAT007", "DAT008")}


ROWS = [{"prompt": "q", "solution": "4"}]

# Arabic-Qwen-GRPO-SFT 67a6c94 (set 14): a closure in main() that takes the completions under its
# own name and hands **batch_elements on beside completions=
ARABIC = (
    "def main():\n"
    "    cfg = {}\n"
    "    def reward_fn_for_trainer(generated_completions_str, **batch_elements):\n"
    "        return score(completions=generated_completions_str, cfg=cfg, **batch_elements)\n"
    "    trainer = GRPOTrainer(model='m', reward_funcs=reward_fn_for_trainer)\n"
)
ARABIC_FIXED = ARABIC.replace("(generated_completions_str, **", "(prompts, completions, **").replace(
    "completions=generated_completions_str, ", ""
)


def test_a_closure_that_renames_the_completions_fails_whatever_the_columns(tmp_path):
    f = _dat(tmp_path, ARABIC)["DAT007"]  # no dataset read: the columns are not known
    assert f.severity.value == "error" and "generated_completions_str" in f.message
    assert "got multiple values for keyword argument 'completions'" in f.message
    assert "def reward_fn_for_trainer(prompts, completions, **batch_elements)" in f.fix
    assert _dat(tmp_path, ARABIC_FIXED) == {}


def test_a_kwargs_reward_with_prompts_and_completions_is_healthy(tmp_path):
    body = "def main():\n    def r(prompts, completions, **kw):\n        return [0.0]\n"
    body += "    GRPOTrainer(model='m', reward_funcs=[r])\n"
    assert _dat(tmp_path, body) == {} and _dat(tmp_path, body, ROWS) == {}


def test_an_unknown_column_stays_quiet_when_the_columns_are_not_read(tmp_path):
    body = "def main():\n    def r(completions, answer, **kw):\n        return [0.0]\n"
    body += "    GRPOTrainer(model='m', reward_funcs=[r])\n"
    assert _dat(tmp_path, body) == {}  # a column `answer` may well exist
    assert "DAT007" in _dat(tmp_path, body, ROWS)  # the dataset has prompt, solution only


def test_a_prompt_parameter_is_never_filled_whatever_the_columns(tmp_path):
    body = "def r(prompt, completions, **kw):\n    return [0.0]\nGRPOTrainer(model='m', reward_funcs=r)\n"
    f = _dat(tmp_path, body)["DAT007"]
    assert "'prompt'" in f.message and "keeps the dataset's 'prompt' column" in f.message


def test_names_rebound_in_the_enclosing_function(tmp_path):
    body = (
        "def good(prompts, completions, **kw):\n    return [0.0]\n"
        "def main():\n    def bad(x):\n        return [0.0]\n    r = bad\n    r = good\n"
        "    funcs = [r, lambda completions, **kw: [1.0]]\n"
        "    GRPOTrainer(model='m', reward_funcs=funcs)\n"
    )
    assert [n for n, _ in _sigs(tmp_path, body)] == ["good", "<lambda>"]
    assert _dat(tmp_path, body, ROWS) == {}


def test_an_inner_def_shadows_the_module_one(tmp_path):
    body = (
        "def r(prompts, completions, **kw):\n    return [0.0]\n"
        "def main():\n    def r(sample):\n        return [0.0]\n"
        "    GRPOTrainer(model='m', reward_funcs=[r])\n"
    )
    assert _sigs(tmp_path, body) == [("r", [("sample", True)])]
    assert "DAT007" in _dat(tmp_path, body, ROWS)


def test_functools_partial_binds_what_it_names(tmp_path):
    base = "def f(completions, tokenizer, scale, **kw):\n    return [0.0]\n"
    quiet = base + "def main(tok):\n    GRPOTrainer(reward_funcs=[partial(f, tokenizer=tok, scale=2)])\n"
    assert _sigs(tmp_path, quiet)[0] == (
        "partial(f)",
        [("completions", True), ("tokenizer", False), ("scale", False)],
    )
    assert _dat(tmp_path, quiet, ROWS) == {}
    fires = base + "r = functools.partial(f, tokenizer=None)\nGRPOTrainer(reward_funcs=r)\n"
    assert _dat(tmp_path, fires, ROWS)["DAT007"].evidence["parameter"] == "scale"
    positional = (
        "def g(cfg, completions, **kw):\n    return [0.0]\nGRPOTrainer(reward_funcs=partial(g, {}))\n"
    )
    assert _sigs(tmp_path, positional) == [("partial(g)", [("completions", True)])]


def test_an_instance_with_call_is_read_without_self(tmp_path):
    body = (
        "class Judge:\n    def __init__(self, n):\n        self.n = n\n"
        "    def __call__(self, completions, **kw):\n        return [0.0]\n"
        "def main():\n    judge = Judge(3)\n    GRPOTrainer(reward_funcs=[judge, Judge(4)])\n"
    )
    assert _sigs(tmp_path, body) == [("Judge.__call__", [("completions", True)])] * 2
    assert _dat(tmp_path, body, ROWS) == {}
    bad = body.replace("(self, completions, **kw)", "(self, completions, reference)")
    found = _dat(tmp_path, bad, ROWS)
    assert found["DAT007"].evidence["parameter"] == "reference" and "DAT008" in found


def test_a_bound_method_is_read_without_self(tmp_path):
    body = (
        "class Runner:\n"
        "    def reward(self, prompts, completions, **kw):\n        return [0.0]\n"
        "    def train(self):\n        GRPOTrainer(model='m', reward_funcs=[self.reward])\n"
    )
    assert _sigs(tmp_path, body) == [("Runner.reward", [("prompts", True), ("completions", True)])]
    assert _dat(tmp_path, body, ROWS) == {}
    bad = body.replace("(self, prompts, completions, **kw)", "(self, completion, **kw)")
    assert _dat(tmp_path, bad, ROWS)["DAT007"].evidence["parameter"] == "completion"


def test_unsloth_and_user_trainer_subclasses_are_read(tmp_path):
    fn = "def r(completion, **kw):\n    return [0.0]\n"
    unsloth = fn + "UnslothGRPOTrainer(model='m', reward_funcs=[r])\n"
    assert _sigs(tmp_path, unsloth) == [("r", [("completion", True)])]
    mine = fn + "class Mine(GRPOTrainer):\n    pass\nclass Deeper(Mine):\n    pass\n"
    mine += "def main():\n    Deeper(model='m', reward_funcs=[r])\n"
    assert _sigs(tmp_path, mine) == [("r", [("completion", True)])]
    assert "DAT007" in _dat(tmp_path, mine, ROWS)


def test_what_cannot_be_resolved_is_listed_and_quiet(tmp_path):
    body = (
        "def main(funcs_from_caller):\n"
        "    a, b = build()\n"
        "    GRPOTrainer(reward_funcs=[a, funcs_from_caller, make_reward(), self_less.method])\n"
    )
    reading = from_script(_script(tmp_path, body))
    assert not reading.funcs and len(reading.unresolved) == 4
    assert _dat(tmp_path, body, ROWS) == {}


def test_a_forward_of_kwargs_beside_a_trl_keyword_is_a_duplicate(tmp_path):
    body = (
        "def r(prompts, **kw):\n    return score(completions=kw['completions'], **kw)\n"
        "GRPOTrainer(reward_funcs=r)\n"
    )
    f = _dat(tmp_path, body, ROWS)["DAT008"]
    assert "got multiple values for keyword argument 'completions'" in f.message
    popped = body.replace("    return score", "    c = kw.pop('completions')\n    return score")
    assert _dat(tmp_path, popped, ROWS) == {}


def test_the_closure_fixes_the_renamed_completions_in_the_script(tmp_path, monkeypatch):
    from envdoctor.facts.snapshot import from_dict
    from envdoctor.findings import Severity
    from envdoctor.plan.build import build_plan
    from envdoctor.remedy import Rerun, close

    monkeypatch.chdir(tmp_path)
    _script(tmp_path, ARABIC)
    facts = from_dict(snapshot(packages=MODERN, env={"HF_HOME": str(tmp_path / "hf")}), "snap")
    closure = close(facts, build_plan(launch="python train.py", live=False), Rerun())
    assert "DAT007" in closure.fixed and closure.one_round
    assert not [f for f in closure.after if f.severity is not Severity.INFO]
    (edit, bind) = closure.changes.files
    assert edit.new == ("    def reward_fn_for_trainer(completions, **batch_elements):",)
    assert bind.new == ("        generated_completions_str = completions",)


def test_a_name_rebound_to_a_partial_of_itself_and_names_bound_in_branches(tmp_path):
    body = (
        "def main(tok):\n    def reward(completions, tokenizer, **kw):\n        return [0.0]\n"
        "    reward = partial(reward, tokenizer=tok)\n    GRPOTrainer(reward_funcs=[reward])\n"
    )
    assert _sigs(tmp_path, body) == [("partial(reward)", [("completions", True), ("tokenizer", False)])]
    branches = (
        "def a(completions, **kw):\n    return [0.0]\ndef b(x):\n    return [0.0]\n"
        "def main(flag):\n    if flag:\n        r = a\n    else:\n        r = b\n"
        "    GRPOTrainer(reward_funcs=r)\n"
    )
    reading = from_script(_script(tmp_path, branches))
    assert not reading.funcs and "in a branch or a loop" in reading.unresolved[0]


# A list grown by append / extend / insert after it is bound (a GuessTheNumber GRPO script on
# GitHub: `reward_funcs = [correctness_reward]`, then `reward_funcs.append(obj)` under a flag)


def test_a_list_grown_in_place_reads_with_what_it_gains(tmp_path):
    body = (
        "def a(completions, **kw):\n    return [0.0]\n"
        "def b(completions, solution, **kw):\n    return [0.0]\n"
        "def c(prompts, completions, **kw):\n    return [0.0]\n"
        "def main():\n    rs = [a]\n    rs.append(b)\n    rs.extend([c])\n    rs.insert(0, a)\n"
        "    GRPOTrainer(model='m', reward_funcs=rs)\n"
    )
    assert [name for name, _ in _sigs(tmp_path, body)] == ["a", "b", "c", "a"]


def test_a_list_grown_in_a_branch_is_unresolved_not_half_read(tmp_path):
    body = (
        "import os\ndef a(completions, **kw):\n    return [0.0]\n"
        "def main():\n    rs = [a]\n    if os.environ.get('X'):\n        rs.append(make_reward())\n"
        "    GRPOTrainer(model='m', reward_funcs=rs)\n"
    )
    reading = from_script(_script(tmp_path, body))
    assert reading.funcs == [] and "extended in a branch or a loop" in reading.unresolved[0]
