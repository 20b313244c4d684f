#!/usr/bin/python3
# v39 (CPU, numpy; run with /usr/bin/python3): the numerics question of PERF-NOTES "Where the rest goes" item 4 and
# "After v39" item 4 - quantising the normed x = (x * inv) * w in groups of 32 without inv (u = x * w, q = rint(u *
# 127/amax(u)), the scale inv * amax(u)/127 applied by the consumer), against rmsnorm8_q8 + quantize_q8 of today
# (rms8_emit_t: v = (x * inv) * w in f32, d = amax(v)/127, q = rint(v * (127/amax(v)))). random 5120-wide
# residuals (scale 0.1-20, 8 outlier channels x30), norm weights 1 +- 0.2, 64 random rows dotted with each; 1000
# trials (5.1 M values).
import numpy as np
rng = np.random.default_rng(1)
f = np.float32
def cur(x, w, inv):
    v = (x * inv).astype(f) * w
    v = v.astype(f).reshape(-1, 32)
    amax = np.abs(v).max(1).astype(f)
    d = (amax / f(127)).astype(f)
    idd = np.where(amax > 0, (f(127) / amax).astype(f), f(0))
    q = np.clip(np.rint((v * idd[:, None]).astype(f)), -127, 127)
    return q, d
def sfree(x, w, inv):
    u = (x * w).astype(f).reshape(-1, 32)
    amax = np.abs(u).max(1).astype(f)
    e = (amax / f(127)).astype(f)
    idu = np.where(amax > 0, (f(127) / amax).astype(f), f(0))
    q = np.clip(np.rint((u * idu[:, None]).astype(f)), -127, 127)
    return q, (inv * e).astype(f)
n = 5120
tq = tot = 0
worst = 0.0
rel = []
for trial in range(1000):
    x = rng.standard_normal(n).astype(f) * f(rng.uniform(0.1, 20))
    x[rng.integers(0, n, 8)] *= f(30)  # a few outlier channels, as residual streams have
    w = (1 + 0.2 * rng.standard_normal(n)).astype(f)
    inv = f(1 / np.sqrt(np.mean(x.astype(np.float64) ** 2) + 1e-6))
    qa, da = cur(x, w, inv)
    qb, db = sfree(x, w, inv)
    tq += int((qa != qb).sum()); tot += qa.size
    worst = max(worst, float(np.abs(da / db - 1).max()))
    W = rng.standard_normal((64, n)).astype(f)
    ya = (W.reshape(64, -1, 32) * (qa * da[:, None])[None]).sum((1, 2))
    yb = (W.reshape(64, -1, 32) * (qb * db[:, None])[None]).sum((1, 2))
    xr = ((x * inv).astype(f) * w).astype(np.float64)
    yf = W.astype(np.float64) @ xr
    rel.append((np.abs(ya - yb).max() / np.abs(yf).max(), np.abs(ya - yf).max() / np.abs(yf).max()))
rel = np.array(rel)
print(f"q values that differ: {tq} of {tot} ({tq / tot:.2e}); worst scale ratio - 1: {worst:.2e}")
print(f"dot, max |today - scale-free| / max|f64|: median {np.median(rel[:, 0]):.2e}, max {rel[:, 0].max():.2e}")
print(f"dot, max |today q8 - f64| / max|f64| (q8's own error): median {np.median(rel[:, 1]):.2e}, max {rel[:, 1].max():.2e}")
