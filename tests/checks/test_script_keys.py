"""The training script the launch line runs is read (issue 35 item 1): its own options and
dataclass keys are not GRPOConfig typos (CFG004, CFG001), what its GRPOConfig(...) builds is
config; the hook reads the repository's own dataclasses and GRPOConfig subclasses (issue 39
item 4)."""

from __future__ import annotations

import pytest

from envdoctor.plan.build import build_plan
from envdoctor.plan.interface import VALUE_UNKNOWN
from tests.conftest import findings, run_cli, snapshot
from tests.plan.script_shapes import (
    HF_OWN_DATACLASS,
    OPEN_R1_CONFIGS,
    OPEN_R1_GRPO,
    OPEN_R1_RECIPE,
    OPENENV,
    TRL_PARSER,
)

KEY_RULES = ("CFG001", "CFG004", "DCL001")
TRL_016 = {"trl": "0.16.1", "transformers": "4.51.3", "torch": "2.6.0+cu124", "accelerate": "1.6.0"}


@pytest.fixture
def repo(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)

    def write(path: str, text: str) -> str:
        full = tmp_path / path
        full.parent.mkdir(parents=True, exist_ok=True)
        full.write_text(text)
        return path

    return write


def _keys(launch: str, packages: dict | None = None) -> list:
    return [f for f in findings(snapshot(2, packages=packages), launch=launch) if f.rule in KEY_RULES]


#: each OpenEnv example with options from its own docstring's launch lines
OPENENV_LAUNCHES = {
    "wordle": "--vllm-mode server --vllm-server-url http://localhost:8000",
    "catch": "--vllm-mode server --vllm-server-url http://localhost:8000 --env-port 8001",
    "sudoku": "--vllm-mode server --vllm-server-url http://localhost:8000 --per-device-batch-size 1 "
    "--no-gradient-checkpointing",
    "echo": "--env-host https://example.invalid",
}


@pytest.mark.parametrize("name", sorted(OPENENV))
def test_trls_openenv_examples_own_options_are_not_typos(repo, name):
    script = repo(f"examples/scripts/openenv/{name}.py", OPENENV[name])
    assert _keys(f"python {script} {OPENENV_LAUNCHES[name]}") == []
    launch = f"CUDA_VISIBLE_DEVICES=0 python {script} {OPENENV_LAUNCHES[name]}"
    config = [f for f in findings(snapshot(2), launch=launch) if f.rule.startswith("CFG")]
    assert config == []  # `top_p=args.top_p` (default None) in code: no parser reads it


def test_a_none_from_the_scripts_code_is_not_judged_as_parser_input(repo):
    script = repo("sudoku.py", OPENENV["sudoku"])
    plan = build_plan(launch=f"python {script}", live=False)
    assert plan.config["top_p"] is None and plan.config_origin["top_p"].endswith("the default of --top-p")
    assert [
        f for f in findings(snapshot(1), config={"top_p": None}) if f.rule == "CFG005"
    ]  # a file's null is


def test_wordle_vllm_server_url_gave_cfg004_before(repo):
    """The issue's case: `--vllm-server-url` read as the GRPOConfig key `vllm_server_url`."""
    script = repo("examples/scripts/openenv/wordle.py", OPENENV["wordle"])
    assert _keys(f"python {script} --vllm-server-url http://localhost:8000") == []
    assert _keys(f"accelerate launch --num_processes 2 {script} --vllm-server-url http://x:8000") == []


def test_the_config_the_script_builds_is_judged(repo):
    script = repo("wordle.py", OPENENV["wordle"])
    plan = build_plan(launch=f"python {script} --vllm-mode server --num-gen 3", live=False)
    assert plan.config["use_vllm"] is True and plan.config["logging_steps"] == 1
    assert plan.config["vllm_mode"] == "server" and plan.config["num_generations"] == 3
    assert (
        plan.config_origin["vllm_mode"]
        == "GRPOConfig(...) in wordle.py:25, from --vllm-mode on the command line"
    )
    assert plan.config_origin["learning_rate"].endswith("the default of --learning-rate")
    assert plan.config["learning_rate"] == 1e-6
    # an expression envdoctor does not evaluate: the key is set, its value unknown
    assert "vllm_server_base_url" not in plan.config
    assert plan.config_origin["vllm_server_base_url"].endswith(VALUE_UNKNOWN)
    assert "vllm_server_url" not in plan.config  # the script's option, not a config key
    default = build_plan(launch=f"python {script}", live=False)
    assert default.config["vllm_mode"] == "colocate"  # the script's default, not TRL's


def test_a_batch_from_the_scripts_own_option_reaches_the_batch_rule(repo):
    script = repo("sudoku.py", OPENENV["sudoku"])
    plan = build_plan(launch=f"python {script} --per-device-batch-size 3 --num-generations 4", live=False)
    assert plan.config["per_device_train_batch_size"] == 3 and plan.config["num_generations"] == 4
    launch = f"python {script} --per-device-batch-size 3 --gradient-accumulation-steps 1"
    found = [f for f in findings(snapshot(2), launch=launch) if f.rule == "CFG002"]
    assert found and "per_device_train_batch_size (3)" in found[0].message  # 3 × 1 × 1 by 8


def test_a_typo_of_the_scripts_own_option_is_named(repo):
    script = repo("wordle.py", OPENENV["wordle"])
    [typo] = _keys(f"python {script} --num_generation 8")
    assert typo.rule == "CFG004" and typo.severity.value == "warning"
    assert "`--num_generation` (command line) is not an option of wordle.py" in typo.message
    assert "did you mean `--num-generations`?" in typo.message and typo.fix == "write `--num-generations`"
    [spelt] = _keys(f"python {script} --vllm_server_url http://x:8000")
    assert "did you mean `--vllm-server-url`?" in spelt.message  # argparse matches options as written
    assert typo.remedy is not None and typo.remedy.launch == (f"python {script} --num-generations 8",)
    server = "trl vllm-serve --model m"
    [both] = _keys(f"{server}\nCUDA_VISIBLE_DEVICES=1 python {script} --num_generation=8")
    assert both.remedy.launch == (server, f"CUDA_VISIBLE_DEVICES=1 python {script} --num-generations=8")


def test_a_typo_in_a_dataclass_script_still_gets_cfg004(repo):
    script = repo("train.py", HF_OWN_DATACLASS)
    [typo] = _keys(f"python {script} --num_generation 8 --reward_scale 2.0 --judge_model m")
    assert typo.rule == "CFG004" and "did you mean `num_generations`?" in typo.message


def test_trl_parser_scripts_own_dataclass_keys(repo):
    script = repo("train.py", TRL_PARSER)
    assert _keys(f"accelerate launch {script} --loss_weighting token --dataset_name x") == []
    # TRL 0.14 has no num_iterations; the script's own dataclass declares it: not CFG001's
    assert _keys(f"python {script} --num_iterations 2", packages={**TRL_016, "trl": "0.14.0"}) == []


def test_open_r1_recipe_keys_of_its_grpo_config_subclass(repo):
    repo("src/open_r1/__init__.py", "")
    repo("src/open_r1/configs.py", OPEN_R1_CONFIGS)
    repo("setup.py", "")
    recipe = repo("recipes/grpo.yaml", OPEN_R1_RECIPE)
    script = repo("src/open_r1/grpo.py", OPEN_R1_GRPO)
    assert _keys(f"accelerate launch {script} --config {recipe}", packages=TRL_016) == []
    # without the script envdoctor cannot tell: a possible typo, said at info as not checked
    without = _keys(f"accelerate launch src/open_r1/missing.py --config {recipe}", packages=TRL_016)
    assert any("did you mean `model_revision`" in f.message for f in without)
    assert all(f.severity.value == "info" for f in without), without


def test_a_close_key_is_not_checked_while_the_script_that_may_declare_it_is_absent(repo):
    """Issue 35 (held-out open-r1 Qwen2.5-Math-7B recipe): `dataset_configs` is open-r1's own
    ScriptArguments field, close to TRL's `dataset_config`; the setup's folder lacks grpo.py. A
    typo is not proved while the script is unread: info that says not checked, never a warning.
    With the script read (and not declaring it), or a config of GRPO keys alone, it stays one."""
    recipe = repo("recipe.yaml", "model_name_or_path: m\ndataset_name: d\ndataset_configs: [train]\n")
    launch = f"accelerate launch --num_processes 2 src/open_r1/grpo.py --config {recipe}"
    [key] = _keys(launch, packages=TRL_016)
    assert key.severity.value == "info" and "not checked" in key.message
    assert "grpo.py is not here" in key.message
    assert key.remedy is None  # renaming what may be the script's own key is never applied
    config = {"model_name_or_path": "m", "dataset_configs": ["train"]}
    [key] = [f for f in findings(snapshot(2, packages=TRL_016), config=config) if f.rule == "CFG004"]
    assert key.severity.value == "info" and "model_name_or_path" in key.message
    config = {"num_generation": 8, "learning_rate": 1e-6}  # GRPO keys alone: a typo
    [key] = [f for f in findings(snapshot(2, packages=TRL_016), config=config) if f.rule == "CFG004"]
    assert key.severity.value == "warning" and "did you mean `num_generations`?" in key.message
    script = repo("src/open_r1/grpo.py", TRL_PARSER)
    # the script read: a list is no misspelling of TRL's `dataset_config` (a string; the rename
    # would hand load_dataset a list): the alignment-handbook key is listed at info
    [key] = _keys(f"accelerate launch --num_processes 2 {script} --config {recipe}", packages=TRL_016)
    assert key.severity.value == "info" and key.remedy is None
    # ... while a string there is the misspelling, with its rename
    recipe = repo("recipe.yaml", "model_name_or_path: m\ndataset_name: d\ndataset_configs: train\n")
    [key] = _keys(f"accelerate launch --num_processes 2 {script} --config {recipe}", packages=TRL_016)
    assert key.severity.value == "warning" and key.remedy is not None


@pytest.mark.parametrize(
    ("text", "said"),
    [
        ("def broken(:\n", "train.py is not valid Python"),
        (b"\x00\x01binary" * 64, "train.py is not Python text (binary"),
        (None, "train.py is not here"),
    ],
    ids=["syntax-error", "binary", "missing"],
)
def test_an_unreadable_script_keeps_unknown_keys_at_info_and_says_why(repo, tmp_path, text, said):
    if isinstance(text, bytes):
        (tmp_path / "train.py").write_bytes(text)
    elif text is not None:
        repo("train.py", text)
    [own] = _keys("python train.py --my_custom_flag 3")
    assert own.severity.value == "info" and said in own.message


def test_a_huge_script_is_said_and_the_check_stays_bounded(repo, tmp_path):
    with (tmp_path / "train.py").open("wb") as fh:
        fh.truncate(50 * 1024 * 1024)
    [own] = _keys("python train.py --my_custom_flag 3")
    assert own.severity.value == "info" and "over the 256 KiB envdoctor reads" in own.message


def test_a_literal_no_rule_can_judge_is_kept_as_a_key_only(repo):
    script = repo("t.py", "from trl import GRPOConfig\nGRPOConfig(vllm_server_port=99999999, beta=0.0)\n")
    plan = build_plan(launch=f"python {script}", live=False)  # no exit 2 for the script's code
    assert plan.config == {"beta": 0.0}
    assert plan.config_origin["vllm_server_port"].endswith(VALUE_UNKNOWN)


def test_cli_check_wordle_launch_has_no_cfg004(repo, tmp_path):
    script = repo("examples/scripts/openenv/wordle.py", OPENENV["wordle"])
    out = run_cli(
        "check",
        "--no-network",
        "--",
        "python",
        script,
        "--vllm-server-url",
        "http://localhost:8000",
        cwd=tmp_path,
    )
    assert "Traceback" not in out.stderr and "CFG004" not in out.stdout, out.stdout + out.stderr
    assert "GRPO config (GRPOConfig(...) in examples/scripts/openenv/wordle.py:25" in out.stdout


def test_hook_repository_grpo_config_subclass_key_is_not_a_typo(tmp_path):
    (tmp_path / "src/pkg").mkdir(parents=True)
    (tmp_path / "src/pkg/configs.py").write_text(OPEN_R1_CONFIGS)
    (tmp_path / "src/pkg/grpo.py").write_text(OPEN_R1_GRPO.replace("open_r1", "pkg"))
    (tmp_path / "recipes").mkdir()
    (tmp_path / "recipes/grpo.yaml").write_text(OPEN_R1_RECIPE)
    (tmp_path / "requirements.txt").write_text("trl==1.16.0\n")
    out = run_cli(
        "hook", "recipes/grpo.yaml", "--assume", "trl==1.16.0", "--ignore", "PKG", "-v", cwd=tmp_path
    )
    assert "CFG004" not in out.stdout, out.stdout
    assert "Traceback" not in out.stderr
    (tmp_path / "src/pkg/configs.py").unlink()  # without the subclass the key is judged
    (tmp_path / "src/pkg/grpo.py").unlink()
    out = run_cli("hook", "recipes/grpo.yaml", "--assume", "trl==1.16.0", "--ignore", "PKG", cwd=tmp_path)
    assert "hub_model_revision" in out.stdout and "CFG004" in out.stdout


def test_a_trl_class_the_script_does_not_parse_refuses_its_keys(repo):
    """The script hands HfArgumentParser (RewardArgs, GRPOConfig) only: ModelConfig's
    `--model_name_or_path` is left over, and HfArgumentParser refuses leftovers."""
    script = repo("train.py", HF_OWN_DATACLASS)
    [left] = _keys(f"python {script} --model_name_or_path Qwen/Qwen2.5-0.5B --reward_scale 2")
    assert left.rule == "CFG004" and left.severity.value == "warning"
    assert "`model_name_or_path` (command line) is a field of TRL's ModelConfig" in left.message
    assert "TRL's classes it parses: GRPOConfig" in left.message and "the parser refuses it" in left.message
    # TRL's own parse of (ScriptArguments subclass, GRPOConfig, ModelConfig) takes it
    other = repo("other.py", TRL_PARSER)
    assert _keys(f"python {other} --model_name_or_path Qwen/Qwen2.5-0.5B --dataset_name x") == []


def test_a_parsed_class_envdoctor_cannot_read_leaves_the_keys_open(repo):
    script = repo(
        "train.py",
        "from dataclasses import dataclass\nfrom transformers import HfArgumentParser\n"
        "from mylib.args import BaseArgs\nfrom trl import GRPOConfig\n"
        "@dataclass\nclass Args(BaseArgs):\n    a: int = 1\n"
        "HfArgumentParser((Args, GRPOConfig)).parse_args_into_dataclasses()\n",
    )
    plan = build_plan(launch=f"python {script}", live=False)
    assert plan.script is not None and plan.script.parses is None  # BaseArgs: fields unknown
    assert _keys(f"python {script} --model_name_or_path m --a 2") == []
    [own] = _keys(f"python {script} --b_key 1")
    assert own.severity.value == "info"
    assert "train.py parses classes envdoctor could not read: BaseArgs (a base of Args)" in own.message
    lenient = repo("lenient.py", HF_OWN_DATACLASS.replace("()\n", "(return_remaining_strings=True)\n"))
    assert _keys(f"python {lenient} --model_name_or_path m") == []


#: a script whose command line another library reads (the shapes of click / typer / fire /
#: tyro scripts; sys.argv read by hand): it builds GRPOConfig in code from its own options
OTHER_CLI_SCRIPTS = {
    "click": (
        "import click\nfrom trl import GRPOConfig\n\n@click.command()\n"
        "@click.option('--vllm-server-url')\n@click.option('--per-device-batch-size', type=int)\n"
        "def main(vllm_server_url, per_device_batch_size):\n"
        "    GRPOConfig(output_dir='o', per_device_train_batch_size=per_device_batch_size)\n"
    ),
    "typer": (
        "import typer\nfrom trl import GRPOConfig\n\n"
        "def main(vllm_server_url: str = 'x', per_device_batch_size: int = 4):\n"
        "    GRPOConfig(output_dir='o', per_device_train_batch_size=per_device_batch_size)\n\n"
        "typer.run(main)\n"
    ),
    "fire": (
        "from fire import Fire\nfrom trl import GRPOConfig\n\n"
        "def main(vllm_server_url='x', per_device_batch_size=4):\n"
        "    GRPOConfig(output_dir='o', per_device_train_batch_size=per_device_batch_size)\n\nFire(main)\n"
    ),
    "tyro": (
        "from dataclasses import dataclass\nimport tyro\nfrom trl import GRPOConfig\n\n@dataclass\n"
        "class Args:\n    vllm_server_url: str = 'x'\n    per_device_batch_size: int = 4\n\n"
        "a = tyro.cli(Args)\n"
        "GRPOConfig(output_dir='o', per_device_train_batch_size=a.per_device_batch_size)\n"
    ),
    "sys.argv": (
        "import sys\nfrom trl import GRPOConfig\n\nopts = dict(zip(sys.argv[1::2], sys.argv[2::2]))\n"
        "GRPOConfig(output_dir='o', per_device_train_batch_size=int(opts['--per-device-batch-size']))\n"
    ),
}


@pytest.mark.parametrize("cli", sorted(OTHER_CLI_SCRIPTS))
def test_options_another_cli_library_reads_are_the_scripts_not_grpo_typos(repo, cli):
    """click / typer / fire / tyro read the command line, not TRL's parser: `--vllm-server-url`
    is the script's option (CFG004 warned "not a field of GRPOConfig … did you mean
    `vllm_server_base_url`?" before), and it is not config either."""
    script = repo("train.py", OTHER_CLI_SCRIPTS[cli])
    launch = f"python {script} --vllm-server-url http://localhost:8000 --per-device-batch-size 4"
    assert _keys(launch) == []
    plan = build_plan(launch=launch, live=False)
    assert "vllm_server_url" not in plan.config and "per_device_batch_size" not in plan.config_origin
    assert cli in plan.script_keys["vllm_server_url"]


def test_a_script_with_a_dataclass_parser_keeps_judging_its_command_line(repo):
    """Importing click beside TrlParser changes nothing: TRL's parser reads the command line."""
    script = repo("train.py", "import click\n" + TRL_PARSER)
    [typo] = _keys(f"python {script} --num_generation 8")
    assert typo.rule == "CFG004" and "did you mean `num_generations`?" in typo.message


def test_trl_cli_launcher_options_are_not_grpo_typos(repo):
    """`trl grpo --accelerate_config zero2` (TRL's docs): CFG004 said "`accelerate_config` is
    not a field of GRPOConfig … did you mean `accelerator_config`?" (and the name could not be
    read as a file: exit 2)."""
    config = repo("grpo_config.yaml", "use_vllm: true\nvllm_mode: colocate\naccelerate_config: zero3\n")
    for launch in (f"trl grpo --config {config} --accelerate_config zero2", f"trl grpo --config {config}"):
        found = [f for f in findings(snapshot(8), launch=launch) if f.severity.value != "info"]
        assert found == [], launch


@pytest.mark.parametrize(
    ("trl", "key", "value"),
    [("0.29.1", "max_prompt_length", "512"), ("0.18.2", "vllm_device", "'cuda:1'")],
)
def test_a_removed_key_in_the_scripts_grpo_config_call_raises_typeerror(repo, trl, key, value):
    """TRL's own paper_index.md at 0.29-1.9 shows `GRPOConfig(max_prompt_length=…)`: the call
    raises TypeError; the message said TRL's parser refuses it ("Unknown arguments from config
    file") and, before 0.19, that the parser drops it and the key is dead (a warning)."""
    script = repo(
        "train.py", f"from trl import GRPOConfig\nargs = GRPOConfig(output_dir='o', {key}={value})\n"
    )
    packages = {"trl": trl, "transformers": "4.57.1", "torch": "2.8.0", "accelerate": "1.10.0"}
    [removed] = [
        f for f in findings(snapshot(1, packages=packages), launch=f"python {script}") if f.rule == "CFG001"
    ]
    assert removed.severity.value == "error" and "TypeError: unexpected keyword argument" in removed.message
    assert "Unknown arguments from config file" not in removed.message and "dead" not in removed.message


def test_trl_cli_keys_in_a_config_file_are_trls_not_typos(repo):
    """`accelerate_config: zero2` / `num_processes: 4` in a config file (TRL's clis.md) are keys
    of `trl grpo --config` (handed to accelerate): CFG004 said "did you mean
    `accelerator_config`?" when no launch line names the runner; a script whose TrlParser reads
    the file still refuses them."""
    text = "use_vllm: true\naccelerate_config: zero2\nnum_processes: 4\n"
    assert [f for f in findings(snapshot(8), config=yaml_dict(text)) if f.rule in KEY_RULES] == []
    script = repo("train.py", TRL_PARSER)
    config = repo("grpo.yaml", text)
    found = [
        f for f in findings(snapshot(8), launch=f"python {script} --config {config}") if f.rule == "CFG004"
    ]
    assert sorted(f.message.split("`")[1] for f in found) == ["accelerate_config", "num_processes"]
    assert all("`trl grpo --config`" in f.message and "the parser refuses it" in f.message for f in found)


def yaml_dict(text: str) -> dict:
    import yaml

    return yaml.safe_load(text)


def test_a_boolean_flag_given_1_on_the_command_line_is_a_boolean():
    """HfArgumentParser reads `--gradient_checkpointing 1` as True (string_to_bool); a word it
    does not take stays an error."""

    def cfg005(value: str) -> list:
        launch = f"accelerate launch --num_processes 1 train.py --gradient_checkpointing {value}"
        return [f for f in findings(snapshot(1), launch=launch) if f.rule == "CFG005"]

    assert cfg005("1") == [] and cfg005("0") == [] and cfg005("yes") == []
    (f,) = cfg005("maybe")
    assert f.severity.value == "error"


TRL_PARSER_SCRIPT = """
from trl import GRPOConfig, GRPOTrainer, ModelConfig, ScriptArguments, TrlParser

if __name__ == "__main__":
    parser = TrlParser((ScriptArguments, GRPOConfig, ModelConfig))
    script_args, training_args, model_args = parser.parse_args_and_config()
"""


@pytest.mark.parametrize(("trl", "inert"), [("0.16.0", True), ("newest", False)])
def test_an_accelerate_key_a_pre_0_19_parser_drops_has_no_effect(repo, trl, inert):
    """open-r1-style recipes carry `num_processes: 7` for `trl grpo --config`; a script run by
    `accelerate launch --num_processes 3` gets its processes from that line, and TRL < 0.19's
    parser drops the key: no effect, info (a published 3 + 1 GPU run). TRL 0.19+ refuses it."""
    script = repo("train.py", TRL_PARSER_SCRIPT)
    repo("grpo.yaml", "num_processes: 7\nuse_vllm: false\n")
    pk = TRL_016 if trl == "0.16.0" else None
    found = [
        f
        for f in findings(
            snapshot(4, packages=pk),
            launch=f"accelerate launch --num_processes 3 {script} --config grpo.yaml",
        )
        if f.rule == "CFG004" and f.evidence.get("key") == "num_processes"
    ]
    assert found, "the key is read and judged"
    assert (found[0].severity.value == "info") is inert
    assert ("has no effect" in found[0].message) is inert


_NO_CLI = """from datasets import load_dataset
from trl import GRPOConfig, GRPOTrainer

dataset = load_dataset("google-research-datasets/mbpp", "sanitized", split="train")
training_args = GRPOConfig(output_dir="out", learning_rate=1e-5, num_generations=4)
trainer = GRPOTrainer(model="Qwen/Qwen2.5-0.5B", reward_funcs=[], args=training_args, train_dataset=dataset)
trainer.train()
"""


def test_flags_of_a_script_that_reads_no_command_line_reach_nothing(tmp_path):
    # the script builds GRPOConfig in code and parses no command line: --dataset is no GRPOConfig typo
    script = tmp_path / "train.py"
    script.write_text(_NO_CLI)
    launch = f"python {script} --model_id meta-llama/Llama-3-8B-Instruct --dataset mbpp"
    plan = build_plan(launch=launch, live=False)
    assert "parses no command line" in plan.script_keys["dataset"]
    assert not [f for f in findings(snapshot(1), launch=launch) if f.rule in ("CFG004", "CFG001")]


def test_a_script_that_hands_the_command_line_to_trls_parser_still_has_its_flags_judged(tmp_path):
    script = tmp_path / "train.py"
    script.write_text(
        "from trl import GRPOConfig, GRPOTrainer, TrlParser\n"
        "(training_args,) = TrlParser((GRPOConfig,)).parse_args_and_config()\n"
        "GRPOTrainer(model='Qwen/Qwen2.5-0.5B', reward_funcs=[], args=training_args)\n"
    )
    plan = build_plan(launch=f"python {script} --dataset mbpp", live=False)
    assert "dataset" not in plan.script_keys or "parses no command line" not in plan.script_keys["dataset"]


def test_a_parser_built_elsewhere_and_called_counts_as_reading_the_command_line(tmp_path):
    script = tmp_path / "train.py"
    script.write_text("from myproject.cli import get_parser\nargs = get_parser().parse_args()\n" + _NO_CLI)
    plan = build_plan(launch=f"python {script} --dataset mbpp", live=False)
    assert "parses no command line" not in plan.script_keys.get("dataset", "")


_SELF_LOAD = """import argparse, yaml
from trl import GRPOConfig, GRPOTrainer

parser = argparse.ArgumentParser()
parser.add_argument("--config", default="config.yaml")
args = parser.parse_args()
with open(args.config) as f:
    config = yaml.safe_load(f)
training_args = GRPOConfig(output_dir=config["output_dir"], num_generations=config["num_generations"]{more})
GRPOTrainer(model=config["model_name"], reward_funcs=[], args=training_args)
"""


def _self_load(tmp_path, more: str) -> list:
    script = tmp_path / "train.py"
    script.write_text(_SELF_LOAD.format(more=more))
    cfg = tmp_path / "config.yaml"
    cfg.write_text(
        "output_dir: out\nnum_generations: 4\nmodel_name: Qwen/Qwen2.5-0.5B\nmax_prompt_length: 256\n"
    )
    from envdoctor.checks.context import Context
    from envdoctor.checks.engine import run_rules
    from envdoctor.facts.snapshot import from_dict

    plan = build_plan(launch=f"python {script}", config=str(cfg), live=False)
    ctx = Context(facts=from_dict(snapshot(1, packages={"trl": "1.16.0"}), "t"), plan=plan)
    return [f for f in run_rules(ctx).findings if f.rule in ("CFG001", "CFG004")]


def test_a_script_reading_its_yaml_itself_passes_grpoconfig_only_the_keys_it_names(tmp_path):
    # max_prompt_length (gone from GRPOConfig in TRL 0.28) stays in the YAML, unread: no TypeError
    assert _self_load(tmp_path, "") == []


def test_a_script_spreading_its_yaml_into_grpoconfig_has_the_keys_judged(tmp_path):
    found = _self_load(tmp_path, ", **config")
    assert any("max_prompt_length" in f.message for f in found)


ARGPARSE_ALONE = (
    "import argparse\nfrom trl import GRPOConfig, GRPOTrainer\n"
    "p = argparse.ArgumentParser()\np.add_argument('--dataset')\n"
    "p.add_argument('--use_lora', action='store_true')\n"
    "p.add_argument('--learning_rate', type=float, default=1e-5)\na = p.parse_args()\n"
    "GRPOTrainer(model='m', reward_funcs=[len], args=GRPOConfig(learning_rate=a.learning_rate))\n"
)


def test_a_config_key_that_is_an_argparse_option_of_the_script_is_its_own(repo):
    """A config file naming the options of a script that argparse alone reads (`dataset`,
    `use_lora`: ThinkSafe's grpo_train.py, dev set heldout-2026-11-29c) names the script's options,
    not GRPOConfig typos; a key that is neither stays one."""
    repo("train.py", ARGPARSE_ALONE)
    plan = build_plan(launch="python train.py --dataset d", config_dict={"dataset": "d", "use_lora": True})
    assert {"dataset", "use_lora"} <= set(plan.script_keys) and "learning_rate" not in plan.script_keys
    cfg = {"dataset": "d", "use_lora": True, "datasett": "d"}
    found = [f for f in findings(snapshot(2), config=cfg, launch="python train.py") if f.rule == "CFG004"]
    assert [f for f in found if "datasett" in f.message]
    assert not [f for f in found if f.message.startswith(("`dataset`", "`use_lora`"))]
