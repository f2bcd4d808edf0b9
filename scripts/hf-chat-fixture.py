"""A complete tiny chat checkpoint folder, and what transformers does with it, for the end-to-end test
of `serve --policy hf:<folder>` (src/policy/hf/serve-e2e.test.ts).

Writes src/policy/hf/fixtures/qwen3-chat/ as save_pretrained writes a Qwen3 chat checkpoint:
config.json, generation_config.json, model.safetensors, tokenizer.json, tokenizer_config.json,
chat_template.jinja (the real Qwen3 template, src/policy/hf/testdata/templates/qwen3.jinja), and
reference.json with transformers' own answers. The TypeScript test reads only these committed
files (CI has no Python).

    /work/pyvenv/bin/python scripts/hf-chat-fixture.py   # any Python with torch 2.x, transformers 5.x

- The tokenizer: a byte-level BPE trained with the `tokenizers` library on the fixture's own
  conversation (Qwen3's NFC normalizer, split regex and byte-level pre-tokenizer; a few hundred
  tokens), with Qwen3's added tokens (<|endoftext|>, <|im_start|>, <|im_end|> special;
  <tool_call>, </tool_call>, <tool_response>, </tool_response>, <think>, </think> not, as in
  Qwen3's tokenizer.json); eos <|im_end|>, pad <|endoftext|>, as Qwen3's tokenizer_config.json.
- The model: a tiny Qwen3 (hidden 32, two layers, vocabulary = the tokenizer's) trained for a few
  hundred Adam steps so that greedy decoding of the templated conversation (a `search` tool) writes a
  Hermes tool call, and, given that call and the tool's result, a short answer; both end with
  <|im_end|>. The script checks that transformers' greedy generation does exactly that.
- reference.json: the messages and tools, and for each of the two turns transformers'
  apply_chat_template text and ids (add_generation_prompt, with the tools) and its greedy generate
  ids (do_sample=False) and their decoded text.

Everything is seeded and single-threaded: a rerun with the same library versions writes the same files.
"""

import json
import os
import re
import shutil
import sys
from pathlib import Path

import tokenizers
import torch
import transformers
from tokenizers import AddedToken, Regex, Tokenizer, decoders, models, normalizers, pre_tokenizers, trainers
from transformers import AutoTokenizer, GenerationConfig, PreTrainedTokenizerFast, Qwen3Config, Qwen3ForCausalLM

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "src/policy/hf/fixtures/qwen3-chat"
TEMPLATE = ROOT / "src/policy/hf/testdata/templates/qwen3.jinja"

# Qwen3's pre-tokenizer split (tokenizer.json of Qwen/Qwen3-*).
SPLIT = (
    r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"
)
SPECIAL = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
ADDED = ["<tool_call>", "</tool_call>", "<tool_response>", "</tool_response>", "<think>", "</think>"]
VOCAB = 400  # the BPE's own tokens (bytes and merges); the added tokens come after

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "search",
            "description": "Search the encyclopedia for a short passage.",
            "parameters": {
                "type": "object",
                "properties": {"query": {"type": "string", "description": "What to look up."}},
                "required": ["query"],
                # What zod's toJSONSchema writes for an object (src/tools/spec.ts), so the episode
                # loop's tool spec renders the same text as a client's.
                "additionalProperties": False,
            },
        },
    }
]
QUERY = "population of Zenda"
FIRST = [
    {"role": "system", "content": "You are a helpful assistant. Use the tools."},
    {"role": "user", "content": "What is the population of Zenda?"},
]
CALL_ID = "call_0"
# The assistant message as an OpenAI client sends it back (arguments a JSON string); transformers is
# given the arguments parsed to an object, as the Qwen3 template expects (`arguments | tojson`) and
# as agentrl's template rendering (chat-template.ts) and vLLM do before rendering.
CALL_MESSAGE = {
    "role": "assistant",
    "content": None,
    "tool_calls": [
        {"id": CALL_ID, "type": "function", "function": {"name": "search", "arguments": json.dumps({"query": QUERY})}}
    ],
}
RESULT = {"role": "tool", "tool_call_id": CALL_ID, "content": "Zenda is a small town of 1200 people."}
SECOND = FIRST + [CALL_MESSAGE, RESULT]
TARGET_CALL = '<tool_call>\n{"name": "search", "arguments": {"query": "' + QUERY + '"}}\n</tool_call><|im_end|>'
TARGET_ANSWER = "Zenda has 1200 people.<|im_end|>"
# More text for the BPE (the conversation's own text dominates the merges).
EXTRA = [
    "The population of a town is the number of people who live there.",
    "Search results are short passages; answer with the number you find.",
]


def for_transformers(messages):
    """Tool-call arguments parsed to objects (what agentrl and vLLM do before rendering)."""
    result = json.loads(json.dumps(messages))
    for message in result:
        for call in message.get("tool_calls") or []:
            call["function"]["arguments"] = json.loads(call["function"]["arguments"])
    return result


def base_tokenizer():
    tok = Tokenizer(models.BPE(dropout=None, unk_token=None, fuse_unk=False, byte_fallback=False))
    tok.normalizer = normalizers.NFC()
    tok.pre_tokenizer = pre_tokenizers.Sequence(
        [
            pre_tokenizers.Split(Regex(SPLIT), behavior="isolated", invert=False),
            pre_tokenizers.ByteLevel(add_prefix_space=False, trim_offsets=False, use_regex=False),
        ]
    )
    tok.decoder = decoders.ByteLevel(add_prefix_space=False, trim_offsets=False, use_regex=False)
    return tok


def wrap(tok, folder=None):
    """The `tokenizers` object as transformers' fast tokenizer with Qwen3's tokenizer_config fields."""
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tok,
        eos_token="<|im_end|>",
        pad_token="<|endoftext|>",
        bos_token=None,
        unk_token=None,
        clean_up_tokenization_spaces=False,
        model_max_length=512,
        split_special_tokens=False,
    )
    fast.chat_template = TEMPLATE.read_text()
    return fast


def add_qwen_tokens(tok):
    tok.add_special_tokens([AddedToken(t, normalized=False, special=True) for t in SPECIAL])
    tok.add_tokens([AddedToken(t, normalized=False, special=False) for t in ADDED])


def render(fast, messages, **kw):
    return fast.apply_chat_template(for_transformers(messages), tools=TOOLS, add_generation_prompt=True, tokenize=False, **kw)


def build_tokenizer():
    # Pass 1: render the conversation (the template does not depend on the vocabulary).
    scratch = base_tokenizer()
    add_qwen_tokens(scratch)
    scratch_fast = wrap(scratch)
    texts = [
        render(scratch_fast, FIRST) + TARGET_CALL,
        render(scratch_fast, SECOND) + TARGET_ANSWER,
    ] + EXTRA
    # Pass 2: train the BPE on that text without the added tokens' strings (they are never merged).
    strip = re.compile("|".join(re.escape(t) for t in SPECIAL + ADDED))
    corpus = [strip.sub("\n", text) for text in texts]
    tok = base_tokenizer()
    trainer = trainers.BpeTrainer(
        vocab_size=VOCAB,
        min_frequency=2,
        show_progress=False,
        special_tokens=[],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
    )
    tok.train_from_iterator(corpus, trainer=trainer)
    add_qwen_tokens(tok)
    return wrap(tok)


def tiny_qwen3(vocab, ids):
    config = Qwen3Config(
        vocab_size=vocab,
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        head_dim=16,
        intermediate_size=64,
        max_position_embeddings=1024,
        rope_theta=1000000.0,
        tie_word_embeddings=True,
        bos_token_id=ids["<|endoftext|>"],
        eos_token_id=ids["<|im_end|>"],
        pad_token_id=ids["<|endoftext|>"],
    )
    return Qwen3ForCausalLM(config)


def train(model, sequences, steps=400):
    """Adam on the completions only (prompt positions masked), both turns in one batch."""
    length = max(len(prompt) + len(target) for prompt, target in sequences)
    inputs = torch.zeros(len(sequences), length, dtype=torch.long)
    labels = torch.full((len(sequences), length), -100, dtype=torch.long)
    for row, (prompt, target) in enumerate(sequences):
        ids = prompt + target
        inputs[row, : len(ids)] = torch.tensor(ids)
        labels[row, len(prompt) : len(ids)] = torch.tensor(target)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
    model.train()
    for step in range(steps):
        loss = model(input_ids=inputs, labels=labels).loss
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        if step % 50 == 0 or step == steps - 1:
            print(f"step {step} loss {loss.item():.5f}")
    return model.eval()


def template_ids(tok, messages):
    out = tok.apply_chat_template(
        for_transformers(messages), tools=TOOLS, add_generation_prompt=True, tokenize=True, return_dict=True
    )
    return list(out["input_ids"])


def compact(value):
    text = json.dumps(value, ensure_ascii=False, indent=1)
    # Lists of numbers on one line each: the ids stay readable and the diff small.
    return re.sub(r"\[\s*(-?\d+(?:,\s*-?\d+)*)\s*\]", lambda m: "[" + re.sub(r"\s+", " ", m.group(1)) + "]", text)


def main():
    torch.manual_seed(36)
    torch.set_num_threads(1)
    torch.use_deterministic_algorithms(True)
    fast = build_tokenizer()
    ids = fast.get_vocab()
    vocab = len(fast)

    shutil.rmtree(OUT, ignore_errors=True)
    OUT.mkdir(parents=True)
    fast.save_pretrained(OUT)
    # The folder as a user has it: transformers reads it back by itself (AutoTokenizer).
    tok = AutoTokenizer.from_pretrained(OUT)
    if tok.chat_template != TEMPLATE.read_text():
        sys.exit("transformers did not read chat_template.jinja back as written")
    if (OUT / "chat_template.jinja").read_text() != TEMPLATE.read_text():
        sys.exit("save_pretrained changed the template's text")

    turns = []
    for messages, target in ((FIRST, TARGET_CALL), (SECOND, TARGET_ANSWER)):
        prompt = template_ids(tok, messages)
        if prompt != tok.encode(render(tok, messages), add_special_tokens=False):
            sys.exit("apply_chat_template's ids are not the encoding of its text")
        turns.append((messages, prompt, tok.encode(target, add_special_tokens=False)))

    model = train(tiny_qwen3(vocab, ids), [(prompt, target) for _, prompt, target in turns])
    model.generation_config = GenerationConfig(
        bos_token_id=ids["<|endoftext|>"],
        eos_token_id=[ids["<|im_end|>"], ids["<|endoftext|>"]],
        pad_token_id=ids["<|endoftext|>"],
        do_sample=True,
        temperature=0.6,
        top_p=0.95,
        top_k=20,
    )
    model.save_pretrained(OUT)

    # The reference: transformers loading the folder as any user would.
    model = Qwen3ForCausalLM.from_pretrained(OUT, dtype=torch.float32).eval()
    tok = AutoTokenizer.from_pretrained(OUT)
    reference = {
        "transformers_version": transformers.__version__,
        "tokenizers_version": tokenizers.__version__,
        "tools": TOOLS,
        "turns": [],
    }
    for (messages, _, target), name in zip(turns, ("tool call", "answer")):
        prompt = template_ids(tok, messages)
        with torch.no_grad():
            out = model.generate(torch.tensor([prompt]), do_sample=False, max_new_tokens=64)
        greedy = out[0, len(prompt) :].tolist()
        if greedy != target:
            sys.exit(f"{name}: transformers' greedy ids {greedy} are not the trained completion {target}")
        with torch.no_grad():
            logits = model(torch.tensor([prompt + greedy[:-1]])).logits[0, len(prompt) - 1 :]
        top2 = logits.topk(2).values
        margin = (top2[:, 0] - top2[:, 1]).min().item()
        print(f"{name}: {len(prompt)} prompt ids, {len(greedy)} greedy ids, smallest top-1 margin {margin:.2f}")
        reference["turns"].append(
            {
                "messages": messages,
                "text": render(tok, messages),
                "prompt_ids": prompt,
                "greedy_ids": greedy,
                "greedy_text": tok.decode(greedy, skip_special_tokens=False),
            }
        )
    (OUT / "reference.json").write_text(compact(reference) + "\n")
    total = sum(f.stat().st_size for f in OUT.iterdir())
    print(f"wrote {OUT.relative_to(ROOT)}: {sorted(os.listdir(OUT))}, {total} bytes, vocabulary {vocab}")


if __name__ == "__main__":
    sys.exit(main())
