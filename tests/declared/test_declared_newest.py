"""DCL009: TRL declared with no upper bound gets, on a fresh install, the newest release the declared
requirements allow; a config key that release removed stops every such install (TiandaSun/KG_GRPO,
hama-jp/Open-R1_Tutorial, yoenoo/unsloth_vllm_profiling: max_prompt_length with trl unpinned or
trl>=0.14.0, after TRL 0.28.0 removed it)."""

from __future__ import annotations

import pytest

from tests.conftest import run_cli
from tests.declared.stack_repos import CONFIGS, committed_repo


def _hook(repo, *rules: str) -> str:
    out = run_cli("hook", *CONFIGS, *[a for r in rules for a in ("--select", r)], cwd=repo)
    assert out.returncode in (0, 1), out.stderr
    return " ".join(out.stdout.split())


@pytest.mark.parametrize("line", ["trl>=0.14.0", "trl", "trl[vllm]>=0.18"])
def test_an_open_range_resolves_to_the_newest_release_which_refuses_the_key(tmp_path, line):
    repo = committed_repo(tmp_path, {"requirements.txt": line + "\n"})
    text = _hook(repo, "DCL009", "DCL001")
    assert (
        "DCL009" in text and "max_prompt_length" in text and "removed `max_prompt_length` in 0.28.0" in text
    )
    # one finding per key: which release a fresh install gets, not that the range spans it
    assert "spans the removal of `max_prompt_length`" not in text


def test_a_pin_of_a_dependency_holds_trl_back(tmp_path):
    # transformers 4.46 is below what TRL 0.28+ requires: pip backtracks to an older TRL
    repo = committed_repo(tmp_path, {"requirements.txt": "trl>=0.14.0\ntransformers==4.46.0\n"})
    assert "DCL009" not in _hook(repo, "DCL009")


@pytest.mark.parametrize(
    "files",
    [
        {"requirements.txt": "trl>=0.14.0,<0.28\n"},  # an upper bound: DCL001's to judge
        {"requirements.txt": "trl==0.27.2\n"},
        {
            "requirements.txt": "trl>=0.14.0\n",
            ".gitmodules": '[submodule "trl"]\n\tpath = trl\n\turl = https://github.com/me/trl\n',
        },
        {
            "requirements.txt": "trl>=0.14.0\n",
            "README.md": "```bash\npip install trl==0.19.0\npip install -r requirements.txt\n```\n",
        },
    ],
)
def test_quiet_where_the_release_is_bounded_or_trl_comes_from_elsewhere(tmp_path, files):
    repo = committed_repo(tmp_path, files)
    assert "DCL009" not in _hook(repo, "DCL009")
