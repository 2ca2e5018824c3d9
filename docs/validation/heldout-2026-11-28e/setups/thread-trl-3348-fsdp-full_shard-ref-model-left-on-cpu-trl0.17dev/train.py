# reproduction script as posted in the issue body (huggingface/trl issue 3348, 2025-04-24), verbatim
from trl import GRPOConfig, GRPOTrainer, TrlParser

model_name_or_path = "Qwen/Qwen2.5-0.5B-Instruct"
parser = TrlParser(GRPOConfig)
training_args, = parser.parse_args_into_dataclasses()

trainer = GRPOTrainer(model=model_name_or_path, reward_funcs=[], args=training_args)

print(trainer.accelerator.state.device)
print(trainer.model.device)
print(trainer.ref_model.device)
