from unsloth import FastModel
import torch
import torch.nn as nn
from datasets import load_dataset
import re
from trl import GRPOConfig, GRPOTrainer
from transformers import (
    GPT2Model,
    GPT2Tokenizer,
    GPT2PreTrainedModel,
    GPT2Config,
    Trainer,
    TrainingArguments,
    AutoModelForCausalLM,
    TextStreamer
)
from typing import Dict, List
import pickle
import pandas as pd
import numpy as np
import matplotlib.pyplot as plt
import seaborn as sns
from sklearn.model_selection import train_test_split
import os
from tqdm import tqdm
from datasets import Dataset as HFDataset
from sklearn.metrics import mean_squared_error, mean_absolute_error, r2_score
import datetime
import time
from sklearn.preprocessing import StandardScaler
import pickle

# ---- next cell ----
# Check for GPU availability
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
print(f"Using device: {device}")

# ---- next cell ----
# --- Configuration ---
pess = True
GPT2_MODEL_NAME = "gpt2"
FFN_MODEL_PATH = 'reward_predictor_model.pth'  # Path to your trained FFN model
SCALER_PATH = 'reward_predictor_scaler.pkl'   # Path to your saved scaler
if pess: 
    FFN_MODEL_PATH = 'reward_predictor_model_p.pth'  # Path to your trained FFN model
    SCALER_PATH = 'reward_predictor_scaler_p.pkl'   # Path to your saved scaler
    
DEVICE = torch.device("cuda" if torch.cuda.is_available() else "cpu")
MAX_LENGTH = 512 # Max length for tokenizer, should match training

# ---- next cell ----
# --- Neural Network Definition (from your notebook) ---
class FeedForwardNet(nn.Module):
    def __init__(self, input_size, hidden_sizes, output_size=1, dropout_rate=0.2):
        super(FeedForwardNet, self).__init__()
        
        layers = []
        
        # Input layer to first hidden layer
        layers.append(nn.Linear(input_size, hidden_sizes[0]))
        layers.append(nn.ReLU())
        layers.append(nn.Dropout(dropout_rate))
        
        # Additional hidden layers
        for i in range(len(hidden_sizes) - 1):
            layers.append(nn.Linear(hidden_sizes[i], hidden_sizes[i+1]))
            layers.append(nn.ReLU())
            layers.append(nn.Dropout(dropout_rate))
        
        # Output layer
        layers.append(nn.Linear(hidden_sizes[-1], output_size))
        
        self.model = nn.Sequential(*layers)
    
    def forward(self, x):
        return self.model(x)

# --- Embedding Extraction Function (from your notebook) ---
def extract_embedding(text, model, tokenizer, device, max_length=MAX_LENGTH):
    """
    Extract the embedding from GPT-2 for a given text.
    This version uses the embedding of the last token.
    """
    encoded_input = tokenizer(
        text,
        return_tensors="pt",
        padding="max_length",
        truncation=True,
        max_length=max_length
    )
    encoded_input = {k: v.to(device) for k, v in encoded_input.items()}
    
    with torch.no_grad():
        outputs = model(**encoded_input)
        last_hidden_state = outputs.last_hidden_state
        
        # Get the last token's embedding (considering padding)
        # The attention mask is 1 for non-pad tokens and 0 for pad tokens.
        # Summing the attention mask gives the sequence length of non-pad tokens.
        last_token_idx = encoded_input['attention_mask'].sum(dim=1) - 1
        
        # Gather the embedding of the last non-pad token for each item in the batch
        # last_token_idx needs to be reshaped for torch.gather
        # Shape: (batch_size, 1, hidden_size) to match last_hidden_state (batch_size, seq_len, hidden_size)
        last_token_idx_expanded = last_token_idx.unsqueeze(-1).unsqueeze(-1).repeat(1, 1, last_hidden_state.size(-1))
        
        # (batch_size, 1, hidden_size)
        last_token_embedding = torch.gather(last_hidden_state, 1, last_token_idx_expanded).squeeze(1)
        
        return last_token_embedding.cpu().numpy().flatten()

class GPT2RewardModel:
    def __init__(self, gpt2_model_name, ffn_model_path, scaler_path, device):
        self.device = device
        
        # 1. Load GPT-2 Model and Tokenizer
        print(f"Loading GPT-2 model: {gpt2_model_name}...")
        self.tokenizer = GPT2Tokenizer.from_pretrained(gpt2_model_name)
        if self.tokenizer.pad_token is None:
            self.tokenizer.pad_token = self.tokenizer.eos_token
            
        self.gpt2_model = GPT2Model.from_pretrained(gpt2_model_name)
        self.gpt2_model.to(self.device)
        self.gpt2_model.eval()  # Set to evaluation mode
        # Freeze GPT-2 parameters
        for param in self.gpt2_model.parameters():
            param.requires_grad = False
        print("GPT-2 model loaded and frozen.")

        # 2. Load Scaler
        print(f"Loading scaler from: {scaler_path}...")
        with open(scaler_path, 'rb') as f:
            self.scaler = pickle.load(f)
        print("Scaler loaded.")

        # 3. Load Trained FeedForwardNet
        print(f"Loading FFN model from: {ffn_model_path}...")
        checkpoint = torch.load(ffn_model_path, map_location=self.device)
        
        # Ensure all necessary keys are present in the checkpoint
        required_keys = ['input_size', 'hidden_sizes', 'output_size', 'dropout_rate', 'model_state_dict']
        for key in required_keys:
            if key not in checkpoint:
                raise KeyError(f"Checkpoint missing required key: '{key}'. Ensure your saved model .pth file contains all necessary architecture parameters.")

        self.ffn_model = FeedForwardNet(
            input_size=checkpoint['input_size'],
            hidden_sizes=checkpoint['hidden_sizes'],
            output_size=checkpoint['output_size'],
            dropout_rate=checkpoint['dropout_rate']
        )
        self.ffn_model.load_state_dict(checkpoint['model_state_dict'])
        self.ffn_model.to(self.device)
        self.ffn_model.eval() # Set to evaluation mode
        print("FFN model loaded.")

    def get_rewards(self, questions, answers):
        """
        Computes the reward for a given question-answer pair.
        """
        rewards = []
        for question, answer in zip(questions, answers):
            text = f"Question: {question} Answer: {answer}"
            
            # a. Get GPT-2 embedding
            embedding = extract_embedding(text, self.gpt2_model, self.tokenizer, self.device)
            
            # b. Scale the embedding
            # Scaler expects a 2D array, so reshape if it's 1D
            if embedding.ndim == 1:
                embedding_reshaped = embedding.reshape(1, -1)
            else:
                embedding_reshaped = embedding
            
            scaled_embedding = self.scaler.transform(embedding_reshaped)
            
            # c. Pass to FFN
            scaled_embedding_tensor = torch.tensor(scaled_embedding, dtype=torch.float32).to(self.device)
            
            with torch.no_grad():
                reward = self.ffn_model(scaled_embedding_tensor)
            rewards.append(reward.item())
        return rewards
        text = f"Question: {question} Answer: {answer}"
            
        # # a. Get GPT-2 embedding
        # embedding = extract_embedding(text, self.gpt2_model, self.tokenizer, self.device)
        
        # # b. Scale the embedding
        # # Scaler expects a 2D array, so reshape if it's 1D
        # if embedding.ndim == 1:
        #     embedding_reshaped = embedding.reshape(1, -1)
        # else:
        #     embedding_reshaped = embedding
        
        # scaled_embedding = self.scaler.transform(embedding_reshaped)
        
        # # c. Pass to FFN
        # scaled_embedding_tensor = torch.tensor(scaled_embedding, dtype=torch.float32).to(self.device)
        
        # with torch.no_grad():
        #     reward = self.ffn_model(scaled_embedding_tensor)
        # return reward.item()



# Non list implementation
class RewardFunction:
    def __init__(self, model, device="cuda" if torch.cuda.is_available() else "cpu"):
        self.model = model
        self.device = device
        print(f"Reward function initialized on device: {device}")
    
    def __call__(self, query_text: str, response_text: str) -> torch.Tensor:
        """
        Calculate rewards for each query-response pair
        
        Args:
            query_text: List of query/instruction strings
            response_text: List of response strings
            
        Returns:
            torch.Tensor of rewards
        """
        return self.model.get_rewards(query_text, response_text)





# ---- next cell ----
d = load_dataset("Columbia-NLP/DPO-tldr-summarisation-preferences")
train = d['train']
val = d['validation']
test = d['test']
dataset = train.add_column("sub_reddit", [x['subreddit'] for x in train['other_info']])
dataset_test = val.add_column("sub_reddit", [x['subreddit'] for x in val['other_info']])
dataset_eval = test.add_column("sub_reddit", [x['subreddit'] for x in test['other_info']])

# ---- next cell ----
df = dataset.to_pandas()
train_sr = ['AskDocs', 'legaladvice', 'Advice', 'askwomenadvice', 'AskReddit', 'needadvice', 'relationship_advice', 'dating_advice' ]
train_df = df.loc[ df['sub_reddit'].isin(train_sr)]
dataset = HFDataset.from_pandas(train_df)

# ---- next cell ----
reward_model = GPT2RewardModel(
    gpt2_model_name=GPT2_MODEL_NAME,
    ffn_model_path=FFN_MODEL_PATH,
    scaler_path=SCALER_PATH,
    device=DEVICE
)

# Initialize the reward function
reward_fn = RewardFunction(reward_model)


# ---- next cell ----
# Test the reward function with some example data
test_queries = [
    "What is machine learning?",
    "How does photosynthesis work?"
]

test_responses = [
    "Machine learning is a field of artificial intelligence that enables computers to learn from data without being explicitly programmed.",
    "Photosynthesis is the process where plants convert sunlight, water, and carbon dioxide into oxygen and glucose for energy."
]

# Get rewards for test data
rewards = reward_fn(test_queries, test_responses)
print("Test rewards:", rewards)

# Visualize the rewards
plt.figure(figsize=(8, 4))
plt.bar(range(len(test_queries)), rewards)
plt.xticks(range(len(test_queries)), test_queries, rotation=45, ha='right')
plt.ylabel('Reward Score')
plt.title('Reward Model Test Results')
plt.tight_layout()
plt.show()

# ---- next cell ----
# Format Dataset for GRPO Trainer
rem_col = dataset.column_names
rem_col.remove('prompt')
dataset_rew = dataset.remove_columns(rem_col)

# ---- next cell ----
# Create reward function that passes the prompt and answer to our finetuned GPT2 to predict the glicko score - volatility
def gpt_reward(prompts, completions, **kwargs):
    return reward_fn(prompts, completions)
        

# ---- next cell ----
max_seq_length = 512

fourbit_models = [
    # 4bit dynamic quants for superior accuracy and low memory use
    "unsloth/gemma-3-1b-it-unsloth-bnb-4bit",
    "unsloth/gemma-3-4b-it-unsloth-bnb-4bit",
    "unsloth/gemma-3-12b-it-unsloth-bnb-4bit",
    "unsloth/gemma-3-27b-it-unsloth-bnb-4bit",

    # Other popular models!
    "unsloth/Llama-3.1-8B",
    "unsloth/Llama-3.2-3B",
    "unsloth/Llama-3.3-70B",
    "unsloth/mistral-7b-instruct-v0.3",
    "unsloth/Phi-4",
] # More models at https://huggingface.co/unsloth

model, tokenizer = FastModel.from_pretrained(
    model_name = "unsloth/gemma-3-1b-it",
    max_seq_length = max_seq_length, # Choose any for long context!
    load_in_4bit = False,  # 4 bit quantization to reduce memory
    load_in_8bit = False, # [NEW!] A bit more accurate, uses 2x memory
    full_finetuning = False, # [NEW!] We have full finetuning now!
    # token = "hf_...", # use one if using gated models
)

# ---- next cell ----
model = FastModel.get_peft_model(
    model,
    finetune_vision_layers     = False, # Turn off for just text!
    finetune_language_layers   = True,  # Should leave on!
    finetune_attention_modules = True,  # Attention good for GRPO
    finetune_mlp_modules       = True,  # SHould leave on always!

    r = 8,           # Larger = higher accuracy, but might overfit
    lora_alpha = 8,  # Recommended alpha == r at least
    lora_dropout = 0,
    bias = "none",
    random_state = 3407,
)

# ---- next cell ----
# Ensure proper padding token
if tokenizer.pad_token is None:
    tokenizer.pad_token = tokenizer.eos_token
tokenizer.padding_side = 'left'
max_prompt_length = 480
max_seq_length = 512
# Configure GRPO - adjust based on your GPU memory
training_args = GRPOConfig(
    learning_rate = 5e-4,
    adam_beta1 = 0.9,
    adam_beta2 = 0.99,
    weight_decay = 0.1,
    warmup_ratio = 0.1,
    lr_scheduler_type = "cosine",
    optim = "adamw_torch_fused",
    logging_steps = 1,
    per_device_train_batch_size = 12,
    gradient_accumulation_steps = 4, # Increase to 4 for smoother training
    num_generations = 4, # Decrease if out of memory
    max_prompt_length = max_prompt_length,
    max_completion_length = max_seq_length - max_prompt_length,
    num_train_epochs = 3, # Set to 1 for a full training run
    max_steps = 150,
    save_steps = 50,
    max_grad_norm = 0.1,
    report_to = "none", # Can use Weights & Biases
    output_dir = "outputs",
)

# ---- next cell ----
trainer = GRPOTrainer(
        model=model,
        tokenizer=tokenizer,
        args=training_args,
        train_dataset=dataset_rew,
        reward_funcs=gpt_reward  # This is the correct place for the reward_model parameter
    )

# ---- next cell ----
trainer.train()

# ---- next cell ----
# Save the model to a local directory
output_path = "gemma_glicko_base"
if pess:
    output_path = 'gemma_glicko_pess'
trainer.save_model(output_path)
print(f"Model saved to {output_path}")

# ---- next cell ----
logs = trainer.state.log_history
rewards = [log.get('reward', 0) for log in logs if 'reward' in log]
plt.plot(rewards)

# ---- next cell ----
pess

# ---- next cell ----

