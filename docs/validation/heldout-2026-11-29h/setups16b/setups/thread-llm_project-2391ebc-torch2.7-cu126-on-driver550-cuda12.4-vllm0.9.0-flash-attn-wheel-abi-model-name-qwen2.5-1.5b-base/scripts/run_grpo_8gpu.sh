#!/usr/bin/env bash
set -euo pipefail
export TOKENIZERS_PARALLELISM=false
export CUDA_VISIBLE_DEVICES=${CUDA_VISIBLE_DEVICES:-0,1,2,3,4,5,6,7}

deepspeed --num_gpus 8 -m llm_project.cli.train_grpo \
  --config configs/grpo.yaml \
  --ds_config configs/deepspeed_zero2.json
