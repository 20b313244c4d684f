# tests/ab-lib.sh - shared setup of the ab-*.sh tests (sourced after tests/lib.sh):
# the fault test engine (D2's tests/engines/fault_engine.c: sleep_us=N slows every
# forward call), a tiny generated model (one layer, vocab 64: its compute is ~0.1 ms a
# step, so the fixed sleeps dominate even on a loaded machine) and a suite with one
# decode-bench case on it.
FAULT=$top_builddir/tests/engines/.libs/libkestrel-fault.so
CPU=${KESTREL_ENGINE_DIR:-$top_builddir/engines}/libkestrel-cpu.so
[ -f "$FAULT" ] || skip_all "fault test engine not built ($FAULT)"
[ -f "$CPU" ] || skip_all "CPU engine not built ($CPU)"
"$KESTREL_EVAL" gen-model --preset tiny --type q8_0 --layers 1 --vocab 64 --seed 5 -o "$T/tiny.gguf" >/dev/null 2>"$T/gen.err" ||
  { echo "Bail out! gen-model failed: $(cat "$T/gen.err")"; exit 1; }
cat >"$T/ab.yaml" <<YAML
suite: ab-test
engines:
  bench:
    lib: $FAULT
    options: sleep_us=5000
models:
  tiny: tiny.gguf
defaults:
  engine: bench
  timeout: 60
  warmup: 2
  iterations: 12
  threads: 1
cases:
  - name: tiny-decode
    kind: decode-bench
    model: tiny
    prompt_len: 4
    step_tokens: 1
    # a loaded 2-core CI machine drifts by several % between processes (seen: 17% between
    # two runs of one engine), so the A/A test asks for a 25% effect; the slowed B is 20x
    gates: {min_effect: 0.25}
  - name: tiny-decode-floor
    kind: decode-bench
    model: tiny
    prompt_len: 4
    step_tokens: 1
    # for the middle verdict: a 10 vs 16 ms step (ratio ~1.6) is consistent but under this floor
    gates: {min_effect: 0.9}
  - name: tiny-decode-short
    kind: decode-bench
    model: tiny
    prompt_len: 4
    timeout: 2
  - name: bw
    kind: bandwidth
    bytes: 1048576
    iterations: 3
YAML
# q SQL: one value from the ab database
q() { sqlite3 "$T/ab.db" "$1" 2>&1; }
command -v sqlite3 >/dev/null 2>&1 || skip_all "no sqlite3 command line tool"
