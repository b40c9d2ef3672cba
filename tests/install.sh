#!/usr/bin/env bash
# make install into a temporary prefix (and once through DESTDIR, as packagers do), then as a user would:
# the installed podsim runs an installed example; a C program built with the installed podsim.pc
# runs the same scenario through libpodsim and gets the same run_hash; the man page and the bash
# completion are in place; make uninstall leaves no file behind. Usage: tests/install.sh BUILD
set -u
build=${1:-build}
cd "$(dirname "$0")/.."
. tests/testlib.sh
check() { local what=$1; shift; if "$@"; then ok; else bad "$what"; fi; }

# DESTDIR: every file lands under it, podsim.pc names the PREFIX; uninstall through it leaves nothing.
make --no-print-directory -s BUILD="$build" install PREFIX=/opt/podsim DESTDIR="$tmp/root" >"$tmp/destdir.log" 2>&1
check "make install DESTDIR: $(tail -3 "$tmp/destdir.log")" test $? -eq 0
check "DESTDIR podsim.pc prefix" grep -qx "prefix=/opt/podsim" "$tmp/root/opt/podsim/lib/pkgconfig/podsim.pc"
make --no-print-directory -s BUILD="$build" uninstall PREFIX=/opt/podsim DESTDIR="$tmp/root" >/dev/null 2>&1
check "uninstall DESTDIR left: $(find "$tmp/root" -type f)" test -z "$(find "$tmp/root" -type f)"

p=$tmp/prefix
make --no-print-directory -s BUILD="$build" install PREFIX="$p" >"$tmp/install.log" 2>&1
check "make install: $(tail -3 "$tmp/install.log")" test $? -eq 0
for f in bin/podsim lib/libpodsim.a lib/pkgconfig/podsim.pc include/podsim/scenarios/config/scenario.h \
         include/podsim/scenarios/programs/train.h share/man/man1/podsim.1 \
         share/bash-completion/completions/podsim share/podsim/examples/quickstart.yaml \
         share/podsim/examples/data/clicks.csv share/podsim/scenario.schema.json \
         share/doc/podsim/README.md share/doc/podsim/docs/scenario-format.md \
         share/doc/podsim/docs/img/quickstart-step-time.png; do
  check "installed $f" test -s "$p/$f"
done
check "an internal header was installed" test -z "$(find "$p/include" -name '*Int.h')"

# The installed binary on an installed example (paths inside it are relative to the file).
h1=$("$p/bin/podsim" run "$p/share/podsim/examples/quickstart.yaml" -o "$tmp/q1" --set training.steps=3 --quiet)
check "installed podsim run: '$h1'" test -n "$h1"

# A program of the user's, compiled and linked through pkg-config alone.
export PKG_CONFIG_PATH=$p/lib/pkgconfig
flags=$(pkg-config --cflags --libs podsim); rc=$?
check "pkg-config podsim: exit $rc" test $rc -eq 0
# shellcheck disable=SC2086
cc -std=c11 -o "$tmp/consumer" tests/install/consumer.c $flags 2>"$tmp/cc.log"
check "consumer builds against the installed library: $(head -5 "$tmp/cc.log")" test -x "$tmp/consumer"
out=$("$tmp/consumer" "$p/share/podsim/examples/quickstart.yaml" "$tmp/q2" training.steps=3)
check "consumer runs: '$out'" test "$(printf '%s\n' "$out" | head -1)" = "steps 3"
check "consumer and podsim agree: '$out' vs '$h1'" test "$(printf '%s\n' "$out" | tail -1)" = "$h1"

check "man page renders" sh -c "man -l '$p/share/man/man1/podsim.1' 2>/dev/null | grep -q 'EXIT STATUS'"
check "completion offers the commands" bash -c "source '$p/share/bash-completion/completions/podsim'; \
  COMP_WORDS=(podsim p); COMP_CWORD=1; _podsim; [ \"\${COMPREPLY[*]}\" = plan ]"

make --no-print-directory -s BUILD="$build" uninstall PREFIX="$p" >"$tmp/uninstall.log" 2>&1
check "make uninstall: $(tail -3 "$tmp/uninstall.log")" test $? -eq 0
left=$(find "$p" -type f)
check "uninstall left: $left" test -z "$left"

finish install
