"""Failures raised inside the user's or a project's code (TRI032, TRI033) and code that fits no
release of a package as written (TRI009 from the symbol history, an override the package calls
with an argument it lacks): told from the traceback's structure, never from one thread's text."""

from __future__ import annotations

from envdoctor.findings import Finding
from tests.triage.helpers import findings, scan_bytes

SITE = "/opt/conda/lib/python3.11/site-packages"
_MAIN = (
    "Traceback (most recent call last):\n"
    '  File "/home/u/proj/train.py", line 88, in <module>\n    trainer.train()\n'
)


def _frame(path: str, line: int, func: str, code: str) -> str:
    return f'  File "{path}", line {line}, in {func}\n    {code}\n'


def _got(text: str) -> list[Finding]:
    return findings(scan_bytes(text.encode()))


def _rule(got: list[Finding], rule: str) -> Finding | None:
    return next((f for f in got if f.rule == rule), None)


_TRL_LOOP = _frame(f"{SITE}/transformers/trainer.py", 2245, "train", "return inner_training_loop(") + _frame(
    f"{SITE}/trl/trainer/grpo_trainer.py",
    1075,
    "_calculate_rewards",
    "output_reward_func = reward_func(prompts=prompts, completions=completions, **reward_kwargs)",
)


# -- TRI032: raised in the user's code -----------------------------------------------------------


def test_a_reward_function_that_trl_called_back_raised_is_the_users_code_an_error():
    text = (
        _MAIN
        + _TRL_LOOP
        + _frame("/home/u/proj/rewards.py", 21, "accuracy_reward", "score = int(answer)")
        + "ValueError: invalid literal for int() with base 10: '5 + 1 = 6'\n"
    )
    f = _rule(_got(text), "TRI032")
    assert f is not None and f.severity.value == "error"
    assert "reward function accuracy_reward()" in f.message and "rewards.py:21" in f.message
    assert "trl called back from trainer/grpo_trainer.py:1075 in _calculate_rewards" in f.message
    assert "None" in f.fix and "0.16.0" in f.fix
    assert f.evidence["called_by"].startswith("trainer/grpo_trainer.py")


def test_an_old_trl_that_takes_no_none_reward_is_told_to_return_zero():
    text = (
        "trl==0.15.2\n"
        + _MAIN
        + _TRL_LOOP
        + _frame("/home/u/proj/rewards.py", 21, "format_reward", "m = re.match(p, c)[0]")
        + "TypeError: 'NoneType' object is not subscriptable\n"
    )
    f = _rule(_got(text), "TRI032")
    assert f is not None and "return 0.0" in f.fix and "TRL 0.15.2" in f.fix


def test_an_exception_raised_in_the_packages_own_code_is_not_the_users():
    """The user's frame above the package's frames called into the package: the package raised."""
    text = (
        _MAIN
        + _frame(f"{SITE}/trl/trainer/grpo_trainer.py", 1200, "_generate_and_score_completions", "x = y[0]")
        + "TypeError: 'NoneType' object is not subscriptable\n"
    )
    assert _rule(_got(text), "TRI032") is None


def test_a_package_called_from_a_callback_that_raised_is_the_packages():
    """user -> trl -> the user's reward function -> math_verify: raised in math_verify's frame."""
    text = (
        _MAIN
        + _TRL_LOOP
        + _frame("/home/u/proj/rewards.py", 30, "accuracy_reward", "gold = parse(sol)")
        + _frame(f"{SITE}/math_verify/parser.py", 500, "parse", "signal.alarm(timeout)")
        + "ValueError: signal only works in main thread of the main interpreter\n"
    )
    assert _rule(_got(text), "TRI032") is None


def test_the_users_frames_alone_with_a_reward_function_is_an_error_and_without_a_role_no_claim():
    tail = "TypeError: 'NoneType' object is not iterable\n"
    reward = (
        _MAIN
        + _frame("/root/proj/stage_utils.py", 172, "round_winners", "cumulative_reward(prompts=p)")
        + _frame("/root/proj/rewards.py", 245, "correctness_reward_func", "for r, a in zip(x, answer)")
        + tail
    )
    f = _rule(_got(reward), "TRI032")
    assert f is not None and f.severity.value == "error" and "called from your round_winners" in f.message
    plain = _MAIN + _frame("/root/proj/stage_utils.py", 172, "round_winners", "for r in rows") + tail
    got = _got(plain)
    assert _rule(got, "TRI032") is None
    unknown = _rule(got, "TRI003")  # the first exception, where it was raised: the user's frame
    assert unknown is not None and "stage_utils.py:172" in unknown.message


def test_a_collator_the_dataloader_called_is_named():
    text = (
        _MAIN
        + _frame(f"{SITE}/torch/utils/data/_utils/fetch.py", 55, "fetch", "return self.collate_fn(data)")
        + _frame("/home/u/proj/data.py", 12, "my_collate", "ids = [f['input_ids'] for f in features]")
        + "KeyError: 'input_ids'\n"
    )
    f = _rule(_got(text), "TRI032")
    assert f is not None and f.severity.value == "error" and "data collator my_collate()" in f.message


def test_the_machines_failures_and_calls_that_do_not_fit_are_not_the_users_code():
    cuda = (
        _MAIN
        + _TRL_LOOP
        + _frame("/home/u/proj/rewards.py", 21, "accuracy_reward", "t = torch.tensor(x).cuda()")
        + "RuntimeError: CUDA error: an illegal memory access was encountered\n"
    )
    assert _rule(_got(cuda), "TRI032") is None
    call = (
        _MAIN
        + _frame("/home/u/proj/train.py", 40, "main", "cfg = Helper(output_dir='o', foo=1)")
        + "TypeError: Helper.__init__() got an unexpected keyword argument 'foo'\n"
    )
    assert _rule(_got(call), "TRI032") is None


# -- TRI033: a short batch grouped by num_generations --------------------------------------------


def _grouped(path: str, size: int) -> str:
    return (
        _frame(
            path,
            587,
            "compute_loss",
            "rewards_per_device = gathered_rewards.view(num_devices, self.num_generations)",
        )
        + f"RuntimeError: shape '[2, 8]' is invalid for input of size {size}\n"
    )


def test_a_forks_trainer_grouping_a_short_batch_is_an_error():
    got = _got(
        "[rank4]: "
        + _grouped("/mnt/Video-R1/src/open_r1/trainer/grpo_trainer.py", 17).replace("\n  ", "\n[rank4]:   ")
    )
    f = _rule(got, "TRI033")
    assert f is not None and f.severity.value == "error"
    assert "17" in f.message and "num_generations=8" in f.message and "dataloader_drop_last" in f.fix
    assert _rule(got, "TRI032") is None  # one answer: the grouping's


def test_trls_own_grouping_is_only_likely_and_another_reshape_is_not_it():
    f = _rule(_got(_grouped(f"{SITE}/trl/trainer/grpo_trainer.py", 17)), "TRI033")
    assert f is not None and f.severity.value == "warning"
    other = (
        _frame("/mnt/proj/model.py", 10, "forward", "x = h.view(batch, heads, -1)")
        + "RuntimeError: shape '[2, 8]' is invalid for input of size 17\n"
    )
    assert _rule(_got(other), "TRI033") is None


# -- TRI009: code that fits no release as written ------------------------------------------------


def test_a_keyword_no_release_takes_whose_close_name_the_class_takes_is_a_rename():
    text = (
        _MAIN.replace("trainer.train()", "main()")
        + _frame(
            "/home/u/proj/train.py", 40, "main", "args = GRPOConfig(output_dir='o', enable_sleep_mode=True)"
        )
        + "TypeError: GRPOConfig.__init__() got an unexpected keyword argument 'enable_sleep_mode'\n"
    )
    f = _rule(_got(text), "TRI009")
    assert f is not None and f.severity.value == "error"
    assert "vllm_enable_sleep_mode" in f.message and "0.23.0" in f.fix
    assert "rename enable_sleep_mode= to vllm_enable_sleep_mode=" in f.fix


def test_a_keyword_with_no_close_name_is_left_alone():
    text = (
        _frame("/home/u/proj/train.py", 40, "main", "args = GRPOConfig(output_dir='o', zq_frobnicate=True)")
        + "TypeError: GRPOConfig.__init__() got an unexpected keyword argument 'zq_frobnicate'\n"
    )
    f = _rule(_got(text), "TRI009")
    assert f is None or "zq_frobnicate" not in f.message or "rename" not in f.fix


def test_an_attribute_only_a_subclass_of_another_package_has_names_that_subclass():
    got = _got("AttributeError: 'TrainingArguments' object has no attribute 'model_init_kwargs'\n")
    f = _rule(got, "TRI009")
    assert f is not None and f.severity.value == "error"
    assert "GRPOConfig" in f.message and "trl 0.14.0" in f.fix
    none = _got("AttributeError: 'TrainingArguments' object has no attribute 'zq_unheard_of'\n")
    assert _rule(none, "TRI009") is None


def test_a_field_present_in_the_oldest_release_read_is_not_dated_there():
    """SFTConfig's `packing` is older than the symbol history (trl 0.9.3 moved it there; the
    history starts at 0.11.0): the finding says "by" that release, not "from" it."""
    f = _rule(_got("AttributeError: 'TrainingArguments' object has no attribute 'packing'\n"), "TRI009")
    assert f is not None and "SFTConfig" in f.message
    assert "the oldest release read" in f.message and "from trl 0.11.0" not in f.message


def _skyrl(code: str, cls: str) -> str:
    return (
        _MAIN
        + _frame(f"{SITE}/skyrl_train/trainer.py", 300, "train", code)
        + f"TypeError: {cls}.postprocess_generator_output() got an unexpected keyword argument "
        "'metrics_generator_output'\n"
    )


def test_an_override_the_package_calls_with_an_argument_it_lacks_is_drift_of_the_subclass():
    code = "out = self.postprocess_generator_output(out, uids, metrics_generator_output=m)"
    f = _rule(_got(_skyrl(code, "FullyAsyncDAPOTrainer")), "TRI009")
    assert f is not None and f.severity.value == "error"
    assert "overrides skyrl-train's postprocess_generator_output() in FullyAsyncDAPOTrainer" in f.message
    assert "metrics_generator_output=None" in f.fix and "install the transformers" not in f.fix


def test_no_override_where_the_frame_does_not_show_the_call_or_the_class_is_the_packages():
    assert "overrides" not in " ".join(
        f.message for f in _got(_skyrl("out = helper(out)", "FullyAsyncDAPOTrainer"))
    )
    other = _skyrl("out = self.gen.postprocess_generator_output(out, m=1)", "FullyAsyncDAPOTrainer")
    assert "overrides" not in " ".join(f.message for f in _got(other))  # not the object's own method
    own = _got(_skyrl("out = self.postprocess_generator_output(out, m=1)", "RayPPOTrainer"))
    assert "overrides" not in " ".join(f.message for f in own)


def test_a_thread_pool_between_the_package_and_the_callback_still_names_the_package():
    text = (
        _MAIN
        + _TRL_LOOP
        + _frame("/usr/lib/python3.12/concurrent/futures/thread.py", 59, "run", "result = self.fn(*a, **k)")
        + _frame("/home/u/proj/rewards.py", 9, "judge_reward", "return float(reply)")
        + "ValueError: could not convert string to float: 'yes'\n"
    )
    f = _rule(_got(text), "TRI032")
    assert f is not None and "which trl called back" in f.message


def test_a_keyword_a_release_removed_names_the_one_that_took_its_place():
    text = (
        _frame("/home/u/proj/sft.py", 30, "main", "cfg = SFTConfig(output_dir='o', max_seq_length=2048)")
        + "TypeError: SFTConfig.__init__() got an unexpected keyword argument 'max_seq_length'\n"
    )
    f = _rule(_got(text), "TRI009")
    assert f is not None and "rename max_seq_length= to max_length=" in f.fix and "trl<0.20.0" in f.fix
    kept = (
        _frame("/home/u/proj/grpo.py", 30, "main", "cfg = GRPOConfig(output_dir='o', vllm_device='cuda:1')")
        + "TypeError: GRPOConfig.__init__() got an unexpected keyword argument 'vllm_device'\n"
    )
    g = _rule(_got(kept), "TRI009")
    assert g is None or "rename vllm_device=" not in g.fix  # no parameter took its place


def test_a_reward_functions_report_of_what_it_caught_is_a_warning_not_a_crash():
    got = _got(
        "Error in _addition_correctness_reward_func: invalid literal for int() with base 10: '5 + 1'\n"
    )
    f = _rule(got, "TRI032")
    assert f is not None and f.severity.value == "warning" and "not a crash" in f.message
    assert "_addition_correctness_reward_func" in f.fix


def test_reward_metrics_and_a_healthy_run_are_not_a_caught_exception():
    healthy = (
        "{'loss': 0.01, 'rewards/accuracy_reward': 0.5, 'reward': 0.75, 'epoch': 0.1}\n"
        "reward function accuracy_reward: mean 0.5\n"
    )
    assert _got(healthy) == []


def test_another_stacks_reward_manager_calling_a_scoring_function_is_a_reward_function():
    text = (
        _MAIN
        + _frame(
            f"{SITE}/verl/workers/reward_manager/naive.py", 80, "__call__", "score = self.compute_score("
        )
        + _frame("/home/u/proj/my_reward.py", 14, "compute_score", "return float(answer == gt)")
        + "KeyError: 'ground_truth'\n"
    )
    f = _rule(_got(text), "TRI032")
    assert (
        f is not None
        and "reward function compute_score()" in f.message
        and "which verl called back" in f.message
    )
    assert "TRL" not in f.fix and "verl calls it" in f.fix


def test_the_first_exception_answer_names_the_users_frame_under_the_package_that_called_it():
    text = (
        _MAIN
        + _TRL_LOOP
        + _frame("/home/u/proj/rewards.py", 5, "judge_reward", "open('/data/judge.json')")
        + "FileNotFoundError: [Errno 2] No such file or directory: '/data/judge.json'\n"
    )
    f = _rule(_got(text), "TRI003")
    assert (
        f is not None and "raised in your code (rewards.py:5 in judge_reward), called from trl" in f.message
    )


def test_a_reward_function_reading_a_conversational_completion_as_a_string_is_told_the_format():
    text = (
        _MAIN
        + _TRL_LOOP
        + _frame(
            "/home/u/proj/rewards.py", 8, "length_reward", "return [len(c.strip()) for c in completions]"
        )
        + "AttributeError: 'list' object has no attribute 'strip'\n"
    )
    f = _rule(_got(text), "TRI032")
    assert f is not None and "completion[0]['content']" in f.fix
    plain = text.replace(
        "'list' object has no attribute 'strip'", "'NoneType' object has no attribute 'group'"
    )
    g = _rule(_got(plain), "TRI032")
    assert g is not None and "completion[0]" not in g.fix


def test_a_map_function_and_a_callback_are_named_by_the_package_that_called_them():
    mapped = (
        _MAIN
        + _frame(f"{SITE}/datasets/arrow_dataset.py", 3500, "apply_function", "processed = function(*a, **k)")
        + _frame("/home/u/proj/data.py", 12, "make_prompt", "return {'prompt': row['question']}")
        + "KeyError: 'question'\n"
    )
    f = _rule(_got(mapped), "TRI032")
    assert f is not None and "dataset function (map / filter / formatting) make_prompt()" in f.message
    assert "which datasets called back" in f.message
    callback = (
        _MAIN
        + _frame(
            f"{SITE}/transformers/trainer_callback.py", 548, "call_event", "result = getattr(cb, event)("
        )
        + _frame("/home/u/proj/cb.py", 30, "on_log", "wandb.log({'x': logs['reward'] / n})")
        + "ZeroDivisionError: division by zero\n"
    )
    g = _rule(_got(callback), "TRI032")
    assert g is not None and "TrainerCallback on_log()" in g.message


_STEP = _frame(
    f"{SITE}/transformers/trainer.py",
    3675,
    "training_step",
    "loss = self.compute_loss(model, inputs, num_items_in_batch=num_items_in_batch)",
)


def test_a_grpo_compute_loss_override_written_for_trl_014s_layout_is_drift_with_trl():
    text = (
        _MAIN
        + _STEP
        + _frame(
            "/home/u/X-R1/src/x_r1/x_grpo_trainer.py", 58, "compute_loss", "p = [x['prompt'] for x in inputs]"
        )
        + "TypeError: string indices must be integers\n"
    )
    f = _rule(_got(text), "TRI009")
    assert f is not None and f.severity.value == "error" and "trl==0.14.0" in f.fix
    dict_read = text.replace(
        "string indices must be integers", "list indices must be integers or slices, not str"
    )
    g = _rule(_got(dict_read), "TRI009")
    assert g is not None and "trl>=0.15.0" in g.fix


def test_a_frame_line_whose_file_prefix_a_paste_cut_is_still_a_frame():
    text = (
        '.../python3.10/site-packages/transformers/trainer.py", line 3675, in training_step\n'
        "    loss = self.compute_loss(model, inputs, num_items_in_batch=num_items_in_batch)\n"
        './X-R1/src/x_r1/x_grpo_trainer.py", line 58, in compute_loss\n'
        '    prompts = [x["prompt"] for x in inputs]\n'
        "TypeError: string indices must be integers\n"
    )
    f = _rule(_got(text), "TRI009")
    assert f is not None and "x_grpo_trainer.py:58" in f.message


def test_another_trainer_or_another_method_is_not_trls_layout():
    other = (
        _MAIN
        + _STEP
        + _frame("/home/u/proj/my_trainer.py", 58, "compute_loss", "p = [x['prompt'] for x in inputs]")
        + "TypeError: string indices must be integers\n"
    )
    assert _rule(_got(other), "TRI009") is None  # no sign of TRL's GRPOTrainer: the user's code (TRI032)
    assert _rule(_got(other), "TRI032") is not None


# -- TRI009: a patching package's replacement that does not take its caller's keyword -----------

_GENERATE = (
    _MAIN.replace("trainer.train()", "model.generate(**inputs)")
    + _frame(f"{SITE}/transformers/generation/utils.py", 3254, "_sample", "outputs = self(**model_inputs)")
    + _frame(f"{SITE}/torch/nn/modules/module.py", 1736, "_wrapped_call_impl", "return self._call_impl(*a)")
    + _frame(f"{SITE}/torch/nn/modules/module.py", 1747, "_call_impl", "return forward_call(*args, **kw)")
)


def test_a_patched_forward_that_lacks_the_callers_keyword_names_the_patch_release_that_takes_it():
    """liger-kernel's Qwen2-VL lce_forward lacked cache_position, which transformers 4.47 passes;
    liger-kernel 0.5.3 (linkedin/Liger-Kernel#529) is the first release whose every lce_forward
    takes it: the symbol history of liger-kernel's releases says so, not a signature."""
    text = (
        "INFO liger_kernel.transformers.monkey_patch: applying to Qwen2-VL\n"
        + _GENERATE
        + "TypeError: lce_forward() got an unexpected keyword argument 'cache_position'\n"
    )
    f = _rule(_got(text), "TRI009")
    assert f is not None and f.severity.value == "error"
    assert "liger-kernel's lce_forward()" in f.message and "transformers' model forward" in f.message
    assert "pip install 'liger-kernel==0.5.3'" in f.fix
    # the log does not name liger-kernel: another package may define a function of that name
    unnamed = _rule(_got(text.split("\n", 1)[1]), "TRI009")
    assert unnamed is not None and unnamed.severity.value == "warning"
    # another package's copy (fms-acceleration's liger_ce) names no liger-kernel: a warning
    other = _rule(_got("fms_acceleration_foak/fused_ops/liger_ce\n" + text.split("\n", 1)[1]), "TRI009")
    assert other is not None and other.severity.value == "warning"


def test_a_patch_call_that_every_release_takes_or_the_users_function_is_not_the_patchs_drift():
    taken = _GENERATE + "TypeError: lce_forward() got an unexpected keyword argument 'input_ids'\n"
    assert not any("liger-kernel" in f.message for f in _got(taken))
    own = (
        _frame("/home/u/proj/model.py", 12, "lce_forward", "return self.inner(**kw)")
        + "TypeError: lce_forward() got an unexpected keyword argument 'cache_position'\n"
    )
    assert not any("liger-kernel" in f.message for f in _got(own))
    # the log's liger-kernel takes it (0.5.3 and later): another cause
    fixed = (
        "liger-kernel==0.6.0\n"
        + _GENERATE
        + ("TypeError: lce_forward() got an unexpected keyword argument 'cache_position'\n")
    )
    assert not any("liger-kernel's" in f.message for f in _got(fixed))


def test_a_keyword_no_release_of_the_patch_takes_blames_the_caller_not_the_patchs_age():
    """liger-kernel's functional API called with a keyword none of its releases takes: the calling
    code was written for another API (the caller's release is the one to change), not an old patch."""
    f = _rule(
        _got(
            "TypeError: liger_fused_linear_cross_entropy() got an unexpected keyword argument 'return_dict'\n"
        ),
        "TRI009",
    )
    assert f is not None and "no liger-kernel release read takes it" in f.message
    assert "written for another liger-kernel API" in f.message and "older than" not in f.message
    assert "in place of" not in f.message  # not called as a model's forward
    assert f.fix.startswith("run without the liger-kernel patch")


def test_a_patch_release_newer_than_the_history_is_said_not_downgraded():
    """The log shows liger-kernel 0.9.0, past the releases read (to 0.8.2): whether it takes the
    keyword is not known, so no pin to an older release is advised and the finding is a warning."""
    text = (
        "liger-kernel==0.9.0\nliger_kernel.transformers.monkey_patch\n"
        + _GENERATE
        + ("TypeError: lce_forward() got an unexpected keyword argument 'cache_position'\n")
    )
    f = _rule(_got(text), "TRI009")
    assert f is not None and f.severity.value == "warning"
    assert "newer than the releases read" in f.message and "==0.5.3" not in f.fix
    assert f.fix.startswith("check whether your liger-kernel 0.9.0 takes cache_position=")


def test_a_frameworks_checkout_that_trl_called_is_the_frameworks_code_not_yours():
    """A frame of a fine-tuning framework run from its source checkout (LLaMA-Factory's DPO trainer
    overriding TRL's) is the framework's code: no "your code" claim (TRI032) on it (set 24's c006);
    the same override in the user's own project is still the user's."""
    body = _frame(
        f"{SITE}/transformers/trainer.py", 3454, "training_step", "loss = self.compute_loss(model, inputs)"
    ) + _frame(
        f"{SITE}/trl/trainer/dpo_trainer.py",
        1408,
        "compute_loss",
        'loss, metrics = self.get_batch_loss_metrics(model, inputs, train_eval="train")',
    )
    tail = "AttributeError: 'NoneType' object has no attribute 'to'\n"
    checkout = "/home/u/LLaMA-Factory/src/llamafactory/train/dpo/trainer.py"
    text = (
        _MAIN
        + body
        + _frame(checkout, 232, "get_batch_loss_metrics", ") = self.concatenated_forward(model, batch)")
        + _frame(
            checkout, 182, "concatenated_forward", "all_logits = model(**batch).logits.to(torch.float32)"
        )
        + tail
    )
    got = _got(text)
    assert _rule(got, "TRI032") is None
    first = _rule(got, "TRI003")  # the first exception's answer names the framework, not "your code"
    assert first is not None and "raised in llamafactory (train/dpo/trainer.py:182" in first.message
    assert "your code" not in first.message
    mine = text.replace(checkout, "/home/u/proj/my_dpo_trainer.py")
    assert _rule(_got(mine), "TRI032") is not None
