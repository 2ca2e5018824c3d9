"""One name per rule: the function that checks a rule carries its YAML name (rules/<area>.yaml)
in snake_case, so the id, the documented name and the code are found from one another."""

from __future__ import annotations

from envdoctor.checks.registry import all_rules
from envdoctor.rule_docs import rule_docs


def test_every_rule_function_is_named_after_its_yaml_name():
    docs = rule_docs()
    rules = all_rules()
    assert rules
    assert set(rules) <= set(docs), "every registered rule is documented"
    wrong = {
        rid: (entry.fn.__name__, docs[rid].name.replace("-", "_"))
        for rid, entry in rules.items()
        if entry.fn.__name__ != docs[rid].name.replace("-", "_")
    }
    assert wrong == {}, "(function name, its YAML name in snake_case)"
