"""Two shapes where the innermost package frame is not the package at fault, so no API drift
between it and its caller is claimed (TRI009): torch's Module._call_impl handing
``*args, **kwargs`` on to whatever forward was bound (a patched ``lce_forward``), and a base
class's placeholder (torch's ``Dataset.__getitem__``: "Subclasses of Dataset should implement
__getitem__.") reached by indexing an object that does not offer it. A package frame calling a
function by its own name still is drift. Also TRI021: an embedding index past its table names a
learned position table (GPT-2's 1,024) as well as a vocabulary."""

from __future__ import annotations

from tests.triage.helpers import findings, scan_bytes

SITE = "/opt/conda/lib/python3.11/site-packages"


def _frame(pkg_path: str, line: int, func: str, code: str) -> str:
    return f'  File "{SITE}/{pkg_path}", line {line}, in {func}\n    {code}\n'


def _tb(*frames: str, exc: str) -> bytes:
    head = 'Traceback (most recent call last):\n  File "/work/t.py", line 51, in <module>\n    run()\n'
    return (head + "".join(frames) + exc + "\n").encode()


GENERATE = _frame(
    "transformers/generation/utils.py", 3254, "_sample", "outputs = self(**model_inputs, return_dict=True)"
)
CALL_IMPL = _frame("torch/nn/modules/module.py", 1747, "_call_impl", "return forward_call(*args, **kwargs)")


def _rules(data: bytes) -> dict[str, str]:
    return {f.rule: f.severity.value for f in findings(scan_bytes(data))}


def test_a_forward_bound_at_run_time_is_not_torchs():
    data = _tb(
        GENERATE,
        CALL_IMPL,
        exc="TypeError: lce_forward() got an unexpected keyword argument 'cache_position'",
    )
    got = findings(scan_bytes(data))
    assert not any(f.rule == "TRI009" and "torch" in f.message for f in got)


def test_torch_before_2_names_the_forwarded_arguments_input():
    old = _frame("torch/nn/modules/module.py", 1051, "_call_impl", "return forward_call(*input, **kwargs)")
    exc = "TypeError: lce_forward() got an unexpected keyword argument 'cache_position'"
    data = _tb(GENERATE, old, exc=exc)
    assert not any(f.rule == "TRI009" and "torch" in f.message for f in findings(scan_bytes(data)))


def test_a_package_frame_calling_by_name_is_still_drift():
    call = _frame(
        "trl/trainer/grpo_trainer.py",
        900,
        "_generate",
        "outputs = self.llm.generate(prompts, sampling_params=sp, use_tqdm=False)",
    )
    data = _tb(
        call,
        _frame("vllm/entrypoints/llm.py", 400, "generate", "self._validate(prompts)"),
        exc="TypeError: LLM.generate() got an unexpected keyword argument 'use_tqdm'",
    )
    assert "TRI009" in _rules(data) or "TRI031" in _rules(data) or "TRI014" in _rules(data)


def test_a_base_class_placeholder_is_not_a_release_lacking_a_method():
    index = _frame(
        "trl/trainer/sft_trainer.py",
        457,
        "__init__",
        "if args.assistant_only_loss and not is_conversational(train_dataset[0]):",
    )
    stub = _frame(
        "torch/utils/data/dataset.py",
        59,
        "__getitem__",
        'raise NotImplementedError("Subclasses of Dataset should implement __getitem__.")',
    )
    got = findings(scan_bytes(_tb(index, stub, exc="NotImplementedError:")))
    assert not any(f.rule == "TRI009" and "torch" in f.message for f in got)


def test_a_method_a_release_does_not_implement_is_still_drift():
    call = _frame("trl/trainer/grpo_trainer.py", 700, "_move_model_to_vllm", "llm_model.load_weights(state)")
    inside = _frame(
        "vllm/model_executor/models/interfaces.py", 80, "load_weights", "raise NotImplementedError"
    )
    assert "TRI009" in _rules(_tb(call, inside, exc="NotImplementedError"))


def test_an_index_past_the_table_names_learned_positions_too():
    data = (
        b"../aten/src/ATen/native/cuda/Indexing.cu:1289: indexSelectLargeIndex: block: [259,0,0], "
        b"thread: [30,0,0] Assertion `srcIndex < srcSelectDimSize` failed.\n"
    )
    (f,) = [f for f in findings(scan_bytes(data)) if f.rule == "TRI021"]
    assert f.severity.value == "error"
    assert "max_position_embeddings" in f.message and "vocabulary" in f.message
