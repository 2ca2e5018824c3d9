OUTPUT_ROOT="{YOUR_PATH_TO_SAVE_CHECKPOINT}"
LOG_ROOT="{YOUR_PATH_TO_LOG_TRAINING_PROCESS}"

DATA_PATH="{TRAINING_INDEX_FILE}"
DATA_NAME="{TRAINING_DATA_NAME}"

MODEL_PATH="{LLM_PATH}"
MODEL_NAME="{LLM_NAME}"

CKPT_NAME=${DATA_NAME}-${MODEL_NAME}

LOG_PATH=${LOG_ROOT}/${CKPT_NAME}
mkdir -p ${LOG_PATH}

LOG_PATH=${LOG_ROOT}/${CKPT_NAME}
mkdir -p ${LOG_PATH}

accelerate launch --config_file=./scripts/accelerate_configs/fsdp1.yaml --num_processes 8 \
   grpo.py \
   --bf16 True \
   --use_liger_kernel \
   --model_name_or_path ${MODEL_PATH} \
   --dataset_name ${DATA_PATH} \
   --output_dir ${OUTPUT_ROOT}/${CKPT_NAME} \
   --use_vllm \
   --vllm_mode "colocate" \
   --vllm_gpu_memory_utilization 0.5 \
   --max_prompt_length 10000 \
   --max_completion_length 2048 \
   --num_train_epochs 1 \
   --per_device_train_batch_size 8 \
   --per_device_eval_batch_size 16 \
   --gradient_accumulation_steps 1 \
   --num_generations 16 \
   --eval_strategy "no" \
   --save_strategy "steps" \
   --save_steps 300 \
   --save_total_limit 10 \
   --learning_rate 2e-6 \
   --weight_decay 0. \
   --warmup_ratio 0.03 \
   --lr_scheduler_type "cosine" \
   --logging_steps 1 \
   --gradient_checkpointing True \
   --dataloader_num_workers 8 \
   --dataloader_pin_memory \
   --ignore_data_skip \
   --log_completions \
   --logging_dir ${LOG_PATH} \
   --report_to "wandb" 2>&1 | tee ${LOG_PATH}/train.log