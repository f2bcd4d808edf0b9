"""agentrl's tools as verl function tools (verl >= 0.8: `multi_turn.function_tool_path`).

Written by `agentrl verl init --mode tool --verl-version 0.8` (or 0.9, main). Each tool forwards the model's
arguments to `agentrl mcp serve --transport http` (a stateless Streamable HTTP MCP server answering
JSON) with one `tools/call` request, and returns the text parts of the result. The schemas are the
ones agentrl serves, given explicitly (`schema=`), so nothing is inferred from docstrings.

Function tools are stateless and ignore `tools_kwargs`: the server's world is fixed by
`agentrl mcp serve --seed` (the seed the tasks were drawn from; see README.md).

Environment: AGENTRL_MCP_URL (default http://127.0.0.1:8765/mcp), AGENTRL_MCP_TOKEN.
Standard library only besides verl itself.
"""

import itertools
import json
import os
import urllib.error
import urllib.request

MCP_URL = os.environ.get("AGENTRL_MCP_URL", "http://127.0.0.1:8765/mcp")
TOKEN = os.environ.get("AGENTRL_MCP_TOKEN")
TIMEOUT_S = float(os.environ.get("AGENTRL_MCP_TIMEOUT_S", "60"))

# The OpenAI function schemas of the served tools (filled in by `agentrl verl init`).
TOOL_SCHEMAS = json.loads(r"""__TOOL_SCHEMAS__""")

_ids = itertools.count(1)


def call_mcp_tool(name, arguments):
    """One MCP tools/call; the result's text parts joined, or the error as text (as verl's MCP tool does)."""
    body = {"jsonrpc": "2.0", "id": next(_ids), "method": "tools/call", "params": {"name": name, "arguments": arguments}}
    headers = {"content-type": "application/json", "accept": "application/json, text/event-stream"}
    if TOKEN:
        headers["authorization"] = f"Bearer {TOKEN}"
    request = urllib.request.Request(MCP_URL, data=json.dumps(body).encode("utf-8"), headers=headers, method="POST")
    try:
        with urllib.request.urlopen(request, timeout=TIMEOUT_S) as response:
            reply = json.loads(response.read().decode("utf-8"))
    except urllib.error.HTTPError as error:
        return f"Tool call failed: HTTP {error.code}: {error.read().decode('utf-8', 'replace')[:500]}"
    except (urllib.error.URLError, OSError, ValueError) as error:
        return f"Tool call failed: {error}"
    if "error" in reply:
        return f"Tool call failed: {reply['error'].get('message', reply['error'])}"
    result = reply.get("result") or {}
    return " ".join(part.get("text", "") for part in result.get("content", []) if part.get("type") == "text")


def _make(name):
    def tool(**arguments):
        return call_mcp_tool(name, arguments)

    tool.__name__ = name
    return tool


try:
    from verl.tools.function_tool import function_tool
except ImportError:  # outside verl (agentrl's tests call call_mcp_tool directly)
    function_tool = None

if function_tool is not None:
    for _schema in TOOL_SCHEMAS:
        _name = _schema["function"]["name"]
        globals()[_name] = function_tool(_name, schema=_schema)(_make(_name))
