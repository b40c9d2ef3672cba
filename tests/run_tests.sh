#!/usr/bin/env bash
# Runs each cmocka test binary given, then prints one closing line "N passed, N failed"
# counting test cases across all binaries, and adds "passed failed" to $TEST_TALLY when set.
# Exit status 1 if any failed.
set -u
passed=0; failed=0; broken=""
for t in "$@"; do
  out=$("$t" 2>&1); rc=$?
  printf '%s\n' "$out"
  p=$(printf '%s\n' "$out" | sed -n 's/^\[  PASSED  \] \([0-9]*\) test.*/\1/p' | awk '{s+=$1} END {print s+0}')
  f=$(printf '%s\n' "$out" | sed -n 's/^\[  FAILED  \] \([0-9]*\) test.*/\1/p' | awk '{s+=$1} END {print s+0}')
  passed=$((passed + p)); failed=$((failed + f))
  if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then failed=$((failed + 1)); broken="$broken $t"; fi
done
[ -n "$broken" ] && echo "crashed or exited non-zero:$broken"
echo "$passed passed, $failed failed"
[ -n "${TEST_TALLY:-}" ] && echo "$passed $failed" >> "$TEST_TALLY"
[ "$failed" -eq 0 ]
