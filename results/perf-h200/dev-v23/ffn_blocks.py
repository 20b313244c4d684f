#!/usr/bin/python3
"""Reads bench_gemv's KC_Q8T_DUMP records (2-ffn-blocks-*.tsv.xz, xz -dk first) and says whether the
FFN's late blocks are late on the same SMs every repetition, and what their stage shares explain.
Columns: variant, rep, phase (gu = the SwiGLU, down), block, SM, entry, wait, first, end (us from the
rep's first gate/up entry). Usage: ffn_blocks.py FILE.tsv [SMS]"""
import collections
import sys

import numpy as np

rows = [l.rstrip('\n').split('\t') for l in open(sys.argv[1])]
sms = int(sys.argv[2]) if len(sys.argv) > 2 else 132
for var in sorted(set(r[0] for r in rows)):
    for ph in ('gu', 'down'):
        R = [r for r in rows if r[0] == var and r[2] == ph]
        if not R:
            continue
        reps = sorted(set(int(r[1]) for r in R))
        end = np.full((len(reps), sms), np.nan)  # per rep and SM: its last block's end
        for r in R:
            rep, sm = int(r[1]), int(r[4])
            end[rep, sm] = np.nanmax([end[rep, sm], float(r[8])])
        off = end - np.nanmedian(end, axis=1, keepdims=True)  # each SM against the rep's median
        a, b = np.nanmean(off[0::2], axis=0), np.nanmean(off[1::2], axis=0)
        ok = ~np.isnan(a) & ~np.isnan(b)
        print('%s %s: %d reps; per-SM end offset, even vs odd reps: corr %.3f; median->max per rep %.2f us; '
              'sd of the per-SM mean offset %.2f us' % (var, ph, len(reps), np.corrcoef(a[ok], b[ok])[0, 1],
                                                        np.mean(np.nanmax(end, axis=1) - np.nanmedian(end, axis=1)),
                                                        np.nanstd(np.nanmean(off, axis=0))))
        if ph != 'gu' or not var.startswith('ffn_split'):
            continue
        # the SwiGLU's stage shares (17408 rows / 8 = 2176 stages over the blocks, q8t_share)
        nblk = max(int(r[3]) for r in R) + 1
        units = 2176
        share = [(i + 1) * units // nblk - i * units // nblk for i in range(nblk)]
        dur = collections.defaultdict(list)
        for r in R:
            dur[share[int(r[3])]].append(float(r[8]) - float(r[6]))
        for k in sorted(dur):
            print('  blocks of %d stages: %d records, wait -> end %.2f us (min %.2f, max %.2f)' %
                  (k, len(dur[k]), np.mean(dur[k]), min(dur[k]), max(dur[k])))
        per_sm = collections.defaultdict(int)
        sm_end = {}
        for r in R:
            key = (int(r[1]), int(r[4]))
            per_sm[key] += share[int(r[3])]
            sm_end[key] = max(sm_end.get(key, 0.0), float(r[8]))
        for k in sorted(set(per_sm.values())):
            e = [sm_end[key] for key in per_sm if per_sm[key] == k]
            print('  SMs with %d stages: %d (SM, rep) pairs, end %.2f us' % (k, len(e), np.mean(e)))
