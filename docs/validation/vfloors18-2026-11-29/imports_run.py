"""Run the transformers imports scripts/derive_requirement_api.py finds on vLLM's import and engine
start against real transformers releases (CPU; no vLLM install: each statement alone, as vLLM's
module runs it), and compare with what rules/knowledge/requirement_api.yaml says.

    python imports_run.py CACHE VLLM_VERSION SITE [SITE ...]   # SITE: a folder holding a transformers
"""

import glob
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT / "scripts"))
from sibling import load  # noqa: E402

dr = load("derive_requirement_api")
cache, version, sites = sys.argv[1], sys.argv[2], sys.argv[3:]
whl = glob.glob(f"{cache}/vllm/vllm-{version}-*.whl")[0]
_, imports = dr.closure(dr.rk.read_wheel("vllm", version, whl), "vllm")
stmts = sorted(
    {f"from {m} import {n.split('.')[0]}" if n else f"import {m}" for t, m, n in imports if t == "transformers"}
)
code = (
    "import sys, transformers\nbad = []\n"
    f"for s in {stmts!r}:\n"
    "    try:\n        exec(s, {})\n"
    "    except Exception as e:\n        bad.append(f'{s}: {type(e).__name__}')\n"
    "print(transformers.__version__, len(" + repr(stmts) + "), 'statements;', 'failing:', bad or 'none')\n"
)
for site in sites:
    out = subprocess.run([sys.executable, "-c", code], env={"PYTHONPATH": site}, capture_output=True, text=True)
    print(f"vllm {version}:", (out.stdout or out.stderr).strip().splitlines()[-1])
