#!/usr/bin/env bash
# podsim vs SimGrid 3.32 (CM02) on the ring all-reduce of 100 MB: usage
#   bench/simgrid_compare.sh BUILD_DIR
# Runs BUILD_DIR/bench/bench_engine ring N for N in $NS (default "1024 4096"), and SimGrid's peer
# (../shared/peers/simgrid, built with its own Makefile in BUILD_DIR/sgpeer) for N in $SG_NS
# (default 1024: the 4096-rank run takes ~2.5 min). libsimgrid-dev is installed with apt-get when
# missing and possible; without SimGrid, or for N not in $SG_NS, the figures of
# results-2026-11-21.csv are used and labelled "recorded".
# Sizes: SimGrid sends floor(S/N) integer bytes per step; podsim cuts 25e6 floats into N chunks,
# the first 25e6 % N one float longer, so at S = 100e6 a podsim step lasts L + 4 ceil(25e6/N)/B.
# The second podsim row uses the largest size N divides, where both reduce to the same formula.
set -u
BUILD="${1:-build}"
NS="${NS:-1024 4096}"
SG_NS="${SG_NS:-1024}"
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# The peer sits in ../shared beside the main checkout; SG_PEER names it from a worktree elsewhere.
PEER="${SG_PEER:-$HERE/../../shared/peers/simgrid}"
RECORDED="$PEER/results-2026-11-21.csv"
SGDIR="$BUILD/sgpeer"

have_simgrid() { pkg-config --exists simgrid 2>/dev/null; }
if ! have_simgrid && command -v apt-get >/dev/null; then
  SUDO=""; [ "$(id -u)" = 0 ] || SUDO="sudo -n"
  echo "installing libsimgrid-dev (for the SimGrid peer) ..." >&2
  { $SUDO apt-get update -qq && $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq libsimgrid-dev; } >/dev/null 2>&1 \
    || echo "could not install libsimgrid-dev: using the recorded SimGrid figures" >&2
fi
SG=""
if have_simgrid && [ -f "$PEER/sgpeer.cpp" ]; then
  mkdir -p "$SGDIR" && cp "$PEER/sgpeer.cpp" "$PEER/Makefile" "$SGDIR/" && make -s -C "$SGDIR" sgpeer >&2 \
    && SG="$SGDIR/sgpeer"
fi

# field NAME LINE: the value of NAME=... in a key=value line
field() { printf '%s\n' "$2" | tr ' ' '\n' | sed -n "s/^$1=//p"; }

printf '%-6s %-10s %-6s %-16s %-16s %-16s %-9s | %-16s %-16s %-9s %-9s | %-12s %-12s %-8s\n' \
  N S closed podsim_sim_s formula_floor_s formula_ceil_s podsim_wall simgrid_sim_s formula_sg_s sg_wall sg_source \
  sim_pod/sg wall_sg/pod of_goal
for n in $NS; do
  sg_sim=""; sg_wall=""; src=""
  if [ -n "$SG" ] && [[ " $SG_NS " == *" $n "* ]]; then
    out="$( { /usr/bin/time -f "WALL %e" "$SG" ring "$n" 100e6 100e9 1e-6 --cfg=network/model:CM02; } 2>&1 )"
    sg_sim="$(field sim_time_s "$(printf '%s\n' "$out" | grep '^RESULT')")"
    sg_wall="$(printf '%s\n' "$out" | sed -n 's/^WALL //p')"
    src="measured"
  fi
  if [ -z "$sg_sim" ] && [ -f "$RECORDED" ]; then
    row="$(grep "^ring_allreduce_CM02,$n," "$RECORDED")"
    sg_sim="$(printf '%s' "$row" | cut -d, -f4)"; sg_wall="$(printf '%s' "$row" | cut -d, -f6)"
    src="recorded"
  fi
  "$BUILD/bench/bench_engine" ring "$n" | while read -r line; do
    s="$(field S "$line")"; closed="$(field closed_form "$line")"; sim="$(field sim_s "$line")"; wall="$(field wall_s "$line")"
    awk -v n="$n" -v s="$s" -v closed="$closed" -v sim="$sim" -v lo="$(field formula_floor_s "$line")" \
        -v hi="$(field formula_ceil_s "$line")" -v sgf="$(field formula_simgrid_s "$line")" -v wall="$wall" -v sg="$sg_sim" -v sgw="$sg_wall" -v src="$src" \
      'BEGIN {
         r1 = sg != "" ? sprintf("%.9f", sim / sg) : "NA"; r2 = sgw != "" ? sprintf("%.1fx", sgw / wall) : "NA"
         r3 = sgw != "" ? sprintf("%.2f", sgw / wall / 50) : "NA"
         printf "%-6d %-10s %-6s %-16.9e %-16.9e %-16.9e %-9s | %-16s %-16.9e %-9s %-9s | %-12s %-12s %-8s\n",
                n, s, closed, sim, lo, hi, wall "s", sg, sgf, sgw "s", src, r1, r2, r3 }'
  done
done
echo "goal (issue 16): wall_sg/pod >= 50x at N=1024, S=100000000, closed 1 (the peer's workload); of_goal = (wall_sg/pod) / 50, >= 1 meets it"
echo "closed: 0 event by event (every transfer a latency event and a flow), 1 uncontended transfers in closed form (the default; same podsim_sim_s);"
echo "formula_floor/ceil: 2(N-1)(L + 4 floor|ceil(S/4N)/B), podsim's shortest/longest chunk;"
echo "formula_sg: 2(N-1)(L + floor(S/N)/B) for SimGrid's integer bytes at S = 100e6 (it always runs 100e6)."
