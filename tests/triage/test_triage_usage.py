# ruff: noqa: E501  (log lines quoted whole, as the threads print them)
"""Data and usage failures of the HF / torch stack (issue #36: rules/knowledge/known_failures/
usage.yaml), each with a real log where it fires and a near-miss where it stays quiet; the values
each reads from the log (``reads``) and the user's frame that passed the data (``usage``).

The firing logs are the dev sets' (docs/validation/heldout-2026-11-30/logs18c 005 and 006, logs18a
006; heldout-2026-11-29 logs3 and logs7) or excerpts of the public threads named above each.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from envdoctor.triage import usage
from tests.triage.helpers import findings, scan_bytes

DEV = Path(__file__).resolve().parents[2] / "docs" / "validation"


def _dev(rel: str) -> str:
    return (DEV / rel).read_text(encoding="utf-8", errors="replace")


def _usage(log: str) -> list:
    return [f for f in findings(scan_bytes(log)) if f.rule == "TRI011"]


def _one(log: str, entry: str):
    found = [f for f in findings(scan_bytes(log)) if f"({entry})" in f.message]
    assert found, [(f.rule, f.message[:200]) for f in findings(scan_bytes(log))]
    return found[0]


def _quiet(log: str, entry: str) -> None:
    assert not [f for f in findings(scan_bytes(log)) if f"({entry})" in f.message]


# -- labels beyond num_labels ------------------------------------------------------------------------


def test_label_beyond_num_labels_names_the_target_and_the_users_call():
    """logs18c/005: labels 1..4 with num_labels=4 (fixed by "Make all labels 0-indexed")."""
    f = _one(_dev("heldout-2026-11-30/logs18c/logs/005.log"), "class-label-beyond-num-labels")
    assert f.severity.value == "error"
    assert "a target of 4" in f.message and "more than 4 outputs" in f.message
    assert "3052356019.py:28 in run_single_experiment (`train_output = trainer.train()`)" in f.message
    assert 'r["label"] - 1' in f.fix and "num_labels=" in f.fix
    assert f.evidence["values"] == {"target": "4"}


CUDA_ASSERT = (  # https://github.com/milesial/Pytorch-UNet/issues/258 (CUDA: no target named)
    "RuntimeError: CUDA error: device-side assert triggered\n"
    "/pytorch/aten/src/THCUNN/SpatialClassNLLCriterion.cu:106: cunn_SpatialClassNLLCriterion_updateOutput_kernel"
    ": block: [0,0,0], thread: [725,0,0] Assertion `t >= 0 && t < n_classes` failed\n"
)


def test_the_cuda_assertion_of_the_same_class_fires():
    f = _one(CUDA_ASSERT, "class-label-beyond-num-labels")
    assert f.severity.value == "error" and "CUDA_LAUNCH_BLOCKING=1" in f.fix


def test_an_index_out_of_bounds_of_another_tensor_is_not_a_label():
    """torch's indexing error (a tensor's dimension, not a class) is another failure."""
    log = (
        "Traceback (most recent call last):\n"
        '  File "train.py", line 12, in <module>\n'
        "    x = scores[4]\n"
        "IndexError: index 4 is out of bounds for dimension 0 with size 4\n"
    )
    _quiet(log, "class-label-beyond-num-labels")


def test_target_out_of_bounds_raised_in_another_loss_frame_is_left_alone():
    """The raising frames say where cross-entropy is: a traceback that shows torch's frames, none
    of them the loss's, is another failure with the same words."""
    log = (
        "Traceback (most recent call last):\n"
        '  File "/usr/lib/python3.10/site-packages/torch/utils/data/dataloader.py", line 630, in __next__\n'
        "    data = self._next_data()\n"
        "IndexError: Target 4 is out of bounds.\n"
    )
    _quiet(log, "class-label-beyond-num-labels")


# -- a head reloaded without num_labels ------------------------------------------------------------


def test_head_size_mismatch_reads_both_shapes_and_the_head_dimension():
    """logs18c/006: the adapter's score head has 4 rows, the model was built with 2."""
    f = _one(_dev("heldout-2026-11-30/logs18c/logs/006.log"), "classifier-head-size-mismatch-on-load")
    assert f.severity.value == "error"
    assert (
        "score.modules_to_save.default.weight: the checkpoint holds [4, 1024], the model built here [2, 1024]"
        in (f.message)
    )
    assert "dimension 0: 4 in the checkpoint, 2 in the model" in f.message
    assert "AutoModelForSequenceClassification.from_pretrained(" in f.message  # the user's call
    assert "num_labels=N" in f.fix


def test_mismatched_sizes_ignored_on_purpose_are_quiet():
    """transformers' warning when ignore_mismatched_sizes=True replaced the head (a healthy run)."""
    log = (
        "Some weights of Qwen3ForSequenceClassification were not initialized from the model checkpoint at x "
        "and are newly initialized because the shapes did not match:\n"
        "- score.weight: found shape torch.Size([4, 1024]) in the checkpoint and torch.Size([2, 1024]) in the "
        "model instantiated\n"
        "You should probably TRAIN this model on a down-stream task to be able to use it for predictions.\n"
        "{'loss': 0.69, 'grad_norm': 1.2, 'learning_rate': 2e-05, 'epoch': 0.1}\n"
    )
    assert _usage(log) == []


def test_a_body_layer_size_mismatch_is_not_the_head():
    """https://github.com/MzeroMiko/VMamba/issues/238: another architecture's layers, not a head."""
    log = (
        "RuntimeError: Error(s) in loading state_dict for VSSM:\n"
        "\tsize mismatch for layers.1.blocks.1.op.A_logs: copying a param with shape torch.Size([768, 1]) from "
        "checkpoint, the shape in current model is torch.Size([1536, 1]).\n"
    )
    _quiet(log, "classifier-head-size-mismatch-on-load")
    _quiet(log, "vocab-size-mismatch-on-load")


def test_a_lora_rank_mismatch_is_neither_a_head_nor_a_vocabulary():
    """https://github.com/huggingface/peft/issues/554: the adapter's rank differs (lora_A rows)."""
    log = (
        "RuntimeError: Error(s) in loading state_dict for PeftModelForSequenceClassification:\n"
        "        size mismatch for base_model.model.transformer.h.0.self_attention.query_key_value.lora_A.default.weight: "
        "copying a param with shape torch.Size([16, 4096]) from checkpoint, the shape in current model is "
        "torch.Size([8, 4096]).\n"
    )
    _quiet(log, "classifier-head-size-mismatch-on-load")
    _quiet(log, "vocab-size-mismatch-on-load")


def test_another_base_model_is_not_a_resized_vocabulary():
    """An adapter of one family loaded on another (https://github.com/huggingface/autotrain-advanced/issues/487
    names base_model.model.model.embed_tokens.weight; its layers differ 3584 against 4096): the
    width differs too, so the rows are not a vocabulary resized."""
    log = (
        "RuntimeError: Error(s) in loading state_dict for PeftModelForCausalLM:\n"
        "\tsize mismatch for base_model.model.model.embed_tokens.weight: copying a param with shape "
        "torch.Size([152064, 3584]) from checkpoint, the shape in current model is torch.Size([128256, 4096]).\n"
    )
    _quiet(log, "vocab-size-mismatch-on-load")


# -- a vocabulary resized before saving -------------------------------------------------------------

VOCAB = (  # https://github.com/Jiuzhouh/PiVe/issues/4
    "RuntimeError: Error(s) in loading state_dict for T5ForConditionalGeneration:\n"
    "\tsize mismatch for shared.weight: copying a param with shape torch.Size([32101, 768]) from checkpoint, "
    "the shape in current model is torch.Size([32128, 768]).\n"
    "\tsize mismatch for lm_head.weight: copying a param with shape torch.Size([32101, 768]) from checkpoint, "
    "the shape in current model is torch.Size([32128, 768]).\n"
)


def test_vocab_size_mismatch_says_resize_token_embeddings():
    f = _one(VOCAB, "vocab-size-mismatch-on-load")
    assert f.severity.value == "error"
    assert "dimension 0: 32101 in the checkpoint, 32128 in the model" in f.message
    assert "resize_token_embeddings(len(tokenizer))" in f.fix
    _quiet(VOCAB, "classifier-head-size-mismatch-on-load")


# -- a DatasetDict where a split is expected ---------------------------------------------------------


def test_datasetdict_names_the_splits_and_the_users_cell():
    """logs18a/006: GRPOTrainer given load_dataset(...)'s DatasetDict (Windows paths, Jupyter)."""
    f = _one(_dev("heldout-2026-11-30/logs18a/logs/006.log"), "datasetdict-where-split-expected")
    assert f.severity.value == "error"
    assert "it was indexed with 0, and its splits are ['train']" in f.message
    assert "In[18]:1 (`trainer.train()`)" in f.message
    assert 'train_dataset=dataset["train"]' in f.fix


def test_a_missing_split_name_is_not_a_datasetdict_passed_as_a_dataset():
    log = (
        "Traceback (most recent call last):\n"
        '  File "train.py", line 9, in <module>\n'
        '    eval_ds = ds["validation"]\n'
        '  File "/opt/venv/lib/python3.11/site-packages/datasets/dataset_dict.py", line 72, in __getitem__\n'
        "    return super().__getitem__(k)\n"
        "KeyError: 'validation'\n"
    )
    _quiet(log, "datasetdict-where-split-expected")


# -- batches without labels --------------------------------------------------------------------------

NO_LOSS = (  # https://github.com/huggingface/transformers/issues/34392
    '  File "/usr/local/lib/python3.10/site-packages/transformers/trainer.py", line 3654, in compute_loss\n'
    "    raise ValueError(\n"
    "ValueError: The model did not return a loss from the inputs, only the following keys: logits. For "
    "reference, the inputs it received are input_ids,attention_mask,pixel_values,aspect_ratio_ids,"
    "aspect_ratio_mask,cross_attention_mask.\n"
)


def test_no_loss_reads_what_the_model_got():
    f = _one(NO_LOSS, "model-returned-no-loss")
    assert f.severity.value == "error"
    assert "the batches held no labels: the model was given input_ids,attention_mask" in f.message
    assert "yet the model" not in f.message
    assert "DataCollatorForLanguageModeling(tokenizer" in f.fix


def test_no_loss_with_labels_given_says_the_model_computes_none():
    """https://github.com/unslothai/unsloth/issues/1899's title: labels reached the model."""
    log = (
        "ValueError: The model did not return a loss from the inputs, only the following keys: logits. For "
        "reference, the inputs it received are input_ids,attention_mask,labels.\n"
    )
    f = _one(log, "model-returned-no-loss")
    assert "the batches held labels, yet the model returned logits only" in f.message
    assert "held no labels" not in f.message


def test_no_loss_with_labels_and_logits_leads_with_the_models_forward_not_the_data():
    """Held-out set 19, logs19b/002 (stabilityai/stablelm-3b-4e1t discussion 1): labels reached the
    model and its head made logits; the repository's modeling code dropped them (fixed on the Hub).
    Adding labels or a head class would not help: the fix is the model's code."""
    log = (
        "ValueError: The model did not return a loss from the inputs, only the following keys: logits. For "
        "reference, the inputs it received are input_ids,labels,attention_mask.\n"
    )
    f = _one(log, "model-returned-no-loss")
    assert f.fix.startswith("the model's own forward drops the labels it is given")
    assert "DataCollatorForLanguageModeling" not in f.fix and "not AutoModel)" not in f.fix
    assert "fixed revision" in f.fix


def test_no_loss_from_hidden_states_only_names_the_head_class():
    log = (
        "ValueError: The model did not return a loss from the inputs, only the following keys: "
        "last_hidden_state. For reference, the inputs it received are input_ids,labels,attention_mask.\n"
    )
    f = _one(log, "model-returned-no-loss")
    assert f.fix.startswith("load the class with the task's head") and "hidden states, no logits" in f.message


def test_no_loss_without_labels_keeps_the_data_fix_only():
    f = _one(NO_LOSS, "model-returned-no-loss")
    assert f.fix.startswith("give the batches labels") and "fixed revision" not in f.fix


def test_a_healthy_run_logging_its_loss_is_quiet():
    log = "".join(
        f"{{'loss': {1.5 - i / 10:.2f}, 'grad_norm': 0.9, 'learning_rate': 2e-05, 'epoch': {i / 10}}}\n"
        for i in range(1, 6)
    )
    assert _usage(log) == []


# -- no column the model takes -----------------------------------------------------------------------

NO_COLUMNS = (  # transformers' Trainer._remove_unused_columns, as https://github.com/huggingface/transformers/issues/25054 meets it
    "ValueError: No columns in the dataset match the model's forward method signature. The following columns "
    "have been ignored: [text, label_text]. Please check the dataset and model. You may need to set "
    "`remove_unused_columns=False` in `TrainingArguments`.\n"
)


def test_no_columns_names_the_dropped_columns():
    f = _one(NO_COLUMNS, "no-dataset-column-matches-forward")
    assert "the Trainer dropped every column: [text, label_text]" in f.message
    assert "remove_unused_columns=False" in f.fix and "dataset.map(" in f.fix


def test_the_trainers_info_about_ignored_columns_is_quiet():
    """The Trainer's own log line on a run that goes on (columns it ignores, on purpose)."""
    log = (
        "The following columns in the training set don't have a corresponding argument in "
        "`LlamaForCausalLM.forward` and have been ignored: text. If text are not expected by "
        "`LlamaForCausalLM.forward`,  you can safely ignore this message.\n"
        "{'loss': 1.2, 'grad_norm': 0.8, 'learning_rate': 2e-05, 'epoch': 0.1}\n"
    )
    assert _usage(log) == []


# -- sequences batched without padding ---------------------------------------------------------------

UNEQUAL = (  # https://github.com/huggingface/transformers/issues/39266
    "Traceback (most recent call last):\n"
    '  File "/home/cx/miniconda3/envs/demo/lib/python3.10/site-packages/transformers/tokenization_utils_base.py",'
    " line 767, in convert_to_tensors\n"
    "    tensor = as_tensor(value)\n"
    '  File "/home/cx/miniconda3/envs/demo/lib/python3.10/site-packages/transformers/tokenization_utils_base.py",'
    " line 729, in as_tensor\n"
    "    return torch.tensor(value)\n"
    "ValueError: expected sequence of length 15757 at dim 1 (got 16242)\n"
)


def test_unequal_lengths_read_the_two_lengths():
    f = _one(UNEQUAL, "batch-of-unequal-lengths")
    assert f.severity.value == "error"
    assert "one row has 15757 items at dimension 1, another 16242" in f.message
    assert "DataCollatorForSeq2Seq(tokenizer, label_pad_token_id=-100)" in f.fix


def test_overflowing_tokens_of_a_slow_tokenizer_are_another_failure():
    log = (
        "ValueError: Unable to create tensor returning overflowing tokens of different lengths. Please see if a "
        "fast version of this tokenizer is available to have this feature available.\n"
    )
    _quiet(log, "batch-of-unequal-lengths")


# -- a model moved off the meta device ---------------------------------------------------------------

META = (  # https://github.com/tloen/alpaca-lora/issues/368 (Trainer moving a model loaded with device_map)
    "Traceback (most recent call last):\n"
    '  File "/Users/assmdx/llma/ld/alpaca-lora/finetune.py", line 236, in train\n'
    "    trainer = transformers.Trainer(\n"
    '  File "/Users/assmdx/llma/ld/lib/python3.10/site-packages/transformers/trainer.py", line 498, in __init__\n'
    "    self._move_model_to_device(model, args.device)\n"
    '  File "/Users/assmdx/llma/ld/lib/python3.10/site-packages/torch/nn/modules/module.py", line 1145, in to\n'
    "    return self._apply(convert)\n"
    "NotImplementedError: Cannot copy out of meta tensor; no data!\n"
)


def test_meta_tensor_moved_is_a_warning_naming_the_call():
    f = _one(META, "model-parameters-on-meta-device-moved")
    assert f.severity.value == "warning"  # several loads leave meta parameters: the code says which
    assert "finetune.py:236 in train (`trainer = transformers.Trainer(`)" in f.message
    assert "device_map" in f.fix


def test_meta_device_words_in_an_info_line_are_quiet():
    log = (
        "INFO: model loaded on the meta device first, then materialised (no 'Cannot copy out of meta tensor' "
        "path)\n{'loss': 1.1, 'grad_norm': 0.5, 'learning_rate': 1e-05, 'epoch': 0.2}\n"
    )
    assert _usage(log) == []


# -- two dtypes in one layer -------------------------------------------------------------------------


def test_dtype_mismatch_reads_the_two_dtypes_as_a_warning():
    """heldout-2026-11-29/logs3/001 (TRL 0.7.8's DPOTrainer: a release's own cast) — a warning that
    names both causes, the library's kernel among them."""
    f = _one(_dev("heldout-2026-11-29/logs3/001.log"), "layer-and-input-dtype-mismatch")
    assert f.severity.value == "warning"
    assert "one operand is Float and the other BFloat16" in f.message
    assert "bf16=True" in f.fix and "upgrade that library" in f.fix
    assert "TRL 0.7.8's DPOTrainer" in f.message  # the library's own cast named first


def test_a_dtype_word_in_a_config_dump_is_quiet():
    log = "torch_dtype: bfloat16\nmixed_precision: bf16\n{'loss': 0.9, 'grad_norm': 0.4, 'epoch': 0.1}\n"
    assert _usage(log) == []


# -- a purely quantized model ------------------------------------------------------------------------

QUANTIZED = (  # https://github.com/AGI-Edgerunners/LLM-Adapters/issues/57
    "ValueError: You cannot perform fine-tuning on purely quantized models. Please attach trainable adapters on"
    " top of the quantized model to correctly perform fine-tuning. Please see: "
    "https://huggingface.co/docs/transformers/peft for more details\n"
)


def test_purely_quantized_model_says_attach_adapters():
    f = _one(QUANTIZED, "fine-tuning-a-purely-quantized-model")
    assert f.severity.value == "error" and "get_peft_model" in f.fix


def test_zero_trainable_params_at_inference_is_quiet():
    """https://github.com/hiyouga/LlamaFactory/issues/1735: the loader's own info line."""
    log = (
        "12/04/2023 14:00:20 - INFO - llmtuner.model.loader - trainable params: 0 || all params: 1836828672 || "
        "trainable%: 0.0000\n"
        "12/04/2023 14:00:20 - INFO - llmtuner.model.loader - This IS expected that the trainable params is 0 if "
        "you are using model for inference only.\n"
    )
    assert _usage(log) == []


# -- logits and labels of different counts -----------------------------------------------------------

BATCH = (  # https://github.com/gauthierdmn/question_generation/issues/4
    "Traceback (most recent call last):\n"
    '  File "train.py", line 171, in <module>\n'
    "    loss = criterion(pred.view(-1, pred.size(2)), question.view(-1))\n"
    '  File "/var/www/html/question_generate/env/lib/python3.6/site-packages/torch/nn/modules/loss.py", line 209,'
    " in forward\n"
    "    return F.nll_loss(input, target, weight=self.weight, ignore_index=self.ignore_index)\n"
    '  File "/var/www/html/question_generate/env/lib/python3.6/site-packages/torch/nn/functional.py", line 1869,'
    " in nll_loss\n"
    "    .format(input.size(0), target.size(0)))\n"
    "ValueError: Expected input batch_size (1216) to match target batch_size (1280)\n"
)


def test_batch_size_mismatch_reads_both_counts_and_the_users_line():
    f = _one(BATCH, "loss-input-and-target-batch-differ")
    assert "1216 rows of logits against 1280 labels" in f.message
    assert (
        "train.py:171 in <module> (`loss = criterion(pred.view(-1, pred.size(2)), question.view(-1))`)"
        in (f.message)
    )


def test_a_dataloader_batch_size_log_line_is_quiet():
    log = "***** Running training *****\n  Num examples = 14041\n  Instantaneous batch size per device = 8\n"
    assert _usage(log) == []


# -- several labels per example for cross-entropy ----------------------------------------------------

MULTI = (  # https://github.com/Vidhiwar/multimodule-ecg-classification/issues/4
    '  File "D:\\Miniconda3\\envs\\pytorch\\lib\\site-packages\\torch\\nn\\modules\\loss.py", line 1150, in forward\n'
    "    return F.cross_entropy(input, target, weight=self.weight,\n"
    '  File "D:\\Miniconda3\\envs\\pytorch\\lib\\site-packages\\torch\\nn\\functional.py", line 2846, in'
    " cross_entropy\n"
    "    return torch._C._nn.cross_entropy_loss(input, target, weight, _Reduction.get_enum(reduction))\n"
    "RuntimeError: 0D or 1D target tensor expected, multi-target not supported\n"
)


def test_multi_target_labels_fire():
    f = _one(MULTI, "multi-target-labels-for-cross-entropy")
    assert f.severity.value == "error" and "argmax(-1)" in f.fix


def test_multi_target_from_cosine_embedding_loss_is_another_loss():
    """https://github.com/Jhonve/GCN-Denoiser/issues/8: the same words from cosine_embedding_loss."""
    log = (
        '  File "/home/lzw/anaconda3/envs/realvsr/lib/python3.7/site-packages/torch/nn/functional.py", line 3460,'
        " in cosine_embedding_loss\n"
        "    return torch.cosine_embedding_loss(input1, input2, target, margin, reduction_enum)\n"
        "RuntimeError: 0D or 1D target tensor expected, multi-target not supported\n"
    )
    _quiet(log, "multi-target-labels-for-cross-entropy")


# -- integer labels for a float loss -----------------------------------------------------------------

LONG_FLOAT = (  # https://github.com/keonlee9420/PortaSpeech/issues/28
    '  File "C:\\Users\\x\\Anaconda3\\envs\\pytorch\\lib\\site-packages\\torch\\autograd\\__init__.py", line 132,'
    " in backward\n"
    "    allow_unreachable=True)  # allow_unreachable flag\n"
    "RuntimeError: Found dtype Long but expected Float\n"
)


def test_long_labels_for_a_float_loss_is_a_warning_without_the_mse_frame():
    f = _one(LONG_FLOAT, "integer-labels-for-regression-head")
    assert f.severity.value == "warning" and "a Long tensor met a Float loss" in f.message
    assert "num_labels=N" in f.fix


def test_long_labels_under_mse_loss_is_an_error():
    log = (
        '  File "/opt/venv/lib/python3.11/site-packages/transformers/models/bert/modeling_bert.py", line 1580,'
        " in forward\n"
        "    loss = loss_fct(logits.squeeze(), labels.squeeze())  # MSELoss: num_labels == 1\n"
        '  File "/opt/venv/lib/python3.11/site-packages/torch/nn/functional.py", line 3365, in mse_loss\n'
        "    return torch._C._nn.mse_loss(expanded_input, expanded_target, _Reduction.get_enum(reduction))\n"
        "RuntimeError: Found dtype Long but expected Float\n"
    )
    assert _one(log, "integer-labels-for-regression-head").severity.value == "error"


def test_a_double_against_float_label_is_not_integer_labels():
    """https://github.com/huggingface/sentence-transformers/issues/770: float64 labels, another fix."""
    _quiet("RuntimeError: Found dtype Double but expected Float\n", "integer-labels-for-regression-head")


# -- integer multi-hot labels ------------------------------------------------------------------------

BCE = (  # https://github.com/ando-khachatryan/HiDDeN/issues/28
    '  File "D:\\AP\\Anaconda\\ANaconda\\lib\\site-packages\\torch\\nn\\functional.py", line 3132, in'
    " binary_cross_entropy_with_logits\n"
    "    return torch.binary_cross_entropy_with_logits(input, target, weight, pos_weight, reduction_enum)\n"
    "RuntimeError: result type Float can't be cast to the desired output type Long\n"
)


def test_integer_multi_hot_labels_under_bce_is_an_error():
    f = _one(BCE, "integer-labels-for-multi-label-head")
    assert f.severity.value == "error" and "the labels are Long" in f.message


def test_an_in_place_op_of_the_users_code_is_a_warning_at_most():
    """https://github.com/vicFigure/EAutoDet/issues/5: the same words from a clamp_ in user code."""
    log = (
        '  File "/home/syj/lightweight/EAutoDet-master/utils/loss.py", line 211, in build_targets\n'
        "    indices.append((b, a, gj.clamp_(0, gain[3] - 1), gi.clamp_(0, gain[2] - 1)))\n"
        "RuntimeError: result type Float can't be cast to the desired output type long int\n"
    )
    _quiet(log, "integer-labels-for-multi-label-head")


# -- a tokenizer given something other than text ------------------------------------------------------

NOT_TEXT = (  # https://github.com/webis-de/small-text/issues/73 (a dataset with None items)
    "    encodings = self._tokenizer.encode_batch(\n"
    "TypeError: TextEncodeInput must be Union[TextInputSequence, Tuple[InputSequence, InputSequence]]\n"
)


def test_tokenizer_given_none_says_filter_the_column():
    f = _one(NOT_TEXT, "tokenizer-given-non-text")
    assert f.severity.value == "error" and "is not None" in f.fix


def test_the_older_wording_of_transformers_check_fires_too():
    """https://github.com/Shivanandroy/simpleT5/issues/10: transformers before 4.31 wrote "must of type"."""
    log = (
        "ValueError: text input must of type `str` (single example), `List[str]` (batch or single pretokenized "
        "example) or `List[List[str]]` (batch of pretokenized examples).\n"
    )
    assert _one(log, "tokenizer-given-non-text").severity.value == "error"


def test_a_tokenizer_warning_on_a_healthy_run_is_quiet():
    log = (
        "Token indices sequence length is longer than the specified maximum sequence length for this model "
        "(1100 > 1024). Running this sequence through the model will result in indexing errors\n"
        "{'loss': 2.1, 'grad_norm': 1.0, 'epoch': 0.1}\n"
    )
    assert _usage(log) == []


# -- no gradient path --------------------------------------------------------------------------------


def test_frozen_inputs_under_checkpointing_is_an_error_with_the_checkpoint_frames():
    """heldout-2026-11-29/logs7/014: peft#137 (LoRA + Seq2SeqTrainer + gradient checkpointing)."""
    log = (
        '  File "/opt/venv/lib/python3.10/site-packages/torch/utils/checkpoint.py", line 157, in backward\n'
        "    torch.autograd.backward(outputs_with_grad, args_with_grad)\n"
        + _dev("heldout-2026-11-29/logs7/014.log")
    )
    f = _one(log, "frozen-inputs-under-gradient-checkpointing")
    assert f.severity.value == "error"
    assert "enable_input_require_grads()" in f.fix and '"use_reentrant": False' in f.fix


def test_no_grad_fn_without_checkpointing_shown_is_a_warning():
    f = _one(_dev("heldout-2026-11-29/logs3/005.log"), "frozen-inputs-under-gradient-checkpointing")
    assert f.severity.value == "warning"


def test_a_requires_grad_warning_of_a_run_that_trains_is_quiet():
    log = (
        "UserWarning: None of the inputs have requires_grad=True. Gradients will be None\n"
        "{'loss': 1.0, 'grad_norm': 0.3, 'epoch': 0.1}\n{'loss': 0.9, 'grad_norm': 0.3, 'epoch': 0.2}\n"
    )
    assert _usage(log) == []


# -- the mechanism -----------------------------------------------------------------------------------


def test_shape_diff_names_the_dimensions_that_differ():
    assert usage.shape_diff("4, 1024", "2, 1024") == "dimension 0: 4 in the checkpoint, 2 in the model"
    assert usage.shape_diff("4", "2, 1024") == ""  # ranks differ: said as they are


@pytest.mark.parametrize(
    "entry",
    [
        "class-label-beyond-num-labels",
        "classifier-head-size-mismatch-on-load",
        "vocab-size-mismatch-on-load",
        "datasetdict-where-split-expected",
        "model-returned-no-loss",
        "no-dataset-column-matches-forward",
        "batch-of-unequal-lengths",
        "model-parameters-on-meta-device-moved",
        "layer-and-input-dtype-mismatch",
        "fine-tuning-a-purely-quantized-model",
        "loss-input-and-target-batch-differ",
        "multi-target-labels-for-cross-entropy",
        "integer-labels-for-regression-head",
        "integer-labels-for-multi-label-head",
        "tokenizer-given-non-text",
        "frozen-inputs-under-gradient-checkpointing",
    ],
)
def test_every_usage_entry_is_matched_by_triage_and_names_the_users_frame(entry):
    from envdoctor.triage import catalogue

    by_id = {e.id: e for e in catalogue.catalogue()[2].values()}
    e = by_id[entry]
    assert e.usage and e.triage_only and e.sources
    for template in e.reads:
        assert "{" in template


# -- a library's own code between the user's frame and the raise (review rv20d) ----------------------

FAST_BERT = (  # https://github.com/appvision-ai/fast-bert/issues/179 (fixed by fast-bert#191: its own masking)
    "Traceback (most recent call last):\n"
    '  File "Initial_test_k_lm.py", line 198, in <module>\n'
    '    optimizer_type="adamw") #adamw /lamb\n'
    '  File "/home/kino/.local/lib/python3.6/site-packages/fast_bert/learner_lm.py", line 143, in fit\n'
    "    outputs = self.model(inputs, masked_lm_labels=labels)\n"
    '  File "/home/kino/.local/lib/python3.6/site-packages/torch/nn/modules/module.py", line 532, in __call__\n'
    "    result = self.forward(*input, **kwargs)\n"
    '  File "/home/kino/.local/lib/python3.6/site-packages/transformers/modeling_bert.py", line 1003, in forward\n'
    "    masked_lm_loss = loss_fct(prediction_scores.view(-1, self.config.vocab_size), masked_lm_labels.view(-1))\n"
    '  File "/home/kino/.local/lib/python3.6/site-packages/torch/nn/functional.py", line 2021, in cross_entropy\n'
    "    return nll_loss(log_softmax(input, 1), target, weight, None, ignore_index, None, reduction)\n"
    '  File "/home/kino/.local/lib/python3.6/site-packages/torch/nn/functional.py", line 1838, in nll_loss\n'
    "    ret = torch._C._nn.nll_loss(input, target, weight, _Reduction.get_enum(reduction), ignore_index)\n"
    "IndexError: Target -1 is out of bounds.\n"
)


def test_a_librarys_frame_below_the_users_is_a_warning_naming_both_readings():
    """fast-bert's own LM fine-tuning masked labels with -1 (transformers >= 2.4 ignores -100): a
    bug of fast-bert's release, not the user's data; the raising frame is torch's either way."""
    f = _one(FAST_BERT, "class-label-beyond-num-labels")
    assert f.severity.value == "warning"
    assert "passes through fast-bert's own code after yours" in f.message
    assert f.evidence["passed_by"] == "fast-bert"
    assert "settles it" not in f.message


def test_a_negative_target_is_a_mask_value_not_a_class_beyond_the_head():
    """https://github.com/huggingface/transformers/issues/2737: a script of pytorch-transformers'
    days masked with -1; transformers 2.4 ignores -100."""
    log = FAST_BERT.replace(
        '  File "/home/kino/.local/lib/python3.6/site-packages/fast_bert/learner_lm.py", line 143, in fit\n'
        "    outputs = self.model(inputs, masked_lm_labels=labels)\n",
        "",
    )
    f = _one(log, "class-label-beyond-num-labels")
    assert f.severity.value == "error"
    assert "a target of -1: a mask value the loss does not ignore" in f.message
    assert "head needs more than" not in f.message


def test_a_librarys_collator_with_no_user_frame_is_a_warning_and_another_tracebacks_frame_is_not_named():
    """A traceback run from a library's CLI (axolotl's collator), after an earlier traceback of
    the user's own script: the frame search stays in the traceback that ends at the line."""
    earlier = (
        "Traceback (most recent call last):\n"
        '  File "/home/u/prep.py", line 12, in <module>\n'
        "    tok = load()\n"
        '  File "/usr/lib/python3/site-packages/requests/api.py", line 3, in get\n'
        '    raise ConnectionError("x")\n'
        "requests.exceptions.ConnectionError: x\n"
        "step 1 loss 2.3\n"
    )
    log = earlier + (
        "Traceback (most recent call last):\n"
        '  File "/opt/venv/lib/python3.10/site-packages/axolotl/cli/train.py", line 59, in do_cli\n'
        "    train(cfg=cfg)\n"
        '  File "/opt/venv/lib/python3.10/site-packages/axolotl/utils/collators.py", line 80, in __call__\n'
        "    features = self.tokenizer.pad(features)\n"
        '  File "/opt/venv/lib/python3.10/site-packages/transformers/tokenization_utils_base.py", line 767,'
        " in convert_to_tensors\n"
        "    tensor = as_tensor(value)\n"
        "ValueError: expected sequence of length 15757 at dim 1 (got 16242)\n"
    )
    f = _one(log, "batch-of-unequal-lengths")
    assert f.severity.value == "warning"
    assert "passes through axolotl's own code: either your data" in f.message
    assert "prep.py" not in f.message and "user_frame" not in f.evidence


def test_a_script_logging_a_caught_ragged_batch_and_skipping_it_is_quiet():
    """https://github.com/s-smits/modernbert-finetune/issues/6: the script catches the error, logs
    it and goes on (its own bug, fixed in #7): not an exception's line of the user's batches."""
    log = (
        "Training batch failed: expected sequence of length 692 at dim 2 (got 472). Skipping.\n"
        "Training batch failed: expected sequence of length 303 at dim 2 (got 320). Skipping.\n"
    )
    _quiet(log, "batch-of-unequal-lengths")


def test_a_datasetdict_through_a_trl_trainer_stays_an_error():
    """The message decides (``symptom_decides``): a trainer's frames between the user's call and
    datasets' refusal do not make the DatasetDict a library's."""
    log = (
        "Traceback (most recent call last):\n"
        '  File "/home/u/sft.py", line 30, in <module>\n'
        "    trainer.train()\n"
        '  File "/opt/venv/lib/python3.11/site-packages/trl/trainer/sft_trainer.py", line 900, in training_step\n'
        "    return super().training_step(*args, **kwargs)\n"
        '  File "/opt/venv/lib/python3.11/site-packages/datasets/dataset_dict.py", line 78, in __getitem__\n'
        "    raise KeyError(\n"
        "KeyError: \"Invalid key: 0. Please first select a split. For example: `my_dataset_dictionary['train'][0]`."
        " Available splits: ['train']\"\n"
    )
    f = _one(log, "datasetdict-where-split-expected")
    assert f.severity.value == "error" and "passes through" not in f.message
