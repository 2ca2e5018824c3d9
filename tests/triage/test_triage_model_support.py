"""A model newer than the installed transformers or vLLM (issue 36): the refusal names the model
type / architecture, the first release that has it (rules/knowledge/models.json.gz, derived from
the release wheels by scripts/derive_model_support.py) and the fix within TRL's and vLLM's pins;
quiet for a user's own KeyError and a name the installed release has. The derive script runs here
on wheels made in tmp_path (offline)."""

# ruff: noqa: E501
from __future__ import annotations

import gzip
import importlib.util
import json
import sys
import zipfile
from pathlib import Path
from types import ModuleType

import pytest

from envdoctor.findings import Severity
from envdoctor.knowledge import models
from tests.triage.helpers import findings, scan_bytes

ROOT = Path(__file__).resolve().parents[2]


def _tri(text: str) -> list[tuple[str, Severity, str, str]]:
    return [(f.rule, f.severity, f.message, f.fix) for f in findings(scan_bytes(text))]


# --- the shipped table ---------------------------------------------------------------------------


def test_the_shipped_table_covers_the_releases_and_is_small() -> None:
    path = ROOT / "rules" / "knowledge" / "models.json.gz"
    assert path.stat().st_size < 64_000
    doc = json.loads(gzip.decompress(path.read_bytes()))
    assert doc["transformers"]["releases"][0] == "4.30.0" and doc["transformers"]["releases"][-1] == "5.24.0"
    assert doc["vllm"]["releases"][0] == "0.4.0" and doc["vllm"]["releases"][-1] == "0.33.0"
    assert models.lookup("transformers", "qwen3").first == "4.51.0"  # type: ignore[union-attr]
    assert models.lookup("vllm", "Qwen3ForCausalLM").first == "0.8.4"  # type: ignore[union-attr]
    assert models.has("vllm", "Qwen3ForCausalLM", "0.8.3") is False
    assert models.has("vllm", "Qwen3ForCausalLM", "0.8.5.post1") is True
    assert models.has("vllm", "Qwen3ForCausalLM", "0.3.0") is None  # before the releases read
    assert not models.lookup("vllm", "MyOwnForCausalLM").known  # type: ignore[union-attr]
    assert models.lookup("transformers", "qwen2").first == "4.37.0"  # type: ignore[union-attr]
    assert models.lookup("vllm", "Qwen2VLForConditionalGeneration").first == "0.6.1"  # type: ignore[union-attr]


# --- triage: transformers ------------------------------------------------------------------------

TRANSFORMERS_REFUSAL = """\
Traceback (most recent call last):
  File "/venv/lib/python3.10/site-packages/transformers/models/auto/configuration_auto.py", line 1023, in from_pretrained
    config_class = CONFIG_MAPPING[config_dict["model_type"]]
  File "/venv/lib/python3.10/site-packages/transformers/models/auto/configuration_auto.py", line 725, in __getitem__
    raise KeyError(key)
KeyError: 'qwen3'

During handling of the above exception, another exception occurred:

Traceback (most recent call last):
  File "train.py", line 10, in <module>
    model = AutoModelForCausalLM.from_pretrained("Qwen/Qwen3-8B")
  File "/venv/lib/python3.10/site-packages/transformers/models/auto/configuration_auto.py", line 1025, in from_pretrained
    raise ValueError(
ValueError: The checkpoint you are trying to load has model type `qwen3` but Transformers does not \
recognize this architecture. This could be because of an issue with the checkpoint, or because your \
version of Transformers is out of date.
"""


def test_transformers_refusal_names_the_model_type_and_its_first_release() -> None:
    out = _tri(TRANSFORMERS_REFUSAL)
    assert len(out) == 1  # the KeyError underneath is the same refusal: one finding
    rule, severity, message, fix = out[0]
    assert (rule, severity) == ("TRI011", Severity.ERROR)
    assert "model type qwen3" in message and "from 4.51.0" in message
    assert fix == "pip install 'transformers>=4.51.0'"


def test_the_transformers_fix_keeps_within_the_logs_vllm_pin() -> None:
    """qwen3_5 is in transformers from 5.2.0; vLLM 0.12.0 requires transformers <5: the fix moves vLLM too."""
    text = (
        "vllm==0.12.0\nValueError: The checkpoint you are trying to load has model type `qwen3_5` but "
        "Transformers does not recognize this architecture.\n"
    )
    [(rule, severity, message, fix)] = _tri(text)
    assert (rule, severity) == ("TRI011", Severity.ERROR)
    assert fix == "pip install 'transformers>=5.2.0' 'vllm>=0.19.1'"
    assert "vLLM 0.12.0 requires transformers <5" in message


def test_a_keyerror_in_configuration_auto_is_the_refusal() -> None:
    text = TRANSFORMERS_REFUSAL.split("\nDuring handling")[0] + "\n"
    [(rule, severity, message, fix)] = _tri(text)
    assert (rule, severity) == ("TRI011", Severity.ERROR)
    assert "qwen3" in message and fix == "pip install 'transformers>=4.51.0'"


def test_a_bare_keyerror_of_a_model_type_is_a_warning() -> None:
    [(rule, severity, message, _)] = _tri("KeyError: 'gpt_oss'\n")
    assert (rule, severity) == ("TRI011", Severity.WARNING)
    assert "from 4.55.0" in message


@pytest.mark.parametrize(
    "text",
    [
        "KeyError: 'loss'\n",  # names no model type
        'Traceback (most recent call last):\n  File "train.py", line 10, in <module>\n'
        "    x = table[\"qwen2\"]\nKeyError: 'qwen2'\n",  # the user's own dict, whatever the key
    ],
)
def test_a_users_own_keyerror_is_not_the_refusal(text: str) -> None:
    assert all(rule != "TRI011" for rule, *_ in _tri(text))


# --- triage: vLLM --------------------------------------------------------------------------------

VLLM_REFUSAL = (
    "ValueError: Model architectures ['Qwen3ForCausalLM'] are not supported for now. Supported "
    "architectures: ['AquilaModel', 'AquilaForCausalLM', 'LlamaForCausalLM']\n"
)


def test_vllm_refusal_names_the_architecture_and_its_first_release() -> None:
    [(rule, severity, message, fix)] = _tri("vllm==0.7.3\n" + VLLM_REFUSAL)
    assert (rule, severity) == ("TRI011", Severity.ERROR)
    assert "Qwen3ForCausalLM is in vLLM from 0.8.4" in message and "0.7.3, older than that" in message
    assert fix == "pip install 'vllm>=0.8.4'"


def test_vllm_refusal_without_versions_is_still_vllms_own_refusal() -> None:
    [(rule, severity, _, fix)] = _tri(VLLM_REFUSAL)
    assert (rule, severity, fix) == ("TRI011", Severity.ERROR, "pip install 'vllm>=0.8.4'")


def test_the_vllm_fix_moves_trl_when_its_range_excludes_the_release() -> None:
    text = (
        "trl==0.24.0\nValueError: Model architectures ['Qwen3_5ForConditionalGeneration'] are not "
        "supported for now. Supported architectures: ['A']\n"
    )
    [(_, severity, message, fix)] = _tri(text)
    assert severity is Severity.ERROR
    assert fix == "pip install 'vllm>=0.17.0' 'trl>=1.0.0'"
    assert "TRL 0.24.0 supports vLLM ==0.10.2" in message


def test_an_architecture_no_release_has_is_custom_or_past_the_horizon() -> None:
    text = "ValueError: Model architectures ['AcmeForCausalLM'] are not supported for now. Supported architectures: ['A']\n"
    [(rule, severity, message, fix)] = _tri(text)
    assert (rule, severity) == ("TRI011", Severity.ERROR)
    assert "no vLLM release envdoctor read has it" in message and "trust_remote_code" in message
    assert "knowledge horizon" in message and "trust-remote-code" in fix


def test_a_removed_architecture_names_the_release_vllm_names() -> None:
    text = (
        "ValueError: Model architecture BaichuanForCausalLM was supported in vLLM until v0.23.0, and is "
        "not supported anymore. Please use an older version of vLLM if you want to use this model architecture.\n"
    )
    [(rule, severity, _, fix)] = _tri(text)
    assert (rule, severity, fix) == ("TRI011", Severity.ERROR, "pip install 'vllm<=0.23.0'")


def test_failed_to_be_inspected_is_not_a_model_too_new() -> None:
    text = "ValueError: Model architectures ['Qwen3ForCausalLM'] failed to be inspected. Please check the logs for more details.\n"
    [(rule, severity, message, fix)] = _tri(text)
    assert (rule, severity) == ("TRI011", Severity.WARNING)
    assert "not too new" in message and "0.8.4" not in fix


def test_failed_to_be_inspected_on_the_first_release_with_it_tries_a_later_one() -> None:
    text = (
        "vllm==0.7.2\nValueError: Model architectures ['Qwen2_5_VLForConditionalGeneration'] failed to be "
        "inspected. Please check the logs for more details.\n"
    )
    [(rule, severity, message, fix)] = _tri(text)
    assert (rule, severity) == ("TRI011", Severity.WARNING)
    assert "first release with it" in message and fix.startswith("pip install 'vllm>=0.7.3'")


def test_a_logs_vllm_that_has_the_architecture_makes_it_a_warning() -> None:
    [(rule, severity, message, _)] = _tri("vllm==0.10.2\n" + VLLM_REFUSAL)
    assert (rule, severity) == ("TRI011", Severity.WARNING)
    assert "0.10.2 has it" in message


# --- the derive script, on wheels made here ------------------------------------------------------


@pytest.fixture(scope="module")
def derive() -> ModuleType:
    path = ROOT / "scripts" / "derive_model_support.py"
    spec = importlib.util.spec_from_file_location("derive_model_support", path)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules["derive_model_support"] = mod
    spec.loader.exec_module(mod)
    return mod


def _wheel(folder: Path, dist: str, version: str, files: dict[str, str]) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(folder / f"{dist}-{version}-py3-none-any.whl", "w") as zf:
        for name, text in files.items():
            zf.writestr(name, text)


def test_the_script_reads_both_layouts_of_each_package(derive: ModuleType, tmp_path: Path) -> None:
    wheels = tmp_path / "wheels"
    auto = "transformers/models/auto/"
    _wheel(
        wheels / "transformers",
        "transformers",
        "4.50.0",
        {
            auto + "configuration_auto.py": "CONFIG_MAPPING_NAMES = OrderedDict(\n"
            '    [("llama", "LlamaConfig"), ("mega", "MegaConfig")]\n)\n'
        },
    )
    _wheel(
        wheels / "transformers",
        "transformers",
        "5.10.0",
        {
            auto
            + "auto_mappings.py": 'CONFIG_MAPPING_NAMES = OrderedDict[str, str]([("llama", "LlamaConfig"), ("qwen3", "Qwen3Config")])\n',
            auto + "configuration_auto.py": "from .auto_mappings import CONFIG_MAPPING_NAMES\n"
            'CONFIG_MAPPING_NAMES.update({"mimi_decoder": "MimiDecoderConfig"})\n'
            'CONFIG_MAPPING_NAMES = OrderedDict(**{"gpt-sw3": "GPT2Config"}, **CONFIG_MAPPING_NAMES)\n',
        },
    )
    models_dir = "vllm/model_executor/models/"
    _wheel(
        wheels / "vllm",
        "vllm",
        "0.6.0",
        {
            models_dir
            + "__init__.py": '_GEN = {"LlamaForCausalLM": ("llama", "LlamaForCausalLM")}\n_MODELS = {**_GEN}\n'
        },
    )
    _wheel(
        wheels / "vllm",
        "vllm",
        "0.8.4",
        {
            models_dir
            + "registry.py": '_TEXT = {"LlamaForCausalLM": ("llama", "L"), "Qwen3ForCausalLM": ("qwen3", "Q")}\n'
            '_MM: dict[str, tuple[str, str]] = {"Qwen2VLForConditionalGeneration": ("qwen2_vl", "V")}\n'
            "_VLLM_MODELS = {**_TEXT, **_MM}\n"
            '_OOT_SUPPORTED_MODELS = {"BartModel": "https://github.com/vllm-project/bart-plugin"}\n'
        },
    )
    out = tmp_path / "models.json.gz"
    assert derive.main(["--wheels", str(wheels), "--out", str(out)]) == 0
    doc = json.loads(gzip.decompress(out.read_bytes()))
    assert doc["schema"] == models.SCHEMA
    t, v = doc["transformers"], doc["vllm"]
    assert t["releases"] == ["4.50.0", "5.10.0"] and v["releases"] == ["0.6.0", "0.8.4"]
    assert t["names"] == {"llama": "0", "mega": "0-0", "qwen3": "1", "mimi_decoder": "1", "gpt-sw3": "1"}
    assert v["names"] == {
        "LlamaForCausalLM": "0",
        "Qwen3ForCausalLM": "1",
        "Qwen2VLForConditionalGeneration": "1",
    }
    assert v["oot"] == {"BartModel": "https://github.com/vllm-project/bart-plugin"}
    assert derive.main(["--wheels", str(wheels), "--out", str(tmp_path / "b.json.gz"), "--budget", "10"]) == 1


def test_runs_are_compact(derive: ModuleType) -> None:
    assert derive.runs([0, 1, 2], 2) == "0"
    assert derive.runs([3, 4, 5, 9], 9) == "3-5,9"
    assert derive.runs([0, 1], 5) == "0-1"


def test_the_refusal_pasted_from_a_rendered_page_without_its_backticks_is_read() -> None:
    """GitHub renders `qwen3_moe` as code and a copy of the page loses the backticks: the same
    refusal, the same answer (the catalogue's symptom and the model-type reader alike)."""
    line = (
        "ValueError: The checkpoint you are trying to load has model type qwen3_moe but Transformers "
        "does not recognize this architecture. This could be because of an issue with the checkpoint, "
        "or because your version of Transformers is out of date.\n"
    )
    ((rule, severity, message, fix),) = _tri(line)
    assert (rule, severity) == ("TRI011", Severity.ERROR)
    assert "model type qwen3_moe" in message and "from 4.51.0" in message
    assert fix == "pip install 'transformers>=4.51.0'"


def test_a_model_type_every_release_has_is_not_given_a_newer_release_without_backticks() -> None:
    line = "ValueError: has model type llama but Transformers does not recognize this architecture\n"
    ((_, _, message, fix),) = _tri(line)
    assert "model type llama is in every transformers release envdoctor read" in message
    assert fix == "pip install 'transformers>=4.30.0'"
