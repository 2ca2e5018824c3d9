"""
Dataset Formatting for Qwen2.5-VL GRPO Training
"""

import logging
from PIL import Image
from datasets import Image as ImageFeature

logger = logging.getLogger(__name__)

REASONING_START = "<reasoning>"
REASONING_END = "</reasoning>"
SOLUTION_START = "<answer>"
SOLUTION_END = "</answer>"

def is_numeric_answer(example):
    try:
        float(example["answer"])
        return True
    except:
        return False

def resize_images(example):
    image = example["decoded_image"]
    # Resize to (512, 512) as per sample code for consistency/memory
    image = image.resize((512, 512))
    example["decoded_image"] = image
    return example

def convert_to_rgb(example):
    image = example["decoded_image"]
    if image.mode != "RGB":
        image = image.convert("RGB")
    example["decoded_image"] = image
    return example

def make_conversation(example):
    # The user's text prompt with reasoning instructions
    text_content = (
        f"{example['question']}. Also first provide your reasoning or working out"\
        f" on how you would go about solving the question between {REASONING_START} and {REASONING_END}"
        f" and then your final answer between {SOLUTION_START} and (put a single float here) {SOLUTION_END}"
    )

    # Construct the prompt properly for the processor
    prompt = [
        {
            "role": "system",
            "content": [
                {"type": "text", "text": f"You are a helpful assistant. You must first provide your reasoning in {REASONING_START} tags, and then your numeric answer in {SOLUTION_START} tags."}
            ],
        },
        {
            "role": "user",
            "content": [
                {"type": "image"}, 
                {"type": "text", "text": text_content},
            ],
        },
    ]
    
    # Return separated fields suitable for map
    return {
        "prompt": prompt, 
        "image": example["decoded_image"], 
        "answer": example["answer"]
    }

def prepare_dataset(dataset, tokenizer, num_proc=1):
    """
    Full pipeline to prepare the dataset:
    1. Filter numeric answers
    2. Resize images
    3. Convert to RGB
    4. Create conversation format
    5. Clean columns
    6. Apply chat template
    """
    logger.info(f"Filtering for numeric answers (num_proc={num_proc})...")
    dataset = dataset.filter(is_numeric_answer, num_proc=num_proc)
    
    logger.info(f"Resizing images to 512x512 (num_proc={num_proc})...")
    dataset = dataset.map(resize_images, num_proc=num_proc)
    
    logger.info(f"Converting images to RGB (num_proc={num_proc})...")
    dataset = dataset.map(convert_to_rgb, num_proc=num_proc)
    
    logger.info(f"Formatting conversations (num_proc={num_proc})...")
    dataset = dataset.map(make_conversation, num_proc=num_proc, load_from_cache_file=False)
    
    # Remove original image column and rename decoded_image if needed
    # (Based on sample code logic, but here make_conversation already returns 'image')
    # Use select_columns to keep only what we need to avoid legacy column issues
    dataset = dataset.select_columns(["prompt", "image", "answer"])

    # Cast image column to Image feature to ensure it decodes to PIL.Image
    dataset = dataset.cast_column("image", ImageFeature())
    
    return dataset