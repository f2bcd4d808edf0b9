"""agentrl's advantage estimators for verl: MT-GRPO (turn-level credit) and GRPO, with the step's
failure accounting. Shipped with `agentrl verl init`'s job; `--estimator mt-grpo|grpo` picks
`algorithm.adv_estimator=agentrl_mt_grpo|agentrl_grpo`.

The arithmetic is agentrl's src/rl/advantages/mt-grpo.ts and grpo.ts, line for line (a parity test
runs both on random batches): for a group of episodes j (verl's `uid`) with outcome R_j,

    A^O_j   = (R_j - mean R) / (std R + eps)          (sample std; `norm_adv_by_std_in_grpo=False`: no division)
    r~_{j,s} = turn_scores_j[s] for s < T_j, 0 after (an ended episode stays in every turn's baseline)
    D_{j,t} = sum_{s>=t} gamma^(s-t) (r~_{j,s} - mean_j r~_{.,s})
    A^T_j,t = D_{j,t} / (max_t std_j D_{.,t} + eps)
    A_{j,t} = A^O_j + lambda * A^T_{j,t}               on every sampled token of turn t (its turn_spans)

A group with fewer than two scored episodes gets 0 (verl's own grpo keeps a singleton's raw reward;
agentrl's convention is kept for parity). An episode that failed outside the policy
(`extra_fields.agentrl_failure_class` "infra", or "agent" for a user's agent that threw; see
agentrl_agent_loop.py) is unscored: advantage 0 and out of its group's baselines, so it never
trains, not even through the baseline of the others. So is a prefix-broken episode
(`agentrl_prefix_breaks` > 0): its response stops at the break, its reward scores the whole episode.

Inputs. verl calls a registered estimator with `token_level_rewards`, `response_mask`, `index` and
`config` only, and passes `non_tensor_batch` (where the loop's turn_scores / turn_spans /
failure class live) to gdpo alone (verl/trainer/ppo/ray_trainer.py v0.7.1:192-219; main
:250-279). So `install()`, which the job runs in every Ray worker process through
`ray_kwargs.ray_init.runtime_env.worker_process_setup_hook=agentrl_adv_estimator.install`, both
registers the estimators with verl's `register_adv_est` and wraps `ray_trainer.compute_advantage` so
that for these two names it passes the batch's non-tensor fields too, in whichever process imports
verl's trainer (the TaskRunner). Other estimators are left as they are. This module imports only
the standard library at load, as a setup hook must (every worker pays for its imports).

Each step it also logs the step's failure rate by class (policy / agent / tool / infra, agentrl's
taxonomy), the prefix-break and truncation rates (a JSON line on stdout, prefixed
`agentrl-step-metrics`, and appended to $AGENTRL_STEP_METRICS when set), and stops the job when the
infra failure rate passes $AGENTRL_MAX_INFRA_FAILURE_RATE (default 0.2): a step that is mostly
broken infrastructure must not train.

Settings from the environment (run_grpo.sh passes them through the Ray runtime env):
AGENTRL_TURN_WEIGHT (lambda, default 1), AGENTRL_TURN_DISCOUNT (gamma, default 1),
AGENTRL_MAX_INFRA_FAILURE_RATE, AGENTRL_STEP_METRICS. Standard library only besides verl (and torch,
which verl brings).
"""

import importlib.abc
import importlib.util
import json
import math
import os
import sys
from typing import Any, Optional

ESTIMATOR_NAMES = {"mt-grpo": "agentrl_mt_grpo", "grpo": "agentrl_grpo"}
EPSILON = 1e-6
FAILURE_CLASSES = ("policy", "agent", "tool", "infra")
UNSCORED = ("infra", "agent")


class InfraFailureRateExceeded(RuntimeError):
    """The step's infra failure rate passed the threshold: the job stops instead of training."""


def _plain(value: Any) -> Any:
    if hasattr(value, "tolist"):
        return value.tolist()
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


def _moments(values: list) -> tuple:
    """Count, mean and sample std (n - 1) of the non-None values (agentrl groups.ts `moments`)."""
    present = [v for v in values if v is not None]
    if not present:
        return 0, 0.0, 0.0
    mean = sum(present) / len(present)
    if len(present) < 2:
        return len(present), mean, 0.0
    return len(present), mean, math.sqrt(sum((v - mean) ** 2 for v in present) / (len(present) - 1))


def _groups(keys: list) -> dict:
    groups: dict = {}
    for i, key in enumerate(keys):
        groups.setdefault(key, []).append(i)
    return groups


def outcome_advantages(groups: list, outcomes: list, normalize: bool, epsilon: float = EPSILON) -> list:
    """A^O per episode (None for unscored ones): agentrl grpo.ts `outcomeGroupAdvantages`."""
    out: list = [None] * len(outcomes)
    for members in _groups(groups).values():
        values = [outcomes[i] for i in members]
        count, mean, std = _moments(values)
        for i, value in zip(members, values):
            if value is None:
                continue
            if count < 2:
                out[i] = 0.0
            else:
                out[i] = (value - mean) / (std + epsilon) if normalize else value - mean
    return out


def turn_advantages(
    groups: list, outcomes: list, turn_rewards: list, normalize: bool, discount: float = 1.0, epsilon: float = EPSILON
) -> list:
    """A^T_{j,t} per episode (empty for unscored ones and tiny groups): agentrl mt-grpo.ts
    `turnLevelAdvantages`."""
    out: list = [[] for _ in outcomes]
    for members in _groups(groups).values():
        scored = [i for i in members if outcomes[i] is not None]
        if len(scored) < 2:
            continue
        turns = max(len(turn_rewards[i]) for i in scored)
        padded = [[turn_rewards[i][s] if s < len(turn_rewards[i]) else 0.0 for s in range(turns)] for i in scored]
        baseline = [_moments([row[s] for row in padded])[1] for s in range(turns)]
        togo = []
        for row in padded:
            d = [0.0] * turns
            running = 0.0
            for s in range(turns - 1, -1, -1):
                reward = row[s]
                running = (0.0 if reward is None else reward - baseline[s]) + discount * running
                d[s] = running
            togo.append(d)
        spread = 0.0
        for t in range(turns):
            spread = max(spread, _moments([d[t] for d in togo])[2])
        scale = spread + epsilon if normalize else 1.0
        for j, i in enumerate(scored):
            out[i] = [value / scale for value in togo[j]]
    return out


def turn_index(spans: list, length: int) -> list:
    """The turn of each response token from the loop's turn_spans ([start, end) per turn); -1 elsewhere."""
    index = [-1] * length
    for turn, (start, end) in enumerate(spans):
        for position in range(int(start), min(int(end), length)):
            index[position] = turn
    return index


def token_advantages(
    groups: list,
    outcomes: list,
    masks: list,
    turn_rewards: Optional[list] = None,
    spans: Optional[list] = None,
    normalize: bool = True,
    turn_weight: float = 1.0,
    discount: float = 1.0,
    epsilon: float = EPSILON,
) -> list:
    """Per-token advantages (0 off the mask). Without turn_rewards: GRPO; with them: MT-GRPO."""
    outcome = outcome_advantages(groups, outcomes, normalize, epsilon)
    turn = (
        turn_advantages(groups, outcomes, turn_rewards, normalize, discount, epsilon)
        if turn_rewards is not None
        else None
    )
    rows = []
    for i, mask in enumerate(masks):
        if outcome[i] is None:
            rows.append([0.0] * len(mask))
            continue
        if turn is None:
            rows.append([outcome[i] if m else 0.0 for m in mask])
            continue
        index = turn_index(spans[i], len(mask))
        row = []
        for position, m in enumerate(mask):
            if not m:
                row.append(0.0)
                continue
            t = index[position]
            if t < 0 or t >= len(turn_rewards[i]):
                raise ValueError(
                    f"agentrl_mt_grpo: sample {i}: a trained token at response position {position} lies in no "
                    f"turn span ({spans[i]}) with a turn reward ({len(turn_rewards[i])} turn scores)"
                )
            row.append(outcome[i] + turn_weight * (turn[i][t] if t < len(turn[i]) else 0.0))
        rows.append(row)
    return rows


def _like(reference: Any, rows: list) -> Any:
    """`rows` as a tensor of the reference's kind (torch in verl; the test double's otherwise)."""
    if type(reference).__module__.split(".")[0] == "torch":
        import torch

        return torch.tensor(rows, dtype=reference.dtype, device=reference.device)
    return type(reference)(rows)


def _config_get(config: Any, key: str, default: Any) -> Any:
    if config is None:
        return default
    if isinstance(config, dict):
        return config.get(key, default)
    getter = getattr(config, "get", None)
    return getter(key, default) if callable(getter) else getattr(config, key, default)


def step_metrics(non_tensor_batch: dict, size: int) -> dict:
    """The step's failure rate by class, prefix-break and truncation rates (keys `agentrl/...`)."""
    column = lambda key, default: _plain(non_tensor_batch.get(key, [default] * size))  # noqa: E731
    classes = column("agentrl_failure_class", "")
    correct = column("agentrl_correct", False)
    counts = {name: 0 for name in FAILURE_CLASSES}
    for failure, ok in zip(classes, correct):
        name = failure or (None if ok else "policy")
        if name is not None:
            counts[name] = counts.get(name, 0) + 1
    breaks = column("agentrl_prefix_breaks", 0)
    truncated = column("agentrl_truncated", False)
    metrics = {f"agentrl/failure_rate/{name}": counts[name] / size for name in FAILURE_CLASSES}
    metrics["agentrl/prefix_break_rate"] = sum(1 for b in breaks if b) / size
    metrics["agentrl/truncated_rate"] = sum(1 for t in truncated if t) / size
    metrics["agentrl/samples"] = size
    return metrics


_STEP = {"count": 0}


def _report(metrics: dict) -> None:
    _STEP["count"] += 1
    line = json.dumps({"step": _STEP["count"], **metrics})
    print(f"agentrl-step-metrics {line}", flush=True)
    path = os.environ.get("AGENTRL_STEP_METRICS")
    if path:
        with open(path, "a") as handle:
            handle.write(line + "\n")
    limit = float(os.environ.get("AGENTRL_MAX_INFRA_FAILURE_RATE", "0.2"))
    rate = metrics["agentrl/failure_rate/infra"]
    if rate > limit:
        raise InfraFailureRateExceeded(
            f"agentrl: {rate:.1%} of this step's samples failed outside the policy (infra), more than "
            f"AGENTRL_MAX_INFRA_FAILURE_RATE={limit}: stopping rather than training on a broken step. "
            "See the agent-server's log and the samples' agentrl_failure_code."
        )


def _compute(token_level_rewards, response_mask, index, config, non_tensor_batch, turn_level: bool):
    name = ESTIMATOR_NAMES["mt-grpo" if turn_level else "grpo"]
    if non_tensor_batch is None:
        raise RuntimeError(
            f"{name}: verl passed no non_tensor_batch (it does so only for gdpo): run agentrl_adv_estimator.install() "
            "in the trainer's process (run_grpo.sh sets ray_kwargs.ray_init.runtime_env.worker_process_setup_hook)"
        )
    rewards = _plain(token_level_rewards)
    masks = [[int(m) for m in row] for row in _plain(response_mask)]
    size = len(rewards)
    groups = [str(key) for key in _plain(index)] if index is not None else [str(i) for i in range(size)]
    classes = _plain(non_tensor_batch.get("agentrl_failure_class", [""] * size))
    breaks = _plain(non_tensor_batch.get("agentrl_prefix_breaks", [0] * size))
    # Failures the model did not cause (infra; a user's agent that threw) are unscored, and so is a
    # prefix-broken episode: its reward is the whole episode's, its response stops at the break.
    outcomes = [
        None if classes[i] in UNSCORED or int(breaks[i] or 0) > 0 else float(sum(rewards[i])) for i in range(size)
    ]
    normalize = bool(_config_get(config, "norm_adv_by_std_in_grpo", True))
    kwargs = {}
    if turn_level:
        kwargs = {
            "turn_rewards": [[float(x) for x in (_plain(v) or [])] for v in non_tensor_batch["turn_scores"]],
            "spans": [[list(map(int, s)) for s in (_plain(v) or [])] for v in non_tensor_batch["turn_spans"]],
            "turn_weight": float(os.environ.get("AGENTRL_TURN_WEIGHT", "1")),
            "discount": float(os.environ.get("AGENTRL_TURN_DISCOUNT", "1")),
        }
    rows = token_advantages(groups, outcomes, masks, normalize=normalize, **kwargs)
    _report(step_metrics(non_tensor_batch, size))
    advantages = _like(token_level_rewards, rows)
    return advantages, advantages


def compute_agentrl_mt_grpo_advantage(
    token_level_rewards, response_mask, index=None, config=None, non_tensor_batch=None, batch=None, **kwargs
):
    """verl's estimator signature (core_algos.py `compute_grpo_outcome_advantage` and friends):
    returns (advantages, returns), both [batch, response_length]."""
    return _compute(token_level_rewards, response_mask, index, config, non_tensor_batch, turn_level=True)


def compute_agentrl_grpo_advantage(
    token_level_rewards, response_mask, index=None, config=None, non_tensor_batch=None, batch=None, **kwargs
):
    return _compute(token_level_rewards, response_mask, index, config, non_tensor_batch, turn_level=False)


_ESTIMATORS = {
    ESTIMATOR_NAMES["mt-grpo"]: compute_agentrl_mt_grpo_advantage,
    ESTIMATOR_NAMES["grpo"]: compute_agentrl_grpo_advantage,
}

# Modules that import `compute_advantage` by name from ray_trainer (v0.9.0/main v1 trainer utils,
# the experimental separation trainer): rebound when already imported; imported later, they get
# the wrapped one.
_IMPORTERS = ("verl.trainer.ppo.v1.utils", "verl.experimental.separation.ray_trainer")
_TRAINER = "verl.trainer.ppo.ray_trainer"


def install() -> None:
    """Registers the estimators with verl and lets them see the batch's non-tensor fields, in the
    process that imports verl's trainer. The job's Ray worker setup hook: Ray runs it in EVERY worker
    process of the job (rollout and agent-loop workers too), so it imports nothing of verl itself;
    it patches `verl.trainer.ppo.ray_trainer` now if that is loaded, else right after it loads.
    Idempotent."""
    module = sys.modules.get(_TRAINER)
    if module is not None:
        _patch(module)
    elif not any(isinstance(finder, _PatchOnImport) for finder in sys.meta_path):
        sys.meta_path.insert(0, _PatchOnImport())


class _PatchingLoader(importlib.abc.Loader):
    def __init__(self, loader):
        self.loader = loader

    def create_module(self, spec):
        return self.loader.create_module(spec)

    def exec_module(self, module):
        self.loader.exec_module(module)
        _patch(module)

    def __getattr__(self, name):
        # get_source, get_filename, is_package, ...: tracebacks and inspect read the module's source.
        return getattr(self.loader, name)


class _PatchOnImport(importlib.abc.MetaPathFinder):
    """Finds verl's trainer module with the other finders, and patches it once it has run."""

    def find_spec(self, name, path, target=None):
        if name != _TRAINER:
            return None
        sys.meta_path.remove(self)
        try:
            spec = importlib.util.find_spec(name)
        finally:
            sys.meta_path.insert(0, self)
        if spec is not None and spec.loader is not None:
            spec.loader = _PatchingLoader(spec.loader)
        return spec


def _patch(ray_trainer) -> None:
    from verl.trainer.ppo import core_algos

    for name, function in _ESTIMATORS.items():
        core_algos.register_adv_est(name)(function)
    original = ray_trainer.compute_advantage
    if getattr(original, "_agentrl_wrapped", False):
        return

    def compute_advantage(
        data, adv_estimator, gamma=1.0, lam=1.0, num_repeat=1, norm_adv_by_std_in_grpo=True, config=None
    ):
        name = getattr(adv_estimator, "value", adv_estimator)
        if name not in _ESTIMATORS:
            return original(data, adv_estimator, gamma, lam, num_repeat, norm_adv_by_std_in_grpo, config)
        advantages, returns = _ESTIMATORS[name](
            token_level_rewards=data.batch["token_level_rewards"],
            response_mask=data.batch["response_mask"],
            index=data.non_tensor_batch.get("uid"),
            config=config,
            non_tensor_batch=data.non_tensor_batch,
            batch=data.batch,
        )
        data.batch["advantages"] = advantages
        data.batch["returns"] = returns
        return data

    compute_advantage._agentrl_wrapped = True
    ray_trainer.compute_advantage = compute_advantage
    for module_name in _IMPORTERS:
        module = sys.modules.get(module_name)
        if module is not None and getattr(module, "compute_advantage", None) is original:
            module.compute_advantage = compute_advantage
