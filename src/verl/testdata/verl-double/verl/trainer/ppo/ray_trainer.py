"""Double of `verl/trainer/ppo/ray_trainer.py`'s `compute_advantage` (v0.7.1:129-221; v0.8.0
:185-277, v0.9.0 and main :187-279 the same): a registered estimator gets `token_level_rewards`,
`response_mask`, `config` and `index` (the uid), and `non_tensor_batch`/`batch` ONLY when it is
gdpo (:203-205). GAE and GRPO take their own branches (not doubled here)."""

from verl.trainer.ppo import core_algos
from verl.trainer.ppo.core_algos import AdvantageEstimator


def compute_advantage(data, adv_estimator, gamma=1.0, lam=1.0, num_repeat=1, norm_adv_by_std_in_grpo=True, config=None):
    if adv_estimator in (AdvantageEstimator.GAE, AdvantageEstimator.GRPO):
        raise NotImplementedError("the double covers registered estimators only")
    adv_estimator_fn = core_algos.get_adv_estimator_fn(adv_estimator)
    adv_kwargs = {
        "token_level_rewards": data.batch["token_level_rewards"],
        "response_mask": data.batch["response_mask"],
        "config": config,
    }
    if "uid" in data.non_tensor_batch:
        adv_kwargs["index"] = data.non_tensor_batch["uid"]
    if adv_estimator in (AdvantageEstimator.GDPO, "gdpo"):
        adv_kwargs["non_tensor_batch"] = data.non_tensor_batch
        adv_kwargs["batch"] = data.batch
    advantages, returns = adv_estimator_fn(**adv_kwargs)
    data.batch["advantages"] = advantages
    data.batch["returns"] = returns
    return data
