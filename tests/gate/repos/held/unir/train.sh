srun --export=ALL,ACCELERATE_LOG_LEVEL=info accelerate launch \
  --config_file recipes/accelerate_configs/zero2.yaml \
  src/unir/train_vision.py \
  --config recipes/unir.yaml \