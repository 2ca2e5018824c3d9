srun --export=ALL,ACCELERATE_LOG_LEVEL=info accelerate launch \
  --config_file recipes/accelerate_configs/zero2.yaml \
  --main_process_port 8614 \
  --num_processes $NOFGPU \
  src/unir/train_vision.py \
  --dataset_name "$DATA_NAME" \
  --ref_name_or_path "$REF_MODEL" \
  --model_name_or_path  "$MAIN_MODEL" \
  --use_peft False \
  --config recipes/unir.yaml \
  --output_dir run/"$NAME" \
  --run_name test_vision \
  --num_generations 8 \
  --per_device_eval_batch_size $PDBATCH_SIZE \
  --per_device_train_batch_size $PDBATCH_SIZE \
  --gradient_accumulation_steps $((8/NOFGPU))  \
  --gradient_checkpointing false \
  --max_completion_length 512 \
  --max_steps 1000 \
  --save_steps 100 \
  --beta 0 \
  --system_prompt "$SYSTEM_PROMPT" \
  --reward_funcs "$REWARD" \
  --reward_weights 1.0 \
  >  run/"$NAME"/train_log.log 2>&1
