"""The raise-site index (scripts/derive_raise_sites.py -> rules/knowledge/raises/) and triage's uses of
it (envdoctor/triage/raisesites.py): a message with no frame placed in the package, function and
releases that raise it; a raise lifted in a later release (TRI014), one new in a release (TRI034),
TRI012's and TRI003's place. The derive script runs on a small git repository made here (offline);
triage reads an index derived from it."""

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
from envdoctor.knowledge import raise_sites
from envdoctor.knowledge.raise_sites import WILD, fit, locate
from tests.triage.helpers import findings, scan_bytes
from tests.triage.test_triage_fix_history import _commit, _git

ROOT = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="needs git")


def _script() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "derive_raise_sites", ROOT / "scripts" / "derive_raise_sites.py"
    )
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("derive_raise_sites", mod)
    spec.loader.exec_module(mod)
    return mod


CLIENT_V1 = """
    class Client:
        def chat(self, messages, tools=None, temperature=1.0):
            if temperature <= 0:
                raise RuntimeError(f"The generation server answered an unreadable payload: {temperature}")
            if tools is not None:
                raise NotImplementedError("Tool calling is not yet implemented in Client.chat().")
            return messages

        def generate(self, prompts, n=1, batch=1):
            return prompts
"""
CLIENT_V2 = CLIENT_V1.replace(
    "            return prompts\n",
    '            assert batch % n == 0, "The rewards and the completions disagree in length after scoring"\n'
    "            return prompts\n",
)
_TOOLS = " " * 16 + 'raise NotImplementedError("Tool calling is not yet implemented in Client.chat().")\n'
CLIENT_V3 = CLIENT_V2.replace("            if tools is not None:\n" + _TOOLS, "")
OTHER = """
    def check(mode):
        if mode == "colocate":
            raise ValueError("Colocation is only supported with use_vllm=True, please set use_vllm=True.")
        raise RuntimeError("CUDA out of memory. Tried to allocate %d GiB" % 2)

    def union(a, b):
        assert len(a) == len(b), f"Two tensor dicts must have identical batch size. Got {len(a)} and {len(b)}"

    def place(t):
        raise RuntimeError("Expected all tensors to be on the same device, but found at least two devices")
"""


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    r = tmp_path_factory.mktemp("trl-repo")
    _git(r, "init", "-q", "-b", "main")
    _commit(r, {"trl/__init__.py": "", "trl/client.py": CLIENT_V1, "trl/other.py": OTHER}, "Initial import")
    _git(r, "tag", "v0.1.0")
    _commit(r, {"trl/client.py": CLIENT_V2}, "Check the generation batch (#7)")
    _git(r, "tag", "v0.2.0")
    _commit(r, {"trl/client.py": CLIENT_V3}, "Add tool calling support to Client.chat() (#12)")
    _git(r, "tag", "v0.3.0")
    return r


@pytest.fixture(scope="module")
def derived(repo: Path) -> dict[str, object]:
    return _script().derive(
        repo / ".git", "trl", ("trl",), r"^v(\d+\.\d+\.\d+)$", "2020-01-01", "huggingface/trl"
    )


def _site(data: dict[str, object], text: str) -> tuple[int, list[object]]:
    sites = data["sites"]
    assert isinstance(sites, list)
    return next((i, s) for i, s in enumerate(sites) if text in s[1])


def test_templates_of_fstrings_percent_format_and_concatenation() -> None:
    import ast

    t = _script().template

    def tpl(expr: str) -> str | None:
        return t(ast.parse(expr, mode="eval").body)

    assert tpl('f"temperature must be positive, got {t}"') == f"temperature must be positive, got{WILD}"
    assert tpl('"max_len %d exceeds the limit of %s tokens" % (a, b)') == (
        f"max_len{WILD}exceeds the limit of{WILD}tokens"
    )
    assert tpl('"{} is not supported with {name}; use {{x}}".format(a, name=b)') == (
        f"{WILD}is not supported with{WILD}; use {{x}}"
    )
    assert (
        tpl('"the model " + name + " has no value head attached"')
        == f"the model{WILD}has no value head attached"
    )
    assert tpl("msg") is None  # a variable: nothing to match
    assert tpl('f"{a}{b}"') is None  # no literal text


def test_derive_records_releases_lifts_and_new_checks(derived: dict[str, object]) -> None:
    assert derived["releases"] == ["0.1.0", "0.2.0", "0.3.0"]
    i, tool = _site(derived, "Tool calling")
    assert tool[0] == "NotImplementedError" and tool[3] == "Client.chat" and tool[4] == [[0, 1]]
    lifted = derived["lifted"]
    assert isinstance(lifted, dict)
    release, sha, title, number, says = lifted[str(i)]
    assert (release, number, says) == ("0.3.0", "12", 1) and title.startswith("Add tool calling") and sha
    j, temp = _site(derived, "unreadable payload")
    assert temp[4] == [[0, 2]] and str(j) not in lifted  # raised in every release: nothing lifted
    k, batch = _site(derived, "disagree in length")
    assert batch[0] == "AssertionError" and batch[4] == [[1, 2]] and str(k) not in lifted


def test_derive_excludes_a_removal_commit_of_a_held_out_thread(repo: Path, tmp_path: Path) -> None:
    script = _script()
    urls = tmp_path / "exclude.txt"
    urls.write_text("https://github.com/huggingface/trl/pull/12\n")
    data = script.derive(
        repo / ".git",
        "trl",
        ("trl",),
        r"^v(\d+\.\d+\.\d+)$",
        "2020-01-01",
        "huggingface/trl",
        exclude=script.fixes.exclusions(urls, "huggingface/trl"),
        threads=script.fixes.thread_keys(urls),
    )
    i, _ = _site(data, "Tool calling")
    lifted = data["lifted"]
    assert isinstance(lifted, dict)
    assert lifted[str(i)][:2] == ["0.3.0", ""]  # told by its release only


def test_main_writes_the_index(repo: Path, tmp_path: Path) -> None:
    out = tmp_path / "raises"
    args = ["--git-dir", str(repo / ".git"), "--package", "trl", "--root", "trl", "--since", "2020-01-01"]
    assert _script().main([*args, "--tags", r"^v(\d+\.\d+\.\d+)$", "--out", str(out)]) == 0
    assert (out / "trl.json.gz").is_file()


@pytest.fixture
def index(derived: dict[str, object], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """Triage reads the index derived from the small repository (and a second package's)."""
    script = _script()
    script.frames.write(derived, tmp_path / "trl.json.gz")
    other = dict(derived, package="peft", source="huggingface/peft")
    sites = [s for s in derived["sites"] if "same device" in s[1]]  # type: ignore[union-attr]
    script.frames.write(dict(other, sites=sites, lifted={}), tmp_path / "peft.json.gz")
    monkeypatch.setattr(raise_sites, "_dir", lambda: tmp_path)
    raise_sites.raise_index.cache_clear()
    raise_sites.packages.cache_clear()
    yield tmp_path
    raise_sites.raise_index.cache_clear()
    raise_sites.packages.cache_clear()


def test_fit_reads_cut_wrapped_and_quoted_messages() -> None:
    tpl = f"The model{WILD}has{WILD}layers but the adapter expects{WILD}; reload it"
    assert fit(tpl, "The model llama has 32 layers but the adapter expects 28; reload it") == (53, True)
    assert fit(tpl, 'I get "The model llama has 32 layers but the adapter expects 28; reload it" here')
    got = fit(tpl, "The model llama has 32 layers but the adapter exp")
    assert got is not None and not got[1]  # cut inside a literal part
    assert fit(tpl, "The model llama has 32 heads and the adapter expects 28") is None
    # hostile input: a long message of near-misses is read in one pass
    assert fit(tpl, "The model " + "has " * 200_000) is None


def test_one_line_message_lifted_in_a_later_release(index: Path) -> None:
    fs = findings(scan_bytes("NotImplementedError: Tool calling is not yet implemented in Client.chat().\n"))
    f = next(f for f in fs if f.rule == "TRI014")
    assert f.severity == Severity.ERROR
    assert "trl 0.1.0–0.2.0 raises this in client.py in Client.chat" in f.message
    assert (
        "trl 0.3.0 no longer does" in f.message and "https://github.com/huggingface/trl/pull/12" in f.message
    )
    assert f.fix.startswith("pip install 'trl>=0.3.0'")


def test_cut_message_is_still_placed(index: Path) -> None:
    fs = findings(scan_bytes("NotImplementedError: Tool calling is not yet implemented in Cli\n"))
    assert any(f.rule == "TRI014" for f in fs)


def test_log_version_outside_the_raise_releases_contradicts_it(index: Path) -> None:
    from envdoctor.triage.logversions import LogVersion
    from envdoctor.triage.raisesites import locate_tb
    from envdoctor.triage.traceback import Traceback

    class _Log:
        versions = {"trl": LogVersion("0.3.0", 1, "listing")}

    tb = Traceback(
        exc_type="NotImplementedError", message="Tool calling is not yet implemented in Client.chat()."
    )
    assert locate_tb(tb, _Log()) is None  # type: ignore[arg-type]
    _Log.versions = {"trl": LogVersion("0.4.0", 1, "listing")}  # a release past the index's: past the lift
    assert locate_tb(tb, _Log()) is None  # type: ignore[arg-type]
    _Log.versions = {"trl": LogVersion("0.2.0", 1, "listing")}
    loc = locate_tb(tb, _Log())  # type: ignore[arg-type]
    assert loc is not None and loc.lift is not None and loc.shown == "0.2.0"


def test_raise_in_every_release_gives_no_lift(index: Path) -> None:
    fs = findings(scan_bytes("RuntimeError: The generation server answered an unreadable payload: b''\n"))
    assert not any(f.rule in ("TRI014", "TRI034") for f in fs)
    tri003 = next(f for f in fs if f.rule == "TRI003")
    assert "raises this in client.py in Client.chat" in tri003.message  # TRI003 says where


def test_raise_new_in_a_release(index: Path) -> None:
    fs = findings(
        scan_bytes("AssertionError: The rewards and the completions disagree in length after scoring\n")
    )
    assert [x.rule for x in fs] == ["TRI034"], fs
    f = fs[0]
    assert f.severity == Severity.WARNING and "before 0.2.0 have no such raise" in f.message


def test_refusal_without_frame_names_the_package(index: Path) -> None:
    fs = findings(
        scan_bytes("ValueError: Colocation is only supported with use_vllm=True, please set use_vllm=True.\n")
    )
    f = next(f for f in fs if f.rule == "TRI012")
    assert "other.py in check" in f.message and "shows no frame to say which" not in f.message


def test_generic_and_shared_messages_are_pinned_on_no_package(index: Path) -> None:
    assert locate("CUDA out of memory. Tried to allocate 2 GiB") == []
    hits = locate("Expected all tensors to be on the same device, but found at least two devices")
    assert {h.site.package for h in hits} == {"trl", "peft"}
    fs = findings(
        scan_bytes(
            "RuntimeError: Expected all tensors to be on the same device, but found at least two devices\n"
        )
    )
    assert not any("raise-site" in f.message or f.rule in ("TRI014", "TRI034") for f in fs)


def test_a_frame_of_another_package_raising_keeps_the_message_unplaced(index: Path) -> None:
    log = textwrap.dedent(
        """\
        Traceback (most recent call last):
          File "/usr/lib/python3.11/site-packages/vllm/entrypoints/llm.py", line 10, in chat
            raise NotImplementedError("Tool calling is not yet implemented in Client.chat().")
        NotImplementedError: Tool calling is not yet implemented in Client.chat().
        """
    )
    assert not any(f.rule == "TRI014" for f in findings(scan_bytes(log)))


def test_the_shipped_index_is_read_lazily() -> None:
    """The static check never reads it: only triage's fallback asks (``locate``)."""
    import envdoctor.knowledge.raise_sites as rs

    assert (rs.raise_index.cache_info().maxsize or 0) >= len(rs.packages())
    folder = ROOT / "rules" / "knowledge" / "raises"
    assert sum(p.stat().st_size for p in folder.glob("*.json.gz")) < 4_000_000


def test_shipped_index_lifts_trl_tool_calling_over_a_catalogue_warning() -> None:
    """TRL's VLLMClient.chat refused tools in server mode until 1.0.0 (huggingface/trl#4889): the
    one-line paste gets the upgrade as an error beside the catalogue's likely entry."""
    raise_sites.raise_index.cache_clear()
    raise_sites.packages.cache_clear()
    fs = findings(
        scan_bytes("NotImplementedError: Tool calling is not yet implemented in VLLMClient.chat().\n")
    )
    f = next(f for f in fs if f.rule == "TRI014")
    assert f.severity == Severity.ERROR and "VLLMClient.chat" in f.message
    assert f.fix.startswith("pip install 'trl>=1.0.0'")


def test_vendored_copies_are_not_indexed(tmp_path: Path) -> None:
    r = tmp_path / "repo"
    r.mkdir()
    _git(r, "init", "-q", "-b", "main")
    vendored = (
        'def init():\n    raise ValueError("No available memory for the cache blocks. Try increasing it.")\n'
    )
    _commit(r, {"verl/__init__.py": "", "verl/third_party/vllm/engine.py": vendored}, "Initial import")
    _git(r, "tag", "v0.1.0")
    data = _script().derive(r / ".git", "verl", ("verl",), r"^v(\d+\.\d+\.\d+)$", "2020-01-01")
    assert data["sites"] == []


def test_a_data_structure_assertion_is_no_refusal_of_the_configuration(index: Path) -> None:
    """A "must" message placed in a function that checks no configuration (a data structure's own
    assertion): TRI003 with its place, not TRI012."""
    fs = findings(
        scan_bytes("AssertionError: Two tensor dicts must have identical batch size. Got 1024 and 4096\n")
    )
    assert [f.rule for f in fs] == ["TRI003"] and "other.py in union" in fs[0].message


def test_a_short_paste_quoting_the_message_without_its_type(index: Path) -> None:
    paste = (
        'With tools the run stops with\n"Tool calling is not yet implemented in Client.chat()."\nany idea?\n'
    )
    f = next(f for f in findings(scan_bytes(paste)) if f.rule == "TRI014")
    assert f.severity == Severity.ERROR and "line 2" in f.message
    # a long log is no paste: its lines are not read one by one (a healthy run prints its own text)
    long = "step 1 loss 0.5\n" * 60 + paste
    assert not any(f.rule == "TRI014" for f in findings(scan_bytes(long)))
    # a paste whose message every release raises: nothing to lift
    same = 'it says "The generation server answered an unreadable payload: 0"\n'
    assert not any(f.rule == "TRI014" for f in findings(scan_bytes(same)))


def test_a_message_holding_every_template_is_read_in_bounded_candidates(index: Path) -> None:
    """Hostile input: a message made of the index's own messages, repeated, tries at most
    ``MAX_CANDIDATES`` sites a package and cuts the message at ``MAX_MESSAGE``."""
    index_trl = raise_sites.raise_index("trl")
    assert index_trl is not None
    text = " ".join(str(r[1]).replace(WILD, " x ") for r in index_trl.rows) * 500
    assert len(index_trl.candidates(text)) <= raise_sites.MAX_CANDIDATES
    assert len(locate(text)) <= raise_sites.MAX_HITS


def test_a_removal_lifts_the_restriction_only_when_its_message_says_so() -> None:
    lifts = _script().lifts
    tpl = "Tool calling is not yet implemented in VLLMClient.chat()."
    assert lifts("feat: Add tool calling support to VLLMClient.chat() (#4889)", "", tpl)
    assert lifts("Support iterable datasets in GRPO (#6351)", "", "Iterable datasets are not yet supported.")
    # a commit that adds or moves a check, or one that names nothing of the message, lifts nothing
    peft = "PEFT is not installed and you passed a `peft_config` in the trainer's kwargs"
    assert not lifts("Fix missing PEFT availability check when passing peft_config (#5665)", "", peft)
    assert not lifts("Refactor DPO (#3906)", "", "Support for kto_pair has been removed in DPOTrainer.")
    assert not lifts("Fix the scheduler (#12)", "", tpl)
    # a rewrite whose squashed sub-commits name a fix and the feature on separate lines
    packing = "You passed a `DataCollatorForCompletionOnlyLM` to the SFTTrainer. This is not compatible"
    body = (
        "* Refactor SFTTrainer and SFTConfig\n* Fix SFTConfig torch_dtype validation\n* Remove pack_dataset"
    )
    assert not lifts("SFT simplification (#2405)", body, packing)
    assert not lifts("Update trainer (#1)", body, packing)
    assert lifts("Update trainer (#1)", "* Support DataCollatorForCompletionOnlyLM with packing", packing)


def test_a_message_wrapped_over_two_lines_is_placed(index: Path) -> None:
    log = "NotImplementedError: Tool calling is not yet\n    implemented in Client.chat().\n"
    assert any(f.rule == "TRI014" for f in findings(scan_bytes(log)))


def test_too_short_a_piece_of_a_message_is_placed_nowhere(index: Path) -> None:
    assert locate("Tool calling is") == [] and locate("NotImplementedError: Tool calling") == []


def test_a_whole_sentence_is_not_read_as_the_start_of_a_longer_message(index: Path) -> None:
    """ "Tool calling is not yet implemented." ends its sentence: not a cut copy of the longer raise."""
    assert locate("Tool calling is not yet implemented.") == []
    assert locate("Tool calling is not yet implemented in Cl")  # no end: cut


def test_tri003_with_the_package_frame_shown_does_not_say_it_is_missing(index: Path) -> None:
    log = textwrap.dedent(
        """\
        Traceback (most recent call last):
          File "/usr/lib/python3.11/site-packages/trl/client.py", line 5, in chat
            raise RuntimeError(f"The generation server answered an unreadable payload: {temperature}")
        RuntimeError: The generation server answered an unreadable payload: 0
        """
    )
    tri003 = next(f for f in findings(scan_bytes(log)) if f.rule == "TRI003")
    assert "trl 0.1.0–0.3.0 raises this in client.py in Client.chat" in tri003.message
    assert "the log shows no frame of it" not in tri003.message


def test_a_refusal_quoted_without_its_class_or_final_stop_is_the_packages_own_check():
    """vLLM's "Total number of attention heads (40) must be divisible by tensor parallel size (6)."
    pasted alone, without "ValueError:" and without its final stop: placed in vLLM's raise sites
    (whole but the stop), read as the ValueError it is, answered with the divisors."""
    from tests.triage.helpers import findings, scan_bytes

    for line in (
        "Total number of attention heads (40) must be divisible by tensor parallel size (6)\n",
        "Total number of attention heads (40) must be divisible by tensor parallel size (6).\n",
    ):
        (f,) = findings(scan_bytes(line))
        assert f.rule == "TRI012" and f.severity.value == "error"
        assert "tensor_parallel_size" in f.fix and "a divisor of 40" in f.fix
    assert (
        findings(scan_bytes("the heads of the attention are many and the parallel size is six today\n")) == []
    )


def test_the_interpreters_own_messages_and_the_lazy_import_wrapper_are_placed_nowhere() -> None:
    """Python's own TypeError (``len(None)`` anywhere) and transformers' lazy-import wrapper (it
    reports another import's failure) name no raise of a package, though a package's ``raise``
    copies their words (vLLM's llava_onevision2, set 23's f011 on a DeepSpeed frame; set 24's b003)."""
    raise_sites.raise_index.cache_clear()
    raise_sites.packages.cache_clear()
    assert locate("object of type 'NoneType' has no len()", "TypeError") == []
    wrapper = "Could not import module 'PreTrainedModel'. Are this object's requirements defined correctly?"
    assert locate(wrapper, "ModuleNotFoundError") == []
    fs = findings(scan_bytes(b"TypeError: object of type 'NoneType' has no len()\n"))
    assert not any(f.rule in ("TRI014", "TRI034") or "raise-site" in f.message for f in fs)
    fs = findings(scan_bytes(f"ModuleNotFoundError: {wrapper}\n".encode()))
    assert not any(f.rule in ("TRI014", "TRI034") for f in fs)
    # a package's own words are still placed (quiet scenario)
    assert locate("Tool calling is not yet implemented in VLLMClient.chat().", "NotImplementedError")


_COPY = (
    "You are attempting batched generation with padding_side='right' for the Flash Attention "
    "version of {}. Make sure to pad on the left."
)


def _model(name: str, raises: bool) -> str:
    check = f'        if x:\n            raise ValueError("{_COPY.format(name)}")\n' if raises else ""
    return f"class {name}Model:\n    def mask(self, x):\n{check}        return x\n"


@pytest.fixture
def copied(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A package whose check is copied from one model class to the next: Llama's from 0.1.0, Qwen's
    copy added in 0.2.0 to a function that 0.1.0 already had."""
    r = tmp_path / "repo"
    r.mkdir()
    _git(r, "init", "-q", "-b", "main")
    files = {
        "pkg/__init__.py": "",
        "pkg/llama.py": _model("Llama", True),
        "pkg/qwen.py": _model("Qwen", False),
    }
    _commit(r, files, "Initial import")
    _git(r, "tag", "v0.1.0")
    _commit(r, {"pkg/qwen.py": _model("Qwen", True)}, "Copy the padding check to Qwen (#3)")
    _git(r, "tag", "v0.2.0")
    script = _script()
    data = script.derive(r / ".git", "trl", ("pkg",), r"^v(\d+\.\d+\.\d+)$", "2020-01-01", "huggingface/trl")
    out = tmp_path / "index"
    out.mkdir()
    script.frames.write(data, out / "trl.json.gz")
    monkeypatch.setattr(raise_sites, "_dir", lambda: out)
    raise_sites.raise_index.cache_clear()
    raise_sites.packages.cache_clear()
    yield out
    raise_sites.raise_index.cache_clear()
    raise_sites.packages.cache_clear()


def test_a_check_copied_from_an_older_class_is_not_new_in_the_copys_release(copied: Path) -> None:
    """Qwen's copy of the check came with 0.2.0, but Llama's copy of the same words raised in 0.1.0:
    the check did not come with 0.2.0 (no TRI034, no pin below it; set 24's b011)."""
    hits = locate(_COPY.format("Qwen"), "ValueError")
    assert hits and hits[0].site.added and hits[0].site.first == "0.2.0"
    fs = findings(scan_bytes(f"ValueError: {_COPY.format('Qwen')}\n".encode()))
    assert not any(f.rule == "TRI034" for f in fs), fs
    assert any(f.rule == "TRI003" for f in fs)
