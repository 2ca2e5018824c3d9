# No Python training entry in this repository: training is ms-swift's CLI `swift rlhf --rlhf_type grpo`
# launched by run_train.sh (copied verbatim, WANDB key redacted). Repo Python used by the launch:
#   food_plugin.py (--external_plugins: custom ORM rewards food_classification/format), copied alongside.
# ms-swift builds TRL's GRPOConfig/GRPOTrainer (swift GRPOTrainer subclass) from these CLI arguments.
