"""transformers' own logits for a lab base exported by `agentrl export hf`.

    node bin/agentrl.js export hf models/base-strong --out /tmp/base-strong-hf
    /path/to/venv/bin/python scripts/hf-export-reference.py /tmp/base-strong-hf

Loads the folder with AutoModelForCausalLM / AutoTokenizer (float32, eager CPU), tokenizes a few
protocol texts with the exported tokenizer.json and writes, to
src/policy/hf/testdata/export-base-strong.json: the sha256 of every exported file (the test
checks the CLI still writes exactly these bytes), the texts, transformers' ids, and the logits
of every position as little-endian float32 in base64; and transformers' apply_chat_template of a
conversation (`chat`: messages with tool calls and results, the rendered text, its ids), which
the exported chat_template.jinja must render as the lab's protocol text.
"""

import base64
import hashlib
import json
import sys
from pathlib import Path

import numpy as np
import torch
import transformers
from transformers import AutoModelForCausalLM, AutoTokenizer

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "src/policy/hf/testdata/export-base-strong.json"
TEXTS = [
    "<q> what is the capital of vushiland ? </q> <search> capital vushiland </search>",
    "<obs> notinia : founded 1850 , population 23456 . </obs> <calc> 2024 - 1850 </calc> <answer> 174 </answer>",
    "<bos> how many people live in zedestan ? gibberishword 7x9 <eos>",
]
FILES = [
    "config.json",
    "generation_config.json",
    "model.safetensors",
    "tokenizer.json",
    "tokenizer_config.json",
    "chat_template.jinja",
]
CHAT = [
    {"role": "system", "content": "answer the question ."},
    {"role": "user", "content": "what is the population of notinia ?"},
    {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {"id": "call_0", "type": "function", "function": {"name": "search", "arguments": {"query": "notinia"}}}
        ],
    },
    {"role": "tool", "tool_call_id": "call_0", "content": "notinia : founded 1850 , population 23456 ."},
    {"role": "assistant", "content": "zzz"},
    {"role": "user", "content": "error : no action tag"},
    {
        "role": "assistant",
        "content": "population",
        "tool_calls": [
            {"id": "call_2", "type": "function", "function": {"name": "calc", "arguments": {"expression": "2024 - 1850"}}}
        ],
    },
    {"role": "tool", "tool_call_id": "call_2", "content": "174"},
    {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {
                "id": "call_3",
                "type": "function",
                "function": {
                    "name": "malformed_tool_call",
                    "arguments": {"text": "<search> notinia </calc>", "error": "mismatched tag"},
                },
            }
        ],
    },
    {"role": "tool", "tool_call_id": "call_3", "content": "error : unknown tool"},
]


def main(folder):
    folder = Path(folder)
    model = AutoModelForCausalLM.from_pretrained(folder, dtype=torch.float32, attn_implementation="eager")
    model.eval()
    tokenizer = AutoTokenizer.from_pretrained(folder)
    cases = []
    for text in TEXTS:
        ids = tokenizer(text, add_special_tokens=False)["input_ids"]
        with torch.no_grad():
            logits = model(torch.tensor([ids])).logits[0].numpy().astype("<f4")
        cases.append(
            {
                "text": text,
                "ids": ids,
                "logits_f32_base64": base64.b64encode(logits.tobytes()).decode(),
                "shape": list(logits.shape),
            }
        )
    chat_text = tokenizer.apply_chat_template(CHAT, tokenize=False, add_generation_prompt=True)
    chat = {"messages": CHAT, "text": chat_text, "ids": tokenizer(chat_text, add_special_tokens=False)["input_ids"]}
    result = {
        "transformers_version": transformers.__version__,
        "torch_version": torch.__version__,
        "architecture": type(model).__name__,
        "files_sha256": {name: hashlib.sha256((folder / name).read_bytes()).hexdigest() for name in FILES},
        "cases": cases,
        "chat": chat,
    }
    OUT.write_text(json.dumps(result, indent=1) + "\n")
    print(f"wrote {OUT.relative_to(ROOT)} ({OUT.stat().st_size} bytes), {type(model).__name__}")


if __name__ == "__main__":
    main(sys.argv[1])
