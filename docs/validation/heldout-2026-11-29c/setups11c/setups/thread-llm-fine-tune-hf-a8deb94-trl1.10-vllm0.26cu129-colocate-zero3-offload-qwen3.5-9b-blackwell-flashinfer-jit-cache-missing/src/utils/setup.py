from typing import Dict, List, Union, Optional, Protocol, Callable, Any
import re

from omegaconf import DictConfig, OmegaConf
from hydra.utils import instantiate, get_method

import importlib

datasets = importlib.import_module("datasets")
HFDataset = datasets.Dataset
HFIterableDataset = datasets.IterableDataset

import torch
from torch.utils.data import Dataset

from transformers import (
    AutoTokenizer,
    AutoProcessor,
    PreTrainedTokenizer,
    ProcessorMixin,
    AutoModelForCausalLM,
    AutoModelForImageTextToText,
    PreTrainedModel,
    TrainingArguments,
)

from peft import PeftModel, prepare_model_for_kbit_training

from ..datasets import *
from .distributed_runtime import build_distributed_runtime_snapshot
from .dataloader_runtime import resolve_dataloader_runtime
from .model_loading import ModelLoadPlanner
from .vision_patch_embedding import validate_vision_patch_embedding_config
from .config_validation import validate_training_arguments_config
from .peft_initialization import initialize_peft_model
from .collate_fns import SFTDynamicPaddingCollator, collate_fn_vlm
from ..helpers import filter_chat_template_kwargs
from ..rewards import RewardManager


class SetUp:
    def __init__(
        self,
        config: DictConfig,
    ) -> None:
        self.config = config
        self.data_type = self.config.data_type
        self.revision = self.config.revision
        validate_vision_patch_embedding_config(config=self.config)
        self.distributed_runtime_snapshot = build_distributed_runtime_snapshot(
            config=config,
        )
        self.dataloader_runtime = resolve_dataloader_runtime(
            config=config,
            distributed_runtime_snapshot=self.distributed_runtime_snapshot,
        )

        if config.precision in [32, "32"]:
            self.dtype = torch.float32
        elif config.precision in [16, "16"]:
            self.dtype = torch.float16
        elif config.precision == "bf16":
            self.dtype = torch.bfloat16
        else:
            self.dtype = "auto"

        self.model_load_planner = ModelLoadPlanner(
            config=self.config,
        )
        self.hf_deepspeed_config = None

    def get_train_datasets(
        self,
    ) -> Dict[str, Optional[Union[Dataset, HFDataset, HFIterableDataset]]]:
        validate_training_arguments_config(
            config=self.config,
        )
        if (
            self.config.fine_tune_method in {"grpo", "async_grpo"}
            and self.config.agentic.enabled
            and self.config.agentic.data_source == "environment"
        ):
            return {
                "train": None,
                "val": None,
            }
        if self.config.fine_tune_method == "sft":
            return {
                "train": self._get_train_dataset(),
                "val": self._get_val_dataset() if self.config.use_validation else None,
            }

        dataset = self._get_dataset()
        return {
            "train": dataset["train"],
            "val": dataset["val"],
        }

    def get_test_dataset(self) -> Dataset:
        test_dataset: Dataset = instantiate(
            self.config.test_dataset[self.data_type],
        )
        return test_dataset

    def get_ds_config(self) -> Optional[Dict[str, Any]]:
        if self.config.strategy == "deepspeed":
            ds_config = OmegaConf.to_container(
                self.config.deepspeed,
                resolve=True,
            )
            return ds_config
        return None

    def get_training_arguments(
        self,
        ds_config: Optional[Dict[str, Any]],
    ) -> TrainingArguments:
        validate_training_arguments_config(
            config=self.config,
        )

        training_argument_kwargs = self._build_dataloader_training_kwargs()
        if ds_config is not None:
            training_argument_kwargs["deepspeed"] = ds_config

        training_arguments: TrainingArguments = instantiate(
            self.config.training_arguments,
            **training_argument_kwargs,
            _convert_="all",
        )
        return training_arguments

    def get_dataloader_kwargs(self) -> Dict[str, Any]:
        dataloader_kwargs = {
            "num_workers": self.dataloader_runtime["num_workers_per_process"],
            "pin_memory": self.dataloader_runtime["pin_memory"],
        }
        if self.dataloader_runtime["num_workers_per_process"] > 0:
            dataloader_kwargs["persistent_workers"] = self.dataloader_runtime[
                "persistent_workers"
            ]
            dataloader_kwargs["prefetch_factor"] = self.dataloader_runtime[
                "prefetch_factor"
            ]
        return dataloader_kwargs

    def get_data_encoder(self) -> Union[PreTrainedTokenizer, ProcessorMixin]:
        if self.config.is_preprocessed:
            data_encoder_path = self.config.custom_data_encoder_path
        else:
            data_encoder_path = self.config.pretrained_model_name

        if self.config.modality == "text":
            data_encoder = AutoTokenizer.from_pretrained(
                data_encoder_path,
                use_fast=True,
                revision=self.revision,
            )

            if data_encoder.chat_template is None:
                reference_data_encoder = AutoTokenizer.from_pretrained(
                    self.config.reference_data_encoder_name
                )
                data_encoder.chat_template = reference_data_encoder.chat_template

            if data_encoder.pad_token_id is None:
                data_encoder.pad_token_id = data_encoder.eos_token_id
            if self.config.left_padding:
                data_encoder.padding_side = "left"
            else:
                data_encoder.padding_side = "right"
        else:
            data_encoder = AutoProcessor.from_pretrained(
                data_encoder_path,
                revision=self.revision,
            )

            if data_encoder.tokenizer.chat_template is None:
                reference_data_encoder = AutoTokenizer.from_pretrained(
                    self.config.reference_data_encoder_name
                )
                data_encoder.tokenizer.chat_template = (
                    reference_data_encoder.chat_template
                )

            if data_encoder.tokenizer.pad_token_id is None:
                data_encoder.tokenizer.pad_token_id = (
                    data_encoder.tokenizer.eos_token_id
                )
            if self.config.left_padding:
                data_encoder.tokenizer.padding_side = "left"
            else:
                data_encoder.tokenizer.padding_side = "right"

        return data_encoder

    def get_data_collator(
        self,
        data_encoder: Union[PreTrainedTokenizer, ProcessorMixin],
    ) -> Optional[Callable[..., Dict[str, torch.Tensor]]]:
        if self.config.fine_tune_method != "sft":
            return None
        if self.config.sft_padding_strategy != "dynamic":
            return collate_fn_vlm if self.config.modality != "text" else None
        if self.config.left_padding:
            raise ValueError("SFT dynamic padding does not support left_padding=true.")

        if self.config.modality == "text":
            pad_token_id = data_encoder.pad_token_id
        else:
            pad_token_id = data_encoder.tokenizer.pad_token_id

        if pad_token_id is None:
            raise ValueError("SFT dynamic padding requires a pad token id.")

        return SFTDynamicPaddingCollator(
            pad_token_id=pad_token_id,
            pad_to_multiple_of=self.config.pad_to_multiple_of,
            ignore_index=-100,
        )

    def finalize_training_arguments(
        self,
        training_arguments: TrainingArguments,
        data_encoder: Union[PreTrainedTokenizer, ProcessorMixin],
    ) -> TrainingArguments:
        if not hasattr(
            training_arguments,
            "chat_template_kwargs",
        ):
            return training_arguments

        chat_template_kwargs = training_arguments.chat_template_kwargs
        if chat_template_kwargs is None:
            return training_arguments
        if not isinstance(chat_template_kwargs, dict):
            raise ValueError("training_arguments.chat_template_kwargs must be a dict.")

        training_arguments.chat_template_kwargs = filter_chat_template_kwargs(
            data_encoder=data_encoder,
            chat_template_kwargs=chat_template_kwargs,
        )
        return training_arguments

    def get_model(self) -> PreTrainedModel:
        is_inference = self.config.mode in ["test", "test_large"]
        model_load_plan = self.model_load_planner.build()
        self.hf_deepspeed_config = model_load_plan.hf_deepspeed_config

        if self.config.modality == "text":
            model = AutoModelForCausalLM.from_pretrained(
                pretrained_model_name_or_path=model_load_plan.pretrained_model_name,
                config=model_load_plan.pretrained_config,
                dtype=self.dtype,
                attn_implementation=self.config.attn_implementation,
                quantization_config=model_load_plan.quantization_config,
                device_map=model_load_plan.device_map,
                revision=self.revision,
            )
        else:
            model = AutoModelForImageTextToText.from_pretrained(
                pretrained_model_name_or_path=model_load_plan.pretrained_model_name,
                config=model_load_plan.pretrained_config,
                dtype=self.dtype,
                attn_implementation=self.config.attn_implementation,
                quantization_config=model_load_plan.quantization_config,
                device_map=model_load_plan.device_map,
                revision=self.revision,
            )

        if is_inference:
            model.eval()
            if self.config.is_peft:
                model = PeftModel.from_pretrained(
                    model=model,
                    model_id=self.config.peft_test.adapter_path,
                    adapter_name=self.config.peft_test.adapter_name,
                )

            return model

        if self.config.gradient_checkpointing:
            model.gradient_checkpointing_enable(
                gradient_checkpointing_kwargs=self.config.gradient_checkpointing_kwargs,
            )

        if self.config.dense_to_moe.router_only_train:
            if self.config.is_peft or self.config.is_quantized:
                raise ValueError("router_only_train is not supported with PEFT.")

            if self.config.dense_to_moe.router_with_lora:
                raise ValueError(
                    "router_with_lora is not supported with router_only_train."
                )

            router_regex = self.config.dense_to_moe.router_regex

            for param in model.parameters():
                param.requires_grad = False

            router_pattern = re.compile(router_regex)

            unfrozen = 0
            total = 0
            for name, p in model.named_parameters():
                total += 1
                if router_pattern.search(name):
                    p.requires_grad = True
                    unfrozen += 1

            if unfrozen == 0:
                raise RuntimeError(
                    "No router parameters were unfrozen. "
                    f"Check router_regex='{router_regex}' against model.named_parameters()."
                )

            print(f"[router-only] Unfroze {unfrozen} / {total} parameters (tensors).")

        if self.config.is_quantized and OmegaConf.select(
            self.config,
            "quantization_config.load_in_4bit",
            default=False,
        ):
            model = prepare_model_for_kbit_training(model)

        model = initialize_peft_model(
            model=model,
            config=self.config,
            pretrained_model_name=model_load_plan.pretrained_model_name,
        )

        if self.config.dense_to_moe.router_with_lora:
            router_regex = self.config.dense_to_moe.router_lora_regex

            for param in model.parameters():
                param.requires_grad = False

            router_pattern = re.compile(router_regex)

            unfrozen_router = 0
            unfrozen_lora = 0
            total = 0

            for name, p in model.named_parameters():
                total += 1

                if router_pattern.search(name):
                    p.requires_grad = True
                    unfrozen_router += 1
                    continue

                if "lora_" in name:
                    p.requires_grad = True
                    unfrozen_lora += 1
                    continue

            if unfrozen_router == 0:
                raise RuntimeError(
                    "No router parameters were unfrozen. "
                    f"Check router_regex='{router_regex}' against model.named_parameters()."
                )

            if unfrozen_lora == 0:
                raise RuntimeError(
                    "No LoRA parameters were unfrozen. "
                    "Check that get_peft_model injected LoRA modules correctly."
                )

            print(
                f"[router-with-lora] Unfroze router={unfrozen_router}, lora={unfrozen_lora} / {total} parameters (tensors). "
            )

        return model

    def get_reward_manager(self) -> RewardManager:
        reward_manager: RewardManager = instantiate(
            self.config.reward_manager,
        )
        return reward_manager

    def get_agentic_trainer_kwargs(
        self,
        model: Union[str, PreTrainedModel],
        train_dataset: Optional[Union[HFDataset, HFIterableDataset]],
        training_arguments: TrainingArguments,
        data_encoder: Union[PreTrainedTokenizer, ProcessorMixin],
        reward_funcs: List[Callable[..., List[float]]],
        rank: int,
    ) -> Dict[str, Any]:
        if (
            self.config.fine_tune_method not in {"grpo", "async_grpo"}
            or not self.config.agentic.enabled
        ):
            return {}

        tools = self._get_agentic_tools()
        environment_factory = self._get_agentic_environment_factory()
        trainer_kwargs = {
            "tools": tools,
            "environment_factory": environment_factory,
        }
        if self.config.agentic.rollout_worker is None or rank != 0:
            return trainer_kwargs
        if not isinstance(model, str):
            raise TypeError("Async agentic rollout workers require a model identifier.")
        if train_dataset is None:
            raise ValueError("Async agentic rollout workers require a train dataset.")

        trainer_kwargs["rollout_worker"] = self._get_agentic_rollout_worker(
            model=model,
            train_dataset=train_dataset,
            training_arguments=training_arguments,
            data_encoder=data_encoder,
            reward_funcs=reward_funcs,
            tools=tools,
            environment_factory=environment_factory,
        )
        return trainer_kwargs

    def _build_dataloader_training_kwargs(self) -> Dict[str, Any]:
        return {
            "dataloader_num_workers": self.dataloader_runtime[
                "num_workers_per_process"
            ],
            "dataloader_pin_memory": self.dataloader_runtime["pin_memory"],
            "dataloader_persistent_workers": self.dataloader_runtime[
                "persistent_workers"
            ],
            "dataloader_prefetch_factor": self.dataloader_runtime["prefetch_factor"],
        }

    def _get_train_dataset(self) -> HFDataset:
        train_dataset: _SFTDataset = instantiate(
            self.config.dataset[self.data_type],
            split=self.config.split.train,
        )
        return train_dataset.to_hf_dataset()

    def _get_val_dataset(self) -> HFDataset:
        val_dataset: _SFTDataset = instantiate(
            self.config.dataset[self.data_type],
            split=self.config.split.val,
        )
        return val_dataset.to_hf_dataset()

    def _get_dataset(
        self,
    ) -> Dict[str, Optional[Union[HFDataset, HFIterableDataset]]]:
        dataset: _DatasetBuilder = instantiate(
            self.config.dataset[self.data_type],
        )
        return dataset()

    def _get_agentic_tools(self) -> List[Callable[..., Any]]:
        return [
            get_method(path=str(tool_path)) for tool_path in self.config.agentic.tools
        ]

    def _get_agentic_environment_factory(
        self,
    ) -> Optional[Union[Callable[..., Any], Dict[str, Callable[..., Any]]]]:
        factory_config = self.config.agentic.environment_factory
        if factory_config is None:
            return None
        if "_target_" in factory_config:
            return instantiate(
                factory_config,
                _partial_=True,
                _convert_="all",
            )
        return {
            str(name): instantiate(
                configured_factory,
                _partial_=True,
                _convert_="all",
            )
            for name, configured_factory in factory_config.items()
        }

    def _get_agentic_rollout_worker(
        self,
        model: str,
        train_dataset: Union[HFDataset, HFIterableDataset],
        training_arguments: TrainingArguments,
        data_encoder: Union[PreTrainedTokenizer, ProcessorMixin],
        reward_funcs: List[Callable[..., List[float]]],
        tools: List[Callable[..., Any]],
        environment_factory: Optional[
            Union[Callable[..., Any], Dict[str, Callable[..., Any]]]
        ],
    ) -> Any:
        max_inflight_tasks = training_arguments.max_inflight_tasks
        if max_inflight_tasks < 0:
            max_inflight_tasks = (
                training_arguments.max_staleness
                * training_arguments.per_device_train_batch_size
                * training_arguments.gradient_accumulation_steps
                * self.distributed_runtime_snapshot["world_size"]
            )

        return instantiate(
            self.config.agentic.rollout_worker,
            model_name=model,
            dataset=train_dataset,
            reward_funcs=reward_funcs,
            processing_class=data_encoder,
            tools=tools,
            environment_factory=environment_factory,
            num_generations=training_arguments.num_generations,
            max_inflight_tasks=max_inflight_tasks,
            queue_maxsize=training_arguments.queue_maxsize,
            vllm_server_url=training_arguments.vllm_server_base_url,
            max_tokens=training_arguments.max_completion_length,
            temperature=training_arguments.temperature,
            top_p=training_arguments.top_p,
            top_k=training_arguments.top_k,
            min_p=training_arguments.min_p,
            repetition_penalty=training_arguments.repetition_penalty,
            request_timeout=training_arguments.request_timeout,
            chat_template_kwargs=training_arguments.chat_template_kwargs,
            max_tool_calling_iterations=training_arguments.max_tool_calling_iterations,
            log_completions=training_arguments.log_completions,
            num_completions_to_print=training_arguments.num_completions_to_print,
            fork_threshold_tokens=training_arguments.fork_threshold_tokens,
            _convert_="all",
        )


class _SFTDataset(Protocol):
    def to_hf_dataset(self) -> HFDataset: ...


class _DatasetBuilder(Protocol):
    def __call__(
        self,
    ) -> Dict[str, Optional[Union[HFDataset, HFIterableDataset]]]: ...
