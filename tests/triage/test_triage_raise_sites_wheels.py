"""The raise-site index read from wheels (scripts/derive_raise_sites.py --wheels): a package whose
repository is past the mirrors (vLLM, transformers) is indexed from its releases' wheels, read with
zipfile, through the same code path as a git history; and triage places a one-line refusal of such
a package (TRI012 names the setting and where the run sets it). The wheels are made here (offline)."""

from __future__ import annotations

import shutil
import textwrap
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from envdoctor.findings import Severity
from envdoctor.knowledge import raise_sites
from tests.triage.helpers import findings, scan_bytes
from tests.triage.test_triage_fix_history import _commit, _git
from tests.triage.test_triage_raise_sites import _script

CONFIG = """
    class ModelConfig:
        def verify_with_parallel_config(self, parallel_config):
            total_num_attention_heads = self.hf_text_config.num_attention_heads
            tensor_parallel_size = parallel_config.tensor_parallel_size
            if total_num_attention_heads % tensor_parallel_size != 0:
                raise ValueError(
                    f"Total number of attention heads ({total_num_attention_heads})"
                    " must be divisible by tensor parallel size "
                    f"({tensor_parallel_size})."
                )
"""
PEFT_HELPER = """
    class PEFTHelper:
        def _validate_features(self):
            return []

        def validate_legal(self, lora_config):
            error_msg = self._validate_features()
            if self.r > lora_config.max_lora_rank:
                error_msg.append(
                    f"LoRA rank {self.r} is greater than max_lora_rank"
                    f" {lora_config.max_lora_rank}."
                )
            if error_msg:
                raise ValueError(f"{' '.join(error_msg)}")
"""
ENGINE = """
    class LLMEngine:
        def add_request(self, request, priority=0):
            if priority != 0:
                raise ValueError(f"Got priority {priority} but Priority scheduling is not enabled.")
            return request
"""
ENGINE_LATER = ENGINE.replace(
    """            if priority != 0:
                raise ValueError(f"Got priority {priority} but Priority scheduling is not enabled.")
""",
    "",
)
VENDORED = 'def f():\n    raise ValueError("No available memory for the cache blocks. Try increasing it.")\n'


def _files(version: str) -> dict[str, str]:
    files = {
        "vllm/__init__.py": "",
        "vllm/config.py": CONFIG,
        "vllm/engine/llm_engine.py": ENGINE if version != "0.10.0" else ENGINE_LATER,
        "vllm/third_party/pynvml.py": VENDORED,
    }
    if version != "0.1.0":
        files["vllm/lora/peft_helper.py"] = PEFT_HELPER
    return {k: textwrap.dedent(v) for k, v in files.items()}


def _wheel(folder: Path, name: str, version: str, files: dict[str, str], tag: str) -> Path:
    whl = folder / f"{name}-{version}-{tag}.whl"
    with zipfile.ZipFile(whl, "w") as zf:
        for path, text in files.items():
            zf.writestr(path, text)
        zf.writestr(f"{name}-{version}.dist-info/METADATA", f"Metadata-Version: 2.1\nName: {name}\n")
    return whl


@pytest.fixture(scope="module")
def wheels(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("wheels")
    for version in ("0.1.0", "0.2.0", "0.10.0"):  # 0.10.0 is the newest: versions, not names, order them
        _wheel(folder, "vllm", version, _files(version), "cp38-abi3-manylinux1_x86_64")
    _wheel(folder, "vllm", "0.11.0rc1", _files("0.10.0"), "cp38-abi3-manylinux1_x86_64")  # a pre-release
    _wheel(folder, "vllm_flash_attn", "0.9.0", _files("0.1.0"), "py3-none-any")  # another distribution
    return folder


@pytest.fixture(scope="module")
def derived(wheels: Path) -> dict[str, object]:
    return _script().derive(None, "vllm", ("vllm",), wheels=wheels, source="vllm-project/vllm")


def _site(data: dict[str, object], text: str) -> tuple[int, list[object]]:
    sites = data["sites"]
    assert isinstance(sites, list)
    return next((i, s) for i, s in enumerate(sites) if text in s[1])


def test_wheels_are_read_oldest_release_first(derived: dict[str, object]) -> None:
    assert derived["releases"] == ["0.1.0", "0.2.0", "0.10.0"]
    assert derived["read_from"] == "wheels" and derived["head"] == ""
    assert "third_party/pynvml.py" not in derived["modules"]  # vendored: another project's messages


def test_wheel_lift_is_told_by_its_release_only(derived: dict[str, object]) -> None:
    i, site = _site(derived, "Priority scheduling")
    assert site[3] == "LLMEngine.add_request" and site[4] == [[0, 1]]
    lifted = derived["lifted"]
    assert isinstance(lifted, dict)
    assert lifted[str(i)] == ["0.10.0", "", "", "", 0]  # no commits in a wheel


def test_gathered_messages_and_the_names_of_formatted_values(derived: dict[str, object]) -> None:
    _, lora = _site(derived, "is greater than max_lora_rank")
    assert lora[3] == "PEFTHelper.validate_legal" and lora[4] == [[1, 2]]
    assert lora[6] == ["r", "max_lora_rank"]
    _, heads = _site(derived, "must be divisible by tensor parallel size")
    assert heads[6] == ["total_num_attention_heads", "tensor_parallel_size"]


def test_wheels_and_git_give_the_same_sites(derived: dict[str, object], tmp_path: Path) -> None:
    """One code path: the same releases read from a git history give the same index (its lifts
    with their commits)."""
    if shutil.which("git") is None:
        pytest.skip("needs git")
    r = tmp_path / "vllm"
    r.mkdir()
    _git(r, "init", "-q", "-b", "main")
    for version in ("0.1.0", "0.2.0", "0.10.0"):
        _commit(r, _files(version), f"Release {version}")
        _git(r, "tag", f"v{version}")
    git = _script().derive(r / ".git", "vllm", ("vllm",), r"^v(\d+\.\d+\.\d+)$", "2020-01-01")
    assert git["releases"] == derived["releases"] and git["sites"] == derived["sites"]
    assert git["modules"] == derived["modules"]
    assert {k: v[0] for k, v in git["lifted"].items()} == {k: v[0] for k, v in derived["lifted"].items()}  # type: ignore[union-attr]


def test_main_with_wheels_writes_the_index(wheels: Path, tmp_path: Path) -> None:
    out = tmp_path / "raises"
    args = ["--wheels", str(wheels), "--package", "vllm", "--root", "vllm", "--out", str(out)]
    assert _script().main(args) == 0
    assert (out / "vllm.json.gz").is_file()


def test_frame_index_reads_wheels_too(wheels: Path) -> None:
    frames = _script().frames
    data = frames.derive(None, "vllm", ("vllm",), wheels=wheels)
    assert data["releases"] == ["0.1.0", "0.2.0", "0.10.0"]
    files = data["files"]
    assert isinstance(files, dict) and "PEFTHelper.validate_legal" in files["lora/peft_helper.py"]


@pytest.fixture
def index(derived: dict[str, object], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """Triage reads the index derived from the wheels."""
    _script().frames.write(derived, tmp_path / "vllm.json.gz")
    monkeypatch.setattr(raise_sites, "_dir", lambda: tmp_path)
    raise_sites.raise_index.cache_clear()
    raise_sites.packages.cache_clear()
    yield tmp_path
    raise_sites.raise_index.cache_clear()
    raise_sites.packages.cache_clear()


def test_one_line_lora_rank_refusal_is_placed_in_vllm(index: Path) -> None:
    fs = findings(scan_bytes("ValueError: LoRA rank 32 is greater than max_lora_rank 16.\n"))
    f = next(f for f in fs if f.rule == "TRI012")
    assert f.severity == Severity.ERROR
    assert (
        f.message.startswith("vLLM refused")
        and "lora/peft_helper.py in PEFTHelper.validate_legal" in f.message
    )
    assert "set max_lora_rank to 32 or more" in f.fix
    assert "vLLM's engine argument max_lora_rank" in f.fix
    assert not any(f.rule == "TRI003" for f in fs)


def test_one_line_tensor_parallel_refusal_names_the_setting(index: Path) -> None:
    fs = findings(
        scan_bytes(
            "ValueError: Total number of attention heads (40) must be divisible by "
            "tensor parallel size (6).\n"
        )
    )
    f = next(f for f in fs if f.rule == "TRI012")
    assert f.severity == Severity.ERROR
    assert "vllm" in f.message and "config.py in ModelConfig.verify_with_parallel_config" in f.message
    assert f.fix.startswith("set tensor_parallel_size (tensor parallel size) to a divisor of 40 (2, 4, 5, 8")
    assert "vLLM's engine argument tensor_parallel_size" in f.fix and "vllm_tensor_parallel_size" in f.fix


def test_a_message_no_release_raises_stays_unplaced(index: Path) -> None:
    fs = findings(
        scan_bytes("ValueError: LoRA alpha 32 is greater than the alpha the adapter was saved with.\n")
    )
    assert not any("vLLM" in f.message or "vllm" in f.message for f in fs)
    fs = findings(
        scan_bytes(
            "ValueError: Total number of key value heads (40) must be divisible by pipeline size (6).\n"
        )
    )
    f = next(f for f in fs if f.rule == "TRI012")  # the split's own answer, with no package or setting named
    assert "vllm" not in f.message and "tensor_parallel_size" not in f.fix


def test_shipped_vllm_index_places_the_one_line_refusals() -> None:
    raise_sites.raise_index.cache_clear()
    raise_sites.packages.cache_clear()
    assert {"vllm", "transformers"} <= set(raise_sites.packages())
    fs = findings(scan_bytes("ValueError: LoRA rank 32 is greater than max_lora_rank 16.\n"))
    f = next(f for f in fs if f.rule == "TRI012")
    assert f.severity == Severity.ERROR and "vLLM" in f.message and "max_lora_rank" in f.fix
    fs = findings(
        scan_bytes(
            b"[rank0]: ValueError: Total number of attention heads (40) must be divisible by tensor "
            b"parallel size (6).\n"
        )
    )
    f = next(f for f in fs if f.rule == "TRI012")
    assert "vLLM" in f.message and "tensor_parallel_size" in f.fix


def test_the_interpreters_own_message_copied_by_a_library_is_placed_nowhere() -> None:
    """transformers raises ``IndexError("list index out of range")`` in one of its config views:
    a log's "list index out of range" is Python's own message, not placed in transformers."""
    raise_sites.raise_index.cache_clear()
    raise_sites.packages.cache_clear()
    assert raise_sites.locate("list index out of range", "IndexError") == []
    fs = findings(scan_bytes("IndexError: list index out of range\n"))
    assert not any("raises this" in f.message for f in fs)
