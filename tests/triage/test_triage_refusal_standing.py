"""A refusal stated as a fact ("X is not supported for Y") whose raise, in the same words, is in the
newest release envdoctor indexes leads with the change, not with another release; one that lists what
is "only" supported, or says "yet" / "currently", keeps the release as its lead (a later one adds)."""

from __future__ import annotations

from tests.triage.helpers import findings, scan_bytes

#: held-out set 19, logs19e/002: AWQ with bfloat16 on vLLM; settled: dtype float16
AWQ_BF16 = (
    "ValueError: torch.bfloat16 is not supported for quantization method awq. Supported dtypes: "
    "[torch.float16]\n"
)


def _tri012(text: str):
    (f,) = [f for f in findings(scan_bytes(text)) if f.rule == "TRI012"]
    return f


def test_a_standing_fixed_refusal_leads_with_the_value_it_supports():
    f = _tri012(AWQ_BF16)
    assert f.fix.startswith("change what it refuses (torch.bfloat16) to one it supports (torch.float16)")
    assert "install a release of vLLM that does" not in f.fix
    assert "the newest release envdoctor indexes, makes the same check" in f.fix


def test_a_list_of_what_is_only_supported_keeps_the_release_lead():
    """Near case: set 11's c006 (MiniCPM-V 4.5 on vLLM 0.10.1; settled: a vLLM past PR #23586)."""
    f = _tri012(
        '(EngineCore_0 pid=1235737)   File "/env/lib/python3.12/site-packages/vllm/model_executor/models/'
        'minicpmv.py", line 1432, in __new__\n'
        '(EngineCore_0 pid=1235737)     raise ValueError(f"Currently, MiniCPMV only supports versions "\n'
        "(EngineCore_0 pid=1235737) ValueError: Currently, MiniCPMV only supports versions 2.0, 2.5, 2.6, "
        "4.0. Got version: (4, 5)\n"
    )
    assert f.fix.startswith("the installed vLLM release does not support what this run asks for")


def test_a_refusal_that_says_yet_keeps_the_release_lead():
    f = _tri012("ValueError: GGUF model with architecture deepseek2 is not supported yet.\n")
    assert "install a release of transformers that does" in f.fix
