export LD_LIBRARY_PATH=$CONDA_PREFIX/lib:$LD_LIBRARY_PATH

export WANDB_API_KEY=<redacted>
export WANDB_ENTITY=shuozhe

CUDA_VISIBLE_DEVICES=0,1,2,3 \
ACCELERATE_LOG_LEVEL=info accelerate launch \
  --config_file recipes/accelerate_configs/zero2.yaml \
  --num_processes=3 \
  src/open_r1/grpo.py \
  --config recipes/grpo.yaml \
  --cosine_max_len 3584 \
  --dataset_name /data/shuozhe/saved_dataset/open-rs \
  --model_name_or_path /data/shuozhe/saved_model/Qwen2.5-0.5B \