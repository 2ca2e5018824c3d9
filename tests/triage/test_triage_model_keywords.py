"""API drift the histories tell where no signature of the function was kept (issue #36, drift18):

* a keyword a transformers model class's ``forward`` / ``generate`` / ``__init__`` takes only in
  some releases (``Qwen2ForCausalLM.forward() got an unexpected keyword argument
  'num_logits_to_keep'`` under transformers 4.40: set 16 d001), from the model keyword history
  (scripts/derive_model_keywords.py, rules/knowledge/signatures/transformers-models.keywords.gz);
* a ``NameError`` on a name one package defines only in some of its releases, raised outside that
  package's code (``flash_attn_varlen_func`` under flash-attn<2: set 16 a017): the code's guarded
  import of it failed (TRI013, envdoctor/triage/optional.py ``versioned_name``).

Derivation on wheels built here (offline), triage against the derived history and against the
shipped one, each with a scenario where it fires and one where it stays quiet."""

from __future__ import annotations

import gzip
import json
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pytest

from envdoctor.findings import Severity
from envdoctor.knowledge import model_keywords
from tests.triage.helpers import findings, scan_bytes, script, wheel

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def derive() -> ModuleType:
    return script("derive_model_keywords")


QWEN = """
    class Qwen2PreTrainedModel:
        pass

    class Qwen2ForCausalLM(Qwen2PreTrainedModel):
        def __init__(self, config):
            pass

        def forward(self, input_ids=None, labels=None):
            pass

    class Qwen2Model(Qwen2PreTrainedModel):
        def forward(self, input_ids=None):
            pass
"""
LLAMA = """
    class LlamaForCausalLM:
        def forward(self, input_ids=None, labels=None, **kwargs):
            pass
"""
CONFIG = """
    class Qwen2Config:
        def __init__(self, vocab_size=10, rope_theta=1.0, **kwargs):
            pass
"""

#: transformers 5's ``@strict`` configurations: fields in the class body, no ``__init__``
STRICT_CONFIG = """
    class Qwen2Config:
        vocab_size: int = 10
        rope_theta: float = 1.0

        def __post_init__(self, **kwargs):
            self.head_dim = 4
"""


def _files(qwen: str, config: str = CONFIG) -> dict[str, str]:
    return {
        "__init__.py": "",
        "models/qwen2/modeling_qwen2.py": qwen,
        "models/qwen2/modular_qwen2.py": qwen.replace("labels=None", "labels=None, modular_only=None"),
        "models/qwen2/modeling_tf_qwen2.py": "class TFQwen2ForCausalLM:\n    def f(self, tf_only=0): ...\n",
        "models/qwen2/configuration_qwen2.py": config,
        "models/llama/modeling_llama.py": LLAMA,
        "models/broken/modeling_broken.py": "class BrokenForCausalLM(:\n",
    }


@pytest.fixture(scope="module")
def wheels(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("wheels")
    wheel(root, "transformers", "4.40.0", _files(QWEN))
    wheel(root, "transformers", "4.40.1", _files(QWEN))  # an older patch of the same minor: not read
    q45 = QWEN.replace("labels=None)", "labels=None, num_logits_to_keep=0)")
    q45 = q45.replace("def __init__(self, config)", "def __init__(self, config, tie=None)")
    wheel(root, "transformers", "4.40.2", _files(QWEN))
    wheel(root, "transformers", "4.45.2", _files(q45, CONFIG.replace("rope_theta=1.0, ", "")))
    q50 = q45.replace("num_logits_to_keep=0)", "logits_to_keep=0, **kwargs)")
    wheel(root, "transformers", "4.50.3", _files(q50, STRICT_CONFIG))
    return root


@pytest.fixture(scope="module")
def derived(derive: ModuleType, wheels: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("kw") / "transformers-models.keywords.gz"
    assert derive.main([str(wheels), "--out", str(out)]) == 0
    return out


def _doc(path: Path) -> dict:
    return json.loads(gzip.decompress(path.read_bytes()))


def test_derivation_keeps_the_keywords_a_class_gained_or_lost_per_suffix_and_stem(derived: Path) -> None:
    doc = _doc(derived)
    assert doc["schema"] == "envdoctor.model_keywords/1"
    assert doc["releases"] == ["4.40.2", "4.45.2", "4.50.3"]  # the last patch of each minor
    fwd = doc["methods"]["forward"]["ForCausalLM"]
    assert fwd["num_logits_to_keep"][""] == "1" and fwd["logits_to_keep"][""] == "2"
    assert "labels" not in fwd and "input_ids" not in fwd  # taken all along: no drift to tell
    assert "modular_only" not in fwd and "tf_only" not in json.dumps(doc)  # modular / TF files not read
    assert fwd["num_logits_to_keep"]["-"] == "Llama"  # Llama never took it (through **kwargs only)
    assert doc["var"]["forward"]["ForCausalLM"] == {"Llama": "0-2", "Qwen2": "2"}
    assert doc["methods"]["__init__"]["ForCausalLM"]["tie"][""] == "1-2"
    assert doc["methods"]["config"]["Config"]["rope_theta"][""] == "0,2"  # a field of the body in 4.50
    assert doc["methods"]["config"]["Config"]["head_dim"][""] == "2"  # set by a method: an attribute


def test_derivation_is_reproducible_and_held_to_its_budget(
    derive: ModuleType, wheels: Path, derived: Path, tmp_path: Path
) -> None:
    again = tmp_path / "again.gz"
    assert derive.main([str(wheels), "--out", str(again)]) == 0
    assert again.read_bytes() == derived.read_bytes()
    assert derive.main([str(wheels), "--out", str(tmp_path / "small.gz"), "--budget", "100"]) == 1
    assert not (tmp_path / "small.gz").exists()


@pytest.fixture
def synthetic(derived: Path, monkeypatch) -> Iterator[Path]:
    """Triage reads the history derived from the wheels above in place of the shipped one."""
    from envdoctor.knowledge import gzip_json

    doc = gzip_json.load(derived, model_keywords.SCHEMA, model_keywords.MAX_BYTES)
    assert doc is not None
    h = model_keywords.History(doc["releases"], doc["scope"], doc["methods"], doc["var"])
    monkeypatch.setattr(model_keywords, "history", lambda: h)
    yield derived


def _drift(text: str):
    return [f for f in findings(scan_bytes(text)) if f.rule == "TRI009"]


CALL = """Traceback (most recent call last):
  File "/home/u/proj/models/qwen2.py", line 368, in forward
    outputs = forward_fn(
  File "/home/u/proj/models/qwen2.py", line 329, in train_forward
    outputs = super().forward(
TypeError: {cls}.{method}() got an unexpected keyword argument '{kwarg}'
"""


def test_a_model_forward_keyword_a_later_release_takes(synthetic: Path) -> None:
    (f,) = _drift(CALL.format(cls="Qwen2ForCausalLM", method="forward", kwarg="num_logits_to_keep"))
    assert f.severity == Severity.ERROR and "API drift between your code and transformers" in f.message
    assert "model keyword history" in f.message and "from transformers 4.45" in f.message
    assert f.fix.startswith("pip install 'transformers>=4.45.2'")


def test_a_lost_dunder_of_markdown_is_the_init(synthetic: Path) -> None:
    (f,) = _drift(CALL.format(cls="Qwen2ForCausalLM", method="init", kwarg="tie"))
    assert "Qwen2ForCausalLM.__init__() takes tie=" in f.message


def test_quiet_for_a_class_the_history_has_no_model_of(synthetic: Path) -> None:
    assert not _drift(CALL.format(cls="MyNetForCausalLM", method="forward", kwarg="num_logits_to_keep"))


def test_quiet_for_a_keyword_every_release_refuses(synthetic: Path) -> None:
    """A keyword no Qwen2 release takes by name or through **kwargs: not drift (the call is wrong)."""
    assert not _drift(CALL.format(cls="Qwen2Model", method="forward", kwarg="num_logits_to_keep"))


def test_quiet_for_a_class_taking_kwargs_in_every_release(synthetic: Path) -> None:
    assert not _drift(CALL.format(cls="LlamaForCausalLM", method="forward", kwarg="num_logits_to_keep"))


def test_shipped_d001_qwen2_num_logits_to_keep_needs_transformers_4_45() -> None:
    # set 16 d001 (casper-hansen/OpenCoconut#6): transformers 4.40.1; upgrading fixed it
    (f,) = _drift(CALL.format(cls="Qwen2ForCausalLM", method="forward", kwarg="num_logits_to_keep"))
    assert "from transformers 4.45" in f.message and f.fix.startswith("pip install 'transformers>=4.45")


def test_shipped_a_logs_release_that_takes_it_is_not_drift() -> None:
    text = "transformers version: 4.47.1\n" + CALL.format(
        cls="Qwen2ForCausalLM", method="forward", kwarg="num_logits_to_keep"
    )
    assert not _drift(text)


def test_shipped_history_is_small_and_loads() -> None:
    path = ROOT / "rules" / "knowledge" / "signatures" / model_keywords.FILE
    assert path.stat().st_size <= 150_000
    h = model_keywords.history()
    assert h is not None and h.releases[0] == "4.30.2"
    t = h.takes("Qwen2ForCausalLM", "forward", "num_logits_to_keep")
    assert t is not None and t.named and t.scope


def test_hostile_names_and_a_broken_file_get_nothing(tmp_path: Path, monkeypatch) -> None:
    h = model_keywords.history()
    assert h is not None
    for cls in ("", "x" * 5000, "ForCausalLM", "Qwen2ForCausalLM" * 300, "qwen2forcausallm"):
        assert h.takes(cls, "forward", "num_logits_to_keep") is None
    assert h.takes("Qwen2ForCausalLM", "forward", "k" * 10_000) is None
    assert h.takes("Qwen2Config", "forward", "rope_theta") is None  # a config has attributes only
    from envdoctor.knowledge import gzip_json

    bad = tmp_path / "bad.gz"
    bad.write_bytes(b"\x1f\x8b not gzip")
    assert gzip_json.load(bad, model_keywords.SCHEMA, model_keywords.MAX_BYTES) is None
    long = "TypeError: " + "A" * 300_000 + "ForCausalLM.forward() got an unexpected keyword argument 'k'\n"
    assert not _drift(long)


# -- a NameError on a name one package has in some releases only: its guarded import failed -----

NAME = """Traceback (most recent call last):
  File "{path}", line 184, in forward
    attn_output = {name}(
NameError: name '{name}' is not defined
"""


def _tri013(text: str):
    return [f for f in findings(scan_bytes(text)) if f.rule == "TRI013"]


def test_a_flash_attn_2_name_under_flash_attn_1_is_its_guarded_import_failing() -> None:
    # set 16 a017 (imoneoi/openchat#52): flash-attn<2 installed, the code needs flash-attn 2
    (f,) = _tri013(NAME.format(path="openchat/ochat/models/unpadded_llama.py", name="flash_attn_varlen_func"))
    assert f.severity == Severity.WARNING and "flash-attn's" in f.message and "2.0.0" in f.message
    assert f.fix.startswith("pip install 'flash-attn>=2.0.0'")


def test_the_logs_release_that_lacks_it_makes_it_an_error() -> None:
    frame = NAME.format(path="ochat/models/unpadded_llama.py", name="flash_attn_varlen_func")
    text = "flash-attn 1.0.9\n" + frame
    (f,) = _tri013(text)
    assert f.severity == Severity.ERROR and "the log's flash-attn 1.0.9 lacks it" in f.message


def test_a_name_no_package_defines_is_the_codes_own() -> None:
    assert not _tri013(NAME.format(path="ochat/models/unpadded_llama.py", name="my_attention_helper"))


def test_the_packages_own_frame_is_not_its_import_failing() -> None:
    path = "/usr/lib/python3.11/site-packages/flash_attn/bert_padding.py"
    assert not _tri013(NAME.format(path=path, name="flash_attn_varlen_func"))


def test_short_and_builtin_names_get_nothing() -> None:
    for name in ("np", "torch", "print", "Exception"):
        assert not _tri013(NAME.format(path="ochat/x.py", name=name))


# -- a dataclass field every release has, missing from an object of that class's name -----------

SITE = "/usr/local/lib/python3.10/dist-packages/transformers"
NOTEBOOK = """{versions}{site}/{path} in on_train_begin(self, args, state, control, **kwargs)
    294     def on_train_begin(self, args, state, control, **kwargs):
--> 295         self.first_column = "Epoch" if args.{attr} == IntervalStrategy.EPOCH else "Step"

AttributeError: '{cls}' object has no attribute '{attr}'
"""


def _same_name(**kw: str):
    args = {"versions": "", "site": SITE, "path": "utils/notebook.py", "cls": "TrainingArguments"}
    args["attr"] = "eval_strategy"
    text = NOTEBOOK.format(**{**args, **kw})
    return [f for f in findings(scan_bytes(text)) if f.rule == "TRI009"]


def test_a_field_every_release_has_read_by_the_package_is_another_packages_class() -> None:
    # set 16 d005 (huggingface/setfit#528): setfit's own TrainingArguments, transformers renamed the field
    (f,) = _same_name()
    assert f.severity == Severity.WARNING and "another package's class of the same name" in f.message
    assert "'evaluation_strategy' until" in f.message and f.fix.startswith("pin transformers")


def test_quiet_for_the_users_own_frame_and_a_release_older_than_the_history() -> None:
    text = (
        "Traceback (most recent call last):\n"
        '  File "/home/u/train.py", line 3, in <module>\n'
        "    print(args.eval_strategy)\n"
        "AttributeError: 'TrainingArguments' object has no attribute 'eval_strategy'\n"
    )
    assert not [f for f in findings(scan_bytes(text)) if "same name" in f.message]
    assert not [f for f in _same_name(versions="transformers==4.39.0\n") if "same name" in f.message]


def test_quiet_for_a_class_that_is_no_dataclass() -> None:
    """StaticLayer sets max_batch_size in a method: it may not have run yet (set 16 b012)."""
    assert not [f for f in _same_name(cls="StaticLayer", attr="max_batch_size") if "same name" in f.message]


def test_a_configuration_attribute_some_releases_lack(synthetic: Path) -> None:
    text = "AttributeError: 'Qwen2Config' object has no attribute 'rope_theta'\n"
    (f,) = _drift(text)
    assert "Qwen2Config.rope_theta" in f.message and "model keyword history" in f.message
    assert "pip install 'transformers>=4.50.3'" in f.fix


def test_quiet_for_a_configuration_class_the_history_has_no_model_of(synthetic: Path) -> None:
    assert not _drift("AttributeError: 'MyNetConfig' object has no attribute 'rope_theta'\n")
    assert not _drift("AttributeError: 'Qwen2Config' object has no attribute 'vocab_size'\n")  # every release


def test_quiet_where_the_raising_package_binds_the_name_itself() -> None:
    """TRL binds unwrap_model_for_generation in every release; deepspeed defines one in some: a TRL
    frame's NameError on it is TRL's release bug (TRI014), not deepspeed's import failing."""
    path = "/usr/local/lib/python3.11/site-packages/trl/trainer/grpo_trainer.py"
    assert not _tri013(NAME.format(path=path, name="unwrap_model_for_generation"))


def test_quiet_where_another_package_defines_the_name_in_every_release() -> None:
    """vllm defines SamplingParams in every release, unsloth-zoo its own in some: not unsloth-zoo's
    import failing (the user forgot vllm's import); transformers' BitsAndBytesConfig likewise (rv18d)."""
    for name in ("SamplingParams", "BitsAndBytesConfig", "unwrap_model_for_generation"):
        assert not _tri013(NAME.format(path="/home/u/proj/train.py", name=name)), name


def test_the_logs_release_that_has_the_name_gets_no_install_advice() -> None:
    """trl 0.20 has GRPOConfig: its guarded import did not fail for the release (a missing import, a
    broken build): the fix is the import check, not pip install (rv18d)."""
    (f,) = _tri013("trl==0.20.0\n" + NAME.format(path="/home/u/proj/train.py", name="GRPOConfig"))
    assert f.severity == Severity.WARNING and "the log's trl 0.20.0 has it" in f.message
    assert "pip install" not in f.fix and "from trl.trainer.grpo_config import GRPOConfig" in f.fix


def test_a_removed_name_with_no_release_in_the_log_implies_no_downgrade() -> None:
    """Yuliang-Liu/Monkey#76: NameError flash_attn_unpadded_func (flash-attn 1's name), the code binds it
    from flash-attn 2's flash_attn_varlen_func too; flash-attn was absent: no pin below 2.0 (rv18d)."""
    path = "/home/u/.cache/huggingface/modules/transformers_modules/Monkey/modeling_qwen.py"
    (f,) = _tri013(NAME.format(path=path, name="flash_attn_unpadded_func"))
    assert "flash-attn<2" not in f.fix and "no pin below 2.0.0 is implied" in f.fix
    (g,) = _tri013("flash-attn 2.5.8\n" + NAME.format(path=path, name="flash_attn_unpadded_func"))
    assert g.severity == Severity.ERROR and "flash-attn<2.0.0" in g.fix  # the log's release lacks it
