"""API drift answered with the release that changed the raising line (envdoctor/triage/linehist.py,
TRI014; rules/knowledge/linehist/ from scripts/derive_line_history.py).

The derive script on a small git repository made here (offline): a commit not titled "fix" that
removed a line and the function's last unguarded use of a name is kept; a refactor that kept the
name, a name moved into a helper of the same change and a change after the newest release are not.
Triage against the history derived from it (severity by certainty, quiet where the version has the
change or the message names another name), and against the shipped history on a held-out log."""

from __future__ import annotations

import shutil
import subprocess
import textwrap
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pytest

from envdoctor.findings import Severity
from envdoctor.knowledge import line_history
from tests.triage.helpers import findings, scan_bytes, script

ROOT = Path(__file__).resolve().parents[2]
HELDOUT = ROOT / "docs" / "validation" / "heldout-2026-11-30c" / "logs20a" / "logs"
_READ, _PACKAGES = line_history.line_history, line_history.packages

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="needs git")


@pytest.fixture(scope="module")
def derive() -> ModuleType:
    return script("derive_line_history")


def _git(repo: Path, *args: str) -> str:
    env = {
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@example.com",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@example.com",
        "GIT_AUTHOR_DATE": "2025-03-01T00:00:00",
        "GIT_COMMITTER_DATE": "2025-03-01T00:00:00",
        "HOME": str(repo),
        "PATH": "/usr/bin:/bin:/usr/local/bin",
    }
    out = subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True, env=env, check=True)
    return out.stdout


def _commit(repo: Path, files: dict[str, str], message: str) -> None:
    for path, text in files.items():
        p = repo / path
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(textwrap.dedent(text))
    _git(repo, "add", "-A")
    _git(repo, "commit", "-q", "-m", message)


OLD = """
    def to_optimizer(opt):
        is_adaw = isinstance(opt, (AdamW, AdamW32bit)) and opt.optim_bits_value == 32
        return is_adaw


    def vocab(x):
        return x.model_config.vocab_size_value


    def sample(llm, prompts):
        return llm.generate_texts(
            prompts,
            use_tqdm_flag=False,
        )


    def reader(x):
        return x.loader_config.shard_count_value
"""
GUARDED = OLD.replace(
    "        is_adaw = isinstance(opt, (AdamW, AdamW32bit)) and opt.optim_bits_value == 32\n",
    "        try:\n"
    "            is_adaw = opt.optim_bits_value == 32\n"
    "        except AttributeError:\n"
    "            is_adaw = opt.args.optim_bits_value == 32\n",
)
REFACTORED = GUARDED.replace(
    "        return x.model_config.vocab_size_value\n",
    "        value = x.model_config.vocab_size_value\n        return value\n",
)
MOVED = REFACTORED.replace(
    "        return x.loader_config.shard_count_value\n",
    "        return _shards(x)\n\n\n    def _shards(x):\n        return x.loader_config.shard_count_value\n",
)
DROPPED_KW = MOVED.replace("            use_tqdm_flag=False,\n", "")
AFTER = DROPPED_KW.replace("return value\n", "return int(value)\n")

OLD_LINE = "is_adaw = isinstance(opt, (AdamW, AdamW32bit)) and opt.optim_bits_value == 32"
PATH = "src/accelerate/utils/drift.py"


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """accelerate with an attribute read guarded (no "fix" in the subject), a refactor that kept a
    name, a name moved into a new helper, a keyword dropped (all in v0.2.0), a change after it."""
    r = tmp_path_factory.mktemp("repo")
    _git(r, "init", "-q", "-b", "main")
    _commit(r, {"src/accelerate/__init__.py": "", PATH: OLD}, "Initial import")
    _git(r, "tag", "v0.1.0")
    _commit(r, {PATH: GUARDED}, "latest bnb no longer has optim_args attribute on optimizer (#3311)")
    _commit(r, {PATH: REFACTORED}, "Refactor vocab (#3312)")
    _commit(r, {PATH: MOVED}, "Split the reader (#3313)")
    _commit(r, {PATH: DROPPED_KW}, "Drop use_tqdm_flag (#3314)")
    _git(r, "tag", "v0.2.0")
    _commit(r, {PATH: AFTER}, "Cast the vocab (#3315)")
    return r


@pytest.fixture(scope="module")
def history(derive: ModuleType, repo: Path) -> dict:
    return derive.derive(
        repo / ".git",
        "accelerate",
        ("src/accelerate",),
        r"^v(\d+\.\d+\.\d+)$",
        "2020-01-01",
        "huggingface/accelerate",
    )


def test_a_change_not_titled_fix_that_dropped_a_name_is_kept(history: dict, derive: ModuleType) -> None:
    assert history["schema"] == "envdoctor.linehist/1" and history["releases"] == ["0.1.0", "0.2.0"]
    subjects = {c[3]: c[2] for c in history["commits"]}
    # the guard and the dropped keyword; not the refactor, the moved name, nor the unreleased change
    assert subjects == {
        "latest bnb no longer has optim_args attribute on optimizer (#3311)": "0.2.0",
        "Drop use_tqdm_flag (#3314)": "0.2.0",
    }
    rows = history["functions"]["utils/drift.py"]
    assert set(rows) == {"to_optimizer", "sample"}
    (row,) = rows["to_optimizer"]
    assert row[1] == derive.fh.line_hash(OLD_LINE) and "a:optim_bits_value" in row[2:]
    # the keyword's own line, and the first line of its call (what a traceback prints), with a ~
    lines = {r[1]: r[2:] for r in rows["sample"]}
    assert lines[derive.fh.line_hash("use_tqdm_flag=False,")] == ["k:use_tqdm_flag"]
    assert lines["~" + derive.fh.line_hash("return llm.generate_texts(")] == ["k:use_tqdm_flag"]


def test_refs_tell_a_guarded_read_and_its_fallback(derive: ModuleType) -> None:
    import ast

    tree = ast.parse(textwrap.dedent(GUARDED))
    found = derive.refs(derive.scopes(tree)["to_optimizer"])
    assert {(k, n, g) for k, n, _, _, g in found if n == "optim_bits_value"} == {
        ("a", "optim_bits_value", True)
    }
    wrapped = (
        "def f(o):\n    try:\n        return o.some_attr\n    except AttributeError:\n        return None\n"
    )
    found = derive.refs(derive.scopes(ast.parse(wrapped))["f"])
    assert [g for k, n, _, _, g in found if n == "some_attr"] == [True]
    reraise = "def f(o):\n    try:\n        return o.some_attr\n    except AttributeError:\n        raise\n"
    found = derive.refs(derive.scopes(ast.parse(reraise))["f"])
    assert [g for k, n, _, _, g in found if n == "some_attr"] == [False]  # a handler that re-raises


@pytest.fixture
def shipped(derive: ModuleType, history: dict, tmp_path: Path, monkeypatch) -> Iterator[Path]:
    folder = tmp_path / "linehist"
    derive.fh.write(history, folder / "accelerate.json.gz")
    monkeypatch.setattr(line_history, "_dir", lambda: folder)
    _READ.cache_clear()
    _PACKAGES.cache_clear()
    yield folder
    _READ.cache_clear()
    _PACKAGES.cache_clear()


def _log(code: str, message: str, function: str = "to_optimizer", version: str | None = None) -> str:
    head = f"accelerate=={version}\n" if version else ""
    return head + textwrap.dedent(
        f"""\
        Traceback (most recent call last):
          File "/home/u/train.py", line 40, in <module>
            trainer.train()
          File "/usr/lib/python3.11/site-packages/accelerate/utils/drift.py", line 3, in {function}
            {code}
        {message}
        """
    )


ATTR = "AttributeError: 'AdamW' object has no attribute 'optim_bits_value'"
KW = "TypeError: generate_texts() got an unexpected keyword argument 'use_tqdm_flag'"


def _tri014(text: str) -> list:
    return [f for f in findings(scan_bytes(text)) if f.rule == "TRI014"]


def test_the_removed_line_and_the_dropped_name_is_an_error(shipped: Path) -> None:
    (f,) = _tri014(_log(OLD_LINE, ATTR))
    assert f.severity == Severity.ERROR
    assert f.fix.startswith("pip install 'accelerate>=0.2.0'")
    assert "huggingface/accelerate#3311" in f.message and "removed the very line" in f.message
    assert f.evidence["name"] == "optim_bits_value" and f.evidence["function"] == "to_optimizer"
    (f,) = _tri014(_log(OLD_LINE, ATTR, version="0.1.0"))
    assert f.severity == Severity.ERROR and "accelerate 0.1.0, older than 0.2.0" in f.message


def test_a_changed_statement_is_a_warning_without_a_version_and_an_error_with_an_older_one(
    shipped: Path,
) -> None:
    (f,) = _tri014(_log("return llm.generate_texts(", KW, "sample"))
    assert f.severity == Severity.WARNING and "pip show accelerate" in f.message
    (f,) = _tri014(_log("return llm.generate_texts(", KW, "sample", "0.1.0"))
    assert f.severity == Severity.ERROR


def test_quiet_where_the_version_has_the_change_the_name_stayed_or_the_message_is_another(
    shipped: Path,
) -> None:
    assert _tri014(_log(OLD_LINE, ATTR, version="0.2.0")) == []  # the release has the change
    assert _tri014(_log(OLD_LINE, ATTR, version="0.3.1")) == []
    # the refactor kept the name: its removed line is no answer to a failure about it
    vocab = "AttributeError: 'Config' object has no attribute 'vocab_size_value'"
    assert _tri014(_log("return x.model_config.vocab_size_value", vocab, "vocab")) == []
    # the name moved into a helper of the same change
    shards = "AttributeError: 'Config' object has no attribute 'shard_count_value'"
    assert _tri014(_log("return x.loader_config.shard_count_value", shards, "reader")) == []
    # the removed line, but the message names another attribute; not a drift-shaped message
    other = "AttributeError: 'AdamW' object has no attribute 'param_groups'"
    assert _tri014(_log(OLD_LINE, other)) == []
    assert _tri014(_log(OLD_LINE, "ValueError: optim_bits_value must be 32")) == []
    # a line no change removed
    assert _tri014(_log("return is_adaw", ATTR)) == []


def test_the_history_is_read_only_for_a_drift_shaped_exception_with_frames(
    shipped: Path, monkeypatch
) -> None:
    from envdoctor.triage import linehist

    def refuse(package: str) -> None:
        raise AssertionError(f"read the line history of {package}")

    monkeypatch.setattr(linehist, "line_history", refuse)
    findings(scan_bytes(f"{ATTR}\n"))  # no frames
    findings(scan_bytes(_log(OLD_LINE, "ValueError: something odd")))
    findings(scan_bytes("step 1 loss 0.2\nstep 2 loss 0.1\n"))


def test_drift_names() -> None:
    from envdoctor.triage.linehist import drift_names
    from envdoctor.triage.traceback import Traceback

    def names(exc: str, msg: str) -> tuple[str, ...]:
        return drift_names(Traceback(exc_type=exc, message=msg))

    assert names("AttributeError", "module 'torch' has no attribute 'compiler'") == ("a:compiler",)
    assert names("ImportError", "cannot import name 'X' from 'transformers'") == ("i:X",)
    assert names("ModuleNotFoundError", "No module named 'vllm.lora'") == ("m:vllm.lora",)
    assert names("NameError", "name 'nullcontext' is not defined") == ("n:nullcontext",)
    assert names("TypeError", "f() got an unexpected keyword argument 'k'") == ("k:k",)
    assert names("TypeError", "Foo.__init__() missing 1 required positional argument: 'a'") == (
        "n:Foo",
        "a:Foo",
    )
    assert names("TypeError", "'NoneType' object is not iterable") == ()
    assert names("AttributeError", "'NoneType' object has no attribute 'shape'") == ()  # a value's bug
    assert names("ValueError", "has no attribute 'x'") == ()


def test_the_held_out_accelerate_log_names_the_release_without_the_line() -> None:
    """Set 20's a005: accelerate 1.2's map_pytorch_optim_to_deepspeed reads a bitsandbytes
    optimizer's ``optim_bits``; huggingface/accelerate#3311 (1.3.0) guarded it."""
    (f,) = _tri014((HELDOUT / "005.log").read_text())
    assert f.severity == Severity.ERROR
    assert f.fix.startswith("pip install 'accelerate>=1.3.0'") and "accelerate#3311" in f.message
