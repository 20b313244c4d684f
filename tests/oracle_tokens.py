# oracle_tokens.py TOOLS ORACLE OUTPREFIX: print each prompt's tokens of an oracle dump, one
# comma-separated line per prompt, and save its reference logits (T, V) as OUTPREFIX-ref-<prompt>.npy
# (shared by tests/engine-oracle.sh and tests/engine-dot-q8.sh)
import sys
sys.path.insert(0, sys.argv[1])
import numpy as np
import kgguf
r = kgguf.Reader(sys.argv[2])
for p in range(int(r.value("kestrel.oracle.n_prompts"))):
    print(",".join(str(int(t)) for t in r.tensors["p%d.tokens" % p].array()))
    np.save("%s-ref-%d.npy" % (sys.argv[3], p), r.tensors["p%d.logits" % p].array())
