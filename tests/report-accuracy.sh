#!/bin/bash
# report-accuracy.sh - an injected accuracy regression end to end: the same
# oracle case run on a perturbed copy of a fixture model (one f32 weight tensor
# scaled by 1 + 1e-5: max_rel grows ~10x yet stays inside the case's absolute
# gate) must be reported as regressed by the relative rule, with the metric
# lines, a JUnit <failure>, and exit 1; an unchanged rerun is all ok, exit 0.
. "$top_srcdir/tests/lib.sh"
. "$top_srcdir/tests/report-lib.sh"
need_python
plan 16

cp "$FIX/mini27-f32.gguf" "$T/model.gguf"
cat >"$T/acc.yaml" <<EOF
suite: acc
engines: {cpu: cpu}
models: {m: model.gguf}
oracles: {o: $FIX/mini27.oracle.gguf.zst}
defaults: {engine: cpu, threads: 2}
cases:
  - name: acc-oracle
    kind: oracle
    model: m
    oracle: o
    gates: {max_rel: 5e-5, hidden_max_rel: 5e-5, argmax: all, greedy: exact}
EOF
# scale one f32 tensor of a GGUF file in place (tools/kgguf.py finds its bytes)
cat >"$T/perturb.py" <<'EOF'
import sys
sys.path.insert(0, sys.argv[1])
import numpy as np
import kgguf
path, name, scale = sys.argv[2], sys.argv[3], float(sys.argv[4])
r = kgguf.Reader(path)
t = r.tensors[name]
assert t.type == kgguf.F32, "%s is not f32" % name
off, n = r.data_offset + t.offset, t.data.size // 4
del r
with open(path, "r+b") as f:
    f.seek(off)
    a = np.frombuffer(f.read(4 * n), dtype="<f4") * np.float32(scale)
    f.seek(off)
    f.write(a.astype("<f4").tobytes())
EOF
DB=$T/acc.db
verdict_of() { printf '%s\n' "$OUT" | sed -n "s/^$1 ([^)]*): \([a-z]*\).*/\1/p"; }
line_of() { printf '%s\n' "$OUT" | awk -v c="$1" -v m="$2" '/^[^ ]/ { cur = ($1 == c) } cur && $1 == m { print; exit }'; }

run_cmd "$KESTREL_EVAL" run "$T/acc.yaml" --db "$DB"
is 0 "$RC" "baseline run passes its gates"
run_cmd "$KESTREL_EVAL" baseline set latest acc-main --db "$DB"
is 0 "$RC" "baseline set latest"

run_cmd "$KESTREL_EVAL" run "$T/acc.yaml" --db "$DB"
run_cmd "$KESTREL_EVAL" report --against acc-main --db "$DB"
is "0|ok" "$RC|$(verdict_of acc-oracle)" "unchanged rerun: ok, exit 0"
like "$(line_of acc-oracle max_rel)" 'x1 +ok' "unchanged rerun: max_rel identical"

"$PYTHON" "$T/perturb.py" "$top_srcdir/tools" "$T/model.gguf" blk.0.ssm_out.weight 1.00001
ok "! cmp -s '$FIX/mini27-f32.gguf' '$T/model.gguf'" "model copy perturbed"
run_cmd "$KESTREL_EVAL" run "$T/acc.yaml" --db "$DB"
is 0 "$RC" "perturbed model still passes the absolute gates (max_rel < 5e-5)"
run_cmd "$KESTREL_EVAL" report --against acc-main --db "$DB"
is 1 "$RC" "report on the perturbed model: exit 1"
is regressed "$(verdict_of acc-oracle)" "perturbed model: regressed"
like "$(line_of acc-oracle max_rel)" 'regressed +gate <= 5e-05: pass; [0-9.e-]+ > 2 x max\(base [0-9.e-]+, floor 1e-07\)' \
  "the max_rel line shows the gate passed and the growth rule failed"
like "$OUT" "suspect +model 'm' sha256" "the changed model hash is shown as suspect"

run_cmd "$KESTREL_EVAL" report --against acc-main --format junit -o "$T/junit.xml" --db "$DB"
is 1 "$RC" "junit report: exit 1"
run_cmd "$PYTHON" - "$T/junit.xml" <<'EOF'
import sys, xml.etree.ElementTree as ET
root = ET.parse(sys.argv[1]).getroot()
cases = root.findall("./testsuite/testcase")
f = cases[0].find("failure")
print(len(cases), root.get("failures"), f is not None and "max_rel: regressed" in f.text)
EOF
is "1 1 True" "$OUT" "JUnit: valid XML, one testcase, a <failure> carrying the max_rel line"

cp "$FIX/mini27-f32.gguf" "$T/model.gguf"
run_cmd "$KESTREL_EVAL" run "$T/acc.yaml" --db "$DB"
run_cmd "$KESTREL_EVAL" report --against acc-main --db "$DB"
is "0|ok" "$RC|$(verdict_of acc-oracle)" "original model restored: ok, exit 0"
run_cmd "$KESTREL_EVAL" report --against acc-main --format junit --db "$DB"
ok "! printf '%s' \"\$OUT\" | grep -q '<failure'" "JUnit of the restored run has no failure"

# without --against: the suite's `baseline:` key (read from the suite file of the run)
run_cmd "$KESTREL_EVAL" report --db "$DB"
like "$OUT" '^against: nothing' "no --against and no suite baseline: gates only"
echo "baseline: acc-main" >>"$T/acc.yaml"
run_cmd "$KESTREL_EVAL" report --db "$DB"
like "$OUT" "^against: baseline 'acc-main' \(run 1, from the suite\)" "no --against: the suite's baseline is used"
done_testing
