%load_ext autoreload
%autoreload 2

# ---- next cell ----

from unsloth import FastLanguageModel, is_bfloat16_supported
import torch
max_seq_length = 1024 # Can increase for longer reasoning traces
lora_rank = 64 # Larger rank = smarter, but slower

model, tokenizer = FastLanguageModel.from_pretrained(
    model_name = "Qwen/Qwen2.5-14B-Instruct",
    max_seq_length = max_seq_length,
    load_in_4bit = True, # False for LoRA 16bit
    max_lora_rank = lora_rank,
    gpu_memory_utilization = 0.5, # Reduce if out of memory
)

model = FastLanguageModel.get_peft_model(
    model,
    r = lora_rank, # Choose any number > 0 ! Suggested 8, 16, 32, 64, 128
    target_modules = [
        "q_proj", "k_proj", "v_proj", "o_proj",
        "gate_proj", "up_proj", "down_proj",
    ], # Remove QKVO if out of memory
    lora_alpha = lora_rank,
    use_gradient_checkpointing = "unsloth", # Enable long context finetuning
    random_state = 3407,
)

# ---- next cell ----

import re
from datasets import load_dataset, Dataset

# Load and prep dataset
SYSTEM_PROMPT = """
Respond in the following format:
<reasoning>
...
</reasoning>
<answer>
...
</answer>
"""

XML_COT_FORMAT = """\
<reasoning>
{reasoning}
</reasoning>
<answer>
{answer}
</answer>
"""

def extract_xml_answer(text: str) -> str:
    answer = text.split("<answer>")[-1]
    answer = answer.split("</answer>")[0]
    return answer.strip()

def extract_hash_answer(text: str) -> str | None:
    if "####" not in text:
        return None
    return text.split("####")[1].strip()

# uncomment middle messages for 1-shot prompting
def get_gsm8k_questions(split = "train") -> Dataset:
    data = load_dataset('openai/gsm8k', 'main')[split] # type: ignore
    data = data.map(lambda x: { # type: ignore
        'prompt': [
            {'role': 'system', 'content': SYSTEM_PROMPT},
            {'role': 'user', 'content': x['question']}
        ],
        'answer': extract_hash_answer(x['answer'])
    }) # type: ignore
    return data # type: ignore

dataset = get_gsm8k_questions()

# Reward functions
def correctness_reward_func(prompts, completions, answer, **kwargs) -> list[float]:
    responses = [completion[0]['content'] for completion in completions]
    q = prompts[0][-1]['content']
    extracted_responses = [extract_xml_answer(r) for r in responses]
    print('-'*20, f"Question:\n{q}", f"\nAnswer:\n{answer[0]}", f"\nResponse:\n{responses[0]}", f"\nExtracted:\n{extracted_responses[0]}")
    return [2.0 if r == a else 0.0 for r, a in zip(extracted_responses, answer)]

def int_reward_func(completions, **kwargs) -> list[float]:
    responses = [completion[0]['content'] for completion in completions]
    extracted_responses = [extract_xml_answer(r) for r in responses]
    return [0.5 if r.isdigit() else 0.0 for r in extracted_responses]

def strict_format_reward_func(completions, **kwargs) -> list[float]:
    """Reward function that checks if the completion has a specific format."""
    pattern = r"^<reasoning>\n.*?\n</reasoning>\n<answer>\n.*?\n</answer>\n$"
    responses = [completion[0]["content"] for completion in completions]
    matches = [re.match(pattern, r) for r in responses]
    return [0.5 if match else 0.0 for match in matches]

def soft_format_reward_func(completions, **kwargs) -> list[float]:
    """Reward function that checks if the completion has a specific format."""
    pattern = r"<reasoning>.*?</reasoning>\s*<answer>.*?</answer>"
    responses = [completion[0]["content"] for completion in completions]
    matches = [re.match(pattern, r) for r in responses]
    return [0.5 if match else 0.0 for match in matches]

def count_xml(text) -> float:
    count = 0.0
    if text.count("<reasoning>\n") == 1:
        count += 0.125
    if text.count("\n</reasoning>\n") == 1:
        count += 0.125
    if text.count("\n<answer>\n") == 1:
        count += 0.125
        count -= len(text.split("\n</answer>\n")[-1])*0.001
    if text.count("\n</answer>") == 1:
        count += 0.125
        count -= (len(text.split("\n</answer>")[-1]) - 1)*0.001
    return count

def xmlcount_reward_func(completions, **kwargs) -> list[float]:
    contents = [completion[0]["content"] for completion in completions]
    return [count_xml(c) for c in contents]

# ---- next cell ----

from trl import GRPOConfig, GRPOTrainer

output_name="qwen25_14b_grpo_take1"

training_args = GRPOConfig(
    learning_rate = 5e-6,
    adam_beta1 = 0.9,
    adam_beta2 = 0.99,
    weight_decay = 0.1,
    warmup_ratio = 0.1,
    lr_scheduler_type = "cosine",
    optim = "adamw_8bit",
    logging_steps = 1,
    bf16 = is_bfloat16_supported(),
    fp16 = not is_bfloat16_supported(),
    per_device_train_batch_size = 1,
    gradient_accumulation_steps = 1, # Increase to 4 for smoother training
    num_generations = 8, # Decrease if out of memory
    max_prompt_length = 256,
    max_completion_length = 200,
    # num_train_epochs = 1, # Set to 1 for a full training run
    max_steps = 250,
    save_steps = 250,
    max_grad_norm = 0.1,
    report_to = "wandb", # Can use Weights & Biases
    run_name=output_name,
    output_dir = output_name,
)

# ---- next cell ----

trainer = GRPOTrainer(
    model = model,
    processing_class = tokenizer,
    reward_funcs = [
        xmlcount_reward_func,
        soft_format_reward_func,
        strict_format_reward_func,
        int_reward_func,
        correctness_reward_func,
    ],
    args = training_args,
    train_dataset = dataset,
)
trainer.train()

# ---- next cell ----

import os
from dotenv import load_dotenv, find_dotenv

_ = load_dotenv(find_dotenv())

model.push_to_hub_merged(
    "tituslhy/qwen25_14b_grpo_take1", 
    tokenizer, 
    save_method = "merged_16bit", 
    token = os.environ["HUGGINGFACE_ACCESS_TOKEN"]
)

# ---- next cell ----

# ① Point at the real binary in build/bin
real_q = os.path.expanduser("~/llama.cpp/build/bin/llama-quantize")
assert os.path.exists(real_q), f"{real_q} not found!"

# ② Make a local 'llama.cpp' folder in your notebook working directory
cwd = os.getcwd()
local_pack = os.path.join(cwd, "llama.cpp")
os.makedirs(local_pack, exist_ok=True)

# ③ Symlink it as 'llama-quantize' and also as 'quantize'
for name in ("llama-quantize", "quantize"):
    link = os.path.join(local_pack, name)
    if os.path.exists(link) or os.path.islink(link):
        os.remove(link)
    os.symlink(real_q, link)

# ④ Verify
print("Notebook sees:", os.listdir(local_pack))

# ---- next cell ----

model.push_to_hub_gguf(
    "tituslhy/qwen25_14b_grpo_take1", # Change hf to your username!
    tokenizer,
    quantization_method = ["q4_k_m", "q8_0", "q5_k_m",],
    token = os.environ["HUGGINGFACE_ACCESS_TOKEN"], # Get a token at https://huggingface.co/settings/tokens
)

# ---- next cell ----

from llama_index.llms.ollama import Ollama
from IPython.display import display, Markdown

llm = Ollama(
    "hf.co/tituslhy/qwen25_14b_grpo_take1:Q4_K_M",
    temperature=0,
)

# ---- next cell ----

response = llm.complete(
    """
    Natalia sold clips to 48 of her friends in April, and then she sold half as many clips in May. 
    How many clips did Natalia sell altogether in April and May?
    """
)

display(Markdown(str(response)))

# ---- next cell ----

response = llm.complete(
    """
    Four people lost a total of 103 kilograms of weight. 
    The first person lost 27 kilograms. 
    The second person lost 7 kilograms less than the first person. 
    The two remaining people lost the same amount. 
    How many kilograms did each of the last two people lose?
    """
)

display(Markdown(str(response)))

# ---- next cell ----

response = llm.complete(
    """
    Could George Washington have had dinner with Barack Obama? Work out the answer step by step.
    """
)

display(Markdown(str(response)))

# ---- next cell ----

response = llm.complete(
    """
    Susie has $200 in her piggy bank. If she puts 20% more money into her piggy bank, how much money she will have?
    """
)

display(Markdown(str(response)))

# ---- next cell ----

response = llm.complete(
    """
   Helen and Ivan had the same number of coins. Helen had a number of 50-cent coins, and 64 20-cent coins. These coins had a mass of 1.134kg. Ivan had a number of 50-cent coins and 104 20-cent coins.

    (a) Who has more money in coins and by how much?
    (b) given that each 50-cent coin is 2.7g more heavier than a 20-cent coin, what is the mass of Ivan's coins in kilograms?
    """
)

display(Markdown(str(response)))

# ---- next cell ----

response = llm.complete(
    """
    Jess needs 200 pieces of ribbon, each of length 110cm, to decorate a room for a party.
    Ribbon is sold in rolls of 25m each.

    What is the least number of rolls of ribbon that Jess needs to buy?
    """
)

display(Markdown(str(response)))

# ---- next cell ----

import os
from dotenv import load_dotenv, find_dotenv

_ = load_dotenv(find_dotenv())

# ---- next cell ----

from llama_index.core import (
    Settings,
    VectorStoreIndex,
    SimpleDirectoryReader,
)
from llama_index.packs.rag_evaluator import RagEvaluatorPack
from llama_index.core.llama_dataset.generator import RagDatasetGenerator
from llama_index.llms.openai import OpenAI
from llama_index.embeddings.openai import OpenAIEmbedding

Settings.llm = OpenAI(model="gpt-4o")
Settings.embed_model = OpenAIEmbedding(model="text-embedding-ada-002")

docs = SimpleDirectoryReader("../data/").load_data(show_progress=True)

# ---- next cell ----

data_gen = RagDatasetGenerator.from_documents(
    docs,
    llm= Settings.llm,
    question_gen_query="You are a teacher/professor. Using the provided context, formulat a single question and its answer",
    num_questions_per_chunk=10
)
qa_dataset = data_gen.generate_dataset_from_nodes()

# ---- next cell ----

qa_dataset.save_json("rag_evaluation_dataset.json")

# ---- next cell ----

index = VectorStoreIndex.from_documents(docs)

# ---- next cell ----

base_llm = Ollama(model="qwen2.5:14b")
base_query_engine = index.as_query_engine(similarity_top_k=6, llm=base_llm)

# ---- next cell ----

base_evaluator = RagEvaluatorPack(
    query_engine=base_query_engine, 
    rag_dataset=qa_dataset,
    judge_llm=Settings.llm, #use the same llm that we use to create the dataset to judge
    embed_model=Settings.embed_model
)

# ---- next cell ----

base_df = base_evaluator.run()

# ---- next cell ----

base_df

# ---- next cell ----

finetuned_query_engine = index.as_query_engine(similarity_top_k=6, llm=llm)
finetuned_evaluator = RagEvaluatorPack(
    query_engine=finetuned_query_engine, 
    rag_dataset=qa_dataset,
    judge_llm=Settings.llm, #use the same llm that we use to create the dataset to judge
    embed_model=Settings.embed_model
)

# ---- next cell ----

finetuned_df = await finetuned_evaluator.arun()

# ---- next cell ----

finetuned_df

# ---- next cell ----

from llama_index.core.llama_dataset import LabelledRagDataset

rag_dataset=LabelledRagDataset.from_json("rag_evaluation_dataset.json")
