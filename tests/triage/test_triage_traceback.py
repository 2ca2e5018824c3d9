# ruff: noqa: E501 - log lines are quoted as programs print them
"""The traceback model (frames, packages, chains, pasted shapes) and the boundary diagnosis built
on it: API drift between two packages (TRI009), catalogue entries located by their frames (TRI011),
severity by certainty."""

from __future__ import annotations

from envdoctor.findings import Severity
from envdoctor.triage import boundary
from envdoctor.triage.traceback import failure, package_of, parse
from tests.triage.helpers import findings, scan_bytes

VLLM_WORKER = """\
(EngineCore_DP0 pid=7) ERROR 03-26 11:12:49 [core.py:343] EngineCore hit an exception: Traceback (most recent call last):
(EngineCore_DP0 pid=7) ERROR 03-26 11:12:49 [core.py:343]   File "/opt/conda/lib/python3.11/site-packages/vllm/v1/engine/core.py", line 335, in run_engine_core
(EngineCore_DP0 pid=7) ERROR 03-26 11:12:49 [core.py:343]     engine_core = EngineCoreProc(*args, **kwargs)
(VllmWorker rank=0 pid=9) ERROR 03-26 11:12:49 [multiproc_executor.py:9]   File "/opt/conda/lib/python3.11/site-packages/vllm/attention/backends/abstract.py", line 59, in get_state_cls
(VllmWorker rank=0 pid=9) ERROR 03-26 11:12:49 [multiproc_executor.py:9]     raise NotImplementedError
(VllmWorker rank=0 pid=9) ERROR 03-26 11:12:49 [multiproc_executor.py:9] NotImplementedError
"""

CHAINED = """\
> Traceback (most recent call last):
>   File "/x/site-packages/vllm/model_executor/models/qwen2.py", line 10, in load
>     raise KeyError(name)
> KeyError: 'lm_head.weight'
>
> The above exception was the direct cause of the following exception:
>
> Traceback (most recent call last):
>   File "/home/u/train.py", line 3, in <module>
>     main()
>   File "/x/dist-packages/trl/trainer/grpo_trainer.py", line 900, in _move_model_to_vllm
>     llm_model.load_weights(state_dict.items())
> RuntimeError: weights could not be loaded
"""


def test_package_of_paths():
    assert package_of("/usr/lib/python3.11/site-packages/trl/trainer/grpo_trainer.py") == (
        "trl",
        "trainer/grpo_trainer.py",
    )
    assert package_of("/usr/local/lib/python3.10/dist-packages/unsloth_zoo/vllm_utils.py")[0] == "unsloth-zoo"
    assert package_of("/x/site-packages/liger_kernel/chunked_loss/grpo_loss.py")[0] == "liger-kernel"
    assert (
        package_of("/x/site-packages/vllm-0.10.1.dev73-py3.12-linux-x86_64.egg/vllm/v1/engine/core.py")[0]
        == "vllm"
    )
    assert package_of("/proj/.libraries/transformers/src/transformers/trainer.py")[0] == "transformers"
    assert package_of("<frozen importlib._bootstrap>")[0] is None
    assert package_of("/home/u/train.py")[0] is None
    # a fine-tuning framework's source checkout is the framework's code, not the user's
    assert package_of("/home/u/LLaMA-Factory/src/llamafactory/train/dpo/trainer.py")[0] == "llamafactory"
    assert package_of("/work/axolotl/src/axolotl/core/trainers/base.py")[0] == "axolotl"
    assert package_of("/ws/Megatron-LM/megatron/core/optimizer/__init__.py")[0] == "megatron"
    # ... but its name as a folder of another package is that package's (ms-swift's megatron/)
    assert package_of("/ws/ms-swift/swift/megatron/trainers/grpo_trainer.py")[0] == "ms-swift"
    assert package_of("/ws/verl/verl/utils/megatron/optimizer.py")[0] == "verl"


def test_vllm_process_prefixes_and_bare_exception():
    tb = parse(VLLM_WORKER.splitlines())[-1]
    assert tb.exc_type == "NotImplementedError"
    assert [(f.package, f.function) for f in tb.frames] == [
        ("vllm", "run_engine_core"),
        ("vllm", "get_state_cls"),
    ]
    assert tb.frames[-1].code == "raise NotImplementedError"


def test_chained_and_quoted():
    tbs = parse(CHAINED.splitlines())
    assert len(tbs) == 1
    tb = tbs[0]
    assert tb.exc_type == "RuntimeError" and tb.cause == "direct cause"
    assert [t.exc_type for t in tb.all()] == ["KeyError", "RuntimeError"]
    assert tb.frames[-1].package == "trl" and tb.frames[-1].function == "_move_model_to_vllm"


def test_ipython_and_colab_frames():
    text = [
        "File ~/.conda/envs/b/lib/python3.11/site-packages/transformers/trainer.py:2206, in Trainer.train(self)",
        "[/usr/local/lib/python3.11/dist-packages/unsloth_zoo/vllm_utils.py](https://localhost:8080/#) in patch_vllm_lora_tokenizer()",
    ]
    tb = failure(
        text, "ModuleNotFoundError: No module named 'vllm.transformers_utils.tokenizer_group.tokenizer_group'"
    )
    assert tb is not None and [f.package for f in tb.frames] == ["transformers", "unsloth-zoo"]
    b = boundary.find(tb)
    assert b is not None and (b.caller, b.callee) == ("unsloth-zoo", "vllm")


def test_old_ipython_frames_take_line_and_code_from_the_arrow():
    text = [
        "ValueError                                Traceback (most recent call last)",
        "<ipython-input-7-3f1c2b> in <cell line: 0>()",
        "----> 1 trainer.train()",
        "",
        "/usr/local/lib/python3.11/dist-packages/transformers/trainer.py in train(self, trial, **kwargs)",
        "   2240                 hf_hub_utils.enable_progress_bars()",
        "-> 2242             return inner_training_loop(",
        "",
        "/usr/local/lib/python3.11/dist-packages/trl/trainer/grpo_trainer.py in compute_loss(self, model)",
        "    980         if self.use_vllm:",
        "--> 982             x = inputs['prompt_ids']",
        "    983         y = 1",
    ]
    tb = failure(text, "TypeError: list indices must be integers or slices, not str")
    assert tb is not None
    assert [(f.package, f.function, f.line) for f in tb.frames] == [
        ("transformers", "train", 2242),
        ("trl", "compute_loss", 982),
    ]
    assert tb.frames[-1].code == "x = inputs['prompt_ids']"


def test_missing_package_is_not_drift():
    tb = failure(
        ['  File "/home/u/train.py", line 1, in <module>'], "ModuleNotFoundError: No module named 'vllm'"
    )
    assert tb is not None and boundary.find(tb) is None


def test_boundary_kinds():
    # a keyword the callee's frames refuse, entered from TRL's frame
    tb = failure(
        [
            'File "/s/site-packages/trl/scripts/vllm_serve.py", line 200, in llm_worker',
            "llm = LLM(model=m, worker_extension_cls=x)",
            'File "/s/site-packages/vllm/entrypoints/llm.py", line 240, in __init__',
            "engine_args = EngineArgs(**kwargs)",
        ],
        "TypeError: EngineArgs.__init__() got an unexpected keyword argument 'worker_extension_cls'",
    )
    b = boundary.find(tb)
    assert b is not None and (b.caller, b.callee) == ("trl", "vllm")
    assert b.caller_frame is not None and b.caller_frame.function == "llm_worker"
    # an attribute of a trainer that its parent class (transformers' Trainer) sets
    tb = failure(
        ['File "/s/site-packages/trl/trainer/grpo_trainer.py", line 1300, in _compute_loss'],
        "AttributeError: 'GRPOTrainer' object has no attribute 'current_gradient_accumulation_steps'",
    )
    b = boundary.find(tb)
    assert b is not None and (b.caller, b.callee) == ("trl", "transformers")
    # nn.Module's and PEFT's __getattr__ delegate the lookup: they raise for the frame that read
    # the attribute, which is the reader (here cut off: no boundary, not torch against peft)
    lookup = [
        'File "/s/site-packages/peft/peft_model.py", line 824, in __getattr__',
        "return super().__getattr__(name)",
        'File "/s/site-packages/torch/nn/modules/module.py", line 1931, in __getattr__',
        "raise AttributeError(",
    ]
    message = "AttributeError: 'PeftModelForCausalLM' object has no attribute 'vllm_engine'"
    assert boundary.find(failure(lookup, message)) is None
    reader = [
        'File "/s/site-packages/trl/trainer/grpo_trainer.py", line 700, in _generate',
        "x = self.model.vllm_engine",
    ]
    b = boundary.find(failure(reader + lookup, message))
    assert b is not None and b.caller == "trl" and b.caller_frame.function == "_generate"
    # an error of the user's own code is no boundary
    tb = failure(
        ['File "/home/u/r.py", line 3, in f'], "TypeError: f() missing 1 required positional argument: 'x'"
    )
    assert boundary.find(tb) is None
    # a ValueError is not drift
    tb = failure(['File "/s/site-packages/trl/x.py", line 3, in f'], "ValueError: bad")
    assert boundary.find(tb) is None


DRIFT_LOG = """\
trl==0.21.0
transformers==4.54.1
Traceback (most recent call last):
  File "/proj/train.py", line 17, in <module>
    trainer.train()
  File "/usr/lib/python3.11/site-packages/transformers/trainer.py", line 2233, in train
    return inner_training_loop(
  File "/usr/lib/python3.11/site-packages/trl/trainer/grpo_trainer.py", line 1300, in _compute_loss
    loss = loss / self.current_gradient_accumulation_steps
AttributeError: 'GRPOTrainer' object has no attribute 'current_gradient_accumulation_steps'
"""


def test_drift_finding_names_both_sides_and_an_exact_pair():
    found = findings(scan_bytes(DRIFT_LOG))
    assert [f.rule for f in found] == ["TRI009"]
    f = found[0]
    assert f.severity == Severity.ERROR
    assert (
        "trl and transformers" in f.message
        and "trl 0.21.0" in f.message
        and "transformers 4.54.1" in f.message
    )
    assert "_compute_loss" in f.message
    assert "==" in f.fix  # an exact release, never a bare name
    # transformers 4.55.0's Trainer sets it (the symbol history): not drift of that release
    (g,) = findings(scan_bytes(DRIFT_LOG.replace("4.54.1", "4.55.0")))
    assert g.rule == "TRI003" and "not API drift of transformers" in g.message


def test_unknown_pair_is_a_warning_that_says_so():
    log = (
        "[/usr/local/lib/python3.11/dist-packages/unsloth_zoo/vllm_utils.py](https://localhost:8080/#) in "
        "patch_vllm_lora_tokenizer()\n"
        "ModuleNotFoundError: No module named 'vllm.transformers_utils.tokenizer_group.tokenizer_group'\n"
    )
    found = findings(scan_bytes(log))
    assert [f.rule for f in found] == ["TRI009"]
    # an import of a module inside another package is drift whatever the pair (an error); no
    # requirements of the pair are known, vLLM's symbol history answers: the module's release
    assert found[0].severity == Severity.ERROR and "pip install 'vllm<0.8.5'" in found[0].fix


FRAMED_3633 = """\
[rank0]: Traceback (most recent call last):
[rank0]:   File "/home/u/train_grpo.py", line 50, in <module>
[rank0]:     trainer.train()
[rank0]:   File "/home/u/.venv/lib/python3.11/site-packages/trl/trainer/grpo_trainer.py", line 1120, in _generate_and_score_completions
[rank0]:     sampling_params = SamplingParams(**kw)
[rank0]: TypeError: 'NoneType' object is not iterable
"""


def test_catalogue_entry_located_by_its_frame():
    # the frame without versions: the entry, as a warning (it hinges on TRL 0.19.0)
    found = findings(scan_bytes(FRAMED_3633))
    assert found[0].rule == "TRI011" and found[0].severity == Severity.WARNING
    assert "trl-0.19.0-colocate-generation-kwargs-none" in found[0].message
    assert "_generate_and_score_completions" in found[0].message
    # with the log's TRL 0.19.0: an error
    found = findings(scan_bytes("trl==0.19.0\n" + FRAMED_3633))
    assert found[0].rule == "TRI011" and found[0].severity == Severity.ERROR
    # another TRL: not this entry
    found = findings(scan_bytes("trl==0.20.0\n" + FRAMED_3633))
    assert "trl-0.19.0-colocate" not in found[0].message
    # the generic message in another function, no versions: no diagnosis from the catalogue
    other = FRAMED_3633.replace("_generate_and_score_completions", "_prepare_inputs")
    found = findings(scan_bytes(other))
    assert found[0].rule == "TRI003"


def test_versionless_entry_is_an_error_without_versions():
    found = findings(scan_bytes("ValueError: Unknown loss type: dapo\n"))
    assert found[0].rule == "TRI011" and found[0].severity == Severity.ERROR
    # one whose fix is a release is no error without the log's versions, an error with them
    # (seed_worker's message shows its pairing itself: tests/triage/test_triage_certainty.py)
    names = "KeyError: 'visual.patch_embed.proj.weight'\n"  # heldout-2026-11-29d/logs12b/006
    found = findings(scan_bytes(names))
    assert found[0].severity != Severity.ERROR
    found = findings(scan_bytes("My current setup is `vllm==0.8.5` and `transformers==4.52.4`.\n" + names))
    assert found[0].rule == "TRI011" and found[0].severity == Severity.ERROR
    assert "vllm-qwen2-vl-transformers-4.52-weight-names" in found[0].message


def test_healthy_log_gets_no_finding():
    from tests.triage.helpers import LOGS, scan_log

    assert findings(scan_log("healthy.log")) == []
    assert (LOGS / "healthy.log").exists()


def test_error_lines_in_other_shapes():
    # a message without its class prefix, in an issue's own words
    found = findings(
        scan_bytes("I ran GRPO with Liger and got\n\n    Unknown loss type: dapo\n\nany idea?\n")
    )
    assert found[0].rule == "TRI011" and "liger-grpo-loss-unknown-loss-type-dapo" in found[0].message
    # prose with a full-width colon
    found = findings(scan_bytes("训练报错 error：size mismatch, got input (2048), vec (0)\n"))
    assert found and found[0].rule == "TRI011" and "size mismatch" in found[0].message
    # a short or generic word in prose is no failure
    assert findings(scan_bytes("all gather done; the size mismatch check passed\n")) == []


# -- TRL's own configuration checks (TRI012) ---------------------------------------------------------

REFUSAL = (
    "[rank0]: Traceback (most recent call last):\n"
    '[rank0]:   File "/home/u/train.py", line 143, in <module>\n'
    "[rank0]:     trainer = GRPOTrainer(\n"
    '[rank0]:   File "/env/lib/python3.11/site-packages/trl/trainer/grpo_trainer.py", line 346, in __init__\n'
    "[rank0]:     raise ValueError(\n"
    "[rank0]: ValueError: The global train batch size (1 x 1) must be evenly divisible by the number of generation"
)


def test_a_refusal_by_trls_own_check_is_an_error_without_versions_and_a_cut_message_is_said_cut():
    (f,) = findings(scan_bytes(REFUSAL + "\n"))
    assert f.rule == "TRI012" and f.severity == Severity.ERROR
    assert "trainer/grpo_trainer.py:346 in __init__" in f.message and "ends inside the message" in f.message
    whole = REFUSAL + "s per prompt (16).\n[rank0]: more lines\n"
    (f,) = findings(scan_bytes(whole))
    assert "ends inside" not in f.message


def test_the_same_exception_raised_outside_trls_checks_is_not_a_refusal():
    # raised below TRL's frame (the line shown is a call, not TRL's own raise): no check of TRL's
    elsewhere = (
        REFUSAL.replace("grpo_trainer.py", "utils.py")
        .replace("__init__", "pad")
        .replace("raise ValueError(", "return torch.cat(tensors)")
    )
    assert [f.rule for f in findings(scan_bytes(elsewhere + "\n"))] != ["TRI012"]
    users = REFUSAL.replace("/env/lib/python3.11/site-packages/trl/trainer/grpo_trainer.py", "/home/u/cfg.py")
    assert [f.rule for f in findings(scan_bytes(users + "\n"))] != ["TRI012"]


# -- GRPOTrainer's parameters and a wrapper trainer's attributes per TRL release --------------------


def test_a_keyword_no_trl_release_takes_is_the_users_call_and_an_error():
    line = "TypeError: GRPOTrainer.__init__() got an unexpected keyword argument 'data_collator'\n"
    (f,) = findings(scan_bytes(line))
    assert f.rule == "TRI009" and f.severity == Severity.ERROR
    assert "remove data_collator=" in f.fix and "no TRL release takes it" in f.fix
    line = "TypeError: GRPOTrainer.__init__() got an unexpected keyword argument 'tools'\n"
    (f,) = findings(scan_bytes(line))
    assert "trl>=0.26.0" in f.fix  # a keyword of later releases: the upgrade
    assert (
        findings(scan_bytes("TypeError: MyThing.__init__() got an unexpected keyword argument 'x'\n"))[0].rule
        == "TRI003"
    )


def test_a_wrapper_trainer_reading_what_trl_sets_from_a_later_release_is_drift():
    line = "AttributeError: 'XGRPOTrainer' object has no attribute 'num_iterations'\n"
    (f,) = findings(scan_bytes(line))
    assert f.rule == "TRI009" and f.severity == Severity.ERROR and "trl>=0.16.0" in f.fix
    # an attribute TRL's config never had: not this drift
    line = "AttributeError: 'XGRPOTrainer' object has no attribute 'my_own_thing'\n"
    assert findings(scan_bytes(line))[0].rule == "TRI003"


def test_a_check_that_refuses_a_value_it_allows_is_a_bug_of_the_release_not_the_config():
    (f,) = findings(scan_bytes("vllm_mode must be either 'server' or 'colocate', got 'server'.\n"))
    assert f.rule == "TRI012" and f.severity == Severity.ERROR and "TRL" in f.message
    assert "install a TRL release" in f.fix
    # a value it does not allow: the run's configuration (the refusal read by TRL's raise site), not
    # a bug of the release
    (g,) = findings(scan_bytes("vllm_mode must be either 'server' or 'colocate', got 'serve'.\n"))
    assert g.rule == "TRI012" and "install a TRL release" not in g.fix and "vllm_mode" in g.message


def test_a_log_cut_inside_a_traceback_says_so_and_what_to_paste():
    cut = (
        "Traceback (most recent call last):\n"
        '  File "/x/site-packages/trl/trainer/grpo_trainer.py", line 1423, in _generate_single_turn\n'
        "    out = unwrapped_model.generate(\n"
        '  File "/x/site-packages/transformers/generation/utils.py", line 3830, in _prefill\n'
        "    return self(**model_inputs, return_dict=\n"
    )
    (f,) = findings(scan_bytes(cut))
    assert f.rule == "TRI003" and f.severity == Severity.WARNING
    assert "ends inside a traceback" in f.message and "_generate_single_turn" in f.message
    assert "paste the traceback to its end" in f.fix
    whole = cut + "RuntimeError: shape mismatch\n"
    assert all("ends inside" not in x.message for x in findings(scan_bytes(whole)))


CLASS_ATTR_LOG = (
    "Traceback (most recent call last):\n"
    '  File "/srv/job/train.py", line 4, in <module>\n'
    "    from trl import GRPOConfig\n"
    '  File "/opt/env/lib/python3.11/site-packages/trl/trainer/grpo_config.py", line 225, in GRPOConfig\n'
    '    _VALID_DICT_FIELDS = TrainingArguments._VALID_DICT_FIELDS + ["model_init_kwargs"]\n'
    "AttributeError: type object 'TrainingArguments' has no attribute '_VALID_DICT_FIELDS'\n"
)


def test_a_class_attribute_one_package_reads_from_anothers_class_is_drift():
    # "type object 'X' has no attribute" names the class itself, not an instance that another
    # kind of object could have been: trl reading transformers' TrainingArguments is the pair
    found = findings(scan_bytes(CLASS_ATTR_LOG))
    assert [f.rule for f in found] == ["TRI009"]
    assert found[0].severity == Severity.ERROR
    assert "trl and transformers" in found[0].message
    assert "TrainingArguments._VALID_DICT_FIELDS" in found[0].message
    instance = CLASS_ATTR_LOG.replace("type object 'TrainingArguments'", "'TrainingArguments' object")
    # an instance's attribute: another kind of object could have been it, but transformers' symbol
    # history shows TrainingArguments gaining _VALID_DICT_FIELDS in 4.51.0: drift all the same
    (f,) = [f for f in findings(scan_bytes(instance)) if f.rule == "TRI009"]
    assert "transformers>=4.51.0" in f.fix


def test_an_unrecognised_crash_in_old_ipython_frames_says_where_it_was_raised():
    text = "\n".join(
        [
            "ValueError                                Traceback (most recent call last)",
            "/usr/local/lib/python3.11/dist-packages/trl/trainer/grpo_trainer.py in _prepare(self, x)",
            "    980         if self.use_vllm:",
            "--> 982             check(x)",
            "",
            "ValueError: some message no signature knows",
        ]
    )
    tri003 = [f for f in findings(scan_bytes(text)) if f.rule == "TRI003"]
    assert tri003 and "raised in trl (trl/trainer/grpo_trainer.py:982 in _prepare)" in tri003[0].message


def test_pythons_own_modules_in_an_env_named_like_a_package_are_no_package():
    # a conda env called "vllm": its asyncio is Python's, not vLLM's
    assert package_of("/home/k/anaconda3/envs/vllm/lib/python3.10/asyncio/base_events.py")[0] is None
    assert package_of("C:\\Users\\a\\envs\\trl\\Lib\\asyncio\\runners.py")[0] is None
    assert package_of("/home/k/anaconda3/envs/vllm/lib/python3.10/site-packages/vllm/llm.py")[0] == "vllm"
    assert package_of("/work/trl/trl/trainer/grpo_trainer.py")[0] == "trl"


def test_frame_lines_a_terminal_wrapped_are_read_as_frames():
    """A frame line broken after ``File``, after the path's comma or after ``line`` (set 23's f007:
    tensordict's import of torch, not verl's; f011: DeepSpeed's op builder) is one frame again; the
    innermost importer is the wrapped one, not the last frame on one line."""
    wrapped = (
        "Traceback (most recent call last):\n"
        '  File "/ws/verl/protocol.py", line 30, in <module>\n'
        "    import tensordict\n"
        'File "/usr/local/lib/python3.12/dist-packages/tensordict/__init__.py",\n'
        "line 6, in <module>\n"
        "    import tensordict._lazy\n"
        'File "/usr/local/lib/python3.12/dist-packages/tensordict/_lazy.py", line\n'
        "38, in <module>\n"
        "    from tensordict.memmap import MemoryMappedTensor\n"
        "File\n"
        '"/usr/local/lib/python3.12/dist-packages/tensordict/memmap.py",\n'
        "line 25, in <module>\n"
        "    from torch.multiprocessing.reductions import ForkingPickler\n"
        "ImportError: cannot import name 'ForkingPickler' from 'torch.multiprocessing.reductions'\n"
    )
    (tb,) = parse(wrapped.splitlines())
    assert [(f.package, f.line) for f in tb.frames][-3:] == [
        ("tensordict", 6),
        ("tensordict", 38),
        ("tensordict", 25),
    ]
    assert tb.frames[-1].code.startswith("from torch.multiprocessing.reductions")
    drift = next(f for f in findings(scan_bytes(wrapped.encode())) if f.rule == "TRI009")
    assert "between tensordict and torch" in drift.message and "verl" not in drift.message.split(":")[0]
    # quiet: a line that starts with "File" but makes no frame with the next is left as it is
    prose = ["File", "not found, retrying", "ValueError: bad input"]
    (tb,) = parse(prose)
    assert tb.frames == [] and tb.exc_type == "ValueError"


def test_a_log_that_ends_on_a_frame_line_without_its_line_number_ends():
    """A paste cut after ``File "…/stage3.py"`` (no comma, no line): the wrapped-frame reader
    looked for the rest on lines past the log's end and never moved on (an endless loop; set 24
    after-review, dev log 2026-11-29/logs7/010)."""
    lines = [
        "Traceback (most recent call last):",
        '  File "/src/deepspeed/runtime/engine.py", line 1667, in _save_zero_checkpoint',
        "    zero_sd = {'optimizer_state_dict': self.optimizer.state_dict()}",
        '  File "/src/deepspeed/runtime/zero/stage3.py"',
    ]
    (tb,) = parse(lines)
    assert not tb.exc_type and tb.frames[-1].function == "_save_zero_checkpoint"


def test_every_cut_of_a_traceback_parses():
    """A paste can stop at any character: cut a traceback at every point of its last frames (each
    line split where a terminal could wrap it, too) and parse each cut; every one must end, and the
    unwrapped cuts keep the frames before the cut."""
    text = (
        "Traceback (most recent call last):\n"
        '  File "/src/transformers/trainer.py", line 1212, in _save_checkpoint\n'
        "    self.deepspeed.save_checkpoint(output_dir)\n"
        '  File "/src/deepspeed/runtime/engine.py", line 1667, in _save_zero_checkpoint\n'
        "    zero_sd = {'optimizer_state_dict': self.optimizer.state_dict()}\n"
        '  File "/src/deepspeed/runtime/zero/stage3.py", line 2502, in state_dict\n'
        "    raise NotImplementedError(\n"
    )
    start = text.index('  File "/src/deepspeed/runtime/engine.py"')
    for cut in range(start, len(text)):
        lines = text[:cut].split("\n")
        wrapped = [piece for line in lines for piece in (line[:40], line[40:]) if piece]
        (tb,) = parse(lines)
        assert tb.frames and tb.frames[0].function == "_save_checkpoint"
        assert isinstance(parse(wrapped), list)  # wrapped at any column: it ends
