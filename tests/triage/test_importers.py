# ruff: noqa: E501 - log lines are quoted as programs print them
"""A failed ``from B import N`` answered in the importer's terms (TRI009, envdoctor/triage/importers.py):
the importer index (rules/knowledge/importers.json.gz from scripts/derive_importer_index.py) says
which stack packages' releases import N from B. Each case fires on its shape and stays quiet on the
near-miss; the four held-out logs of set 17 it was built for are regression tests."""

from __future__ import annotations

import gzip
import shutil
from pathlib import Path

import pytest

from envdoctor.findings import Finding, Severity
from envdoctor.knowledge.importers import importers
from tests.triage.helpers import findings, scan_bytes, script
from tests.triage.test_triage_fix_history import _commit, _git

ROOT = Path(__file__).resolve().parents[2]
SET17 = ROOT / "docs" / "validation" / "heldout-2026-11-29i"


def _drift(text: str) -> Finding:
    found = [f for f in findings(scan_bytes(text)) if f.rule == "TRI009"]
    assert found, [f.rule for f in findings(scan_bytes(text))]
    return found[0]


def _log(path: str) -> str:
    return (SET17 / path).read_text()


# -- the index ----------------------------------------------------------------------------------


def test_index_holds_the_releases_that_import_a_name() -> None:
    peft = importers("transformers", "transformers", "HybridCache", only="peft")[0]
    assert peft.stopped == "0.18.0" and peft.releases[peft.last] == "0.17.1"
    assert peft.has("0.17.1") and not peft.has("0.18.0")
    trl = importers("transformers", "transformers.utils", "is_rich_available", only="trl")[0]
    assert trl.stopped is None and trl.releases[trl.first] == "0.18.0"
    assert not importers("transformers", "transformers", "NoSuchName")


V1 = """
from transformers import AutoModel, HybridCache
from peft import LoraConfig as LC
from .utils import helper
if is_peft_available():
    from peft import PeftModel
try:
    from deepspeed import zero
except ImportError:
    zero = None
if TYPE_CHECKING:
    from transformers import Typed

def build():
    from transformers.integrations import deepspeed_config
    return deepspeed_config
"""
V2 = V1.replace(
    "from transformers import AutoModel, HybridCache",
    "from transformers import AutoModel\n\ndef cache():\n    if transformers_lt_4_56:\n        from transformers import HybridCache\n",
)


def test_imports_reads_kinds() -> None:
    s = script("derive_importer_index")
    providers = {"transformers": "transformers", "peft": "peft", "deepspeed": "deepspeed", "pkg": "pkg"}
    rows = set(s.imports(V1, "pkg", providers))
    assert ("transformers", "transformers", "HybridCache", "u") in rows
    assert ("peft", "peft", "LoraConfig", "u") in rows  # the real name, not its alias
    assert ("peft", "peft", "PeftModel", "g") in rows and ("deepspeed", "deepspeed", "zero", "g") in rows
    assert ("transformers", "transformers.integrations", "deepspeed_config", "l") in rows
    assert not any(r[2] in ("Typed", "helper") for r in rows)
    assert ("transformers", "transformers", "HybridCache", "g") in set(s.imports(V2, "pkg", providers))


@pytest.mark.skipif(shutil.which("git") is None, reason="needs git")
def test_derive_on_a_repository_of_two_releases(tmp_path: Path) -> None:
    s = script("derive_importer_index")
    r = tmp_path / "pkg"
    r.mkdir()
    _git(r, "init", "-q", "-b", "main")
    _commit(r, {"pkg/__init__.py": "", "pkg/model.py": V1}, "Initial")
    _git(r, "tag", "v0.1.0")
    _commit(r, {"pkg/model.py": V2}, "Guard HybridCache")
    _git(r, "tag", "v0.2.0")
    providers = {"transformers": "transformers", "peft": "peft", "deepspeed": "deepspeed"}
    data = s.derive(r / ".git", "pkg", "pkg", since="2020-01-01", providers=providers)
    assert data["releases"] == ["0.1.0", "0.2.0"]
    rows = {(d, m, n, k): ranges for d, m, n, k, ranges in data["imports"]}
    assert rows[("transformers", "transformers", "HybridCache", "u")] == [[0, 0]]
    assert rows[("transformers", "transformers", "HybridCache", "g")] == [[1, 1]]
    assert rows[("transformers", "transformers", "AutoModel", "u")] == [[0, 1]]
    # stored only where B lacks it in some release, or the importer's own imports changed
    kept = s.derive(
        r / ".git",
        "pkg",
        "pkg",
        since="2020-01-01",
        providers=providers,
        keep=lambda d, m, n: n == "LoraConfig",
        known=lambda d, m, n: True,
    )
    names = {n for _, _, n, _, _ in kept["imports"]}
    assert names == {"LoraConfig", "HybridCache"}  # AutoModel: every release imports it, B has it
    a, b = tmp_path / "a.json.gz", tmp_path / "b.json.gz"
    s.write({"schema": s.SCHEMA, "packages": {"pkg": kept}}, a)
    s.write({"schema": s.SCHEMA, "packages": {"pkg": kept}}, b)
    assert a.read_bytes() == b.read_bytes() and gzip.decompress(a.read_bytes()).startswith(b"{")


# -- (b) no frame names the importer --------------------------------------------------------------


def test_message_alone_names_the_importers_and_their_upgrades() -> None:
    """heldout-2026-11-29i/logs17a/005: settled peft >= 0.18 with transformers 5, not the pin."""
    f = _drift(_log("logs17a/logs/005.log"))
    assert f.severity is Severity.ERROR
    assert "if it is peft: pip install --upgrade 'peft>=0.18.0'" in f.fix
    assert "if it is unsloth: pip install --upgrade 'unsloth>=" in f.fix
    assert f.fix.index("peft>=0.18.0") < f.fix.index("transformers<5.0.0")
    assert "if it is your own code or another package: pip install 'transformers<5.0.0'" in f.fix
    assert "peft 0.16.0 to 0.17.1 import HybridCache" in f.message


def test_message_alone_keeps_the_pin_for_the_users_code() -> None:
    """heldout-2026-11-29c/logs11b/001: a repository's own import of vLLM's moved name; verl's old
    releases import it too: verl's upgrade is that candidate's answer, the pin the code's."""
    f = _drift("ImportError: cannot import name 'FlexibleArgumentParser' from 'vllm.utils'\n")
    assert "if it is verl: pip install --upgrade 'verl>=" in f.fix
    assert "if it is your own code or another package: pip install 'vllm<" in f.fix


def test_candidates_that_still_import_it_leave_the_pin_alone() -> None:
    """heldout-2026-11-28e/logs3/004: llamafactory imports it in every release to the newest
    read: the pin of TRL answers whoever imports it, no importer named."""
    f = _drift("ImportError: cannot import name 'logprobs_from_logits' from 'trl.core'\n")
    assert f.fix.startswith("pip install 'trl<0.14.0'") and "llamafactory" not in f.fix + f.message


def test_a_framework_pinning_a_few_releases_is_not_the_importer() -> None:
    """heldout-2026-11-29g/logs15a/002: openrlhf pins some transformers releases exactly; it is
    no owner of transformers' release line (torch is of triton's)."""
    f = _drift(
        "ImportError: cannot import name 'is_torch_greater_or_equal_than_1_13' from 'transformers.pytorch_utils'\n"
    )
    assert "openrlhf" not in f.fix + f.message


def test_a_package_many_pin_has_no_owner() -> None:
    """heldout-2026-11-29g/logs15a/017: xformers pins torch release by release, as vLLM and
    SGLang do: torch is nobody's dependency alone; torch's own range answers."""
    f = _drift(
        "ImportError: cannot import name 'return_and_correct_aliasing' from 'torch.utils._python_dispatch'\n"
    )
    assert f.fix.startswith("pip install 'torch>=2.2.0'") and "xformers" not in f.fix


def test_a_shown_release_of_one_importer_picks_it() -> None:
    f = _drift("peft==0.17.1\nImportError: cannot import name 'HybridCache' from 'transformers'\n")
    assert f.fix.startswith("pip install --upgrade 'peft>=0.18.0'") and "unsloth" not in f.fix


def test_exact_pinner_answers_for_an_exporter_no_indexed_package_imports() -> None:
    """heldout-2026-11-29i/logs17a/004: torch pins triton; a second triton does not fit it."""
    f = _drift(_log("logs17a/logs/004.log"))
    assert f.fix.startswith("pip install the triton release your torch requires")
    assert "triton>=2.3.0,<3.2.0" in f.fix  # the pin of B stays the other way


def test_user_code_import_keeps_the_pin() -> None:
    text = """\
Traceback (most recent call last):
  File "/home/u/train.py", line 3, in <module>
    from transformers import HybridCache
ImportError: cannot import name 'HybridCache' from 'transformers' (/opt/env/lib/python3.11/site-packages/transformers/__init__.py)
"""
    f = _drift(text)
    assert "--upgrade 'peft" not in f.fix and "importer index" not in f.message


# -- (a) the importer's frame is shown ------------------------------------------------------------

PEFT_FRAME = """\
Traceback (most recent call last):
  File "/home/u/train.py", line 3, in <module>
    from peft import LoraConfig
  File "/opt/env/lib/python3.11/site-packages/peft/__init__.py", line 17, in <module>
    from .auto import AutoPeftModel
  File "/opt/env/lib/python3.11/site-packages/peft/peft_model.py", line 40, in <module>
    from transformers import {names}
ImportError: cannot import name '{name}' from 'transformers' (/opt/env/lib/python3.11/site-packages/transformers/__init__.py)
"""


def test_importer_frame_whose_later_releases_stopped() -> None:
    f = _drift(PEFT_FRAME.format(names="Cache, HybridCache", name="HybridCache"))
    assert f.severity is Severity.ERROR
    assert f.fix.startswith("pip install --upgrade 'peft>=0.18.0'")
    assert "or pip install 'transformers<5.0.0'" in f.fix


def test_importer_frame_that_every_later_release_shares() -> None:
    """heldout-2026-11-29i/logs17c/008: peft 0.15.2 against a transformers==4.41.2 pin."""
    f = _drift(_log("logs17c/logs/008.log"))
    assert f.severity is Severity.ERROR
    assert f.fix.startswith("pip install 'transformers>=4.46.1'") and "drop the pin" in f.fix
    assert "pip install 'peft<0.14.0'" in f.fix
    assert "every peft release since 0.14.0" in f.message


def test_importer_the_index_does_not_read_keeps_the_pair_answer() -> None:
    text = PEFT_FRAME.replace("peft", "somepkg").format(names="HybridCache", name="HybridCache")
    found = [f for f in findings(scan_bytes(text)) if f.rule == "TRI009"]
    assert all("importer index" not in f.message for f in found)


# -- (c) the importer's requirement covers the name -----------------------------------------------


def test_requirement_covers_the_name_in_a_notebook() -> None:
    """heldout-2026-11-29i/logs17c/006: trl >= 0.18 requires transformers >= 4.50, which has
    is_rich_available: not 'transformers>=4.50.0' as an error, the module in memory."""
    f = _drift(_log("logs17c/logs/006.log"))
    assert f.severity is Severity.WARNING
    assert "restart the runtime" in f.fix and "pip show transformers" in f.fix
    assert "requires transformers>=4.50.0" in f.message


def test_requirement_covers_the_name_outside_a_notebook() -> None:
    text = """\
Traceback (most recent call last):
  File "/home/u/train.py", line 2, in <module>
    from trl import GRPOTrainer
  File "/opt/env/lib/python3.12/site-packages/trl/trainer/grpo_trainer.py", line 47, in <module>
    from transformers.utils import is_datasets_available, is_rich_available
ImportError: cannot import name 'is_rich_available' from 'transformers.utils' (/opt/env/lib/python3.12/site-packages/transformers/utils/__init__.py)
"""
    f = _drift(text)
    assert f.severity is Severity.WARNING
    assert "restart the runtime" not in f.fix and "an import order" in f.fix


def test_shown_old_release_is_drift_not_memory() -> None:
    text = "transformers==4.46.3\n" + _log("logs17c/logs/006.log")
    f = _drift(text)
    assert "restart the runtime" not in f.fix


# -- the log's versions against the importer's upgrade (review rv19a) ----------------------------


def test_a_provider_older_than_the_name_is_not_the_importers_upgrade() -> None:
    """transformers 4.40 predates HybridCache: peft's later releases stopped importing it because
    transformers 5 removed it, which does not help a transformers too old to have it."""
    text = "peft==0.17.1\ntransformers==4.40.0\n" + PEFT_FRAME.format(
        names="Cache, HybridCache", name="HybridCache"
    )
    f = _drift(text)
    assert "--upgrade 'peft" not in f.fix
    assert f.fix.startswith("pip install 'transformers>=") and "upgrading peft does not help" in f.fix


def test_a_shown_importer_past_its_stop_is_not_told_to_upgrade() -> None:
    """peft 0.21.0 is newer than the index read and past 0.18.0: no 'upgrade peft>=0.18.0'."""
    text = "peft==0.21.0\ntransformers==5.0.0\n" + PEFT_FRAME.format(
        names="Cache, HybridCache", name="HybridCache"
    )
    assert "--upgrade 'peft>=0.18.0'" not in _drift(text).fix


def test_message_alone_with_an_old_provider_names_no_importer() -> None:
    f = _drift("transformers==4.40.0\nImportError: cannot import name 'HybridCache' from 'transformers'\n")
    assert "if it is peft" not in f.fix
