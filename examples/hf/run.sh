#!/usr/bin/env bash
# A Hugging Face checkpoint folder, end to end: doctor, eval, RL with LoRA on a task file, eval of
# the result. See README.md.
#
#   examples/hf/run.sh <checkpoint folder> [task file] [runs dir]
#
# AGENTRL overrides the command (default: this repository's bin/agentrl.js on its own Node 24, else
# `npx agentrl`).
set -euo pipefail

CHECKPOINT=${1:?usage: examples/hf/run.sh <checkpoint folder> [task file] [runs dir]}
HERE=$(cd "$(dirname "$0")" && pwd)
TASKS=${2:-$HERE/tasks.txt}
RUNS=${3:-runs/hf-example-$(date +%s)}
FAMILY=${FAMILY:-lookup}
EVAL_TASKS=${EVAL_TASKS:-8}
EVAL_N=${EVAL_N:-4}
if [ -z "${AGENTRL:-}" ]; then
  ROOT=$(cd "$HERE/../.." && pwd)
  if [ -x "$ROOT/node_modules/.bin/node" ] && [ -f "$ROOT/bin/agentrl.js" ]; then
    AGENTRL="$ROOT/node_modules/.bin/node $ROOT/bin/agentrl.js"
  else
    AGENTRL="npx agentrl"
  fi
fi
# Episodes as short as the RL config's, so the evaluations measure what RL trains.
BUDGETS=(--max-turns 4 --max-turn-tokens 64 --max-tokens 256)

echo "== 1. doctor: is hf:$CHECKPOINT ready for RL on $FAMILY tasks?"
# Exit status 1 means "not ready" (e.g. too few groups with signal); the example goes on regardless.
$AGENTRL doctor --policy "hf:$CHECKPOINT" --family "$FAMILY" --tasks 8 --group-size 4 "${BUDGETS[@]}" \
  --runs "$RUNS" || echo "(doctor: not ready, see above; going on)"

echo "== 2. eval before training (held-out test worlds)"
$AGENTRL eval --policy "hf:$CHECKPOINT" --family "$FAMILY" --tasks "$EVAL_TASKS" --n "$EVAL_N" \
  --temperature 1 --top-p 1 "${BUDGETS[@]}" --runs "$RUNS" --run-id eval-before

echo "== 3. train rl with LoRA on $TASKS"
$AGENTRL train rl --policy "hf:$CHECKPOINT" --config "$HERE/rl.json" --task-file "$TASKS" \
  --runs "$RUNS" --run-id rl

echo "== 4. eval of the result (the merged folder; hf:$RUNS/rl/adapter loads the same model unmerged)"
$AGENTRL eval --policy "hf:$RUNS/rl/model" --family "$FAMILY" --tasks "$EVAL_TASKS" --n "$EVAL_N" \
  --temperature 1 --top-p 1 "${BUDGETS[@]}" --runs "$RUNS" --run-id eval-after

echo "done: $RUNS (agentrl ui --runs $RUNS shows the runs)"
