"""Knowledge that names failures of any trainer on vLLM: a trainer subclass's override called with
what transformers passes (rules/knowledge/trainer_hooks.yaml), catalogue entries whose symptom
decides the cause (``symptom_decides``), the RL-stack entries of
rules/knowledge/known_failures/rl_stacks.yaml, and the RL stacks named as packages. Each fires on
an excerpt in the shape of a real log and stays quiet where its cause is not there."""

from __future__ import annotations

import pytest

from envdoctor.findings import Severity
from envdoctor.knowledge.failures import KnownFailuresError, parse_entry
from envdoctor.knowledge.schema import KnowledgeError, validate
from envdoctor.triage.traceback import package_of
from tests.triage.helpers import findings, scan_bytes


def _run(text: str):
    return findings(scan_bytes(text))


def _entry_of(f) -> str:
    return str(f.evidence.get("known_failure") or f.evidence.get("signature") or "")


# -- an override called with what transformers passes ----------------------------------------------

OVERRIDE = """Traceback (most recent call last):
  File "/work/r1v/src/open_r1/grpo.py", line 180, in <module>
    trainer.train()
  File "/opt/conda/lib/python3.11/site-packages/transformers/trainer.py", line 2245, in train
    return inner_training_loop(
  File "/opt/conda/lib/python3.11/site-packages/transformers/trainer.py", line 2560, in _inner_training_loop
    tr_loss_step = self.training_step(model, inputs, num_items_in_batch)
  File "/opt/conda/lib/python3.11/site-packages/transformers/trainer.py", line 3736, in training_step
    loss = self.compute_loss(model, inputs, num_items_in_batch=num_items_in_batch)
TypeError: MyVLGRPOTrainer.compute_loss() got an unexpected keyword argument 'num_items_in_batch'
"""


def test_an_override_without_num_items_in_batch_is_drift_with_transformers():
    found = _run(OVERRIDE)
    assert [f.rule for f in found] == ["TRI009"]
    f = found[0]
    assert f.severity == Severity.ERROR
    assert "overrides Trainer.compute_loss() in MyVLGRPOTrainer" in f.message
    assert "from 4.46.0" in f.message
    assert "num_items_in_batch=None" in f.fix and "transformers<4.46.0" in f.fix


def test_an_override_message_cut_inside_the_keyword_is_still_read():
    found = _run(
        "TypeError: Qwen2VLGRPOVLLMTrainer.compute_loss() got an unexpected keyword argument "
        "'num_items_in_bat"
    )
    assert found and found[0].rule == "TRI009" and found[0].severity == Severity.ERROR
    assert "num_items_in_batch" in found[0].message


def test_one_positional_argument_more_than_the_override_takes():
    found = _run("TypeError: CPMTrainer.training_step() takes 3 positional arguments but 4 were given")
    assert found and found[0].rule == "TRI009"
    assert "overrides Trainer.training_step() in CPMTrainer" in found[0].message


@pytest.mark.parametrize(
    "line",
    [
        # a keyword no release of transformers passes to the hook: not this drift
        "TypeError: MyTrainer.compute_loss() got an unexpected keyword argument 'labels_mask'",
        # transformers' own Trainer: not a subclass's override
        "TypeError: Trainer.compute_loss() got an unexpected keyword argument 'num_items_in_batch'",
        # two positional arguments more: another call, not the hook's new one
        "TypeError: CPMTrainer.training_step() takes 3 positional arguments but 5 were given",
        # a model's forward, not a trainer method
        "TypeError: Qwen2VLForConditionalGeneration.forward() got an unexpected keyword argument "
        "'num_items_in_batch'",
    ],
)
def test_no_override_drift_where_the_table_does_not_say_it(line):
    assert not any("overrides Trainer." in f.message for f in _run(line))


# -- symptom_decides: the symptom alone is the entry's failure ---------------------------------------


def test_trl_sampler_override_is_an_error_without_versions():
    found = _run("TypeError: GRPOTrainer._get_train_sampler() takes 1 positional argument but 2 were given")
    assert found[0].severity == Severity.ERROR
    assert "trl-get-train-sampler-transformers-4.52" in found[0].message
    assert "trl>=0.17.0" in found[0].fix


def test_trl_sampler_entry_stays_quiet_when_the_log_shows_a_fixed_trl():
    log = (
        "- TRL version: 0.19.0\n- Transformers version: 4.53.0\n"
        "TypeError: GRPOTrainer._get_train_sampler() takes 1 positional argument but 2 were given\n"
    )
    assert not any("trl-get-train-sampler" in f.message for f in _run(log))


def test_symptom_decides_is_only_for_a_crash_or_a_refusal():
    entry = {
        "id": "x-y",
        "title": "t",
        "kind": "silent-wrong",
        "certainty": "certain",
        "symptom_decides": True,
        "when": {"packages": {"vllm": ">=0.8.0"}},
        "symptoms": ["some symptom"],
        "cause": "c",
        "fix": "f",
        "sources": ["https://github.com/a/b/issues/1"],
    }
    with pytest.raises(KnownFailuresError, match="symptom_decides"):
        parse_entry(entry, "test")
    assert parse_entry({**entry, "kind": "crash"}, "test").symptom_decides is True


def test_trainer_hooks_schema():
    base = {"schema": "envdoctor.knowledge/1"}
    row = {
        "method": "m",
        "argument": "a",
        "since": "4.46.0",
        "fix": "f",
        "how": "keyword",
        "references": ["u"],
    }
    validate("trainer_hooks.yaml", {**base, "trainer_hooks": [row]})
    with pytest.raises(KnowledgeError, match="how"):
        validate("trainer_hooks.yaml", {**base, "trainer_hooks": [{**row, "how": "maybe"}]})
    with pytest.raises(KnowledgeError, match="references"):
        validate("trainer_hooks.yaml", {**base, "trainer_hooks": [{**row, "references": []}]})


# -- the RL-stack entries ----------------------------------------------------------------------------

FIRES = [
    (
        "vllm-v1-worker-extension-cls-0.8.0",
        "(LLMRayActor pid=11) NotImplementedError: "
        "VLLM_USE_V1=1 is not supported with --worker-extension-cls.\n",
        Severity.ERROR,
    ),
    (
        "vllm-config-not-set-in-weight-update",
        "(VllmGenerationWorker pid=7) AssertionError: Current vLLM config is not set.\n",
        Severity.ERROR,
    ),
    (
        "torch-store-port-failed-to-listen",
        "RuntimeError: The server socket has failed to listen on any local network address. "
        "port: 46571, useIpv6: 0, code: -9\n",
        Severity.ERROR,
    ),
    (
        "vllm-load-weights-stacked-name-keyerror",
        'File "vllm/model_executor/models/qwen2.py", line 496, in load_weights\n'
        "    param = params_dict[name]\n"
        "KeyError: 'layers.0.mlp.gate_up_proj.weight'\n",
        # vLLM's load_weights frame shows the code ran, not the release: the fix asks for a vLLM with
        # vllm-project/vllm#39935 (classes._fix_is_a_release), so with no version shown a warning
        Severity.WARNING,
    ),
    (
        "vllm-garbage-after-sleep-level-2",
        "step 12 sample: '!!!!!!!!!!!!!!!!!!!!!!!!'\n",
        Severity.WARNING,
    ),
]


@pytest.mark.parametrize("entry,log,severity", FIRES, ids=[e for e, _, _ in FIRES])
def test_rl_stack_entry_fires(entry, log, severity):
    found = _run(log)
    assert found and entry in found[0].message, [f.message for f in found]
    assert found[0].severity == severity


def test_worker_use_ray_from_a_wrapper_is_the_catalogue_entry():
    log = (
        "ray::LLMRayActor.__init__() (repr=<openrlhf.trainer.ray.vllm_engine.LLMRayActor object at 0x1>)\n"
        ' File "openrlhf/trainer/ray/vllm_engine.py", line 58, in __init__\n'
        " self.llm = vllm.LLM(*args, **kwargs)\n"
        ' File "vllm/utils.py", line 1039, in inner\n'
        " return fn(*args, **kwargs)\n"
        ' File "vllm/entrypoints/llm.py", line 210, in __init__\n'
        " engine_args = EngineArgs(\n"
        "TypeError: EngineArgs.__init__() got an unexpected keyword argument 'worker_use_ray'\n"
    )
    found = _run(log)
    assert found[0].rule in ("TRI009", "TRI011") and found[0].severity == Severity.ERROR
    assert "vllm-engine-args-worker-use-ray-removed" in found[0].message
    assert "vllm<0.7.0" in found[0].fix


def test_worker_use_ray_drift_names_the_wrapper():
    log = (
        "Exception raised in creation task: The actor died because of an error raised in its creation task\n"
        ' File "openrlhf/trainer/ray/vllm_engine.py", line 58, in __init__\n'
        " self.llm = vllm.LLM(*args, **kwargs)\n"
        ' File "vllm/entrypoints/llm.py", line 210, in __init__\n'
        " engine_args = EngineArgs(\n"
        "TypeError: EngineArgs.__init__() got an unexpected keyword argument 'worker_use_ray'\n"
    )
    found = _run(log)
    assert found[0].rule == "TRI009" and "between openrlhf and vllm" in found[0].message


QUIET = [
    # a healthy colocated run: the engine sleeps and wakes, nothing fails
    "INFO 08-27 09:29:24 [gpu_worker.py:81] Sleep mode freed 42.16 GiB memory, "
    "16.79 GiB memory is still in use.\n"
    "INFO 08-27 09:29:24 [executor_base.py:210] It took 1.98 seconds to fall asleep.\n"
    "INFO 08-27 09:29:30 [executor_base.py:226] It took 0.41 seconds to wake up tags ['weights'].\n",
    # the engine's config banner names a worker extension: no refusal
    "INFO 04-21 10:43:17 [core.py:61] Initializing a V1 LLM engine (v0.8.3) with config: "
    "model='Qwen/Qwen2.5-7B', worker_extension_cls='openrlhf.trainer.ray.vllm_worker_wrap.WorkerWrap'\n",
    # the executor backend that replaced worker_use_ray
    "INFO engine args: distributed_executor_backend='ray', tensor_parallel_size=2\n",
    # vLLM 0.11's warning (not yet an assertion) on a log that shows that release
    "INFO 10-01 10:00:00 [__init__.py:216] Automatically detected platform cuda.\n"
    "INFO 10-01 10:00:01 [core.py:77] Initializing a V1 LLM engine (v0.11.0) with config: model='m'\n"
    "WARNING 10-01 10:00:02 [config.py:400] Current vLLM config is not set.\n",
    # the TCP store listening as it should
    "[I socket.cpp:752] [c10d] The server socket has started to listen on [::]:29500.\n",
    # a KeyError of the user's own dict, not vLLM's load_weights
    'File "/home/u/train.py", line 12, in reward\n    return table[name]\n'
    "KeyError: 'layers.0.mlp.gate_up_proj.weight'\n",
    # a short exclamation is no garbage output
    "reward of step 3 improved!!! nice\n",
]


@pytest.mark.parametrize("log", QUIET)
def test_rl_stack_entries_stay_quiet(log):
    ids = {
        "vllm-v1-worker-extension-cls-0.8.0",
        "vllm-engine-args-worker-use-ray-removed",
        "vllm-config-not-set-in-weight-update",
        "torch-store-port-failed-to-listen",
        "vllm-load-weights-stacked-name-keyerror",
        "vllm-garbage-after-sleep-level-2",
    }
    found = _run(log)
    assert not any(i in f.message for f in found for i in ids), [f.message for f in found]


# -- RL stacks are packages ------------------------------------------------------------------------


@pytest.mark.parametrize(
    "path,package",
    [
        ("openrlhf/trainer/ray/vllm_engine.py", "openrlhf"),
        ("/root/Search-R1/verl/trainer/ppo/ray_trainer.py", "verl"),
        ("/opt/nemo_rl_venv/lib/python3.12/site-packages/nemo_rl/models/generation/vllm.py", "nemo-rl"),
        ("/root/ms-swift/swift/trainers/rlhf_trainer/grpo_trainer.py", "ms-swift"),
    ],
)
def test_rl_stacks_are_named_as_packages(path, package):
    assert package_of(path)[0] == package


# -- TRL's release bugs behind a generic message, by their frames ------------------------------------

RANK_IN_TRL = """Traceback (most recent call last):
  File "/home/u/train_grpo.py", line 40, in <module>
    trainer = GRPOTrainer(model=model, args=args, reward_funcs=[r], train_dataset=ds)
  File "/opt/venv/lib/python3.11/site-packages/trl/trainer/grpo_trainer.py", line 657, in __init__
    self.llm = LLM(
  File "/opt/venv/lib/python3.11/site-packages/vllm/executor/uniproc_executor.py", line 112, in _init_executor
    rank = int(os.environ["RANK"])
  File "/usr/lib/python3.11/os.py", line 679, in __getitem__
    raise KeyError(key) from None
KeyError: 'RANK'
"""

RANK_IN_USER_CODE = """Traceback (most recent call last):
  File "/home/u/launch.py", line 8, in <module>
    rank = int(os.environ["RANK"])
  File "/usr/lib/python3.11/os.py", line 679, in __getitem__
    raise KeyError(key) from None
KeyError: 'RANK'
"""


def test_trl_colocate_rank_entry_fires_in_trls_frame():
    found = _run(RANK_IN_TRL)
    assert found and "trl-colocate-python-launch-no-rank" in found[0].message


def test_trl_colocate_rank_entry_stays_quiet_in_the_users_own_frame():
    assert not any("trl-colocate-python-launch-no-rank" in f.message for f in _run(RANK_IN_USER_CODE))


NAN_LOGPROB_IN_REWARD = """Traceback (most recent call last):
  File "/home/u/rewards.py", line 30, in length_reward
    return torch.tensor([score(c) for c in completions])
RuntimeError: Could not infer dtype of NoneType
"""


def test_nan_logprob_entry_stays_quiet_when_the_users_reward_raised_it():
    assert not any("trl-vllm-nan-logprob-none-crash" in f.message for f in _run(NAN_LOGPROB_IN_REWARD))


def test_nan_logprob_entry_fires_in_trls_frame():
    log = (
        'File "/opt/venv/lib/python3.12/site-packages/trl/trainer/grpo_trainer.py", line 2399, '
        "in _generate_and_score_completions\n"
        "    sampling_per_token_logps = [torch.tensor(logps) for logps in sampling_per_token_logps_list]\n"
        "RuntimeError: Could not infer dtype of NoneType\n"
    )
    found = _run(log)
    assert found and "trl-vllm-nan-logprob-none-crash" in found[0].message


# -- certain_with: a line before the symptom settles the cause ------------------------------------


def test_garbage_after_a_level_2_sleep_is_an_error():
    log = (
        "INFO 08-28 10:00:00 [api_server.py:900] POST /sleep?level=2 200 OK\n"
        "INFO 08-28 10:00:05 [api_server.py:900] POST /wake_up 200 OK\n"
        "completion: '!!!!!!!!!!!!!!!!!!!!!!!!'\n"
    )
    found = _run(log)
    assert found and "vllm-garbage-after-sleep-level-2" in found[0].message
    assert found[0].severity == Severity.ERROR and "settles it" in found[0].message


def test_garbage_after_a_level_1_sleep_stays_a_warning():
    log = "INFO POST /sleep?level=1 200 OK\nlog_level=2\ncompletion: '!!!!!!!!!!!!!!!!!!!!!!!!'\n"
    found = _run(log)
    assert found and found[0].severity == Severity.WARNING


def test_certain_with_is_only_for_an_entry_that_depends():
    entry = {
        "id": "x-z",
        "title": "t",
        "kind": "crash",
        "certainty": "certain",
        "certain_with": ["level=2"],
        "when": {"packages": {"vllm": ">=0.8.0"}},
        "symptoms": ["some symptom"],
        "cause": "c",
        "fix": "f",
        "sources": ["https://github.com/a/b/issues/1"],
    }
    with pytest.raises(KnownFailuresError, match="certain_with"):
        parse_entry(entry, "test")
    ok = parse_entry(
        {**entry, "certainty": "depends", "depends_on": "model", "evidence": "e", "note": "n"}, "test"
    )
    assert [s.text for s in ok.certain_with] == ["level=2"]


def test_a_log_shows_the_rl_stacks_versions():
    from envdoctor.triage.logversions import from_log

    got = {k: v.version for k, v in from_log(b"openrlhf==0.9.4\nvllm==0.16.0\nverl==0.5.0\n", []).items()}
    assert got["openrlhf"] == "0.9.4" and got["verl"] == "0.5.0" and got["vllm"] == "0.16.0"


def test_an_override_of_trls_own_trainer_is_trls_drift():
    found = _run("TypeError: XPOTrainer.training_step() takes 3 positional arguments but 4 were given")
    assert found and found[0].rule == "TRI009"
    assert "between trl and transformers" in found[0].message
