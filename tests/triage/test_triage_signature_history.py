"""API drift of a call's arguments told by the signature history (issue #36, item 2:
envdoctor/triage/sighistory.py, rules/knowledge/signatures/): a ``TypeError`` (unexpected keyword,
missing positional, wrong arity) whose function one package's history shows changing its parameter
list at a release is drift between the caller and that package, answered with the releases that fit
the call; a function of the user's, or a name several functions share with different histories,
gets no claim.

Two kinds of tests: scripts/derive_signature_history.py on wheels built here (offline), then triage
against the history derived from them (releases chosen here); and triage against the shipped
history (real releases)."""

from __future__ import annotations

import gzip
import json
import textwrap
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pytest

from envdoctor.findings import Severity
from envdoctor.knowledge import signature_history
from tests.triage.helpers import findings, scan_bytes, script, wheel

ROOT = Path(__file__).resolve().parents[2]
PKG = "stackpkg"  # a package no shipped history has: the lookups' logic alone


@pytest.fixture(scope="module")
def derive() -> ModuleType:
    return script("derive_signature_history")


def _wheel(folder: Path, version: str, files: dict[str, str]) -> None:
    wheel(folder, PKG, version, files)


UTILS = """
    def init_worker(worker_id):
        pass

    def stable(a, b=1):
        pass

    def _private(x):
        pass
"""
MODEL = """
    class Model:
        def forward(self, input_ids, attention_mask=None):
            pass

        def get_rope_index(self, input_ids, mm_token_type_ids=None):
            pass

        @staticmethod
        def build(x, /, y, *args, z, **kw):
            pass

    class Other:
        def forward(self, x):
            pass

    class Third:
        def forward(self, x, y):
            pass

    class PlanTrainer:
        def _prepare_inputs(self, inputs):
            pass

        def __repr__(self):
            pass
"""


@pytest.fixture(scope="module")
def wheels(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("wheels")
    base = {"__init__.py": "", "_internal.py": "def init_worker(a, b, c):\n    pass\n"}
    _wheel(root, "1.0.0", {**base, "utils.py": UTILS, "model.py": MODEL, "modular_model.py": MODEL})
    model_2 = MODEL.replace("def _prepare_inputs(self, inputs)", "def _prepare_inputs(self, inputs, mode)")
    model_2 = model_2.replace("def forward(self, x):", "def forward(self, x, k=None):")
    utils_2 = UTILS.replace("init_worker(worker_id)", "init_worker(worker_id, num_workers, rank)")
    _wheel(root, "1.1.0", {**base, "utils.py": utils_2, "model.py": model_2})
    model_3 = model_2.replace("attention_mask=None)", "attention_mask=None, cache_position=None)")
    model_3 = model_3.replace("mm_token_type_ids=None)", "mm_token_type_ids)")
    model_3 = model_3.replace("def forward(self, x, y):", "def forward(self, x, y, k=None):")
    files_3 = {"utils.py": utils_2, "model.py": model_3, "modular_model.py": model_3, "tests/t.py": UTILS}
    _wheel(root, "1.2.0", {**base, **files_3})
    return root


@pytest.fixture(scope="module")
def derived(derive: ModuleType, wheels: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("signatures")
    argv = ["--wheels", str(wheels), "--package", PKG, "--root", PKG, "--out", str(out)]
    assert derive.main(argv) == 0
    return out


def _doc(out: Path) -> dict:
    return json.loads(gzip.decompress((out / f"{PKG}.json.gz").read_bytes()))


def test_only_changed_signatures_are_kept_with_their_releases(derived: Path) -> None:
    doc = _doc(derived)
    assert doc["schema"] == "envdoctor.signatures/1" and doc["releases"] == ["1.0.0", "1.1.0", "1.2.0"]
    fns = doc["functions"]
    assert fns[f"{PKG}.utils:init_worker"] == [["worker_id", "0"], ["worker_id,num_workers,rank", "1-2"]]
    assert fns[f"{PKG}.model:Model.get_rope_index"] == [
        ["input_ids,mm_token_type_ids=", "0-1"],
        ["input_ids,mm_token_type_ids", "2"],
    ]
    assert fns[f"{PKG}.model:PlanTrainer._prepare_inputs"][1] == ["inputs,mode", "1-2"]  # a Trainer's hook
    # unchanged, private, a test's or a private module's: not kept
    assert f"{PKG}.utils:stable" not in fns and f"{PKG}.model:Model.build" not in fns
    assert not [q for q in fns if "_private" in q or "_internal" in q or ".tests" in q or "__repr__" in q]
    assert not [q for q in fns if ".modular_" in q]  # transformers' generator sources: never imported


def test_a_signature_is_written_as_python_reads_it(derive: ModuleType) -> None:
    fns = derive.functions(textwrap.dedent(MODEL))
    assert fns["Model.build"] == "!x,/,y,*args,z,**"  # a staticmethod keeps its first argument
    assert fns["Model.forward"] == "input_ids,attention_mask="
    sig = signature_history.Signature(fns["Model.build"])
    assert sig.static and sig.positional() == (2, None) and sig.requires("z")
    assert sig.takes_keyword("anything")  # **kwargs


def test_the_budget_is_held(derive: ModuleType, wheels: Path, tmp_path: Path) -> None:
    argv = [
        "--wheels",
        str(wheels),
        "--package",
        PKG,
        "--root",
        PKG,
        "--out",
        str(tmp_path),
        "--budget",
        "10",
    ]
    assert derive.main(argv) == 1


def test_all_reads_the_tagged_packages_each_from_its_own_date(
    derive: ModuleType, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``--all`` (the documented usage) reads each package of PACKAGES from its own ``since``
    (flash-attn and bitsandbytes from 2023-07: their shipped files start there); a package shipped
    from its wheels (TRL) is refused there, not silently skipped."""
    seen: dict[str, str] = {}

    def fake(git_dir, package, roots, tags, since, source, wheels=None):  # type: ignore[no-untyped-def]
        seen[package] = since
        return {"releases": [], "functions": {}}

    monkeypatch.setattr(derive, "derive", fake)
    for name in ("huggingface+peft", "Dao-AILab+flash-attention"):
        (tmp_path / "m" / name / "repo").mkdir(parents=True)
    argv = ["--all", "--mirrors", str(tmp_path / "m"), "--out", str(tmp_path / "o")]
    assert derive.main(argv) == 0
    assert seen == {"peft": derive.SINCE, "flash-attn": "2023-07-01"}
    assert derive.main([*argv, "--since", "2025-01-01"]) == 0 and set(seen.values()) == {"2025-01-01"}
    with pytest.raises(SystemExit):
        derive.main([*argv, "--only", "trl"])


@pytest.fixture
def synthetic(derived: Path, monkeypatch) -> Iterator[Path]:
    """Triage reads the history derived from the wheels above in place of the shipped one."""
    monkeypatch.setattr(signature_history, "_dir", lambda: derived)
    signature_history.history.cache_clear()
    signature_history.packages.cache_clear()
    yield derived
    signature_history.history.cache_clear()
    signature_history.packages.cache_clear()


def _drift(text: str):
    return [f for f in findings(scan_bytes(text)) if f.rule == "TRI009"]


def test_missing_positionals_a_release_added(synthetic: Path) -> None:
    (f,) = _drift(
        "TypeError: init_worker() missing 2 required positional arguments: 'num_workers' and 'rank'\n"
    )
    assert f.severity == Severity.ERROR and f.fix.startswith(f"pip install '{PKG}<1.1.0'")
    assert "num_workers and rank became required between stackpkg 1.0.0 and 1.1.0" in f.message
    assert "num_workers, rank added" in f.message and "signature history" in f.message


def test_a_parameter_that_became_required(synthetic: Path) -> None:
    """The symbol history sees the name in every release; only the signatures tell the default went."""
    text = "TypeError: Model.get_rope_index() missing 1 required positional argument: 'mm_token_type_ids'\n"
    (f,) = _drift(text)
    assert f.fix.startswith(f"pip install '{PKG}<1.2.0'")
    assert "mm_token_type_ids=… → mm_token_type_ids" in f.message


def test_too_many_positionals_for_a_hook(synthetic: Path) -> None:
    """A bare name (Python before 3.10 prints no class): the one function of that name decides."""
    (f,) = _drift("TypeError: _prepare_inputs() takes 2 positional arguments but 3 were given\n")
    assert f.fix.startswith(f"pip install '{PKG}>=1.1.0'") and "mode added" in f.message


def test_an_unexpected_keyword_of_a_method_the_symbol_history_has_no_parameters_of(synthetic: Path) -> None:
    (f,) = _drift("TypeError: Model.forward() got an unexpected keyword argument 'cache_position'\n")
    assert f.fix.startswith(f"pip install '{PKG}>=1.2.0'") and "cache_position=… added" in f.message


def test_the_users_own_function_gets_no_claim(synthetic: Path) -> None:
    assert not _drift("TypeError: my_reward() missing 1 required positional argument: 'completions'\n")
    text = (
        "Traceback (most recent call last):\n"
        '  File "/home/u/train.py", line 9, in init_worker\n'
        "    init_worker(0)\n"
        "TypeError: init_worker() missing 2 required positional arguments: 'num_workers' and 'rank'\n"
    )
    assert not _drift(text)  # the user's code runs a init_worker of its own


def test_a_name_several_functions_share_with_different_histories_gets_no_claim(synthetic: Path) -> None:
    """Other.forward took k= from 1.1.0, Third.forward from 1.2.0: a bare forward() cannot tell."""
    assert not _drift("TypeError: forward() got an unexpected keyword argument 'k'\n")
    (f,) = _drift("TypeError: Third.forward() got an unexpected keyword argument 'k'\n")
    assert f.fix.startswith(f"pip install '{PKG}>=1.2.0'")


def test_a_message_no_release_gives_gets_no_claim(synthetic: Path) -> None:
    """init_worker never took 5 positionals at most: the history does not explain this message."""
    assert not _drift("TypeError: init_worker() takes 5 positional arguments but 6 were given\n")


def test_the_history_is_read_only_for_a_calls_type_error(monkeypatch) -> None:
    def refuse(package: str) -> None:
        raise AssertionError(f"the signature history of {package} was read")

    monkeypatch.setattr(signature_history, "history", refuse)
    monkeypatch.setattr(signature_history, "packages", lambda: ("trl",))
    findings(scan_bytes("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB\n"))
    findings(scan_bytes("ValueError: num_generations must divide the batch\n"))
    findings(scan_bytes("AttributeError: 'GRPOTrainer' object has no attribute 'llm'\n"))
    findings(scan_bytes("step 1 loss 0.5\nstep 2 loss 0.4\n"))


# -- the shipped history ---------------------------------------------------------------------


def test_shipped_grpo_trainer_reward_funcs_became_optional() -> None:
    text = "TypeError: GRPOTrainer.__init__() missing 1 required positional argument: 'reward_funcs'\n"
    (f,) = _drift(text)
    assert f.fix.startswith("pip install 'trl>=1.8.0'") and "reward_funcs → reward_funcs=…" in f.message


def test_shipped_qwen3_vl_get_rope_index_needs_mm_token_type_ids_from_transformers_5_3() -> None:
    """DravenALG/VLANeXt#9 (a held-out log of the development sets): the repository was written for
    transformers 5.1; 5.3.0 made mm_token_type_ids a required argument."""
    text = (
        "TypeError: Qwen3VLModel.get_rope_index() missing 1 required positional argument: "
        "'mm_token_type_ids'\n"
    )
    (f,) = _drift(text)
    assert f.severity == Severity.ERROR and f.fix.startswith("pip install 'transformers<5.3.0'")
    assert "between transformers 5.2.0 and 5.3.0" in f.message
    assert "older than that" not in f.message  # the class came after the oldest release read


FRAMED = """transformers version: {version}
Traceback (most recent call last):
  File "/home/u/train.py", line 40, in <module>
    trainer.train()
  File "/opt/conda/lib/python3.11/site-packages/trl/trainer/grpo_trainer.py", line 1200, in _compute_loss
    position_ids, _ = model.model.get_rope_index(input_ids, image_grid_thw=grid)
TypeError: Qwen2_5_VLModel.get_rope_index() missing 1 required positional argument: 'mm_token_type_ids'
"""


def test_trls_frame_calling_transformers_is_drift_between_the_two_with_both_answers() -> None:
    (f,) = _drift(FRAMED.format(version="5.4.0"))
    assert f.severity == Severity.ERROR and "API drift between trl and transformers" in f.message
    assert "the log's transformers 5.4.0 does not fit the call" in f.message
    assert "pip install 'transformers<5.3.0'" in f.fix and "trl" in f.fix.split(";")[0]


def test_the_logs_release_that_fits_the_call_is_not_drift() -> None:
    """transformers 5.1.0 does not require mm_token_type_ids: another copy is imported (TRI003)."""
    assert not _drift(FRAMED.format(version="5.1.0"))


def test_an_upper_pin_read_from_the_last_patch_of_each_minor_takes_the_whole_minor() -> None:
    """seed_worker took num_workers and rank in 4.52.0; the history holds 4.51.3 and 4.52.4 only:
    the pin that excludes the change is <4.52.0, not <4.52.4."""
    from envdoctor.triage import sighistory

    assert sighistory._below(["4.51.3", "4.52.4", "5.0.0", "5.0.1"]) == ["4.51.3", "4.52.0", "5.0.0", "5.0.1"]


def test_the_shipped_histories_hold_the_budget() -> None:
    folder = ROOT / "rules" / "knowledge" / "signatures"
    files = list(folder.glob("*.json.gz"))
    assert {"trl", "transformers", "peft", "accelerate"} <= {p.name.removesuffix(".json.gz") for p in files}
    assert sum(p.stat().st_size for p in files) <= 1_500_000


def test_a_name_two_packages_define_gets_no_verdict_without_a_frame_of_one() -> None:
    # 2noise/ChatTTS#28: the project's code calls transformers' LlamaModel.forward (transformers
    # older than cache_position); vllm has a LlamaModel.forward too, whose history alone places the
    # message: it must not be named where no frame of vllm (nor of transformers) is shown
    text = (
        "Traceback (most recent call last):\n"
        '  File "/home/user/ChatTTS/ChatTTS/model/gpt.py", line 208, in generate\n'
        "    outputs = self.gpt.forward(**model_input, output_attentions=return_attn)\n"
        '  File "/home/user/miniconda3/lib/python3.10/site-packages/torch/nn/modules/module.py", '
        "line 1511, in _wrapped_call_impl\n"
        "    return self._call_impl(*args, **kwargs)\n"
        "TypeError: LlamaModel.forward() got an unexpected keyword argument 'cache_position'\n"
    )
    assert not [f for f in findings(scan_bytes(text)) if "vllm" in f.message]
