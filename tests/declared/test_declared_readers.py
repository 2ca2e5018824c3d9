"""Each declared-stack reader on real files: names, specifiers, file and line."""

from __future__ import annotations

from pathlib import Path

import pytest

from envdoctor.errors import InputError
from envdoctor.facts.declared import discover, is_declaration, read_stack
from envdoctor.facts.declared.requirements import MAX_DEPTH
from envdoctor.facts.declared.resolve import entries


def stack(root: Path, files: dict[str, str]):
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    return read_stack(discover(root), root)


def where(found) -> dict[str, str]:
    return {d.text: d.where for d in found.declarations}


def test_requirements_comments_continuations_options_and_includes(tmp_path):
    found = stack(
        tmp_path,
        {
            "requirements.txt": "# the stack\n--extra-index-url https://download.pytorch.org/whl/cu124\n"
            "torch==2.6.0  # pinned for vLLM\ntrl[vllm]==0.18.0 \\\n"
            "    --hash=sha256:00\n-r requirements/base.txt\n-e .\n"
            "git+https://github.com/huggingface/trl.git\n"
            "flash-attn; sys_platform == 'darwin'\n",
            "requirements/base.txt": "transformers==4.52.3\n-c ../constraints.txt\n-r ../requirements.txt\n",
            "constraints.txt": "accelerate>=1.4\n",
        },
    )
    assert where(found) == {
        "torch==2.6.0": "requirements.txt:3",
        "trl[vllm]==0.18.0": "requirements.txt:4",
        # a bare git URL: pip finds the name, envdoctor names it after the repository (issue 35)
        "trl @ git+https://github.com/huggingface/trl.git": "requirements.txt:8",
        "transformers==4.52.3": "requirements/base.txt:1",
        "accelerate>=1.4": "constraints.txt:1",
    }
    assert any("a cycle" in n for n in found.notes)


def test_include_depth_is_bounded_and_a_missing_include_names_the_line(tmp_path):
    files = {f"r{i}.txt": f"-r r{i + 1}.txt\npkg{i}==1.0\n" for i in range(MAX_DEPTH + 3)}
    found = stack(tmp_path, {"requirements.txt": "-r r0.txt\n", **files})
    assert len(found.declarations) == MAX_DEPTH
    assert any("nested more than" in n for n in found.notes)
    with pytest.raises(InputError, match=r"requirements-x.txt:2.*no such file"):
        stack(tmp_path / "m", {"requirements-x.txt": "torch==2.6.0\n-r gone.txt\n"})


def test_pyproject_extras_groups_and_uv_tables(tmp_path):
    found = stack(
        tmp_path,
        {
            "pyproject.toml": """\
[project]
name = "trainer"
version = "0.1"
dependencies = ["trl>=0.17", 'torch==2.6.0 ; sys_platform == "linux"']
[project.optional-dependencies]
vllm = ["vllm==0.8.5.post1"]
[dependency-groups]
dev = ["pytest", {include-group = "gpu"}]
gpu = ["deepspeed==0.16.8"]
[tool.uv]
override-dependencies = ["transformers==4.52.3"]
[tool.uv.sources]
trl = { git = "https://github.com/huggingface/trl" }
"""
        },
    )
    assert where(found) == {
        "trainer==0.1": "pyproject.toml:2",  # the repository's own package
        "trl>=0.17": "pyproject.toml:4",
        "torch==2.6.0": "pyproject.toml:4",
        "vllm==0.8.5.post1": "pyproject.toml:6",
        "pytest": "pyproject.toml:8",
        "deepspeed==0.16.8": "pyproject.toml:9",
        "transformers==4.52.3": "pyproject.toml:11",
    }
    assert any("[tool.uv.sources] trl" in n for n in found.notes)


def test_locks_pin_exactly_and_win_over_requirements(tmp_path):
    found = stack(
        tmp_path,
        {
            "requirements.txt": "torch>=2.5\n",
            "uv.lock": 'version = 1\n\n[[package]]\nname = "torch"\nversion = "2.6.0"\n',
            "pylock.toml": 'lock-version = "1.0"\n[[packages]]\nname = "trl"\nversion = "0.18.0"\n',
            "poetry.lock": '[[package]]\nname = "vllm"\nversion = "0.8.5.post1"\n',
        },
    )
    assert where(found) == {
        "torch==2.6.0": "uv.lock:4",
        "trl==0.18.0": "pylock.toml:3",
        "vllm==0.8.5.post1": "poetry.lock:2",
        "torch>=2.5": "requirements.txt:1",
    }
    stack_ = entries(found, {})
    assert (stack_["torch"].version, stack_["torch"].how) == ("2.6.0", "locked")
    assert entries(found, {"torch": "2.7.0"})["torch"].how == "assumed"


def test_conda_environment_pip_section_and_mapped_conda_pins(tmp_path):
    found = stack(
        tmp_path,
        {
            "environment.yml": """\
name: grpo
dependencies:
  - python=3.11
  - pytorch::pytorch=2.6.0
  - pytorch-cuda=12.4
  - transformers>=4.52
  - numpy=2.1
  - pip:
    - trl[vllm]==0.18.0
    - -r requirements-gpu.txt
""",
            "requirements-gpu.txt": "vllm==0.8.5.post1\n",
        },
    )
    assert where(found) == {
        "python==3.11.*": "environment.yml:3",
        "torch==2.6.0": "environment.yml:4",
        "transformers>=4.52": "environment.yml:6",
        "numpy==2.1.*": "environment.yml:7",
        "trl[vllm]==0.18.0": "environment.yml:9",
        "vllm==0.8.5.post1": "requirements-gpu.txt:1",
    }


def test_dockerfile_run_lines_with_continuations(tmp_path):
    found = stack(
        tmp_path,
        {
            "Dockerfile": """\
FROM nvidia/cuda:12.4.1-devel-ubuntu22.04
ARG TRL=0.18.0
RUN apt-get update && apt-get install -y git \\
    && pip3 install --no-cache-dir -U \\
        # the torch vLLM 0.8.5 is built for
        torch==2.6.0 \\
        --index-url https://download.pytorch.org/whl/cu124 \\
    && python -m pip install "vllm==0.8.5.post1" trl==$TRL
RUN uv pip install --system -r requirements.txt 'transformers==4.52.3'
CMD ["pip", "install", "never==1.0"]
""",
            "requirements.txt": "deepspeed==0.16.8\n",
        },
    )
    assert where(found) == {
        "torch==2.6.0": "Dockerfile:6",
        "vllm==0.8.5.post1": "Dockerfile:8",
        "transformers==4.52.3": "Dockerfile:9",
        "deepspeed==0.16.8": "requirements.txt:1",
    }
    assert any("trl==$TRL uses a build variable" in n for n in found.notes)


def test_setup_py_is_read_never_run(tmp_path):
    found = stack(tmp_path, {"setup.py": "open('RAN', 'w').write('x')\n"})
    assert found.declarations == [] and not (tmp_path / "RAN").exists()
    assert any(n.startswith("setup.py: no setup(...) call; not read") for n in found.notes)


@pytest.mark.parametrize(
    "name, text",
    [("pyproject.toml", "[project\n"), ("uv.lock", "x = \n"), ("environment.yml", "dependencies: [a\n")],
)
def test_malformed_files_are_input_errors_naming_them(tmp_path, name, text):
    with pytest.raises(InputError) as err:
        stack(tmp_path, {name: text})
    assert name in str(err.value)


def test_which_files_are_declarations():
    yes = [
        "requirements.txt",
        "requirements-gpu.txt",
        "requirements/train.in",
        "pyproject.toml",
        "uv.lock",
        "pylock.toml",
        "pylock.gpu.toml",
        "poetry.lock",
        "environment.yml",
        "docker/Dockerfile",
        "train.Dockerfile",
        "setup.py",
        "setup.cfg",
    ]
    no = ["README.txt", "configs/grpo.yaml", "notes/train.txt", "setup_utils.py"]
    assert all(map(is_declaration, yes)) and not any(map(is_declaration, no))


def test_notes_mask_credentials_and_control_characters(tmp_path):
    found = stack(
        tmp_path, {"requirements.txt": "-r https://me:s3cret@example.com/r.txt\n\x1b[31mnot a requirement\n"}
    )
    text = "\n".join(found.notes)
    assert "s3cret" not in text and "://****@" in text and "\x1b" not in text


def test_includes_stay_inside_the_repository(tmp_path):
    (tmp_path / "secret.txt").write_text("HF_TOKEN=hf_abcdefgh\n")
    repo = tmp_path / "repo"
    repo.mkdir()
    found = stack(
        repo,
        {
            "requirements/base.txt": "-r ../../secret.txt\n-r /proc/self/environ\n",
            "requirements.txt": "-r requirements/base.txt\n",
            "Dockerfile": "RUN pip install -r ../secret.txt\n",
        },
    )
    text = "\n".join(found.notes)
    assert "hf_abcdefgh" not in text and found.declarations == []
    assert text.count("outside the repository") == 2
