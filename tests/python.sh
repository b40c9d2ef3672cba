#!/usr/bin/env bash
# The Python suite (tests/python, pytest) in the venv `make venv` made: the podsim package over
# libpodsim.so and TensorFlow as the oracle. Prints pytest's counts as one closing line
# "N passed, N failed" (skipped tests counted apart) and adds "passed failed" to $TEST_TALLY.
# Usage: tests/python.sh VENV_PYTHON
set -u
py=$1
cd "$(dirname "$0")/.."
out=$("$py" -m pytest -q -p no:cacheprovider tests/python 2>&1); rc=$?
printf '%s\n' "$out" | tail -40
last=$(printf '%s\n' "$out" | grep -E '(passed|failed|error)' | tail -1)
count() { printf '%s\n' "$last" | grep -oE "[0-9]+ $1" | grep -oE '^[0-9]+' || echo 0; }
passed=$(count passed); failed=$(( $(count failed) + $(count error) ))
# pytest's exit 5 (no tests collected) and any other failure without a failed count fail the stage
if [ $rc -ne 0 ] && [ "$failed" -eq 0 ]; then failed=1; fi
echo "python: $passed passed, $failed failed, $(count skipped) skipped"
[ -n "${TEST_TALLY:-}" ] && echo "$passed $failed" >> "$TEST_TALLY"
[ "$failed" -eq 0 ]
