"""Double of `verl/experimental/agent_loop/agent_loop.py`: what an agent loop sees, and what the
worker does with its output. Line numbers are v0.7.1's unless another version is named.
"""

import asyncio
import importlib
from abc import ABC, abstractmethod
from typing import Any, Optional

from verl import __version__, transformers_major, version_at_least
from verl.protocol import DataProto
from verl.tensor import Tensor, cat


class AgentLoopMetrics:
    """pydantic model, :172-178: unknown keys are ignored, the two timings must be numbers."""

    def __init__(self, generate_sequences: float = 0.0, tool_calls: float = 0.0, num_preempted: int = -1, **_ignored):
        for name, value in (("generate_sequences", generate_sequences), ("tool_calls", tool_calls)):
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                raise TypeError(f"AgentLoopMetrics.{name}: float expected, got {type(value).__name__}")
        self.generate_sequences = float(generate_sequences)
        self.tool_calls = float(tool_calls)
        self.num_preempted = int(num_preempted)

    def model_dump(self) -> dict:
        return dict(vars(self))


def _int_list(name: str, value: Any) -> list:
    if not isinstance(value, list) or any(isinstance(v, bool) or not isinstance(v, int) for v in value):
        raise TypeError(f"AgentLoopOutput.{name}: list[int] expected")
    return value


class AgentLoopOutput:
    """pydantic model, :181-199 (main :80-111 adds fields with defaults)."""

    def __init__(
        self,
        prompt_ids,
        response_ids,
        response_mask,
        metrics,
        response_logprobs=None,
        routed_experts=None,
        multi_modal_data: Optional[dict] = None,
        reward_score=None,
        num_turns: int = 0,
        extra_fields=None,
    ):
        self.prompt_ids = _int_list("prompt_ids", prompt_ids)
        self.response_ids = _int_list("response_ids", response_ids)
        self.response_mask = _int_list("response_mask", response_mask)
        if response_logprobs is not None and (
            not isinstance(response_logprobs, list) or any(not isinstance(v, float) for v in response_logprobs)
        ):
            raise TypeError("AgentLoopOutput.response_logprobs: list[float] or None expected")
        self.response_logprobs = response_logprobs
        if reward_score is not None and not isinstance(reward_score, float):
            raise TypeError("AgentLoopOutput.reward_score: float or None expected")
        self.reward_score = reward_score
        if isinstance(num_turns, bool) or not isinstance(num_turns, int):
            raise TypeError("AgentLoopOutput.num_turns: int expected")
        self.num_turns = num_turns
        if isinstance(metrics, dict):
            metrics = AgentLoopMetrics(**metrics)
        if not isinstance(metrics, AgentLoopMetrics):
            raise TypeError("AgentLoopOutput.metrics: AgentLoopMetrics or dict expected")
        self.metrics = metrics
        self.routed_experts = routed_experts
        if multi_modal_data is not None and not isinstance(multi_modal_data, dict):
            raise TypeError("AgentLoopOutput.multi_modal_data: dict or None expected")
        self.multi_modal_data = multi_modal_data
        extra_fields = {} if extra_fields is None else extra_fields
        if not isinstance(extra_fields, dict):
            raise TypeError("AgentLoopOutput.extra_fields: dict expected")
        self.extra_fields = extra_fields


class DictConfigWrap:
    """:229-233."""

    def __init__(self, config):
        self.config = config


class AgentLoopBase(ABC):
    """:249-258 (v0.7.0 names `data_config` `dataset_config`; main adds `hf_model_type=`, `tools=`)."""

    def __init__(self, trainer_config, server_manager, tokenizer, processor, dataset_cls, data_config, **kwargs):
        self.config = trainer_config.config
        self.server_manager = server_manager
        self.tokenizer = tokenizer
        self.processor = processor
        self.dataset_cls = dataset_cls
        self.data_config = data_config.config
        self.loop = asyncio.get_event_loop()

    @abstractmethod
    async def run(self, sampling_params: dict[str, Any], **kwargs) -> AgentLoopOutput:
        raise NotImplementedError


# :378
_agent_loop_registry: dict[str, dict] = {}


def register(agent_name: str):
    """:381-389: REPLACES the registry entry (a YAML entry's keys are lost)."""

    def decorator(subclass):
        _agent_loop_registry[agent_name] = {"_target_": f"{subclass.__module__}.{subclass.__qualname__}"}
        return subclass

    return decorator


def instantiate(config: dict, **kwargs):
    """hydra.utils.instantiate: import `_target_`, call it with every other key of the entry
    (`name` included) plus the call's keywords."""
    module, _, name = config["_target_"].rpartition(".")
    target = getattr(importlib.import_module(module), name)
    return target(**{k: v for k, v in dict(config).items() if k != "_target_"}, **kwargs)


class Config(dict):
    """OmegaConf DictConfig's attribute access."""

    def __getattr__(self, name):
        value = self.get(name)
        return Config(value) if isinstance(value, dict) else value


class Tokenizer:
    """A character-level tokenizer with a hermes-like chat template (the fake vLLM server's:
    testdata/fake_vllm.py), so ids decode back to text.

    `apply_chat_template(tokenize=True)` follows the transformers major in use: 4 returns the
    list of ids; 5 returns a BatchEncoding unless `return_dict=False` (transformers PRs
    #41626/#42567). `pad` returns lists for an empty list, as transformers does.
    """

    pad_token_id = 0
    eos_token_id = ord("\u2403")

    def __init__(self):
        self.padding_side = "right"

    def render(self, messages, add_generation_prompt: bool) -> str:
        text = "".join(f"<|im_start|>{m['role']}\n{m.get('content') or ''}<|im_end|>\n" for m in messages)
        return text + ("<|im_start|>assistant\n" if add_generation_prompt else "")

    def apply_chat_template(self, messages, add_generation_prompt=False, tokenize=True, return_dict=None, **_):
        text = self.render(messages, add_generation_prompt)
        if not tokenize:
            return text
        ids = [ord(c) for c in text]
        if return_dict is None:
            return_dict = transformers_major() >= 5
        return {"input_ids": ids, "attention_mask": [1] * len(ids)} if return_dict else ids

    def decode(self, ids, skip_special_tokens=False):
        return "".join(chr(i) for i in ids if not (skip_special_tokens and i in (self.pad_token_id, self.eos_token_id)))

    def pad(self, encoded, padding, max_length, return_tensors, return_attention_mask=True):
        ids = list(encoded["input_ids"])
        if not ids:
            # transformers' pad of an empty batch: no tensor conversion, plain lists come back.
            return {"input_ids": [], **({"attention_mask": []} if return_attention_mask else {})}
        fill = [self.pad_token_id] * (max_length - len(ids))
        ones = [1] * len(ids)
        zeros = [0] * len(fill)
        left = self.padding_side == "left"
        out = {"input_ids": Tensor(fill + ids if left else ids + fill)}
        if return_attention_mask:
            out["attention_mask"] = Tensor(zeros + ones if left else ones + zeros)
        return out


class Processor:
    """A multi-modal processor (a VL model's): its presence makes the worker read multi_modal_data."""

    def __call__(self, text, images=None, videos=None, **_):
        return {"input_ids": None, "attention_mask": None}


class _Handle:
    """A vLLMHttpServer actor handle as the loop uses it: `get_server_address.remote()`."""

    def __init__(self, address: str):
        self.address = address
        self.get_server_address = self

    async def _address(self):
        host, _, port = self.address.rpartition(":")
        return host, int(port)

    def remote(self):
        return self._address()


class AsyncLLMServerManager:
    """The loop's `server_manager`. >= 0.7.1: `_acquire_server` answers (server id = the replica's
    "ip:port", its handle) from the least-in-flight load balancer, `_release_server` gives it back
    (:123-133; main workers/rollout/llm_server.py:221-229). 0.7.0: only `_choose_server`, which
    answers the handle (v0.7.0 agent_loop.py:83-92)."""

    def __init__(self, addresses: list):
        self.inflight = {address: 0 for address in addresses}
        self.acquired = 0
        self.released = 0

    def _least(self):
        if not self.inflight:
            raise RuntimeError("no rollout servers")
        return min(self.inflight, key=self.inflight.get)

    def _choose_server(self, request_id):
        address = self._least()
        self.acquired += 1
        return _Handle(address)


class _Acquiring(AsyncLLMServerManager):
    async def _acquire_server(self, request_id):
        address = self._least()
        self.inflight[address] += 1
        self.acquired += 1
        return address, _Handle(address)

    def _release_server(self, server_id):
        self.inflight[server_id] -= 1
        self.released += 1


def server_manager(addresses: list) -> AsyncLLMServerManager:
    return _Acquiring(addresses) if version_at_least("0.7.1") else AsyncLLMServerManager(addresses)


def load_yaml_list(text: str) -> list:
    """OmegaConf.load of the agent-loop YAML: a list of flat mappings of scalars (the shape verl's
    registry takes, :434-439). Enough YAML for that shape; anything else raises."""
    entries = []

    def scalar(value: str):
        value = value.strip()
        if value in ("null", "~", ""):
            return None
        if value.lower() in ("true", "false"):
            return value.lower() == "true"
        if value[:1] in "\"'" and value[-1:] == value[:1]:
            return value[1:-1]
        for cast in (int, float):
            try:
                return cast(value)
            except ValueError:
                pass
        return value

    for number, raw in enumerate(text.splitlines(), 1):
        line = raw.split(" #")[0].rstrip() if not raw.lstrip().startswith("#") else ""
        if not line.strip():
            continue
        if line.startswith("- "):
            entries.append({})
            line = "  " + line[2:]
        if not line.startswith("  ") or ":" not in line or not entries:
            raise ValueError(f"agent-loop YAML line {number}: not a list of flat mappings: {raw!r}")
        key, _, value = line.strip().partition(":")
        entries[-1][key.strip()] = scalar(value)
    return entries


class AgentLoopWorker:
    """`AgentLoopWorker` (:392-), one worker process's share of a batch."""

    def __init__(self, config: dict, server_addresses: list, agent_loop_config_path: str, processor=None):
        self.config = Config(config)
        self.rollout_config = self.config.actor_rollout_ref.rollout
        self.server_manager = server_manager(server_addresses)
        self.tokenizer = Tokenizer()
        self.processor = processor
        # :434-439: the YAML's entries go into the registry as they are.
        with open(agent_loop_config_path) as handle:
            for entry in load_yaml_list(handle.read()):
                _agent_loop_registry[entry["name"]] = entry

    async def generate_sequences(self, rows: list, sampling_params: dict) -> DataProto:
        """:454-: every row's agent loop concurrently; every non-tensor column is a keyword (:523)."""
        outputs = await asyncio.gather(
            *(self._run_agent_loop(sampling_params, **row) for row in rows)
        )
        return self._postprocess(outputs)

    async def _run_agent_loop(self, sampling_params, *, agent_name, **kwargs):
        # :552-566: a NEW loop per sample, from the registry entry as it is now.
        assert agent_name in _agent_loop_registry, (
            f"Agent loop {agent_name} not registered, registered agent loops: {_agent_loop_registry.keys()}"
        )
        agent_loop = instantiate(
            _agent_loop_registry[agent_name],
            trainer_config=DictConfigWrap(config=self.config),
            server_manager=self.server_manager,
            tokenizer=self.tokenizer,
            processor=self.processor,
            dataset_cls=None,
            data_config=DictConfigWrap(self.config.get("data", Config({}))),
        )
        output = await agent_loop.run(sampling_params, **kwargs)
        return self._agent_loop_postprocess(output, **kwargs)

    def _pad(self, ids, max_length, side, attention):
        if not ids and version_at_least("0.9.0"):
            # v0.9.0 agent_loop.py:717-726 (PR #6675): an empty list becomes a row of pad ids.
            out = {"input_ids": Tensor([[self.tokenizer.pad_token_id] * max_length])}
            if attention:
                out["attention_mask"] = Tensor([[0] * max_length])
            return out
        self.tokenizer.padding_side = side
        out = self.tokenizer.pad(
            {"input_ids": ids}, padding="max_length", max_length=max_length, return_tensors="pt",
            return_attention_mask=attention,
        )
        # :602-604 (v0.8.0 :619): on an empty list `out["input_ids"]` is a list and `.dim()` raises
        # AttributeError: 'list' object has no attribute 'dim'.
        if out["input_ids"].dim() == 1:
            out["input_ids"] = out["input_ids"].unsqueeze(0)
            if attention:
                out["attention_mask"] = out["attention_mask"].unsqueeze(0)
        return out

    def _agent_loop_postprocess(self, output: AgentLoopOutput, **kwargs) -> dict:
        """:569-690."""
        output.extra_fields["raw_prompt"] = kwargs["raw_prompt"]
        prompt = self._pad(output.prompt_ids, self.rollout_config.prompt_length, "left", True)
        response = self._pad(output.response_ids, self.rollout_config.response_length, "right", True)
        mask = self._pad(output.response_mask, self.rollout_config.response_length, "right", False)
        logprobs = None
        if output.response_logprobs is not None:
            pad_size = self.rollout_config.response_length - len(output.response_logprobs)
            logprobs = Tensor([output.response_logprobs + [0.0] * pad_size])
        if self.processor is not None:
            # :699-700 reads output.multi_modal_data.get(...) unguarded; v0.8.0 :770 guards it
            # (`output.multi_modal_data or {}`).
            data = output.multi_modal_data if not version_at_least("0.8.0") else (output.multi_modal_data or {})
            data.get("images")
            data.get("videos")
        response_mask = [m * a for m, a in zip(mask["input_ids"][0], response["attention_mask"][0])]
        return {
            "prompt_ids": prompt["input_ids"],
            "response_ids": response["input_ids"],
            "response_mask": Tensor([response_mask]),
            "attention_mask": Tensor([prompt["attention_mask"][0] + response["attention_mask"][0]]),
            "response_logprobs": logprobs,
            "reward_score": output.reward_score,
            "num_turns": output.num_turns,
            "metrics": output.metrics,
            "extra_fields": output.extra_fields,
        }

    def _postprocess(self, inputs: list) -> DataProto:
        """:789-876."""
        batch = {
            "prompts": cat([i["prompt_ids"] for i in inputs]),
            "responses": cat([i["response_ids"] for i in inputs]),
            "response_mask": cat([i["response_mask"] for i in inputs]),
            "attention_mask": cat([i["attention_mask"] for i in inputs]),
        }
        if inputs[0]["response_logprobs"] is not None:
            # :803-804: torch.cat over every sample's; a None among them raises TypeError.
            batch["rollout_log_probs"] = cat([i["response_logprobs"] for i in inputs])
        scores = [i["reward_score"] for i in inputs]
        if all(score is not None for score in scores):
            # :822-828: the score on the last response token.
            prompt_length = len(batch["prompts"][0])
            rm_scores = []
            for row, score in zip(batch["attention_mask"].rows, scores):
                last = sum(row[prompt_length:]) - 1
                rm_scores.append([score if t == last else 0.0 for t in range(len(row) - prompt_length)])
            batch["rm_scores"] = Tensor(rm_scores)
        non_tensor_batch = {"__num_turns__": [i["num_turns"] for i in inputs]}
        # :837-840: the keys of the FIRST sample's reward_extra_info; every sample must have them.
        infos = [i["extra_fields"].get("reward_extra_info", {}) for i in inputs]
        reward_extra_keys = list(infos[0].keys())
        for key in reward_extra_keys:
            non_tensor_batch[key] = [info[key] for info in infos]
        # :850-864: the union of this worker's extra_fields keys and a fixed default set.
        defaults = {"turn_scores", "tool_rewards", "min_global_steps", "max_global_steps", "extras"}
        keys = set(k for i in inputs for k in i["extra_fields"]) | defaults
        for key in sorted(keys):
            non_tensor_batch[key] = [i["extra_fields"].get(key) for i in inputs]
        meta_info = {"metrics": [i["metrics"].model_dump() for i in inputs]}
        if "rm_scores" in batch:
            meta_info["reward_extra_keys"] = reward_extra_keys
        return DataProto(batch, non_tensor_batch, meta_info)


__all__ = [
    "AgentLoopBase",
    "AgentLoopOutput",
    "AgentLoopMetrics",
    "AgentLoopWorker",
    "DictConfigWrap",
    "register",
    "_agent_loop_registry",
    "__version__",
]
