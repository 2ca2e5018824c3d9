"""The prompt length the plan sizes: what the run really uses, and where it came from (issue #28, 1).

TRL 1.x refuses ``max_prompt_length`` (CFG001), so the plan takes ``--prompt-tokens`` or
``vllm_max_model_length`` (a server's ``--max_model_len``) less ``max_completion_length`` (vLLM
refuses a longer prompt), else assumes 512 and says so."""

from __future__ import annotations

import json

from envdoctor.plan.memory.knobs import from_config
from tests.conftest import snapshot
from tests.memory.configs import QWEN25_05B

VLLM = {
    "use_vllm": True,
    "vllm_mode": "colocate",
    "vllm_max_model_length": 4096,
    "max_completion_length": 1024,
}


def test_prompt_from_vllm_max_model_length_less_completion():
    k = from_config(VLLM, "1.16.0", "bfloat16", vllm_mode="colocate")
    assert k.prompt_len == 3072 and "vllm_max_model_length 4096" in k.prompt_source
    assert not any("max_prompt_length" in a for a in k.assumed)


def test_prompt_from_the_server_max_model_len_in_server_mode():
    cfg = {"use_vllm": True, "vllm_mode": "server", "max_completion_length": 1000}
    k = from_config(cfg, "1.16.0", "bfloat16", vllm_mode="server", server_max_model_len=3000)
    assert k.prompt_len == 2000 and k.prompt_source.startswith("--max_model_len 3000")


def test_prompt_tokens_option_wins_and_default_is_said_assumed():
    k = from_config(VLLM, "1.16.0", "bfloat16", vllm_mode="colocate", prompt_tokens=700)
    assert (k.prompt_len, k.prompt_source) == (700, "--prompt-tokens")
    k = from_config({}, "1.16.0", "bfloat16")
    assert (k.prompt_len, k.prompt_source) == (512, "assumed")
    assert any(a.startswith("max_prompt_length=512") and "--prompt-tokens" in a for a in k.assumed)


def test_max_prompt_length_still_read_where_set():
    k = from_config({"max_prompt_length": 256}, "0.19.0", "bfloat16")
    assert (k.prompt_len, k.prompt_source) == (256, "max_prompt_length")


def _cli(*args):
    from tests.conftest import run_cli

    return run_cli("plan-memory", *args)


def test_plan_memory_prompt_tokens_in_text_and_json(write_json, model_dir):
    facts = str(write_json(snapshot(n_gpus=1), "facts.json"))
    model = model_dir(QWEN25_05B)
    launch = ["--", "torchrun", "--nproc_per_node", "1", "train.py"]
    out = _cli("--facts", facts, "--model", model, "--prompt-tokens", "2000", *launch)
    assert out.returncode in (0, 1), out.stderr
    assert "prompt length 2000 from --prompt-tokens" in out.stdout
    assert "(2000 + " in out.stdout
    out = _cli("--facts", facts, "--model", model, "--format", "json", *launch)
    setup = json.loads(out.stdout)["setup"]
    assert setup["prompt_length"] == 512 and setup["prompt_length_source"] == "assumed"
    bad = _cli("--facts", facts, "--model", model, "--prompt-tokens", "0", *launch)
    assert bad.returncode == 2 and "--prompt-tokens" in bad.stderr
