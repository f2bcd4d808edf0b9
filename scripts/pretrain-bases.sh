#!/usr/bin/env bash
# Reproduces the shipped bases (models/base-strong, models/base-weak) from scratch on a CPU.
# Each stage is a warm-up + cosine schedule; later stages start from the previous stage's weights.
# The strong base: stage 1 from a random init (700 steps), stage 2 (400 steps), then 500 steps
# into models/base-strong. The weak base: the strong base's stage 2 (a model that has not yet
# learned to use the tools) continued 250 steps on the weak corpus mix. Measured on a 2-core machine:
# about 18 + 10 + 14 minutes for the strong base, 1.0 min for the weak one (4.4
# min beside other jobs).
set -euo pipefail
cd "$(dirname "$0")/.."
npx agentrl pretrain --config configs/pretrain/base-strong-stage1.json
npx agentrl pretrain --config configs/pretrain/base-strong-stage2.json
npx agentrl pretrain --config configs/pretrain/base-strong.json
npx agentrl pretrain --config configs/pretrain/base-weak.json
