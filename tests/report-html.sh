#!/bin/bash
# report-html.sh - `report --format html`: one self-contained file (no URLs,
# no src/href/url()/@import, so no network requests are possible) whose inline
# SVG charts (ms/token median and max_rel over the last N runs, the current run
# marked) render in headless Chromium: the dumped DOM holds the charts.
. "$top_srcdir/tests/lib.sh"
. "$top_srcdir/tests/report-lib.sh"
need_sqlite3
plan 10

DB=$T/h.db
newdb "$DB"
M=$(sha_of model)
for r in 1 2 3 4 5 6; do
  add_run "$DB" $r "$(sha_of engine-$r)" "$M"
  add_case "$DB" $r $((r * 10 + 1)) acc oracle pass
  add_metric "$DB" $((r * 10 + 1)) max_rel "${r}e-6" '<= 1e-05' 1
  add_case "$DB" $r $((r * 10 + 2)) speed decode-bench pass
  add_metric "$DB" $((r * 10 + 2)) ms_per_token_median "1$r.5"
  add_samples "$DB" $((r * 10 + 2)) ms_per_token $(seq_samples "1$r" 0.01 10)
done
sql "$DB" "INSERT INTO baselines (name, run_id, created_at) VALUES ('b', 1, '2026-11-29T00:00:00Z')"

run_cmd "$KESTREL_EVAL" report 5 --against b --format html --last 4 -o "$T/r.html" --db "$DB"
is 1 "$RC" "html report: exit 1 (regressions against run 1)"
H=$(cat "$T/r.html")
is 2 "$(grep -c '<svg class="chart"' "$T/r.html")" "one chart per metric with history: 2 charts (acc max_rel, speed ms/token)"
is 2 "$(grep -c 'class="pt current"' "$T/r.html")" "the current run is marked in each chart"
is 8 "$(grep -c '<circle' "$T/r.html")" "--last 4: four points per chart, none after the current run"
ok "! grep -Eiq 'https?://|[^a-z]src=|href=|url\\(|@import' '$T/r.html'" "self-contained: no URL, src, href, url() or @import"

CHROMIUM=$(command -v chromium || command -v chromium-browser || command -v google-chrome || true)
if [ -z "$CHROMIUM" ]; then
  for i in 6 7 8 9 10; do echo "ok $i # SKIP no chromium (Debian package chromium)"; done
  exit 0
fi
chrome() {
  timeout 120 "$CHROMIUM" --headless --no-sandbox --disable-gpu --disable-background-networking \
    --disable-component-update --disable-sync --no-first-run --disable-dev-shm-usage \
    --user-data-dir="$(mktemp -d "$T/chrome.XXXXXX")" "$@" 2>>"$T/chrome.err"
}
chrome --dump-dom "file://$T/r.html" >"$T/dom.html"
ok "[ -s '$T/dom.html' ]" "chromium rendered the report (dumped DOM)"
is 2 "$(grep -o '<svg class="chart"' "$T/dom.html" | wc -l | tr -d ' ')" "the rendered DOM holds both SVG charts"
is 2 "$(grep -o '<polyline class="line"' "$T/dom.html" | wc -l | tr -d ' ')" "each chart has its line"
chrome --screenshot="$T/shot.png" --window-size=1000,1400 "file://$T/r.html" >/dev/null
ok "[ -s '$T/shot.png' ] && [ \"\$(head -c 4 '$T/shot.png' | od -An -tx1 | tr -d ' ')\" = 89504e47 ]" "screenshot written (PNG)"
[ -n "${KESTREL_KEEP_SCREENSHOT:-}" ] && cp "$T/shot.png" "$KESTREL_KEEP_SCREENSHOT"
ok "! grep -Eiq 'net::|ERR_' '$T/chrome.err'" "chromium logged no network errors"
done_testing
