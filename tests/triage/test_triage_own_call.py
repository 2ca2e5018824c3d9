"""A call that does not bind raises in the caller's frame: when that frame is a package's and the
function the message names is the same package's own (the frame index), the package's code does
not fit itself (TRI031); another name at the call (an import's alias), forwarded keywords, or a
function the package does not define are not that."""

from __future__ import annotations

from tests.triage.helpers import findings, scan_bytes

_HEAD = 'Traceback (most recent call last):\n  File "/srv/run.py", line 9, in <module>\n    main()\n'


def _verl_call(code: str, message: str) -> bytes:
    return (
        _HEAD
        + '  File "/usr/lib/python3.11/site-packages/verl/workers/actor/dp_actor.py", '
        + "line 480, in update_policy\n"
        + f"    {code}\n"
        + f"TypeError: {message}\n"
    ).encode()


def _rules(data: bytes) -> dict[str, str]:
    return {f.rule: f.severity.value for f in findings(scan_bytes(data))}


def test_a_package_calling_its_own_method_with_a_keyword_it_lacks_is_an_error():
    data = _verl_call(
        "log_probs = self.actor.compute_log_prob(",
        "DataParallelPPOActor.compute_log_prob() got an unexpected keyword argument 'calculate_entropy'",
    )
    got = findings(scan_bytes(data))
    own = [f for f in got if f.rule == "TRI031"]
    assert own and own[0].severity.value == "error"
    assert "dp_actor.py" in own[0].message and "calculate_entropy" in own[0].message
    assert "pip install -U 'verl'" in own[0].fix


def test_a_bare_function_may_be_one_of_the_users_so_named_so_a_warning():
    """verl calls the reward function the user gives it by its name; a bare function the index
    places in verl may be the user's own of that name."""
    data = _verl_call(
        "pg_loss = compute_policy_loss_gspo(",
        "compute_policy_loss_gspo() got an unexpected keyword argument 'rollout_log_probs'",
    )
    own = [f for f in findings(scan_bytes(data)) if f.rule == "TRI031"]
    assert own and own[0].severity.value == "warning"
    assert "core_algos.py" in own[0].message and "a function of yours" in own[0].message


def test_a_name_called_under_an_alias_is_a_dependency_s_function_not_the_package_s_own():
    # verl defines get_megatron_optimizer itself, and imports megatron.core's under another name
    data = _verl_call(
        "return get_megatron_optimizer_native(",
        "get_megatron_optimizer() got an unexpected keyword argument 'no_weight_decay_cond'",
    )
    assert "TRI031" not in _rules(data)


def test_keywords_passed_on_may_be_the_users_so_no_finding():
    data = _verl_call(
        "pg_loss = compute_policy_loss_gspo(**loss_kwargs)",
        "compute_policy_loss_gspo() got an unexpected keyword argument 'rollout_log_probs'",
    )
    assert "TRI031" not in _rules(data)


def test_a_function_the_package_does_not_define_is_not_its_own():
    data = _verl_call(
        "out = helper_of_the_project(",
        "helper_of_the_project() got an unexpected keyword argument 'rollout_log_probs'",
    )
    assert "TRI031" not in _rules(data)


def test_under_unsloth_the_callee_may_be_its_patch_so_a_warning():
    data = _verl_call(
        "pg_loss = compute_policy_loss_gspo(",
        "compute_policy_loss_gspo() got an unexpected keyword argument 'rollout_log_probs'",
    ).replace(b'  File "/srv/run.py"', b'  File "/srv/unsloth_compiled_cache/run.py"')
    assert _rules(data).get("TRI031") == "warning"


def test_a_subclass_named_as_the_package_s_class_is_an_override_not_the_package_s_own_code():
    """urchade/GLiNER#208 (transformers 4.46's loop passes num_items_in_batch; GLiNER's own
    ``class Trainer(transformers.Trainer)`` overrides training_step without it). The message
    names ``Trainer.training_step``, which transformers' index also defines; but transformers'
    own Trainer.training_step takes four positional arguments in every release its symbol
    history has (4.46.1 on), so the callee is the subclass's override: drift between the
    project's code and transformers, not transformers' code against itself (TRI031)."""
    data = (
        b'File "Gliner_FineTuning.py", line 84, in <module>\n'
        b"    trainer.train()\n"
        b'  File "lib/python3.12/site-packages/transformers/trainer.py", line 2122, in train\n'
        b"    return inner_training_loop(\n"
        b'  File "lib/python3.12/site-packages/transformers/trainer.py", line 2474, in _inner_training_loop\n'
        b"    tr_loss_step = self.training_step(model, inputs, num_items_in_batch)\n"
        b"TypeError: Trainer.training_step() takes 3 positional arguments but 4 were given\n"
    )
    got = findings(scan_bytes(data))
    assert "TRI031" not in {f.rule for f in got}
    (drift,) = [f for f in got if f.rule == "TRI009"]
    assert "overrides" in drift.message and "training_step" in drift.message
    assert "num_items_in_batch" in drift.fix
