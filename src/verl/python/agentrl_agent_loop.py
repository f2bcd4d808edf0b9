"""agentrl's agent loop for verl: each sample is one agentrl episode, run by `agentrl agent-server`.

Contract (what `agentrl verl init` writes relies on exactly this):

Registration. verl's workers never import this module by themselves: list it in the agent-loop YAML
given as `actor_rollout_ref.rollout.agent.agent_loop_config_path`, with this file's folder on the
workers' PYTHONPATH, and give rows `agent_name: "agentrl_agent"` (a top-level parquet column):

    - name: agentrl_agent
      _target_: agentrl_agent_loop.AgentrlAgentLoop
      server_url: http://127.0.0.1:8300   # the agent-server; else env AGENTRL_AGENT_SERVER
      server_token: null                  # optional bearer token; else env AGENTRL_AGENT_SERVER_TOKEN
      # optional keys:
      rollout_base_url: null   # OpenAI base URL of the rollout server (".../v1"); default: the one
                               # verl's load balancer assigns the sample (http://<server address>/v1)
      rollout_model: null      # model name to send; default: the agent-server asks /v1/models
      timeout_s: 1800          # one episode's HTTP call
      max_concurrency: 256     # episodes this worker process has in flight at once

The class is deliberately NOT decorated with verl's `@register`: verl instantiates a loop per
sample from `_agent_loop_registry[agent_name]`, the entry it loaded from this YAML
(verl/experimental/agent_loop/agent_loop.py v0.7.1:434-439, 556-565), and the decorator would
replace that entry with a bare `{"_target_": ...}` the first time hydra imports this module
(:381-389), so every later sample of the worker would lose the YAML keys.
Every extra YAML key arrives as a constructor keyword; unknown ones are ignored.

Per-row data, from the dataset columns verl passes to `run` as keyword arguments:
    raw_prompt                 list of {role, content}: sent along (recorded); the agent-server
                               renders the episode's prompt from the task itself
    extra_info.index           int: the row index (recorded)
    extra_info.agentrl         {"task_id": str, "task": str | dict | absent}: agentrl's task. `task`
                               is the whole agentrl task (a JSON string in parquet, so rows with
                               different task fields do not gain each other's fields as nulls);
                               without it the agent-server looks `task_id` up in its `--tasks` set
    reward_model.ground_truth  str: must equal the task's answer (or one of its aliases)
Sampling settings come from verl's `sampling_params` (temperature, top_p, top_k, logprobs).

Output: `AgentLoopOutput` with `prompt_ids`, `response_ids` (the model's sampled ids and the
tool/observation ids between them, exactly as the rollout server saw them), `response_mask` (1 on
sampled ids, 0 on observation ids), `response_logprobs` (the sampled ids' log-probs, 0.0 on
observation ids; a list whenever verl asked for log-probs, None otherwise: verl `torch.cat`s the
batch's log-probs, so one None among lists fails the step), all cut to `rollout.response_length`
as verl's own tool agent cuts them (an empty response becomes one masked pad token: verl before
0.9.0 crashes padding an empty list); `multi_modal_data` {} (0.7.x reads it with a processor);
`reward_score` (agentrl's reward spec on the whole episode, so
verl's reward function is skipped), `num_turns` (1 + assistant turns + observation turns), `metrics`
(generate_sequences, tool_calls: seconds) and `extra_fields`, with THE SAME KEYS FOR EVERY SAMPLE
(verl's `DataProto.concat` asserts that every worker's batch has the same keys): `turn_scores`
(each assistant turn's turn-level reward, 0.0 where none), `turn_spans` ([start, end) of each
assistant turn in response_ids), `outcome_terms`, `turn_terms` (None when the agent-server has
none), `agentrl_episode_id`, `agentrl_correct`, `agentrl_end_reason`, `agentrl_error`,
`agentrl_failure_class` / `agentrl_failure_code` ("" for none), `agentrl_prefix_breaks`,
`agentrl_truncated`, and `reward_extra_info` {acc, agentrl_task_id, agentrl_infra,
agentrl_prefix_breaks, agentrl_truncated} (verl dumps it with each sample; the numeric keys become
validation metrics).

Failures (the taxonomy of agentrl's src/types/failure.ts, from the agent-server's `failure`):
- policy (a malformed tool call, a wrong answer, a context that outgrew the model): a sample with
  its reward, trained on.
- infra that no retry fixes (`upstream-4xx`, `model-not-found`, `no-token-ids`): raises
  `InfraFailure`. Every sample would fail the same way (vLLM started without the tool flags, a
  wrong model name, vLLM < 0.10.2), and a batch of reward-0 samples must not train.
- other infra (5xx, unreachable, timeout): a sample whose response mask is all 0 (no token of it
  trains) and `agentrl_failure_class: "infra"`, which agentrl's advantage estimator leaves out of
  its group baseline and counts toward the step's failure rate (agentrl_adv_estimator.py stops the
  job past its threshold).
- agent (a user's `--agent` threw or hung): masked out and left out of the baseline the same way;
  it still counts as that agent's failure in pass@k. When no model call answered, the prompt ids are rendered from
  `raw_prompt` with verl's tokenizer.
- a prefix break (`metrics.prefix_breaks` > 0: the chat template re-rendered an earlier turn, so
  the response stops at the break while `reward_score` scores the whole episode): not a failure,
  but masked out and left out of the baseline the same way, so no token is credited with turns it
  does not hold; its `reward_score` and `acc` stay the episode's, as measured, and the step's
  `agentrl/prefix_break_rate` says how much of the batch did not train.
An agent-server that cannot be reached is retried briefly, then raises. One that does not answer
within `timeout_s` (a read timeout) is a transient infra failure (`agent-server-timeout`).

Standard library only besides verl itself. The request/response JSON is in ../agent-server.md.
"""

import asyncio
import json
import os
import socket
import time
import urllib.error
import urllib.request
import uuid
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Optional

from verl.experimental.agent_loop.agent_loop import AgentLoopBase, AgentLoopOutput

SERVER_ENV = "AGENTRL_AGENT_SERVER"
TOKEN_ENV = "AGENTRL_AGENT_SERVER_TOKEN"

# One thread pool per worker process: an episode's HTTP call blocks a thread for the episode's length.
_EXECUTORS: dict[int, ThreadPoolExecutor] = {}


def _executor(size: int) -> ThreadPoolExecutor:
    pool = _EXECUTORS.get(size)
    if pool is None:
        pool = ThreadPoolExecutor(max_workers=size, thread_name_prefix="agentrl-episode")
        _EXECUTORS[size] = pool
    return pool


def _plain(value: Any) -> Any:
    """numpy scalars/arrays and other containers from a dataset row as plain JSON values."""
    if hasattr(value, "tolist"):
        return value.tolist()
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


def _config_value(config: Any, path: str) -> Any:
    node = config
    for part in path.split("."):
        if node is None:
            return None
        node = node.get(part) if isinstance(node, dict) else getattr(node, part, None)
    return node


# Infrastructure failures no retry fixes: the loop raises instead of returning a sample
# (agentrl src/verl/episode-failure.ts FATAL_INFRA_CODES).
FATAL_INFRA_CODES = ("upstream-4xx", "model-not-found", "no-token-ids")


class AgentServerError(RuntimeError):
    pass


class InfraFailure(RuntimeError):
    """An episode failed for a reason outside the policy that every other sample would share."""


def _timed_out(message: str) -> dict:
    """The agent-server's answer for an episode it did not answer in time (agent-server.md's
    fields): no ids, reward 0, a transient infra failure."""
    return {
        "episode_id": None,
        "prompt_ids": [],
        "response_ids": [],
        "response_mask": [],
        "response_logprobs": None,
        "reward_score": 0.0,
        "turn_scores": [],
        "turn_spans": [],
        "num_turns": 1,
        "correct": False,
        "end_reason": "policy-error",
        "error": message,
        "failure": {"class": "infra", "code": "agent-server-timeout", "message": message},
        "truncated": False,
        "metrics": {},
        "extra_fields": {},
    }


def _token_ids(value: Any) -> list:
    """`apply_chat_template(tokenize=True)`'s ids whatever the transformers version returns:
    a list, a BatchEncoding/dict (transformers 5 defaults to return_dict=True), or a batch of one."""
    if hasattr(value, "keys") and "input_ids" in value.keys():
        value = value["input_ids"]
    value = _plain(value)
    if value and isinstance(value[0], list):
        value = value[0]
    return [int(t) for t in value]


class AgentrlAgentLoop(AgentLoopBase):
    def __init__(
        self,
        *args,
        server_url: Optional[str] = None,
        server_token: Optional[str] = None,
        rollout_base_url: Optional[str] = None,
        rollout_model: Optional[str] = None,
        timeout_s: float = 1800,
        max_concurrency: int = 256,
        connect_retries: int = 5,
        **kwargs,
    ):
        super().__init__(*args, **kwargs)
        url = server_url or os.environ.get(SERVER_ENV)
        if not url:
            raise ValueError(
                f"agentrl_agent: no agent-server URL: set server_url in the agent-loop YAML or ${SERVER_ENV}"
            )
        self.server_url = url.rstrip("/")
        self.server_token = server_token or os.environ.get(TOKEN_ENV) or None
        self.rollout_base_url = rollout_base_url.rstrip("/") if rollout_base_url else None
        self.rollout_model = rollout_model
        self.timeout_s = float(timeout_s)
        self.max_concurrency = max(1, int(max_concurrency))
        self.connect_retries = max(0, int(connect_retries))
        self.response_length = int(_config_value(self.config, "actor_rollout_ref.rollout.response_length"))
        self.prompt_length = _config_value(self.config, "actor_rollout_ref.rollout.prompt_length")

    def _request_body(self, sampling_params: dict[str, Any], kwargs: dict[str, Any], base_url: str) -> dict:
        extra_info = _plain(kwargs.get("extra_info") or {})
        agentrl = extra_info.get("agentrl")
        if not isinstance(agentrl, dict) or not (agentrl.get("task_id") or agentrl.get("task")):
            raise ValueError(
                "agentrl_agent: the row has no extra_info.agentrl.task_id (nor .task): "
                "write the dataset with `agentrl verl init`"
            )
        task = agentrl.get("task")
        if isinstance(task, str) and task:
            try:
                task = json.loads(task)
            except json.JSONDecodeError as error:
                raise ValueError(f"agentrl_agent: extra_info.agentrl.task is not valid JSON: {error}") from None
        reward_model = _plain(kwargs.get("reward_model") or {})
        sampling = {
            key: _plain(sampling_params[key])
            for key in ("temperature", "top_p", "top_k")
            if sampling_params.get(key) is not None
        }
        sampling["logprobs"] = bool(sampling_params.get("logprobs", False))
        body: dict[str, Any] = {
            "request_id": uuid.uuid4().hex,
            "sampling": sampling,
            "upstream": {"base_url": base_url, **({"model": self.rollout_model} if self.rollout_model else {})},
            "response_length": self.response_length,
            "raw_prompt": _plain(kwargs.get("raw_prompt")),
            "index": extra_info.get("index"),
        }
        if isinstance(task, dict):
            body["task"] = task
        else:
            body["task_id"] = str(agentrl["task_id"])
        if isinstance(reward_model, dict) and reward_model.get("ground_truth") is not None:
            body["ground_truth"] = reward_model["ground_truth"]
        return body

    def _post(self, body: dict) -> dict:
        data = json.dumps(body).encode("utf-8")
        headers = {"content-type": "application/json"}
        if self.server_token:
            headers["authorization"] = f"Bearer {self.server_token}"
        delay = 0.5
        attempt = 0
        while True:
            attempt += 1
            request = urllib.request.Request(f"{self.server_url}/v1/episodes", data=data, headers=headers)
            try:
                with urllib.request.urlopen(request, timeout=self.timeout_s) as response:
                    return json.loads(response.read().decode("utf-8"))
            except urllib.error.HTTPError as error:
                detail = error.read().decode("utf-8", "replace")[:2000]
                # 503: the agent-server is at its queue limit or shutting down; worth another try.
                retry = error.code == 503
                failure = f"answered {error.code}: {detail}"
            except (TimeoutError, socket.timeout):
                # A read timeout: the agent-server took the request but did not answer within
                # timeout_s (a connect timeout arrives as URLError, below). Retrying would run the
                # episode again behind one that may still be running, and raising would end the
                # job for one slow episode: a transient infra failure, a masked sample, counted
                # toward the step's infra failure rate (which stops a job whose server is stuck).
                return _timed_out(f"agentrl agent-server {self.server_url} did not answer within {self.timeout_s:g} s")
            except (urllib.error.URLError, ConnectionError) as error:
                retry = True
                failure = f"unreachable: {error}"
            if not retry or attempt > self.connect_retries:
                raise AgentServerError(f"agentrl agent-server {self.server_url} {failure} ({attempt} tries)")
            time.sleep(delay)
            delay = min(delay * 2, 30)

    async def _rollout_server(self, request_id: str):
        """The rollout server's base URL, and a release callback (verl's load balancer, when it picks)."""
        if self.rollout_base_url:
            return self.rollout_base_url, None
        manager = self.server_manager
        if manager is not None and hasattr(manager, "_acquire_server"):
            # verl >= 0.7.1: the load balancer's server id is the replica's "ip:port"
            # (agent_loop.py v0.7.1:123-133; main workers/rollout/llm_server.py:221-229).
            acquired = await manager._acquire_server(request_id)
            server_id = acquired[0] if isinstance(acquired, tuple) else acquired
            address = str(server_id)
            base = address if address.startswith("http") else f"http://{address}"
            return f"{base.rstrip('/')}/v1", lambda: manager._release_server(server_id)
        if manager is not None and hasattr(manager, "_choose_server"):
            # verl 0.7.0: `_choose_server` gives the replica's actor handle (agent_loop.py
            # v0.7.0:83-92), whose `get_server_address` answers (ip, port)
            # (vllm_async_server.py). Nothing to release.
            handle = manager._choose_server(request_id)
            ip, port = await handle.get_server_address.remote()
            host = f"[{ip}]" if ":" in str(ip) and not str(ip).startswith("[") else str(ip)
            return f"http://{host}:{int(port)}/v1", None
        raise ValueError(
            "agentrl_agent: no rollout_base_url in the agent-loop YAML and verl's server manager "
            "cannot assign a rollout server (it has neither _acquire_server nor _choose_server)"
        )

    async def run(self, sampling_params: dict[str, Any], **kwargs) -> AgentLoopOutput:
        sticky = uuid.uuid4().hex
        base_url, release = await self._rollout_server(sticky)
        try:
            body = self._request_body(sampling_params, kwargs, base_url)
            loop = asyncio.get_running_loop()
            answer = await loop.run_in_executor(_executor(self.max_concurrency), self._post, body)
        finally:
            if release is not None:
                release()
        failure = answer.get("failure") or {}
        if failure.get("class") == "infra" and failure.get("code") in FATAL_INFRA_CODES:
            raise InfraFailure(
                f"agentrl_agent: episode {answer.get('episode_id')} failed outside the policy "
                f"({failure.get('code')}): {failure.get('message')}. Every sample would fail the same way; "
                "see the job README (vLLM tool flags, vLLM >= 0.10.2 for token ids, the model name)"
            )
        if not answer["prompt_ids"]:
            # The episode failed before any model call answered (its rollout server unreachable):
            # verl still needs the prompt, so it is rendered here as verl's own agent loops do.
            answer["prompt_ids"] = await loop.run_in_executor(None, self._render_prompt, kwargs.get("raw_prompt"))
        task_id = str(body["task"]["id"] if "task" in body else body["task_id"])
        return self._output(answer, bool(sampling_params.get("logprobs", False)), task_id)

    def _render_prompt(self, raw_prompt: Any) -> list:
        messages = _plain(raw_prompt)
        if self.tokenizer is None or not messages:
            raise AgentServerError("agentrl_agent: a failed episode has no prompt ids and there is no raw_prompt to render")
        # return_dict=False: transformers 5 returns a BatchEncoding otherwise (verl's own
        # verl/utils/chat_template.py passes it and normalises the result the same way).
        return _token_ids(
            self.tokenizer.apply_chat_template(messages, add_generation_prompt=True, tokenize=True, return_dict=False)
        )

    def _pad_id(self) -> int:
        for name in ("pad_token_id", "eos_token_id"):
            value = getattr(self.tokenizer, name, None)
            if isinstance(value, int):
                return value
        return 0

    def _output(self, answer: dict, want_logprobs: bool, task_id: str) -> AgentLoopOutput:
        prompt_ids = [int(t) for t in answer["prompt_ids"]]
        if self.prompt_length is not None and len(prompt_ids) > int(self.prompt_length):
            raise ValueError(
                f"agentrl_agent: episode {answer.get('episode_id')}: prompt has {len(prompt_ids)} tokens, "
                f"more than rollout.prompt_length {self.prompt_length}: raise data.max_prompt_length"
            )
        cut = self.response_length
        response_ids = [int(t) for t in answer["response_ids"]][:cut]
        response_mask = [int(m) for m in answer["response_mask"]][:cut]
        logprobs = answer.get("response_logprobs")
        failure = answer.get("failure") or {}
        infra = failure.get("class") == "infra"
        metrics = answer.get("metrics") or {}
        prefix_breaks = int(metrics.get("prefix_breaks", 0) or 0)
        if infra or failure.get("class") == "agent" or prefix_breaks > 0:
            # A transient infrastructure failure, or a user's agent that threw: the model did not
            # write this outcome, so none of its tokens trains. A prefix break: the response stops
            # at the break while reward_score scores the whole episode, so the reward would credit
            # tokens for turns that are not in the response; none of it trains either (and the
            # estimator leaves it out of the group's baseline).
            response_mask = [0] * len(response_mask)
        if not response_ids:
            # One masked pad token: verl < 0.9.0 pads an empty list to lists and crashes on `.dim()`
            # (agent_loop.py v0.7.1:606-616; fixed by verl PR #6675 in v0.9.0).
            response_ids, response_mask, logprobs = [self._pad_id()], [0], [0.0]
        response_logprobs = None
        if want_logprobs:
            # A list whenever asked for: verl torch.cat's every sample's (agent_loop.py v0.7.1:803-804).
            values = [float(x) for x in logprobs][:cut] if logprobs is not None else []
            response_logprobs = values + [0.0] * (len(response_ids) - len(values))
        spans = [[int(s), min(int(e), cut)] for s, e in answer.get("turn_spans", []) if int(s) < cut]
        extra = answer.get("extra_fields") or {}
        truncated = bool(answer.get("truncated", False))
        return AgentLoopOutput(
            prompt_ids=prompt_ids,
            response_ids=response_ids,
            response_mask=response_mask,
            response_logprobs=response_logprobs,
            multi_modal_data={},
            reward_score=0.0 if infra else float(answer["reward_score"]),
            num_turns=int(answer["num_turns"]),
            metrics={
                "generate_sequences": float(metrics.get("generate_sequences", 0.0)),
                "tool_calls": float(metrics.get("tool_calls", 0.0)),
            },
            extra_fields={
                "turn_scores": [float(x) for x in answer.get("turn_scores", [])],
                "turn_spans": spans,
                "outcome_terms": extra.get("outcome_terms"),
                "turn_terms": extra.get("turn_terms"),
                "agentrl_episode_id": answer.get("episode_id"),
                "agentrl_correct": bool(answer.get("correct", False)),
                "agentrl_end_reason": answer.get("end_reason"),
                "agentrl_error": answer.get("error"),
                "agentrl_failure_class": str(failure.get("class") or ""),
                "agentrl_failure_code": str(failure.get("code") or ""),
                "agentrl_prefix_breaks": prefix_breaks,
                "agentrl_truncated": truncated,
                # verl hands these to its reward manager's extra info and dumps them with each sample
                # (acc and agentrl_task_id as agentrl_reward.py's compute_score), so `agentrl verl
                # import` groups the samples by task; the numbers become validation metrics.
                "reward_extra_info": {
                    "acc": 1.0 if answer.get("correct") else 0.0,
                    "agentrl_task_id": task_id,
                    "agentrl_infra": 1.0 if infra else 0.0,
                    "agentrl_prefix_breaks": float(prefix_breaks),
                    "agentrl_truncated": 1.0 if truncated else 0.0,
                },
            },
        )
