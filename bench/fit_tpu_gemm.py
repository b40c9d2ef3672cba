#!/usr/bin/env python3
"""fit_tpu_gemm.py: fits the TPU per-op model's MXU and HBM efficiencies (scenarios/config/machines.c,
TPU_GENERATIONS) to measured bf16 GEMMs on one TPU v6e chip (docs/data/gemm_v6e.csv) and prints
the fit's errors.

The model is sim_opmodel_seconds's for v6e, written again here in the same double arithmetic:
    device = launch + max(whole waves of 8 x 256 tiles on 4 MXUs x tile FLOPs / (MXU rate x e),
                          2 (m k + k n + m n) bytes / (1638 GB/s x h))
with 918 TFLOP/s and the 1 us launch. Most rows were timed on the host around a Python call, so
they carry a dispatch D the device never sees: host = D + device; the one "trace" row is device
time alone. A grid search over (D, e, h) minimises the mean relative error over the rows with
n = k (the 4096 and 8192 families, 14 host rows); the 7168 families and the trace row are held
out, and their errors are printed apart.
Run: python3 bench/fit_tpu_gemm.py [csv]   (no packages beyond the standard library)
"""
import csv
import math
import sys

PEAK, HBM, MXUS, TILE_M, TILE_N, LAUNCH = 918e12, 1638e9, 4, 8, 256, 1e-6


def device_seconds(m, n, k, e, h):
    waves = math.ceil(math.ceil(m / TILE_M) * math.ceil(n / TILE_N) / MXUS)
    compute = waves * 2.0 * TILE_M * TILE_N * k / (PEAK * e / MXUS)
    memory = 2.0 * (m * k + k * n + m * n) / (HBM * h)
    return LAUNCH + max(compute, memory)


def load(path):
    with open(path) as f:
        lines = [l for l in f if not l.startswith('#')]
    return [(int(r['m']), int(r['n']), int(r['k']), r['timing'] == 'host', float(r['time_us']) * 1e-6)
            for r in csv.DictReader(lines)]


def errors(rows, d, e, h):
    return [(device_seconds(m, n, k, e, h) + (d if host else 0.0) - t) / t for m, n, k, host, t in rows]


def main():
    every = load(sys.argv[1] if len(sys.argv) > 1 else 'docs/data/gemm_v6e.csv')
    rows = [r for r in every if r[1] == r[2] and r[3]]
    held = [r for r in every if r not in rows]
    best = None
    for d_us in range(80, 161):
        for e_milli in range(700, 1001, 5):
            for h_cent in range(50, 101):
                errs = errors(rows, d_us * 1e-6, e_milli / 1000, h_cent / 100)
                mean = sum(abs(x) for x in errs) / len(errs)
                if best is None or mean < best[0]:
                    best = (mean, d_us * 1e-6, e_milli / 1000, h_cent / 100)
    mean, d, e, h = best
    errs = sorted(abs(x) for x in errors(rows, d, e, h))
    print(f"dispatch {d * 1e6:.0f} us, efficiency {e:.3f}, mem_efficiency {h:.2f}: "
          f"mean |error| {100 * mean:.1f}%, median {100 * errs[len(errs) // 2]:.1f}%")
    out = sorted(abs(x) for x in errors(held, d, e, h))
    print(f"held out ({len(out)} rows): median |error| {100 * out[len(out) // 2]:.1f}%, "
          f"mean {100 * sum(out) / len(out):.1f}%")
    for (m, n, k, host, t), x in zip(every, errors(every, d, e, h)):
        print(f"{m:5d} x {n:5d} x {k:5d} {'host ' if host else 'trace'} {t * 1e6:8.1f} us  {100 * x:+6.1f}%"
              f"{'' if (m, n, k, host, t) in rows else '  (held out)'}")


if __name__ == '__main__':
    main()
