#!/bin/bash
set -euo pipefail

if [[ $# -gt 0 ]]; then
    exec "$@"
fi

exec /bin/bash
