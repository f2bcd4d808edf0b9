#!/usr/bin/env bash
# Reproduces the shipped bases (models/base-strong, models/base-weak) from scratch on a CPU.
# Each base is trained in two stages: stage 1 from a random init (700 / 300 steps, warm-up +
# cosine), stage 2 continued from stage 1 with a fresh schedule (400 / 150 steps). Measured on a
# 2-core machine: about 20 + 15 minutes for the strong base, 11 + 6 for the weak one.
set -euo pipefail
cd "$(dirname "$0")/.."
for base in strong weak; do
  npx agentrl pretrain --config "configs/pretrain/base-$base-stage1.json"
  npx agentrl pretrain --config "configs/pretrain/base-$base.json"
done
