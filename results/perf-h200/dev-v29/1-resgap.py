#!/usr/bin/python3
"""The residency-bound part of the SwiGLU -> down projection boundary (PERF-NOTES v29 row 1), from bench_gemv's
KC_Q8T_DUMP records (1-ffn-blocks-*.tsv.xz, xz -dk first; columns: variant, rep, phase (gu = the SwiGLU, down),
block, SM, entry, wait, first, end, in us from the rep's first gate/up entry).
Per repetition and SM: the time from that SM's last SwiGLU block's end (the SM free) to its down-projection block's
entry (its producer issues the first bulk copy at entry): what a persistent step, whose producer would stream on
without a block boundary, could add there. Also the boundary's marks averaged over the repetitions.
Usage: 1-resgap.py FILE.tsv [VARIANT]   (VARIANT default: the split FFN, 'ffn_split(...)')"""
import collections
import sys

import numpy as np

rows = [l.rstrip('\n').split('\t') for l in open(sys.argv[1])]
var = sys.argv[2] if len(sys.argv) > 2 else next(r[0] for r in rows if r[0].startswith('ffn_split'))
R = [r for r in rows if r[0] == var]
gaps, free_first, last_gu, down_entry, down_wait, down_first = [], [], [], [], [], []
for rep in sorted(set(int(r[1]) for r in R)):
    gu = [r for r in R if int(r[1]) == rep and r[2] == 'gu']
    dn = [r for r in R if int(r[1]) == rep and r[2] == 'down']
    gu_end = collections.defaultdict(float)
    d_ent = {}
    for r in gu:
        gu_end[int(r[4])] = max(gu_end[int(r[4])], float(r[8]))
    for r in dn:
        d_ent[int(r[4])] = min(d_ent.get(int(r[4]), 1e9), float(r[5]))
    gaps += [d_ent[s] - gu_end[s] for s in d_ent if s in gu_end]
    free_first.append(min(gu_end.values()))
    last_gu.append(max(gu_end.values()))
    down_entry.append(np.median([float(r[5]) for r in dn]))
    down_wait.append(min(float(r[6]) for r in dn))
    down_first.append(np.median([float(r[7]) for r in dn]))
g = np.array(gaps)
print(var)
print('per SM, down block entry - that SM\'s last SwiGLU block end (us): 5/50/95th percentile %s, mean %.2f (%d SM-reps)'
      % (np.percentile(g, [5, 50, 95]).round(2), g.mean(), len(g)))
print('means over reps (us): first SM free %.2f, last SwiGLU end %.2f, down entry median %.2f, down wait %.2f, '
      'down first stage median %.2f' % tuple(np.mean(x) for x in (free_first, last_gu, down_entry, down_wait, down_first)))
