"""verl's MultiTurnSFTDataset for agentrl's SFT parquet (`agentrl data export --format verl-parquet`).

Parquet cannot hold rows whose nested keys differ: pyarrow (and any writer) gives a struct column the
union of the keys it saw, so the `search` tool's parameters would gain calc's `expression: null`,
and a `search` call's arguments calc's. agentrl therefore writes each row's `tools` column and each
tool call's `function.arguments` as JSON text, exactly as they were, and this class decodes them
before verl tokenizes: the chat template gets `tools` as a list of OpenAI tool dicts (one schema per
tool, nothing merged) and `arguments` as objects (the Qwen2.5 template applies `tojson` to them; a
string would be encoded twice).

Use it with verl's SFT trainer (v0.7.x and >= 0.8):

    data.custom_cls.path=/abs/path/agentrl_sft_dataset.py data.custom_cls.name=AgentrlMultiTurnSFTDataset

Standard library only besides verl itself. `decode_tools` and `decode_messages` are plain functions
(agentrl's tests run them with python3 on rows read back from the parquet).
"""

import json


def decode_tools(tools):
    """The tools column's value as a list of tool dicts (JSON text decoded; None stays None)."""
    if isinstance(tools, (bytes, bytearray)):
        tools = tools.decode("utf-8")
    if isinstance(tools, str):
        tools = json.loads(tools)
    if tools is not None and not isinstance(tools, list):
        raise ValueError(f"agentrl sft dataset: tools must be a JSON list, got {type(tools).__name__}")
    return tools


def decode_messages(messages):
    """Messages with every tool call's `function.arguments` decoded from JSON text to an object."""
    if hasattr(messages, "tolist"):  # numpy arrays from pandas
        messages = messages.tolist()
    out = []
    for message in messages:
        message = dict(message)
        calls = message.get("tool_calls")
        if calls is not None:
            if hasattr(calls, "tolist"):
                calls = calls.tolist()
            decoded = []
            for call in calls:
                call = dict(call)
                function = dict(call.get("function") or {})
                arguments = function.get("arguments")
                if isinstance(arguments, str):
                    function["arguments"] = json.loads(arguments)
                call["function"] = function
                decoded.append(call)
            message["tool_calls"] = decoded
        # A struct column reads back absent keys as None; drop them so templates see what was written.
        out.append({key: value for key, value in message.items() if value is not None})
    return out


try:  # verl is only needed inside the trainer; the functions above stand alone.
    from verl.utils.dataset.multiturn_sft_dataset import MultiTurnSFTDataset
except ImportError:  # pragma: no cover
    MultiTurnSFTDataset = None


if MultiTurnSFTDataset is not None:

    class AgentrlMultiTurnSFTDataset(MultiTurnSFTDataset):
        """MultiTurnSFTDataset with agentrl's JSON `tools` and tool-call `arguments` decoded."""

        def _read_files_and_process(self):
            super()._read_files_and_process()
            if self.tools is not None:
                self.tools = [decode_tools(tools) for tools in self.tools]

        def _build_messages(self, example):
            return decode_messages(super()._build_messages(example))
