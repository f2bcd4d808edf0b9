"""Checks the installed verl, vLLM and transformers against what the job was written for, before
verl starts (run_grpo.sh runs it; AGENTRL_SKIP_PREFLIGHT=1 skips it).

Why: verl 0.7.x and 0.8.x accept vLLM 0.8.5-0.12.0, but the agent mode needs vLLM's token ids
(`return_token_ids`, vLLM >= 0.10.2); without them every response would be empty. A mismatch is
cheaper to see here than after the cluster has loaded the model.

Usage: agentrl_preflight.py --verl SPEC --vllm SPEC --transformers-major N
SPEC: comma-separated `>=`, `>`, `<=`, `<`, `==`, `!=` clauses on release numbers. Standard library only.
"""

import argparse
import re
import sys
from importlib.metadata import PackageNotFoundError, version


def release(text: str) -> tuple:
    match = re.match(r"\d+(?:\.\d+)*", text.strip())
    if not match:
        raise ValueError(f"not a version: {text!r}")
    parts = [int(p) for p in match.group(0).split(".")]
    return tuple(parts + [0] * (3 - len(parts)))


def satisfies(installed: str, spec: str) -> bool:
    have = release(installed)
    for clause in filter(None, (c.strip() for c in spec.split(","))):
        operator = re.match(r"(>=|<=|==|!=|>|<)", clause).group(1)
        want = release(clause[len(operator):])
        ok = {
            ">=": have >= want, "<=": have <= want, ">": have > want,
            "<": have < want, "==": have == want, "!=": have != want,
        }[operator]
        if not ok:
            return False
    return True


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--verl", required=True)
    parser.add_argument("--vllm", required=True)
    parser.add_argument("--transformers-major", type=int, required=True)
    args = parser.parse_args()
    problems = []
    for package, spec in (("verl", args.verl), ("vllm", args.vllm)):
        try:
            installed = version(package)
        except PackageNotFoundError:
            problems.append(f"{package} is not installed (the job needs {package}{spec})")
            continue
        if not satisfies(installed, spec):
            problems.append(f"{package} {installed} is installed; the job needs {package}{spec}")
    try:
        major = release(version("transformers"))[0]
        if major != args.transformers_major:
            problems.append(
                f"transformers {version('transformers')} is installed; this verl/vLLM pair runs on transformers "
                f"{args.transformers_major}.x"
            )
    except PackageNotFoundError:
        problems.append("transformers is not installed")
    for problem in problems:
        print(f"agentrl preflight: {problem}", file=sys.stderr)
    if problems:
        print("agentrl preflight: see docs/verl-versions.md in agentrl, or write the job for the installed verl "
              "(`agentrl verl init --verl-version ...`); AGENTRL_SKIP_PREFLIGHT=1 skips this check", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
