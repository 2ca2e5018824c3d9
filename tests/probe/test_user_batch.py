"""The probe on the user's first batch and reward functions, piece by piece (no GRPO step):
which reward functions may be imported (the script's top level read by AST), the checks of a
reward's result and of its call, the batch's checks, the spec from a plan, and the findings."""

from __future__ import annotations

import ast
import importlib.util
import json
import math
import sys
from pathlib import Path

import pytest

from envdoctor.checks.context import Context
from envdoctor.facts.snapshot import from_dict
from envdoctor.plan.build import build_plan
from envdoctor.probe.interface import ProbeResult, ProbeSpec
from envdoctor.probe.judge.user_judge import judge_user
from envdoctor.probe.plan import reward_plan
from envdoctor.probe.plan.spec import spec_from_context
from tests.conftest import MODERN, snapshot

USER_REWARDS = Path(reward_plan.__file__).parents[1] / "run" / "user_rewards.py"


@pytest.fixture(scope="module")
def ur():
    """user_rewards.py as the worker loads it: by path, the stdlib only."""
    spec = importlib.util.spec_from_file_location("envdoctor_user_rewards", USER_REWARDS)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


# -- the script's top level ------------------------------------------------------------------

GUARDED = '''"""Train."""
import math
import re
from dataclasses import dataclass
from trl import GRPOConfig, GRPOTrainer

PATTERN = re.compile(r"<answer>(.*?)</answer>")
WEIGHTS = {"a": 1.0, "b": [1, 2]}
try:
    import wandb
except ImportError:
    wandb = None

@dataclass
class Args:
    lr: float = 1e-5

def accuracy(completions, solution, **kwargs):
    return [1.0 if s in c else 0.0 for c, s in zip(completions, solution)]

def fmt(completions, **kwargs):
    return [0.5 for _ in completions]

REWARDS = [accuracy, fmt]

def main():
    trainer = GRPOTrainer(model="m", reward_funcs=REWARDS, args=GRPOConfig())
    trainer.train()

if __name__ == "__main__":
    main()
'''


def test_a_guarded_script_is_safe_to_import_and_names_its_rewards(tmp_path):
    assert reward_plan.safe_top_level(ast.parse(GUARDED)) is None
    path = tmp_path / "train.py"
    path.write_text(GUARDED)
    spec = reward_plan.from_script(path)
    assert spec["attrs"] == ["accuracy", "fmt"] and spec["script"] == str(path.resolve())


@pytest.mark.parametrize(
    "tail, line_text",
    [
        ("trainer = GRPOTrainer(model='m', reward_funcs=[fmt])\ntrainer.train()\n", "GRPOTrainer("),
        (
            "model = AutoModel.from_pretrained('x')\nGRPOTrainer(model=model, reward_funcs=[fmt])\n",
            "from_pretrained",
        ),
        ("@torch.no_grad()\ndef g(): ...\nGRPOTrainer(reward_funcs=[fmt])\n", "definition of g"),
        ("if True:\n    main()\nGRPOTrainer(reward_funcs=[fmt])\n", "if True"),
    ],
)
def test_a_script_whose_top_level_runs_code_is_not_imported(tmp_path, tail, line_text):
    path = tmp_path / "train.py"
    path.write_text("from trl import GRPOTrainer\ndef fmt(completions, **kw):\n    return [0.0]\n" + tail)
    spec = reward_plan.from_script(path)
    assert "attrs" not in spec
    assert "would run its top level (line 4" in spec["own_reason"] and line_text in spec["own_reason"]
    assert '__name__ == "__main__"' in spec["own_reason"]


@pytest.mark.parametrize(
    "call, why",
    [
        ("reward_funcs=[lambda completions, **kw: [0.0]]", "a lambda"),
        ("reward_funcs=[inner]", "inner (line"),
        ("reward_funcs=get_rewards(args)", "built at run time"),
        ("reward_funcs='org/reward-model'", "reward model"),
        ("reward_funcs=[inner], rollout_func=rollout", "rollout_func, whose fields"),
    ],
)
def test_rewards_that_cannot_be_imported_say_why(tmp_path, call, why):
    path = tmp_path / "train.py"
    path.write_text(
        "from trl import GRPOTrainer\ndef main():\n    def inner(completions, **kw):\n        return [0.0]\n"
        f"    GRPOTrainer(model='m', {call})\nif __name__ == '__main__':\n    main()\n"
    )
    assert why in reward_plan.from_script(path)["own_reason"]


def test_cli_reward_funcs_are_registry_names_or_dotted_paths(tmp_path):
    spec = reward_plan.from_cli(["think_format_reward", "my_rewards.acc"], tmp_path)
    assert spec["items"] == [{"registry": "think_format_reward"}, {"module": "my_rewards", "attr": "acc"}]
    assert "reward model" in reward_plan.from_cli(["org/rm-7b"], tmp_path)["own_reason"]


# -- a reward's result and its call ----------------------------------------------------------


@pytest.mark.parametrize(
    "out, rule",
    [
        ([1.0, 0.5, None, 0], None),  # None entries: TRL's "does not apply"
        ((1, 2, 3, 4), None),
        (None, "DAT010"),
        ([1.0, math.nan, 0.0, math.nan], "DAT012"),
        ([1.0, math.inf, 0.0, 0.0], "DAT012"),
        ([1.0], "DAT013"),
        (1.0, "DAT013"),
        ("1111", "DAT013"),
        ([1.0, "a", 0.0, 0.0], "DAT013"),
    ],
)
def test_reward_results_are_checked(ur, out, rule):
    problem = ur.check_result(out, 4)
    assert (problem or {}).get("rule") == rule


def _rewards_module(tmp_path: Path) -> Path:
    path = tmp_path / "planted.py"
    path.write_text(
        "def needs_answer(completions, answer, **kwargs):\n    return [0.0] * len(completions)\n"
        "def strict(completions, prompts):\n    return [0.0] * len(completions)\n"
        "def boom(completions, solution, **kwargs):\n    return [float(s) / 0 for s in solution]\n"
        "def none_sometimes(completions, **kwargs):\n"
        "    if completions:\n        return None\n    return []\n"
        "async def good_async(completions, **kwargs):\n    return [1.0 for _ in completions]\n"
    )
    return path


def _call_all(ur, tmp_path):
    _rewards_module(tmp_path)
    spec = {
        "items": [
            {"module": "planted", "attr": a} for a in ("needs_answer", "strict", "boom", "none_sometimes")
        ]
    }
    info: dict = {}
    funcs = ur.rewards({**spec, "root": str(tmp_path)}, True, info)
    kwargs = {
        "prompts": ["p", "q"],
        "completions": ["c", "d"],
        "completion_ids": [[1], [2]],
        "solution": ["1", "2"],
    }
    outs = [f(**kwargs) for f in funcs]
    return info, outs


def test_faults_of_a_call_are_recorded_with_their_frame_and_the_step_goes_on(ur, tmp_path):
    info, outs = _call_all(ur, tmp_path)
    sys.modules.pop("planted", None)
    assert outs == [[0.0, 0.0]] * 4  # zeros in place of each fault
    errs = {name: f["errors"][0] for name, f in info["functions"].items()}
    assert errs["needs_answer"]["rule"] == "DAT007" and errs["needs_answer"]["parameters"] == ["answer"]
    assert errs["strict"]["rule"] == "DAT008" and errs["strict"]["unexpected"] == ["completion_ids"]
    assert errs["boom"]["rule"] == "DAT011" and errs["boom"]["type"] == "ZeroDivisionError"
    assert errs["boom"]["frame"].endswith("planted.py:6 in boom")
    assert errs["none_sometimes"]["rule"] == "DAT010"
    assert info["functions"]["boom"]["where"].endswith("planted.py:5") and info["used"]


def test_an_async_reward_stays_async(ur, tmp_path):
    import asyncio

    _rewards_module(tmp_path)
    info: dict = {}
    (func,) = ur.rewards(
        {"items": [{"module": "planted", "attr": "good_async"}], "root": str(tmp_path)}, True, info
    )
    sys.modules.pop("planted", None)
    assert asyncio.run(func(completions=["a", "b"])) == [1.0, 1.0]
    assert info["functions"]["good_async"]["shape"] == "list[2] of float"


def test_a_failed_import_is_the_reason_for_the_probes_own_reward(ur, tmp_path):
    info: dict = {}
    spec = {"items": [{"module": "no_such_rewards_module", "attr": "f"}], "root": str(tmp_path)}
    assert ur.rewards(spec, True, info) is None
    assert info["used"] is False and "ModuleNotFoundError" in info["reason"]
    assert ur.rewards({"items": [{"registry": "think_format_reward"}]}, False, info := {}) is None
    assert "rows were not used" in info["reason"]


def test_a_guarded_script_is_imported_without_running_its_training(ur, tmp_path):
    script = tmp_path / "train.py"
    script.write_text(
        GUARDED.replace("from trl import GRPOConfig, GRPOTrainer\n", "").replace("    main()", "    1 / 0")
    )
    spec = reward_plan.from_script(script)
    funcs, why = ur.load(spec)
    assert why is None and [n for n, _w, _f in funcs] == ["accuracy", "fmt"]
    assert funcs[0][2](completions=["x 1"], solution=["1"]) == [1.0]


# -- the batch -------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def tok():
    pytest.importorskip("transformers")
    from envdoctor.probe.run.runner import WORKER

    spec = importlib.util.spec_from_file_location("envdoctor_probe_worker_t", WORKER)
    worker = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(worker)
    return lambda: worker.word_tokenizer(["what", "is", "two", "plus", "word"])


def _data(rows: list[dict], **more) -> dict:
    return {"dataset": "d.jsonl", "source": "/x/d.jsonl", "rows": rows, "rows_read": len(rows), **more}


def test_a_batch_without_prompt_is_dat002(ur, tok):
    info: dict = {}
    rows = [{"question": "what is two", "solution": "2"}]
    assert ur.prepare(_data(rows, columns=["question", "solution"]), tok(), True, info) is None
    assert info["errors"] == [{"rule": "DAT002", "columns": ["question", "solution"]}] and not info["used"]


def test_chat_rows_and_the_users_tokenizer_without_a_template_is_dat003(ur, tok):
    rows = [{"prompt": [{"role": "user", "content": "what is two plus two"}], "solution": "4"}]
    info: dict = {}
    out = ur.prepare(_data(rows, user_tokenizer="org/base-model"), tok(), True, info)
    assert info["errors"][0] == {"rule": "DAT003", "tokenizer": "org/base-model"} and out
    quiet: dict = {}  # the probe's own tokenizer gets a plain template: nothing of the user's
    assert ur.prepare(_data(rows), tok(), False, quiet) and quiet["errors"] == []
    own: dict = {}  # the script or config sets a template (as DAT003 of the check reads it)
    assert ur.prepare(_data(rows, user_tokenizer="org/m", template_set=True), tok(), True, own)
    assert own["errors"] == [] and own["chat_template"].startswith("the probe's plain")


def test_prompts_over_vllms_limit_are_counted_with_the_users_tokenizer(ur, tok):
    rows = [{"prompt": "word " * n, "solution": "1"} for n in (3, 40, 60)]
    info: dict = {}
    data = _data(rows, user_tokenizer="org/m", limit=32, limit_key="vllm_max_model_length")
    out = ur.prepare(data, tok(), True, info)
    (err,) = info["errors"]
    assert err["rule"] == "DAT004" and err["rows_over"] == 2 and err["rows"] == [1, 2]
    assert err["longest_tokens"] == 60 and info["rows_over_length"] == 2
    assert all(len(r["prompt"].split()) <= ur.PROBE_PROMPT_TOKENS for r in out)  # cut for the step
    cut: dict = {}  # TRL of 0.19-0.24 cuts to max_prompt_length before vLLM
    ur.prepare({**data, "truncate_to": 16}, tok(), True, cut)
    assert cut["errors"] == [] and cut["rows_over_length"] == 0


# -- the spec from a plan, and the findings -------------------------------------------------


def _ctx(tmp_path: Path, config: dict, launch: str) -> Context:
    snap = snapshot(1, packages=MODERN, env={"HF_HOME": str(tmp_path / "hf")})
    return Context(facts=from_dict(snap, "t"), plan=build_plan(launch=launch, config_dict=config, live=False))


def test_the_spec_carries_the_users_rows_and_rewards(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    rows = [{"prompt": f"q{i}", "solution": str(i)} for i in range(100)]
    (tmp_path / "d.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    (tmp_path / "train.py").write_text(
        GUARDED.replace("GRPOConfig()", "GRPOConfig()").replace(
            "import math\n", "import math\nfrom datasets import load_dataset\n"
        )
    )
    config = {
        "dataset_name": str(tmp_path / "d.jsonl"),
        "use_vllm": True,
        "vllm_mode": "colocate",
        "vllm_max_model_length": 1024,
        "max_completion_length": 256,
    }
    spec = spec_from_context(_ctx(tmp_path, config, "python train.py"))
    assert len(spec.user_data["rows"]) == 64 and spec.user_data["columns"] == ["prompt", "solution"]
    assert spec.user_data["limit"] == 1024 and spec.user_data["room"] == 768
    assert spec.user_rewards["attrs"] == ["accuracy", "fmt"] and spec.user_data["template_set"] is False
    templated = spec_from_context(
        _ctx(tmp_path, {**config, "chat_template_path": "t.jinja"}, "python train.py")
    )
    assert templated.user_data["template_set"] is True
    missing = spec_from_context(_ctx(tmp_path, {"dataset_name": "org/not-here"}, "python train.py"))
    assert missing.user_data["reason"] == "not checked (not cached; nothing is downloaded)"
    assert "not used" in missing.user_rewards["own_reason"] and "rows" not in missing.user_data


def _result(data: dict, rewards: dict) -> ProbeResult:
    return ProbeResult(status="pass", ranks={0: {"finished": True, "data": data, "rewards": rewards}})


def test_the_judge_names_the_function_column_and_row_count():
    spec = ProbeSpec(
        launcher=["python"], user_data={"room": 768, "length_expr": 'len(tok(x["prompt"]).input_ids)'}
    )
    data = {
        "dataset": "d",
        "source": "/x/d.jsonl",
        "used": True,
        "rows_passed": 8,
        "errors": [
            {
                "rule": "DAT004",
                "rows_over": 3,
                "rows_counted": 8,
                "rows": [0, 4, 5],
                "longest_tokens": 2000,
                "max_model_len": 1024,
                "limit_key": "vllm_max_model_length",
            }
        ],
    }
    funcs = {
        "acc": {
            "name": "acc",
            "where": "rewards.py:3",
            "called": 1,
            "shape": "NoneType",
            "keywords": ["completions"],
            "errors": [{"rule": "DAT010"}],
        },
        "boom": {
            "name": "boom",
            "where": "rewards.py:9",
            "called": 1,
            "shape": None,
            "keywords": ["completions"],
            "errors": [
                {
                    "rule": "DAT011",
                    "type": "KeyError",
                    "message": "'x'",
                    "frame": "rewards.py:10 in boom",
                    "innermost": "rewards.py:10 in boom",
                    "traceback": "Traceback ...",
                }
            ],
        },
    }
    result = _result(data, {"used": True, "source": "rewards.acc", "functions": funcs})
    judge_user(spec, result)
    found = {f.rule: f for f in result.findings}
    assert "3 of the first 8 rows" in found["DAT004"].message and "<= 768" in found["DAT004"].fix
    assert "reward function acc (rewards.py:3) returned None" in found["DAT010"].message
    assert "rewards.py:10 in boom" in found["DAT011"].message and "KeyError" in found["DAT011"].message
    assert all(f.severity.value == "error" for f in result.findings)
    assert result.rewards["functions"][0]["called"] == 1 and "DAT014" not in found
    assert (
        result.status == "fail" and "fix boom where it raised (rewards.py:10 in boom)" in found["DAT011"].fix
    )
    assert "traceback" not in result.rewards["functions"][1]["errors"][0]


def test_the_probes_own_prompts_and_reward_are_said_with_the_reason():
    result = _result(
        {"used": False, "reason": "not checked (not cached; nothing is downloaded)"},
        {"used": False, "reason": "importing train.py would run its top level"},
    )
    judge_user(ProbeSpec(launcher=["python"], user_data={"reason": "x"}), result)
    (f,) = result.findings
    assert f.rule == "DAT014" and f.severity.value == "info"
    assert "own prompts (not checked (not cached" in f.message and "own reward" in f.message
    quiet = _result({"used": False, "reason": "no rows"}, {"used": False, "reason": "no rows"})
    judge_user(ProbeSpec(launcher=["python"]), quiet)  # a probe not asked to run the user's
    assert quiet.findings == [] and quiet.data["reason"] == "no rows"


def test_what_the_probe_cannot_do_with_the_rows_is_its_own_reason_never_a_crash(ur):
    info: dict = {}
    assert ur.prepare(_data([{"prompt": "a long text", "solution": "1"}]), object(), False, info) is None
    assert info["used"] is False and info["reason"].startswith(
        "the probe could not prepare the rows: TypeError"
    )


def test_the_summary_says_on_what_the_step_ran():
    from envdoctor.probe.area import _user_text

    result = _result(
        {"used": True, "rows_passed": 12, "dataset": "/data/math"},
        {"used": True, "functions": {"acc": {"name": "acc", "where": "t.py:3", "called": 1, "errors": []}}},
    )
    judge_user(ProbeSpec(launcher=["python"]), result)
    assert _user_text(result) == "; data: 12 rows of /data/math, 1 reward function(s) of the user's (acc)"
    assert _user_text(ProbeResult(status="pass")) == ""


def test_a_reward_that_cannot_import_its_package_says_to_install_it(ur):
    """TRL's accuracy_reward without math_verify: an ImportError inside the reward (DAT011)."""
    pytest.importorskip("trl")
    if importlib.util.find_spec("math_verify") is not None:
        pytest.skip("math_verify is installed: accuracy_reward runs")
    info: dict = {}
    (func,) = ur.rewards({"items": [{"registry": "accuracy_reward"}]}, True, info)
    func(completions=[[{"content": "4"}]], solution=["4"])
    result = _result({"used": True}, info)
    judge_user(ProbeSpec(launcher=["python"]), result)
    (f,) = result.findings
    assert f.rule == "DAT011" and "accuracy_reward" in f.message and "math_verify" in f.fix
    assert "trl/rewards/accuracy_rewards.py:" in f.message


def test_a_hostile_script_is_a_reason_not_a_traceback(tmp_path):
    path = tmp_path / "train.py"
    path.write_text("X = " + " + ".join(["1"] * 50000) + "\nGRPOTrainer(reward_funcs=[f])\ndef f(): ...\n")
    assert "own_reason" in reward_plan.from_script(path)
    path.write_bytes(b"\x00\xff not python")
    assert "could not be parsed" in reward_plan.from_script(path)["own_reason"]


def test_the_users_cached_tokenizer_is_named_for_the_step(tmp_path, monkeypatch):
    """The model's config and tokenizer cached: the probe model carries the user's tokenizer,
    and the worker counts prompts with it (and judges its chat template)."""
    from tests.probe.test_probe_model import QWEN25_05B_FULL, _cache

    monkeypatch.chdir(tmp_path)
    env = _cache(tmp_path, "Qwen/Qwen2.5-0.5B-Instruct", QWEN25_05B_FULL, tokenizer=True)
    monkeypatch.setenv("HF_HUB_CACHE", env["HF_HUB_CACHE"])
    (tmp_path / "d.jsonl").write_text(json.dumps({"prompt": "q", "solution": "1"}) + "\n")
    config = {"dataset_name": str(tmp_path / "d.jsonl"), "model_name_or_path": "Qwen/Qwen2.5-0.5B-Instruct"}
    spec = spec_from_context(_ctx(tmp_path, config, "trl grpo --reward_funcs think_format_reward"))
    assert spec.model.faithful and spec.user_data["user_tokenizer"] == "Qwen/Qwen2.5-0.5B-Instruct"
    assert spec.user_rewards == {"items": [{"registry": "think_format_reward"}], "root": str(tmp_path)}


def test_a_module_run_with_python_m_is_imported_as_its_package_module(ur, tmp_path, monkeypatch):
    pkg = tmp_path / "src" / "proj"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "rewards.py").write_text("def acc(completions, **kw):\n    return [1.0 for _ in completions]\n")
    (pkg / "train.py").write_text(
        "from .rewards import acc\n"
        "if __name__ == '__main__':\n    GRPOTrainer(model='m', reward_funcs=[acc]).train()\n"
    )
    monkeypatch.chdir(tmp_path)
    (tmp_path / "d.jsonl").write_text(json.dumps({"prompt": "q"}) + "\n")
    ctx = _ctx(tmp_path, {"dataset_name": str(tmp_path / "d.jsonl")}, "python -m proj.train")
    rewards = spec_from_context(ctx).user_rewards
    assert rewards["module"] == "proj.train" and rewards["root"] == str((tmp_path / "src").resolve())
    funcs, why = ur.load(rewards)
    for name in ("proj.train", "proj.rewards", "proj"):
        sys.modules.pop(name, None)
    assert why is None and funcs[0][0] == "acc" and funcs[0][1] == "src/proj/rewards.py:1"


def test_a_dataset_in_the_hf_datasets_cache_reaches_the_step(tmp_path, monkeypatch):
    """trl-lib's layout in the datasets cache (Arrow files), read without the datasets library."""
    from tests.checks.test_data_rules import _arrow

    monkeypatch.chdir(tmp_path)
    root = tmp_path / "hf" / "datasets" / "trl-lib___deepmath-103k" / "default" / "0.0.0" / "f00d"
    rows = [{"prompt": [{"role": "user", "content": f"q{i}"}], "solution": str(i)} for i in range(5)]
    _arrow(root / "deepmath-103k-train.arrow", rows)
    ctx = _ctx(
        tmp_path, {"dataset_name": "trl-lib/DeepMath-103K"}, "trl grpo --reward_funcs think_format_reward"
    )
    spec = spec_from_context(ctx)
    assert spec.user_data["rows"] == rows and spec.user_data["source"].endswith("deepmath-103k-train.arrow")
    assert spec.user_rewards["items"] == [{"registry": "think_format_reward"}]


# -- one reader: the probe imports the functions the plan reads the call to get ----------------

_HEAD = "from trl import GRPOTrainer\ndef fmt(completions, **kw):\n    return [1.0]\n"


@pytest.mark.parametrize(
    "body, attrs, why",
    [
        # main() defines its own fmt: the trainer gets that one, not the module's
        (
            "def main():\n    def fmt(completions, **kw):\n        return [0.0]\n"
            "    GRPOTrainer(model='m', reward_funcs=[fmt])\n",
            None,
            "fmt (line 5) is defined inside a function",
        ),
        # a list bound inside main() of module-level functions: importable
        ("def main():\n    funcs = [fmt]\n    GRPOTrainer(model='m', reward_funcs=funcs)\n", ["fmt"], None),
        # the script's own subclass of the trainer
        (
            "class MyTrainer(GRPOTrainer):\n    pass\n"
            "def main():\n    MyTrainer(model='m', reward_funcs=[fmt])\n",
            ["fmt"],
            None,
        ),
        # a name the __main__ block binds is not there when the script is imported
        (
            "if __name__ == '__main__':\n    def fmt2(completions, **kw):\n        return [0.0]\n"
            "    GRPOTrainer(model='m', reward_funcs=[fmt, fmt2])\n",
            None,
            "fmt2 (line 5) is defined inside a function or the __main__ block",
        ),
        # grown under a flag (a GuessTheNumber script: reward_funcs.append(obj) under an option):
        # importing fmt alone would probe a subset of the run's rewards
        (
            "import os\ndef main():\n    rs = [fmt]\n    if os.environ.get('X'):\n"
            "        rs.append(make())\n    GRPOTrainer(model='m', reward_funcs=rs)\n",
            None,
            "extended in a branch or a loop",
        ),
        # bound in a branch: the plan does not say which, nor does the probe
        (
            "import os\ndef acc(completions, **kw):\n    return [0.0]\n"
            "def main():\n    if os.environ.get('A'):\n        r = fmt\n    else:\n        r = acc\n"
            "    GRPOTrainer(model='m', reward_funcs=[r])\n",
            None,
            "in a branch or a loop",
        ),
    ],
)
def test_the_probe_imports_what_the_plans_reader_reads(tmp_path, body, attrs, why):
    from envdoctor.plan.rewards import from_script as read_rewards

    path = tmp_path / "train.py"
    path.write_text(_HEAD + body)
    spec = reward_plan.from_script(path)
    reading = read_rewards(path)
    if attrs is None:
        assert "attrs" not in spec and why in spec["own_reason"]
    else:
        assert spec.get("attrs") == attrs, spec
        # the module attribute the worker takes is the definition the plan reads the call to get
        assert [f.where.rsplit(":", 1)[-1] for f in reading.funcs] == ["2"]
