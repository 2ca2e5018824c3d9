pip install -r projects/co-grpo-dp/requirements.txt
pip install lm-eval[vllm]