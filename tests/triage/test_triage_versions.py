"""The versions a log shows (envdoctor/triage/logversions.py): read from every shape people
paste, and used for advice in place of the judging machine's packages."""

from __future__ import annotations

from dataclasses import replace

import pytest

from envdoctor.triage.diagnose import diagnose_scan, version_lines
from envdoctor.triage.logversions import facts_for_advice, from_log, read_head
from tests.conftest import H100, MODERN, snapshot
from tests.triage.helpers import findings, judge, scan_bytes


@pytest.mark.parametrize(
    "text, dist, version",
    [
        ("trl                               0.25.0\n", "trl", "0.25.0"),  # pip list
        ("vllm==0.12.0\n", "vllm", "0.12.0"),  # pip freeze
        ("- TRL version: 0.17.0\n", "trl", "0.17.0"),  # trl env
        ("- PyTorch version: 2.6.0\n", "torch", "2.6.0"),
        ("vLLM Version: 0.8.5.post1\n", "vllm", "0.8.5.post1"),  # vllm collect-env
        ("vLLM Version                 : 0.10.1\n", "vllm", "0.10.1"),
        ("PyTorch version: 2.6.0+cu124\n", "torch", "2.6.0+cu124"),  # torch collect_env
        ("[pip3] torch==2.5.1+cu124\n", "torch", "2.5.1+cu124"),
        (
            "[conda] transformers              4.48.2                   pypi_0    pypi\n",
            "transformers",
            "4.48.2",
        ),
        ("Successfully installed trl-0.25.0 vllm-0.12.0\n", "vllm", "0.12.0"),
        ("  Downloading vllm-0.12.0-cp38-abi3-manylinux1_x86_64.whl (400 MB)\n", "vllm", "0.12.0"),
        ("Found existing /venv/lib/python3.12/site-packages/trl-0.25.0.dist-info\n", "trl", "0.25.0"),
        (
            "flash_attn-2.7.4.post1+cu12torch2.6cxx11abiFALSE-cp312-cp312-linux_x86_64.whl\n",
            "flash-attn",
            "2.7.4.post1+cu12torch2.6cxx11abiFALSE",
        ),
        (
            "INFO 05-02 10:00:01 [core.py:58] Initializing a V1 LLM engine (v0.8.5) with config: …\n",
            "vllm",
            "0.8.5",
        ),
        ("INFO 06-03 01:55:32 [api_server.py:1043] vLLM API server version 0.9.1\n", "vllm", "0.9.1"),
        ("I am using trl=0.18.0, transformers=4.52.3, vllm=0.8.5.post1\n", "vllm", "0.8.5.post1"),  # prose
        ("trl[vllm]=0.19.0\n", "trl", "0.19.0"),
        # prose: a name, a space or nothing, the version (set 21's c004: "torch2.2.1+cu121")
        (
            "I am installing: transformers 4.38.1, accelerate 0.23.0, torch2.2.1+cu121\n",
            "torch",
            "2.2.1+cu121",
        ),
        (
            "I am installing: transformers 4.38.1, accelerate 0.23.0, torch2.2.1+cu121\n",
            "accelerate",
            "0.23.0",
        ),
        ("with vLLM v0.8.5 and TRL 0.17.0 on two H100s\n", "vllm", "0.8.5"),
        ("This occurs even in DeepSpeed 0.18.5.\n", "deepspeed", "0.18.5"),  # a full stop after it
    ],
)
def test_every_shape_of_a_version(text, dist, version):
    assert read_head(text.encode())[dist].version == version
    result = scan_bytes("x" * 2000 + "\n" + text)  # found by the scan's anchors too, past the head
    found = from_log(b"", version_lines(result.matches))
    # past the head: the lines that hold an anchor ("ersion", "LLM engine (v")
    anywhere = "ersion" in text or "LLM engine (v" in text
    assert not anywhere or "  :" in text or found[dist].version == version


@pytest.mark.parametrize(
    "text",
    [
        '  File "/venv/lib/python3.12/site-packages/trl/trainer/grpo_trainer.py", line 3, in f\n',
        '    "transformers_version": "4.51.3",\n',  # a model's config, not the installed release
        "Processed prompts: 100%|██████████| 8/8 [00:01<00:00, 5.1it/s]\n",
        "--max_length=4096 --torch_dtype=bfloat16 --vllm_gpu_memory_utilization=0.3\n",  # options
        "deepspeed stage 3 on 8 GPUs with torch 2 and accelerate 1.x\n",  # no release named
        "vllm_gpu_memory_utilization 0.3, torch_dtype 2.0\n",  # a config key, not the package
        "torch 2.6.0rc1x and trl 0.19.0.dev0abc\n",  # a word glued after the version
        # a bound, not the run's release (heldout-2026-11-28c/012: torch's own warning)
        "but this warning has only been added since PyTorch 2.4 (function operator())\n",
        "This feature was removed in transformers 5.0; please upgrade to vllm 0.8.5 or use trl >= 0.19.0\n",
    ],
)
def test_a_path_or_a_models_config_is_not_a_version(text):
    assert read_head(text.encode()) == {}


def test_unsloths_start_banner_gives_unsloth_transformers_and_vllm():
    """Unsloth prints its release with transformers' and vLLM's at start; the wrappers' entries read it."""
    found = read_head(
        b"==((====))==  Unsloth 2025.3.6: Fast Qwen2 patching. Transformers: 4.48.2. vLLM: 0.7.3.\n"
    )
    assert {d: v.version for d, v in found.items()} == {
        "unsloth": "2025.3.6",
        "transformers": "4.48.2",
        "vllm": "0.7.3",
    }
    assert read_head(b"unsloth_zoo==2025.7.1\nverifiers==0.1.0\n").keys() == {"unsloth-zoo", "verifiers"}


def test_a_version_in_prose_yields_to_a_listing_of_the_same_package():
    """A sentence ("upgraded from trl 0.14.0") is the weakest evidence: pip's listing wins."""
    found = read_head(b"trl==0.19.0\nI upgraded from trl 0.14.0 to fix it\n")
    assert found["trl"].version == "0.19.0" and found["trl"].how == "listing"
    assert read_head(b"I use trl 0.14.0 here\n")["trl"].how == "prose"


def test_a_banner_wins_over_a_listing_and_the_later_of_equals_wins():
    found = read_head(
        b"vllm==0.10.2\nvllm==0.11.0\nInitializing a V1 LLM engine (v0.9.1) with\nvllm==0.12.0\n"
    )
    assert found["vllm"].version == "0.9.1" and found["vllm"].line == 3
    assert read_head(b"vllm==0.10.2\nvllm==0.11.0\n")["vllm"].version == "0.11.0"


def test_the_live_machines_packages_are_dropped_and_a_snapshots_are_overlaid():
    snap = judge(snapshot(1, H100, MODERN)).facts
    found = read_head(b"- TRL version: 0.25.0\n")
    live = facts_for_advice(replace(snap, source="live"), found)
    assert live.version("trl") == "0.25.0" and live.version("torch") is None
    node = facts_for_advice(snap, found)
    assert node.version("trl") == "0.25.0" and node.version("torch") == snap.version("torch")
    assert facts_for_advice(snap, {}) is snap


GUIDED = (
    "- TRL version: 0.25.0\n- vLLM version: 0.12.0\nTraceback (most recent call last):\n"
    '  File "/venv/lib/python3.12/site-packages/trl/trainer/grpo_trainer.py", line 50, in '
    "<module>\n    from vllm.sampling_params import GuidedDecodingParams\n"
    "ImportError: cannot import name 'GuidedDecodingParams' from 'vllm.sampling_params'\n"
)


def test_advice_names_the_logs_versions_not_the_judging_machines():
    """Issue 26: a TRL 0.25 user was told about "the vLLM range TRL 1.16.0 supports"."""
    result = scan_bytes(GUIDED)
    ctx = judge(snapshot(1, H100, {"trl": "1.16.0", "vllm": "0.26.0", "torch": "2.13.0+cpu"}))
    ctx.facts.source = "live"
    found = diagnose_scan(result, ctx)
    text = found[0].message + found[0].fix
    assert found[0].rule == "TRI009" and "TRL 0.25.0" in text and "vllm 0.12.0" in text.lower()
    assert "1.16" not in text and "2.13" not in text


def test_without_versions_in_the_log_the_machines_are_used():
    result = scan_bytes(GUIDED.split("\n", 2)[2])
    ctx = judge(snapshot(1, H100, {"trl": "0.25.0", "vllm": "0.12.0"}))
    found = findings(result, ctx)
    assert found[0].rule == "TRI009" and "TRL 0.25.0" in found[0].fix
