"""The training-script reader (issue 35 item 1, issue 39 item 4): what a script declares, read
from its syntax tree; never imported, never run; bounded on any input."""

from __future__ import annotations

import os
import time

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from envdoctor.plan import repository_keys as repo_walk
from envdoctor.plan.repository_keys import repository_keys
from envdoctor.plan.script_reader import flag_values, match_option, read_script
from tests.plan.script_shapes import (
    HF_OWN_DATACLASS,
    OPEN_R1_CONFIGS,
    OPEN_R1_GRPO,
    OPENENV,
    TRL_PARSER,
)


def _script(tmp_path, text: str, name: str = "train.py"):
    path = tmp_path / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


@pytest.mark.parametrize("name", sorted(OPENENV))
def test_openenv_examples_declare_their_own_dashed_options(tmp_path, name):
    decl = read_script(_script(tmp_path, OPENENV[name], f"{name}.py"))
    assert decl.readable and decl.argparse and not decl.parses_dataclasses
    assert "model" in decl.flags or "model_id" in decl.flags
    assert decl.closed_options  # argparse alone reads the command line
    [call] = decl.config_calls
    assert call.cls == "GRPOConfig"
    assert decl.keys() == {}  # argparse options are not dataclass keys


def test_wordle_shape_flags_defaults_and_the_config_it_builds(tmp_path):
    decl = read_script(_script(tmp_path, OPENENV["wordle"]))
    url = decl.flags["vllm_server_url"]
    assert url.options == ("--vllm-server-url",) and url.default == "http://localhost:8000"
    assert decl.flags["vllm_mode"].default == "colocate"
    [call] = decl.config_calls
    assert call.values == {
        "use_vllm": True,
        "logging_steps": 1,
        "chat_template_kwargs": {"enable_thinking": False},
    }
    assert call.from_flags["vllm_mode"] == "vllm_mode"
    assert call.from_flags["num_generations"] == "num_generations"
    assert set(call.unknown) == {"output_dir", "vllm_server_base_url"}  # expressions: set, value unknown


def test_sudoku_shape_argument_groups_boolean_options_and_later_attribute_sets(tmp_path):
    decl = read_script(_script(tmp_path, OPENENV["sudoku"]))
    assert decl.flags["per_device_batch_size"].options == ("--per-device-batch-size",)
    gc = decl.flags["gradient_checkpointing"]
    assert gc.options == ("--gradient-checkpointing", "--no-gradient-checkpointing") and gc.switch is True
    assert decl.flags["use_lora"].switch is True and decl.flags["use_lora"].default is False
    [call] = decl.config_calls
    assert call.from_flags["per_device_train_batch_size"] == "per_device_batch_size"
    assert call.from_flags["gradient_checkpointing"] == "gradient_checkpointing"  # cfg.x = args.x
    assert "vllm_gpu_memory_utilization" in call.unknown  # `args.x or 0.2`
    values, unmatched = flag_values(
        decl, ["--per-device-batch-size", "2", "--no-gradient-checkpointing", "--use-lora", "--bogus=1"]
    )
    assert values == {"per_device_batch_size": 2, "gradient_checkpointing": False, "use_lora": True}
    assert unmatched == {"bogus": "--bogus"}


def test_both_spellings_dest_and_argparse_abbreviations(tmp_path):
    decl = read_script(
        _script(
            tmp_path,
            "import argparse\n"
            "p = argparse.ArgumentParser()\n"
            "p.add_argument('--vllm_server_url', '--vllm-server-url')\n"
            "p.add_argument('-n', '--num-generations', dest='gens', type=int)\n"
            "p.add_argument('--num-epochs', type=int)\n"
            "p.add_argument('data')\n",  # a positional: not an option
        )
    )
    assert set(decl.flags) == {"vllm_server_url", "gens", "num_epochs"}
    assert match_option(decl, "--vllm_server_url").dest == "vllm_server_url"
    assert match_option(decl, "--vllm-server-url").dest == "vllm_server_url"
    assert match_option(decl, "--num-gen").dest == "gens"  # a unique prefix, as argparse takes it
    assert match_option(decl, "--num") is None  # ambiguous: argparse refuses it
    assert match_option(decl, "--num_generations") is None  # `_` for `-`: not what it declares


def test_abbreviations_off_when_the_parser_says_so(tmp_path):
    decl = read_script(
        _script(
            tmp_path,
            "import argparse\np = argparse.ArgumentParser(allow_abbrev=False)\n"
            "p.add_argument('--num-epochs')\n",
        )
    )
    assert match_option(decl, "--num-ep") is None and match_option(decl, "--num-epochs") is not None


def test_parse_known_args_and_computed_names_leave_the_options_open(tmp_path):
    lenient = read_script(
        _script(
            tmp_path,
            "import argparse\np = argparse.ArgumentParser()\np.add_argument('--a')\np.parse_known_args()\n",
        )
    )
    dynamic = read_script(
        _script(
            tmp_path,
            "import argparse\np = argparse.ArgumentParser()\nfor n in NAMES:\n    p.add_argument(*n)\n",
            "dyn.py",
        )
    )
    assert lenient.lenient and lenient.closed_options == ()
    assert dynamic.dynamic_flags and dynamic.closed_options == ()


@pytest.mark.parametrize(
    "text",
    [
        "import argparse\nfrom common import add_args\np = argparse.ArgumentParser()\nadd_args(p)\n",
        "import argparse, common\np = argparse.ArgumentParser(parents=[common.base()])\n",
        "import argparse, common\np = argparse.ArgumentParser()\n"
        "g = p.add_argument_group('x')\ncommon.fill(x=g)\n",
        "from common import make_parser\np = make_parser()\np.add_argument('--a')\n",
        "import argparse, sys\np = argparse.ArgumentParser()\np.add_argument('--a')\n"
        "p.parse_args(sys.argv[2:])\n",
    ],
    ids=["handed-to-an-import", "parents", "group-handed-away", "made-elsewhere", "own-argv"],
)
def test_a_parser_filled_elsewhere_leaves_the_options_open(tmp_path, text):
    decl = read_script(_script(tmp_path, text))
    assert decl.closed_options == ()


def test_a_parser_filled_by_the_scripts_own_function_stays_closed(tmp_path):
    decl = read_script(
        _script(
            tmp_path,
            "import argparse\ndef fill(p):\n    p.add_argument('--b')\n"
            "p = argparse.ArgumentParser()\nfill(p)\nprint(p)\np.parse_args()\n",
        )
    )
    assert not decl.dynamic_flags and decl.closed_options == ("--b",)


def test_hf_argument_parser_with_the_scripts_own_dataclass(tmp_path):
    decl = read_script(_script(tmp_path, HF_OWN_DATACLASS))
    assert decl.trl_classes == ("GRPOConfig",)
    assert set(decl.dataclasses) == {"RewardArgs"}
    assert decl.dataclasses["RewardArgs"].fields == ("reward_scale", "judge_model")  # ClassVar is no field
    assert set(decl.keys()) == {"reward_scale", "judge_model"}
    assert "RewardArgs" in decl.keys()["reward_scale"]
    assert decl.closed_options == ()  # dataclasses read the command line


def test_trl_parser_with_a_subclass_of_trls_script_arguments(tmp_path):
    decl = read_script(_script(tmp_path, TRL_PARSER))
    assert set(decl.trl_classes) == {"ScriptArguments", "GRPOConfig", "ModelConfig"}  # trl.GRPOConfig too
    assert set(decl.keys()) == {"loss_weighting", "num_iterations"}


def test_open_r1_shape_follows_the_package_import(tmp_path):
    _script(tmp_path, OPEN_R1_CONFIGS, "src/open_r1/configs.py")
    _script(tmp_path, "", "src/open_r1/__init__.py")
    (tmp_path / "setup.py").write_text("")
    decl = read_script(_script(tmp_path, OPEN_R1_GRPO, "src/open_r1/grpo.py"))
    assert decl.readable, decl.problem
    assert set(decl.config_subclasses) == {"GRPOConfig"}
    assert set(decl.dataclasses) == {"GRPOScriptArguments"}
    keys = decl.keys()
    assert {
        "hub_model_revision",
        "system_prompt",
        "reward_funcs",
        "cosine_max_len",
        "dataset_mixture",
    } <= set(keys)
    assert "GRPOConfig subclass GRPOConfig" in keys["hub_model_revision"]
    assert "ModelConfig" in decl.trl_classes and "ScriptArguments" in decl.trl_classes
    assert len(decl.files) == 2  # the script and the configs module, nothing else


def test_relative_imports_and_a_subclass_of_a_subclass(tmp_path):
    _script(tmp_path, "import trl\nclass Base(trl.GRPOConfig):\n    a_key: int = 1\n", "pkg/base.py")
    _script(tmp_path, "", "pkg/__init__.py")
    decl = read_script(
        _script(
            tmp_path,
            "from .base import Base\n"
            "class Mine(Base):\n    b_key: str = 'x'\n"
            "cfg = Mine(a_key=3, b_key='y', num_generations=4, learning_rate=lr)\n",
            "pkg/train.py",
        )
    )
    assert decl.config_subclasses["Mine"].fields == ("b_key", "a_key")
    [call] = decl.config_calls
    assert call.cls == "Mine" and call.values == {"a_key": 3, "b_key": "y", "num_generations": 4}
    assert call.unknown == ("learning_rate",)


def test_a_class_named_like_trls_is_the_scripts_own_when_defined_there(tmp_path):
    decl = read_script(
        _script(
            tmp_path,
            "from trl import TrlParser\nclass ModelConfig:\n    x: int = 1\nTrlParser((ModelConfig,))\n",
        )
    )
    assert set(decl.dataclasses) == {"ModelConfig"} and decl.trl_classes == ()


def test_config_spread_is_marked(tmp_path):
    decl = read_script(_script(tmp_path, "from trl import GRPOConfig\nGRPOConfig(**base, beta=0.0)\n"))
    [call] = decl.config_calls
    assert call.spread and call.values == {"beta": 0.0}


@pytest.mark.parametrize(
    "text, values, spread",
    [
        (
            'cfg = {"num_generations": 4, "vllm_device": "cuda:1"}\nGRPOConfig(**cfg)\n',
            {"num_generations": 4, "vllm_device": "cuda:1"},
            False,
        ),
        (
            "cfg = dict(max_prompt_length=512)\nGRPOConfig(**cfg, beta=0.0)\n",
            {"max_prompt_length": 512, "beta": 0.0},
            False,
        ),
        ('GRPOConfig(**{"use_vllm": True})\n', {"use_vllm": True}, False),
        # changed in place, bound twice, computed keys: the keys are not all known
        ('cfg = {"a": 1}\ncfg["b"] = 2\nGRPOConfig(**cfg)\n', {}, True),
        ('cfg = {"a": 1}\ncfg.update(b=2)\nGRPOConfig(**cfg)\n', {}, True),
        ('cfg = {"a": 1}\ncfg = {"b": 2}\nGRPOConfig(**cfg)\n', {}, True),
        ('cfg = {k: 1 for k in "ab"}\nGRPOConfig(**cfg)\n', {}, True),
        ('cfg = {**base, "a": 1}\nGRPOConfig(**cfg)\n', {}, True),
    ],
)
def test_a_spread_of_a_mapping_the_file_spells_out_is_read(tmp_path, text, values, spread):
    decl = read_script(_script(tmp_path, "from trl import GRPOConfig\n" + text))
    [call] = decl.config_calls
    assert (call.values, call.spread) == (values, spread)


def test_unrelated_calls_are_not_config(tmp_path):
    decl = read_script(_script(tmp_path, "from x import GRPOConfig\nGRPOConfig(a=1)\nDict(b=2)\n"))
    assert decl.config_calls == []  # a GRPOConfig from elsewhere is not TRL's


@pytest.mark.parametrize(
    ("make", "said"),
    [
        (lambda p: p.write_text("def broken(:\n"), "is not valid Python"),
        (lambda p: p.write_bytes(b"\x7fELF\x00\x01\x02" * 100), "binary"),
        (lambda p: p.write_bytes(b"x = '\xff\xfe'\n"), "is not"),
        (lambda p: None, "no such file"),
        (lambda p: p.mkdir(), "is a directory"),
        (lambda p: (p.parent / "loop").symlink_to(p) or p.symlink_to(p.parent / "loop"), "cannot be read"),
        (lambda p: os.mkfifo(p), "is not a regular file"),
        (lambda p: p.write_text("(" * 200_000), "is not"),
    ],
    ids=["syntax", "binary", "not-utf8", "missing", "directory", "symlink-loop", "fifo", "nested"],
)
def test_unreadable_scripts_say_why_never_raise(tmp_path, make, said):
    path = tmp_path / "train.py"
    make(path)
    decl = read_script(path)
    assert not decl.readable and said in decl.problem and str(path) in decl.problem
    assert decl.flags == {} and decl.config_calls == []


def test_a_huge_script_is_not_read(tmp_path):
    path = tmp_path / "train.py"
    with path.open("wb") as fh:
        fh.truncate(50 * 1024 * 1024)  # 50 MB, sparse
    start = time.monotonic()
    decl = read_script(path)
    assert "50.0 MiB, over the 256 KiB envdoctor reads" in decl.problem
    assert time.monotonic() - start < 5  # not read at all (a bound, not a benchmark)


def test_repository_keys_subclasses_and_parsed_dataclasses_only(tmp_path):
    _script(tmp_path, OPEN_R1_CONFIGS, "src/open_r1/configs.py")
    _script(tmp_path, OPEN_R1_GRPO, "src/open_r1/grpo.py")
    _script(tmp_path, TRL_PARSER, "scripts/other.py")
    # a dataclass no GRPO parser takes, and an SFT script's: not the GRPO run's keys
    _script(
        tmp_path,
        "from dataclasses import dataclass\n@dataclass\nclass Eval:\n    max_prompt_length: int = 1\n",
        "e.py",
    )
    _script(
        tmp_path,
        "from trl import TrlParser, SFTConfig\nfrom e import Eval\nTrlParser((Eval, SFTConfig))\n",
        "sft.py",
    )
    # skipped folders: a virtualenv, node_modules, .git
    for folder in (".venv/lib", "node_modules/x", ".git/hooks", "myenv"):
        _script(
            tmp_path,
            "import trl\nclass GRPOConfig(trl.GRPOConfig):\n    hidden_key: int = 1\n",
            f"{folder}/c.py",
        )
    (tmp_path / "myenv/pyvenv.cfg").write_text("home = /usr\n")
    found = repository_keys(tmp_path)
    assert {
        "hub_model_revision",
        "system_prompt",
        "reward_funcs",
        "cosine_max_len",
        "dataset_mixture",
    } <= set(found.keys)
    assert {"loss_weighting", "num_iterations"} <= set(found.keys)
    assert "max_prompt_length" not in found.keys and "hidden_key" not in found.keys
    assert found.truncated is None


def test_repository_keys_take_the_definition_the_parser_is_handed(tmp_path):
    """Three scripts each define their own ScriptArguments; only the GRPO one's are GRPO keys."""
    dc = "from dataclasses import dataclass\n@dataclass\nclass ScriptArguments:\n"
    _script(tmp_path, dc + "    grpo_key: int = 1\nTrlParser((ScriptArguments, GRPOConfig))\n", "grpo.py")
    _script(tmp_path, dc + "    dpo_key: int = 1\nTrlParser((ScriptArguments, DPOConfig))\n", "dpo.py")
    _script(
        tmp_path,
        "from dataclasses import dataclass\n@dataclass\nclass Args:\n    imp_key: int = 1\n",
        "a/b.py",
    )
    _script(tmp_path, "from a.b import Args\nTrlParser((Args, GRPOConfig))\n", "other.py")
    _script(tmp_path, "class Args:\n    unrelated_key: int = 1\n", "c.py")
    keys = repository_keys(tmp_path).keys
    assert set(keys) == {"grpo_key", "imp_key"}


def test_repository_walk_is_bounded(tmp_path, monkeypatch):
    for i in range(30):
        _script(tmp_path, f"import trl\nclass C{i}(trl.GRPOConfig):\n    key_{i}: int = 1\n", f"m{i:02d}.py")
    monkeypatch.setattr(repo_walk, "REPO_MAX_PARSED", 10)
    found = repository_keys(tmp_path)
    assert found.files_parsed == 10 and found.truncated and len(found.keys) == 10


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    body=st.one_of(
        st.binary(max_size=400),
        st.text(max_size=400),
        st.lists(
            st.sampled_from(
                [
                    "import argparse\n",
                    "from trl import GRPOConfig, TrlParser\n",
                    "p = argparse.ArgumentParser()\n",
                    "p.add_argument('--x', dest=1)\n",
                    "p.add_argument(*a, **k)\n",
                    "p.add_argument('--y', action=A, default=[1, {2: 3}])\n",
                    "TrlParser((A, B.C, D().e))\n",
                    "GRPOConfig(**x, a=b.c, d=(1, 2), e={1, 2}, f=1j)\n",
                    "class A(A, B.C):\n    x: 'int' = 1\n",
                    "from . import z\nfrom ..y import w as A\n",
                    "c = GRPOConfig()\nc.k = v\nc.k = 1\n",
                ]
            ),
            max_size=12,
        ).map("".join),
    ),
    args=st.lists(st.sampled_from(["--x", "--x=1", "--no-x", "--", "-y", "v", "--y", "--z=="]), max_size=8),
)
def test_any_input_is_read_or_refused_never_raises(tmp_path, body, args):
    path = tmp_path / "fuzz.py"
    (path.write_bytes if isinstance(body, bytes) else path.write_text)(body)
    decl = read_script(path)
    assert decl.readable or decl.problem
    flag_values(decl, args)
    decl.keys()


@pytest.mark.parametrize(
    ("text", "cli"),
    [
        ("import click\n", "click"),
        ("from typer import Typer\n", "typer"),
        ("import fire as f\n", "fire"),
        ("from absl import flags\n", "absl"),
        ("import sys\nx = sys.argv[1]\n", "sys.argv"),
        ("from .click import option\n", None),  # the repository's own module, not the library
        ("import clickhouse\nimport sys\nsys.exit(0)\n", None),
    ],
)
def test_a_command_line_library_besides_argparse_is_named(tmp_path, text, cli):
    assert read_script(_script(tmp_path, text)).other_cli == cli


@pytest.mark.parametrize(
    ("call", "by_name"),
    [
        ('GRPOTrainer(model="Qwen/Qwen2-0.5B-Instruct", args=a)', True),
        ("GRPOTrainer(model=model_args.model_name_or_path, args=a)", True),
        ("GRPOTrainer(args.model_id, args=a)", True),
        ('GRPOTrainer(model=AutoModelForCausalLM.from_pretrained("m"), args=a)', False),
        ("GRPOTrainer(model=model, args=a)", None),  # a name bound elsewhere: not known
        ("GRPOTrainer(model=args.model, args=a)", None),  # no flag of that dest
        (  # TRL's OpenEnv examples: --model with a string default
            "import argparse\np = argparse.ArgumentParser()\n"
            "p.add_argument('--model', default='Qwen/Qwen3-1.7B')\n"
            "args = p.parse_args()\nGRPOTrainer(model=args.model, args=a)",
            True,
        ),
        ('GRPOTrainer(model="m", args=a)\nGRPOTrainer(model=model, args=a)', None),
    ],
)
def test_whether_grpo_trainer_gets_the_model_by_name(tmp_path, call, by_name):
    decl = read_script(_script(tmp_path, f"from trl import GRPOTrainer\n{call}\n"))
    assert decl.model_by_name is by_name


def test_unsloth_loader_calls_leaving_vllm_off_are_read(tmp_path):
    """``vllm_in_process_off``: every Unsloth loader call leaves fast_inference off (False, or
    left out: the loaders' default); a ``**mapping`` it spreads may pass it: not read."""
    from envdoctor.plan.script_reader import read_script

    head = "from unsloth import FastLanguageModel\nfrom transformers import AutoModel\n"
    cases = {
        'FastLanguageModel.from_pretrained("m")\nAutoModel.from_pretrained("x")\n': (["3"], [], []),
        'FastLanguageModel.from_pretrained("m", fast_inference=False)\n': ([], [False], []),
        'FastLanguageModel.from_pretrained("m", **kw)\n': ([], [], ["3"]),
    }
    for body, (defaults, values, spreads) in cases.items():
        path = tmp_path / "train.py"
        path.write_text(head + body)
        decl = read_script(str(path))
        assert [w.rsplit(":", 1)[1] for w in decl.in_process_defaults] == defaults, body
        assert [v for _, v, _ in decl.in_process_calls] == values, body
        assert [w.rsplit(":", 1)[1] for w in decl.in_process_spreads] == spreads, body
