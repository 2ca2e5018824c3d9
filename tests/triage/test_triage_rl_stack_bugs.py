# ruff: noqa: E501  (log excerpts keep their real line lengths)
"""Catalogue entries of the RL stacks around TRL and vLLM (rules/knowledge/known_failures/
rl_stack_bugs.yaml): each fires on a log in the stack's own traceback shape, as an error where the
symptom decides the cause, and stays quiet on a look-alike; a package's vendored copy of another
(``verl/third_party/vllm``) is the outer package's code; the stacks' versions are read from logs."""

from __future__ import annotations

import pytest

from envdoctor.findings import Severity
from envdoctor.triage.traceback import package_of
from tests.triage.helpers import findings, scan_bytes


def _run(text: str):
    return findings(scan_bytes(text))


def _ids(found) -> list[str]:
    """The catalogue entry each finding names (its evidence, or a drift's message)."""
    return [f"{f.evidence.get('known_failure') or ''} {f.message}" for f in found]


VERL_VLLM_REFUSED = """(main_task pid=4102) Traceback (most recent call last):
  File "/data/u/TinyZero/verl/trainer/main_ppo.py", line 103, in main
    run_ppo(config)
  File "/data/u/TinyZero/verl/workers/fsdp_workers.py", line 297, in _build_rollout
    from verl.workers.rollout.vllm_rollout import vLLMRollout
  File "/data/u/TinyZero/verl/workers/rollout/vllm_rollout/vllm_rollout.py", line 39, in <module>
    from verl.third_party.vllm import LLM, vllm_version
  File "/data/u/TinyZero/verl/third_party/vllm/__init__.py", line 47, in <module>
    raise ValueError(
ValueError: vllm version 0.8.5.post1 not supported. Currently supported versions are 0.3.1, 0.4.2, 0.5.4 and 0.6.3.
"""

VERL_VLLM_REFUSED_SGLANG = (
    '  File "/opt/venv/lib/python3.10/site-packages/verl/third_party/vllm/__init__.py", line 44, in <module>\n'
    "    raise ValueError(\n"
    "ValueError: vllm version 0.6.4 not supported and SGLang also not Found. Currently supported vllm "
    "versions are 0.6.3 and 0.7.0+\n"
)

SWIFT_EXTENSION = """[INFO:swift] Currently, rollout only supports the vLLM backend. Set vLLM backend
Traceback (most recent call last):
  File "/root/ms-swift/swift/cli/rollout.py", line 5, in <module>
    rollout_main()
  File "/root/ms-swift/swift/llm/infer/rollout.py", line 233, in rollout_main
    SwiftRolloutDeploy(args).main()
  File "/root/ms-swift/swift/llm/infer/infer_engine/vllm_engine.py", line 171, in _prepare_engine
    engine = llm_engine_cls.from_engine_args(self.engine_args)
  File "/root/ms-swift/swift/llm/infer/infer_engine/vllm_engine.py", line 150, in _prepare_engine_kwargs
    engine_args = engine_cls(**engine_kwargs)
TypeError: EngineArgs.__init__() got an unexpected keyword argument 'worker_extension_cls'
"""

TRL_EXTENSION = """Traceback (most recent call last):
  File "/opt/conda/lib/python3.11/site-packages/trl/scripts/vllm_serve.py", line 284, in llm_worker
    llm = LLM(
  File "/opt/conda/lib/python3.11/site-packages/vllm/utils.py", line 1022, in inner
    return fn(*args, **kwargs)
  File "/opt/conda/lib/python3.11/site-packages/vllm/entrypoints/llm.py", line 236, in __init__
    engine_args = EngineArgs(
TypeError: EngineArgs.__init__() got an unexpected keyword argument 'worker_extension_cls'
"""

VERL_MINI_BATCH = """ray.exceptions.RayTaskError(AssertionError): ray::WorkerDict.actor_rollout_init_model() (pid=811, ip=10.1.0.2, repr=<verl.single_controller.ray.base.WorkerDict object at 0x7f00>)
  File "/opt/venv/lib/python3.10/site-packages/verl/single_controller/ray/base.py", line 466, in func
    return getattr(self.worker_dict[key], name)(*args, **kwargs)
  File "/opt/venv/lib/python3.10/site-packages/verl/workers/fsdp_workers.py", line 141, in __init__
    assert self.config.actor.ppo_mini_batch_size > 0, f"ppo_mini_batch_size {self.config.actor.ppo_mini_batch_size} should be larger than 0 after normalization"
AssertionError: ppo_mini_batch_size 0 should be larger than 0 after normalization
"""

FIRES = [
    ("verl-third-party-vllm-version-refused", VERL_VLLM_REFUSED),
    ("verl-third-party-vllm-version-refused", VERL_VLLM_REFUSED_SGLANG),
    ("rl-stack-worker-extension-cls-vllm-before-0.8", SWIFT_EXTENSION),
    ("rl-stack-worker-extension-cls-vllm-before-0.8", "vllm==0.7.3\n" + SWIFT_EXTENSION),
    ("verl-ppo-mini-batch-zero-after-normalization", VERL_MINI_BATCH),
]


@pytest.mark.parametrize("entry,log", FIRES, ids=[f"{e}-{i}" for i, (e, _) in enumerate(FIRES)])
def test_rl_stack_bug_fires_as_an_error(entry, log):
    found = _run(log)
    assert found and entry in _ids(found)[0], [f.message for f in found]
    assert found[0].severity == Severity.ERROR


QUIET = [
    # another package's own refusal of a vLLM release, in other words
    (
        "verl-third-party-vllm-version-refused",
        '  File "/opt/venv/lib/python3.10/site-packages/lmdeploy/serve/vl.py", line 12, in <module>\n'
        "    raise ValueError(msg)\n"
        "ValueError: vllm version 0.5.0 not supported by this backend\n",
    ),
    # TRL's own server: TRL's entry, not the other stacks'
    ("rl-stack-worker-extension-cls-vllm-before-0.8", TRL_EXTENSION),
    # the log shows a vLLM that takes the argument: not this cause
    ("rl-stack-worker-extension-cls-vllm-before-0.8", "vllm==0.8.5.post1\n" + SWIFT_EXTENSION),
    # verl's other normalization check (the micro batch does not divide the mini batch)
    (
        "verl-ppo-mini-batch-zero-after-normalization",
        VERL_MINI_BATCH.replace(
            "AssertionError: ppo_mini_batch_size 0 should be larger than 0 after normalization",
            "AssertionError: normalized ppo_mini_batch_size 32 should be divisible by "
            "ppo_micro_batch_size_per_gpu 6",
        ),
    ),
]


@pytest.mark.parametrize("entry,log", QUIET, ids=[f"{e}-{i}" for i, (e, _) in enumerate(QUIET)])
def test_rl_stack_bug_stays_quiet_on_a_look_alike(entry, log):
    assert not any(entry in i for i in _ids(_run(log)))


def test_trls_server_keeps_trls_entry_and_fix():
    found = _run(TRL_EXTENSION)
    assert found and "trl-vllm-serve-worker-extension-cls-vllm-0.7" in found[0].message
    assert "trl[vllm]" in found[0].fix


def test_the_fix_of_the_swift_entry_is_the_vllm_release():
    found = _run(SWIFT_EXTENSION)
    assert "vllm>=0.8.3" in found[0].fix and "trl" not in found[0].fix


def test_the_verl_refusal_is_verls_own_check_not_vllms():
    found = _run(VERL_VLLM_REFUSED)
    assert "vLLM refused" not in found[0].message
    assert "vllm==0.6.3" in found[0].fix


@pytest.mark.parametrize(
    "path,package,inner",
    [
        ("/data/u/TinyZero/verl/third_party/vllm/__init__.py", "verl", "third_party/vllm/__init__.py"),
        (
            "/opt/venv/lib/python3.10/site-packages/verl/third_party/vllm/vllm_v_0_6_3/llm.py",
            "verl",
            "third_party/vllm/vllm_v_0_6_3/llm.py",
        ),
        ("/home/u/vllm/vllm/entrypoints/llm.py", "vllm", "entrypoints/llm.py"),
        ("/home/u/SkyRL/skyrl-train/skyrl_train/workers/worker.py", "skyrl-train", "workers/worker.py"),
    ],
)
def test_a_vendored_copy_belongs_to_the_package_that_ships_it(path, package, inner):
    assert package_of(path) == (package, inner)


@pytest.mark.parametrize(
    "text,name,version",
    [
        (b"verl                              0.4.1\n", "verl", "0.4.1"),
        (b"ms-swift                          3.5.2\n", "ms-swift", "3.5.2"),
        (b"skyrl-train                       0.2.0\n", "skyrl-train", "0.2.0"),
        (b"nemo-rl==0.3.1\n", "nemo-rl", "0.3.1"),
        (b"openrlhf 0.8.5\n", "openrlhf", "0.8.5"),
        (
            b'  File "/opt/conda/lib/python3.10/site-packages/verl-0.4.1-py3.10.egg/verl/trainer/main_ppo.py",'
            b" line 3, in main\n",
            "verl",
            "0.4.1",
        ),
        (
            b"==((====))==  Unsloth 2025.3.19: Fast Qwen2 patching. Transformers: 4.50.0. vLLM: 0.8.2.\n",
            "unsloth",
            "2025.3.19",
        ),
    ],
)
def test_the_stacks_versions_are_read_from_a_log(text, name, version):
    from envdoctor.triage.logversions import from_log

    assert from_log(text, [])[name].version == version


UNSLOTH_DYNAMIC = """🦥 Unsloth Zoo will now patch everything to make training faster!
Traceback (most recent call last):
  File "/content/train.py", line 4, in <module>
    from unsloth import FastLanguageModel, PatchFastRL
  File "/usr/local/lib/python3.11/dist-packages/unsloth/models/rl.py", line 771, in PatchFastRL
    patch_trl_rl_trainers()
  File "/usr/local/lib/python3.11/dist-packages/unsloth/models/rl.py", line 590, in _patch_trl_rl_trainers
    created_module = create_new_function(
  File "/usr/local/lib/python3.11/dist-packages/unsloth_zoo/compiler.py", line 262, in create_new_function
    raise RuntimeError(f"Unsloth: Failed to create dynamic compiled modules!")
RuntimeError: Unsloth: Failed to create dynamic compiled modules!
"""


def _banner(version: str) -> str:
    return f"==((====))==  Unsloth {version}: Fast Qwen2 patching. Transformers: 4.49.0. vLLM: 0.7.3.\n"


@pytest.mark.parametrize(
    "log,severity",
    [
        (_banner("2025.3.6") + UNSLOTH_DYNAMIC, Severity.ERROR),  # the log's release is the entry's
        (UNSLOTH_DYNAMIC, Severity.WARNING),  # the cause hinges on the release, which the log hides
    ],
)
def test_unsloth_compiled_modules_entry_by_certainty(log, severity):
    found = _run(log)
    assert found and "unsloth-2025.3-dynamic-compiled-modules" in _ids(found)[0]
    assert found[0].severity == severity
    assert "unsloth>=2025.3.8" in found[0].fix


def test_unsloth_compiled_modules_entry_stays_quiet_on_a_fixed_release():
    found = _run(_banner("2025.6.1") + UNSLOTH_DYNAMIC)
    assert not any("unsloth-2025.3-dynamic-compiled-modules" in i for i in _ids(found))


def test_trls_model_executor_entry_stays_quiet_on_another_stacks_traceback():
    log = (
        "(LLMRayActor pid=8810) ray::LLMRayActor.init_process_group() (repr=<openrlhf.trainer.ray.vllm_engine.LLMRayActor>)\n"
        '(LLMRayActor pid=8810)   File "/opt/venv/lib/python3.11/site-packages/openrlhf/trainer/ray/vllm_engine.py", '
        "line 61, in init_process_group\n"
        "(LLMRayActor pid=8810)     return self.llm.collective_rpc(\n"
        '(LLMRayActor pid=8810)   File "/opt/venv/lib/python3.11/site-packages/vllm/entrypoints/llm.py", '
        "line 497, in collective_rpc\n"
        "(LLMRayActor pid=8810)     executor = self.llm_engine.model_executor\n"
        "(LLMRayActor pid=8810) AttributeError: 'LLMEngine' object has no attribute 'model_executor'\n"
    )
    assert not any("trl-legacy-vllm-v1-no-model-executor" in i for i in _ids(_run(log)))
    bare = _run("AttributeError: 'LLMEngine' object has no attribute 'model_executor'\n")
    assert bare and "trl-legacy-vllm-v1-no-model-executor" in _ids(bare)[0]


@pytest.mark.parametrize(
    "log",
    [
        # another AttributeError in TRL's code is not the model_executor entry
        (
            '  File "/opt/env/lib/python3.11/site-packages/trl/trainer/grpo_config.py", line 225, in GRPOConfig\n'
            '    _VALID_DICT_FIELDS = TrainingArguments._VALID_DICT_FIELDS + ["model_init_kwargs"]\n'
            "AttributeError: type object 'TrainingArguments' has no attribute '_VALID_DICT_FIELDS'\n"
        ),
        # another TypeError in ms-swift's engine setup is not the worker_extension_cls entry
        SWIFT_EXTENSION.replace(
            "EngineArgs.__init__() got an unexpected keyword argument 'worker_extension_cls'",
            "'NoneType' object is not subscriptable",
        ),
    ],
)
def test_a_frame_entry_needs_its_message_not_only_its_frame(log):
    ids = " ".join(_ids(_run(log)))
    assert "trl-legacy-vllm-v1-no-model-executor" not in ids
    assert "worker-extension-cls" not in ids


DS_BATCH = """(ActorModelRayActor pid=5121)   File "/opt/venv/lib/python3.10/site-packages/openrlhf/utils/deepspeed/deepspeed.py", line 130, in _ds_init_train_model
(ActorModelRayActor pid=5121)     engine, optim, _, scheduler = deepspeed.initialize(
(ActorModelRayActor pid=5121)   File "/opt/venv/lib/python3.10/site-packages/deepspeed/runtime/config.py", line 938, in _batch_assertion
(ActorModelRayActor pid=5121)     assert train_batch == micro_batch * grad_acc * self.world_size, (
(ActorModelRayActor pid=5121) AssertionError: Check batch related parameters. train_batch_size is not equal to micro_batch_per_gpu * gradient_acc_step * world_size 128 != 4 * 4 * 7
"""


@pytest.mark.parametrize(
    "log",
    [
        DS_BATCH,
        # a rich traceback wraps the message at the terminal's width
        "AssertionError: Check batch related parameters. train_batch_size is not\n"
        "equal to micro_batch_per_gpu * gradient_acc_step * world_size 64 != 4 *\n8 * 1\n",
    ],
)
def test_deepspeed_batch_assertion_is_an_error(log):
    found = _run(log)
    assert found and "deepspeed-train-batch-not-micro-times-accumulation-times-world" in _ids(found)[0]
    assert found[0].severity == Severity.ERROR
    assert "--micro_train_batch_size" in found[0].fix and '"auto"' in found[0].fix


def test_deepspeed_batch_entry_stays_quiet_on_its_other_checks():
    found = _run("AssertionError: Micro batch size per gpu: 0 has to be greater than 0\n")
    assert not any("deepspeed-train-batch-not-micro" in i for i in _ids(found))


UNSLOTH_V1 = """Traceback (most recent call last):
  File "/home/u/envs/uns/lib/python3.11/site-packages/unsloth_zoo/vllm_utils.py", line 398, in get_vllm_state_dict
    vllm_internals = llm_engine.model_executor.driver_worker.model_runner.model
AttributeError: 'LLMEngine' object has no attribute 'model_executor'
"""


def test_unsloths_v1_engine_entry_is_an_error_in_its_own_frame():
    found = _run(UNSLOTH_V1)
    assert found and "unsloth-zoo-vllm-state-dict-v1-engine" in _ids(found)[0]
    assert found[0].severity == Severity.ERROR
    assert "unsloth_zoo" in found[0].fix and "vllm==0.7.3" in found[0].fix
    # and quiet where the log shows a vLLM before the V1 engine
    old = _run("vllm==0.7.3\n" + UNSLOTH_V1)
    assert not any("unsloth-zoo-vllm-state-dict-v1-engine" in i for i in _ids(old))
    # and on TRL's own read of the same attribute
    trl = UNSLOTH_V1.replace("unsloth_zoo/vllm_utils.py", "trl/trainer/grpo_trainer.py").replace(
        "get_vllm_state_dict", "_move_model_to_vllm"
    )
    assert not any("unsloth-zoo-vllm-state-dict-v1-engine" in i for i in _ids(_run(trl)))


VERL_TP = """ray.exceptions.RayTaskError(AssertionError): ray::WorkerDict.actor_rollout_init_model() (pid=2210, ip=10.2.0.4, repr=<verl.single_controller.ray.base.WorkerDict object at 0x7f2a>)
  File "/usr/local/lib/python3.10/dist-packages/verl/workers/fsdp_workers.py", line 612, in init_model
    self.rollout, self.rollout_sharding_manager = self._build_rollout(
  File "/usr/local/lib/python3.10/dist-packages/verl/workers/fsdp_workers.py", line 421, in _build_rollout
    assert self.world_size % infer_tp == 0, f"rollout world_size: {self.world_size} is not divisible by infer_tp: {infer_tp}"
AssertionError: rollout world_size: 1 is not divisible by infer_tp: 2
"""


def test_verl_rollout_tp_entry_is_an_error_and_names_the_key():
    found = _run(VERL_TP)
    assert found and "verl-rollout-tp-larger-than-world" in _ids(found)[0]
    assert found[0].severity == Severity.ERROR
    assert "actor_rollout_ref.rollout.tensor_model_parallel_size=1" in found[0].fix


def test_verl_rollout_tp_entry_stays_quiet_on_megatrons_own_check():
    log = "RuntimeError: world_size (8) is not equal to tensor_model_parallel_size (4) x pipeline_model_parallel_size (1)\n"
    assert not any("verl-rollout-tp-larger-than-world" in i for i in _ids(_run(log)))


SWIFT_INFER_RANK = """[rank3]: Traceback (most recent call last):
[rank3]:   File "/opt/venv/lib/python3.10/site-packages/swift/trainers/rlhf_trainer/grpo_trainer.py", line 360, in _prefetch
[rank3]:     if self.infer_rank >= 0:
[rank3]:   File "/opt/venv/lib/python3.10/site-packages/swift/trainers/rlhf_trainer/grpo_trainer.py", line 251, in infer_rank
[rank3]:     assert local_world_size + self.args.num_infer_workers == get_device_count()
[rank3]: AssertionError
"""


def test_ms_swift_dev_infer_rank_assertion_is_an_error():
    found = _run(SWIFT_INFER_RANK)
    assert found and "ms-swift-3.2.0.dev-grpo-infer-rank-assert" in _ids(found)[0]
    assert found[0].severity == Severity.ERROR and "ms-swift>=3.2.0" in found[0].fix


def test_ms_swift_infer_rank_entry_stays_quiet_on_its_other_assertion():
    other = SWIFT_INFER_RANK.replace(
        "assert local_world_size + self.args.num_infer_workers == get_device_count()",
        "assert local_world_size % self.args.num_infer_workers == 0",
    )
    assert not any("ms-swift-3.2.0.dev-grpo-infer-rank-assert" in i for i in _ids(_run(other)))


def test_the_gather_hang_entry_takes_a_hang_not_any_line_naming_a_gather():
    """TRL 0.15 + vLLM 0.7.3 may hang while gathering: a NameError on ``gather_object`` in that
    stack is no hang (TRI014's release bug), a collective timed out in an all-gather is."""
    name_error = (
        "trl 0.15.1, vllm 0.7.3\nTraceback (most recent call last):\n"
        '  File "/usr/lib/python3.10/site-packages/trl/trainer/grpo_trainer.py", line 500, in _prepare_inputs\n'
        "    all_prompts_text = gather_object(prompts_text)\n"
        "NameError: name 'gather_object' is not defined\n"
    )
    found = findings(scan_bytes(name_error))
    assert [f.rule for f in found] == ["TRI014"] and "gather_object" in found[0].message


DDP_TWICE = (
    "[rank3]: RuntimeError: Expected to mark a variable ready only once. This error is caused by one of "
    "the following reasons: 1) Use of a module parameter outside the `forward` function. 2) Reused "
    "parameters in multiple reentrant backward passes.\n"
)


def test_ddp_marking_a_parameter_ready_twice_is_reentrant_checkpointing_with_its_fix():
    f = findings(scan_bytes(DDP_TWICE))[0]
    assert f.rule == "TRI011" and f.severity.value == "error"
    assert "use_reentrant: false" in f.fix


def test_the_ddp_reentrant_entry_is_triage_only_so_check_says_nothing_of_a_checkpointing_config():
    """Gradient checkpointing under DDP mostly trains: only a reused parameter in the run's backward
    fails, so `check` (which reads the checkable entries) never reports it."""
    from envdoctor.knowledge.catalogue import load_checkable_failures, load_known_failures

    assert any(e.id == "ddp-reentrant-gradient-checkpointing" for e in load_known_failures())
    assert all(e.id != "ddp-reentrant-gradient-checkpointing" for e in load_checkable_failures())
