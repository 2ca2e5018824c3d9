"""TRL installed from a git commit (a README's clone + checkout + ``pip install -e .``, a bare
``git+https://…/trl.git@SHA`` in a requirements file or a README's pip line) is declared: placed
by rules/knowledge/trl_commits.txt and judged as the release it installs as, never "TRL is not
declared" (PKG008). Issue 35, WncFht/RLCR."""

from __future__ import annotations

import json

from tests.conftest import run_cli
from tests.declared.stack_repos import CONFIGS, committed_repo

SHA = "69ad852e5654a77f1695eb4c608906fe0c7e8624"  # TRL main between 0.15.2 and 0.16.0
CLONE = f"""# Setup

```bash
conda env create -f environment.yml
```

### TRL Installation

```bash
cd ../
git clone https://github.com/huggingface/trl.git
cd trl/
git checkout {SHA}
pip install -e .
```
"""
ENV = "dependencies:\n  - pip:\n      - torch==2.5.1\n      - vllm==0.7.3\n      - transformers==4.48.3\n"


def _hook(repo, *extra):
    out = run_cli("hook", "--format", "json", *CONFIGS, *extra, cwd=repo)
    assert out.returncode in (0, 1), out.stderr
    (item,) = json.loads(out.stdout)["files"]
    return item["report"]


def _stack(report):
    return report["extra"]["declared_stack"] if "declared_stack" in report.get("extra", {}) else report


def test_a_readme_clone_checkout_and_editable_install_declares_trl_at_that_commit(tmp_path):
    repo = committed_repo(tmp_path, {"README.md": CLONE, "environment.yml": ENV})
    report = _hook(repo)
    rules = {f["rule"] for f in report["findings"]}
    assert "PKG008" not in rules, report["findings"]
    said = json.dumps(report)
    assert "0.16.0.dev0" in said and f"trl.git@{SHA} (README.md:14)" in said
    from envdoctor.commands.hook_stack import declared_facts

    facts = declared_facts([], [], repo)
    assert facts.version("trl") == "0.16.0.dev0"
    assert facts.version("vllm") == "0.7.3"  # environment.yml's, the README adds only TRL


def test_a_bare_git_url_of_trl_in_requirements_or_a_readme_pip_line_is_placed(tmp_path):
    from envdoctor.commands.hook_stack import declared_facts

    url = f"git+https://github.com/huggingface/trl.git@{SHA}"
    req = committed_repo(tmp_path / "req", {"requirements.txt": f"torch==2.5.1\n{url}\n"})
    assert declared_facts([], [], req).version("trl") == "0.16.0.dev0"
    assert "PKG008" not in {f["rule"] for f in _hook(req)["findings"]}
    readme = committed_repo(tmp_path / "readme", {"README.md": f"```\n$ pip install {url}\n```\n"})
    assert declared_facts([], [], readme).version("trl") == "0.16.0.dev0"


def test_a_readme_step_never_overrides_a_declaration_file_and_never_stops_the_hook(tmp_path):
    from envdoctor.commands.hook_stack import declared_facts

    repo = committed_repo(
        tmp_path / "a",
        {
            "requirements.txt": "trl==0.18.0\n",
            "README.md": "```\npip install trl==0.14.0 vllm==0.8.5.post1\npip install vllm==0.7.2\n```\n",
        },
    )
    facts = declared_facts([], [], repo)
    assert facts.version("trl") == "0.18.0" and facts.version("vllm") == "0.8.5.post1"
    assert "DCL004" not in {f["rule"] for f in _hook(repo)["findings"]}
    binary = committed_repo(tmp_path / "b", {"requirements.txt": "trl==0.18.0\n"})
    (binary / "README.md").write_bytes(b"\xff\xfe\x00bad")
    assert declared_facts([], [], binary).version("trl") == "0.18.0"
    # prose outside a fenced block is not a step
    prose = committed_repo(tmp_path / "c", {"README.md": "Run pip install trl==0.14.0 first.\n"})
    assert declared_facts([], [], prose).version("trl") is None
