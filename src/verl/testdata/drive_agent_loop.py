"""Runs agentrl's agent loop the way verl's AgentLoopWorker does, against the verl stub (tests only).

The tokenizer is a stub whose chat template gives one id per character (code point % 1000).

stdin: {"loop_config": {name, _target_, ...YAML keys}, "rollout": {prompt_length, response_length},
        "server_addresses": ["host:port", ...] (verl's rollout servers), "sampling_params": {...},
        "rows": [dataset rows: raw_prompt, extra_info, reward_model, agent_name, ...]}
stdout: {"outputs": [...one per row, in order...], "acquired": n, "released": n}

Like `AgentLoopWorker._run_agent_loop`: the class is instantiated per sample from the registry entry
(every YAML key but `_target_` a keyword, as hydra does, `name` included), all rows run
concurrently, and each output is checked as `_agent_loop_postprocess` would pad it.
"""

import asyncio
import importlib
import json
import sys

from verl.experimental.agent_loop.agent_loop import DictConfigWrap, _agent_loop_registry


class Config(dict):
    """Attribute access like OmegaConf's DictConfig."""

    def __getattr__(self, name):
        value = self.get(name)
        return Config(value) if isinstance(value, dict) else value


class StubTokenizer:
    """A chat template for tests: one id per character of the messages' contents (code point % 1000)."""

    def apply_chat_template(self, messages, add_generation_prompt=False, tokenize=True):
        return [ord(c) % 1000 for message in messages for c in message["content"]]


class StubServerManager:
    """verl's AsyncLLMServerManager as the loop sees it: sticky least-in-flight assignment."""

    def __init__(self, addresses):
        self.inflight = {address: 0 for address in addresses}
        self.acquired = 0
        self.released = 0

    async def _acquire_server(self, request_id):
        address = min(self.inflight, key=self.inflight.get)
        self.inflight[address] += 1
        self.acquired += 1
        return address, object()

    def _release_server(self, server_id):
        self.inflight[server_id] -= 1
        self.released += 1


async def main():
    spec = json.load(sys.stdin)
    entry = dict(spec["loop_config"])
    module, _, name = entry["_target_"].rpartition(".")
    cls = getattr(importlib.import_module(module), name)
    registered = _agent_loop_registry.get(entry["name"])
    if registered is None or registered["_target_"] != entry["_target_"]:
        raise SystemExit(f"{entry['name']} is not registered as {entry['_target_']}: {_agent_loop_registry}")
    kwargs = {k: v for k, v in entry.items() if k != "_target_"}
    rollout = spec["rollout"]
    trainer_config = DictConfigWrap(Config({"actor_rollout_ref": {"rollout": rollout}}))
    manager = StubServerManager(spec["server_addresses"])

    async def one(row):
        loop = cls(
            trainer_config=trainer_config,
            server_manager=manager,
            tokenizer=StubTokenizer(),
            processor=None,
            dataset_cls=None,
            data_config=DictConfigWrap(Config({})),
            **kwargs,
        )
        output = await loop.run(dict(spec["sampling_params"]), **row)
        # What _agent_loop_postprocess needs: fits the padded lengths, aligned lists.
        assert len(output.prompt_ids) <= rollout["prompt_length"], "prompt longer than prompt_length"
        assert len(output.response_ids) <= rollout["response_length"], "response longer than response_length"
        assert len(output.response_mask) == len(output.response_ids), "mask and ids differ in length"
        assert set(output.response_mask) <= {0, 1}, "mask values other than 0/1"
        if output.response_logprobs is not None:
            assert len(output.response_logprobs) == len(output.response_ids), "log-probs and ids differ in length"
        return {
            "prompt_ids": output.prompt_ids,
            "response_ids": output.response_ids,
            "response_mask": output.response_mask,
            "response_logprobs": output.response_logprobs,
            "reward_score": output.reward_score,
            "num_turns": output.num_turns,
            "metrics": output.metrics.model_dump(),
            "extra_fields": output.extra_fields,
        }

    outputs = await asyncio.gather(*(one(row) for row in spec["rows"]))
    json.dump({"outputs": outputs, "acquired": manager.acquired, "released": manager.released}, sys.stdout)


asyncio.run(main())
