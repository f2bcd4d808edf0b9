"""The agent-loop bench's PyTorch reference: a whole tool-use loop in eager PyTorch, so the bench
can put our evaluation and GRPO episodes per second beside a plain implementation's.

It is a measuring stick, not a port of agentrl: its world is deliberately smaller (exact-name
search, four task families, episodes up to 128 tokens; ours run to 256), so the ratios compare
loops, not identical work. What it does, all batched with a KV cache:
  pretrain  next-token training on scripted episodes (an expert, a vague searcher, a guesser)
  eval      n samples per task at temperature 1, tool calls answered between tokens; pass@k
  grpo      GRPO steps: 16 tasks x groups of 8, clipped ratio 0.2/0.28, token-mean loss

Usage (the bench runs these; `OPENBLAS_NUM_THREADS=2` on two cores):
  python3 agent_loop_reference.py pretrain --steps 1200 --out base.pt
  python3 agent_loop_reference.py eval --checkpoint base.pt --tasks 32 --samples 8 --out eval.json
  python3 agent_loop_reference.py grpo --checkpoint base.pt --steps 4
eval writes {"episodes_per_s", "pass_at_k", ...}; grpo prints one JSON line per step with
`step` and `seconds`.

Needs PyTorch 1.13 or later (torch_compat.py: older versions are refused, and without
`scaled_dot_product_attention`, before 2.0, attention is computed explicitly): `apt-get install python3-torch libopenblas0-pthread` (Debian) or
`pip install torch --index-url https://download.pytorch.org/whl/cpu`.
"""

import argparse
import json
import math
import random
import time

import torch
import torch.nn.functional as F
from torch import nn

from torch_compat import attention, require_torch

require_torch()

# ---------------------------------------------------------------- vocabulary and world
TAGS = ["<pad>", "<q>", "</q>", "<search>", "</search>", "<obs>", "</obs>", "<calc>", "</calc>", "<answer>", "</answer>"]
SYMBOLS = [*"0123456789", "-", ":", "."]
WORDS = "population of capital founded year country where was born years between founding and city in person error none".split()


def syllable_names(count, seed=0):
    """Distinct made-up names (consonant-vowel syllables), fixed for every world."""
    rng = random.Random(seed)
    names = []
    while len(names) < count:
        name = "".join(rng.choice("bdfgklmnprstvz") + rng.choice("aeiou") for _ in range(rng.choice((2, 3))))
        if name not in names and name not in WORDS:
            names.append(name)
    return names


NAMES = syllable_names(150)
COUNTRIES, CITIES, PEOPLE = NAMES[:30], NAMES[30:90], NAMES[90:]
VOCABULARY = TAGS + SYMBOLS + WORDS + NAMES
TOKEN = {word: index for index, word in enumerate(VOCABULARY)}
PAD = TOKEN["<pad>"]
CLOSING = {TOKEN["</search>"]: "search", TOKEN["</calc>"]: "calc", TOKEN["</answer>"]: "answer"}
OPENING = {"search": TOKEN["<search>"], "calc": TOKEN["<calc>"], "answer": TOKEN["<answer>"]}
CONTEXT = 128


def encode(text):
    return [TOKEN[word] for word in text.split()]


def spell(number):
    return " ".join(str(number))


class World:
    """Names are fixed; which city lies where, capitals and every number are drawn per seed."""

    def __init__(self, seed):
        rng = random.Random(seed * 7919 + 13)
        cities = rng.sample(CITIES, len(CITIES))
        self.country = {}
        self.capital = {}
        for index, country in enumerate(COUNTRIES):
            first, second = cities[2 * index], cities[2 * index + 1]
            self.country[first] = self.country[second] = country
            self.capital[country] = first
        self.population = {city: rng.randint(100, 9999) for city in CITIES}
        self.founded = {city: rng.randint(1000, 1999) for city in CITIES}
        self.birthplace = {person: rng.choice(CITIES) for person in PEOPLE}

    def document(self, name):
        if name in self.population:
            return f"{name} : city in {self.country[name]} . population {spell(self.population[name])} . founded {spell(self.founded[name])} ."
        if name in self.capital:
            return f"{name} : country . capital {self.capital[name]} ."
        if name in self.birthplace:
            return f"{name} : person . born in {self.birthplace[name]} ."
        return "none"


FAMILIES = ("lookup", "bridge", "chain", "difference")


class Task:
    """One question over its own world; `hops` are the entities an expert searches, in order."""

    def __init__(self, family, seed):
        self.family, self.world = family, World(seed)
        world, rng = self.world, random.Random(seed * 31 + FAMILIES.index(family))
        if family == "lookup":
            city = rng.choice(CITIES)
            self.question, self.hops, self.answer = f"population of {city}", [city], world.population[city]
        elif family == "bridge":
            country = rng.choice(COUNTRIES)
            capital = world.capital[country]
            self.question, self.hops = f"population of capital of {country}", [country, capital]
            self.answer = world.population[capital]
        elif family == "chain":
            person = rng.choice(PEOPLE)
            born = world.birthplace[person]
            country = world.country[born]
            capital = world.capital[country]
            self.question = f"founded year of capital of country where {person} was born"
            self.hops = [person, born, country] + ([] if capital == born else [capital])
            self.answer = world.founded[capital]
        else:
            first, second = rng.sample(CITIES, 2)
            self.question, self.hops = f"years between founding of {first} and {second}", [first, second]
            self.answer = abs(world.founded[first] - world.founded[second])
        self.answer_ids = encode(spell(self.answer))


def run_tool(world, tool, words, rng, error_rate):
    """The observation for a call: search is an exact-name lookup, calc one subtraction."""
    if tool == "search":
        if rng.random() < error_rate:
            return "error"
        return world.document(words[0]) if len(words) == 1 else "none"
    if "-" not in words:
        return "error"
    split = words.index("-")
    left, right = words[:split], words[split + 1 :]
    if not left or not right or len(left) > 5 or len(right) > 5 or not all(word.isdigit() for word in left + right):
        return "error"
    return spell(int("".join(left)) - int("".join(right)))


def scripted_episode(task, behaviour, rng, error_rate=0.1):
    """Token ids and loss mask of one demonstration: `expert`, `vague` (one wrong hop) or `guess`."""
    ids, mask = [], []

    def emit(text, trained):
        tokens = encode(text)
        ids.extend(tokens)
        mask.extend([trained] * len(tokens))

    emit(f"<q> {task.question} </q>", 0)
    if behaviour == "guess":
        emit(f"<answer> {spell(rng.randint(100, 1999))} </answer>", 1)
        return ids, mask
    hops = list(task.hops)
    if behaviour == "vague":
        wrong = rng.randrange(len(hops))
        hops[wrong] = rng.choice([name for name in NAMES if name != hops[wrong]])
    for name in hops:
        while True:  # retry a failed search
            emit(f"<search> {name} </search>", 1)
            observation = run_tool(task.world, "search", [name], rng, error_rate)
            emit(f"<obs> {observation} </obs>", 0)
            if observation != "error":
                break
    world = task.world
    if task.family == "difference":
        a, b = sorted(task.hops, key=lambda city: -world.founded[city])
        emit(f"<calc> {spell(world.founded[a])} - {spell(world.founded[b])} </calc>", 1)
        emit(f"<obs> {spell(world.founded[a] - world.founded[b])} </obs>", 0)
        emit(f"<answer> {spell(task.answer)} </answer>", 1)
    else:
        last = hops[-1]
        value = world.population.get(last) if task.family in ("lookup", "bridge") else world.founded.get(last)
        emit(f"<answer> {spell(value if value is not None else rng.randint(100, 1999))} </answer>", 1)
    return ids, mask


def demonstration_batch(rng, rows):
    ids = torch.full((rows, CONTEXT), PAD)
    mask = torch.zeros(rows, CONTEXT)
    for row in range(rows):
        task = Task(rng.choice(FAMILIES), rng.randrange(10**7))
        behaviour = rng.choices(("expert", "vague", "guess"), weights=(0.5, 0.3, 0.2))[0]
        tokens, trained = scripted_episode(task, behaviour, rng)
        tokens, trained = tokens[:CONTEXT], trained[:CONTEXT]
        ids[row, : len(tokens)] = torch.tensor(tokens)
        mask[row, : len(trained)] = torch.tensor(trained, dtype=torch.float)
    return ids, mask


# ---------------------------------------------------------------- model
class Block(nn.Module):
    def __init__(self, width, heads):
        super().__init__()
        self.heads = heads
        self.norm_attention, self.norm_mlp = nn.LayerNorm(width), nn.LayerNorm(width)
        self.qkv, self.out = nn.Linear(width, 3 * width), nn.Linear(width, width)
        self.up, self.down = nn.Linear(width, 4 * width), nn.Linear(4 * width, width)

    def forward(self, x, cache=None, position=0):
        batch, steps, width = x.shape  # B=batch, T=time, D=width
        q, k, v = (
            part.view(batch, steps, self.heads, width // self.heads).transpose(1, 2)
            for part in self.qkv(self.norm_attention(x)).split(width, dim=-1)
        )
        if cache is not None:
            keys, values = cache
            keys[:, :, position : position + steps], values[:, :, position : position + steps] = k, v
            k, v = keys[:, :, : position + steps], values[:, :, : position + steps]
        y = attention(q, k, v, is_causal=steps > 1)
        x = x + self.out(y.transpose(1, 2).reshape(batch, steps, width))
        return x + self.down(F.gelu(self.up(self.norm_mlp(x))))


class Model(nn.Module):
    """A GPT with tied input/output embeddings: width 128, 4 layers, 4 heads, context 128."""

    def __init__(self, width=128, layers=4, heads=4):
        super().__init__()
        self.width, self.heads = width, heads
        self.tokens, self.positions = nn.Embedding(len(VOCABULARY), width), nn.Embedding(CONTEXT, width)
        self.blocks = nn.ModuleList(Block(width, heads) for _ in range(layers))
        self.norm = nn.LayerNorm(width)
        for parameter in self.parameters():
            if parameter.dim() > 1:
                nn.init.normal_(parameter, std=0.02)

    def forward(self, ids, caches=None, position=0):
        x = self.tokens(ids) + self.positions(torch.arange(position, position + ids.shape[1]))
        for layer, block in enumerate(self.blocks):
            x = block(x, None if caches is None else caches[layer], position)
        return self.norm(x) @ self.tokens.weight.T

    def empty_caches(self, rows):
        shape = (rows, self.heads, CONTEXT, self.width // self.heads)
        return [(torch.zeros(shape), torch.zeros(shape)) for _ in self.blocks]


def token_log_probs(model, ids):
    return model(ids[:, :-1]).log_softmax(-1).gather(-1, ids[:, 1:, None])[..., 0]


# ---------------------------------------------------------------- the episode loop
@torch.inference_mode()
def rollout(model, tasks, seed, temperature=1.0, error_rate=0.1):
    """Runs every task's episode in lock-step, one token per step for all rows. Observations are
    forced tokens the model reads (not samples). Returns ids, sampled-token mask, rewards, lengths."""
    model.eval()
    rows = len(tasks)
    ids = torch.full((rows, CONTEXT), PAD)
    forced = torch.full((rows, CONTEXT), -1)
    for row, task in enumerate(tasks):
        prompt = encode(f"<q> {task.question} </q>")
        forced[row, : len(prompt)] = torch.tensor(prompt)
    ids[:, 0] = forced[:, 0]
    sampled = torch.zeros(rows, CONTEXT, dtype=torch.bool)
    finished = torch.zeros(rows, dtype=torch.bool)
    rewards, lengths = torch.zeros(rows), torch.full((rows,), CONTEXT)
    generator = torch.Generator().manual_seed(seed)
    tool_rngs = [random.Random(seed * 1_000_003 + row) for row in range(rows)]
    caches = model.empty_caches(rows)
    closing = torch.tensor(list(CLOSING))
    for position in range(CONTEXT - 1):
        if finished.all():
            break
        logits = model(ids[:, position : position + 1], caches, position)[:, -1]
        choice = torch.multinomial((logits / temperature).softmax(-1), 1, generator=generator)[:, 0]
        is_forced = forced[:, position + 1] >= 0
        token = torch.where(is_forced, forced[:, position + 1], choice)
        token[finished] = PAD
        ids[:, position + 1] = token
        free = ~is_forced & ~finished
        sampled[:, position + 1] = free
        for row in (free & torch.isin(token, closing)).nonzero()[:, 0].tolist():
            tool = CLOSING[int(token[row])]
            history = ids[row, : position + 2].tolist()
            start = len(history) - 2  # the last sampled opening tag of the same kind
            while start >= 0 and not (history[start] == OPENING[tool] and sampled[row, start]):
                start -= 1
            argument = history[start + 1 : -1] if start >= 0 else None
            if tool == "answer":
                rewards[row] = float(argument == tasks[row].answer_ids)
                finished[row], lengths[row] = True, position + 2
                continue
            words = [VOCABULARY[word] for word in argument] if argument else []
            observation = run_tool(tasks[row].world, tool, words, tool_rngs[row], error_rate) if words else "error"
            reply = encode(f"<obs> {observation} </obs>")[: CONTEXT - position - 2]
            forced[row, position + 2 : position + 2 + len(reply)] = torch.tensor(reply, dtype=torch.long)
    return ids, sampled, rewards, lengths


def pass_at_k(samples, correct, k):
    """Unbiased pass@k (Chen et al. 2021): 1 - C(n-c, k) / C(n, k)."""
    if samples - correct < k:
        return 1.0
    return 1.0 - math.prod(1.0 - k / i for i in range(samples - correct + 1, samples + 1))


# ---------------------------------------------------------------- commands
def pretrain(args):
    torch.manual_seed(0)
    rng = random.Random(1)
    model = Model()
    optimizer = torch.optim.AdamW(model.parameters(), lr=args.lr, betas=(0.9, 0.98), weight_decay=0.01)
    start = time.time()
    for step in range(1, args.steps + 1):
        warmup = min(1.0, step / 100)
        cosine = 0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * step / args.steps))
        for group in optimizer.param_groups:
            group["lr"] = args.lr * warmup * cosine
        ids, mask = demonstration_batch(rng, args.batch)
        model.train()
        losses = F.cross_entropy(model(ids[:, :-1]).transpose(1, 2), ids[:, 1:], reduction="none")
        loss = (losses * mask[:, 1:]).sum() / mask[:, 1:].sum()
        optimizer.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        if step % 100 == 0 or step == args.steps:
            print(json.dumps({"step": step, "loss": round(loss.item(), 4), "seconds": round(time.time() - start, 1)}), flush=True)
    torch.save(model.state_dict(), args.out)


def evaluate(args):
    model = Model()
    model.load_state_dict(torch.load(args.checkpoint))
    start = time.time()
    episodes, counts = 0, []
    for family in FAMILIES:
        tasks = [Task(family, 10**8 + 1000 * FAMILIES.index(family) + i) for i in range(args.tasks)]
        per_batch = max(1, 1024 // args.samples)  # up to 1024 episodes in flight
        for first in range(0, len(tasks), per_batch):
            batch = [task for task in tasks[first : first + per_batch] for _ in range(args.samples)]
            rewards = rollout(model, batch, seed=1000 + first)[2]
            episodes += len(batch)
            counts += rewards.view(-1, args.samples).sum(1).int().tolist()
    seconds = time.time() - start
    ks = [k for k in (1, 2, 4, 8, 16, 32, 64) if k <= args.samples]
    result = {
        "episodes": episodes,
        "seconds": round(seconds, 2),
        "episodes_per_s": round(episodes / seconds, 2),
        "pass_at_k": {k: round(sum(pass_at_k(args.samples, c, k) for c in counts) / len(counts), 4) for k in ks},
    }
    with open(args.out, "w") as file:
        json.dump(result, file)
    print(json.dumps(result))


def grpo(args):
    torch.manual_seed(0)
    rng = random.Random(7)
    model = Model()
    model.load_state_dict(torch.load(args.checkpoint))
    optimizer = torch.optim.Adam(model.parameters(), lr=args.lr, betas=(0.9, 0.99))
    for step in range(1, args.steps + 1):
        start = time.time()
        tasks = [task for task in (Task(rng.choice(FAMILIES), rng.randrange(10**7)) for _ in range(args.tasks)) for _ in range(args.group)]
        ids, sampled, rewards, lengths = rollout(model, tasks, seed=step * 7 + 11)
        rollout_seconds = time.time() - start
        grouped = rewards.view(args.tasks, args.group)
        advantages = ((grouped - grouped.mean(1, keepdim=True)) / (grouped.std(1, keepdim=True) + 1e-4)).reshape(-1)
        keep = (advantages.abs() > 1e-6).nonzero()[:, 0]  # groups with signal only
        if len(keep) > 0:
            longest = int(lengths[keep].max())
            ids, mask, advantages = ids[keep, :longest], sampled[keep, 1:longest].float(), advantages[keep]
            with torch.no_grad():
                model.eval()
                old = token_log_probs(model, ids)
            model.train()
            for chunk in torch.randperm(len(keep)).chunk(2):  # two micro-batches, one update each
                ratio = torch.exp(token_log_probs(model, ids[chunk]) - old[chunk])
                advantage = advantages[chunk][:, None]
                objective = torch.min(ratio * advantage, ratio.clamp(1 - 0.2, 1 + 0.28) * advantage)
                loss = -(objective * mask[chunk]).sum() / mask[chunk].sum()
                optimizer.zero_grad()
                loss.backward()
                torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
                optimizer.step()
        print(json.dumps({
            "step": step,
            "reward": round(rewards.mean().item(), 4),
            "kept": len(keep),
            "rollout_seconds": round(rollout_seconds, 3),
            "seconds": round(time.time() - start, 3),
        }), flush=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    command = commands.add_parser("pretrain")
    command.add_argument("--steps", type=int, default=1200)
    command.add_argument("--lr", type=float, default=2e-3)
    command.add_argument("--batch", type=int, default=64)
    command.add_argument("--out", required=True)
    command = commands.add_parser("eval")
    command.add_argument("--checkpoint", required=True)
    command.add_argument("--tasks", type=int, default=32)
    command.add_argument("--samples", type=int, default=8)
    command.add_argument("--out", required=True)
    command = commands.add_parser("grpo")
    command.add_argument("--checkpoint", required=True)
    command.add_argument("--steps", type=int, default=4)
    command.add_argument("--tasks", type=int, default=16)
    command.add_argument("--group", type=int, default=8)
    command.add_argument("--lr", type=float, default=2e-4)
    args = parser.parse_args()
    torch.set_num_threads(1)
    {"pretrain": pretrain, "eval": evaluate, "grpo": grpo}[args.command](args)


if __name__ == "__main__":
    main()
