#!/usr/bin/env bash
# The same scenarios run by two builds (-O2 and -O0) must give the same run_hash and the same
# simulated output files, byte for byte. Usage: tests/determinism.sh PODSIM_A PODSIM_B
set -euo pipefail
a=$1; b=$2
here=$(cd "$(dirname "$0")/.." && pwd)
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
passed=0; failed=0
for scn in scenarios/examples/quickstart.yaml tests/golden/mlp_momentum/r4/scenario.yaml \
           tests/golden/mlp_momentum/r8/scenario.yaml scenarios/examples/ps_spot_vms.yaml \
           scenarios/examples/ps_embedding.yaml scenarios/examples/cnn_tpu.yaml \
           tests/golden/attention_block/r2/scenario.yaml tests/golden/residual/r2/scenario.yaml \
           tests/golden/dlrm/r2/scenario.yaml scenarios/examples/dlrm_tpu_v4.yaml \
           scenarios/examples/gnn_runner_tpu.yaml tests/golden/graphsage/r8/scenario.yaml \
           tests/data/compile/fused_tpu.yaml tests/data/train/strategies/mesh_fsdp_tp_v4.yaml \
           tests/data/train/strategies/mesh_sp_gpus.yaml tests/data/train/mesh_fsdp_wide.yaml \
           tests/data/train/strategies/mesh_hybrid_fsdp_sp_v4.yaml \
           scenarios/examples/keras_fit_tpu.yaml tests/data/train/validation.yaml \
           scenarios/examples/keras_fit_ps.yaml; do
  ha=$("$a" run "$here/$scn" -o "$tmp/a" --quiet | sed -n 's/^run_hash //p')
  hb=$("$b" run "$here/$scn" -o "$tmp/b" --quiet | sed -n 's/^run_hash //p')
  same=1
  [ -n "$ha" ] && [ "$ha" = "$hb" ] || same=0
  for f in metrics.csv final_weights.csv variables.csv trace.json evaluations.csv ops.csv step.hlo.txt history.csv; do
    [ -e "$tmp/a/$f" ] || [ -e "$tmp/b/$f" ] || continue  # evaluations.csv: runs with an evaluator; ops: outputs.ops; history.csv: epochs
    cmp -s "$tmp/a/$f" "$tmp/b/$f" || { echo "  $f differs"; same=0; }
  done
  if [ $same = 1 ]; then echo "same run_hash $ha: $scn"; passed=$((passed+1));
  else echo "DIFFERENT run_hash ($ha vs $hb): $scn"; failed=$((failed+1)); fi
  rm -rf "$tmp/a" "$tmp/b"
done
echo "determinism: $passed passed, $failed failed"
[ -n "${TEST_TALLY:-}" ] && echo "$passed $failed" >> "$TEST_TALLY"
[ $failed -eq 0 ]
