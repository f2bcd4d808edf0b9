#!/usr/bin/env bash
# Reproduces the shipped orchestrators and their report: the base (models/orchestrator-base, a
# 3-layer d=64 GPT pretrained on scripted orchestration episodes), GRPO on it on every axis
# (models/orchestrator-grpo) and on robustness alone (models/orchestrator-grpo-robustness), then the
# per-axis comparison with the single agent and the fixed strategies
# (runs/orchestra-report/orchestra.html and .json). Times measured on the 2-core machine shared with
# other jobs are in the model cards and the report (about 11 + 20 + 9 + 10 minutes).
set -euo pipefail
cd "$(dirname "$0")/.."
npx agentrl orchestra pretrain --config configs/orchestra/orchestrator-base.json --card-tasks 40
npx agentrl orchestra train --config configs/orchestra/grpo.json
npx agentrl orchestra train --config configs/orchestra/grpo-robustness.json
npx agentrl orchestra report --policy base=models/orchestrator-base,grpo=models/orchestrator-grpo,grpo-robustness=models/orchestrator-grpo-robustness --tasks 60 --out runs/orchestra-report
