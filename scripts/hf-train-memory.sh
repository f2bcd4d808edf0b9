#!/usr/bin/env bash
# Peak memory of `train rl --policy hf:` with LoRA on a random checkpoint at SmolLM2-135M's size
# (scripts/hf-train-memory-checkpoint.py; needs Python with torch and transformers to make it
# once). Writes docs/results/hf-train-memory.json: per step the process's peak resident set
# (`memory/peak_rss_mb`) and the rollout and update seconds. Run it with nothing else running.
#
#   PYTHON=/path/to/python scripts/hf-train-memory.sh [work folder] [output name]
#
# MICRO_BATCH_TOKENS (default 2048: both 700-token episodes of a step in one micro-batch; 1024: one
# each) sets the update's micro-batches; the output goes to docs/results/<output name>.json
# (default hf-train-memory).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
WORK=${1:-/tmp/agentrl-hf-train-memory}
NODE="$ROOT/node_modules/.bin/node"
mkdir -p "$WORK"
[ -f "$WORK/model/config.json" ] || "${PYTHON:-python3}" "$ROOT/scripts/hf-train-memory-checkpoint.py" "$WORK/model"
cat > "$WORK/rl.json" <<'JSON'
{ "name": "smol135", "steps": 2, "tasksPerStep": 1, "groupSize": 2, "dynamicSampling": false,
  "budgets": { "maxTurns": 2, "maxTokens": 32, "maxTurnTokens": 16 }, "families": ["lookup"],
  "rolloutBatch": 2, "microBatchTokens": MICRO, "checkpointEvery": 1, "evalEvery": 0,
  "lora": { "rank": 8, "alpha": 16, "targets": ["q_proj", "v_proj"] } }
JSON
sed -i "s/MICRO/${MICRO_BATCH_TOKENS:-2048}/" "$WORK/rl.json"
OUTPUT="$ROOT/docs/results/${2:-hf-train-memory}.json"
RUN="rl-$(date +%s)"
"$NODE" "$ROOT/bin/agentrl.js" train rl --policy "hf:$WORK/model" --config "$WORK/rl.json" \
  --runs "$WORK/runs" --run-id "$RUN"
"$NODE" "$ROOT/scripts/hf-train-memory-report.ts" "$WORK/runs/$RUN" "$WORK/rl.json" > "$OUTPUT"
cat "$OUTPUT"
