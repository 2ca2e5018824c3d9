#!/usr/bin/env bash
# Refresh requirements/ci-constraints.txt: a fresh venv with the newest releases the ranges of
# pyproject.toml and requirements/test.txt allow (no constraints), the whole suite on it through
# .ci/run, and only if that passes, the file rewritten from that venv's `pip freeze --all`.
# Review the diff (git diff requirements/ci-constraints.txt) and commit it with the test fixes a
# new release needed. ENVDOCTOR_VENV names the scratch venv (default .venv-ci-refresh).
set -euo pipefail
cd "$(dirname "$0")/.."
VENV=${ENVDOCTOR_VENV:-.venv-ci-refresh}
OUT=requirements/ci-constraints.txt
rm -rf "$VENV"
ENVDOCTOR_VENV="$VENV" ENVDOCTOR_CI_CONSTRAINTS=none bash .ci/run "$@"
{
  sed -n '/^# Verified/q;p' "$OUT"
  echo "# Verified $(date -u +%F): \`bash .ci/run\` passed on exactly these."
  "$VENV/bin/python" -m pip freeze --all --exclude-editable | grep -v '^#'
} > "$OUT.new"
mv "$OUT.new" "$OUT"
echo "refreshed $OUT:"
git diff --stat -- "$OUT" || true
