"""Rewrite the setups' facts.json from their era and source.yaml:

python -m tests.conformance.build [SETUP ...]
"""

from __future__ import annotations

import json
import sys

from tests.conformance.setups import build_facts, setup_dirs

if __name__ == "__main__":
    for setup in setup_dirs():
        if sys.argv[1:] and setup.name not in sys.argv[1:]:
            continue
        text = json.dumps(build_facts(setup), indent=1, ensure_ascii=False) + "\n"
        (setup / "facts.json").write_text(text, encoding="utf-8")
        print(setup.name)
