"""A release bug behind a generic message, told by the fix history of the function that raised
(envdoctor/triage/fixhist.py, TRI014; rules/knowledge/fixes/ from scripts/derive_fix_history.py).

Three kinds of tests: the derive script on small git repositories made here (offline: tags, a fix
cherry-picked into a patch release, a date-versioned package without tags); triage against the
history derived from such a repository (severity by certainty, quiet where a version already has
the fix); and triage against the shipped history on real logs of the development sets (where it
fires, and healthy logs where it stays quiet)."""

from __future__ import annotations

import gzip
import importlib.util
import json
import shutil
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pytest

from envdoctor.findings import Severity
from envdoctor.knowledge import fix_history
from tests.triage.helpers import findings, scan_bytes

ROOT = Path(__file__).resolve().parents[2]
DEV = ROOT / "docs" / "validation"
_READ, _PACKAGES = fix_history.fix_history, fix_history.packages  # the cached readers

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="needs git")


@pytest.fixture(scope="module")
def derive() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "derive_fix_history", ROOT / "scripts" / "derive_fix_history.py"
    )
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    sys.modules["derive_fix_history"] = mod
    spec.loader.exec_module(mod)
    return mod


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


BUGGY = """
    class GRPOTrainer:
        def _generate(self, prompts):
            outputs = self.llm.generate(prompts, sampling_params=self.sampling_params)
            return [o for o in outputs]

        def log(self, logs):
            print(logs)
"""
FIXED = BUGGY.replace(
    "outputs = self.llm.generate(prompts, sampling_params=self.sampling_params)",
    "outputs = self.llm.generate(prompts, sampling_params=self.sampling_params, use_tqdm=False)",
)
FEATURE = FIXED.replace("print(logs)", "print(logs, flush=True)")


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """trl/ with a bug in GRPOTrainer._generate (v0.1.0), fixed on main (#12) and cherry-picked into
    v0.1.1; a feature commit (not a fix) in v0.2.0."""
    r = tmp_path_factory.mktemp("repo")
    _git(r, "init", "-q", "-b", "main")
    _commit(r, {"trl/__init__.py": "", "trl/trainer/grpo_trainer.py": BUGGY}, "Initial import")
    _git(r, "tag", "v0.1.0")
    _commit(
        r,
        {"trl/trainer/grpo_trainer.py": FIXED},
        "Fix 'NoneType' object is not iterable in colocate generation (#12)",
    )
    _commit(r, {"trl/trainer/grpo_trainer.py": FEATURE}, "Flush the logs (#13)")
    _git(r, "tag", "v0.2.0")
    _git(r, "checkout", "-q", "-b", "release-0.1", "v0.1.0")
    _commit(
        r,
        {"trl/trainer/grpo_trainer.py": FIXED},
        "Fix 'NoneType' object is not iterable in colocate generation (#12)",
    )
    _git(r, "tag", "v0.1.1")
    _git(r, "checkout", "-q", "main")
    return r


@pytest.fixture(scope="module")
def history(derive: ModuleType, repo: Path) -> dict:
    return derive.derive(
        repo / ".git", "trl", ("trl",), r"^v(\d+\.\d+\.\d+)$", "2020-01-01", "huggingface/trl"
    )


def test_a_fix_is_recorded_with_its_function_and_first_release(history: dict, derive: ModuleType) -> None:
    assert history["schema"] == "envdoctor.fixes/1" and history["releases"] == ["0.1.0", "0.1.1", "0.2.0"]
    (fix,) = history["fixes"]  # the feature commit is no fix; the initial import neither
    sha, _date, release, subject, number = fix
    assert release == "0.1.1"  # cherry-picked into the patch release under the same PR number
    assert number == "12" and subject.startswith("Fix 'NoneType'")
    rows = history["functions"]["trainer/grpo_trainer.py"]
    assert list(rows) == ["GRPOTrainer._generate"]  # the changed method, not the class or log()
    index, *hashes = rows["GRPOTrainer._generate"][0]
    assert index == 0
    old = "outputs = self.llm.generate(prompts, sampling_params=self.sampling_params)"
    assert derive.line_hash(old) in hashes


def test_a_date_versioned_package_takes_the_next_version_bump(derive: ModuleType, tmp_path: Path) -> None:
    r = tmp_path / "zoo"
    r.mkdir()
    _git(r, "init", "-q", "-b", "main")
    init = '__version__ = "{}"\n'
    code = (
        "def backward(ctx, *args):\n"
        "    outputs = ctx.run_function(*detached_inputs_before_fix)\n"
        "    return outputs\n"
    )
    _commit(
        r, {"unsloth_zoo/__init__.py": init.format("2025.4.1"), "unsloth_zoo/gc.py": code}, "Release 2025.4.1"
    )
    _commit(r, {"unsloth_zoo/gc.py": code.replace("_before_fix", "")}, "Fix inference tensors in backward")
    _commit(r, {"unsloth_zoo/__init__.py": init.format("2025.4.2")}, "Update __init__.py")
    _commit(r, {"unsloth_zoo/gc.py": code.replace("_before_fix", "_x")}, "Bug fixes")  # not released yet
    data = derive.derive(r / ".git", "unsloth-zoo", ("unsloth_zoo",), "", "2020-01-01")
    assert data["releases"] == ["2025.4.1", "2025.4.2"]
    releases = {f[3]: f[2] for f in data["fixes"]}
    assert releases == {"Fix inference tensors in backward": "2025.4.2", "Bug fixes": ""}
    assert list(data["functions"]["gc.py"]) == ["backward"]


def test_a_formatters_pass_is_no_fix_and_a_rewrapped_line_no_removed_line(
    derive: ModuleType, tmp_path: Path
) -> None:
    r = tmp_path / "fmt"
    r.mkdir()
    _git(r, "init", "-q", "-b", "main")
    one = "def f(a, b):\n    return compute_something(a, b, scale=2.0, shift=1.0)\n"
    wrapped = (
        "def f(a, b):\n    return compute_something(\n"
        + "".join(f"        {x},\n" for x in ("a", "b", "scale=2.0", "shift=1.0"))
        + "    )\n"
    )
    _commit(r, {"verl/m.py": one}, "Initial")
    _commit(r, {"verl/m.py": wrapped}, "Formatting & bug fixes (#6)")  # a trailing comma added
    _commit(r, {"verl/m.py": one}, "[Lint] fix: linting errors in all files (#5)")
    _commit(r, {"verl/m.py": one.replace("shift=1.0", "shift=0.0")}, "Fix the shift (#7)")
    data = derive.derive(r / ".git", "verl", ("verl",), "", "2020-01-01")
    assert [f[3] for f in data["fixes"]] == ["Formatting & bug fixes (#6)", "Fix the shift (#7)"]
    rows = data["functions"]["m.py"]["f"]
    assert rows[0] == [0]  # rewrapped only: no line of it was removed
    assert (
        rows[1][0] == 1
        and derive.line_hash("return compute_something(a, b, scale=2.0, shift=1.0)") in rows[1]
    )


def test_a_line_moved_under_a_new_guard_is_a_removed_line(derive: ModuleType, tmp_path: Path) -> None:
    r = tmp_path / "guard"
    r.mkdir()
    _git(r, "init", "-q", "-b", "main")
    before = "def gen(self, kw):\n    kw.update(self.args.generation_kwargs)\n    return kw\n"
    after = before.replace(
        "    kw.update(", "    if self.args.generation_kwargs is not None:\n        kw.update("
    )
    _commit(r, {"trl/t.py": before}, "Initial")
    _commit(r, {"trl/t.py": after}, "fix grpo generation_kwargs (#3634)")
    data = derive.derive(r / ".git", "trl", ("trl",), "", "2020-01-01")
    (row,) = data["functions"]["t.py"]["gen"]
    assert derive.line_hash("kw.update(self.args.generation_kwargs)") in row[1:]


def test_spans_name_nested_functions_as_python_does(derive: ModuleType) -> None:
    src = "class A:\n    def f(self):\n        def g():\n            return 1\n        return g\n"
    assert derive.spans(src) == [(2, 5, "A.f"), (3, 4, "A.f.<locals>.g")]
    assert derive.touched(derive.spans(src), [(4, 4), (5, 5)]) == {"A.f.<locals>.g": [4], "A.f": [5]}


def test_comments_and_docstrings_are_lines_no_traceback_prints(derive: ModuleType) -> None:
    """An added comment or docstring line is no evidence that a run had the fix (no instruction
    starts on it, no traceback prints it): the derive script keeps no hash of it; a string that is
    code (an argument, a ``# `` inside it) stays."""
    src = (
        '"""Module doc."""\n'  # 1
        "def f(x):\n"  # 2
        '    """What f does,\n'  # 3
        "    over two lines."
        '"""\n'  # 4
        "    # a comment of its own\n"  # 5
        '    y = call("# not a comment", x)  # a trailing comment\n'  # 6
        "    return y\n"  # 7
        "class A:\n"  # 8
        "    '''Class doc.'''\n"  # 9
        "    def g(self):\n"  # 10
        "        return '''not a docstring'''\n"  # 11
    )
    assert derive.unprinted(src) == frozenset({1, 3, 4, 5, 9})
    assert derive.unprinted("def broken(:\n    # still a comment\n") == frozenset({2})


# -- triage against a history derived here -----------------------------------------------------------


@pytest.fixture
def shipped(derive: ModuleType, history: dict, tmp_path: Path, monkeypatch) -> Iterator[Path]:
    folder = tmp_path / "fixes"
    derive.write(history, folder / "trl.json.gz")
    monkeypatch.setattr(fix_history, "_dir", lambda: folder)
    _READ.cache_clear()
    _PACKAGES.cache_clear()
    yield folder
    _READ.cache_clear()
    _PACKAGES.cache_clear()


def _log(
    code: str, version: str | None = None, message: str = "TypeError: 'NoneType' object is not iterable"
) -> str:
    head = f"trl=={version}\n" if version else ""
    return head + textwrap.dedent(
        f"""\
        Traceback (most recent call last):
          File "/home/u/train.py", line 40, in <module>
            trainer.train()
          File "/usr/lib/python3.11/site-packages/trl/trainer/grpo_trainer.py", line 3, in _generate
            {code}
        {message}
        """
    )


OLD_LINE = "outputs = self.llm.generate(prompts, sampling_params=self.sampling_params)"


def _tri014(text: str) -> list:
    return [f for f in findings(scan_bytes(text)) if f.rule == "TRI014"]


def test_an_older_release_shown_and_a_matching_fix_is_an_error(shipped: Path) -> None:
    (f,) = _tri014(_log("return list(outputs)", "0.1.0"))
    assert f.severity == Severity.ERROR
    assert "pip install 'trl==0.1.1'" in f.fix  # the exact pin of the first release with the fix
    assert "huggingface/trl#12" in f.message and "GRPOTrainer._generate" in f.evidence["function"]
    assert "trl 0.1.0" in f.message


def test_the_removed_line_in_the_traceback_is_an_error_without_a_version(shipped: Path) -> None:
    (f,) = _tri014(_log(OLD_LINE, None, "RuntimeError: something odd"))
    assert f.severity == Severity.ERROR and f.evidence["matched"].startswith("it removed the very line")


def test_a_removed_line_that_only_called_another_package_is_not_the_raising_place(shipped: Path) -> None:
    """The exception was raised in vLLM below TRL's line: TRL's frame is a caller, so a TRL fix
    that removed that line (for another reason) is no proof of this failure's cause: a warning
    that says where it was raised, not an error."""
    text = _log(OLD_LINE, None, "RuntimeError: something odd").replace(
        "RuntimeError: something odd",
        '  File "/usr/lib/python3.11/site-packages/vllm/entrypoints/llm.py", line 9, in generate\n'
        "    raise RuntimeError('something odd')\n"
        "RuntimeError: something odd",
    )
    (f,) = _tri014(text)
    assert f.severity == Severity.WARNING and "raised in vllm under trl's call" in f.message


def test_a_removed_line_whose_read_an_attribute_hook_refused_is_the_raising_place(shipped: Path) -> None:
    """torch's ``Module.__getattr__`` raised for TRL's line (envdoctor/triage/raisethrough.py): the
    line that asked is the raise's place, so the fix that removed it is the run's (an error)."""
    text = _log(OLD_LINE, None, "RuntimeError: something odd").replace(
        "RuntimeError: something odd",
        '  File "/usr/lib/python3.11/site-packages/torch/nn/modules/module.py", line 9, in __getattr__\n'
        "    raise AttributeError(\n"
        "AttributeError: 'LLM' object has no attribute 'sampling_params'",
    )
    (f,) = _tri014(text)
    assert f.severity == Severity.ERROR and "raised inside trl" in f.message


def test_a_matching_subject_without_a_version_is_a_warning(shipped: Path) -> None:
    (f,) = _tri014(_log("return list(outputs)"))
    assert f.severity == Severity.WARNING and "pip show trl" in f.message


def test_quiet_where_the_version_has_the_fix_or_nothing_matches(shipped: Path) -> None:
    assert _tri014(_log("return list(outputs)", "0.1.1")) == []  # the patch release has it
    assert _tri014(_log("return list(outputs)", "0.2.0")) == []
    # no version, a line the fix did not touch, a message the fix does not name: too weak
    assert _tri014(_log("return list(outputs)", None, "ValueError: temperature must be positive")) == []
    # a resource failure is not a function's bug
    oom = "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB"
    assert _tri014(_log(OLD_LINE, "0.1.0", oom)) == []


def test_the_history_is_read_only_for_a_traceback_with_frames(shipped: Path, monkeypatch) -> None:
    def refuse(package: str) -> None:
        raise AssertionError(f"read the fix history of {package}")

    # imported before either patch: a first import under the patch would bind ``refuse`` into
    # fixhist for good, and monkeypatch would then "restore" it there for the tests after this
    from envdoctor.triage import fixhist

    monkeypatch.setattr(fix_history, "fix_history", refuse)
    monkeypatch.setattr(fixhist, "fix_history", refuse)
    findings(scan_bytes("ValueError: temperature must be positive\n"))  # no frames: not read
    findings(scan_bytes("step 1 loss 0.2\nstep 2 loss 0.1\n"))


def test_a_broken_history_file_is_passed_over(tmp_path: Path, monkeypatch) -> None:
    folder = tmp_path / "fixes"
    folder.mkdir()
    (folder / "trl.json.gz").write_bytes(gzip.compress(json.dumps({"schema": "other"}).encode()))
    (folder / "verl.json.gz").write_bytes(b"not gzip")
    monkeypatch.setattr(fix_history, "_dir", lambda: folder)
    _READ.cache_clear()
    try:
        assert _READ("trl") is None and _READ("verl") is None and _READ("absent") is None
    finally:
        _READ.cache_clear()


def test_unsloths_generated_trainer_is_read_as_its_replacement_function() -> None:
    from envdoctor.triage.fixhist import _own
    from envdoctor.triage.traceback import Frame

    path = "/content/unsloth_compiled_cache/UnslothGRPOTrainer.py"
    f = _own(Frame(None, path, path, "compute_loss", 690, "x = 1"))
    assert (f.package, f.module_path, f.function) == (
        "unsloth",
        "models/rl_replacements.py",
        "grpo_trainer_compute_loss",
    )
    f = _own(Frame(None, path, path, "_prepare_inputs", 9))
    assert f.function == "grpo_trainer__prepare_inputs"
    path = "/home/u/LLaMA-Factory/src/llamafactory/train/ppo/trainer.py"
    f = _own(Frame(None, path, path, "ppo_train", 245))
    assert (f.package, f.module_path) == ("llamafactory", "train/ppo/trainer.py")
    user = Frame(None, "/home/u/train.py", "/home/u/train.py", "main", 3)
    assert _own(user) is user


# -- triage against the shipped history, on real logs of the development sets ---------------------------


def _dev(name: str) -> list:
    with open(DEV / name, "rb") as fh:
        from envdoctor.triage.scanner import scan

        return findings(scan(fh))


def test_a_trl_script_bug_fixed_in_a_later_release_is_named() -> None:
    # huggingface/trl#3455: `trl grpo` with a reward model path, TRL 0.18's script read an unbound
    # variable; the traceback prints the line that huggingface/trl#3639 removed (TRL 0.20.0)
    (f,) = _dev("heldout-2026-11-28/logs/024.log")
    assert f.rule == "TRI014" and f.severity == Severity.ERROR
    assert "huggingface/trl#3639" in f.message and "pip install 'trl==0.20.0'" in f.fix


def test_healthy_logs_of_the_development_sets_stay_quiet() -> None:
    healthy = []
    for index in sorted(DEV.glob("heldout-2026-11-28*/logs*/index.jsonl")):
        for line in index.read_text().splitlines():
            row = json.loads(line)
            if row.get("healthy"):
                healthy.append(index.parent / row["file"])
    assert len(healthy) >= 30
    for path in healthy:
        assert [f.rule for f in _dev(str(path.relative_to(DEV))) if f.rule == "TRI014"] == [], path


def test_a_fix_that_names_only_the_function_is_a_warning_with_a_version_and_nothing_without(
    derive: ModuleType, tmp_path: Path, monkeypatch
) -> None:
    r = tmp_path / "fn"
    r.mkdir()
    _git(r, "init", "-q", "-b", "main")
    _commit(r, {"trl/trainer/grpo_trainer.py": BUGGY}, "Initial")
    _git(r, "tag", "v0.1.0")
    _commit(r, {"trl/trainer/grpo_trainer.py": FIXED}, "Fix _generate for multi-turn prompts (#20)")
    _git(r, "tag", "v0.2.0")
    folder = tmp_path / "fixes"
    derive.write(
        derive.derive(r / ".git", "trl", ("trl",), r"^v(\d+\.\d+\.\d+)$", "2020-01-01"),
        folder / "trl.json.gz",
    )
    monkeypatch.setattr(fix_history, "_dir", lambda: folder)
    _READ.cache_clear()
    _PACKAGES.cache_clear()
    try:
        # the log prints the line that raised and the fix left it in the file: the fix changed the
        # function, not this failure (issue #36, set 14's DeepSpeed logs): nothing
        assert _tri014(_log("return list(outputs)", "0.1.0")) == []
        # a log that does not print the line: the place only, a warning
        (f,) = _tri014(_log("", "0.1.0"))
        assert f.severity == Severity.WARNING and "pip install 'trl==0.2.0'" in f.fix
        assert _tri014(_log("return list(outputs)")) == []
    finally:
        _READ.cache_clear()
        _PACKAGES.cache_clear()


def test_what_of_a_failure_a_fixs_subject_names() -> None:
    from envdoctor.knowledge.fix_history import Fix, line_hash
    from envdoctor.triage.fixhist import LINE, _matches, _message_words
    from envdoctor.triage.traceback import Frame, Traceback

    def fix(subject: str, removed: frozenset[str] = frozenset()) -> Fix:
        return Fix("trl", "m.py", "Trainer.step", "abc", "2025-01-01", "0.2.0", subject, "", removed)

    frame = Frame("trl", "p", "m.py", "step", 3, "x = batch['prompt_ids']")
    t = Traceback([frame], "TypeError", "'NoneType' object is not subscriptable")
    words = _message_words(t)
    assert _matches(fix("Fix TypeError when the batch is empty"), frame, t, words)
    assert _matches(fix("Fix NoneType batch"), frame, t, words)
    assert not _matches(fix("Fix ZeRO-3 + PEFT mixed-dtype error"), frame, t, words)  # no TypeError
    assert not _matches(fix("Fix the none case"), frame, t, words)
    drift = Traceback(
        [frame], "TypeError", "Trainer.__init__() got an unexpected keyword argument 'tokenizer'"
    )
    assert not _matches(fix("Fix TypeError with tokenizer"), frame, drift, _message_words(drift))
    assert (
        _matches(fix("Use processing_class", frozenset({line_hash(frame.code)})), frame, drift, set()) == LINE
    )


def test_fixes_of_excluded_threads_are_left_out(derive: ModuleType, repo: Path, tmp_path: Path) -> None:
    urls = tmp_path / "exclude.txt"
    urls.write_text("https://github.com/huggingface/trl/pull/12\nhttps://github.com/other/repo/issues/13\n")
    leave_out = derive.exclusions(urls, "huggingface/trl")
    assert leave_out == {"12"}
    data = derive.derive(
        repo / ".git", "trl", ("trl",), r"^v(\d+\.\d+\.\d+)$", "2020-01-01", exclude=leave_out
    )
    assert data["fixes"] == [] and data["functions"] == {}
    assert derive.exclusions(urls, "hiyouga/LLaMA-Factory") == frozenset()


def test_trl_0_19_0s_colocate_bug_is_found_by_its_changed_line_in_the_shipped_history() -> None:
    # huggingface/trl#3633: the catalogue names it first (TRI011); the fix history alone finds the
    # same fix, huggingface/trl#3634 in 0.19.1, from the line the traceback prints
    import io

    from envdoctor.triage import fixhist
    from envdoctor.triage.diagnose import scan_versions
    from envdoctor.triage.draft import Log
    from envdoctor.triage.scanner import scan
    from envdoctor.triage.traceback import failure

    text = textwrap.dedent(
        """\
        trl==0.19.0
        Traceback (most recent call last):
          File "/home/u/train_grpo.py", line 50, in <module>
            trainer.train()
          File "/home/u/.venv/lib/python3.11/site-packages/trl/trainer/grpo_trainer.py", line 1127, in FN
            generation_kwargs.update(self.args.generation_kwargs)
        TypeError: 'NoneType' object is not iterable
        """
    ).replace("FN", "_generate_and_score_completions")
    res = scan(io.BytesIO(text.encode()))
    lines = text.splitlines()
    tb = failure(lines[:-1], lines[-1], len(lines))
    assert tb is not None
    d = fixhist.fixed_after(tb, res.matches[-1], Log({}, {}, None, len(lines), {}, scan_versions(res)))
    assert d is not None and d.finding.severity == Severity.ERROR
    assert "huggingface/trl#3634" in d.finding.message and "pip install 'trl==0.19.1'" in d.finding.fix


# -- fixes after the newest release, tracebacks quoted in a fix's message, excluded quotes ----------

CORE = """
    def compute_advantage(scores, index):
        mean = group_mean(scores, index)
        return scores - mean

    def other(x):
        return x
"""
QUOTING = textwrap.dedent(
    """\
    [trainer] fix: pass the device to group_mean (#44)

    To prevent a device mismatch:
    ```log
      File "verl/trainer/main_ppo.py", line 367, in run
        trainer.fit()
      File "verl/trainer/ppo/core_algos.py", line 3, in compute_advantage
        return scores - mean
    RuntimeError: Expected all tensors to be on the same device, but found at least two devices, \
    cuda:0 and cpu!
    ```
    Follow-up of #41.
    """
)


@pytest.fixture(scope="module")
def unreleased(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """verl/ tagged v0.7.0, then a fix on main whose message quotes the traceback it fixes (#44,
    in no release yet)."""
    r = tmp_path_factory.mktemp("unreleased")
    _git(r, "init", "-q", "-b", "main")
    _commit(r, {"verl/__init__.py": "", "verl/trainer/ppo/core_algos.py": CORE}, "Initial import")
    _git(r, "tag", "v0.7.0")
    fixed = CORE.replace("group_mean(scores, index)", "group_mean(scores, index, device=scores.device)")
    _commit(r, {"verl/trainer/ppo/core_algos.py": fixed}, QUOTING)
    return r


def _use(folder: Path, monkeypatch) -> None:
    monkeypatch.setattr(fix_history, "_dir", lambda: folder)
    _READ.cache_clear()
    _PACKAGES.cache_clear()


def _verl_log(message: str, version: str | None = None, function: str = "compute_advantage") -> str:
    head = f"verl=={version}\n" if version else ""
    return head + textwrap.dedent(
        f"""\
        Traceback (most recent call last):
          File "/usr/lib/python3.11/site-packages/verl/trainer/main_ppo.py", line 367, in run
            trainer.fit()
          File "/usr/lib/python3.11/site-packages/verl/trainer/ppo/core_algos.py", line 3, in {function}
            return scores - mean
        {message}
        """
    )


DEVICE = (
    "RuntimeError: Expected all tensors to be on the same device, but found at least two devices, "
    "cuda:1 and cpu!"
)


def test_a_fix_after_the_newest_release_is_kept_with_the_traceback_its_message_quotes(
    derive: ModuleType, unreleased: Path
) -> None:
    data = derive.derive(
        unreleased / ".git", "verl", ("verl",), r"^v(\d+\.\d+\.\d+)$", "2020-01-01", "volcengine/verl"
    )
    (fix,) = data["fixes"]
    assert fix[2] == "" and fix[4] == "44"  # after v0.7.0: no release
    said = fix[5]
    assert said["f"][-1] == ["trainer/ppo/core_algos.py", "compute_advantage"]
    assert said["e"] == [DEVICE.replace("cuda:1", "cuda:0")]
    assert data["releases"] == ["0.7.0"] and data["subdir"] == ""


def test_an_unreleased_fix_quoting_the_failure_is_an_error_with_an_install_from_the_repository(
    derive: ModuleType, unreleased: Path, tmp_path: Path, monkeypatch
) -> None:
    folder = tmp_path / "fixes"
    derive.write(
        derive.derive(
            unreleased / ".git", "verl", ("verl",), r"^v(\d+\.\d+\.\d+)$", "2020-01-01", "volcengine/verl"
        ),
        folder / "verl.json.gz",
    )
    _use(folder, monkeypatch)
    try:
        # no version, the same exception at the same innermost frame as the fix's quoted traceback
        (f,) = _tri014(_verl_log(DEVICE))
        assert f.severity == Severity.ERROR and f.evidence["unreleased"] is True
        assert "not in a release yet" in f.message and "after verl 0.7.0" in f.message
        assert "git+https://github.com/volcengine/verl@" in f.fix and "fixed_in" not in f.evidence
        # the newest release shows: it lacks the fix
        (f,) = _tri014(_verl_log(DEVICE, "0.7.0"))
        assert f.severity == Severity.ERROR and "a release without it" in f.message
        # a build after the newest release may hold it: quiet
        assert _tri014(_verl_log(DEVICE, "0.7.1")) == []
        # another exception at that frame: the fix quotes nothing of it and its subject neither
        assert _tri014(_verl_log("ValueError: index out of range for the batch")) == []
        # the same exception raised at another function, one the fix did not change: quiet
        assert _tri014(_verl_log(DEVICE).replace("line 3, in compute_advantage", "line 3, in other")) == []
        # raised deeper, in a function below the one the fix changed: the quoted traceback's
        # frame is a caller here, not the raising place: a warning
        deeper = _verl_log(DEVICE).replace(
            "RuntimeError",
            '  File "/usr/lib/python3.11/site-packages/verl/utils/torch_functional.py", line 9, in sub\n'
            "    return a - b\nRuntimeError",
            1,
        )
        (f,) = _tri014(deeper)
        assert f.severity == Severity.WARNING and "pip show verl" in f.message
    finally:
        _READ.cache_clear()
        _PACKAGES.cache_clear()


def test_the_same_exception_reads_past_numbers_and_devices() -> None:
    from envdoctor.triage.fixhist import _same_exception
    from envdoctor.triage.traceback import Traceback

    t = Traceback(
        [], "RuntimeError", "Expected all tensors to be on the same device, but found cuda:3 and cpu!"
    )
    assert _same_exception(
        "RuntimeError: Expected all tensors to be on the same device, but found cuda:0 and cpu!", t
    )
    assert not _same_exception("ValueError: Expected all tensors to be on the same device", t)
    assert not _same_exception("RuntimeError: CUDA error: an illegal memory access was encountered", t)
    assert _same_exception("AssertionError: ", Traceback([], "AssertionError", ""))


def test_a_fix_whose_message_quotes_an_excluded_thread_is_left_out(
    derive: ModuleType, unreleased: Path, tmp_path: Path
) -> None:
    urls = tmp_path / "exclude.txt"
    for line, left_out in (
        ("https://github.com/volcengine/verl/issues/41", True),  # "Follow-up of #41" in its body
        ("https://github.com/verl-project/verl/pull/44", True),  # its own PR under the new name
        ("https://github.com/volcengine/verl/issues/40", False),
    ):
        urls.write_text(line + "\n")
        data = derive.derive(
            unreleased / ".git",
            "verl",
            ("verl",),
            r"^v(\d+\.\d+\.\d+)$",
            "2020-01-01",
            "volcengine/verl",
            exclude=derive.exclusions(urls, "volcengine/verl"),
            threads=derive.thread_keys(urls),
        )
        assert (data["fixes"] == []) is left_out, line


def test_a_message_naming_another_repositorys_excluded_thread_is_left_out(derive: ModuleType) -> None:
    c = derive.Commit(
        "abc1234567",
        "2026-01-01",
        "fix: the weight sync (#7)",
        "See vllm-project/vllm#9 and\nhttps://github.com/org/x/issues/3",
    )
    assert derive.excluded(c, frozenset(), frozenset({"vllm-project/vllm#9"}), "volcengine/verl")
    assert derive.excluded(c, frozenset(), frozenset({"org/x#3"}), "volcengine/verl")
    assert derive.excluded(c, frozenset(), frozenset({"verl-project/verl#7"}), "volcengine/verl")  # renamed
    assert not derive.excluded(c, frozenset(), frozenset({"vllm-project/vllm#8"}), "volcengine/verl")


def test_a_checkout_of_a_stack_without_a_site_packages_name_is_read_as_that_package() -> None:
    from envdoctor.triage.fixhist import _own
    from envdoctor.triage.traceback import Frame

    path = "/home/u/prime-rl/src/prime_rl/trainer/rl/train.py"
    f = _own(Frame(None, path, path, "train", 12))
    assert (f.package, f.module_path) == ("prime-rl", "trainer/rl/train.py")
    f = _own(Frame(None, "slime/utils/ppo_utils.py", "slime/utils/ppo_utils.py", "f", 3))
    assert (f.package, f.module_path) == ("slime", "utils/ppo_utils.py")


def test_pruning_a_derived_history_equals_deriving_it_with_the_exclusions(
    derive: ModuleType, repo: Path, unreleased: Path, tmp_path: Path
) -> None:
    urls = tmp_path / "exclude.txt"
    urls.write_text(
        "https://github.com/volcengine/verl/issues/41\nhttps://github.com/huggingface/trl/pull/12\n"
    )
    for git_dir, dist, source in ((unreleased, "verl", "volcengine/verl"), (repo, "trl", "huggingface/trl")):
        args = (git_dir / ".git", dist, (dist,), r"^v(\d+\.\d+\.\d+)$", "2020-01-01", source)
        leave_out, threads = derive.exclusions(urls, source), derive.thread_keys(urls)
        full = derive.derive(*args, exclude=leave_out, threads=threads)
        assert full["fixes"] == []
        assert derive.prune(derive.derive(*args), git_dir / ".git", leave_out, threads) == full
    kept = derive.derive(
        repo / ".git", "trl", ("trl",), r"^v(\d+\.\d+\.\d+)$", "2020-01-01", "huggingface/trl"
    )
    assert derive.prune(kept, repo / ".git", frozenset({"99"})) == kept  # nothing excluded: unchanged


def test_a_cut_traceback_whose_last_frame_prints_a_removed_line_names_the_fix_as_a_warning(
    derive: ModuleType, unreleased: Path, tmp_path: Path, monkeypatch
) -> None:
    folder = tmp_path / "fixes"
    derive.write(
        derive.derive(
            unreleased / ".git", "verl", ("verl",), r"^v(\d+\.\d+\.\d+)$", "2020-01-01", "volcengine/verl"
        ),
        folder / "verl.json.gz",
    )
    _use(folder, monkeypatch)
    cut = textwrap.dedent(
        """\
        Traceback (most recent call last):
          File "/usr/lib/python3.11/site-packages/verl/trainer/main_ppo.py", line 367, in run
            trainer.fit()
          File "/usr/lib/python3/site-packages/verl/trainer/ppo/core_algos.py", line 2, in compute_advantage
            mean = group_mean(scores, index)
        """
    )
    try:
        (f,) = _tri014(cut)
        assert f.severity == Severity.WARNING and "before its exception line" in f.message
        assert "volcengine/verl#44" in f.message and "git+https://github.com/volcengine/verl@" in f.fix
        # a line no fix removed: the cut traceback's own answer (TRI003), not TRI014
        assert _tri014(cut.replace("mean = group_mean(scores, index)", "return scores - mean")) == []
    finally:
        _READ.cache_clear()
        _PACKAGES.cache_clear()


def test_a_call_that_does_not_fit_the_packages_own_method_reads_that_methods_fixes(
    tmp_path: Path, monkeypatch
) -> None:
    """A TypeError naming ``Class.method()`` of the same package: a fix of that method whose
    message quotes this traceback (the same calling frame and exception) is the answer."""
    folder = tmp_path / "fixes"
    folder.mkdir()
    message = "TypeError: Sender.send_chunks() got an unexpected keyword argument 'weight_metadata'"
    doc = {
        "schema": "envdoctor.fixes/1",
        "package": "skyrl-train",
        "source": "NovaSky-AI/SkyRL",
        "releases": ["0.4.0"],
        "fixes": [
            [
                "e9e5fb23a0",
                "2026-03-06",
                "",
                "[fix] Fix cuda ipc weight sync (#1292)",
                "1292",
                {"e": [message], "f": [["workers/fsdp/fsdp_worker.py", "broadcast"]]},
            ]
        ],
        "functions": {"weight_sync/cuda_ipc.py": {"Sender.send_chunks": [[0]]}},
    }
    (folder / "skyrl-train.json.gz").write_bytes(gzip.compress(json.dumps(doc).encode()))
    _use(folder, monkeypatch)
    log = textwrap.dedent(
        f"""\
        Traceback (most recent call last):
          File "/usr/lib/py/site-packages/skyrl_train/workers/fsdp/fsdp_worker.py", line 256, in broadcast
            await self.sender.send_chunks(chunks, weight_metadata=meta)
        {message}
        """
    )
    try:
        (f,) = _tri014(log)
        assert f.severity == Severity.ERROR and "NovaSky-AI/SkyRL#1292" in f.message
        assert _tri014(log.replace("'weight_metadata'", "'other_argument'")) == []  # not the quoted failure
    finally:
        _READ.cache_clear()
        _PACKAGES.cache_clear()


def test_a_bare_exception_quoted_at_the_same_frame_is_no_proof() -> None:
    from envdoctor.knowledge.fix_history import Fix
    from envdoctor.triage.fixhist import QUOTED, QUOTED_EXC, _quotes
    from envdoctor.triage.traceback import Frame, Traceback

    frame = Frame("verl", "p", "workers/a.py", "step", 3, "assert x")
    fix = Fix("verl", "workers/a.py", "step", "abc", "2026-01-01", "", "fix: step (#1)", "1", frozenset())
    quoting = Fix(*[*fix.__dict__.values()][:9], ("AssertionError: ",), (("workers/a.py", "step"),))
    assert _quotes(quoting, frame, Traceback([frame], "AssertionError", "")) == QUOTED_EXC  # a warning
    said = Fix(
        *[*fix.__dict__.values()][:9], ("AssertionError: world size 3 != 4",), (("workers/a.py", "step"),)
    )
    assert _quotes(said, frame, Traceback([frame], "AssertionError", "world size 7 != 8")) == QUOTED
    assert _quotes(fix, frame, Traceback([frame], "AssertionError", "world size 7 != 8")) == ""


# -- a failure the log shows without a frame (issue #36) --------------------------------------------


def test_format_as_a_noun_is_a_fix_and_a_vendored_version_line_no_release(
    derive: ModuleType, tmp_path: Path
) -> None:
    """unslothai/unsloth-zoo#773 "Fix: handle key format mismatch" was read as a formatter's pass and
    left out; a vendored copy's ``__version__ = "0.5.1"`` under unsloth_zoo/ was read as a release."""
    r = tmp_path / "zoo"
    r.mkdir()
    _git(r, "init", "-q", "-b", "main")
    init = '__version__ = "{}"\n'
    code = "def merge(keys):\n    count = len([k for k in keys if k.endswith('.weight')])\n    return count\n"
    _commit(r, {"unsloth_zoo/__init__.py": init.format("2026.6.1"), "unsloth_zoo/s.py": code}, "Release")
    _commit(r, {"unsloth_zoo/s.py": code.replace("'.weight'", "'.bias'")}, "Format the saving tests (#1)")
    _commit(
        r,
        {"unsloth_zoo/s.py": code.replace("len(", "sum(1 for _ in ")},
        "Fix: handle key format mismatch for VLM models (#773)\n\n"
        "The check raised a false '# of LoRAs does not match # of saved modules' error on save.",
    )
    _commit(r, {"unsloth_zoo/fla/__init__.py": init.format("0.5.1")}, "Vendor fla")
    _commit(r, {"unsloth_zoo/__init__.py": init.format("2026.6.2")}, "Update __init__.py")
    data = derive.derive(r / ".git", "unsloth-zoo", ("unsloth_zoo",), "", "2020-01-01")
    assert data["releases"] == ["2026.6.1", "2026.6.2"]
    (fix,) = data["fixes"]
    assert fix[3].startswith("Fix: handle key format mismatch") and fix[2] == "2026.6.2"
    assert fix[5] == {"m": ["# of LoRAs does not match # of saved modules"]}


def _history(folder: Path, package: str, source: str, functions: dict, fixes: list, releases: list) -> None:
    folder.mkdir(exist_ok=True)
    doc = {
        "schema": fix_history.SCHEMA,
        "package": package,
        "source": source,
        "releases": releases,
        "fixes": fixes,
        "functions": functions,
    }
    (folder / f"{package}.json.gz").write_bytes(gzip.compress(json.dumps(doc).encode()))


LACKS = "RuntimeError: 'LRUCacheWorkerLoRAManager' object has no attribute 'get_dummy_lora_warmup_rank'\n"


@pytest.fixture
def zoo(tmp_path: Path, monkeypatch) -> Iterator[Path]:
    """unsloth-zoo's fix #788 gave WorkerLoRAManager.get_dummy_lora_warmup_rank (2026.6.6); trl's
    #6340 names vocab_size and multimodal configs (1.9.0), ms-swift's #5335 vocab_size only."""
    folder = tmp_path / "fixes"
    _history(
        folder,
        "unsloth-zoo",
        "unslothai/unsloth-zoo",
        {"vllm_lora_worker_manager.py": {"WorkerLoRAManager.get_dummy_lora_warmup_rank": [[0]]}},
        [["670292cbb4", "2026-06-18", "2026.6.6", "Fix LoRA on new vLLM: get_dummy_lora_warmup_rank", "788"]],
        ["2026.6.5", "2026.6.6"],
    )
    _history(
        folder,
        "trl",
        "huggingface/trl",
        {"experimental/gkd/gkd_trainer.py": {"GKDTrainer.__init__": [[0], [1]]}},
        [
            ["9ff8c78ff7", "2026-05-11", "1.5.0", "Fix nested vocab_size for DistillationTrainer", "5592"],
            [
                "0fadf1a67a",
                "2026-07-10",
                "1.9.0",
                "Fix GKD vocab_size check for multimodal model configs",
                "6340",
            ],
        ],
        ["1.5.0", "1.9.0"],
    )
    _history(
        folder,
        "ms-swift",
        "modelscope/ms-swift",
        {"trainers/gkd.py": {"GKDTrainer.__init__": [[0]]}},
        [["df7535d9aa", "2025-08-11", "3.7.1", "[gkd] fix qwen2.5-vl vocab_size mismatch", "5335"]],
        ["3.7.1"],
    )
    _use(folder, monkeypatch)
    yield folder
    _READ.cache_clear()
    _PACKAGES.cache_clear()


def test_an_attribute_a_fix_gave_the_objects_class_names_that_fix_without_a_frame(zoo: Path) -> None:
    """unslothai/unsloth-zoo#788: vLLM >= 0.23 calls get_dummy_lora_warmup_rank on unsloth_zoo's
    LoRA manager, which an older unsloth_zoo lacks; the one-line paste shows no frame."""
    (f,) = _tri014(LACKS)
    assert f.severity == Severity.WARNING
    assert "pip install 'unsloth-zoo>=2026.6.6'" in f.fix and "unslothai/unsloth-zoo#788" in f.message
    assert f.evidence["located_by"].startswith("fix history")
    # the log's release has the fix: something else lacks it
    assert _tri014("unsloth_zoo==2026.6.6\n" + LACKS) == []


def test_an_attribute_named_by_one_packages_fix_with_the_objects_class(zoo: Path) -> None:
    """huggingface/trl#6340: GKDTrainer read config.vocab_size, which composite configs
    (Gemma3Config) keep under text_config; ms-swift's fix names vocab_size but not the class."""
    (f,) = _tri014("AttributeError: 'Gemma3Config' object has no attribute 'vocab_size'\n")
    assert f.severity == Severity.WARNING and "pip install 'trl>=1.9.0'" in f.fix
    assert "huggingface/trl#6340" in f.message and "#5592" in f.message  # the other candidate named


def test_quiet_for_an_attribute_no_fix_ties_to_the_object(zoo: Path) -> None:
    # a fix names the attribute but neither gave the class the method nor names the class
    assert _tri014("AttributeError: 'Qwen2ForCausalLM' object has no attribute 'vocab_size'\n") == []
    # a name every class has; a builtin; a traceback that shows who read it (the frames' answer)
    assert _tri014("AttributeError: 'Gemma3Config' object has no attribute 'config'\n") == []
    assert _tri014("AttributeError: 'NoneType' object has no attribute 'get_dummy_lora_warmup_rank'\n") == []
    framed = (
        'Traceback (most recent call last):\n  File "/home/u/train.py", line 3, in <module>\n'
        "    m.get_dummy_lora_warmup_rank()\n" + LACKS
    )
    assert _tri014(framed) == []


def test_a_fix_whose_prose_quotes_the_message_matches_it_word_for_word() -> None:
    from envdoctor.knowledge.fix_history import Fix
    from envdoctor.triage.fixhist import _says
    from envdoctor.triage.traceback import Traceback

    def fix(said: tuple[str, ...]) -> Fix:
        return Fix(
            "unsloth-zoo",
            "s.py",
            "merge",
            "abc",
            "2026-06-18",
            "2026.6.6",
            "Fix",
            "773",
            frozenset(),
            (),
            (),
            said,
        )

    msg = "Unsloth: Saving LoRA finetune failed since # of LoRAs = 128 does not match # of saved modules = 0."
    t = Traceback(message=msg)
    assert _says(fix(("# of LoRAs does not match # of saved modules",)), t)
    assert not _says(fix(("LoRAs does not match",)), t)  # too few words to tell a failure
    assert not _says(fix(("# of adapters does not match # of saved modules",)), t)


def test_the_development_sets_frameless_release_bugs_name_their_fixes() -> None:
    """Held-out set 9's one-line pastes (issue #36): unsloth_zoo's LoRA manager (#788), its LoRA
    count check on save (#773, placed by the raise-site index, its message quoted by the fix), and
    TRL's GKD vocab_size check (#6340)."""
    (f,) = _dev("heldout-2026-11-29/logs5/008.log")
    assert f.rule == "TRI014" and "unsloth-zoo>=2026.6.6" in f.fix
    (f,) = _dev("heldout-2026-11-29/logs5/010.log")
    assert f.rule == "TRI014" and "unslothai/unsloth-zoo#773" in f.message
    assert f.evidence["matched"] == "its message quotes the failure's message"
    (f,) = _dev("heldout-2026-11-29/logs6/008.log")
    assert f.rule == "TRI014" and "trl>=1.9.0" in f.fix and "huggingface/trl#6340" in f.message


GKD = (
    "Standard import failed for UnslothGKDTrainer: non-default argument follows default argument "
    "(UnslothGKDTrainer.py, line 625). Using tempfile instead!\n"
)


def test_a_module_unsloth_generated_that_does_not_compile_is_its_generators_bug() -> None:
    """unslothai/unsloth#2092: Unsloth's rewrite of TRL's GKDTrainer did not compile; the paste
    shows Unsloth's compiler's line and a traceback cut in unsloth_zoo/compiler.py."""
    (f,) = _dev("heldout-2026-11-29/logs5/014.log")
    assert f.rule == "TRI014" and f.severity == Severity.WARNING
    assert "UnslothGKDTrainer.py" in f.message and "TRL's GKDTrainer" in f.message
    assert f.fix.startswith("pip install --upgrade unsloth unsloth_zoo")
    (f,) = _tri014(GKD)
    assert f.evidence["generated"] == "UnslothGKDTrainer.py" and f.evidence["generated_line"] == 625
    # Python's own SyntaxError of the generated file, as a traceback prints it
    syntax = (
        "Traceback (most recent call last):\n"
        '  File "/u/unsloth_zoo/compiler.py", line 391, in create_new_function\n'
        "    new_module = importlib.import_module(name)\n"
        "SyntaxError: non-default argument follows default argument (UnslothGKDTrainer.py, line 625)\n"
    )
    assert [f.evidence.get("generated") for f in _tri014(syntax)] == ["UnslothGKDTrainer.py"]


def test_quiet_for_a_syntax_error_of_the_users_own_file_or_a_placed_message_no_fix_quotes() -> None:
    own = "SyntaxError: non-default argument follows default argument (train.py, line 12)\n"
    assert _tri014(own) == []
    assert (
        _tri014(GKD.replace("non-default argument", "ok").replace("(UnslothGKDTrainer.py, line 625)", ""))
        == []
    )
    # a message the raise-site index places (ms-swift's MaxLengthError) whose function a later fix
    # changed ("fix max_length"): its subject's words are no quote of the failure
    assert [f.rule for f in _dev("heldout-2026-11-28c/logs/044.log") if f.rule == "TRI014"] == []


# -- the libraries under the RL stacks: DeepSpeed, Liger-Kernel, accelerate, peft (issue #36) ------


def _deepspeed_log(
    version: str | None, function: str = "gather_params", code: str = "param.shape[1],"
) -> str:
    head = f"deepspeed=={version}\n" if version else ""
    site = "/usr/lib/python3.11/site-packages"
    return head + textwrap.dedent(
        f"""\
        Traceback (most recent call last):
          File "/home/u/train.py", line 40, in <module>
            with deepspeed.module_inject.layers.GatherReplacedLayerParams([param], model, enabled=True):
          File "{site}/deepspeed/module_inject/layers.py", line 359, in __enter__
            self.params[0].gather_params(self.params)
          File "{site}/torch/utils/_contextlib.py", line 116, in decorate_context
            return func(*args, **kwargs)
          File "{site}/deepspeed/module_inject/layers.py", line 473, in {function}
            {code}
        IndexError: tuple index out of range
        """
    )


def test_the_libraries_under_the_rl_stacks_have_shipped_histories_read_by_their_frames() -> None:
    from envdoctor.triage.traceback import package_of

    have = fix_history.packages()
    for folder, dist in (
        ("deepspeed", "deepspeed"),
        ("liger_kernel", "liger-kernel"),
        ("accelerate", "accelerate"),
        ("peft", "peft"),
    ):
        assert dist in have
        assert package_of(f"/venv/lib/python3.11/site-packages/{folder}/x/y.py")[0] == dist
        h = fix_history.fix_history(dist)
        assert h is not None and h.releases and h.fixes and h.source
    # a module path inside the package, as the frames name it (src/ layouts read from their folder)
    liger = fix_history.fix_history("liger-kernel")
    assert liger is not None and any(m.startswith(("chunked_loss/", "ops/")) for m in liger.functions)
    peft = fix_history.fix_history("peft")
    assert peft is not None and "tuners/tuners_utils.py" in peft.functions


def test_a_deepspeed_bug_a_later_release_fixed_is_named_with_the_release() -> None:
    # deepspeedai/DeepSpeed#7257 (0.17.0): AutoTP's gather of a one-dimensional (bias) parameter
    # indexed its shape's second dimension; the fix's message quotes this traceback
    (f,) = _tri014(_deepspeed_log("0.16.9"))
    assert f.severity == Severity.ERROR
    assert "deepspeedai/DeepSpeed#7257" in f.message and "pip install 'deepspeed==0.17.0'" in f.fix
    assert f.evidence["matched"] == "its message quotes the same failure at the same frame"
    # no version shown: the fix's own message shows this failure at this frame, still an error
    (w,) = _tri014(_deepspeed_log(None))
    assert w.severity == Severity.ERROR and "the log shows no deepspeed version" in w.message


def test_quiet_for_a_deepspeed_release_with_the_fix_or_a_function_no_fix_touched() -> None:
    # 0.17.0 has #7257; a later fix of the function that names nothing of the failure is at most a
    # warning (the place, not the failure); a release with every fix of it: nothing
    assert all(
        f.severity == Severity.WARNING and "#7257" not in f.message for f in _tri014(_deepspeed_log("0.17.0"))
    )
    assert _tri014(_deepspeed_log("0.19.5")) == []
    h = fix_history.fix_history("deepspeed")
    assert h is not None and h.changed("module_inject/layers.py", "_untouched_helper") == []
    assert _tri014(_deepspeed_log("0.16.9", "_untouched_helper", "x = shape[1]")) == []
    assert _tri014("deepspeed==0.16.9\nstep 1 loss 0.21\nstep 2 loss 0.19\n") == []


def test_a_frameless_deepspeed_message_placed_by_the_raise_site_index_names_its_fix() -> None:
    # deepspeedai/DeepSpeed#7751 (0.18.4) removed OpenMPIRunner's premature check; its message quotes it
    (f,) = _tri014("EnvironmentError: MPI environment variables are not set\n")
    assert f.severity == Severity.WARNING and "deepspeedai/DeepSpeed#7751" in f.message
    assert f.evidence["located_by"].startswith("placed by its message")


def test_a_raise_the_fix_itself_brought_is_no_failure_it_fixed() -> None:
    """deepspeedai/DeepSpeed#7890 ('[Bloom] Fix hangs of bloom test', 0.18.8) turned a ``sys.exit``
    into this ``RuntimeError`` and quotes it as the result: the raise first appears in the fix's
    release, so the message is what the fixed code refuses, not a failure the fix removed."""
    text = (
        "RuntimeError: Transformers version 4.57.3 exceeds version 4.43.4! After transformers version "
        "4.43.4, BLOOM inference with DeepSpeed is no longer supported.\n"
    )
    assert _tri014(text) == []


# -- which of several fixes of a function is this run's (issue #36, set 14's DeepSpeed logs) --------

NEWER = FIXED.replace("return [o for o in outputs]", "return [o for o in outputs if o is not None]")


def test_a_line_a_fix_wrote_places_the_run_at_or_after_that_fix(
    derive: ModuleType, tmp_path: Path, monkeypatch
) -> None:
    """A traceback that prints a line a fix added ran code with that fix: no fix of that release or
    before is its fix (deepspeedai/DeepSpeed#7109 wrote the line set 14's 002 prints, and was named
    as its fix); a later fix that removed the line is (#7254); and a run whose line no fix wrote
    is read as before."""
    r = tmp_path / "had"
    r.mkdir()
    _git(r, "init", "-q", "-b", "main")
    _commit(r, {"trl/trainer/grpo_trainer.py": BUGGY}, "Initial")
    _git(r, "tag", "v0.1.0")
    _commit(r, {"trl/trainer/grpo_trainer.py": FIXED}, "Fix TypeError in _generate (#20)")
    _git(r, "tag", "v0.2.0")
    _commit(r, {"trl/trainer/grpo_trainer.py": NEWER}, "Fix TypeError on empty outputs (#21)")
    _git(r, "tag", "v0.3.0")
    data = derive.derive(r / ".git", "trl", ("trl",), r"^v(\d+\.\d+\.\d+)$", "2020-01-01")
    folder = tmp_path / "fixes"
    derive.write(data, folder / "trl.json.gz")
    monkeypatch.setattr(fix_history, "_dir", lambda: folder)
    _READ.cache_clear()
    _PACKAGES.cache_clear()
    try:
        h = fix_history.fix_history("trl")
        assert h is not None
        fixes = {f.number: f for f in h.changed("trainer/grpo_trainer.py", "_generate")}
        wrote = fixes["20"].added
        assert fix_history.line_hash(FIXED.splitlines()[3].strip()) in wrote  # the line #20 wrote
        assert not fixes["20"].removed & wrote
        new_line = (
            "outputs = self.llm.generate(prompts, sampling_params=self.sampling_params, use_tqdm=False)"
        )
        message = "TypeError: 'NoneType' object is not iterable"
        # the run printed #20's line: it has 0.2.0, so #20 is not its fix; #21 (0.3.0) is the one left
        (f,) = _tri014(_log(new_line, None, message))
        assert f.evidence["number"] == "21" and "other fixes" not in f.message
        assert "the run has trl 0.2.0 or later" in f.message
        assert "pip install 'trl==0.3.0'" in f.fix and f.evidence["had"] == fixes["20"].commit
        # the old line: no fix wrote it, both are candidates, the older first
        (g,) = _tri014(_log(OLD_LINE, None, message))
        assert g.evidence["number"] == "20" and "had" not in g.evidence
        assert "pip install 'trl==0.3.0'" in g.fix  # the pin holds #21 too, named beside it
    finally:
        _READ.cache_clear()
        _PACKAGES.cache_clear()


def test_a_fix_quoting_another_failure_of_the_same_kind_is_not_this_ones() -> None:
    """deepspeedai/DeepSpeed#7257 quotes ``IndexError: tuple index out of range`` raised in
    ``gather_params``; set 14's 005 raises it in ``_mark_uc_metadata``, a frame #7257's traceback
    never passes: another failure of the same message. A fix quoting another message of the
    same exception class names another failure too."""
    from envdoctor.knowledge.fix_history import Fix
    from envdoctor.triage.fixhist import QUOTED, _elsewhere, _matches, _message_words
    from envdoctor.triage.traceback import Frame, Traceback

    def fix(exc: str, frames: tuple[tuple[str, str], ...]) -> Fix:
        return Fix(
            "deepspeed",
            "module_inject/layers.py",
            "LinearLayer.__init__",
            "abc",
            "2025-05-25",
            "0.17.0",
            "Fix AutoTP gathering replaced layer params when bias is not None (#7257)",
            "7257",
            frozenset(),
            (exc,),
            frames,
        )

    raising = Frame("deepspeed", "p", "module_inject/layers.py", "_mark_uc_metadata", 807, "x = w.shape[1]")
    caller = Frame("deepspeed", "p", "module_inject/layers.py", "__init__", 739, "self._mark_uc_metadata()")
    t = Traceback([caller, raising], "IndexError", "tuple index out of range")
    stack = [raising, caller]
    other = fix("IndexError: tuple index out of range", (("module_inject/layers.py", "gather_params"),))
    assert _elsewhere(other, t, stack) and _matches(other, caller, t, _message_words(t), stack=stack) == ""
    same = fix("IndexError: tuple index out of range", (("module_inject/layers.py", "_mark_uc_metadata"),))
    assert not _elsewhere(same, t, stack)
    assert _matches(same, raising, t, _message_words(t), stack=stack) == QUOTED
    # frames tell nothing where the fix quotes two failures (verl-project/verl#4836), or where the
    # log's exception was raised below the package, in another one (set 11's 28f/004, 28f/032)
    two = fix("IndexError: tuple index out of range", (("module_inject/layers.py", "gather_params"),))
    two = Fix(
        *[getattr(two, k) for k in ("package", "module", "function", "commit", "date", "release")],
        two.subject,
        two.number,
        two.removed,
        (*two.quoted_exc, "AttributeError: x"),
        two.quoted_frames,
    )
    assert not _elsewhere(two, t, stack)
    torch = Frame("torch", "p", "nn/functional.py", "linear", 9, "return f(x)")
    below = Traceback([caller, raising, torch], "IndexError", "tuple index out of range")
    assert not _elsewhere(other, below, stack)
    unpack = Traceback([raising], "ValueError", "not enough values to unpack (expected 2, got 1)")
    assert _elsewhere(fix("ValueError: too many values to unpack (expected 2)", ()), unpack, [raising])
    assert not _elsewhere(fix("TypeError: x is None", ()), unpack, [raising])  # another class: no say


def test_set_14s_deepspeed_logs_name_the_settled_fix_or_nothing_against_the_pruned_history(
    tmp_path: Path, monkeypatch
) -> None:
    """Set 14's logs14b/002 and 005 against the shipped DeepSpeed history less the set's threads
    (results/EXCLUDE14.txt: #7254 and #8270, their settled fixes): no earlier fix of the same
    function is named (#7109 wrote 002's line; #7257 quotes its message at another frame); with
    the full history the settled fixes are errors."""
    logs = DEV / "heldout-2026-11-29f" / "logs14b" / "logs"
    full = {n: _tri014((logs / f"{n}.log").read_text()) for n in ("002", "005")}
    assert "#7254" in full["002"][0].message and full["002"][0].severity == Severity.ERROR
    assert "#8270" in full["005"][0].message and full["005"][0].severity == Severity.ERROR
    data = json.loads(
        gzip.decompress((ROOT / "rules" / "knowledge" / "fixes" / "deepspeed.json.gz").read_bytes())
    )
    left = {i for i, row in enumerate(data["fixes"]) if row[4] not in ("7254", "8270", "7908")}
    keep = {i: n for n, i in enumerate(sorted(left))}
    data["fixes"] = [data["fixes"][i] for i in sorted(left)]
    data["functions"] = {
        m: {q: [[keep[r[0]], *r[1:]] for r in rows if r[0] in keep] for q, rows in names.items()}
        for m, names in data["functions"].items()
    }
    folder = tmp_path / "fixes"
    folder.mkdir()
    (folder / "deepspeed.json.gz").write_bytes(gzip.compress(json.dumps(data).encode()))
    monkeypatch.setattr(fix_history, "_dir", lambda: folder)
    _READ.cache_clear()
    _PACKAGES.cache_clear()
    try:
        assert _tri014((logs / "002.log").read_text()) == []
        assert _tri014((logs / "005.log").read_text()) == []
    finally:
        _READ.cache_clear()
        _PACKAGES.cache_clear()


def test_a_fix_that_gave_a_sibling_class_the_attribute_is_not_named() -> None:
    """``'vLLMRollout' object has no attribute 'execute_method'`` (set 8's 28d/logs2/017): verl's fix
    gave ``SGLangRollout`` the method — a sibling class, not one the object's class extends
    (``WorkerLoRAManager`` of ``LRUCacheWorkerLoRAManager`` is): no fix of it is named."""
    text = (DEV / "heldout-2026-11-28d" / "logs2" / "017.log").read_text()
    assert not any("SGLangRollout" in f.message for f in _tri014(text))


def test_the_pin_holds_the_fixes_named_not_one_past_them(
    derive: ModuleType, tmp_path: Path, monkeypatch
) -> None:
    """The pin is the first release with every fix the finding names ("the first release with
    every fix named"): a fourth candidate, past MAX_NAMED and not named, does not move it to a
    release the message never mentions."""
    from envdoctor.triage.fixhist import MAX_NAMED

    assert MAX_NAMED == 3
    r = tmp_path / "pin"
    r.mkdir()
    _git(r, "init", "-q", "-b", "main")
    text = BUGGY
    _commit(r, {"trl/trainer/grpo_trainer.py": text}, "Initial")
    _git(r, "tag", "v0.1.0")
    for n in range(4):  # four fixes of _generate naming the failure, one release each
        text = text.replace("return [o for o in outputs", f"return [o for o in outputs if o != {n}")
        _commit(r, {"trl/trainer/grpo_trainer.py": text}, f"Fix TypeError in _generate (#{30 + n})")
        _git(r, "tag", f"v0.{n + 2}.0")
    data = derive.derive(r / ".git", "trl", ("trl",), r"^v(\d+\.\d+\.\d+)$", "2020-01-01")
    folder = tmp_path / "fixes"
    derive.write(data, folder / "trl.json.gz")
    monkeypatch.setattr(fix_history, "_dir", lambda: folder)
    _READ.cache_clear()
    _PACKAGES.cache_clear()
    try:
        (f,) = _tri014(_log("return list(outputs)", "0.1.0"))
        assert f.evidence["number"] == "30"  # the oldest first, two more named beside it
        assert "#31" in f.message and "#32" in f.message and "#33" not in f.message
        assert "pip install 'trl==0.4.0'" in f.fix and "every fix named" in f.fix  # not 0.5.0 (#33)
        assert f.evidence["upgrade"] == "0.4.0"
    finally:
        _READ.cache_clear()
        _PACKAGES.cache_clear()


# -- the raising line printed without its frame (fixhist.by_raising_line) --------------------------

#: huggingface/trl#1834's paste (a development log, heldout-2026-11-28h/logs/014.log): the line that
#: raised and the exception, no frame; huggingface/trl#1840 (trl 0.10.1) removed that line from
#: KTOTrainer.evaluation_loop
KTO_LINES = (
    '[rank0]:     target_indicies = [i for i in range(len(random_batch["kl"])) '
    'if random_batch["kl"][i] is False]\n'
    "[rank0]: KeyError: 'kl' \n"
)


def _raising(text: str) -> list:
    return [f for f in findings(scan_bytes(text)) if f.rule == "TRI014"]


def test_a_raising_line_without_its_frame_is_placed_by_the_fix_that_removed_it() -> None:
    (f,) = _raising(KTO_LINES)
    assert f.severity == Severity.WARNING  # the log shows no trl version: the place, not the run's
    assert "KTOTrainer.evaluation_loop" in f.message and "huggingface/trl#1840" in f.message
    assert "placed by its raising line" in f.message
    assert f.fix.startswith("pip install 'trl==0.10.1'")


def test_a_raising_line_with_an_older_version_shown_is_an_error() -> None:
    (f,) = _raising("trl==0.9.6\n" + KTO_LINES)
    assert f.severity == Severity.ERROR and "huggingface/trl#1840" in f.message
    # the release with the fix shown: the line cannot be its code, nothing is named
    assert _raising("trl==0.10.1\n" + KTO_LINES) == []


def test_a_raising_line_under_a_cut_frame_of_another_function_is_not_placed() -> None:
    # linkedin/Liger-Kernel#113's paste (heldout-2026-11-28h/logs2/002.log): the line is one a
    # liger-kernel fix removed from LigerForCausalLMLoss (loss_utils.py), but the cut frame header
    # above it names lce_forward (llama.py): the same idiom elsewhere, not that function
    text = (
        'liger_kernel/transformers/model/llama.py", line 102, in lce_forward\n'
        "    shift_labels = labels[..., 1:].contiguous()\n"
        "TypeError: 'NoneType' object is not subscriptable\n"
    )
    assert _raising(text) == []


def test_a_formatters_pass_does_not_place_a_raising_line() -> None:
    # unslothai/unsloth#3563 "Formatting & bug fixes" rewrote `assert(seq_len <= cos.shape[0])` as
    # `assert seq_len <= cos.shape[0]` (heldout-2026-11-29c/logs11a/logs/010.log's line): the
    # failure stayed until #3578 (2025.11.4) in the callers
    assert _raising("        assert(seq_len <= cos.shape[0])\nAssertionError\n") == []


def test_a_raising_line_no_fix_removed_or_prose_is_not_placed() -> None:
    assert _raising("    logits = model(input_ids=batch_ids).logits\nKeyError: 'kl'\n") == []
    assert _raising("The run stopped after the first step, see below\nKeyError: 'kl'\n") == []


def test_trls_history_holds_its_2023_fixes() -> None:
    # TRL 0.4 - 0.7's trainers are still run (the development logs' PPO / DPO pastes): their fixes
    # from 2023 are in the history (derive_fix_history.SINCE_OF), huggingface/trl#825 among them
    h = fix_history.fix_history("trl")
    assert h is not None
    (fix,) = [f for f in h.changed("trainer/dpo_trainer.py", "DPOTrainer.__init__") if f.number == "825"]
    assert fix.release == "0.7.2"
    line = "self.ref_model = self.accelerator._prepare_deepspeed(self.ref_model)[0]"
    assert fix_history.line_hash(line) in fix.removed


#: hiyouga/LlamaFactory#686 (2023-08-25): TRL 0.5/0.6's DPOTrainer under LLaMA-Factory, the paste cut
#: after its last trl frame, whose line huggingface/trl#703 (0.7.0, 2023) removed
DPO_2023 = """Traceback (most recent call last):
File "/root/.local/lib/python3.8/site-packages/transformers/trainer.py", line 2682, in training_step
loss = self.compute_loss(model, inputs)
File "/root/.local/lib/python3.8/site-packages/trl/trainer/dpo_trainer.py", line 396, in compute_loss
loss, metrics = self.get_batch_metrics(model, inputs, train_eval="train")
File "/root/.local/lib/python3.8/site-packages/trl/trainer/dpo_trainer.py", line 350, in get_batch_metrics
with self.accelerator.unwrap_model(self.model).pretrained_model.disable_adapter():
File "/root/.local/lib/python3.8/s
"""


def test_a_cut_trl_0_5_dpo_traceback_names_its_2023_fix() -> None:
    (f,) = [f for f in findings(scan_bytes(DPO_2023)) if f.rule == "TRI014"]
    assert f.severity == Severity.WARNING and "huggingface/trl#703" in f.message
    assert f.fix.startswith("pip install 'trl==0.7.0'")
    # a run with that release shown is past the fix: no TRI014
    assert [f for f in findings(scan_bytes("trl==0.7.0\n" + DPO_2023)) if f.rule == "TRI014"] == []


def test_a_later_fix_naming_the_failure_outranks_a_removal_that_names_nothing_of_it(
    derive: ModuleType, tmp_path: Path, monkeypatch
) -> None:
    """deepspeedai/DeepSpeed#7243 ("Fix issue with symint input", 0.17.1) removed the line a
    DeepCompile KeyError prints, a later commit put it back, and #8214 ("Fix KeyError on frozen
    parameters") is the fix: the pin to 0.17.1 did not hold (held-out set 21, d001). A removal
    whose subject names nothing of the failure yields to a later fix that names it."""
    r = tmp_path / "back"
    r.mkdir()
    _git(r, "init", "-q", "-b", "main")
    _commit(r, {"trl/trainer/grpo_trainer.py": BUGGY}, "Initial")
    _git(r, "tag", "v0.1.0")
    _commit(r, {"trl/trainer/grpo_trainer.py": FIXED}, "Fix issue with symint input (#30)")
    _git(r, "tag", "v0.2.0")
    _commit(r, {"trl/trainer/grpo_trainer.py": BUGGY}, "Restore the generate call")  # the line is back
    _git(r, "tag", "v0.3.0")
    later = BUGGY.replace("return [o for o in outputs]", "return [o for o in outputs if o is not None]")
    _commit(r, {"trl/trainer/grpo_trainer.py": later}, "Fix TypeError on empty outputs (#31)")
    data = derive.derive(r / ".git", "trl", ("trl",), r"^v(\d+\.\d+\.\d+)$", "2020-01-01")
    folder = tmp_path / "fixes"
    derive.write(data, folder / "trl.json.gz")
    monkeypatch.setattr(fix_history, "_dir", lambda: folder)
    _READ.cache_clear()
    _PACKAGES.cache_clear()
    try:
        (f,) = _tri014(_log(OLD_LINE, None))
        assert f.evidence["number"] == "31" and "#30" not in f.fix
        assert "trl==0.2.0" not in f.fix
    finally:
        _READ.cache_clear()
        _PACKAGES.cache_clear()
