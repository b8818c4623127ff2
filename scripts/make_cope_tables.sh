#!/usr/bin/env bash
# Golovneva et al. 2024 (CoPE) §5.1–5.3, in direction, on models PosLens trains here: Flip-Flop (Table 2,
# left), selective copy (Table 2, right) and counting (Tables 3 and 4), CoPE against RoPE and
# learned absolute positions, every model identical but for its position encoding
# (resources/demos/configs/flipflop-*.json: 2 layers, 4 heads, d_model 64), two seeds each.
# docs/experiments.md ("Flip-Flop" and "CoPE: selective copy and counting") has the tables and
# what they show.
#
#   scripts/make_cope_tables.sh [OUT_DIR]        default /var/tmp/poslens-cope
#
# Environment (defaults): COPE_SEEDS ("0 1"), COPE_ENCODINGS ("cope rope absolute"),
# COPE_TASKS ("flipflop selective_copy counting"), FLIPFLOP_STEPS (3000), COPY_STEPS (3000),
# COUNT_STEPS (2000), COUNT_LENGTH (128), COUNT_VARIABLES ("1": Table 3's columns are "1 3 5"),
# POSLENS_CLI (build/app/cli/poslens-cli). Selective copy and counting took ~40 min here with
# OMP_NUM_THREADS=1 and another run beside them, Flip-Flop's six runs ~45 min more
# (docs/training.md: two runs side by side use the 2 cores best).
#
# A finished run folder is skipped and an unfinished one resumed, so the script can be stopped
# and run again. Each run's final evaluation (500 sequences per split) is read from its
# log.jsonl into OUT_DIR/tables.md: error % per split, mean and each seed.
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-/var/tmp/poslens-cope}
cli=${POSLENS_CLI:-build/app/cli/poslens-cli}
seeds=${COPE_SEEDS:-"0 1"}
encodings=${COPE_ENCODINGS:-"cope rope absolute"}
tasks=${COPE_TASKS:-"flipflop selective_copy counting"}
flipflop_steps=${FLIPFLOP_STEPS:-3000}
copy_steps=${COPY_STEPS:-3000}
count_steps=${COUNT_STEPS:-2000}
count_length=${COUNT_LENGTH:-128}
count_variables=${COUNT_VARIABLES:-1}
mkdir -p "$out/runs"

# train RUN STEPS ENCODING SEED TASK_ARGUMENTS...: the Golovneva et al. 2024 §5 toy-task recipe of the
# Flip-Flop demos (batch 32, AdamW lr 1e-3, 100 warm-up steps, linear decay, clipping 1.0); the
# loss is the task's default: the full next-token loss for Flip-Flop (as Liu et al.), the scored
# answers only for the others (docs/training.md).
train() {
  local run=$1 steps=$2 enc=$3 seed=$4
  shift 4
  if [ -f "$run/step-$(printf %06d "$steps")/model.safetensors" ]; then
    return
  elif [ -f "$run/train.json" ]; then
    "$cli" train --resume "$run"
  else
    "$cli" train "$@" --model "resources/demos/configs/flipflop-$enc.json" --out "$run" \
      --steps "$steps" --batch-size 32 --lr 1e-3 --warmup 100 --seed "$seed" \
      --checkpoint-every 1000 --eval-sequences 500 --log-every 250
  fi
}

for task in $tasks; do
  for seed in $seeds; do
    for enc in $encodings; do
      case "$task" in
        # L 128; test p_ignore 0.8 as in training, OOD 0.98 (scripts/make_demos.sh's recipe).
        flipflop) train "$out/runs/flipflop-$enc-seed$seed" "$flipflop_steps" "$enc" "$seed" \
                    --task flipflop --length 128 ;;
        # 16 letters among 16 blanks (L 49); OOD dense 8 blanks (L 41), sparse 32 (L 65).
        selective_copy) train "$out/runs/copy-$enc-seed$seed" "$copy_steps" "$enc" "$seed" \
                          --task selective_copy ;;
        # test w_pass 50 (Table 3); OOD short w_pass 10 and long w_pass 100 (Table 4).
        counting)
          for v in $count_variables; do
            train "$out/runs/count$v-$enc-seed$seed" "$count_steps" "$enc" "$seed" \
              --task counting --length "$count_length" --task-option variables="$v"
          done ;;
        *) echo "unknown task $task" >&2; exit 2 ;;
      esac
    done
  done
done

# The tables: each run's last evaluation (the one after its last step), error % per split.
/usr/bin/python3 - "$out/runs" "$out/tables.md" <<'EOF'
import json, os, re, statistics, sys
runs, target = sys.argv[1], sys.argv[2]
rows = {}  # (experiment, encoding) -> {seed: {split: error %}}
for name in sorted(os.listdir(runs)):
    match = re.fullmatch(r"(flipflop|copy|count\d)-(\w+)-seed(\d+)", name)
    log = os.path.join(runs, name, "log.jsonl")
    if not match or not os.path.exists(log):
        continue
    evals = [json.loads(line) for line in open(log) if '"eval"' in line]
    if evals:
        rows.setdefault(match.group(1, 2), {})[int(match.group(3))] = {
            split: v.get("error_pct") for split, v in evals[-1]["eval"].items()}
titles = {"flipflop": "Flip-Flop (Table 2, left): test p_ignore 0.8, ood 0.98",
          "copy": "Selective copy (Table 2, right): test 16 blanks, dense 8, sparse 32",
          "count": "Counting with {} variable(s) (Tables 3 and 4): test w_pass 50, short 10, long 100"}
with open(target, "w") as f:
    for experiment in sorted({e for e, _ in rows}):
        title = (titles["count"].format(experiment[5:]) if experiment.startswith("count")
                 else titles[experiment])
        f.write("### " + title + "\n\n")
        per_encoding = {enc: seeds for (e, enc), seeds in rows.items() if e == experiment}
        splits = list(next(iter(next(iter(per_encoding.values())).values())))
        f.write("| encoding | seeds | " + " | ".join(f"{s} error % (mean; per seed)" for s in splits) + " |\n")
        f.write("| --- | --- |" + " --- |" * len(splits) + "\n")
        for enc in ("cope", "rope", "absolute"):
            per_seed = per_encoding.get(enc)
            if not per_seed:
                continue
            cells = []
            for s in splits:
                values = [per_seed[seed].get(s) for seed in sorted(per_seed)]
                known = [v for v in values if v is not None]
                text = "; ".join("n.a." if v is None else f"{v:.2f}" for v in values)
                cells.append((f"{statistics.mean(known):.2f}" if known else "n.a.") + f" ({text})")
            f.write(f"| {enc} | {len(per_seed)} | " + " | ".join(cells) + " |\n")
        f.write("\n")
print(open(target).read())
EOF
