"""Rule documentation: lives in ``envdoctor.rule_docs`` (below the rules and the report that
read it); importable from here as before."""

from envdoctor.rule_docs import (  # noqa: F401  (re-exported)
    AREAS,
    REQUIRED,
    RuleDataError,
    RuleDoc,
    parse_area_file,
    rule_docs,
)
