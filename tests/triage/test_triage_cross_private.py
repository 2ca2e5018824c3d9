"""Private functions one package of the stack calls in another (issue #36, items 2 and 6):
scripts/derive_cross_private.py finds, in the callers' releases, the ``_``-names they import, read
or call of another package; scripts/derive_signature_history.py keeps those names' signatures (with
their callers) as it keeps public ones; triage tells a private function's ``TypeError`` as drift
only where a frame of one of its callers is in the traceback (envdoctor/triage/sighistory.py).

The new packages of the signature history (deepspeed, flash-attn, bitsandbytes from their release
tags; liger-kernel, unsloth, unsloth-zoo from their wheels) are read by the same mechanism: shipped
cases at the end.

Scripts run on wheels built here (offline)."""

from __future__ import annotations

import gzip
import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from envdoctor.findings import Severity
from envdoctor.knowledge import signature_history
from tests.triage.helpers import findings, scan_bytes, script, wheel

ENGINE_1 = """
    class Engine:
        def generate(self, prompts):
            return self._run_engine(use_tqdm=True)

        def _run_engine(self, *, use_tqdm=True):
            pass

        def _unused(self, x):
            pass

    def _helper(x):
        pass

    def _own(x):
        pass
"""
ENGINE_2 = (
    ENGINE_1.replace("def _run_engine(self, *, use_tqdm=True)", "def _run_engine(self)")
    .replace("def _unused(self, x)", "def _unused(self, x, y)")
    .replace("def _helper(x)", "def _helper(x, y)")
    .replace("def _own(x)", "def _own(x, y)")
)
CALLER = """
    import calleepkg.engine as eng
    from calleepkg.engine import Engine, _helper

    def _own(x):
        pass

    class Wrapper:
        def run(self, llm):
            llm.llm_engine._run_engine(use_tqdm=False)
            _helper(1)
            eng._own(2)
            self._cache = None
            return self._cache
"""


@pytest.fixture(scope="module")
def trees(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("cross")
    callee, caller = root / "calleepkg", root / "callerpkg"
    wheel(callee, "calleepkg", "1.0.0", {"__init__.py": "", "engine.py": ENGINE_1})
    wheel(callee, "calleepkg", "2.0.0", {"__init__.py": "", "engine.py": ENGINE_2})
    wheel(caller, "callerpkg", "0.1.0", {"__init__.py": "", "wrap.py": CALLER})
    return {"callee": callee, "caller": caller, "root": root}


def test_the_private_names_a_package_calls_in_another_are_found(trees: dict[str, Path]) -> None:
    cross = script("derive_cross_private")
    out = trees["root"] / "cross.json"
    argv = ["--caller", f"callerpkg={trees['caller']}", "--callee", f"calleepkg={trees['callee']}"]
    assert cross.main([*argv, "--out", str(out)]) == 0
    found = json.loads(out.read_text())["callees"]["calleepkg"]
    # called through an object of the callee's, imported, read through a module alias
    assert found["_run_engine"] == ["callerpkg"] and found["_helper"] == ["callerpkg"]
    assert found["_own"] == ["callerpkg"]  # eng._own: bound to the callee, though the caller has one too
    assert "_unused" not in found  # nobody else calls it
    assert "_cache" not in found  # the caller's own attribute


def test_the_signature_history_keeps_those_private_names_with_their_callers(trees: dict[str, Path]) -> None:
    cross = script("derive_cross_private")
    derive = script("derive_signature_history")
    table = trees["root"] / "cross2.json"
    argv = ["--caller", f"callerpkg={trees['caller']}", "--callee", f"calleepkg={trees['callee']}"]
    assert cross.main([*argv, "--out", str(table)]) == 0
    doc = derive.derive(None, "calleepkg", ("calleepkg",), wheels=trees["callee"], cross=table)
    fns = doc["functions"]
    assert fns["calleepkg.engine:Engine._run_engine"] == [["*,use_tqdm=", "0"], ["", "1"]]
    assert "calleepkg.engine:_helper" in fns and "calleepkg.engine:Engine._unused" not in fns
    assert doc["callers"]["_run_engine"] == ["callerpkg"]
    plain = derive.derive(None, "calleepkg", ("calleepkg",), wheels=trees["callee"], cross=None)
    assert not [q for q in plain["functions"] if "._" in q or ":_" in q] and plain["callers"] == {}


# -- triage ------------------------------------------------------------------------------------

HISTORY = {
    "schema": "envdoctor.signatures/1",
    "package": "stackpkg",
    "source": "",
    "read_from": "wheels",
    "releases": ["1.0.0", "2.0.0"],
    "functions": {
        "stackpkg.engine:Engine._run_engine": [["*,use_tqdm=", "0"], ["*,use_tqdm=,lora_request=", "1"]],
        "stackpkg.utils:_internal": [["x", "0"], ["x,y", "1"]],
    },
    "callers": {"_run_engine": ["trl", "unsloth-zoo"]},
}


@pytest.fixture
def synthetic(tmp_path: Path, monkeypatch) -> Iterator[Path]:
    (tmp_path / "stackpkg.json.gz").write_bytes(gzip.compress(json.dumps(HISTORY).encode()))
    monkeypatch.setattr(signature_history, "_dir", lambda: tmp_path)
    signature_history.history.cache_clear()
    signature_history.packages.cache_clear()
    yield tmp_path
    signature_history.history.cache_clear()
    signature_history.packages.cache_clear()


def _drift(text: str):
    return [f for f in findings(scan_bytes(text)) if f.rule == "TRI009"]


def _framed(path: str, call: str = "self.engine._run_engine(lora_request=req)") -> str:
    return (
        "Traceback (most recent call last):\n"
        '  File "/home/u/train.py", line 40, in <module>\n'
        "    trainer.train()\n"
        f'  File "{path}", line 900, in _generate\n'
        f"    {call}\n"
        "TypeError: Engine._run_engine() got an unexpected keyword argument 'lora_request'\n"
    )


def test_a_callers_frame_calling_a_private_method_is_drift(synthetic: Path) -> None:
    (f,) = _drift(_framed("/opt/conda/lib/python3.11/site-packages/unsloth_zoo/vllm_utils.py"))
    assert f.severity == Severity.ERROR and f.fix.startswith("pip install 'stackpkg>=2.0.0'")
    assert "lora_request=… added" in f.message and "unsloth-zoo" in f.message


def test_a_private_method_called_from_the_users_code_or_a_package_not_calling_it_is_quiet(
    synthetic: Path,
) -> None:
    text = (
        "Traceback (most recent call last):\n"
        '  File "/home/u/train.py", line 40, in <module>\n'
        "    engine._run_engine(lora_request=req)\n"
        "TypeError: Engine._run_engine() got an unexpected keyword argument 'lora_request'\n"
    )
    assert not _drift(text)
    assert not _drift(_framed("/opt/conda/lib/python3.11/site-packages/peft/tuners/lora/model.py"))


def test_a_bare_message_of_a_private_method_others_call_is_read(synthetic: Path) -> None:
    """No frame at all (a one-line paste): nothing says who called it; the history decides."""
    (f,) = _drift("TypeError: Engine._run_engine() got an unexpected keyword argument 'lora_request'\n")
    assert f.fix.startswith("pip install 'stackpkg>=2.0.0'")


# -- the shipped histories of the new packages ---------------------------------------------------


def test_shipped_histories_have_the_wrappers_and_kernels() -> None:
    have = set(signature_history.packages())
    assert {"deepspeed", "flash-attn", "bitsandbytes", "liger-kernel", "unsloth", "unsloth-zoo"} <= have


def test_shipped_flash_attn_softcap_from_transformers_is_drift_with_flash_attn() -> None:
    """flash-attn took softcap= from 2.6.0: transformers' flash-attention path passes it."""
    text = (
        "Traceback (most recent call last):\n"
        '  File "/usr/lib/python3.11/site-packages/transformers/modeling_flash_attention_utils.py", '
        "line 380, in _flash_attention_forward\n"
        "    attn_output = flash_attn_varlen_func(q, k, v, softcap=softcap, **flash_kwargs)\n"
        "TypeError: flash_attn_varlen_func() got an unexpected keyword argument 'softcap'\n"
    )
    (f,) = _drift(text)
    assert "flash-attn" in f.fix and ">=2.6.0" in f.fix
    assert "between transformers and flash-attn" in f.message or "flash-attn" in f.message


def test_shipped_liger_loss_keyword_from_trl_is_drift_with_liger() -> None:
    """TRL passes importance_sampling_level= to Liger's GRPO loss; older Liger releases lack it."""
    text = (
        "trl==0.22.0 liger-kernel==0.6.0\n"
        "Traceback (most recent call last):\n"
        '  File "/usr/lib/python3.11/site-packages/trl/trainer/grpo_trainer.py", line 520, in __init__\n'
        "    self.liger_grpo_loss = LigerFusedLinearGRPOLoss(\n"
        "TypeError: LigerFusedLinearGRPOLoss.__init__() got an unexpected keyword argument "
        "'importance_sampling_level'\n"
    )
    (f,) = _drift(text)
    assert f.severity == Severity.ERROR and "liger-kernel>=0.6." in f.fix
    assert "API drift between trl and liger-kernel" in f.message


def test_shipped_deepspeed_backward_keyword_from_accelerate_is_drift_with_deepspeed() -> None:
    text = (
        "Traceback (most recent call last):\n"
        '  File "/usr/lib/python3.11/site-packages/accelerate/utils/deepspeed.py", line 270, in backward\n'
        "    self.engine.backward(loss, allreduce_gradients=False)\n"
        "TypeError: DeepSpeedEngine.backward() got an unexpected keyword argument 'allreduce_gradients'\n"
    )
    (f,) = _drift(text)
    assert "API drift between accelerate and deepspeed" in f.message and "allreduce_gradients" in f.message
    assert "deepspeed<0.16.0" in f.fix


def test_shipped_deepspeed_symbols_name_a_removed_engine_method() -> None:
    """The symbol history reads deepspeed too: a method the engine gained at 0.16.4."""
    text = (
        "deepspeed==0.15.4\n"
        "Traceback (most recent call last):\n"
        '  File "/usr/lib/python3.11/site-packages/accelerate/accelerator.py", line 3500, in get_state_dict\n'
        "    state_dict = model._consolidated_16bit_state_dict()\n"
        "AttributeError: 'DeepSpeedEngine' object has no attribute '_consolidated_16bit_state_dict'\n"
    )
    (f,) = _drift(text)
    assert "deepspeed>=0.16.4" in f.fix and f.severity == Severity.ERROR  # the log's 0.15.4 lacks it


def test_a_deepspeed_method_every_release_has_gets_no_drift_claim() -> None:
    text = (
        "Traceback (most recent call last):\n"
        '  File "/home/u/train.py", line 12, in <module>\n'
        "    engine.step(closure)\n"
        "TypeError: DeepSpeedEngine.step() got an unexpected keyword argument 'closure_fn'\n"
    )
    assert not _drift(text)
