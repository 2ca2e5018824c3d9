# No Python training script in this repository: training is ms-swift's CLI entry
# (swift/cli/rlhf.py, i.e. `swift rlhf --rlhf_type grpo`), launched by
# scripts/benchmark_grpo.sh (copied verbatim in this folder) as:
#   python -m torch.distributed.run --nproc_per_node 1 "$RLHF_SCRIPT" --rlhf_type grpo ...
# ms-swift builds TRL's GRPOConfig/GRPOTrainer (and the colocated vLLM engine) from these CLI arguments.
