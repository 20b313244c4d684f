#!/usr/bin/python3
"""The split FFN's phases per repetition from bench_gemv's KC_Q8T_DUMP records (4-ffn-blocks-*.tsv.xz, xz -dk
first; columns as 1-resgap.py): from the SwiGLU's wait, its blocks' median and last end, the down projection's
wait and last end, and the down's own time (its wait to its last end); mean and standard error over the
repetitions. Usage: 4-ffn-phases.py FILE.tsv..."""
import collections
import sys

import numpy as np

for path in sys.argv[1:]:
    rows = [l.rstrip('\n').split('\t') for l in open(path)]
    R = [r for r in rows if r[0].startswith('ffn_split')]
    st = collections.defaultdict(list)
    for rep in sorted(set(int(r[1]) for r in R)):
        gu = [r for r in R if int(r[1]) == rep and r[2] == 'gu']
        dn = [r for r in R if int(r[1]) == rep and r[2] == 'down']
        w = min(float(r[6]) for r in gu)
        dw = min(float(r[6]) for r in dn)
        ge = [float(r[8]) for r in gu]
        de = [float(r[8]) for r in dn]
        st['SwiGLU median end'].append(np.median(ge) - w)
        st['SwiGLU last end'].append(max(ge) - w)
        st['down wait'].append(dw - w)
        st['down last end'].append(max(de) - w)
        st['down wait -> last end'].append(max(de) - dw)
    print(path + ': us from the SwiGLU\'s wait, mean (standard error) over %d FFNs' % len(st['down wait']))
    for k, v in st.items():
        print('  %-22s %6.2f (%.2f)' % (k, np.mean(v), np.std(v) / np.sqrt(len(v))))
