"""The frame index of the packages most tracebacks pass through (issue 36): accelerate, peft,
DeepSpeed and transformers (shipped; transformers and vLLM from wheels): the derive script's
file selection and installed prefixes, triage reading their frames from site-packages and from a
source checkout (``src/transformers/…``), a frame that fits several releases giving the range and
never one guess, and the inferred versions feeding the catalogue and TRI009 as inferred.

The derive script runs on small git repositories made here (offline); the shipped-index tests read
frames of real dev logs (docs/validation/heldout-2026-11-28*, tests/triage/real)."""

from __future__ import annotations

import fnmatch
import os
import shutil
import textwrap
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pytest

from envdoctor.findings import Severity
from envdoctor.knowledge import fix_history, frame_index
from envdoctor.triage.draft import Log
from envdoctor.triage.logversions import LogVersion
from tests.triage.helpers import findings, scan_bytes
from tests.triage.test_triage_fix_history import _commit, _git
from tests.triage.test_triage_frame_versions import _load

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="needs git")


@pytest.fixture(scope="module")
def derive() -> ModuleType:
    return _load("derive_frame_index")


ENGINE = """
    class DeepSpeedEngine:
        def backward(self, loss):
            self.optimizer.backward(loss)
            return loss
"""
BUILDER = """
    class OpBuilder:
        def load(self, verbose=True):
            return self.jit_load(verbose)
"""


@pytest.fixture(scope="module")
def ds_repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A DeepSpeed-like repository: ``op_builder/`` at the top, linked from ``ds/ops/op_builder``
    (installed there), and an inference folder no training traceback passes through."""
    r = tmp_path_factory.mktemp("ds")
    _git(r, "init", "-q", "-b", "main")
    (r / "ds" / "ops").mkdir(parents=True)
    os.symlink("../../op_builder", r / "ds" / "ops" / "op_builder")
    _commit(
        r,
        {
            "ds/__init__.py": "",
            "ds/runtime/engine.py": ENGINE,
            "ds/inference/engine.py": ENGINE,
            "op_builder/builder.py": BUILDER,
        },
        "Initial import",
    )
    _git(r, "tag", "v0.1.0")
    _commit(r, {"ds/runtime/engine.py": "import os\n" + textwrap.dedent(ENGINE)}, "An import")
    _git(r, "tag", "v0.2.0")
    return r


def test_a_file_selection_and_an_installed_prefix(derive: ModuleType, ds_repo: Path) -> None:
    got = derive.derive(
        ds_repo / ".git",
        "deepspeed",
        ("ds", "op_builder>ops/op_builder"),
        r"^v(\d+\.\d+\.\d+)$",
        "2020-01-01",
        include=("runtime/*", "ops/op_builder/*"),
    )
    # the link is no file; the top-level folder is read under the path it is installed at; the
    # inference folder is left out
    assert sorted(got["files"]) == ["ops/op_builder/builder.py", "runtime/engine.py"]
    assert got["include"] == ["runtime/*", "ops/op_builder/*"]
    assert [r[:3] for r in got["files"]["runtime/engine.py"]["DeepSpeedEngine.backward"]] == [
        [0, 0, 3],
        [1, 1, 4],
    ]
    everything = derive.derive(ds_repo / ".git", "deepspeed", ("ds",), r"^v(\d+\.\d+\.\d+)$", "2020-01-01")
    assert sorted(everything["files"]) == ["inference/engine.py", "runtime/engine.py"]
    assert "include" not in everything


def test_the_packages_and_their_selections(derive: ModuleType) -> None:
    for dist, root in (
        ("accelerate", "src/accelerate"),
        ("peft", "src/peft"),
        ("deepspeed", "deepspeed"),
        ("transformers", "src/transformers"),
    ):
        assert root in derive.PACKAGES[dist][2]
    assert "op_builder>ops/op_builder" in derive.PACKAGES["deepspeed"][2]

    def kept(dist: str, module: str) -> bool:
        return any(fnmatch.fnmatchcase(module, p) for p in derive.FILES_OF[dist])

    for module in (
        "trainer.py",
        "trainer_utils.py",
        "training_args.py",
        "modeling_utils.py",
        "generation/utils.py",
        "integrations/deepspeed.py",
        "utils/import_utils.py",
        "models/qwen2/modeling_qwen2.py",
        "models/qwen3/modeling_qwen3.py",
        "models/auto/auto_factory.py",
    ):
        assert kept("transformers", module), module
    # the model files of llama, qwen2 and qwen3 only (the shipped index's budget, 2026-11-29)
    for module in (
        "models/bert/modeling_bert.py",
        "models/gemma3/modeling_gemma3.py",
        "models/qwen2_5_vl/processing_qwen2_5_vl.py",
    ):
        assert not kept("transformers", module), module
    assert kept("deepspeed", "runtime/zero/partition_parameters.py")
    assert kept("deepspeed", "ops/op_builder/builder.py")
    assert not kept("deepspeed", "inference/v2/engine_v2.py")


# -- triage against indexes derived here ---------------------------------------------------------

TRAINER = """
    class Trainer:
        def training_step(self, model, inputs):
            loss = self.compute_loss(model, inputs)
            self.accelerator.backward(loss)
            return loss.detach()
"""


@pytest.fixture(scope="module")
def hf_repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A transformers-like repository (``src/transformers``): three releases, the method moved down
    a line in the third."""
    r = tmp_path_factory.mktemp("hf")
    _git(r, "init", "-q", "-b", "main")
    _commit(r, {"src/transformers/__init__.py": "", "src/transformers/trainer.py": TRAINER}, "Initial")
    _git(r, "tag", "v4.50.0")
    _commit(r, {"src/transformers/README": "x"}, "Docs")
    _git(r, "tag", "v4.51.0")
    _commit(r, {"src/transformers/trainer.py": "import os\n" + textwrap.dedent(TRAINER)}, "Import")
    _git(r, "tag", "v4.52.0")
    return r


@pytest.fixture
def indexed(derive: ModuleType, hf_repo: Path, ds_repo: Path, tmp_path: Path, monkeypatch) -> Iterator[Path]:
    folder = tmp_path / "frames"
    tags = r"^v(\d+\.\d+\.\d+)$"
    derive.write(
        derive.derive(hf_repo / ".git", "transformers", ("src/transformers",), tags, "2020-01-01"),
        folder / "transformers.json.gz",
    )
    derive.write(
        derive.derive(ds_repo / ".git", "deepspeed", ("ds", "op_builder>ops/op_builder"), tags, "2020-01-01"),
        folder / "deepspeed.json.gz",
    )
    monkeypatch.setattr(frame_index, "_dir", lambda: folder)
    monkeypatch.setattr(fix_history, "_dir", lambda: tmp_path / "no-fixes")
    caches = (frame_index.frame_index, frame_index.packages, fix_history.fix_history, fix_history.packages)
    for c in caches:
        c.cache_clear()
    yield folder
    for c in caches:
        c.cache_clear()


def _tb(*frames: tuple[str, int, str, str], message: str = "RuntimeError: boom") -> str:
    lines = ["Traceback (most recent call last):", '  File "/home/u/train.py", line 40, in <module>']
    lines.append("    trainer.train()")
    for path, line, func, code in frames:
        lines.append(f'  File "{path}", line {line}, in {func}')
        if code:
            lines.append(f"    {code}")
    return "\n".join([*lines, message, ""])


def _versions(text: str) -> dict[str, LogVersion]:
    from envdoctor.triage.diagnose import scan_versions

    return scan_versions(scan_bytes(text))


SITE = "/opt/env/lib/python3.11/site-packages"


def test_frames_of_transformers_and_deepspeed_place_their_releases(indexed: Path) -> None:
    text = _tb(
        (f"{SITE}/transformers/trainer.py", 5, "training_step", "self.accelerator.backward(loss)"),
        (f"{SITE}/deepspeed/ops/op_builder/builder.py", 3, "load", "return self.jit_load(verbose)"),
    )
    got = _versions(text)
    hf, ds = got["transformers"], got["deepspeed"]
    # line 5 with that text: 4.50.0 and 4.51.0 (the same file), not 4.52.0 (moved down a line)
    assert (hf.how, hf.low, hf.version, hf.newest) == ("frames", "4.50.0", "4.51.0", False)
    assert not hf.exact and hf.range_text() == "4.50.0 to 4.51.0"
    # an op_builder frame (installed under deepspeed/ops/) fits both releases: open at the top
    assert (ds.low, ds.version, ds.newest) == ("0.1.0", "0.2.0", True) and not ds.exact
    moved = _tb((f"{SITE}/transformers/trainer.py", 6, "training_step", "self.accelerator.backward(loss)"))
    hf = _versions(moved)["transformers"]
    assert (hf.low, hf.version, hf.newest) == ("4.52.0", "4.52.0", True) and not hf.exact


def test_a_source_checkout_of_transformers_is_read_too(indexed: Path) -> None:
    path = "/home/u/transformers/src/transformers/trainer.py"
    v = _versions(_tb((path, 5, "training_step", "self.accelerator.backward(loss)")))["transformers"]
    assert (v.low, v.version) == ("4.50.0", "4.51.0")
    assert v.frames and v.frames[0].startswith("trainer.py:5 in training_step")


def test_a_frame_the_index_cannot_place_leaves_no_guess(indexed: Path) -> None:
    # a file the selection left out, a function the file never had: nothing placed
    assert "deepspeed" not in _versions(_tb((f"{SITE}/deepspeed/inference/x.py", 3, "f", "g()")))
    assert "transformers" not in _versions(_tb((f"{SITE}/transformers/trainer.py", 5, "evaluate", "")))
    # the function with a text no release has on that line: no range at all
    wrong = _tb((f"{SITE}/transformers/trainer.py", 5, "training_step", "x()"))
    assert "transformers" not in _versions(wrong)


def test_a_version_the_log_shows_wins_over_the_frames(indexed: Path) -> None:
    text = "transformers==4.52.0\n" + _tb(
        (f"{SITE}/transformers/trainer.py", 5, "training_step", "self.accelerator.backward(loss)")
    )
    v = _versions(text)["transformers"]
    assert (v.how, v.version) == ("listing", "4.52.0")


# -- the shipped index on real frames ---------------------------------------------------------------


def _shipped(dist: str) -> frame_index.FrameIndex:
    idx = frame_index.frame_index(dist)
    if idx is None:
        pytest.skip(f"no shipped {dist} frame index")
    return idx


def _fit(dist: str, module: str, function: str, line: int, code: str) -> list[str]:
    idx = _shipped(dist)
    fits = idx.fits(module, function, line, code)
    assert fits is not None, (dist, module, function)
    return [idx.releases[i] for i in sorted(fits)]


def test_the_shipped_index_places_real_deepspeed_frames_in_a_range() -> None:
    """trl#4693 (docs/validation/heldout-2026-11-28e/logs/004.log, DeepSpeed 0.17.6): the ZeRO-3
    coordinator's frame fits 0.16.4 to 0.18.5, a range holding the run's release."""
    fits = _fit(
        "deepspeed",
        "runtime/zero/partitioned_param_coordinator.py",
        "record_parameters",
        217,
        "step_id = self.__step_id_module_fetched_for[sub_module.ds_id].popleft()",
    )
    assert "0.17.6" in fits and len(fits) > 1


def test_real_deepspeed_frames_that_fit_several_releases_give_the_range() -> None:
    """X-R1's ZeRO-3 free_param assertion (tests/triage/real/kfc-x-r1-23-ds-active-sub-modules.yaml):
    three frames intersect to 0.15.1–0.16.2; a range, never one release guessed from it."""
    log = textwrap.dedent(
        f"""\
        Traceback (most recent call last):
          File "{SITE}/deepspeed/runtime/zero/partition_parameters.py", line 1568, in _partition_param
            free_param(param)
          File "{SITE}/deepspeed/utils/nvtx.py", line 18, in wrapped_fn
            ret_val = func(*args, **kwargs)
          File "{SITE}/deepspeed/runtime/zero/partition_parameters.py", line 284, in free_param
            assert not param.ds_active_sub_modules, param.ds_summary()
        AssertionError: {{'id': 0, 'status': 'AVAILABLE', 'numel': 0, 'ds_numel': 0}}
        """
    )
    _shipped("deepspeed")
    v = _versions(log)["deepspeed"]
    assert (v.how, v.low, v.version, v.newest) == ("frames", "0.15.1", "0.16.2", False)
    assert not v.exact and v.range_text() == "0.15.1 to 0.16.2"


def test_the_shipped_index_places_real_peft_and_accelerate_frames() -> None:
    """unsloth#1624 (heldout-2026-11-28/logs/002.log, 2025-02): PeftModel.__getattr__ at line 824
    with that text is peft 0.14.0 only; accelerate's backward at its 1.4.0 line fits 1.4.0."""
    code = "return super().__getattr__(name)  # defer to nn.Module's logic"
    assert _fit("peft", "peft_model.py", "__getattr__", 824, code) == ["0.14.0"]
    backward = "self.deepspeed_engine_wrapped.backward(loss, **kwargs)"
    assert "1.4.0" in _fit("accelerate", "accelerator.py", "backward", 2321, backward)


# -- the inferred versions where the log's own feed ---------------------------------------------------


def _log(versions: dict[str, LogVersion]) -> Log:
    return Log({}, {}, None, versions=versions)


def test_the_catalogue_reads_an_inferred_deepspeed_range_only_when_it_lies_inside() -> None:
    """A catalogue entry's range against a range the frames fit: a match when both its ends lie
    inside; no verdict otherwise, even a range wholly outside (a source checkout between two releases
    fits the later one's lines: tests/triage/real/kfc-trl-2962-… ran a TRL main before 0.16.0 whose
    frame fits 0.16.0 to 0.18.2; ruling the entry out on it would lose the right answer), nor a
    range open at the top (the run may have a release envdoctor has not read)."""
    from envdoctor.triage.classes import versions_verdict

    spec = {"deepspeed": ">=0.16.0,<0.17.0"}
    one = LogVersion("0.16.3", 3, "frames", low="0.16.3")
    verdict, detail = versions_verdict(spec, _log({"deepspeed": one}))
    assert verdict is True and "deepspeed 0.16.3 inferred from the traceback's frames" in detail
    inside = LogVersion("0.16.3", 3, "frames", low="0.16.0")
    assert versions_verdict(spec, _log({"deepspeed": inside}))[0] is True
    for low, high in (("0.15.1", "0.16.2"), ("0.15.1", "0.15.4"), ("0.15.1", "0.17.0")):
        ranged = LogVersion(high, 3, "frames", low=low)
        assert versions_verdict(spec, _log({"deepspeed": ranged}))[0] is None, (low, high)
    newest = LogVersion("0.19.5", 3, "frames", low="0.19.4", newest=True)
    assert versions_verdict({"deepspeed": ">=0.19.4"}, _log({"deepspeed": newest}))[0] is None
    # a single release the frames fit is a version: it can rule an entry out
    verdict, detail = versions_verdict(spec, _log({"deepspeed": LogVersion("0.15.4", 3, "frames")}))
    assert verdict is False and "deepspeed 0.15.4 inferred from the traceback's frames" in detail


def test_tri009_names_a_release_the_frames_place_apart_from_the_versions_shown() -> None:
    """accelerate 1.4.0's unwrap_model line, the failure at the boundary from trl: TRI009 says the
    frames place accelerate 1.4.0, not that the log shows it."""
    _shipped("accelerate")
    log = _tb(
        (
            f"{SITE}/trl/trainer/grpo_trainer.py",
            1200,
            "_move_model_to_vllm",
            "with unwrap_model_for_generation(self.model_wrapped, self.accelerator) as unwrapped_model:",
        ),
        (
            f"{SITE}/accelerate/accelerator.py",
            2717,
            "unwrap_model",
            "return extract_model_from_parallel(model, keep_fp32_wrapper, keep_torch_compile)",
        ),
        message="TypeError: extract_model_from_parallel() takes from 1 to 2 positional arguments but 3 "
        "were given",
    )
    (f,) = [f for f in findings(scan_bytes(log)) if f.rule == "TRI009"]
    assert f.severity == Severity.ERROR
    assert "the traceback's frames place accelerate 1.4.0 (inferred from the traceback's frames)" in f.message
    assert "the log shows accelerate" not in f.message
    shown = "accelerate==1.4.0\n" + log
    (f,) = [f for f in findings(scan_bytes(shown)) if f.rule == "TRI009"]
    assert "the log shows accelerate 1.4.0" in f.message and "inferred" not in f.message
