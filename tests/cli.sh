#!/usr/bin/env bash
# The podsim command line as users meet it: every broken scenario of the catalogue exits 2 with
# exactly its expected "file:line:col: key: ..." line on stderr and writes nothing; the exit
# statuses of the contract; --set, check, --help, --version. Usage: tests/cli.sh PODSIM
set -u
podsim=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
cd "$(dirname "$0")/.."
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
passed=0; failed=0
ok()  { passed=$((passed + 1)); }
bad() { failed=$((failed + 1)); echo "FAIL: $*"; }

# expect_error FILE MESSAGE: exit 2, stderr's first line is MESSAGE, nothing written.
expect_error() {
  local out="$tmp/out" err rc
  err=$("$podsim" run "$1" -o "$out" 2>&1 >/dev/null); rc=$?
  if [ $rc -ne 2 ]; then bad "$1: exit $rc, expected 2"; return; fi
  if [ "${err%%$'\n'*}" != "$2" ]; then bad "$1: got '${err%%$'\n'*}', expected '$2'"; return; fi
  if [ -e "$out" ]; then bad "$1: wrote $out"; rm -rf "$out"; return; fi
  ok
}

while IFS= read -r line; do
  case "$line" in '#'*|'') continue ;; esac
  file=${line%%:*}
  expect_error "tests/data/scenarios/bad/$file" "tests/data/scenarios/bad/$line"
done < tests/data/scenarios/bad/EXPECTED.txt

expect_error tests/data/inputs/bad_number.yaml \
  'tests/data/inputs/bad_number.csv:3:6: dataset.csv: "x2.0" is not a finite number'
expect_error tests/data/inputs/init_wrong_shape.yaml \
  'tests/data/inputs/init_wrong_shape.csv:6:14: model.init.file: flat_index 4 is out of range for dense/kernel (4 elements)'
expect_error tests/data/inputs/no_label.yaml \
  'tests/data/inputs/no_label.csv:1:1: dataset.csv: no label column "label" in the header'
expect_error tests/data/faults/bad_trace.yaml \
  'tests/data/faults/bad_trace.csv:3:29: faults[0].file: expected a slowdown >= 1, found "0"'
expect_error tests/data/faults/ps_in_tpu_run.yaml \
  'tests/data/faults/ps_in_tpu_run.yaml:28:26: faults[0].target: this run has no ps task (those are parameter-server training'"'"'s); its tasks are tpu and tpu_host:N'

# usage errors: exit 2
for args in "" "frobnicate x.yaml" "run" "run a.yaml b.yaml" "run --bogus scenarios/examples/quickstart.yaml" \
            "run scenarios/examples/quickstart.yaml -o"; do
  # shellcheck disable=SC2086
  "$podsim" $args >/dev/null 2>&1; rc=$?
  [ $rc -eq 2 ] && ok || bad "podsim $args: exit $rc, expected 2"
done
"$podsim" run "$tmp/missing.yaml" >/dev/null 2>&1; rc=$?
[ $rc -eq 2 ] && ok || bad "missing scenario file: exit $rc, expected 2"

"$podsim" --help | grep -q "podsim run FILE" && ok || bad "--help"
"$podsim" --version | grep -Eq '^podsim [0-9]+\.[0-9]+\.[0-9]+$' && ok || bad "--version"
# check validates and writes nothing: run it where outputs.dir (out/quickstart, relative to the
# current directory) would land, and the directory stays empty.
mkdir "$tmp/cwd"
(cd "$tmp/cwd" && "$podsim" check "$OLDPWD/scenarios/examples/quickstart.yaml" >/dev/null) && ok || bad "check quickstart"
[ -z "$(ls -A "$tmp/cwd")" ] && ok || bad "check wrote into its directory: $(ls -A "$tmp/cwd")"

# --set reaches the run: 3 steps instead of 300, and metrics.csv has 3 rows.
"$podsim" run scenarios/examples/quickstart.yaml -o "$tmp/q" --set training.steps=3 --quiet >/dev/null; rc=$?
rows=$(($(wc -l < "$tmp/q/metrics.csv") - 1))
[ $rc -eq 0 ] && [ $rows -eq 3 ] && ok || bad "--set training.steps=3: exit $rc, $rows rows"
for f in metrics.csv summary.json final_weights.csv variables.csv trace.json loss.png step_time.png; do
  [ -s "$tmp/q/$f" ] && ok || bad "output $f missing"
done

# A collective workload on a TPU slice writes collective.csv and summary.json.
"$podsim" run scenarios/examples/allreduce_v4.yaml -o "$tmp/w" --quiet >/dev/null; rc=$?
[ $rc -eq 0 ] && [ "$(wc -l < "$tmp/w/collective.csv")" -eq 4 ] && grep -q '"all_reduce": "torus"' "$tmp/w/summary.json" \
  && ok || bad "workload: exit $rc, collective.csv or summary.json wrong"

# Every shipped example runs (a few steps; all of it when it has expect checks, which are about
# the whole run) and summary.json names the strategy kind it asks for.
for f in scenarios/examples/*.yaml; do
  kind=$(sed -n 's/^strategy: *{kind: *\([a-z_0-9]*\).*/\1/p; s/^  kind: *\([a-z_0-9]*\).*/\1/p' "$f" | head -1)
  grep -q '^workload:' "$f" && kind=""
  out="$tmp/ex-$(basename "$f" .yaml)"
  steps=(--set training.steps=3)
  grep -q '^expect:' "$f" && steps=()
  if [ -n "$kind" ]; then
    "$podsim" run "$f" -o "$out" "${steps[@]}" --quiet >/dev/null; rc=$?
    [ $rc -eq 0 ] && grep -q "\"strategy\": \"$kind\"" "$out/summary.json" && ok || bad "example $f: exit $rc or strategy not $kind"
  else
    "$podsim" check "$f" >/dev/null && ok || bad "example $f does not check"
  fi
done

# expect: a check that fails exits 1 with a table (metric, comparator, expected, got) on stderr,
# and the outputs are still written; the same run with checks that hold exits 0.
err=$("$podsim" run scenarios/examples/tpu_preempted.yaml -o "$tmp/x1" --quiet \
      --set 'expect=[{metric: restarts, eq: 0}, {metric: lost_steps, eq: 5}]' 2>&1 >/dev/null); rc=$?
[ $rc -eq 1 ] && [ -s "$tmp/x1/summary.json" ] && printf '%s\n' "$err" | grep -q '^  metric  *comparator  *expected  *got$' \
  && printf '%s\n' "$err" | grep -Eq '^  restarts +eq +0 +1$' && ! printf '%s\n' "$err" | grep -q lost_steps \
  && ok || bad "expect failing: exit $rc, stderr '$err'"
"$podsim" run scenarios/examples/tpu_preempted.yaml -o "$tmp/x2" --quiet \
  --set 'expect=[{metric: restarts, eq: 1}, {metric: goodput, gt: 0}]' >/dev/null 2>&1; rc=$?
[ $rc -eq 0 ] && ok || bad "expect holding: exit $rc, expected 0"
# A run with faults marks restarts in metrics.csv: the rows of steps 40..44 twice, the second time
# with restarts 1.
[ "$(head -1 "$tmp/x2/metrics.csv" | awk -F, '{print $NF}')" = restarts ] \
  && [ "$(grep -c '^4[0-4],.*,1$' "$tmp/x2/metrics.csv")" -eq 5 ] && ok || bad "metrics.csv restarts column"

# A job that does not fit in memory: exit 3, outputs written, summary.json names the error.
"$podsim" run tests/data/inputs/oom.yaml -o "$tmp/oom" --quiet >/dev/null; rc=$?
[ $rc -eq 3 ] && grep -q '"kind": "ResourceExhaustedError"' "$tmp/oom/summary.json" && ok \
  || bad "oom: exit $rc, expected 3 with the error in summary.json"

echo "cli: $passed passed, $failed failed"
[ -n "${TEST_TALLY:-}" ] && echo "$passed $failed" >> "$TEST_TALLY"
[ $failed -eq 0 ]
