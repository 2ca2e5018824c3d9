"""Quotes are soft where a message meets a raise-site template or a catalogue signature
(envdoctor/knowledge/quotes.py): a message pasted from a rendered page (its backticks eaten by
markdown, its quotes typeset or swapped, ``__init__`` rendered bold, ``&#39;``) meets what the
program's own message meets, and nothing that the program's message would not."""

from __future__ import annotations

import re

import pytest

from envdoctor.knowledge.failures import Symptom
from envdoctor.knowledge.quotes import ascii_quotes, compile_soft, soft, soft_marked, soft_regex
from envdoctor.knowledge.raise_sites import MIN_MATCHED, WILD, locate
from envdoctor.triage import catalogue, prefilter, scanner, signatures
from tests.triage.helpers import scan_bytes

#: real messages of the dev logs, as the program printed them (the raise's template), with the
#: package whose raise they are: docs/validation/heldout-2026-11-28g/logs2/003.log,
#: heldout-2026-11-28h/logs4/009.log, heldout-2026-11-28h/logs2/003.log,
#: heldout-2026-11-30b/logs19e/logs/005.log, heldout-2026-11-29i/logs17a/logs/006.log
REAL = [
    (
        "accelerate",
        "Please make sure to properly initialize your accelerator via `accelerator = Accelerator()` "
        "before using any functionality from the `accelerate` library.",
    ),
    (
        "trl",
        "You passed `packing=False` to the SFTTrainer/SFTConfig, but you didn't pass a "
        "`dataset_text_field` or `formatting_func` argument.",
    ),
    (
        "transformers",
        "The following `model_kwargs` are not used by the model: ['mm_token_type_ids'] (note: typos in "
        "the generate arguments will also show up in this list)",
    ),
    (
        "transformers",
        "`rope_scaling` must be a dictionary with two fields, `type` and `factor`, got {'factor': 8.0, "
        "'rope_type': 'llama3'}",
    ),
    (
        "transformers",
        "The checkpoint you are trying to load has model type `qwen3_5` but Transformers does not "
        "recognize this architecture",
    ),
]

_TYPOGRAPHIC = str.maketrans({"`": "\u2018", "'": "\u2019"})


def _forms(message: str) -> dict[str, str]:
    """The message as pages render it."""
    return {
        "markdown ate the backticks": message.replace("`", ""),
        "no quotes at all": re.sub("[`'\"]", "", message),
        "typeset": message.translate(_TYPOGRAPHIC),
        "swapped": message.replace("`", "'"),
        "html source": message.replace("'", "&#39;").replace("`", "&#96;"),
    }


def _sites(message: str, package: str) -> set[tuple[str, str]]:
    return {(h.site.module, h.site.function) for h in locate(message, "ValueError", (package,))}


@pytest.mark.parametrize(("package", "message"), REAL, ids=[m[:30] for _, m in REAL])
def test_a_real_message_meets_its_raise_with_its_quotes_without_them_or_with_others(
    package: str, message: str
) -> None:
    exact = _sites(message, package)
    assert exact, "the program's own message is placed"
    for how, form in _forms(message).items():
        assert _sites(form, package) == exact, how


def test_init_rendered_bold_and_escaped_underscores_read_as_the_dunder() -> None:
    assert soft("Seq2SeqTrainingArguments.__init__() got") == soft("Seq2SeqTrainingArguments.init() got")
    assert soft("Seq2SeqTrainingArguments.**init**() got") == soft("Seq2SeqTrainingArguments.init() got")
    assert soft("`rope\\_scaling` must") == soft("rope_scaling must")
    assert soft("a __private_name stays") == "a __private_name stays"


def test_a_quote_that_went_does_not_let_a_word_run_on() -> None:
    # a template's closing quote: the word ends there (not the start of a longer name)
    from envdoctor.knowledge.quotes import quoted_parts, soft_template
    from envdoctor.knowledge.raise_sites import Soft, fit

    template = "no attribute named 'base_model'"
    tpl, quoted = soft_template(template), Soft(*quoted_parts(template, WILD))
    assert fit(tpl, soft("X has no attribute named base_model"), quoted) is not None
    assert fit(tpl, soft("X has no attribute named 'base_model'"), quoted) is not None
    assert fit(tpl, soft("X has no attribute named 'base_model_prefix'"), quoted) is None


def test_a_quoted_leading_value_without_its_quotes_needs_a_long_literal_after_it() -> None:
    # verl's "`{x}` must be one of {…}, got {…}": with the quotes, its 20 characters tell it; without
    # them, " must be one of" after any text would fit transformers' rope_scaling check
    message = "rope_scaling's type field must be one of ['su', 'yarn'], got longrope"
    assert locate(message, "ValueError", ("verl",)) == []
    assert locate("`mode` must be one of ['a', 'b'], got c", "ValueError", ("verl",))


def test_quotes_count_for_nothing_towards_the_characters_a_message_must_show() -> None:
    text = "'a' 'b' 'c' 'd' 'e' 'f' 'g'"
    assert len(text) >= MIN_MATCHED > len(soft_marked(text)[0])
    assert locate(text) == []


def test_an_empty_string_stays_an_empty_string() -> None:
    assert soft("invalid choice: ''") != soft("invalid choice: 'x'")
    pattern = re.compile(soft_regex(re.escape("invalid choice: ''")))
    assert pattern.search('invalid choice: "" (choose from')
    assert not pattern.search("invalid choice: 'unsloth' (choose from 'swift', 'peft')")


def test_soft_regex_keeps_classes_and_groups() -> None:
    pattern = re.compile(soft_regex(r"KeyError: '(?P<key>[^']+)'"))
    assert pattern.search("KeyError: 'RANK'")["key"] == "RANK"
    assert (
        pattern.search(ascii_quotes("KeyError: \u2018RANK\u2019"))["key"] == "RANK"
    )  # as ``clean`` reads it
    assert pattern.search("KeyError: RANK")["key"] == "RANK"
    assert compile_soft("(?<=')x").pattern == "(?<=')x"  # a look-behind keeps its quote (fixed width)
    assert soft_regex("no quotes here") == "no quotes here"


def test_catalogue_symptoms_literal_and_regex_meet_pasted_forms_and_not_near_misses() -> None:
    literal = Symptom("cannot import name 'GuidedDecodingParams' from 'vllm.sampling_params'")
    for form in (
        "ImportError: cannot import name GuidedDecodingParams from vllm.sampling_params",
        "ImportError: cannot import name \u2018GuidedDecodingParams\u2019 from "
        "\u2018vllm.sampling_params\u2019",
        'ImportError: cannot import name "GuidedDecodingParams" from "vllm.sampling_params"',
    ):
        assert literal.found_in(form), form
    near = "ImportError: cannot import name GuidedDecodingParamsV2 from vllm.sampling_params"
    assert not literal.found_in(near)
    assert not literal.found_in(near.replace("V2", "").replace("params", "params_v2"))
    regex = Symptom(r"re:No module named '(?:vllm\.worker\.worker|vllm\.worker)'")
    assert regex.found_in("ModuleNotFoundError: No module named vllm.worker.worker")
    assert not regex.found_in("ModuleNotFoundError: No module named vllm.worker.workers")


@pytest.fixture
def shipped_signatures():
    catalogue.catalogue.cache_clear()
    signatures._with_catalogue.cache_clear()
    yield
    catalogue.catalogue.cache_clear()
    signatures._with_catalogue.cache_clear()


PASTED = (
    "Traceback (most recent call last):\n"
    '  File "train.py", line 3, in <module>\n'
    "ImportError: cannot import name \u2018GuidedDecodingParams\u2019 from \u2018vllm.sampling_params\u2019\n"
    "Failed to resolve huggingface.co ([Errno -3] Temporary failure in name resolution)\n"
)


def test_the_scan_and_the_prefilter_reach_the_catalogue_with_a_pasted_line(
    shipped_signatures, tmp_path
) -> None:
    found = {m.signature.id for m in scan_bytes(PASTED).matches}
    assert "known-trl-guided-decoding-params-vllm-0-12" in found
    assert "known-hub-unreachable-files-not-cached" in found
    assert b"Failed to resolve " in signatures.anchors()  # the anchor is cut before its quote
    if prefilter.gnu_grep() is None:
        return
    log = tmp_path / "pasted.log"
    log.write_text("INFO step\n" * 1000 + PASTED)
    with open(log, "rb") as fh:
        python = scanner.scan(fh)
    got = prefilter.scan_grepped(str(log))
    assert got is not None
    assert [(m.signature.id, m.line_no) for m in got.matches] == [
        (m.signature.id, m.line_no) for m in python.matches
    ]


def test_a_quote_the_text_holds_is_taken_before_a_look_ahead_reads_on():
    """A soft quote may be absent, but where the text holds one it is taken: the look-ahead after
    it then reads what follows the quote (the disk-full entry's ``'(?!/dev/shm)`` is not fooled by
    skipping the quote and looking at it instead)."""
    import re

    from envdoctor.knowledge.quotes import soft_regex

    pattern = re.compile(soft_regex(r"No space left on device: '(?!/dev/shm)"))
    assert pattern.search("No space left on device: '/data/ckpt/model.bin'")
    assert pattern.search("No space left on device: /data/ckpt/model.bin")  # pasted without quotes
    assert not pattern.search("No space left on device: '/dev/shm/torch_1234_5678'")
    assert not pattern.search("No space left on device: `/dev/shm/torch_1234_5678`")
