"""A fake vLLM OpenAI server for tests (standard library; loopback only), started the way verl starts
vLLM for its rollout replicas: with the `vllm serve` flags verl builds from
`actor_rollout_ref.rollout.engine_kwargs.vllm` (verl/workers/rollout/vllm_rollout/vllm_async_server.py
v0.7.1:215-216, 302-327; every key becomes `--key-with-dashes`).

What it reproduces of vLLM:
- `tools` in a request without `--enable-auto-tool-choice` and `--tool-call-parser`: HTTP 400 with
  vLLM's message (vllm/entrypoints/openai/serving_chat.py: '"auto" tool choice requires
  --enable-auto-tool-choice and --tool-call-parser to be set').
- a `model` it does not serve: HTTP 404 "The model `x` does not exist." (NotFoundError).
- `return_token_ids: true` (vLLM >= 0.10.2, vllm PR #22587): top-level `prompt_token_ids` and
  `choices[0].token_ids`; older versions ignore the field. `logprobs: true`: one
  `logprobs.content[]` entry per sampled token.
- the prompt rendered with a hermes-like chat template one id per character (code point), the
  tools' JSON in the system turn, the sampled ids the assistant turn exactly as the next request
  renders it back (so each call's prompt extends the last call's prompt and sampled ids).

The "model": its first turn calls the first tool with every required string parameter set to the
user question (or answers directly when there are no tools); after a tool result it answers: the
task's answer on every other final answer to the same question (the 1st, 3rd, ...), "I do not
know" otherwise, so a group's rewards are mixed whatever order its episodes run in. A question listed
under "fail" in the spec answers 503 (an overloaded replica).

Usage: fake_vllm.py SPEC.json [vllm serve flags...]; SPEC = {"model", "version", "answers":
{question: answer}, "fail": [question], "host"}. Prints "port N" once listening on "host" (default
127.0.0.1; a loopback alias such as 127.0.0.2 stands for Ray's node IP in tests).
"""

import json
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

END = "<|im_end|>"


def version_tuple(text: str) -> tuple:
    return tuple(int(part) for part in text.split(".")[:3])


def render(messages: list, tools: list) -> str:
    text = ""
    for index, message in enumerate(messages):
        content = message.get("content") or ""
        if index == 0 and message["role"] == "system" and tools:
            content += "\n<tools>\n" + "\n".join(json.dumps(tool, sort_keys=True) for tool in tools) + "\n</tools>"
        if message["role"] == "assistant":
            text += "<|im_start|>assistant\n" + assistant_text(message) + END + "\n"
        elif message["role"] == "tool":
            text += "<|im_start|>user\n<tool_response>\n" + content + "\n</tool_response>" + END + "\n"
        else:
            text += f"<|im_start|>{message['role']}\n{content}{END}\n"
    return text + "<|im_start|>assistant\n"


def assistant_text(message: dict) -> str:
    text = message.get("content") or ""
    for call in message.get("tool_calls") or []:
        function = call["function"]
        arguments = json.loads(function["arguments"]) if function.get("arguments") else {}
        text += "<tool_call>\n" + json.dumps({"name": function["name"], "arguments": arguments}, sort_keys=True) + "\n</tool_call>"
    return text


def main():
    spec = json.load(open(sys.argv[1]))
    flags = sys.argv[2:]
    # vLLM's parser takes `--enable_auto_tool_choice` as well (verl writes the config key as is).
    flags = [flag.replace("_", "-") if flag.startswith("--") else flag for flag in flags]
    tool_choice = "--enable-auto-tool-choice" in flags and "--tool-call-parser" in flags
    token_ids = version_tuple(spec.get("version", "0.11.0")) >= (0, 10, 2)
    model = spec.get("model", "fake-model")
    counter = {"calls": 0}
    finals: dict = {}
    lock = threading.Lock()

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args):
            pass

        def answer(self, status: int, body: dict):
            data = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def error(self, status: int, kind: str, message: str):
            self.answer(status, {"object": "error", "message": message, "type": kind, "code": status,
                                 "error": {"message": message, "type": kind, "code": status}})

        def do_GET(self):
            if self.path.rstrip("/") == "/v1/models":
                return self.answer(200, {"object": "list", "data": [{"id": model, "object": "model"}]})
            self.error(404, "NotFoundError", f"no route {self.path}")

        def do_POST(self):
            body = json.loads(self.rfile.read(int(self.headers.get("content-length", "0"))))
            if self.path.rstrip("/") != "/v1/chat/completions":
                return self.error(404, "NotFoundError", f"no route {self.path}")
            if body.get("model") != model:
                return self.error(404, "NotFoundError", f"The model `{body.get('model')}` does not exist.")
            tools = body.get("tools") or []
            if tools and body.get("tool_choice", "auto") == "auto" and not tool_choice:
                return self.error(400, "BadRequestError",
                                  '"auto" tool choice requires --enable-auto-tool-choice and --tool-call-parser to be set')
            messages = body["messages"]
            question = next((m.get("content") or "" for m in messages if m["role"] == "user"), "")
            if question in spec.get("fail", []):
                return self.error(503, "ServiceUnavailableError", "the replica is overloaded")
            with lock:
                counter["calls"] += 1
            message = {"role": "assistant", "content": None}
            if tools and not any(m["role"] == "tool" for m in messages):
                function = tools[0]["function"]
                parameters = function.get("parameters") or {}
                arguments = {name: question for name in parameters.get("required", [])
                             if (parameters.get("properties", {}).get(name) or {}).get("type") == "string"}
                message["tool_calls"] = [{"id": f"call_{counter['calls']}", "type": "function",
                                          "function": {"name": function["name"], "arguments": json.dumps(arguments)}}]
                finish = "tool_calls"
            else:
                with lock:
                    finals[question] = finals.get(question, 0) + 1
                    right = finals[question] % 2 == 1
                message["content"] = spec.get("answers", {}).get(question, "?") if right else "I do not know"
                finish = "stop"
            prompt_ids = [ord(c) for c in render(messages, tools)]
            sampled = [ord(c) for c in assistant_text(message) + END]
            choice = {"index": 0, "message": message, "finish_reason": finish}
            if body.get("logprobs"):
                choice["logprobs"] = {"content": [{"token": chr(t), "logprob": -0.01 * (1 + t % 7)} for t in sampled]}
            answer = {"id": f"chatcmpl-{counter['calls']}", "object": "chat.completion", "model": model,
                      "choices": [choice],
                      "usage": {"prompt_tokens": len(prompt_ids), "completion_tokens": len(sampled),
                                "total_tokens": len(prompt_ids) + len(sampled)}}
            if token_ids and body.get("return_token_ids"):
                answer["prompt_token_ids"] = prompt_ids
                choice["token_ids"] = sampled
            self.answer(200, answer)

    server = ThreadingHTTPServer((spec.get("host", "127.0.0.1"), 0), Handler)
    print(f"port {server.server_address[1]}", flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
