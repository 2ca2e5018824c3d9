# ruff: noqa: E501 - log lines are quoted as programs print them
"""Three generic classes of setup failures, by structure: a top-level module not installed in the
environment that ran (TRI013), an exception message broken by whitespace (matched as it reads),
and Hydra / OmegaConf refusing a stack's configuration (TRI012); each on several shapes, and
quiet on look-alikes."""

from __future__ import annotations

from envdoctor.findings import Severity
from envdoctor.triage.missing import distribution
from envdoctor.triage.scanner import squeeze
from tests.triage.helpers import findings, scan_bytes


def _found(text: str):
    return findings(scan_bytes(text))


def _one(text: str):
    found = _found(text)
    assert len(found) == 1, found
    return found[0]


# -- a top-level module not installed ------------------------------------------------------------

USER_IMPORT = """\
Traceback (most recent call last):
  File "/home/u/grpo/train.py", line 3, in <module>
    from math_verify import parse, verify
ModuleNotFoundError: No module named 'math_verify'
"""


def test_a_top_level_module_not_installed_names_its_distribution_as_an_error():
    f = _one(USER_IMPORT)
    assert f.rule == "TRI013" and f.severity == Severity.ERROR
    assert "'math_verify'" in f.message and "math-verify" in f.fix and "worker" not in f.message
    f = _one(USER_IMPORT.replace("math_verify", "cv2"))  # the import name is not the distribution's
    assert f.rule == "TRI013" and "pip install opencv-python" in f.fix
    f = _one("ImportError: No module named yaml\n")  # Python 2's shape, the message alone
    assert f.rule == "TRI013" and "pyyaml" in f.fix
    f = _one(USER_IMPORT.replace("math_verify", "word_counter_lib"))  # no row: '_' as '-'
    assert f.rule == "TRI013" and "word-counter-lib" in f.fix


def test_a_worker_process_is_named_as_the_environment_to_fix():
    ray = """\
(WorkerDict pid=1234, ip=10.0.0.2) Traceback (most recent call last):
(WorkerDict pid=1234, ip=10.0.0.2)   File "/usr/local/lib/python3.10/site-packages/ray/_private/worker.py", line 797, in main_loop
(WorkerDict pid=1234, ip=10.0.0.2)   File "/usr/local/lib/python3.10/site-packages/verl/workers/fsdp_workers.py", line 100, in __init__
(WorkerDict pid=1234, ip=10.0.0.2)     import flash_attn
(WorkerDict pid=1234, ip=10.0.0.2) ModuleNotFoundError: No module named 'flash_attn'
"""
    f = _one(ray)
    assert f.rule == "TRI013" and f.severity == Severity.ERROR
    assert "WorkerDict" in f.message and "imported by verl" in f.message
    assert "runtime_env" in f.fix and "flash-attn" in f.fix
    core = """\
(EngineCore_DP0 pid=77) Traceback (most recent call last):
(EngineCore_DP0 pid=77)   File "/venv/lib/python3.12/site-packages/vllm/v1/engine/core.py", line 600, in run_engine_core
(EngineCore_DP0 pid=77)   File "/venv/lib/python3.12/site-packages/vllm/model_executor/models/qwen2_vl.py", line 30, in <module>
(EngineCore_DP0 pid=77)     from qwen_vl_utils import process_vision_info
(EngineCore_DP0 pid=77) ModuleNotFoundError: No module named 'qwen_vl_utils'
"""
    f = _one(core)
    assert f.rule == "TRI013" and "EngineCore_DP0" in f.message and "qwen-vl-utils" in f.fix
    # a name the import-name table lacks: the distribution is a guess in the worker's branch too
    unknown = _one(core.replace("qwen_vl_utils", "acme_reward_kit"))
    assert "often pip install acme-reward-kit" in unknown.fix
    assert "(pip install acme-reward-kit)" not in unknown.fix and "provides 'acme_reward_kit'" in unknown.fix
    known = _one(core.replace("qwen_vl_utils", "cv2"))  # a row of the table: said as fact
    assert "(pip install opencv-python)" in known.fix
    anonymous = ray.replace("(WorkerDict pid=1234, ip=10.0.0.2) ", "(pid=75332) ")  # Ray's bare prefix
    assert "worker process (a Ray worker)" in _one(anonymous).message
    frames_only = ray.replace("(WorkerDict pid=1234, ip=10.0.0.2) ", "")  # the frames tell it
    f = _one(frames_only)
    assert f.rule == "TRI013" and "worker process (a Ray worker)" in f.message


def test_quiet_on_the_stack_a_submodule_a_local_module_and_a_handled_import():
    stack = _one(USER_IMPORT.replace("math_verify", "trl"))  # install advice's: as before
    assert stack.rule == "TRI003"
    sub = _found(USER_IMPORT.replace("'math_verify'", "'vllm.transformers_utils.tokenizer_group'"))
    assert all(f.rule != "TRI013" for f in sub)  # a module inside a package: drift, boundary.py
    stdlib = _one(USER_IMPORT.replace("math_verify", "resource"))  # POSIX-only, on Windows
    assert stdlib.rule == "TRI003"
    local = _one(USER_IMPORT.replace("math_verify", "utils"))  # the repository's own module
    assert local.rule == "TRI003"
    own = _one(
        USER_IMPORT.replace("math_verify", "rewardlib").replace(
            '  File "/home/u/grpo/train.py"',
            '  File "/home/u/rewardlib/cli.py", line 2, in <module>\n  File "/home/u/grpo/train.py"',
        )
    )
    assert own.rule == "TRI003"  # a folder of that name in the frames: the path, not pip
    handled = USER_IMPORT + (
        "\nDuring handling of the above exception, another exception occurred:\n\n"
        "Traceback (most recent call last):\n"
        '  File "/home/u/grpo/train.py", line 6, in <module>\n'
        "    score = float(answer)\n"
        "ValueError: could not convert string to float: 'abc'\n"
    )
    assert all(f.rule != "TRI013" for f in _found(handled))  # the except branch ran
    went_on = USER_IMPORT + "{'loss': 0.12, 'grad_norm': 1.5, 'learning_rate': 1e-06, 'epoch': 0.01}\n"
    assert all(f.rule != "TRI013" for f in _found(went_on))  # a guarded import, logged: the run went on
    warned = "WARNING 03-01 10:00:00 [__init__.py:12] ModuleNotFoundError: No module named 'triton_dist'\n"
    assert all(f.rule != "TRI013" for f in _found(warned))  # logged as a warning, the run went on


def test_a_packages_own_compiled_module_missing_is_a_broken_install():
    text = """\
Traceback (most recent call last):
  File "/home/u/train.py", line 2, in <module>
    import flash_attn
  File "/venv/lib/python3.11/site-packages/flash_attn/flash_attn_interface.py", line 10, in <module>
    import flash_attn_2_cuda as flash_attn_gpu
ModuleNotFoundError: No module named 'flash_attn_2_cuda'
"""
    f = _one(text)
    # the compiled part's own class (TRI041), with a reinstall of the package for this Python and torch
    assert f.rule == "TRI041" and "without its compiled module flash_attn_2_cuda" in f.message
    assert "--force-reinstall --no-deps" in f.fix and "flash-attn" in f.fix


def test_distribution_names_from_the_table():
    assert distribution("sklearn") == "scikit-learn" and distribution("PIL") == "pillow"
    assert distribution("flash_attn") == "flash-attn" and distribution("Foo_Bar") == "foo-bar"


# -- messages broken by whitespace ---------------------------------------------------------------

BATCH = """\
  File "/x/lib/python3.11/site-packages/trl/trainer/grpo_trainer.py", line 400, in __init__
    raise ValueError(
ValueError: The global train batch size (3 x 2) must be evenly divisible{gap}by the number of generations per prompt (4). Given the current train batch size, the valid values for the number of generations are: [2, 3, 6].
"""


def test_trls_batch_message_split_by_a_space_run_or_a_newline_is_matched():
    for gap in (" " * 40, "\n", "\u3000\u3000 \t ", "   \n   "):
        f = _one(BATCH.format(gap=gap))
        assert f.rule == "CFG002" and f.severity == Severity.ERROR, (repr(gap), f)
        assert "num_generations=4" in f.message and "[2, 3, 6]" in f.fix


def test_quiet_where_the_squeezed_message_is_no_known_one():
    text = "ValueError: something odd happened          in the reward function\n"
    assert _one(text).rule == "TRI003"
    ended = BATCH.format(gap=" ").replace("[2, 3, 6].", "[2, 3, 6].\nby the way, nothing else")
    assert _one(ended).rule == "CFG002"  # the one-line message, as before
    assert squeeze("a  \n\t b\u3000c") == "a b c"


# -- Hydra / OmegaConf ---------------------------------------------------------------------------

VERL = """\
Error executing job with overrides: ['trainer.n_gpus_per_nod=8']
Traceback (most recent call last):
  File "/usr/lib/python3.10/site-packages/verl/trainer/main_ppo.py", line 30, in main
    run_ppo(config)
omegaconf.errors.ConfigAttributeError: Key 'n_gpus_per_nod' is not in struct
    full_key: trainer.n_gpus_per_nod
    object_type=dict
"""


def test_a_key_not_in_struct_names_the_key_path_and_the_stack():
    f = _one(VERL)
    assert f.rule == "TRI012" and f.severity == Severity.ERROR
    assert f.message.startswith("verl's Hydra/OmegaConf") and "trainer.n_gpus_per_nod" in f.message
    assert "+trainer.n_gpus_per_nod=<value>" in f.fix and "renamed, removed or misspelled" in f.fix
    ray = "".join(f"(TaskRunner pid=4242) {line}\n" for line in VERL.splitlines())
    f = _one(ray)  # a Ray task's prefixed lines
    assert f.rule == "TRI012" and "trainer.n_gpus_per_nod" in f.message and "verl's" in f.message
    newer = "  omegaconf.errors.ConfigAttributeError: Missing key config\n    full_key: model.config\n    object_type=dict\n"
    f = _one(newer)  # OmegaConf 2.1's shape, quoted with an indent
    assert f.rule == "TRI012" and "model.config" in f.message
    keyerr = "omegaconf.errors.ConfigKeyError: Key 'lr_warmup' not in 'OptimConfig'\n    full_key: actor.optim.lr_warmup\n"
    f = _one(keyerr)
    assert f.rule == "TRI012" and "actor.optim.lr_warmup" in f.message and "OptimConfig" in f.message


def test_hydras_override_lines_without_a_traceback_and_with_one():
    bare = """\
+ python3 -m verl.trainer.main_ppo actor_rollout_ref.rollout.foo=1
Could not override 'actor_rollout_ref.rollout.foo'.
To append to your config use +actor_rollout_ref.rollout.foo=1
Key 'foo' is not in struct
    full_key: actor_rollout_ref.rollout.foo
    object_type=dict

Set the environment variable HYDRA_FULL_ERROR=1 for a complete stack trace.
"""
    f = _one(bare)
    assert f.rule == "TRI012" and "verl's" in f.message and "actor_rollout_ref.rollout.foo" in f.message
    assert "+actor_rollout_ref.rollout.foo=1" in f.fix
    full = """\
Traceback (most recent call last):
  File "/venv/lib/python3.12/site-packages/omegaconf/dictconfig.py", line 351, in _format_and_raise
omegaconf.errors.ConfigAttributeError: Key 'kl_coef' is not in struct
    full_key: loss_fn.kl_coef

The above exception was the direct cause of the following exception:

Traceback (most recent call last):
  File "/opt/nemo_rl/examples/run_grpo_math.py", line 12, in <module>
  File "/venv/lib/python3.12/site-packages/hydra/_internal/config_loader_impl.py", line 513, in _apply_overrides_to_config
hydra.errors.ConfigCompositionException: Could not override 'loss_fn.kl_coef'.
"""
    f = _one(full)
    assert f.rule == "TRI012" and "NeMo-RL's" in f.message and "loss_fn.kl_coef" in f.message


def test_a_missing_mandatory_value_is_set_on_the_command_line():
    f = _one(
        "omegaconf.errors.MissingMandatoryValue: Missing mandatory value: policy.model_name\n    full_key: policy.model_name\n"
    )
    assert f.rule == "TRI012" and "policy.model_name=<value>" in f.fix and "needs a value" in f.message


def test_quiet_on_hydra_look_alikes():
    for text in (
        "WARNING: Could not override 'logging.level' from the environment, using the default\n",
        "KeyError: 'full_key'\n",
        "INFO the struct flag of the config is set; no key is missing\n",
    ):
        assert all(f.message.find("Hydra") < 0 for f in _found(text)), text


def test_a_catalogue_symptom_in_prose_split_by_a_space_run_is_read():
    found = findings(
        scan_bytes("I ran GRPO with Liger and got\n\n    Unknown loss            type: dapo\n\nany idea?\n")
    )
    assert (
        found and found[0].rule == "TRI011" and "liger-grpo-loss-unknown-loss-type-dapo" in found[0].message
    )
    assert findings(scan_bytes("all gather done;      the size      mismatch check passed\n")) == []


def test_a_module_the_table_does_not_name_is_not_given_a_distribution_as_fact():
    """`No module named 'nemo_gym'`: the table has no row, so the name is a guess: the finding
    says so and points at the project's install line rather than asserting `pip install X`."""
    (f,) = [f for f in findings(scan_bytes("ModuleNotFoundError: No module named 'some_rl_gym_pkg'\n"))]
    assert f.rule == "TRI013"
    assert "likely some-rl-gym-pkg" in f.message and "install instructions" in f.fix
    (g,) = [f for f in findings(scan_bytes("ModuleNotFoundError: No module named 'cv2'\n"))]
    assert "its distribution opencv-python" in g.message and g.fix.startswith("pip install opencv-python")
