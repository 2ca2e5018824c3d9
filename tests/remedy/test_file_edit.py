"""Line edits of a remedy (``FileEdit``): applied to a file's text with its line ends kept, refused
when the file no longer reads as the fix expects, and merged in order."""

from __future__ import annotations

import pytest

from envdoctor.findings import FileEdit, Remedy
from envdoctor.parsing import parse_mapping
from envdoctor.remedy.apply import merge
from envdoctor.remedy.file_edit import EditError, edit_all, edit_text


def test_replace_delete_insert_keep_the_line_ends():
    text = "a\r\nb\r\nc\r\n"
    assert edit_text(text, FileEdit("f", 2, ("b",), ("B",))) == "a\r\nB\r\nc\r\n"
    assert edit_text(text, FileEdit("f", 2, ("b",), ())) == "a\r\nc\r\n"
    assert edit_text(text, FileEdit("f", 1, (), ("top",))) == "top\r\na\r\nb\r\nc\r\n"
    assert edit_text("x\ny", FileEdit("f", 2, ("y",), ("z",))) == "x\nz"  # no end added to the last line
    assert edit_text(text, FileEdit("f", eol="lf")) == "a\nb\nc\n"


def test_an_edit_of_lines_that_read_otherwise_is_refused():
    with pytest.raises(EditError):
        edit_text("a\nb\n", FileEdit("f", 2, ("B",), ()))
    with pytest.raises(EditError):
        edit_text("a\n", FileEdit("f", 5, ("a",), ()))


def test_edits_apply_in_order_and_merge_keeps_the_order():
    first = Remedy(files=(FileEdit("f", 1, ("a",), ()),))
    then = Remedy(files=(FileEdit("f", 1, ("b",), ("B",)),))  # line 1 after the first edit
    both = merge(first, then)
    assert both.files == first.files + then.files
    assert edit_all("a\nb\n", both.files) == "B\n"
    assert both.to_dict()["files"][0] == {"path": "f", "line": 1, "old": ["a"], "new": []}
    assert "files" not in Remedy(packages={"trl": "1.16.0"}).to_dict()  # the /1 object as before


def test_a_key_set_twice_gives_the_first_entrys_lines():
    found: list[dict] = []
    parse_mapping("a: 1\nb:\n  x: 1\n# about c\n\nc: 3\nb: 5\n", "t.yaml", False, found)
    (d,) = found
    assert d["first_text"] == ["b:", "  x: 1"]  # the comment before the next key stays
    found = []
    parse_mapping("x: {a: 1, a: 2}\n", "t.yaml", False, found)
    assert found[0]["first_text"] is None  # a flow mapping: one line holds both


def test_code_edits_of_two_files_may_share_a_line_number():
    """GRPOConfig(...) keywords written at line 12 of the script and of the repository module
    that builds the trainer's config are two places, not one line edited twice."""
    from envdoctor.plan.interface import CodeKeyword, TrainingScript
    from envdoctor.remedy.script_edit import code_edits

    def place(path: str) -> CodeKeyword:
        return CodeKeyword(f"GRPOConfig(...) in {path}:12", drop=(12, ("    a=1,",), ()))

    script = TrainingScript(
        "train.py", config_keywords={"a": (place("train.py"),), "b": (place("pkg/runner.py"),)}
    )
    edits = code_edits(script, ["a", "b"], {})
    assert sorted((e.path, e.line) for e in edits) == [("pkg/runner.py", 12), ("train.py", 12)]
