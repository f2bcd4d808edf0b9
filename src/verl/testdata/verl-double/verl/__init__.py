"""A test double of verl (tests only; no verl, torch or GPU): the parts agentrl's job touches.

It reproduces, per version, the behaviours of verl's agent-loop worker and trainer that decide
whether agentrl's job trains, each citing the verl source it mirrors (verl-project/verl at the tags
v0.7.0, v0.7.1, v0.8.0, v0.9.0 and main 1dda039b; paths relative to the verl repo):

- per-sample instantiation from the registry entry loaded from the agent-loop YAML;
- `tokenizer.pad` of an empty list returning lists (a crash before 0.9.0);
- `multi_modal_data.get` on None with a processor (a crash on 0.7.x);
- `torch.cat` of the batch's log-probs (a crash when they mix None and lists);
- `DataProto.concat` key equality across workers, and `reward_extra_keys` equality;
- transformers 5's `apply_chat_template` returning a BatchEncoding unless `return_dict=False`;
- the server manager: `_acquire_server` (>= 0.7.1) or only `_choose_server` (0.7.0);
- `register_adv_est` and `compute_advantage`, which passes `non_tensor_batch` only to gdpo.

The version is `VERL_DOUBLE_VERSION` (0.7.0, 0.7.1, 0.8.0, 0.9.0, main); transformers' major is
`VERL_DOUBLE_TRANSFORMERS` (default 4 before 0.9.0, 5 from 0.9.0: verl 0.9.0's setup.py:43 requires
transformers>=5.5.3).
"""

import os

__version__ = os.environ.get("VERL_DOUBLE_VERSION", "0.7.1")


def version_at_least(version: str) -> bool:
    """True when the doubled verl is `version` or later (main is later than every tag)."""
    if __version__ == "main":
        return True
    if version == "main":
        return False
    as_tuple = lambda text: tuple(int(part) for part in text.split("."))  # noqa: E731
    return as_tuple(__version__) >= as_tuple(version)


def transformers_major() -> int:
    return int(os.environ.get("VERL_DOUBLE_TRANSFORMERS") or (5 if version_at_least("0.9.0") else 4))
