"""The frame index of transformers and vLLM (issue 36): derived from the package index's wheels
(transformers 4.40.0-5.24.0, vLLM 0.7.0-0.33.0; scripts/derive_frame_index.py --wheels), the modules
a trainer calls into and the engine's path to its worker only, and what their frames do to a
catalogue entry's severity: a range the frames place wholly inside the entry's releases is an
error as a version the log shows would be; a range the entry's bound cuts stays a warning and says
so; frames that fit no release together (a checkout between releases) leave it as before.

The frames are real: their lines and source text are those of vLLM's
``model_executor/model_loader/weight_utils.py`` (``DisabledTqdm.__init__`` at line 76 in 0.8.2 to
0.8.5.post1, line 84 from 0.11.0 on) and of the dev logs (docs/validation/heldout-2026-11-29*)."""

from __future__ import annotations

import fnmatch
from pathlib import Path

import pytest

from envdoctor.findings import Severity
from envdoctor.knowledge import frame_index
from tests.triage.helpers import findings, scan_bytes
from tests.triage.test_triage_frame_versions import _load

ROOT = Path(__file__).resolve().parents[2]
SITE = "/opt/env/lib/python3.11/site-packages"
WEIGHTS = f"{SITE}/vllm/model_executor/model_loader/weight_utils.py"
SUPER = "super().__init__(*args, **kwargs, disable=True)"
ENTRY = "vllm-disabled-tqdm-duplicate-disable"  # vllm >=0.7.2,<0.11.1


def _log(*frames: tuple[str, int, str, str]) -> bytes:
    lines = ["Traceback (most recent call last):"]
    for path, line, func, code in frames:
        lines.append(f'  File "{path}", line {line}, in {func}')
        if code:
            lines.append(f"    {code}")
    lines.append("TypeError: tqdm.__init__() got multiple values for keyword argument 'disable'")
    return ("\n".join(lines) + "\n").encode()


def _entry_finding(log: bytes):  # type: ignore[no-untyped-def]
    (f,) = [f for f in findings(scan_bytes(log)) if f.evidence.get("known_failure") == ENTRY]
    return f


@pytest.mark.parametrize(
    ("dist", "first", "last", "most"),
    [("transformers", "4.40.0", "5.24.0", 450_000), ("vllm", "0.7.0", "0.33.0", 450_000)],
)
def test_the_shipped_indexes_of_transformers_and_vllm(dist: str, first: str, last: str, most: int) -> None:
    idx = frame_index.frame_index(dist)
    assert idx is not None and idx.releases[0] == first and idx.releases[-1] == last
    assert (ROOT / "rules" / "knowledge" / "frames" / f"{dist}.json.gz").stat().st_size <= most
    assert dist in frame_index.packages()


def test_the_file_selection_is_the_trainer_and_engine_path() -> None:
    derive = _load("derive_frame_index")
    for dist, wanted, left_out in (
        (
            "transformers",
            [
                "trainer.py",
                "training_args.py",
                "modeling_utils.py",
                "generation/utils.py",
                "models/auto/auto_factory.py",
            ],
            [
                "models/gemma3/modeling_gemma3.py",
                "generation/tf_utils.py",
                "models/qwen2_5_vl/modular_qwen2_5_vl.py",
            ],
        ),
        (
            "vllm",
            [
                "entrypoints/llm.py",
                "v1/engine/core.py",
                "engine/arg_utils.py",
                "v1/executor/multiproc_executor.py",
            ],
            [
                "model_executor/models/qwen2.py",
                "lora/ops/triton_ops/lora_shrink_op.py",
                "config/speculative.py",
            ],
        ),
    ):
        pats = derive.FILES_OF[dist]
        for module in wanted:
            assert any(fnmatch.fnmatchcase(module, p) for p in pats), module
        for module in left_out:
            assert not any(fnmatch.fnmatchcase(module, p) for p in pats), module


def test_frames_that_place_vllm_inside_the_entrys_releases_make_it_an_error() -> None:
    """DisabledTqdm.__init__'s line 76 with its source line fits 0.8.2 to 0.8.5.post1: inside
    >=0.7.2,<0.11.1, the severity a version the log showed would give, the frame as evidence."""
    f = _entry_finding(
        _log((WEIGHTS, 440, "safetensors_weights_iterator", ""), (WEIGHTS, 76, "__init__", SUPER))
    )
    assert f.severity == Severity.ERROR and f.evidence["versions_match"] is True
    assert "vllm 0.8.2 to 0.8.5.post1 inferred from the traceback's frames at" in f.message
    assert "model_loader/weight_utils.py:440 in safetensors_weights_iterator" in f.message


def test_frames_whose_range_the_entrys_bound_cuts_stay_a_warning() -> None:
    """Line 84 without its source text fits 0.11.0 and releases from 0.11.1 on: the bound
    (<0.11.1) cuts the range, so the finding stays a warning and says where the frames place it."""
    f = _entry_finding(_log((WEIGHTS, 84, "__init__", "")))
    assert f.severity == Severity.WARNING and f.evidence.get("versions_match") is None
    assert "the traceback's frames place vllm 0.11.0 to" in f.message
    assert "not wholly inside the entry's range" in f.message


def test_frames_that_fit_no_release_together_leave_the_warning_as_before() -> None:
    """A frame of 0.8.x beside one of 0.17.x (a checkout between releases, a patched file): no
    range, no verdict: the warning a log without versions gets."""
    f = _entry_finding(
        _log((WEIGHTS, 720, "safetensors_weights_iterator", ""), (WEIGHTS, 76, "__init__", SUPER))
    )
    assert f.severity == Severity.WARNING and f.evidence.get("versions_match") is None
    assert "the log shows no versions of vllm" in f.message
    assert "inferred" not in f.message


def test_a_version_the_log_shows_still_wins() -> None:
    f = _entry_finding(b"vllm==0.11.0\n" + _log((WEIGHTS, 84, "__init__", "")))
    assert f.severity == Severity.ERROR and "vllm 0.11.0 (" in f.message and "inferred" not in f.message


def test_a_real_transformers_5_frame_names_vllms_tokenizer_failure_as_an_error() -> None:
    """heldout-2026-11-29d/logs12d/014 (the thread's settled cause: transformers 5.0.0 without
    all_special_tokens_extended under an older vLLM): its one frame of transformers,
    tokenization_utils_base.py:1326 in __getattr__, fits 5.0.0 only: the entry (transformers
    >=5.0.0.dev0) holds, an error (it was a warning without the transformers index)."""
    log = ROOT / "docs/validation/heldout-2026-11-29d/logs12d/logs/014.log"
    found = [f for f in findings(scan_bytes(log.read_bytes())) if f.rule == "TRI011"]
    assert found and found[0].severity == Severity.ERROR
    assert "transformers 5.0.0 inferred from the traceback's frames" in found[0].message


def test_a_log_without_a_vllm_frame_does_not_load_its_index() -> None:
    """Loading stays lazy: a TRL traceback reads TRL's index, not vLLM's or transformers'."""
    frame_index.frame_index.cache_clear()
    log = (
        "Traceback (most recent call last):\n"
        f'  File "{SITE}/trl/trainer/grpo_trainer.py", line 900, in _generate\n'
        "ValueError: boom\n"
    )
    findings(scan_bytes(log.encode()))
    loaded = {c for c in ("vllm", "transformers") if _cached(c)}
    assert not loaded


def _cached(dist: str) -> bool:
    # lru_cache keeps no key listing: a hit on a fresh call means it was loaded
    before = frame_index.frame_index.cache_info().hits
    frame_index.frame_index(dist)
    return frame_index.frame_index.cache_info().hits > before


def test_a_frame_in_a_file_the_selection_leaves_out_is_no_evidence() -> None:
    """vLLM's model files are left out of the index: a frame in one (qwen2.py's load_weights,
    at a line no indexed file has) neither narrows nor empties the range the other frames place."""
    qwen2 = f"{SITE}/vllm/model_executor/models/qwen2.py"
    f = _entry_finding(
        _log(
            (qwen2, 9999, "load_weights", "for name, loaded_weight in weights:"),
            (WEIGHTS, 440, "safetensors_weights_iterator", ""),
            (WEIGHTS, 76, "__init__", SUPER),
        )
    )
    assert f.severity == Severity.ERROR
    assert "vllm 0.8.2 to 0.8.5.post1 inferred from the traceback's frames" in f.message
