"""The releases a run had, inferred from its traceback's frames (envdoctor/triage/frameversions.py;
rules/knowledge/frames/ from scripts/derive_frame_index.py), and TRI014's certainty against that
range (issue 36, item 5).

The derive script runs on small git repositories made here (offline); triage reads an index derived
from such a repository; one test reads the shipped index on a frame of a real trl release."""

from __future__ import annotations

import importlib.util
import shutil
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pytest

from envdoctor.findings import Severity
from envdoctor.knowledge import fix_history, frame_index
from envdoctor.triage.logversions import LogVersion, describe, facts_for_advice
from tests.triage.helpers import findings, scan_bytes
from tests.triage.test_triage_fix_history import _commit, _git

ROOT = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="needs git")


def _load(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, ROOT / "scripts" / f"{name}.py")
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    spec.loader.exec_module(mod)
    return mod


@pytest.fixture(scope="module")
def derive() -> ModuleType:
    return _load("derive_frame_index")


@pytest.fixture(scope="module")
def derive_fixes() -> ModuleType:
    return _load("derive_fix_history")


V1 = """
    import os


    class GRPOTrainer:
        def _generate(self, prompts):
            outputs = self.llm.generate(prompts, sampling_params=self.sampling_params)
            return [o for o in outputs]
"""
# 0.2.0: two lines above the class move it down; the buggy line is still there
V2 = V1.replace("import os\n", "import os\n    import sys\n    import re\n")
# 0.3.0: the fix (a new guard; the old line gone)
V3 = V2.replace(
    "outputs = self.llm.generate(prompts, sampling_params=self.sampling_params)",
    "outputs = self.llm.generate(prompts, sampling_params=self.sampling_params) or []",
)
BUGGY = "outputs = self.llm.generate(prompts, sampling_params=self.sampling_params)"


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    r = tmp_path_factory.mktemp("frames")
    _git(r, "init", "-q", "-b", "main")
    _commit(r, {"trl/__init__.py": "", "trl/trainer/grpo_trainer.py": V1}, "Initial import")
    _git(r, "tag", "v0.1.0")
    _commit(r, {"trl/trainer/grpo_trainer.py": V2}, "More imports (#5)")
    _git(r, "tag", "v0.2.0")
    _commit(
        r, {"trl/trainer/grpo_trainer.py": V3}, "Fix 'NoneType' object is not iterable in generation (#12)"
    )
    _git(r, "tag", "v0.3.0")
    _git(r, "tag", "v0.4.0rc1")  # a pre-release: no release of the index
    return r


@pytest.fixture(scope="module")
def index(derive: ModuleType, repo: Path) -> dict:
    return derive.derive(
        repo / ".git", "trl", ("trl",), r"^v(\d+\.\d+\.\d+\w*)$", "2020-01-01", "huggingface/trl"
    )


def test_the_index_holds_each_functions_span_and_lines_per_release(index: dict, derive: ModuleType) -> None:
    assert index["schema"] == "envdoctor.frames/1" and index["releases"] == ["0.1.0", "0.2.0", "0.3.0"]
    rows = index["files"]["trainer/grpo_trainer.py"]["GRPOTrainer._generate"]
    # 0.1.0 at line 6; 0.2.0 moved down two lines (same text); 0.3.0 changed: three runs
    assert [(r0, r1, first) for r0, r1, first, _ in rows] == [(0, 0, 6), (1, 1, 8), (2, 2, 8)]
    assert rows[0][3] == rows[1][3] != rows[2][3]  # one body for the moved function
    body = index["bodies"][rows[0][3]]
    assert index["digits"] == 1 and len(body) == 3 and body[1] == derive.line_hash(BUGGY)


def test_unchanged_releases_are_one_run_and_the_version_line_gives_releases(
    derive: ModuleType, tmp_path: Path
) -> None:
    r = tmp_path / "zoo"
    r.mkdir()
    _git(r, "init", "-q", "-b", "main")
    f = "def f(x):\n    return x + 1\n"
    _commit(r, {"zoo/__init__.py": '__version__ = "2025.3.1"\n', "zoo/a.py": f}, "Release 2025.3.1")
    _commit(r, {"zoo/__init__.py": '__version__ = "2025.3.2"\n'}, "Release 2025.3.2")
    _commit(r, {"zoo/a.py": f.replace("return x + 1", "y = x * 2\n    return y + 1")}, "Change f")
    _commit(r, {"zoo/__init__.py": '__version__ = "2025.4.1"\n'}, "Release 2025.4.1")
    got = derive.derive(r / ".git", "zoo", ("zoo",), "", "2020-01-01")
    assert got["releases"] == ["2025.3.1", "2025.3.2", "2025.4.1"]
    assert [row[:3] for row in got["files"]["a.py"]["f"]] == [[0, 1, 1], [2, 2, 1]]


def test_the_script_keeps_to_its_budget(derive: ModuleType, repo: Path, tmp_path: Path) -> None:
    args = ["--git-dir", str(repo / ".git"), "--package", "trl", "--root", "trl", "--since", "2020-01-01"]
    assert derive.main([*args, "--tags", r"^v(\d+\.\d+\.\d+)$", "--out", str(tmp_path)]) == 0
    assert derive.main([*args, "--out", str(tmp_path / "b"), "--budget", "10"]) == 1


# -- triage against an index derived here ------------------------------------------------------------


@pytest.fixture
def shipped(
    derive: ModuleType, derive_fixes: ModuleType, index: dict, repo: Path, tmp_path: Path, monkeypatch
) -> Iterator[Path]:
    folder = tmp_path / "frames"
    derive.write(index, folder / "trl.json.gz")
    fixes = tmp_path / "fixes"
    history = derive_fixes.derive(
        repo / ".git", "trl", ("trl",), r"^v(\d+\.\d+\.\d+)$", "2020-01-01", "huggingface/trl"
    )
    derive_fixes.write(history, fixes / "trl.json.gz")
    monkeypatch.setattr(frame_index, "_dir", lambda: folder)
    monkeypatch.setattr(fix_history, "_dir", lambda: fixes)
    caches = (frame_index.frame_index, frame_index.packages, fix_history.fix_history, fix_history.packages)
    for c in caches:
        c.cache_clear()
    yield folder
    for c in caches:
        c.cache_clear()


def _log(
    line: int, code: str, head: str = "", message: str = "TypeError: 'NoneType' object is not iterable"
) -> str:
    return head + textwrap.dedent(
        f"""\
        Traceback (most recent call last):
          File "/home/u/train.py", line 40, in <module>
            trainer.train()
          File "/usr/lib/python3.11/site-packages/trl/trainer/grpo_trainer.py", line {line}, in _generate
            {code}
        {message}
        """
    )


def _versions(text: str) -> dict[str, LogVersion]:
    from envdoctor.triage.diagnose import scan_versions

    return scan_versions(scan_bytes(text))


def test_a_frame_places_the_run_in_the_releases_it_fits(shipped: Path) -> None:
    v = _versions(_log(7, BUGGY))["trl"]  # line 7 with the buggy text: 0.1.0 only
    assert (v.how, v.low, v.version, v.newest) == ("frames", "0.1.0", "0.1.0", False) and v.exact
    assert v.frames and "trainer/grpo_trainer.py:7 in _generate" in v.frames[0]
    v = _versions(_log(9, BUGGY))["trl"]  # two lines lower: 0.2.0 (0.3.0 has another text there)
    assert (v.low, v.version) == ("0.2.0", "0.2.0")
    assert "trl 0.2.0 (inferred from the traceback's frames)" in describe({"trl": v})
    # the line without its text: 0.2.0 and 0.3.0 both have the function over line 9
    v = _versions(_log(9, "").replace("\n\n", "\n"))["trl"]
    assert (v.low, v.version, v.newest) == ("0.2.0", "0.3.0", True) and not v.exact
    assert describe({"trl": v}).startswith("trl 0.2.0 to 0.3.0 or newer (inferred")
    # a line no release has there: no range
    assert "trl" not in _versions(_log(30, BUGGY))


def test_a_version_the_log_shows_wins_and_a_range_is_no_version_for_advice(shipped: Path) -> None:
    v = _versions(_log(6, BUGGY, head="trl==0.2.0\n"))["trl"]
    assert (v.how, v.version) == ("listing", "0.2.0")
    ranged = {"trl": LogVersion("0.3.0", 3, "frames", low="0.2.0", newest=True)}
    assert facts_for_advice(None, ranged) is None  # nothing exact to advise on
    exact = {"trl": LogVersion("0.1.0", 3, "frames", low="0.1.0")}
    facts = facts_for_advice(None, exact)
    assert facts is not None and facts.packages["trl"].version == "0.1.0"


def test_a_fix_after_the_whole_inferred_range_is_an_error(shipped: Path) -> None:
    (f,) = [f for f in findings(scan_bytes(_log(9, BUGGY))) if f.rule == "TRI014"]
    assert f.severity == Severity.ERROR and f.evidence["inferred"] == "0.2.0"
    assert "the traceback's frames place the run at trl 0.2.0" in f.message
    assert "pip install 'trl==0.3.0'" in f.fix


def test_a_range_that_may_hold_the_fix_is_a_warning(shipped: Path, monkeypatch) -> None:
    # frames that fit 0.2.0 and 0.3.0 (no text shown), a message the fix names: maybe fixed
    text = _log(9, "").replace("\n\n", "\n")
    (f,) = [f for f in findings(scan_bytes(text)) if f.rule == "TRI014"]
    assert f.severity == Severity.WARNING and "pip show trl" in f.message


def test_the_index_is_read_only_for_a_package_with_frames(shipped: Path, monkeypatch) -> None:
    def refuse(package: str) -> None:
        raise AssertionError(f"read the frame index of {package}")

    from envdoctor.triage import frameversions

    monkeypatch.setattr(frameversions, "frame_index", refuse)
    findings(scan_bytes("ValueError: temperature must be positive\n"))  # no frames
    findings(scan_bytes("step 1 loss 0.2\nstep 2 loss 0.1\n"))
    tb = 'Traceback (most recent call last):\n  File "/x/site-packages/torch/a.py", line 3, in f\n'
    tb += "    g()\nValueError: bad\n"
    findings(scan_bytes(tb))  # frames of a package without an index


def test_a_broken_index_file_is_passed_over(tmp_path: Path, monkeypatch) -> None:
    folder = tmp_path / "frames"
    folder.mkdir()
    (folder / "trl.json.gz").write_bytes(b"not gzip")
    monkeypatch.setattr(frame_index, "_dir", lambda: folder)
    frame_index.frame_index.cache_clear()
    try:
        assert frame_index.frame_index("trl") is None and frame_index.frame_index("verl") is None
    finally:
        frame_index.frame_index.cache_clear()
    bad = frame_index.FrameIndex("trl", "", ["0.1.0"], ["z"], {"a.py": {"f": [["x"], [0, 0, 1, 9], "no"]}})
    assert bad.fits("a.py", "f", 1) == frozenset()  # malformed rows are skipped
    assert bad.fits("b.py", "f", 1) is None and bad.fits("a.py", "g", 1) is None


def test_the_shipped_index_places_a_real_trl_frame() -> None:
    """trl 0.19.1's OnlineDPOTrainer.__init__ read ``model.config`` at line 176 (a release bug
    fixed in 0.20.0, huggingface/trl#3765): the frame with its line fits releases up to 0.19.1."""
    idx = frame_index.frame_index("trl")
    if idx is None:
        pytest.skip("no shipped trl frame index")
    fits = idx.fits(
        "trainer/online_dpo_trainer.py",
        "__init__",
        176,
        "self.is_encoder_decoder = model.config.is_encoder_decoder",
    )
    assert fits
    assert idx.releases[max(fits)] == "0.19.1"


def test_a_message_logged_before_its_traceback_is_read_with_the_frames_after_it(shipped: Path) -> None:
    """A wrapper logs the exception, then "Full traceback:" and the stack ending in the same line:
    the first failing line has no frames, the repeated one has them."""
    message = "TypeError: 'NoneType' object is not iterable"
    stack = _log(9, BUGGY, message=message)
    stack = stack.replace("Traceback (most recent call last):\n", "Full traceback:\n")
    (f,) = [f for f in findings(scan_bytes(f"{message}\n\n{stack}")) if f.rule == "TRI014"]
    assert f.severity == Severity.ERROR and "grpo_trainer.py:9 in _generate" in f.message


CALLER = """
    def outer(device):
        return inner(device_index=device.index_of_the_device)


    def inner(device_index):
        assert device_index is not None
"""


@pytest.mark.parametrize(
    ("subject", "severity"),
    [
        ("Fix the assertion error in outer's device (#7)", Severity.ERROR),  # names the failure
        ("Fix outer's device handling (#7)", Severity.WARNING),  # a caller's removed line alone
    ],
)
def test_a_callers_line_the_fix_removed_is_an_error_when_the_fix_names_the_failure(
    derive_fixes: ModuleType, tmp_path: Path, monkeypatch, subject: str, severity: Severity | None
) -> None:
    r = tmp_path / "repo"
    r.mkdir()
    _git(r, "init", "-q", "-b", "main")
    _commit(r, {"trl/a.py": CALLER}, "Initial import")
    _git(r, "tag", "v0.1.0")
    _commit(r, {"trl/a.py": CALLER.replace(".index_of_the_device", ".index_of_the_device or 0")}, subject)
    _git(r, "tag", "v0.2.0")
    history = derive_fixes.derive(r / ".git", "trl", ("trl",), r"^v(\d+\.\d+\.\d+)$", "2020-01-01", "o/trl")
    derive_fixes.write(history, tmp_path / "fixes" / "trl.json.gz")
    monkeypatch.setattr(fix_history, "_dir", lambda: tmp_path / "fixes")
    monkeypatch.setattr(frame_index, "_dir", lambda: tmp_path / "no-frames")
    for c in (fix_history.fix_history, fix_history.packages, frame_index.packages):
        c.cache_clear()
    log = textwrap.dedent(
        """\
        Traceback (most recent call last):
          File "/v/site-packages/trl/a.py", line 3, in outer
            return inner(device_index=device.index_of_the_device)
          File "/v/site-packages/trl/a.py", line 7, in inner
            assert device_index is not None
        AssertionError
        """
    )
    try:
        got = [f.severity for f in findings(scan_bytes(log)) if f.rule == "TRI014"]
    finally:
        for c in (fix_history.fix_history, fix_history.packages, frame_index.packages):
            c.cache_clear()
    assert got == ([severity] if severity else [])


def test_a_relative_path_of_the_package_is_read_too(shipped: Path) -> None:
    text = _log(7, BUGGY).replace("/usr/lib/python3.11/site-packages/trl/", "trl/")
    assert _versions(text)["trl"].version == "0.1.0"
