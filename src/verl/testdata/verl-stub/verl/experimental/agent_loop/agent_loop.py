"""Stub of `verl.experimental.agent_loop.agent_loop` (verl v0.7.1), for tests without verl.

It mirrors the interface an agent loop sees: `AgentLoopBase.__init__`'s keywords and attributes
(`config`, `server_manager`, `tokenizer`, `loop`), `AgentLoopOutput`/`AgentLoopMetrics` with
pydantic-like checks (wrong types raise, a metrics dict is read into `AgentLoopMetrics` with unknown
keys ignored), `register` and `_agent_loop_registry`.
"""

import asyncio
from abc import ABC, abstractmethod
from typing import Any


class AgentLoopMetrics:
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
    def __init__(
        self,
        prompt_ids,
        response_ids,
        response_mask,
        metrics,
        response_logprobs=None,
        routed_experts=None,
        multi_modal_data=None,
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
        self.multi_modal_data = multi_modal_data
        if extra_fields is None:
            extra_fields = {}
        if not isinstance(extra_fields, dict):
            raise TypeError("AgentLoopOutput.extra_fields: dict expected")
        self.extra_fields = extra_fields


class DictConfigWrap:
    def __init__(self, config):
        self.config = config


class AgentLoopBase(ABC):
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


_agent_loop_registry: dict[str, dict] = {}


def register(agent_name: str):
    def decorator(subclass):
        _agent_loop_registry[agent_name] = {"_target_": f"{subclass.__module__}.{subclass.__qualname__}"}
        return subclass

    return decorator
