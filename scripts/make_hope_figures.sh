#!/usr/bin/env bash
# Chen et al. 2024 (HoPE) Figs. 1 and 2a–c, in kind, on language models PosLens trains here: four models
# identical but for the position encoding (learned absolute, RoPE, KERPLE, HoPE) on ~16 MB of
# English text from Debian packages with a byte-level BPE tokenizer trained on it.
# docs/experiments.md ("HoPE on English text") has the figures, the numbers and what they show.
#
#   scripts/make_hope_figures.sh [OUT_DIR]        default /var/tmp/poslens-hope
#
# Environment (defaults): HOPE_STEPS (1500), HOPE_LENGTH (256, the training length L),
# HOPE_SEEDS (0), HOPE_ENCODINGS ("rope hope absolute kerple"), HOPE_BATCH (16), HOPE_LR (1e-3),
# HOPE_VOCAB (4096), POSLENS_CLI (build/app/cli/poslens-cli), POSLENS_VENV (the Python venv of
# scripts/setup.sh with HF tokenizers, ~/.local/share/poslens/venv). The second RoPE seed of
# docs/experiments.md: HOPE_SEEDS=1 HOPE_ENCODINGS=rope. One model is ~15 min on 2 cores.
#
# Each step is kept and skipped when done, so the script can be stopped and run again: the
# corpus and tokenizer are made once, a run folder with its last checkpoint is finished, one
# without is resumed (bit for bit, docs/training.md). Figures go to OUT_DIR/figures.
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-/var/tmp/poslens-hope}
cli=${POSLENS_CLI:-build/app/cli/poslens-cli}
steps=${HOPE_STEPS:-1500}
L=${HOPE_LENGTH:-256}
seeds=${HOPE_SEEDS:-0}
encodings=${HOPE_ENCODINGS:-"rope hope absolute kerple"}
batch=${HOPE_BATCH:-16}
lr=${HOPE_LR:-1e-3}
vocab=${HOPE_VOCAB:-4096}
configs=resources/experiments/hope-lm
figures=$out/figures
mkdir -p "$out/runs" "$figures"

# 1. The corpus (Debian packages, made once) and its held-out blocks as one text file, for the
#    per-position loss: every 10th block, as the text task holds them out.
[ -f "$out/corpus/SOURCES.txt" ] || bash scripts/make_english_corpus.sh "$out/corpus"
if [ ! -f "$out/held-out.txt" ]; then
  /usr/bin/python3 - "$out/corpus" "$out/held-out.txt" <<'EOF'
import os, sys
corpus, target = sys.argv[1], sys.argv[2]
text = ""
for name in sorted(os.listdir(corpus)):  # the text task's reading (core/train/text_corpus.cpp)
    path = os.path.join(corpus, name)
    if os.path.splitext(name)[1] or not os.path.isfile(path):
        continue
    text += open(path, encoding="utf-8").read()
    text += ("" if text.endswith("\n") else "\n") + "%\n"
blocks = text.split("\n%\n")
open(target, "w", encoding="utf-8").write("\n".join(b for i, b in enumerate(blocks) if i % 10 == 9))
EOF
fi

# 2. The byte-level BPE tokenizer, trained by HF's tokenizers (PyPI, the venv of
#    scripts/setup.sh) on the training blocks.
tokenizer=$out/bpe-$vocab.json
if [ ! -f "$tokenizer" ]; then
  "${POSLENS_VENV:-$HOME/.local/share/poslens/venv}/bin/python" tools/train_bpe_tokenizer.py \
    "$out/corpus" "$vocab" "$tokenizer"
fi

# 3. Training: GPT-2's initialisation (N(0, 0.02²): the tied embedding and output layer stay
#    small; torch.nn's N(0, 1) embedding starts the loss at ~120 nats), cosine schedule,
#    checkpoints denser early (Fig. 2a's x axis): 12 for 1500 steps.
at=""
for s in 25 50 100 150 200 300 400 600 800 1000 1500 2000 2500; do
  [ "$s" -lt "$steps" ] && at+="${at:+,}$s"
done
last=step-$(printf %06d "$steps")
for enc in $encodings; do
  for seed in $seeds; do
    run=$out/runs/$enc-seed$seed
    if [ -f "$run/$last/model.safetensors" ]; then
      continue
    elif [ -f "$run/train.json" ]; then
      "$cli" train --resume "$run"
    else
      "$cli" train --task text --length "$L" --task-option corpus="$out/corpus" \
        --task-option tokenizer="$tokenizer" --model "$configs/$enc.json" --out "$run" \
        --steps "$steps" --batch-size "$batch" --lr "$lr" --warmup 100 --schedule cosine --init gpt2 \
        --seed "$seed" --checkpoint-at "$at" --eval-sequences 200 --log-every 50
    fi
  done
done
final() { echo "$out/runs/$1-seed$2/$last"; }
has() { [[ " $encodings " == *" $1 "* ]]; }

# 4. Figures and numbers. The probes average 1024 random tokens (seed 0; the paper 5000): a
#    probe of every token costs ~50 s per checkpoint here, 1024 a quarter of that.
samples=${HOPE_PROBE_SAMPLES:-1024}
# The layer Fig. 2a–b draw (the files hold every layer): layer 0 of these models is noisy, in
# layers 1–3 the activated component leads (docs/experiments.md).
figure_layer=${HOPE_FIGURE_LAYER:-2}
for seed in $seeds; do
  # Fig. 1: the probe of the three baselines at T = L, overlaid (curves standardised per curve).
  if has absolute && has rope && has kerple; then
    "$cli" u-shape "$(final absolute "$seed")" "$(final rope "$seed")" "$(final kerple "$seed")" \
      --length "$L" --samples "$samples" --out "$figures/fig1-u-shape-seed$seed.h5" --figure "$figures/fig1-u-shape-seed$seed.png"
  fi
  for enc in rope hope; do
    has "$enc" || continue
    # Fig. 2a: VAF per rotary component against training step, the activated band marked.
    "$cli" compare --series "$out/runs/$enc-seed$seed" --length "$L" --samples "$samples" \
      --figure-layer "$figure_layer" --out "$figures/fig2a-vaf-$enc-seed$seed.h5" \
      --figure "$figures/fig2a-vaf-$enc-seed$seed.png"
    # Fig. 2b–c (upper): the final model's components, the activated components' sum against the
    # overall curve, and the same probe at 2L drawn over it.
    "$cli" probe "$(final "$enc" "$seed")" --length "$L" --samples "$samples" --extrapolate $((2 * L)) \
      --figure-layer "$figure_layer" --out "$figures/fig2b-probe-$enc-seed$seed.h5" \
      --figure "$figures/fig2b-probe-$enc-seed$seed.png"
  done
  # Fig. 2c: loss at each position of held-out text up to 4L, RoPE against HoPE (and the rest).
  models=()
  for enc in rope hope kerple; do has "$enc" && models+=("$(final "$enc" "$seed")"); done
  "$cli" length-loss "${models[@]}" --text-file "$out/held-out.txt" --length $((4 * L)) --windows 32 \
    --out "$figures/fig2c-length-loss-seed$seed.h5" --figure "$figures/fig2c-length-loss-seed$seed.png"
done

# Test error and loss of every final model, in- (L) and out-of-distribution (2L).
for enc in $encodings; do
  for seed in $seeds; do
    echo "== $enc seed $seed"
    "$cli" eval "$(final "$enc" "$seed")" --n 200
  done
done | tee "$figures/eval.txt"
echo "figures and numbers in $figures"
