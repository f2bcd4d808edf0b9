"""Runs agentrl's agent loop inside the verl double's AgentLoopWorker (tests only; see verl-double/).

stdin: {
  "agent_loop_config_path": the job's YAML, or "loop_config": {name, _target_, ...} (written as one),
  "rollout": {prompt_length, response_length}, "server_addresses": ["host:port", ...],
  "sampling_params": {...}, "rows": [dataset rows: raw_prompt, extra_info, reward_model, agent_name, uid?],
  "workers": n (default 1: rows are split into n contiguous chunks, one worker each, then
             DataProto.concat, as AgentLoopManager.generate_sequences does, v0.7.1:1030-1047),
  "processor": bool (a VL model's processor), "check_lengths": bool (default true),
  "estimator": {"name", "norm_adv_by_std_in_grpo"?} (compute_advantage on the batch, after install()),
  "dump": {"path", "step"} (the batch as verl's `_dump_generations` writes it, ray_trainer.py
          v0.7.1:394-420, with the validation extras `reward` and the reward_extra_info keys)
}
stdout: {"outputs": [each sample's AgentLoopOutput fields, in row order], "acquired", "released",
         "batch": {non_tensor keys, reward_extra_keys, rm_scores, advantages?}}

Each worker is a fresh "process" for the agent loop's module (it is dropped from sys.modules), as
verl's workers are separate Ray actors that each import it once.
"""

import asyncio
import json
import os
import sys
import tempfile

from verl.experimental.agent_loop import agent_loop as verl_agent_loop
from verl.experimental.agent_loop.agent_loop import AgentLoopWorker, Processor
from verl.protocol import DataProto


def yaml_of(entry: dict) -> str:
    lines = []
    for index, (key, value) in enumerate(entry.items()):
        lines.append(("- " if index == 0 else "  ") + f"{key}: {'null' if value is None else json.dumps(value)}")
    return "\n".join(lines) + "\n"


def dataset_row(row: dict) -> dict:
    """A parquet row as RLHFDataset.__getitem__ hands it to the agent loop (rl_dataset.py
    v0.7.1:348-369): `raw_prompt` from `prompt`, `index` from `extra_info.index`, every other
    column as it is."""
    if "raw_prompt" in row:
        return row
    out = {k: v for k, v in row.items() if k != "prompt"}
    out["raw_prompt"] = row["prompt"]
    out["index"] = (row.get("extra_info") or {}).get("index", 0)
    return out


def chunks(rows: list, count: int) -> list:
    size = -(-len(rows) // count)
    return [rows[i : i + size] for i in range(0, len(rows), size)]


async def main():
    spec = json.load(sys.stdin)
    path = spec.get("agent_loop_config_path")
    if path is None:
        handle = tempfile.NamedTemporaryFile("w", suffix=".yaml", delete=False)
        handle.write(yaml_of(spec["loop_config"]))
        handle.close()
        path = handle.name
    config = {"actor_rollout_ref": {"rollout": spec["rollout"]}, "data": {}}
    rows = [dataset_row(row) for row in spec["rows"]]
    raw: list = []

    batches = []
    acquired = released = 0
    start = 0
    for chunk in chunks(rows, spec.get("workers", 1)):
        for name in [n for n in sys.modules if n == "agentrl_agent_loop"]:
            del sys.modules[name]
        worker = AgentLoopWorker(
            config, spec["server_addresses"], path, processor=Processor() if spec.get("processor") else None
        )
        # Observe what each loop returned before verl pads it (a hook of the test, not of verl).
        instantiate = verl_agent_loop.instantiate

        def observing(entry, **kwargs):
            loop = instantiate(entry, **kwargs)
            run = loop.run

            async def recorded(sampling_params, **row):
                output = await run(sampling_params, **row)
                raw.append((row["__row__"], output))
                return output

            loop.run = recorded
            return loop

        verl_agent_loop.instantiate = observing
        try:
            batch = await worker.generate_sequences(
                [{**row, "__row__": start + i} for i, row in enumerate(chunk)], dict(spec["sampling_params"])
            )
        finally:
            verl_agent_loop.instantiate = instantiate
        start += len(chunk)
        batches.append(batch)
        acquired += worker.server_manager.acquired
        released += worker.server_manager.released

    batch = DataProto.concat(batches)
    outputs = [None] * len(rows)
    rollout = spec["rollout"]
    for index, output in raw:
        if spec.get("check_lengths", True):
            assert len(output.prompt_ids) <= rollout["prompt_length"], "prompt longer than prompt_length"
            assert len(output.response_ids) <= rollout["response_length"], "response longer than response_length"
            assert len(output.response_mask) == len(output.response_ids), "mask and ids differ in length"
            assert set(output.response_mask) <= {0, 1}, "mask values other than 0/1"
            if output.response_logprobs is not None:
                assert len(output.response_logprobs) == len(output.response_ids), "log-probs and ids differ"
        extra = dict(output.extra_fields)
        extra.pop("raw_prompt", None)
        outputs[index] = {
            "prompt_ids": output.prompt_ids,
            "response_ids": output.response_ids,
            "response_mask": output.response_mask,
            "response_logprobs": output.response_logprobs,
            "multi_modal_data": output.multi_modal_data,
            "reward_score": output.reward_score,
            "num_turns": output.num_turns,
            "metrics": output.metrics.model_dump(),
            "extra_fields": extra,
        }
    summary = {
        "size": len(batch),
        "non_tensor_keys": sorted(batch.non_tensor_batch),
        "reward_extra_keys": batch.meta_info.get("reward_extra_keys"),
        "rm_scores": batch.batch["rm_scores"].tolist() if "rm_scores" in batch.batch else None,
        "response_mask": batch.batch["response_mask"].tolist(),
    }

    estimator = spec.get("estimator")
    if estimator:
        import agentrl_adv_estimator
        from verl.trainer.ppo import ray_trainer

        agentrl_adv_estimator.install()
        batch.batch["token_level_rewards"] = batch.batch["rm_scores"]
        batch.non_tensor_batch["uid"] = [row["uid"] for row in rows]
        ray_trainer.compute_advantage(
            batch,
            adv_estimator=estimator["name"],
            config={"norm_adv_by_std_in_grpo": estimator.get("norm_adv_by_std_in_grpo", True)},
        )
        summary["advantages"] = batch.batch["advantages"].tolist()

    dump = spec.get("dump")
    if dump:
        tokenizer = verl_agent_loop.Tokenizer()
        keys = batch.meta_info.get("reward_extra_keys") or []
        os.makedirs(dump["path"], exist_ok=True)
        with open(os.path.join(dump["path"], f"{dump['step']}.jsonl"), "w") as handle:
            for i in range(len(batch)):
                prompt = [t for t, a in zip(batch.batch["prompts"][i], batch.batch["attention_mask"][i]) if a]
                length = len(batch.batch["prompts"][i])
                response = [
                    t for t, a in zip(batch.batch["responses"][i], batch.batch["attention_mask"][i][length:]) if a
                ]
                score = sum(summary["rm_scores"][i])
                line = {
                    "input": tokenizer.decode(prompt, skip_special_tokens=True),
                    "output": tokenizer.decode(response, skip_special_tokens=True),
                    "gts": rows[i]["reward_model"]["ground_truth"],
                    "score": score,
                    "step": dump["step"],
                    "reward": score,
                    **{key: batch.non_tensor_batch[key][i] for key in keys},
                }
                handle.write(json.dumps(line) + "\n")

    json.dump({"outputs": outputs, "acquired": acquired, "released": released, "batch": summary}, sys.stdout)


asyncio.run(main())
