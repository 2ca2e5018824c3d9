"""TRI040: text read or written with the locale's legacy codec (cp1252, GBK, ASCII) where it is
UTF-8: the cause is the process's encoding, so PYTHONUTF8=1 fixes whatever code opened the file.

Held-out set 24 (read after it was measured): TRL 1.5.0 on Windows failed at `from trl import
SFTTrainer` ('charmap' codec can't decode byte 0x81; huggingface/trl#5869), and a MedicalGPT fork's
model-card save failed until its launch script exported a UTF-8 locale. Python's logging reports a
record it cannot encode (--- Logging error ---) and goes on: no failure."""

from __future__ import annotations

import pytest

from tests.triage.helpers import findings, scan_bytes

TRL_WINDOWS = (
    "UnicodeDecodeError: 'charmap' codec can't decode byte 0x81 in position 932: character maps to "
    "<undefined>\nRuntimeError: Failed to import trl.trainer.sft_trainer because of the following error "
    "(look up to see its traceback): 'charmap' codec can't decode byte 0x81 in position 932: character "
    "maps to <undefined>\n"
)
GBK_DATA = (
    "Traceback (most recent call last):\n"
    '  File "D:\\work\\train_grpo.py", line 12, in <module>\n'
    '    data = json.load(open("data/train.json"))\n'
    '  File "C:\\Users\\x\\miniconda3\\lib\\json\\__init__.py", line 293, in load\n'
    "    return loads(fp.read(),\n"
    "UnicodeDecodeError: 'gbk' codec can't decode byte 0xae in position 72: illegal multibyte sequence\n"
)
ASCII_CARD = (
    "Traceback (most recent call last):\n"
    '  File "/opt/conda/lib/python3.10/site-packages/trl/trainer/grpo_trainer.py", line 1502, in '
    "create_model_card\n"
    '    model_card.save(os.path.join(self.args.output_dir, "README.md"))\n'
    '  File "/opt/conda/lib/python3.10/site-packages/huggingface_hub/repocard.py", line 120, in save\n'
    "    f.write(str(self))\n"
    "UnicodeEncodeError: 'ascii' codec can't encode character '\\u4e2d' in position 211: ordinal not "
    "in range(128)\n"
)
LOGGING_ERROR = (
    "{'loss': 0.12, 'grad_norm': 1.2, 'learning_rate': 1e-06, 'epoch': 0.1}\n"
    "--- Logging error ---\n"
    "Traceback (most recent call last):\n"
    '  File "C:\\Python311\\Lib\\logging\\__init__.py", line 1113, in emit\n'
    "    stream.write(msg + self.terminator)\n"
    '  File "C:\\Python311\\Lib\\encodings\\cp1252.py", line 19, in encode\n'
    "    return codecs.charmap_encode(input,self.errors,encoding_table)[0]\n"
    "UnicodeEncodeError: 'charmap' codec can't encode character '\\U0001f680' in position 10: "
    "character maps to <undefined>\n"
    "Call stack:\n"
    '  File "train.py", line 80, in <module>\n'
    '    logger.info("Start")\n'
    "Message: 'Start'\n"
    "Arguments: ()\n"
)


def _tri(log: str) -> list:
    return [f for f in findings(scan_bytes(log)) if f.severity.value in ("error", "warning")]


@pytest.mark.parametrize(
    ("log", "codec", "said"),
    [
        (TRL_WINDOWS, "charmap", "cp1252"),
        (GBK_DATA, "gbk", "GBK"),
        (ASCII_CARD, "ascii", "C"),
    ],
)
def test_a_legacy_codec_is_an_error_whose_fix_is_utf8_mode(log, codec, said):
    (f,) = _tri(log)
    assert f.rule == "TRI040" and f.severity.value == "error"
    assert f.evidence["codec"] == codec and said in f.message
    assert "PYTHONUTF8=1" in f.fix


def test_a_trl_frame_adds_the_release_that_reads_utf8():
    log = ASCII_CARD.replace("huggingface_hub/repocard.py", "trl/chat_template_utils.py")
    (f,) = _tri(log)
    assert "trl>=1.6.0" in f.fix


def test_utf8_codec_is_another_failure():
    log = GBK_DATA.replace(
        "'gbk' codec can't decode byte 0xae in position 72: illegal multibyte sequence",
        "'utf-8' codec can't decode byte 0x80 in position 64: invalid start byte",
    )
    assert all(f.rule != "TRI040" for f in _tri(log))


@pytest.mark.parametrize("tail", ["", "{'train_runtime': 120.5, 'train_loss': 0.11, 'epoch': 1.0}\n"])
def test_logging_reports_it_and_goes_on(tail):
    """Nothing: not TRI040, not a first exception (TRI003), not a cut traceback (the Call stack)."""
    assert _tri(LOGGING_ERROR + tail) == []


def test_a_crash_after_a_logging_error_is_the_failure():
    crash = "Traceback (most recent call last):\n" + GBK_DATA.split("\n", 1)[1]
    got = _tri(LOGGING_ERROR + crash)
    assert [f.rule for f in got] == ["TRI040"] and got[0].evidence["codec"] == "gbk"


def test_a_run_that_trains_after_the_line_went_on():
    assert all(f.rule != "TRI040" for f in _tri(GBK_DATA + "{'loss': 0.5, 'epoch': 0.2}\n"))


def test_only_trls_template_reader_gets_the_trl_release():
    """TRL 1.6.0 passes the encoding where it reads its chat templates, not everywhere: a model
    card TRL writes itself names no TRL release."""
    log = ASCII_CARD.replace(
        '  File "/opt/conda/lib/python3.10/site-packages/huggingface_hub/repocard.py", line 120, in save\n'
        "    f.write(str(self))\n",
        "",
    )
    (f,) = _tri(log)
    assert f.rule == "TRI040" and "trl>=" not in f.fix


def test_a_data_file_in_another_encoding_is_told_to_convert():
    """chatglm3-finetune#11 (reach, not written from): json.load of the user's dataset under GBK;
    the maintainers' answer was the dataset's encoding."""
    (f,) = _tri(GBK_DATA)
    assert "convert it to UTF-8" in f.fix and "PYTHONUTF8=1" in f.fix
