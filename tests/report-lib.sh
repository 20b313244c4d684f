# tests/report-lib.sh - helpers for the report/baseline/history/query tests
# (sourced after tests/lib.sh). They build results databases row by row with
# the sqlite3 CLI so every rule of docs/methodology.md can be exercised with
# exact, known numbers; the end-to-end tests use real `kestrel-eval run`s.
#
#   newdb DB                                  schema from schemas/results.sql
#   add_run DB RUN ENGINE_SHA MODEL_SHA [GPU] a passed run with engine/model/oracle artifacts
#   add_case DB RUN CASE NAME KIND STATUS [PARAMS_JSON] [ERROR]
#   add_metric DB CASE NAME VALUE [GATE GATE_PASS [TEXT]]
#   add_samples DB CASE SERIES V...           samples idx 0..
#   add_output_i32 DB CASE NAME V...          an archived i32 output (codec raw)
#   sha_of TEXT                               64 hex chars (a fake file hash)

need_sqlite3() { command -v sqlite3 >/dev/null 2>&1 || skip_all "no sqlite3 CLI (Debian package sqlite3)"; }

sql() { sqlite3 -bail "$@"; }

newdb() { rm -f "$1"; sql "$1" <"$top_srcdir/schemas/results.sql"; }

sha_of() { printf '%s' "$1" | sha256sum | cut -c1-64; }

add_run() { # DB RUN ENGINE_SHA MODEL_SHA [GPU]
  local db=$1 r=$2 e=$3 m=$4 gpu=${5:-}
  sql "$db" "INSERT INTO runs (id, started_at, ended_at, status, suite_name, host, gpu_name, gpu_driver, pid)
    VALUES ($r, '2026-11-29T10:$(printf %02d "$r"):00Z', '2026-11-29T10:$(printf %02d "$r"):30Z', 'passed', 'unit',
            'host-a', NULLIF('$gpu', ''), NULL, 1000 + $r);
    INSERT INTO artifacts (id, run_id, kind, name, path, sha256) VALUES
      ($r * 10 + 1, $r, 'engine', 'cpu', '/x/libkestrel-cpu.so', '$e'),
      ($r * 10 + 2, $r, 'model', 'mini', '/x/mini.gguf', '$m'),
      ($r * 10 + 3, $r, 'oracle', 'mini', '/x/mini.oracle.gguf.zst', '$(sha_of oracle)');"
}

add_case() { # DB RUN CASE NAME KIND STATUS [PARAMS] [ERROR]
  local params=${7:-}
  local error=${8:-}
  sql "$1" "INSERT INTO cases (id, run_id, name, kind, status, error, engine_artifact, model_artifact,
      oracle_artifact, params) VALUES ($3, $2, '$4', '$5', '$6', NULLIF('$error', ''), $2 * 10 + 1, $2 * 10 + 2,
      $2 * 10 + 3, NULLIF('$params', ''));"
}

add_metric() { # DB CASE NAME VALUE [GATE GATE_PASS [TEXT]]
  local gate=${5:-} pass=${6:-} text=${7:-}
  sql "$1" "INSERT INTO metrics (case_id, name, value, gate, gate_pass, text) VALUES ($2, '$3', $4,
      NULLIF('$gate', ''), NULLIF('$pass', ''), NULLIF('$text', ''));"
}

add_samples() { # DB CASE SERIES V...
  local db=$1 c=$2 s=$3 i=0 values=""
  shift 3
  for v in "$@"; do values="$values${values:+,}($c, '$s', $i, $v)"; i=$((i + 1)); done
  sql "$db" "INSERT INTO samples (case_id, series, idx, value) VALUES $values;"
}

add_output_i32() { # DB CASE NAME V...
  local db=$1 c=$2 name=$3 hex="" esc="" n=0
  shift 3
  for v in "$@"; do
    local h
    h=$(printf '%08x' "$v")
    h=${h:6:2}${h:4:2}${h:2:2}${h:0:2} # little-endian
    hex=$hex$h
    esc=$esc'\x'${h:0:2}'\x'${h:2:2}'\x'${h:4:2}'\x'${h:6:2}
    n=$((n + 1))
  done
  local sha
  sha=$(printf "$esc" | sha256sum | cut -c1-64)
  sql "$db" "INSERT INTO outputs (case_id, name, dtype, shape, n_elements, sha256, codec, data)
      VALUES ($c, '$name', 'i32', '[$n]', $n, '$sha', 'raw', X'$hex');"
}

# seq_samples START STEP N: START, START+STEP, ... (N values, awk arithmetic)
seq_samples() { awk -v s="$1" -v d="$2" -v n="$3" 'BEGIN { for (i = 0; i < n; i++) printf "%.6f ", s + d * i }'; }
