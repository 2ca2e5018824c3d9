#!/usr/bin/env bash
# Setup script for cme-grpo on a fresh RunPod GPU instance.
# Redirects all caches to /workspace (persistent volume), cleans old caches in
# /root, removes torchvision (compiled against wrong torch), and installs deps.

set -euo pipefail

REPO_ROOT="$(cd "$(dirname "$0")/.." && pwd)"
WORKSPACE="${WORKSPACE:-/workspace}"
CACHE_ROOT="$WORKSPACE/.cache"

echo "[install] redirecting caches to $CACHE_ROOT"
mkdir -p \
    "$CACHE_ROOT/huggingface" \
    "$CACHE_ROOT/huggingface/hub" \
    "$CACHE_ROOT/huggingface/datasets" \
    "$CACHE_ROOT/torch" \
    "$CACHE_ROOT/pip" \
    "$CACHE_ROOT/wandb"

# Write env vars to ~/.bashrc so they persist across new shells (tmux, etc).
ENV_BLOCK_MARKER="# === cme-grpo cache redirects ==="
if ! grep -q "$ENV_BLOCK_MARKER" ~/.bashrc 2>/dev/null; then
    cat >> ~/.bashrc <<EOF

$ENV_BLOCK_MARKER
export HF_HOME=$CACHE_ROOT/huggingface
export HUGGINGFACE_HUB_CACHE=$CACHE_ROOT/huggingface/hub
export TRANSFORMERS_CACHE=$CACHE_ROOT/huggingface/hub
export HF_DATASETS_CACHE=$CACHE_ROOT/huggingface/datasets
export TORCH_HOME=$CACHE_ROOT/torch
export PIP_CACHE_DIR=$CACHE_ROOT/pip
export XDG_CACHE_HOME=$CACHE_ROOT
export WANDB_DIR=$WORKSPACE/cme-grpo/wandb
export WANDB_CACHE_DIR=$CACHE_ROOT/wandb
# === end cme-grpo ===
EOF
    echo "[install] wrote env vars to ~/.bashrc"
fi

# Export for THIS shell session too (so the rest of this script uses them).
export HF_HOME="$CACHE_ROOT/huggingface"
export HUGGINGFACE_HUB_CACHE="$CACHE_ROOT/huggingface/hub"
export TRANSFORMERS_CACHE="$CACHE_ROOT/huggingface/hub"
export HF_DATASETS_CACHE="$CACHE_ROOT/huggingface/datasets"
export TORCH_HOME="$CACHE_ROOT/torch"
export PIP_CACHE_DIR="$CACHE_ROOT/pip"
export XDG_CACHE_HOME="$CACHE_ROOT"
export WANDB_DIR="$WORKSPACE/cme-grpo/wandb"
export WANDB_CACHE_DIR="$CACHE_ROOT/wandb"

echo "[install] cleaning old caches in /root (these are on the small root disk)"
rm -rf /root/.cache/huggingface || true
rm -rf /root/.cache/pip || true
rm -rf /root/.cache/torch || true
rm -rf /tmp/huggingface_* || true

# Symlink /root/.cache -> /workspace/.cache so any tool that defaults to
# ~/.cache (regardless of env vars) writes to the persistent volume disk.
echo "[install] symlinking /root/.cache -> /workspace/.cache"
mkdir -p "$CACHE_ROOT"
if [ ! -L /root/.cache ]; then
    rm -rf /root/.cache
    ln -s "$CACHE_ROOT" /root/.cache
fi

echo "[install] removing torchvision (incompatible with bundled torch)"
pip uninstall -y torchvision torchaudio || true

# torch must be both CUDA-enabled AND >= 2.6 (TRL imports FSDPModule, which
# only exists in torch 2.6+). If either condition fails, install cu124 wheels.
echo "[install] checking torch (CUDA + version >= 2.6)"
TORCH_OK="$(python <<'PY' 2>/dev/null || echo 0
try:
    import torch
    from packaging.version import parse as v
    print(int(torch.cuda.is_available() and v(torch.__version__) >= v("2.6.0")))
except Exception:
    print(0)
PY
)"

if [ "$TORCH_OK" = "1" ]; then
    echo "[install] torch is OK — installing requirements WITHOUT touching torch"
else
    echo "[install] torch missing CUDA or < 2.6 — installing cu124 wheels"
    pip install --upgrade --force-reinstall torch --index-url https://download.pytorch.org/whl/cu124
fi

# Strip torch line(s) from requirements so the rest of the install never
# overrides whatever torch we just confirmed/installed.
grep -viE '^[[:space:]]*torch([[:space:]<>=!]|$)' "$REPO_ROOT/requirements.txt" > /tmp/requirements_no_torch.txt
pip install -r /tmp/requirements_no_torch.txt

echo "[install] sanity-checking imports"
python -c "from transformers import PreTrainedModel, TrainerCallback; from peft import PeftModel; from trl import GRPOTrainer; print('[install] ok')"

echo
echo "[install] done. To use in this shell now: source ~/.bashrc"
echo "[install] disk usage:"
df -h "$WORKSPACE" / 2>/dev/null | head -3
