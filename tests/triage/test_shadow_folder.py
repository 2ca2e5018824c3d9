"""TRI036: a folder of the user's code named like a stack package imported in its place."""

from __future__ import annotations

from tests.conftest import run_cli

SHADOW = """Traceback (most recent call last):
  File "/home/u/proj/train.py", line 3, in <module>
    from datasets import load_dataset
ImportError: cannot import name 'load_dataset' from 'datasets' (/home/u/proj/datasets/__init__.py)
"""
INSTALLED = SHADOW.replace("/home/u/proj/datasets/", "/venv/lib/python3.11/site-packages/datasets/")
EDITABLE = "Obtaining file:///home/u/proj\nSuccessfully installed datasets-0.0.0\n" + SHADOW


def _rules(tmp_path, text):
    import json

    (tmp_path / "x.log").write_text(text)
    out = run_cli("triage", "--format", "json", str(tmp_path / "x.log"))
    return {f["rule"]: f["severity"] for f in json.loads(out.stdout)["findings"]}


def test_a_folder_outside_site_packages_named_like_datasets_is_tri036(tmp_path):
    assert _rules(tmp_path, SHADOW).get("TRI036") == "error"


def test_the_installed_package_lacking_the_name_is_not_tri036(tmp_path):
    assert "TRI036" not in _rules(tmp_path, INSTALLED)


def test_an_editable_install_in_the_log_is_quiet(tmp_path):
    assert "TRI036" not in _rules(tmp_path, EDITABLE)


NOT_A_VERSION = """Traceback (most recent call last):
  File "/root/proj/scripts/train_grpo.py", line 40, in <module>
    from trl import GRPOConfig, GRPOTrainer
  File "/root/.venv/lib/python3.13/site-packages/trl/generation/__init__.py", line 22, in <module>
    if is_vllm_available():
  File "/root/.venv/lib/python3.13/site-packages/trl/import_utils.py", line 106, in is_vllm_available
    _vllm_base_version = Version(Version(_vllm_version).base_version)
  File "/root/.venv/lib/python3.13/site-packages/packaging/version.py", line 202, in __init__
    raise InvalidVersion(f"Invalid version: {version!r}")
packaging.version.InvalidVersion: Invalid version: 'N/A'
"""


def test_trls_availability_check_reading_na_is_tri036(tmp_path):
    """Set 14's thread (Maanav-s/small-model-finetuning cafccfb): src/vllm/ taken for vLLM."""
    assert _rules(tmp_path, NOT_A_VERSION).get("TRI036") == "error"


def test_a_later_exception_showing_the_folder_names_it(tmp_path):
    """OpenRLHF#796 (dev log heldout-2026-11-28g/logs2/006): the circular import first, then
    `cannot import name 'interleave_datasets' from 'datasets'` with a frame in its datasets/."""
    text = (
        'datasets/process_reward_dataset.py", line 8, in <module>\n'
        "    from openrlhf.utils.utils import convert_token_to_id\n"
        "ImportError: cannot import name 'convert_token_to_id' from partially initialized module "
        "'openrlhf.utils.utils' (most likely due to a circular import) (OpenRLHF/openrlhf/utils/utils.py)\n"
        'OpenRLHF/openrlhf/utils/utils.py", line 3, in <module>\n'
        "    from datasets import interleave_datasets, load_dataset, load_from_disk\n"
        "ImportError: cannot import name 'interleave_datasets' from 'datasets'\n"
    )
    assert _rules(tmp_path, text).get("TRI036") == "error"


def test_an_unknown_location_import_is_a_namespace_folder(tmp_path):
    text = SHADOW.replace("(/home/u/proj/datasets/__init__.py)", "(unknown location)")
    assert _rules(tmp_path, text).get("TRI036") == "error"


NO_VERSION = """Traceback (most recent call last):
  File "train.py", line 19, in <module>
    from mydataset import load_data
  File "/content/drive/My Drive/mrc4ner/mydataset.py", line 5, in <module>
    from transformers import BertTokenizer
  File "/usr/local/lib/python3.6/dist-packages/transformers/file_utils.py", line 72, in <module>
    logger.debug(f"Succesfully imported datasets version {datasets.__version__}")
AttributeError: module 'datasets' has no attribute '__version__'
"""


def test_a_stack_package_without_its_version_is_a_folder_in_its_place(tmp_path):
    """transformers#7430 (a datasets/ folder in the working directory; held out by review rv16b):
    no frame shows the folder, but every datasets release sets __version__ (was TRI009 drift)."""
    got = _rules(tmp_path, NO_VERSION)
    assert got.get("TRI036") == "error" and "TRI009" not in got


def test_a_package_not_known_to_set_a_version_is_not_tri036(tmp_path):
    text = NO_VERSION.replace("'datasets'", "'liger_kernel'").replace("datasets.", "liger_kernel.")
    assert "TRI036" not in _rules(tmp_path, text)


SELF_IMPORT = (
    'Traceback (most recent call last):\n  File "/Users/u/Desktop/trankit.py", line 1, in <module>\n'
    '    from trankit import Pipeline\n  File "/Users/u/Desktop/trankit.py", line 1, in <module>\n'
    "    from trankit import Pipeline\nImportError: cannot import name 'Pipeline' from partially "
    "initialized module 'trankit' (most likely due to a circular import) (/Users/u/Desktop/trankit.py)\n"
)


def test_a_script_named_like_the_package_it_imports_is_tri036_for_any_package(tmp_path):
    """trankit#44 (held out by review rv16b): the script trankit.py imports trankit, i.e. itself."""
    assert _rules(tmp_path, SELF_IMPORT).get("TRI036") == "error"
    assert _rules(tmp_path, SELF_IMPORT.replace("trankit", "trl")).get("TRI036") == "error"


def test_a_circular_import_inside_a_package_of_the_users_is_not_tri036(tmp_path):
    """TrTr#25: toolkit/utils/__init__.py's `from . import region`: a circular import, no shadow."""
    text = SELF_IMPORT.replace("from trankit import Pipeline", "from . import region").replace(
        "'Pipeline' from partially initialized module 'trankit'",
        "'region' from partially initialized module 'trankit'",
    )
    assert "TRI036" not in _rules(tmp_path, text)


def test_another_projects_editable_install_does_not_silence_it(tmp_path):
    """open-r1's own `pip install -e .` in the log says nothing of a datasets/ folder."""
    other = "Obtaining file:///root/open-r1\nSuccessfully installed open-r1-0.1.0.dev0\n" + SHADOW
    assert _rules(tmp_path, other).get("TRI036") == "error"
    own = "Obtaining file:///root/datasets\n  Building editable for datasets (pyproject.toml)\n" + SHADOW
    assert "TRI036" not in _rules(tmp_path, own)


def test_an_elided_path_tells_nothing_of_where_the_package_lies(tmp_path):
    """xorbitsai/inference PR 5260 pasted `(.../transformers/__init__.py)`: the poster's cut, not
    a folder of their code; the drift answer (peft >= 0.18.0) is the right one, not TRI036."""
    text = (
        "ImportError: Failed to import module 'sentence-transformers': cannot import name\n"
        "'HybridCache' from 'transformers' (.../transformers/__init__.py)\n"
    )
    found = _rules(tmp_path, text)
    assert "TRI036" not in found and found.get("TRI009") == "error"
    assert _rules(tmp_path, SHADOW).get("TRI036") == "error"  # a path shown whole still is
