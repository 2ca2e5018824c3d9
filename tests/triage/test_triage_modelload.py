# ruff: noqa: E501 - log lines are quoted as programs print them
"""Loading a model from the Hub with code or a checkpoint written for another release: torch's
size-mismatch list read by the parameter's role across wraps (envdoctor/triage/statedict.py), a
remote-code tokenizer older than PreTrainedTokenizer.__init__ (artifacts.base_init), peft's target
modules quoted without their exception's name."""

from __future__ import annotations

from pathlib import Path

from envdoctor.findings import Severity
from envdoctor.triage import statedict
from tests.triage.helpers import findings, scan_bytes

SET19 = Path(__file__).resolve().parents[2] / "docs" / "validation" / "heldout-2026-11-30b"


def _all(text: str | bytes):
    return findings(scan_bytes(text))


def _rule(text: str | bytes, rule: str):
    return next((f for f in _all(text) if f.rule == rule), None)


# -- torch's size-mismatch list ---------------------------------------------------------------------

# set 19's e003 (dev): Mistral-Nemo's q_proj (head_dim 128 x 32 heads) under a transformers that
# derives head_dim from hidden_size (before 4.43.0)
NEMO = (SET19 / "logs19e" / "logs" / "003.log").read_bytes()
# set 19's e007 (dev): TinyLlama's grouped-query k_proj as a JSON string, under a transformers
# before 4.31.0
TINYLLAMA = (SET19 / "logs19e" / "logs" / "007.log").read_bytes()
# set 19's e004 (dev): the adapter's embed_tokens rows, the record wrapped over three lines
QWEN_ADAPTER = (SET19 / "logs19e" / "logs" / "004.log").read_bytes()

NEMO_OLD = b"""transformers==4.42.4
Traceback (most recent call last):
  File "/home/u/train.py", line 9, in <module>
    model = AutoModelForCausalLM.from_pretrained("mistralai/Mistral-Nemo-Base-2407")
RuntimeError: Error(s) in loading state_dict for MistralForCausalLM:
\tsize mismatch for model.layers.0.self_attn.q_proj.weight: copying a param with shape torch.Size([4096, 5120]) from checkpoint, the shape in current model is torch.Size([5120, 5120]).
"""


def test_head_dim_projection_read_as_a_release_that_ignores_the_field() -> None:
    f = _rule(NEMO, "TRI038")
    assert f is not None and f.severity == Severity.WARNING  # no transformers version shown
    assert "config.head_dim" in f.message and "MistralForCausalLM" in f.message
    assert "transformers>=4.43.0" in f.fix
    assert not any(x.rule == "TRI003" for x in _all(NEMO))


def test_the_logs_release_before_the_field_is_an_error_and_after_it_is_quiet() -> None:
    f = _rule(NEMO_OLD, "TRI038")
    assert f is not None and f.severity == Severity.ERROR
    later = NEMO_OLD.replace(b"transformers==4.42.4", b"transformers==4.44.0")
    assert _rule(later, "TRI038") is None  # that release reads head_dim: another cause


def test_grouped_query_projection_in_a_json_string() -> None:
    f = _rule(TINYLLAMA, "TRI038")
    assert f is not None and "num_key_value_heads" in f.message
    assert "transformers>=4.31.0" in f.fix
    # torch's load list is no Liger matmul's "size mismatch"
    assert not any("liger" in x.message.lower() for x in _all(TINYLLAMA))


def test_wrapped_vocabulary_record_reaches_the_catalogue_entry() -> None:
    f = _rule(QWEN_ADAPTER, "TRI011")
    assert f is not None and f.evidence.get("known_failure") == "vocab-size-mismatch-on-load"
    assert "resize_token_embeddings" in f.fix


def test_ambiguous_shapes_are_not_read() -> None:
    # the hidden size differs too (another model's checkpoint), and a model projection not square
    for ck, md in (
        ("[4096, 4096]", "[5120, 5120]"),
        ("[1024, 5120]", "[1280, 5120]"),
        ("[8192, 2048]", "[2048, 2048]"),
    ):
        log = (
            "RuntimeError: Error(s) in loading state_dict for LlamaForCausalLM:\n"
            f"\tsize mismatch for model.layers.0.self_attn.k_proj.weight: copying a param with shape torch.Size({ck}) "
            f"from checkpoint, the shape in current model is torch.Size({md}).\n"
        )
        assert _rule(log, "TRI038") is None, (ck, md)


def test_records_read_across_prefixes_and_escapes() -> None:
    recs = statedict.records(NEMO)
    assert len(recs) == 1 and recs[0].owner == "MistralForCausalLM"
    assert recs[0].checkpoint == (4096, 5120) and recs[0].model == (5120, 5120)
    assert statedict.records(TINYLLAMA)[0].owner == "LlamaForCausalLM"
    assert statedict.records(b"no mismatch here") == []
    hostile = b"size mismatch for " * 100000
    assert statedict.records(hostile) == []


# -- a remote-code tokenizer older than PreTrainedTokenizer.__init__ ---------------------------------

# set 19's d003 (dev): the message alone
BAICHUAN = (SET19 / "logs19d" / "logs" / "003.log").read_bytes()

BAICHUAN_FRAMES = b"""transformers==4.36.2
Traceback (most recent call last):
  File "/home/u/train.py", line 20, in <module>
    tokenizer = AutoTokenizer.from_pretrained("baichuan-inc/Baichuan2-7B-Chat", trust_remote_code=True)
  File "/usr/lib/python3.10/site-packages/transformers/models/auto/tokenization_auto.py", line 774, in from_pretrained
    return tokenizer_class.from_pretrained(pretrained_model_name_or_path, *inputs, **kwargs)
  File "/root/.cache/huggingface/modules/transformers_modules/Baichuan2-7B-Chat/tokenization_baichuan.py", line 75, in __init__
    super().__init__(
  File "/usr/lib/python3.10/site-packages/transformers/tokenization_utils.py", line 367, in __init__
    self._add_tokens(
  File "/usr/lib/python3.10/site-packages/transformers/tokenization_utils.py", line 467, in _add_tokens
    current_vocab = self.get_vocab().copy()
  File "/root/.cache/huggingface/modules/transformers_modules/Baichuan2-7B-Chat/tokenization_baichuan.py", line 109, in get_vocab
    vocab = {self.convert_ids_to_tokens(i): i for i in range(self.vocab_size)}
  File "/root/.cache/huggingface/modules/transformers_modules/Baichuan2-7B-Chat/tokenization_baichuan.py", line 105, in vocab_size
    return self.sp_model.get_piece_size()
AttributeError: 'BaichuanTokenizer' object has no attribute 'sp_model'
"""


def test_remote_tokenizer_message_alone_is_a_warning_with_the_release_before() -> None:
    f = _rule(BAICHUAN, "TRI038")
    assert f is not None and f.severity == Severity.WARNING
    assert "transformers<4.34.0" in f.fix and "revision" in f.fix


def test_remote_tokenizer_through_the_base_init_is_an_error() -> None:
    f = _rule(BAICHUAN_FRAMES, "TRI038")
    assert f is not None and f.severity == Severity.ERROR
    assert "_add_tokens" in f.message


def test_quiet_for_a_stack_tokenizer_another_path_or_an_older_release() -> None:
    assert _rule(b"AttributeError: 'LlamaTokenizer' object has no attribute 'sp_model'\n", "TRI038") is None
    older = BAICHUAN_FRAMES.replace(b"transformers==4.36.2", b"transformers==4.33.3")
    assert _rule(older, "TRI038") is None
    user = b"""Traceback (most recent call last):
  File "/home/u/prep.py", line 30, in <module>
    ids = tok.sp_model.encode(text)
AttributeError: 'MyTokenizer' object has no attribute 'sp_model'
"""
    assert _rule(user, "TRI038") is None


# -- peft's target modules quoted without the exception's name ----------------------------------------

PHI_TARGETS = (SET19 / "logs19e" / "logs" / "010.log").read_bytes()


def test_target_modules_message_alone_names_all_linear() -> None:
    f = _rule(PHI_TARGETS, "TRI011")
    assert f is not None and f.evidence.get("known_failure") == "peft-target-modules-not-in-model"
    assert 'target_modules="all-linear" (peft 0.8.0 and later' in f.fix
    # the fix changes the config, not a release: with the exception's name it stays an error
    named = _rule(b"ValueError: " + PHI_TARGETS, "TRI011")
    assert named is not None and named.severity == Severity.ERROR


# set 19's e013 (dev): peft's wording of 0.3.0-0.5.0 refusing AutoGPTQ's QuantLinear
GPTQ = (SET19 / "logs19e" / "logs" / "013.log").read_bytes()


def test_quantlinear_refused_by_an_old_peft_names_the_release_that_wraps_it() -> None:
    f = _rule(GPTQ, "TRI011")
    assert f is not None and f.evidence.get("known_failure") == "peft-gptq-quantlinear-before-0.5"
    assert f.severity == Severity.WARNING and "peft>=0.5.0" in f.fix
    assert _rule(b"peft==0.5.0\n" + GPTQ, "TRI011") is None  # that release wraps it: another cause
    # peft 0.6.0's wording for another module type: not this entry
    other = b"ValueError: Target module Linear8bitLt() is not supported. Currently, only the following modules are supported: `torch.nn.Linear`, `torch.nn.Embedding`, `torch.nn.Conv2d`, `transformers.pytorch_utils.Conv1D`.\n"
    f2 = _rule(other, "TRI011")
    assert f2 is None or f2.evidence.get("known_failure") != "peft-gptq-quantlinear-before-0.5"


# -- a class that refuses gradient checkpointing, against transformers' own of that name ------------

# set 19's e009 (dev): phi-2's remote-code PhiForCausalLM of its time
PHI_GC = (SET19 / "logs19e" / "logs" / "009.log").read_bytes()

PHI_GC_FRAMES = b"""Traceback (most recent call last):
  File "/home/u/sft.py", line 40, in <module>
    trainer = SFTTrainer(model=model, args=args, train_dataset=ds)
  File "/usr/lib/python3.10/site-packages/transformers/modeling_utils.py", line 1872, in gradient_checkpointing_enable
    raise ValueError(f"{self.__class__.__name__} does not support gradient checkpointing.")
ValueError: PhiForCausalLM does not support gradient checkpointing.
(model loaded from /root/.cache/huggingface/modules/transformers_modules/microsoft/phi-2/modeling_phi.py)
"""


def test_refused_checkpointing_by_a_class_transformers_supports_is_remote_code() -> None:
    f = _rule(PHI_GC, "TRI038")
    assert f is not None and f.severity == Severity.WARNING
    assert "trust_remote_code" in f.fix and "transformers>=4.36.0" in f.fix
    assert "gradient_checkpointing=False" in f.fix
    g = _rule(PHI_GC_FRAMES, "TRI038")
    assert g is not None and g.severity == Severity.ERROR  # the remote code's path is shown


def test_refused_checkpointing_by_other_classes() -> None:
    own = _rule(b"ValueError: AlbertModel does not support gradient checkpointing.\n", "TRI038")
    assert own is None  # transformers' own class refuses it: its limit, not another code
    custom = _rule(
        b"ValueError: InternLMXComposer2ForCausalLM does not support gradient checkpointing.\n", "TRI038"
    )
    assert custom is not None and custom.severity == Severity.WARNING
    assert "gradient_checkpointing=False" in custom.fix and "trust_remote_code with" not in custom.fix


def test_hostile_heads_are_bounded() -> None:
    import time

    from envdoctor.triage import remotecode

    t = time.monotonic()
    assert remotecode._first("A" * 1_000_000 + " does not support " * 1000) is None
    _all(b"RuntimeError: boom\n" + b"size mismatch for " * 50_000 + b"x" * 100_000)
    assert time.monotonic() - t < 20
