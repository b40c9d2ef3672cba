#!/usr/bin/env python3
"""fit_gemm.py: fits the per-op model's GEMM constants (sim/roofline.c, scenarios/config/machines.c)
to OpenXLA's measured H100 bf16 GEMMs (docs/data/gemm_h100_xla.csv) and prints the fit's errors.

The model is sim_opmodel_seconds's, written again here in the same double arithmetic:
    time = launch + max(min over tiles of waves x tile FLOPs / (SM rate x tile efficiency),
                        bytes / (HBM bandwidth x mem_efficiency))
with H100's 132 SMs, 989 TFLOP/s and 3350 GB/s, cuBLAS's tiles 256x128, 128x128, 128x64, 64x64
at 1, 0.95, 0.85, 0.70 of the largest tile's efficiency (roofline.c's TILES). A grid search over
(efficiency, mem_efficiency, launch) minimises the mean relative error over the 125 shapes.
Run: python3 bench/fit_gemm.py [csv]   (no packages beyond the standard library)
"""
import csv
import math
import sys

PEAK, HBM, SMS = 989e12, 3350e9, 132
TILES = [(256, 128, 1.0), (128, 128, 0.95), (128, 64, 0.85), (64, 64, 0.70)]


def seconds(m, n, k, efficiency, mem_efficiency, launch):
    rate = PEAK * efficiency / SMS
    compute = min(math.ceil(math.ceil(m / tm) * math.ceil(n / tn) / SMS) * 2.0 * tm * tn * k / (rate * e)
                  for tm, tn, e in TILES)
    memory = 2.0 * (m * k + k * n + m * n) / (HBM * mem_efficiency)
    return launch + max(compute, memory)


def load(path):
    with open(path) as f:
        rows = [r for r in csv.reader(line for line in f if not line.startswith('#'))]
    return [(float(m), float(n), float(k), 2.0 * float(m) * float(n) * float(k) / float(fl)) for m, n, k, fl in rows[1:]]


def errors(rows, *constants):
    return [seconds(m, n, k, *constants) / t - 1 for m, n, k, t in rows]


def main():
    rows = load(sys.argv[1] if len(sys.argv) > 1 else 'docs/data/gemm_h100_xla.csv')
    best = None
    for e in [0.76 + 0.02 * i for i in range(9)]:
        for me in [0.5 + 0.1 * i for i in range(6)]:
            for launch in [4.0e-6 + 0.5e-6 * i for i in range(6)]:
                err = errors(rows, e, me, launch)
                mean = sum(abs(x) for x in err) / len(err)
                if best is None or mean < best[0]:
                    best = (mean, e, me, launch)
    mean, e, me, launch = best
    err = errors(rows, e, me, launch)
    a = sorted(abs(x) for x in err)
    print(f"efficiency {e:.2f}  mem_efficiency {me:.1f}  launch {launch * 1e6:.1f} us")
    print(f"{len(rows)} shapes: mean |error| {100 * mean:.1f}%, median {100 * a[len(a) // 2]:.1f}%, "
          f"90th percentile {100 * a[int(0.9 * len(a))]:.1f}%, max {100 * a[-1]:.1f}%")
    print("largest errors (m n k: measured us, model us, error):")
    worst = sorted(zip(err, rows), key=lambda x: -abs(x[0]))[:6]
    for x, (m, n, k, t) in worst:
        print(f"  {m:.0f} {n:.0f} {k:.0f}: {t * 1e6:.2f} {seconds(m, n, k, e, me, launch) * 1e6:.2f} {100 * x:+.1f}%")


if __name__ == '__main__':
    main()
