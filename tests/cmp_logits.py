# cmp_logits.py GOT.npy REF.npy WORST_GATE [MEAN_GATE [MIN_ARGMAX_FRACTION]]: logits (T, V) against
# reference logits; per position max_rel = max|got - ref| / max|ref| (inf where got is not finite).
# Prints "worst max_rel X at position t of T, mean M, argmax a/T"; exit 0 iff the shapes agree,
# worst <= WORST_GATE, mean <= MEAN_GATE (default: no gate) and the fraction of positions with the
# same argmax >= MIN_ARGMAX_FRACTION (default 0; 1 = every position).
# (shared by tests/engine-oracle.sh and tests/engine-dot-q8.sh)
import sys
import numpy as np
got = np.load(sys.argv[1]).astype(np.float64)
ref = np.load(sys.argv[2]).astype(np.float64)
worst_gate = float(sys.argv[3])
mean_gate = float(sys.argv[4]) if len(sys.argv) > 4 else float("inf")
min_agree = float(sys.argv[5]) if len(sys.argv) > 5 else 0.0
if got.shape != ref.shape:
    print("shape %s, reference %s" % (got.shape, ref.shape))
    sys.exit(1)
rel = np.abs(got - ref).max(axis=1) / np.abs(ref).max(axis=1)
rel[~np.isfinite(got).all(axis=1)] = np.inf
t = int(rel.argmax())
agree = int((got.argmax(axis=1) == ref.argmax(axis=1)).sum())
print("worst max_rel %.3g at position %d of %d, mean %.3g, argmax %d/%d"
      % (rel[t], t, len(rel), rel.mean(), agree, len(rel)))
sys.exit(0 if rel[t] <= worst_gate and rel.mean() <= mean_gate and agree >= min_agree * len(rel) else 1)
