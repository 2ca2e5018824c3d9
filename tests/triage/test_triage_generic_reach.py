# ruff: noqa: E501 - log lines are quoted as programs print them
"""Generic mechanisms that reach failures in the shapes real threads paste them: an exception whose
message starts on the lines after its name, an import message whose module lost its quotes, a guard
refusing an environment variable its package reserves; each fires on several shapes and stays quiet
on look-alikes."""

from __future__ import annotations

from envdoctor.findings import Severity
from tests.triage.helpers import findings, scan_bytes


def _found(text: str):
    return findings(scan_bytes(text))


def _one(text: str):
    found = _found(text)
    assert len(found) == 1, found
    return found[0]


# -- an exception's message on the lines after its name -------------------------------------------

SPLIT_IMPORT = """\
Failed to import VLLM Rollout. Please make sure vllm is installed.

ImportError:
cannot import name 'Fp8LinearOp'
from vllm.model_executor.layers.quantization.utils.w8a8_utils
"""


def test_a_message_that_starts_on_the_line_after_the_exceptions_name_is_read_whole():
    f = _one(SPLIT_IMPORT)
    assert f.rule == "TRI009" and f.severity == Severity.ERROR
    assert "Fp8LinearOp" in f.message and "vllm" in f.fix and "removed in vllm" in f.fix
    # the same with Python's quotes kept, and on one line with the quotes lost
    quoted = SPLIT_IMPORT.replace("from vllm.model", "from 'vllm.model").rstrip("\n") + "'\n"
    assert _one(quoted).rule == "TRI009"
    one_line = "ImportError: cannot import name 'Fp8LinearOp' from vllm.model_executor.layers.quantization.utils.w8a8_utils\n"
    f = _one(one_line)
    assert f.rule == "TRI009" and "w8a8_utils" in f.message
    # a sentence's full stop after the bare module is not part of its name
    f = _one(one_line.replace("w8a8_utils\n", "w8a8_utils.\n"))
    assert f.rule == "TRI009" and "w8a8_utils." not in f.fix.replace("w8a8_utils.Fp8", "")


def test_an_exception_quoted_in_a_sentence_and_wrapped_is_read_whole():
    """A commit's or an issue's prose quotes the error and wraps it (set 22's f004: "Fixes
    ImportError: cannot import name 'HybridCache' from / 'transformers.cache_utils' when using
    --use_liger_kernel.")."""
    text = (
        "Fixes ImportError: cannot import name 'HybridCache' from\n"
        "'transformers.cache_utils' when using --use_liger_kernel.\n"
    )
    f = _one(text)
    assert f.rule == "TRI009" and "HybridCache" in f.message
    # a sentence that names an exception and ends is prose, not a wrapped message
    prose = "We saw a RuntimeError: the run stopped.\nThen we upgraded.\n"
    assert all(f.severity != Severity.ERROR for f in _found(prose))


def test_quiet_where_the_name_alone_is_not_followed_by_a_message():
    # the name and its colon, then a frame or a blank line: nothing to read as its message
    text = "RuntimeError:\n\nTraceback (most recent call last):\n"
    assert all(f.rule not in ("TRI009", "TRI012") for f in _found(text))
    # a name the symbol history does not place (the user's own module): no drift verdict
    own = "ImportError:\ncannot import name 'helper'\nfrom my_project.rewards\n"
    assert all(f.severity != Severity.ERROR for f in _found(own))


# -- a reserved environment variable --------------------------------------------------------------

RAY_RESERVED = "AssertionError: The env var, __RAY_WORKER_PROCESS_SETUP_HOOK_ENV_VAR, is not permitted because it is reserved for the internal use.\n"


def test_a_reserved_environment_variable_names_its_owner_what_set_it_and_the_fix():
    f = _one(RAY_RESERVED)
    assert f.rule == "TRI012" and f.severity == Severity.ERROR
    assert f.message.startswith("Ray refused the environment") and "worker_process_setup_hook" in f.message
    assert "remove the worker_process_setup_hook" in f.fix
    core = (
        "(EngineCore_DP0 pid=1279235) ERROR 03-18 23:23:32 [core.py:1006] "
        + RAY_RESERVED
        + "RuntimeError: Engine core initialization failed. See root cause above. Failed core proc(s): {}\n"
    )
    f = _one(core)  # in vLLM's engine process: the process is named
    assert f.rule == "TRI012" and "in EngineCore_DP0" in f.message
    traced = (
        "Traceback (most recent call last):\n"
        '  File "/venv/lib/python3.12/site-packages/ray/_private/runtime_env/setup_hook.py", line 120, in export_setup_func_callable\n'
        "    assert ray_constants.WORKER_PROCESS_SETUP_HOOK_ENV_VAR not in env_vars, (\n" + RAY_RESERVED
    )
    assert _one(traced).rule == "TRI012"
    other = "ValueError: Environment variable VLLM_INTERNAL_PORT is reserved for the internal use of vLLM.\n"
    f = _one(other)  # a variable with no row of what sets it: the generic fix, its owner named
    assert (
        f.rule == "TRI012"
        and f.message.startswith("vLLM refused")
        and "do not set VLLM_INTERNAL_PORT" in f.fix
    )


def test_quiet_on_reserved_words_that_are_no_environment_variable_of_a_known_owner():
    # a variable of no package envdoctor can name, and no frame of a stack package: not named
    unknown = "AssertionError: The env var, MY_APP_SECRET_KEY, is not permitted because it is reserved for the internal use.\n"
    assert all(f.rule != "TRI012" for f in _found(unknown))
    # a reserved word that is no variable (a token, a keyword)
    token = "ValueError: The token '<|endoftext|>' is reserved for the internal use of the tokenizer.\n"
    assert all(f.rule != "TRI012" for f in _found(token))
    # an OS permission error is no refusal of an environment
    perm = "PermissionError: [Errno 1] Operation not permitted: '/dev/shm/ray'\n"
    assert all(f.rule != "TRI012" for f in _found(perm))


# -- a column the dataset lacks -------------------------------------------------------------------


def test_the_datasets_librarys_own_words_name_the_column_and_those_the_dataset_has():
    text = """\
Traceback (most recent call last):
  File "/home/u/grpo.py", line 60, in main
    dataset = dataset.remove_columns(["messages"])
  File "/venv/lib/python3.11/site-packages/datasets/arrow_dataset.py", line 2535, in remove_columns
    raise ValueError(
ValueError: Column name ['messages'] not in the dataset. Current columns in the dataset: ['problem', 'solution']
"""
    f = _one(text)
    assert f.rule == "TRI015" and f.severity == Severity.ERROR
    assert "'messages'" in f.message and "problem, solution" in f.message
    assert "rename_column" in f.fix and "problem, solution" in f.fix
    row = "KeyError: \"Column prompt not in the dataset. Current columns in the dataset: ['question', 'answer']\"\n"
    f = _one(row)  # a row's __getitem__ (formatting.py), quoted by KeyError
    assert f.rule == "TRI015" and "'prompt'" in f.message and "question, answer" in f.message


def test_trl_reading_a_rows_column_is_the_data_and_the_users_own_code_is_not_judged():
    trl = """\
Traceback (most recent call last):
  File "/home/u/train.py", line 80, in <module>
    trainer.train()
  File "/venv/lib/python3.11/site-packages/trl/data_utils.py", line 204, in maybe_apply_chat_template
    last_role = example["prompt"][-1]["role"]
KeyError: 'prompt'
"""
    f = _one(trl)  # the data rule's own id (DAT002), as the check names the dataset without it
    assert f.rule == "DAT002" and f.severity == Severity.ERROR
    assert "'prompt'" in f.message and "data_utils.py:204" in f.message and "rename_column" in f.fix
    # the same KeyError in the user's own code: no claim about the data (the first-exception answer)
    own = trl.replace("/venv/lib/python3.11/site-packages/trl/data_utils.py", "/home/u/prep.py")
    assert all(x.rule not in ("TRI015", "DAT002") for x in _found(own))
    # a KeyError in TRL that is no row's column (a dict of its own)
    other = trl.replace('example["prompt"][-1]["role"]', 'self._metrics[mode]["prompt"]')
    assert all(x.rule not in ("TRI015", "DAT002") for x in _found(other))


SFT_TEXT = """\
[rank0]:   File "/env/lib/python3.11/site-packages/datasets/arrow_dataset.py", line 3552, in _map_single
[rank0]:     batch = apply_function_on_filtered_inputs(
[rank0]:   File "/env/lib/python3.11/site-packages/trl/trainer/sft_trainer.py", line 513, in tokenize
[rank0]:     element[dataset_text_field] if formatting_func is None else formatting_func(element),
[rank0]:   File "/env/lib/python3.11/site-packages/datasets/formatting/formatting.py", line 277, in __getitem__
[rank0]:     value = self.data[key]
[rank0]: KeyError: 'text'
"""


def test_a_trainers_data_preparation_reading_a_column_the_dataset_lacks_is_dat002():
    f = _one(SFT_TEXT)  # the row indexed by the config key that names the column
    assert f.rule == "DAT002" and f.severity == Severity.ERROR
    assert "SFTTrainer" in f.message and "'text'" in f.message and "dataset_text_field" in f.message
    assert "rename_column('<its column>', 'text')" in f.fix and "dataset_text_field=" in f.fix
    from envdoctor.checks.data import column_fix

    assert f.fix.startswith(column_fix("text", "dataset_text_field"))  # one fix with the check's
    dpo = (
        '  File "/env/lib/python3.9/site-packages/trl/trainer/dpo_trainer.py", line 87, in _tokenize\n'
        '    prompt = features["prompt"]\n'
        '  File "/env/lib/python3.9/site-packages/datasets/formatting/formatting.py", line 277, in __getitem__\n'
        "    value = self.data[key]\nKeyError: 'prompt'\n"
    )
    f = _one(dpo)
    assert f.rule == "DAT002" and "DPOTrainer" in f.message and "'prompt'" in f.message


def test_a_key_the_trainer_built_itself_or_read_outside_its_data_preparation_is_not_dat002():
    # a feature the trainer's own tokenization made (not a column of the user's dataset)
    built = (
        '  File "/env/lib/python3.10/site-packages/trl/trainer/dpo_trainer.py", line 700, in tokenize_row\n'
        "    prompt_tokens = batch[\"prompt_input_ids\"]\nKeyError: 'prompt_input_ids'\n"
    )
    assert all(x.rule != "DAT002" for x in _found(built))
    # a batch read in the trainer's evaluation loop, not its data preparation
    evaluation = (
        '  File "/env/lib/python3.10/site-packages/trl/trainer/kto_trainer.py", line 1600, in evaluation_loop\n'
        '    target_indicies = [i for i in range(len(random_batch["kl"])) if random_batch["label"][i]]\n'
        "KeyError: 'label'\n"
    )
    assert all(x.rule != "DAT002" for x in _found(evaluation))
    # the user's own tokenize function mapped over the dataset: not the trainer's read
    own = SFT_TEXT.replace("/env/lib/python3.11/site-packages/trl/trainer/sft_trainer.py", "/home/u/train.py")
    assert all(x.rule != "DAT002" for x in _found(own))
    # a config lookup in TRL (a dict of the config's, not a row): not a dataset column
    config = (
        '  File "/env/lib/python3.11/site-packages/trl/trainer/sft_trainer.py", line 300, in __init__\n'
        "    dict_args.pop(\"push_to_hub_token\")\nKeyError: 'push_to_hub_token'\n"
    )
    assert all(x.rule != "DAT002" for x in _found(config))


def test_a_scripts_own_check_of_its_column_argument_and_an_exception_shown_as_its_constructor():
    f = _one('ValueError(f"Dataset Question Field Error: {prompt_column} is not supported.")\n')
    assert f.rule == "TRI015" and f.severity == Severity.ERROR
    assert "prompt_column" in f.message and "--prompt_column" in f.fix
    f = _one("ValueError: prompt column 'question' not found in dataset; set dataset_prompt_column\n")
    assert f.rule == "TRI015" and "'question'" in f.message and "dataset_prompt_column" in f.fix
    # repr(e) of another exception goes through the same diagnosis (here: drift, the symbol history)
    f = _one(
        "ImportError(\"cannot import name 'Fp8LinearOp' from 'vllm.model_executor.layers.quantization.utils.w8a8_utils'\")\n"
    )
    assert f.rule == "TRI009"


def test_quiet_on_columns_that_are_not_the_datasets_and_on_a_constructor_in_prose():
    # a tensor's column, a table's column of a report: no dataset column argument named
    assert all(
        f.rule != "TRI015"
        for f in _found("IndexError: column index 5 is out of range for a matrix of 4 columns\n")
    )
    assert all(
        f.rule != "TRI015" for f in _found("ValueError: the key 'lr' is not supported by this scheduler\n")
    )
    # a key of a service, not a column argument
    service = "ValueError: the reward data key is missing: set openai_api_key\n"
    assert all(f.rule != "TRI015" for f in _found(service))
    # a constructor inside a sentence, not a line of its own
    said = 'We then raise ValueError("Dataset field {prompt_column} is not supported") in our fork.\n'
    assert all(f.rule != "TRI015" for f in _found(said))
    # the suite's unknown failure (KeyError in the user's own code) stays the first-exception answer
    from tests.triage.helpers import findings as named

    assert [f.rule for f in named("unknown_failure.log")] == ["TRI003"]


# -- an inference tensor in autograd --------------------------------------------------------------

INFERENCE = """\
Traceback (most recent call last):
  File "/home/u/train.py", line 90, in <module>
    trainer.train()
  File "/env/lib/python3.10/site-packages/unsloth_zoo/gradient_checkpointing.py", line 554, in backward
    outputs = ctx.run_function(*detached_inputs)
  File "/env/lib/python3.10/site-packages/torch/nn/modules/module.py", line 1739, in _wrapped_call_impl
    return self._call_impl(*args, **kwargs)
RuntimeError: Inference tensors cannot be saved for backward. To work around you can make a clone to get a normal tensor and use it in autograd.
"""


def test_an_inference_tensor_in_the_step_names_the_stack_that_ran_it_as_a_warning():
    f = _one(INFERENCE)
    assert f.rule == "TRI016" and f.severity == Severity.WARNING  # which release made it is not shown
    assert "unsloth-zoo's backward" in f.message and "upgrade unsloth-zoo and unsloth" in f.fix
    assert "torch.no_grad()" in f.fix
    bare = _one(INFERENCE.splitlines()[-1] + "\n")  # the message alone: the generic fix
    assert bare.rule == "TRI016" and "find the torch.inference_mode() block" in bare.fix
    inplace = "RuntimeError: Inplace update to inference tensor outside InferenceMode is not allowed.You can make a clone to get a normal tensor before doing inplace update.\n"
    assert _one(inplace).rule == "TRI016"


def test_quiet_on_other_runtime_errors_and_a_warning_that_mentions_inference_tensors():
    other = INFERENCE.replace(
        "Inference tensors cannot be saved for backward", "Expected all tensors to be on the same device"
    )
    assert all(f.rule != "TRI016" for f in _found(other))
    said = "[W1128 10:00:00] UserWarning: Inference tensors cannot be saved for backward in this mode\n"
    assert all(f.rule != "TRI016" for f in _found(said))


# -- a check that demands an option's value -------------------------------------------------------


def test_a_message_that_demands_an_options_value_is_a_refusal_with_that_value_as_its_fix():
    text = 'raise ValueError("Freeze/Full PPO training needs `reward_model_type=full`.")\nValueError: Freeze/Full PPO training needs `reward_model_type=full`.\n'
    f = _one(text)
    assert f.rule == "TRI012" and f.severity == Severity.ERROR
    assert f.fix.startswith("set reward_model_type=full, the value the check demands")
    f = _one("ValueError: Colocated generation requires --vllm_mode=colocate to be passed\n")
    assert f.rule == "TRI012" and "--vllm_mode=colocate" in f.fix


def test_quiet_where_the_demand_is_about_data_or_resources_or_names_no_value():
    assert all(
        f.rule != "TRI012"
        for f in _found("ValueError: the dataset needs `split=train` rows with a prompt column\n")
    )
    assert all(
        f.rule != "TRI012" for f in _found("RuntimeError: NCCL requires NCCL_P2P_DISABLE=1 on this machine\n")
    )
    assert all(f.rule != "TRI012" for f in _found("ValueError: this model needs more than one GPU\n"))


# -- a program not on PATH ------------------------------------------------------------------------

NINJA = """\
(VllmServer pid=4242) Traceback (most recent call last):
(VllmServer pid=4242)   File "/opt/venvs/vllm/lib/python3.12/site-packages/torch/utils/cpp_extension.py", line 2100, in verify_ninja_availability
(VllmServer pid=4242)     subprocess.check_output(["ninja", "--version"])
(VllmServer pid=4242)   File "/usr/lib/python3.12/subprocess.py", line 1955, in _execute_child
(VllmServer pid=4242)     raise child_exception_type(errno_num, err_msg, err_filename)
(VllmServer pid=4242) FileNotFoundError: [Errno 2] No such file or directory: 'ninja'
"""


def test_a_program_started_by_name_and_not_found_is_the_path_of_the_process_that_ran_it():
    f = _one(NINJA)
    assert f.rule == "TRI017" and f.severity == Severity.ERROR
    assert "'ninja'" in f.message and "VllmServer" in f.message and "pip install ninja" in f.fix
    assert "runtime_env" in f.fix
    quoted = _one("Worker failed with error '[Errno 2] No such file or directory: 'ninja''\n")
    assert quoted.rule == "TRI017" and "a worker process" in quoted.message
    # a program no table names, shown started by subprocess: still the PATH
    other = _one(NINJA.replace("'ninja'", "'sglang-router'"))
    assert other.rule == "TRI017" and "install sglang-router" in other.fix


def test_quiet_on_a_missing_file_that_is_no_program():
    data = "FileNotFoundError: [Errno 2] No such file or directory: 'config.json'\n"
    assert all(f.rule != "TRI017" for f in _found(data))
    path = "FileNotFoundError: [Errno 2] No such file or directory: '/data/gsm8k/train.parquet'\n"
    assert all(f.rule != "TRI017" for f in _found(path))
    # a bare name that no table knows and no subprocess frame started: a file, not a program
    bare = "FileNotFoundError: [Errno 2] No such file or directory: 'outputs'\n"
    assert all(f.rule != "TRI017" for f in _found(bare))
    warned = "wandb: WARNING Unable to read the repository: [Errno 2] No such file or directory: 'git'\n"
    assert all(f.rule != "TRI017" for f in _found(warned))  # logged as a warning: the run went on


# -- a cut traceback under Ray's header -----------------------------------------------------------

RAY_CUT = """\
ray.exceptions.RayTaskError(ModuleNotFoundError): ray::WorkerDict.actor_rollout_init_model() (pid=10928, ip=10.1.1.104)
  File "/venv/lib/python3.12/site-packages/verl/single_controller/ray/base.py", line 705, in func
    return getattr(self.worker_dict[key], name)(*args, **kwargs)
  File "/venv/lib/python3.12/site-packages/verl/workers/fsdp_workers.py", line 626, in init_model
    self.rollout, self.rollout_sharding_manager = self._build_rollout(
"""


def test_a_cut_traceback_under_rays_header_names_the_exception_it_wraps_still_a_warning():
    f = _one(RAY_CUT)
    assert f.rule == "TRI003" and f.severity == Severity.WARNING
    assert (
        "Ray's header names it a ModuleNotFoundError: an import failed inside verl's init_model" in f.message
    )
    plain = _one(
        RAY_CUT.split("\n", 1)[1].replace(
            '  File "/venv', 'Traceback (most recent call last):\n  File "/venv', 1
        )
    )
    assert plain.rule == "TRI003" and "Ray's header" not in plain.message


# -- a symptom that is its own cause --------------------------------------------------------------


def test_a_prompt_longer_than_max_model_len_is_an_error_without_versions_the_lengths_are_the_cause():
    text = "ValueError: The decoder prompt (length 5120) is longer than the maximum model length of 4096. Make sure that `max_model_len` is no smaller than the number of text tokens.\n"
    f = _one(text)
    assert f.rule == "TRI011" and f.severity == Severity.ERROR and "max_model_len" in f.fix
    # vLLM's V0 skip is a warning in the log, not a crash: still not an error
    skipped = "WARNING 03-19 10:00:00 scheduler.py:700] Input prompt (6768 tokens) is too long and exceeds limit of 4096\n"
    assert all(x.severity != Severity.ERROR for x in _found(skipped))
