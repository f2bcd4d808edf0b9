"""verl reward function that scores with agentrl's verifiers through `agentrl verify serve`.

Written by `agentrl verl init --mode tool`. verl calls it by keyword (v0.7.x:
`custom_reward_function.path/name`; >= 0.8: `reward.custom_reward_function.path/name`):

    compute_score(data_source, solution_str, ground_truth, extra_info=None, **kwargs) -> dict

`solution_str` is verl's decoded response, tool observations included (verl decodes the whole
response; chat markers are gone with skip_special_tokens), so the answer is the text after the last
`</tool_response>`, without a leading `<think>` block. The task (extra_info.agentrl.task, JSON text
written by `agentrl verl init`) and the ground truth go to the service, which answers
{correct, score}. The returned dict has `score` (what verl trains on), `acc` (validation metrics)
and `agentrl_task_id` (a string, so verl's metric code skips it and its dumps carry it: `agentrl verl
import` groups samples by it).

Environment: AGENTRL_VERIFY_SERVER (default http://127.0.0.1:8301), AGENTRL_VERIFY_TOKEN.
Standard library only. A service that cannot be reached raises after a few tries: that is an
infrastructure failure, not a wrong answer.
"""

import asyncio
import json
import os
import re
import time
import urllib.error
import urllib.request

VERIFY_URL = os.environ.get("AGENTRL_VERIFY_SERVER", "http://127.0.0.1:8301").rstrip("/")
TOKEN = os.environ.get("AGENTRL_VERIFY_TOKEN")
RETRIES = 4

_THINK = re.compile(r"^\s*<think>.*?</think>", re.S)


def final_answer(solution_str):
    """The model's last message in a decoded multi-turn response."""
    text = solution_str or ""
    cut = text.rfind("</tool_response>")
    if cut >= 0:
        text = text[cut + len("</tool_response>") :]
        # skip_special_tokens leaves the role names of the chat markers on their own lines.
        text = re.sub(r"^\s*(assistant|user)\s*\n", "", text)
    text = _THINK.sub("", text)
    return text.strip()


def _post(body):
    headers = {"content-type": "application/json"}
    if TOKEN:
        headers["authorization"] = f"Bearer {TOKEN}"
    data = json.dumps(body).encode("utf-8")
    last = None
    for attempt in range(RETRIES):
        request = urllib.request.Request(f"{VERIFY_URL}/verify", data=data, headers=headers, method="POST")
        try:
            with urllib.request.urlopen(request, timeout=120) as response:
                return json.loads(response.read().decode("utf-8"))
        except urllib.error.HTTPError as error:
            detail = error.read().decode("utf-8", "replace")
            if error.code < 500:
                raise RuntimeError(f"agentrl verify serve refused the request ({error.code}): {detail}") from None
            last = f"{error.code}: {detail}"
        except (urllib.error.URLError, OSError) as error:
            last = str(error)
        time.sleep(0.5 * 2**attempt)
    raise RuntimeError(f"agentrl verify serve at {VERIFY_URL} cannot be reached: {last}")


def score_sync(solution_str, ground_truth, extra_info=None):
    agentrl = (extra_info or {}).get("agentrl") or {}
    body = {"answer": final_answer(solution_str), "ground_truth": str(ground_truth)}
    if agentrl.get("task"):
        body["task"] = agentrl["task"]
    if agentrl.get("verifier"):
        body["verifier"] = agentrl["verifier"]
    verdict = _post(body)
    return {
        "score": float(verdict["score"]),
        "acc": 1.0 if verdict["correct"] else 0.0,
        "agentrl_task_id": str(agentrl.get("task_id") or verdict.get("task_id") or ""),
    }


async def compute_score(data_source, solution_str, ground_truth, extra_info=None, **kwargs):
    return await asyncio.to_thread(score_sync, solution_str, ground_truth, extra_info)
