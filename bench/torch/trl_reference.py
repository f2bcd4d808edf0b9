"""TRL's side of `npm run bench -- --only trl` (bench/trl.ts).

    python bench/torch/trl_reference.py make --out DIR
        writes the two random checkpoints of the hf bench (hf_reference.py) with a word-level
        tokenizer beside each ("t0" … "t{V-1}" are ids 0 … V-1; pad 0, bos 1, eos 2; no BOS added),
        so TRL's text prompts "t5 t17 …" tokenize to exactly the ids the engine is fed
    python bench/torch/trl_reference.py limits
        one JSON line: this machine's sgemm GFLOP/s and memory read GB/s (PyTorch, the faster of 1
        and 2 threads), the limits the bench's sampling figures are set against
    python bench/torch/trl_reference.py grpo --model DIR/NAME --settings SETTINGS.json --threads T
        SETTINGS (written by bench/trl.ts): prompts (token ids), sftRows, group, completion, rank,
        alpha, targets, lr, steps, warmup.
        One JSON line: TRL GRPOTrainer + PEFT LoRA on PyTorch CPU; one optimizer step = P prompts ×
        G completions of exactly C tokens (min_new_tokens = C: EOS never ends one early), sampled
        at temperature 1 with top-p 1, reward = the fraction of even completion ids, beta 0 (no
        reference model), num_iterations 1 (no separate old-log-prob pass: TRL takes the detached
        current ones), loss "dapo" (token mean), AdamW without weight decay, max grad norm 1.
        The median step time over N steps after W warm-up steps (a Trainer callback around each
        optimizer step), tokens generated per step, trainable parameters, peak RSS.
    python bench/torch/trl_reference.py sft --model DIR/NAME --settings SETTINGS.json --threads T
        one JSON line: TRL SFTTrainer + PEFT LoRA on the settings' sftRows (B rows of T ids; the loss
        on every token, no packing, no padding: all rows are T long), median step time, tokens/s.
"""

import argparse
import json
import os
import resource
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import torch  # noqa: E402
from datasets import Dataset  # noqa: E402
from peft import LoraConfig  # noqa: E402
from transformers import AutoModelForCausalLM, PreTrainedTokenizerFast, TrainerCallback  # noqa: E402

from hf_reference import CONFIGS  # noqa: E402
from hf_reference import make as make_checkpoints  # noqa: E402


def word_tokenizer(vocab):
    from tokenizers import Tokenizer, models, pre_tokenizers

    tok = Tokenizer(models.WordLevel({f"t{i}": i for i in range(vocab)}, unk_token="t0"))
    tok.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    return PreTrainedTokenizerFast(
        tokenizer_object=tok, pad_token="t0", bos_token="t1", eos_token="t2", unk_token="t0"
    )


def make(out):
    make_checkpoints(out)
    for name in CONFIGS:
        folder = os.path.join(out, name)
        with open(os.path.join(folder, "config.json")) as f:
            vocab = json.load(f)["vocab_size"]
        word_tokenizer(vocab).save_pretrained(folder)


class StepTimer(TrainerCallback):
    """Wall time of each optimizer step (generation, rewards, forward, backward and update)."""

    def __init__(self):
        self.times = []
        self.start = None

    def on_step_begin(self, args, state, control, **kwargs):
        self.start = time.perf_counter()

    def on_step_end(self, args, state, control, **kwargs):
        self.times.append(time.perf_counter() - self.start)


def even_fraction(completion_ids, **_):
    return [sum(1 for t in ids if t % 2 == 0) / max(1, len(ids)) for ids in completion_ids]


def lora_config(args):
    return LoraConfig(
        r=args.rank, lora_alpha=args.alpha, lora_dropout=0.0, target_modules=args.targets.split(","), task_type="CAUSAL_LM"
    )


def common(args):
    return dict(
        output_dir=os.path.join(args.work, "out"),
        use_cpu=True,
        bf16=False,
        fp16=False,
        report_to="none",
        save_strategy="no",
        logging_steps=10_000,
        disable_tqdm=True,
        learning_rate=args.lr,
        weight_decay=0.0,
        max_grad_norm=1.0,
        # TRL turns it on by default; ours keeps the activations, so TRL does too (faster, and the
        # same work: no forward recomputed in the backward).
        gradient_checkpointing=False,
        lr_scheduler_type="constant",
        gradient_accumulation_steps=1,
        max_steps=args.warmup + args.steps,
        dataloader_num_workers=0,
        seed=0,
    )


def trainable(trainer):
    return sum(p.numel() for p in trainer.model.parameters() if p.requires_grad)


def peak_rss_mb():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def grpo(args):
    from trl import GRPOConfig, GRPOTrainer

    tokenizer = PreTrainedTokenizerFast.from_pretrained(args.model)
    model = AutoModelForCausalLM.from_pretrained(args.model, dtype=torch.float32, attn_implementation="sdpa")
    prompts = [" ".join(f"t{i}" for i in row) for row in args.prompt_ids]
    steps = args.warmup + args.steps
    dataset = Dataset.from_list([{"prompt": p} for p in prompts * steps])
    config = GRPOConfig(
        **common(args),
        per_device_train_batch_size=len(prompts) * args.group,
        num_generations=args.group,
        steps_per_generation=1,
        num_iterations=1,
        max_completion_length=args.completion,
        generation_kwargs={"min_new_tokens": args.completion},
        temperature=1.0,
        top_p=1.0,
        beta=0.0,
        epsilon=0.2,
        loss_type="dapo",
        scale_rewards="group",
        mask_truncated_completions=False,
        shuffle_dataset=False,
        log_completions=False,
    )
    timer = StepTimer()
    generated = []

    def reward(completion_ids, **kw):
        generated.append(sum(len(ids) for ids in completion_ids))
        return even_fraction(completion_ids)

    trainer = GRPOTrainer(
        model=model,
        reward_funcs=reward,
        args=config,
        train_dataset=dataset,
        processing_class=tokenizer,
        peft_config=lora_config(args),
        callbacks=[timer],
    )
    params = trainable(trainer)
    trainer.train()
    times = timer.times[args.warmup :]
    print(
        json.dumps(
            {
                "step_s": statistics.median(times),
                "steps": len(times),
                "generated_tokens_per_step": generated[-1],
                "trainable_params": params,
                "peak_rss_mb": peak_rss_mb(),
                "threads": torch.get_num_threads(),
                "gradient_checkpointing": bool(getattr(trainer.model, "is_gradient_checkpointing", False)),
            }
        ),
        flush=True,
    )


def sft(args):
    from trl import SFTConfig, SFTTrainer

    tokenizer = PreTrainedTokenizerFast.from_pretrained(args.model)
    model = AutoModelForCausalLM.from_pretrained(args.model, dtype=torch.float32, attn_implementation="sdpa")
    rows = args.sft_rows
    steps = args.warmup + args.steps
    dataset = Dataset.from_list([{"input_ids": r} for r in rows * steps])
    config = SFTConfig(
        **common(args),
        per_device_train_batch_size=len(rows),
        max_length=len(rows[0]),
        packing=False,
        padding_free=False,
        completion_only_loss=False,
        shuffle_dataset=False,
    )
    timer = StepTimer()
    trainer = SFTTrainer(
        model=model,
        args=config,
        train_dataset=dataset,
        processing_class=tokenizer,
        peft_config=lora_config(args),
        callbacks=[timer],
    )
    params = trainable(trainer)
    trainer.train()
    times = timer.times[args.warmup :]
    step = statistics.median(times)
    print(
        json.dumps(
            {
                "step_s": step,
                "tokens_per_s": len(rows) * len(rows[0]) / step,
                "steps": len(times),
                "trainable_params": params,
                "peak_rss_mb": peak_rss_mb(),
                "threads": torch.get_num_threads(),
                "gradient_checkpointing": bool(getattr(trainer.model, "is_gradient_checkpointing", False)),
            }
        ),
        flush=True,
    )


def limits():
    """sgemm GFLOP/s (2048² matrices) and read GB/s (the sum of 256 MiB), best of 3 at 1 and 2 threads."""
    a = torch.randn(2048, 2048)
    b = torch.randn(2048, 2048)
    big = torch.ones(64 * 2**20)
    gflops = read = 0.0
    for n in (1, 2):
        torch.set_num_threads(n)
        for _ in range(4):
            start = time.perf_counter()
            torch.mm(a, b)
            gflops = max(gflops, 2 * 2048**3 / (time.perf_counter() - start) / 1e9)
            start = time.perf_counter()
            big.sum()
            read = max(read, big.numel() * 4 / (time.perf_counter() - start) / 1e9)
    print(json.dumps({"gflops": gflops, "read_gbps": read}), flush=True)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("command", choices=["make", "limits", "grpo", "sft"])
    parser.add_argument("--out")
    parser.add_argument("--model")
    parser.add_argument("--settings")
    parser.add_argument("--work", default=None)
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args()
    if args.command == "make":
        make(args.out)
        return
    if args.command == "limits":
        limits()
        return
    with open(args.settings) as f:
        settings = json.load(f)
    args.prompt_ids = settings["prompts"]
    args.sft_rows = settings["sftRows"]
    args.targets = ",".join(settings["targets"])
    for key in ("group", "completion", "rank", "alpha", "lr", "steps", "warmup"):
        setattr(args, key, settings[key])
    torch.set_num_threads(args.threads)
    args.work = args.work or os.path.join(args.model, "trl-run")
    (grpo if args.command == "grpo" else sft)(args)


if __name__ == "__main__":
    main()
