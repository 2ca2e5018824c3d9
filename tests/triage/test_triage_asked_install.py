"""A package's own availability check that stops the run naming what to install (TRI013,
``missing.asked_install``): the package is missing from the environment that ran, or its import
fails there. The messages are the packages' own (Unsloth's loader, TRL's GRPOTrainer, transformers'
bitsandbytes check, TRL's Liger check); quiet where the words name no package, on a warning, and
where the run went on."""

from __future__ import annotations

import pytest

from tests.triage.helpers import findings, scan_bytes

UNSLOTH = (  # an executed notebook's cell output (Windows user site), cut to the raise
    "File ~\\AppData\\Roaming\\Python\\Python312\\site-packages\\unsloth\\models\\loader.py:93, in "
    "FastLanguageModel.from_pretrained(model_name, max_seq_length, fast_inference)\n"
    "     91 if fast_inference:\n"
    '     92     if importlib.util.find_spec("vllm") is None:\n'
    "---> 93         raise ImportError(\n"
    '     94             "Unsloth: Please install vLLM before enabling `fast_inference`!\\n"\\\n'
    "\n"
    "ImportError: Unsloth: Please install vLLM before enabling `fast_inference`!\n"
    "You can do this in a terminal via `pip install vllm`\n"
)
TRL = (
    "ImportError: vLLM is not available and `use_vllm` is set to True. Please install vLLM with "
    "`pip install vllm` to use it.\n"
)
BNB = (
    "ImportError: Using `bitsandbytes` 4-bit quantization requires the latest version of "
    "bitsandbytes: `pip install -U bitsandbytes`\n"
)
LIGER = "ImportError: Liger Kernel is not available. Please install it with `pip install liger-kernel`.\n"


def _tri013(text: str) -> list:
    return [f for f in findings(scan_bytes(text)) if f.rule == "TRI013"]


@pytest.mark.parametrize(
    ("text", "dist", "setting"),
    [
        (UNSLOTH, "vllm", "fast_inference"),
        (TRL, "vllm", "use_vllm"),
        (BNB, "bitsandbytes", None),
        (LIGER, "liger-kernel", None),
    ],
)
def test_a_package_check_naming_what_to_install_is_an_error(
    text: str, dist: str, setting: str | None
) -> None:
    (f,) = _tri013(text)
    assert f.severity.value == "error"
    assert f"{dist} cannot be imported" in f.message
    assert f"pip install {'-U ' if text is BNB else ''}{dist}" in f.fix
    assert f"import {dist.replace('-', '_')}" in f.fix  # installed but broken: how to see why
    assert (f"turn `{setting}` off" in f.fix) == (setting is not None)


def test_the_raising_package_is_named_from_its_frame() -> None:
    (f,) = _tri013(UNSLOTH)
    assert f.message.startswith("unsloth (models/loader.py:93) stops the run")


def test_the_latest_version_asked_is_said() -> None:
    (f,) = _tri013(BNB)
    assert "(or is older than it needs)" in f.message


@pytest.mark.parametrize(
    "text",
    [
        "ValueError: Please install the model in the folder given by --model_dir\n",  # no package
        "ImportError: Please install Foo before running\n",  # a word envdoctor knows as no package
        "UserWarning: Liger Kernel is not available. Please install it with `pip install liger-kernel`.\n",
    ],
)
def test_quiet_where_no_known_package_or_no_failure(text: str) -> None:
    assert _tri013(text) == []


def test_quiet_where_the_run_went_on() -> None:
    steps = "".join(
        f"{{'loss': 0.{i}, 'grad_norm': 1.0, 'learning_rate': 1e-05, 'epoch': 0.0{i}}}\n" for i in range(1, 6)
    )
    assert _tri013(LIGER + steps) == []


TRANSFORMERS_ACCELERATE = (  # a notebook that upgraded packages in its running kernel (pip lines first)
    "Requirement already satisfied: accelerate in /opt/anaconda3/lib/python3.12/site-packages (1.9.0)\n"
    "Requirement already satisfied: filelock in /opt/anaconda3/lib/python3.12/site-packages "
    "(from torch) (3.13.1)\n"
    "Successfully installed transformers-4.53.2\n"
    "File /opt/anaconda3/lib/python3.12/site-packages/transformers/training_args.py:2189, in "
    "TrainingArguments._setup_devices(self)\n"
    "-> 2189         raise ImportError(\n"
    "\n"
    "ImportError: Using the `Trainer` with `PyTorch` requires `accelerate>=0.26.0`: Please run `pip install "
    "transformers[torch]` or `pip install 'accelerate>=0.26.0'`\n"
)


def test_the_package_asked_is_not_the_raiser_named_first() -> None:
    (f,) = _tri013(
        TRANSFORMERS_ACCELERATE.split("Requirement", 1)[0] + TRANSFORMERS_ACCELERATE.split("\n", 3)[3]
    )
    assert "accelerate cannot be imported" in f.message
    assert "pip install 'accelerate>=0.26.0'" in f.fix


def test_a_package_the_log_shows_installed_is_a_process_started_before_the_install() -> None:
    (f,) = _tri013(TRANSFORMERS_ACCELERATE)
    assert f.severity.value == "error"
    assert "the log shows installed (accelerate 1.9.0, which meets >=0.26.0)" in f.message
    assert f.fix.startswith("restart the kernel / runtime after the pip installs")


def test_pip_already_satisfied_lines_give_the_release() -> None:
    from envdoctor.triage.logversions import read_line

    found: dict = {}
    read_line("Requirement already satisfied: accelerate in /usr/lib/python3/site-packages (1.9.0)", 3, found)
    read_line("Requirement already satisfied: torch>=2.0 in /x/site-packages (from trl) (2.7.1)", 4, found)
    assert found["accelerate"].version == "1.9.0" and found["torch"].version == "2.7.1"


def test_the_import_to_try_is_the_module_the_distribution_installs() -> None:
    (f,) = _tri013(
        "ImportError: FlashInfer is not available. Please install it with `pip install flashinfer-python`\n"
    )
    assert "pip install flashinfer-python" in f.fix
    assert "`python -c 'import flashinfer'`" in f.fix  # not flashinfer_python


REMOTE_CODE = (  # transformers' check of a remote-code modeling file's imports, its message wrapped
    "Traceback (most recent call last):\n"
    '  File "/opt/venv/lib/python3.11/site-packages/transformers/dynamic_module_utils.py", line 215, '
    "in check_imports\n"
    "    raise ImportError(\n"
    "ImportError: This modeling file requires the following packages that were not found\n"
    "in your environment: mamba_kernels_x. Run `pip install mamba_kernels_x`\n"
)


def test_a_package_no_table_knows_is_asked_where_the_message_names_it_missing_and_to_install() -> None:
    """transformers names the remote code's missing import and the pip line for it; the message goes
    on over the next line (the paste's wrap), where the pip line is."""
    (f,) = _tri013(REMOTE_CODE)
    assert f.severity.value == "error"
    assert "mamba-kernels-x cannot be imported" in f.message
    assert "pip install 'mamba_kernels_x'" in f.fix


@pytest.mark.parametrize(
    "text",
    [
        # the name only after "pip install": not said to be missing
        "ImportError: This feature needs more. Run `pip install mamba_kernels_x`\n",
        # words after "pip install", not a package
        "ImportError: requires the latest version, not found: pip install the latest version\n",
    ],
)
def test_an_unknown_name_said_once_or_a_word_after_pip_install_stays_quiet(text: str) -> None:
    assert _tri013(text) == []
