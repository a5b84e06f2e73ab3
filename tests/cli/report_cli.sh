#!/usr/bin/env bash
# Integration test: `roll report` on a synthetic run folder draws valid PNG charts with gnuplot and
# writes an HTML page that headless Chromium opens without console errors and with every image
# loaded; the page check is shown to fail on a page with a script error and a missing image.
# Also: a malformed metrics.jsonl line names file and line, a missing gnuplot is a clear error, and a
# folder above several runs gets a report per run plus an index.
set -euo pipefail
roll="$(realpath "$1")"
fail() { echo "FAIL: $*"; exit 1; }
out=$(mktemp -d); trap 'rm -rf "$out"' EXIT
py=/usr/bin/python3  # Debian's python3 (the one scripts/setup installs)

command -v chromium >/dev/null 2>&1 ||
  fail "chromium is not installed: this test opens the report in headless Chromium (scripts/setup installs Debian's chromium)"
command -v gnuplot >/dev/null 2>&1 || fail "gnuplot is not installed (scripts/setup installs Debian's gnuplot-nox)"

# A run as the jsonl tracker writes it: 30 steps, validation every 5, a bool, a null, a string.
run="$out/runs/exp/demo-cpu/20261201-094541"
mkdir -p "$run"
"$py" - "$run" <<'EOF'
import json, math, sys
d = sys.argv[1]
with open(f"{d}/metrics.jsonl", "w") as f:
    for s in range(30):
        m = {
            "critic/score/mean": 0.2 + 0.02 * s, "critic/rewards/mean": 0.1 + 0.02 * s,
            "env/FrozenLake/success": min(1.0, 0.1 + 0.03 * s), "tokens/response_length/mean": 40 - 0.5 * s,
            "critic/kl": 0.001 * s, "actor/approxkl": 0.0005 * s, "actor/kl_loss": 0.002 * s,
            "actor/entropy": 1.5 - 0.02 * s, "actor_train/grad_norm": 1.0 + math.sin(s),
            "system/tps": 300 + s, "time/step_rollout": 2.0, "time/step_train": 1.5, "time/step_total": 3.6,
            "actor/pg_loss": 0.1, "system/step": s, "note": "text is not charted", "flag": s % 2 == 0,
            "gone": None,
        }
        if s % 5 == 0:
            m["val/env/FrozenLake/success"] = 0.1 + 0.02 * s
            m["time/val_step"] = 0.7
        f.write(json.dumps({"step": s, "metrics": m}, separators=(",", ":")) + "\n")
with open(f"{d}/hparams.json", "w") as f:
    json.dump({"exp_name": "demo-cpu", "seed": 42, "actor_train.model_args.dtype": "fp32", "odd": "<b>&</b>"}, f, indent=2)
EOF

"$roll" report "$run" >"$out/stdout.txt" 2>"$out/stderr.txt" || fail "roll report: $(cat "$out/stderr.txt")"
rep="$run/report"
[ -f "$rep/index.html" ] || fail "no index.html"
grep -q "report/index.html (9 charts)" "$out/stdout.txt" || fail "stdout: $(cat "$out/stdout.txt")"

# Every chart the metrics call for, each a valid PNG (signature, IHDR first, non-zero size).
for chart in rewards success response_length loss kl entropy grad_norm throughput time_per_phase; do
  [ -f "$rep/$chart.png" ] || fail "no $chart.png"
  grep -q "<img src=\"$chart.png\"" "$rep/index.html" || fail "index.html does not show $chart.png"
done
"$py" - "$rep" <<'EOF' || fail "invalid PNG"
import glob, struct, sys
pngs = sorted(glob.glob(sys.argv[1] + "/*.png"))
assert len(pngs) == 9, pngs
for p in pngs:
    head = open(p, "rb").read(33)
    assert head[:8] == b"\x89PNG\r\n\x1a\n", f"{p}: no PNG signature"
    length, kind = struct.unpack(">I4s", head[8:16])
    assert kind == b"IHDR" and length == 13, f"{p}: first chunk is not IHDR"
    w, h = struct.unpack(">II", head[16:24])
    assert w > 0 and h > 0, f"{p}: size {w}x{h}"
EOF
grep -q "val/env/FrozenLake/success" "$rep/index.html" || fail "the sparse validation series is not on the page"
grep -q "&lt;b&gt;&amp;&lt;/b&gt;" "$rep/index.html" || fail "hparams are not escaped"
grep -q "<code>critic/score/mean</code></td><td class=\"num\">0.2 <small>(step 0)</small>" "$rep/index.html" ||
  fail "summary row of critic/score/mean"
! grep -qiE "<script|https?:|<link" "$rep/index.html" || fail "index.html is not self-contained"

# check_page DIR: opens DIR/index.html in headless Chromium; prints the problems, fails on any.
# Two views: Chromium's console log of the page as written, and a copy of the page with a hook
# (window errors, failed resources, console.error, images not decoded) that writes into the DOM
# Chromium dumps.
check_page() {
  local dir="$1" profile problems
  profile=$(mktemp -d)
  timeout 90 chromium --headless --no-sandbox --disable-gpu --disable-background-networking \
    --disable-component-update --no-first-run --user-data-dir="$profile" --enable-logging=stderr --v=0 \
    --dump-dom "file://$dir/index.html" >"$dir/.dom.txt" 2>"$dir/.console.txt" || true
  rm -rf "$profile"
  problems=$(grep -E ':CONSOLE\(|:CONSOLE:|Uncaught' "$dir/.console.txt" || true)
  "$py" - "$dir" <<'EOF'
import sys
d = sys.argv[1]
hook = """<script>
window.__problems = [];
window.addEventListener("error", function (e) {
  window.__problems.push(e.target && e.target.src ? "failed to load " + e.target.getAttribute("src") : "error: " + e.message);
}, true);
var __ce = console.error;
console.error = function () { window.__problems.push("console.error: " + Array.prototype.join.call(arguments, " ")); __ce.apply(console, arguments); };
window.addEventListener("load", function () {
  document.querySelectorAll("img").forEach(function (i) {
    if (!i.complete || i.naturalWidth === 0) window.__problems.push("image not shown: " + i.getAttribute("src"));
  });
  var p = document.createElement("pre");
  p.id = "page-check";
  p.textContent = window.__problems.length ? window.__problems.join("\\n") : "PAGE-CHECK-OK";
  document.body.appendChild(p);
});
</script>"""
html = open(f"{d}/index.html").read()
assert "<head>" in html, "no <head> in index.html"
open(f"{d}/.check.html", "w").write(html.replace("<head>", "<head>\n" + hook, 1))
EOF
  profile=$(mktemp -d)
  timeout 90 chromium --headless --no-sandbox --disable-gpu --disable-background-networking \
    --disable-component-update --no-first-run --user-data-dir="$profile" --virtual-time-budget=5000 \
    --dump-dom "file://$dir/.check.html" >"$dir/.check-dom.txt" 2>/dev/null || true
  rm -rf "$profile"
  "$py" - "$dir/.check-dom.txt" <<'EOF' >"$dir/.check-result.txt" || true
import html, re, sys
m = re.search(r'<pre id="page-check">(.*?)</pre>', open(sys.argv[1]).read(), re.S)
print(html.unescape(m.group(1)) if m else "the page check did not run (no page-check element in the dumped DOM)")
EOF
  if [ "$(cat "$dir/.check-result.txt")" != PAGE-CHECK-OK ]; then problems+=$'\n'"$(cat "$dir/.check-result.txt")"; fi
  rm -f "$dir"/.dom.txt "$dir"/.check.html "$dir"/.check-dom.txt "$dir"/.check-result.txt
  [ -z "${problems//[$'\n ']/}" ] || { echo "$problems"; return 1; }
  rm -f "$dir/.console.txt"
}

check_page "$rep" >"$out/page.txt" || fail "index.html in Chromium: $(cat "$out/page.txt")"

# The check can fail: a copy with a script error and a missing image must be caught by both views.
bad="$out/bad"
cp -r "$rep" "$bad"
rm "$bad/kl.png"
sed -i 's|</body>|<script>no_such_function();</script></body>|' "$bad/index.html"
if check_page "$bad" >"$out/bad-page.txt"; then fail "the page check passed a page with a JS error and a missing image"; fi
grep -q "Uncaught ReferenceError" "$out/bad-page.txt" || fail "the JS error was not reported: $(cat "$out/bad-page.txt")"
grep -q "kl.png" "$out/bad-page.txt" || fail "the missing image was not reported: $(cat "$out/bad-page.txt")"

# A malformed line in the middle names the file and the line; nothing is drawn.
broken="$out/broken"
mkdir -p "$broken"
head -n 3 "$run/metrics.jsonl" >"$broken/metrics.jsonl"
echo '{"step": 3, "metrics": {"a": ' >>"$broken/metrics.jsonl"
tail -n 2 "$run/metrics.jsonl" >>"$broken/metrics.jsonl"
set +e
"$roll" report "$broken" 2>"$out/err.txt"
rc=$?
set -e
[ "$rc" = 1 ] || fail "malformed metrics.jsonl: exit $rc, expected 1"
grep -q "$broken/metrics.jsonl:4: not JSON" "$out/err.txt" || fail "error message: $(cat "$out/err.txt")"

# Without gnuplot on PATH: a clear error.
set +e
PATH=/nonexistent "$roll" report "$run" 2>"$out/err.txt"
rc=$?
set -e
[ "$rc" = 1 ] || fail "no gnuplot: exit $rc, expected 1"
grep -q "needs gnuplot" "$out/err.txt" || fail "no-gnuplot message: $(cat "$out/err.txt")"

# A relative RUN_DIR (gnuplot works in the report folder, so paths must not stay relative).
(cd "$out/runs/exp" && "$roll" report demo-cpu/20261201-094541 >/dev/null 2>"$out/stderr.txt") ||
  fail "relative RUN_DIR: $(cat "$out/stderr.txt")"

# A folder above two runs: a report for each and an index linking both.
second="$out/runs/exp/other-cpu/20261201-100000"
mkdir -p "$second"
head -n 4 "$run/metrics.jsonl" >"$second/metrics.jsonl"
"$roll" report "$out/runs" >"$out/stdout.txt" 2>"$out/stderr.txt" || fail "roll report on a parent: $(cat "$out/stderr.txt")"
[ -f "$second/report/index.html" ] || fail "no report for the second run"
[ -f "$out/runs/report/index.html" ] || fail "no index of the runs"
grep -q 'href="../exp/other-cpu/20261201-100000/report/index.html"' "$out/runs/report/index.html" ||
  fail "runs index: $(cat "$out/runs/report/index.html")"
check_page "$out/runs/report" >"$out/page.txt" || fail "runs index in Chromium: $(cat "$out/page.txt")"
check_page "$second/report" >"$out/page.txt" || fail "second report in Chromium: $(cat "$out/page.txt")"
echo "ok"
