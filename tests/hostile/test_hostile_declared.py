"""Hostile declared stacks (issue 30): files built to make the readers quadratic, to exceed
their caps, or to crash them. Each run is a new process under a 1.5 GiB address-space limit
and a 60 s wall-clock guard (a guard, not a timing: the quadratic readers took minutes to
hours on these inputs, the linear ones take about a second)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from envdoctor.errors import InputError
from envdoctor.facts.declared import read_stack
from envdoctor.facts.declared.interface import MAX_FILES, MAX_ITEMS, LineIndex, line_of
from envdoctor.facts.declared.requirements import logical_lines, uncomment
from tests.conftest import ROOT

GUARD_S = 60
LIMIT_AS = 1536 * 1024 * 1024
#: comment lines before the declarations: the old readers scanned them again per declaration
PADDING = "#\n" * 200_000


def _limits() -> None:  # pragma: no cover - runs in the child
    import resource

    resource.setrlimit(resource.RLIMIT_AS, (LIMIT_AS, LIMIT_AS))


def child(code: str, cwd: Path) -> subprocess.CompletedProcess:
    """``code`` in a new Python process (envdoctor importable), under the guard and limit."""
    env = {**os.environ, "PYTHONPATH": f"{ROOT}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}
    return subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        cwd=cwd,
        env=env,
        timeout=GUARD_S,
        preexec_fn=_limits,
    )


def hook(cwd: Path, *args: str) -> subprocess.CompletedProcess:
    """``envdoctor hook grpo.yaml ARGS`` in ``cwd`` (a repository of declared files)."""
    (cwd / "grpo.yaml").write_text("num_generations: 4\n")
    proc = child(
        "import sys; from envdoctor.cli import main; sys.argv = ['envdoctor', 'hook', "
        f"'grpo.yaml', *{list(args)!r}]; main()",
        cwd,
    )
    assert "Traceback" not in proc.stderr and "internal error" not in proc.stderr, proc.stderr
    return proc


def read_in_child(tmp_path: Path, name: str) -> list[str]:
    """``read_stack`` of one file in a child: each declaration as ``text@line``."""
    proc = child(
        "from pathlib import Path; from envdoctor.facts.declared import read_stack\n"
        f"found = read_stack([Path({name!r})], Path('.'))\n"
        "print('\\n'.join(f'{d.text}@{d.line}' for d in found.declarations))",
        tmp_path,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    return proc.stdout.split()


# ---------------------------------------------------------------- quadratic scans, now linear
def test_requirements_comment_rule_is_linear_on_long_whitespace(tmp_path):
    """pip's ``(^|\\s+)#.*$`` backtracked over every run of whitespace: 100 KB of spaces took
    84 s; here 1 MB, directly and through a Dockerfile's ``-r``."""
    (tmp_path / "requirements.txt").write_text(
        "trl==0.18.0" + " " * 1_000_000 + "x\n" + "torch==2.6.0 " + " " * 1_000_000 + "# c\n"
    )
    (tmp_path / "Dockerfile").write_text("FROM python\nRUN pip install -r requirements.txt\n")
    assert read_in_child(tmp_path, "requirements.txt") == ["torch==2.6.0@2"]
    assert read_in_child(tmp_path, "Dockerfile") == ["torch==2.6.0@2"]


def test_uncomment_is_pips_comment_rule():
    """The same result as the regex pip uses, on the shapes that matter."""
    import re

    pip = re.compile(r"(^|\s+)#.*$")
    for line in (
        "",
        "#",
        "a#b",
        "a #b",
        "a\t#b # c",
        "  # only",
        "a#b #c",
        "x \\",
        "a# #",
        "torch==2.6.0  # pinned",
        "url#egg=x",
        "a\u2003#b",
        "a #",
        " #",
        "a  b#c  #d",
    ):
        assert uncomment(line) == pip.sub("", line), line
    import random

    rng = random.Random(0)
    for _ in range(20_000):
        line = "".join(rng.choice(" \t#ab\\=\u2003\x1c") for _ in range(rng.randrange(12)))
        assert uncomment(line) == pip.sub("", line), repr(line)


def test_pyproject_dependency_lines_are_found_in_one_pass(tmp_path):
    """``_line`` scanned the file once per dependency (40,000 took minutes): 10,000 here, after
    200,000 comment lines, each on its own line."""
    deps = "".join(f'  "pkg{i}==1.{i}",\n' for i in range(MAX_ITEMS))
    (tmp_path / "pyproject.toml").write_text(
        f'{PADDING}[project]\nname = "x"\nversion = "1"\ndependencies = [\n{deps}]\n'
    )
    got = read_in_child(tmp_path, "pyproject.toml")
    first = 200_000 + 5
    assert got[0] == f"pkg0==1.0@{first}" and got[-1] == f"pkg9999==1.9999@{first + 9999}"


@pytest.mark.parametrize(
    ("name", "table"), [("uv.lock", "package"), ("poetry.lock", "package"), ("pylock.toml", "packages")]
)
def test_lock_with_an_inline_package_array_is_read_in_one_pass(tmp_path, name, table):
    """Each entry was looked up from line 1 (60,000 inline entries took minutes)."""
    entries = ",\n".join(f'{{name = "p{i}", version = "1.{i}"}}' for i in range(MAX_ITEMS))
    (tmp_path / name).write_text(f"{PADDING}{table} = [\n{entries}\n]\n")
    got = read_in_child(tmp_path, name)
    assert got[0] == "p0==1.0@200002" and got[-1] == "p9999==1.9999@210001"


def test_environment_yml_items_and_escaped_items_are_found_in_one_pass(tmp_path):
    """``line_of`` per item; an escaped item (never found as written) scanned the whole file."""
    plain = "".join(f"  - pkg{i}==1.{i}.0\n" for i in range(5000))
    escaped = "".join(f'    - "esc\\u0061pe{i}==1.0"\n' for i in range(4000))
    (tmp_path / "environment.yml").write_text(f"{PADDING}dependencies:\n{plain}  - pip:\n{escaped}")
    got = read_in_child(tmp_path, "environment.yml")
    assert got[0] == "pkg0==1.0.0@200002" and "pkg4999==1.4999.0@205001" in got
    assert len(got) == 9000 and "escape3999==1.0@1" in got  # never found as written: line 1


def test_dockerfile_install_words_are_found_in_one_pass(tmp_path):
    """``line_of`` per word of a ``RUN pip install`` of 40,000 continuation lines: a quoted
    word is never found as written, so each scanned to the end (read directly, below the
    stack's caps)."""
    (tmp_path / "Dockerfile").write_text(
        "FROM python\nRUN pip install \\\n"
        + "".join(f'  "p"{i} \\\n' for i in range(40_000))
        + "  torch==2.6.0\n"
    )
    proc = child(
        "from pathlib import Path; from envdoctor.facts.declared import dockerfile\n"
        "found = dockerfile.read(Path('Dockerfile'), 'Dockerfile')\n"
        "print(len(found.declarations), found.declarations[-2].where, "
        "found.declarations[-1].where)",
        tmp_path,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.split() == ["40001", "Dockerfile:2", "Dockerfile:40003"]


def test_line_index_agrees_with_a_scan():
    lines = [
        "# deps",
        'a = ["torch==2.6.0", \'trl>=0.17; python_version < "3.12"\']',
        "  - numpy >=2  # c",
        "RUN pip install vllm==0.8.5 \\",
        "   flash-attn",
        "torch==2.6.0",
    ]
    needles = [
        "torch==2.6.0",
        'trl>=0.17; python_version < "3.12"',
        "numpy >=2",
        "vllm==0.8.5",
        "flash-attn",
        "absent",
    ]
    index = LineIndex(lines, needles)
    for needle in needles[:-1]:
        assert index.find(needle) == line_of(lines, needle), needle
    assert index.find("torch==2.6.0", 2) == 6 and index.find("absent") == 1
    assert index.find("absent", 3) == 4  # not found: where the search started


def test_logical_lines_join_without_quadratic_concatenation():
    text = "trl==0.18.0 \\\n" + "  --hash=sha256:00 \\\n" * 50_000 + "  --hash=sha256:01\n"
    [(number, line)] = logical_lines(text)
    assert number == 1 and line.startswith("trl==0.18.0") and line.count("--hash") == 50_001


# ---------------------------------------------------------------- caps that bound time
def test_too_many_requirements_is_an_error_naming_the_file(tmp_path):
    """8 MiB of distinct pins took 51 s and 654 MiB: refused after 10,000 requirements."""
    text = "".join(f"p{i}==1.{i}\n" for i in range(470_000))
    assert 7 * 1024 * 1024 < len(text) < 8 * 1024 * 1024
    (tmp_path / "requirements.txt").write_text(text)
    proc = hook(tmp_path)
    assert proc.returncode == 2, proc.stderr
    assert "requirements.txt" in proc.stderr and f"more than {MAX_ITEMS:,}" in proc.stderr


def test_a_toml_lock_of_short_values_is_refused_unparsed(tmp_path):
    """Python's TOML parser takes up to 2 s per MiB of short values (a 7.9 MiB uv.lock: 16 s)."""
    (tmp_path / "uv.lock").write_text("version = 1\nx = [" + "1," * 3_900_000 + "1]\n")
    proc = hook(tmp_path)
    assert proc.returncode == 2 and "uv.lock" in proc.stderr and "TOML values" in proc.stderr


def test_pyproject_is_parsed_once():
    from envdoctor.settings import parse_toml

    text = 'x = "' + "a" * 1000 + '"\n'
    assert parse_toml(text, "a") is parse_toml(text, "b")


def test_dockerfile_over_its_cap_and_a_stack_over_its_byte_budget(tmp_path):
    (tmp_path / "Dockerfile").write_text("RUN pip install " + "a" * (2 * 1024 * 1024) + "\n")
    proc = hook(tmp_path)
    assert proc.returncode == 2 and "Dockerfile: larger than 1 MiB" in proc.stderr, proc.stderr
    (tmp_path / "Dockerfile").unlink()
    for i in range(2):
        (tmp_path / f"requirements-{i}.txt").write_text("#" * (5 * 1024 * 1024) + "\n")
    proc = hook(tmp_path)
    assert proc.returncode == 2 and "requirements-1.txt: larger than" in proc.stderr
    assert "8 MiB the declaration files may take in all" in proc.stderr, proc.stderr


def test_too_many_declaration_files(tmp_path):
    for i in range(MAX_FILES + 1):
        (tmp_path / f"requirements-{i:03}.txt").write_text(f"p{i}==1.0\n")
    proc = hook(tmp_path)
    assert proc.returncode == 2 and f"more than {MAX_FILES} declaration files" in proc.stderr


def test_conflicts_compare_each_distinct_specifier_once(tmp_path, monkeypatch):
    """10,000 copies of one line were 50 million comparisons."""
    from envdoctor.facts.declared import resolve

    calls = []
    real = resolve.meet
    monkeypatch.setattr(resolve, "meet", lambda *a: calls.append(a) or real(*a))
    (tmp_path / "requirements.txt").write_text("trl>=0.17\n" * 5000 + "trl<0.10\n" + "trl>=0.17\n")
    stack = resolve.entries(read_stack([tmp_path / "requirements.txt"], tmp_path), {})
    [(_, a, b)] = resolve.conflicts(stack)
    assert (a.where, b.where) == ("requirements.txt:1", "requirements.txt:5001")
    assert len(calls) == 1


# ---------------------------------------------------------------- crashes, now input errors
@pytest.mark.parametrize(
    ("name", "text"),
    [
        ("requirements.txt", "-r loop1\n"),
        ("Dockerfile", "FROM python\nRUN pip install -r loop1\n"),
        ("environment.yml", "dependencies:\n  - pip:\n    - -r loop1\n"),
    ],
)
def test_a_symlink_loop_in_an_include_is_an_input_error(tmp_path, name, text):
    (tmp_path / "loop1").symlink_to("loop2")
    (tmp_path / "loop2").symlink_to("loop1")
    (tmp_path / name).write_text(text)
    with pytest.raises(InputError, match="loop1: cannot resolve it"):
        read_stack([tmp_path / name], tmp_path)
    proc = hook(tmp_path)
    assert proc.returncode == 2 and "loop1" in proc.stderr, proc.stderr


def test_a_fifo_as_an_include_or_requirements_file_is_not_a_regular_file(tmp_path):
    os.mkfifo(tmp_path / "fifo.txt")
    (tmp_path / "requirements.txt").write_text("-r fifo.txt\n")
    proc = hook(tmp_path)
    assert proc.returncode == 2 and "fifo.txt: not a regular file" in proc.stderr, proc.stderr
    (tmp_path / "requirements.txt").unlink()
    for path in ("fifo.txt", "/dev/zero"):
        proc = hook(tmp_path, "--requirements", path)
        assert proc.returncode == 2, proc.stderr
        assert f"--requirements {path}: " in proc.stderr and "no such file" not in proc.stderr
    proc = hook(tmp_path, "--requirements", "gone.txt")
    assert proc.returncode == 2 and "--requirements gone.txt: no such file" in proc.stderr
