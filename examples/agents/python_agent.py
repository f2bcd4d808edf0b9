#!/usr/bin/env python3
"""A Python agent with only the standard library, run with `--agent-cmd`.

  npx agentrl eval --agent-cmd "python3 examples/agents/python_agent.py" --policy models/base-strong --tasks 20 --n 4

agentrl runs it once per episode: the task arrives as one JSON object on stdin ({id, question,
metadata}); OPENAI_BASE_URL and OPENAI_API_KEY point at the episode's gateway URL, AGENTRL_MODEL
names the model, and AGENTRL_TOOLS_URL serves the embedded world's tools (search, calc) for world
tasks. A Chat Completions loop with those tools, up to 8 steps; the answer goes on the last line
of stdout as {"answer": ...}. Anything on stderr is kept with the episode.
"""
import json
import os
import sys
import urllib.request


def post(url, body, key):
    request = urllib.request.Request(
        url,
        data=json.dumps(body).encode(),
        headers={"content-type": "application/json", "authorization": f"Bearer {key}"},
    )
    with urllib.request.urlopen(request, timeout=300) as response:
        return json.load(response)


def get(url, key):
    request = urllib.request.Request(url, headers={"authorization": f"Bearer {key}"})
    with urllib.request.urlopen(request, timeout=60) as response:
        return json.load(response)


def main():
    task = json.load(sys.stdin)
    base_url = os.environ["OPENAI_BASE_URL"].rstrip("/")
    key = os.environ.get("OPENAI_API_KEY", "none")
    model = os.environ.get("AGENTRL_MODEL", "gpt-4.1-mini")
    tools_url = os.environ.get("AGENTRL_TOOLS_URL")
    tools = get(f"{tools_url}/tools", key)["tools"] if tools_url else []
    messages = [{"role": "user", "content": task["question"]}]
    for _ in range(8):
        body = {"model": model, "messages": messages}
        if tools:
            body["tools"] = tools
        message = post(f"{base_url}/chat/completions", body, key)["choices"][0]["message"]
        calls = message.get("tool_calls") or []
        if not calls:
            return message.get("content")
        messages.append({"role": "assistant", "content": message.get("content"), "tool_calls": calls})
        for call in calls:
            try:
                args = json.loads(call["function"]["arguments"])
            except json.JSONDecodeError:
                args = {}
            name = call["function"]["name"]
            print(f"tool {name} {json.dumps(args)}", file=sys.stderr)
            result = post(f"{tools_url}/tools/{name}", args, key)["content"] if tools_url else "error : no tools"
            messages.append({"role": "tool", "tool_call_id": call["id"], "content": result})
    return None


if __name__ == "__main__":
    print(json.dumps({"answer": main()}))
