#!/usr/bin/env bash
# The headless-browser test of `job-decider simulate --html/--svg`: every bundled example
# in examples/simulate/ (and each comparison) is rendered, opened in headless Chromium,
# and what the browser shows is checked against the example's own `-o json` timeline:
# one row per index (or pod), one visible bar per attempt with its outcome's class, the
# summary lines of expected.txt, one table row per event. The SVG alone must be
# well-formed XML (Python's parser, and Chromium's XML parser shows no error). One
# screenshot is taken and must be a real PNG.
#
# Needs /usr/bin/chromium (tools/install-chromium.sh) and python3. JOB_DECIDER=path uses
# that binary instead of building target/debug/job-decider; BROWSER_TEST_OUT=dir keeps
# the reports, DOM dumps and the screenshot there.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
chromium="${CHROMIUM:-/usr/bin/chromium}"

if [[ ! -x "$chromium" ]]; then
	echo "browser-test: $chromium is missing: run tools/install-chromium.sh (make tools)" >&2
	exit 1
fi
if [[ -z "${JOB_DECIDER:-}" ]]; then
	(cd "$root" && cargo build --quiet --bin job-decider)
	JOB_DECIDER="$root/target/debug/job-decider"
fi
work="$(mktemp -d)"
profile="$(mktemp -d)"
trap 'rm -rf "$work" "$profile"' EXIT
out="${BROWSER_TEST_OUT:-$work}"
mkdir -p "$out"

browse() { # browse URL ARGS...: headless Chromium, no network, a throwaway profile
	local url="$1"
	shift
	timeout 120 "$chromium" --headless --no-sandbox --disable-gpu --disable-quic --no-first-run \
		--disable-background-networking --disable-component-update --disable-sync \
		--disable-extensions --user-data-dir="$profile" "$@" "$url" 2>"$work/chromium.log"
}

# What the page shows once laid out: appended to a copy of the report, it writes the
# rows, the bars' boxes and classes and the visible texts into the DOM that --dump-dom prints.
probe='<script>(function(){
var svgs=[].slice.call(document.querySelectorAll("svg.gantt"));
var box=function(e){var r=e.getBoundingClientRect();return {x:r.left,y:r.top,w:r.width,h:r.height};};
var panels=[].slice.call(document.querySelectorAll("svg.gantt g.panel")).map(function(p){
 return {rows:[].slice.call(p.querySelectorAll("g.row")).map(function(r){return r.getAttribute("data-row");}),
  marks:[].slice.call(p.querySelectorAll("g.mark text")).map(function(t){return t.textContent;}),
  gaps:p.querySelectorAll("g.gap").length,backoff:p.querySelectorAll("rect.backoff").length,
  bars:[].slice.call(p.querySelectorAll("rect.bar")).map(function(b){var o=box(b);o.cls=b.getAttribute("class");return o;})};});
var res={svgs:svgs.map(box),panels:panels,
 summary:(document.querySelector("#summary")||{innerText:""}).innerText,
 events:[].slice.call(document.querySelectorAll("section.events")).map(function(s){return s.querySelectorAll("tbody tr").length;})};
var pre=document.createElement("pre");pre.id="probe";pre.textContent=JSON.stringify(res);document.body.appendChild(pre);})();</script>'

check() { # check KIND DIR NAME JSON... : run the Python checks on one report
	python3 - "$@" <<'PY'
import html, json, re, sys, xml.etree.ElementTree as ET
kind, ex, name, dom_file, svg_file, svg_dom_file = sys.argv[1:7]
timelines = [json.load(open(f)) for f in sys.argv[7:]]
def fail(msg):
    sys.exit(f"browser-test: {name}: {msg}")
dom = open(dom_file).read()
m = re.search(r'<pre id="probe">(.*?)</pre>', dom, re.S)
if not m:
    fail("the probe found nothing (did the page load?)")
seen = json.loads(html.unescape(m.group(1)))
if len(seen["svgs"]) != 1 or seen["svgs"][0]["w"] < 600:
    fail(f"the chart is not shown: {seen['svgs']}")
svg_box = seen["svgs"][0]
if len(seen["panels"]) != len(timelines):
    fail(f"{len(seen['panels'])} panels for {len(timelines)} timelines")
known = {"o-succeeded", "o-counted", "o-ignored", "o-fatal", "o-disrupted", "o-deleted",
         "o-restarted", "o-running", "o-pending"}
MAX_ROWS, MAX_EVENT_ROWS = 150, 2000  # crates/sim/src/render/mod.rs
for t, panel in zip(timelines, seen["panels"]):
    attempts = t["attempts"]
    indexed = any("index" in a for a in attempts)
    key = (lambda a: a["index"]) if indexed else (lambda a: a["pod"])
    rows = {}
    for a in attempts:
        rows.setdefault(key(a), []).append(a)
    capped = len(rows) > MAX_ROWS
    if capped:
        # The chart keeps the rows with a story first (not one attempt that succeeded).
        plain = lambda k: len(rows[k]) == 1 and rows[k][0]["outcome"] == "succeeded"
        order = list(rows)
        kept = set(sorted(order, key=lambda k: (plain(k), order.index(k)))[:MAX_ROWS])
        attempts = [a for a in attempts if key(a) in kept]
    if indexed:
        want_rows = [f"index {i}" for i in sorted({a["index"] for a in attempts})]
    else:
        want_rows = list(dict.fromkeys(a["pod"] for a in attempts))
    if panel["rows"] != want_rows:
        fail(f"rows {panel['rows']}, want {want_rows}")
    bars = panel["bars"]
    if len(bars) != len(attempts):
        fail(f"{len(bars)} bars for {len(attempts)} attempts")
    for b in bars:
        if b["w"] <= 0 or b["h"] <= 0:
            fail(f"an invisible bar: {b}")
        if not (svg_box["x"] - 1 <= b["x"] and b["x"] + b["w"] <= svg_box["x"] + svg_box["w"] + 1):
            fail(f"a bar outside the chart: {b}")
    classes = [set(b["cls"].split()) & known for b in bars]
    if any(len(c) != 1 for c in classes):
        fail(f"a bar without exactly one outcome class: {[b['cls'] for b in bars]}")
    count = lambda cls: sum(cls in c for c in classes)
    s = t["summary"]
    want = {
        "o-succeeded": sum(a["outcome"] == "succeeded" for a in attempts),
        "o-running": sum(a["outcome"] == "running" for a in attempts),
    }
    if not capped:
        want["o-ignored"] = s["failuresIgnored"]
    for cls, n in want.items():
        if count(cls) != n:
            fail(f"{count(cls)} bars {cls}, the timeline says {n}")
    # A mark per condition change, labelled with its type.
    conditions = [e["detail"] for e in t["events"] if e["kind"] == "condition"]
    if len(panel["marks"]) != len(conditions):
        fail(f"{len(panel['marks'])} condition marks for {len(conditions)} changes")
    for label, detail in zip(panel["marks"], conditions):
        kind = detail.split("=")[0]
        if label != kind and not (kind == "Suspended" and label == "Resumed") and not label.startswith(kind + "="):
            fail(f"mark {label!r} for {detail!r}")
    # A drawn wait wherever a row's next attempt starts after the previous one ended.
    rows = {}
    for a in attempts:
        rows.setdefault(a.get("index", a["pod"]), []).append(a)
    gaps = 0
    for row in rows.values():
        for prev, nxt in zip(row, row[1:]):
            start = nxt.get("startedMs", nxt["createdMs"]) if nxt["pod"] == prev["pod"] else nxt["createdMs"]
            if start > prev.get("endedMs", start):
                gaps += 1
    if panel["gaps"] != gaps:
        fail(f"{panel['gaps']} waits drawn, the attempts have {gaps}")
    if (t["summary"]["backoffWaits"] > 0) != (panel["backoff"] > 0):
        fail(f"{panel['backoff']} backoff bands for {t['summary']['backoffWaits']} backoff waits")
    failed = sum(a["outcome"] == "failed" for a in attempts)
    reds = sum(count(c) for c in ("o-counted", "o-ignored", "o-fatal", "o-disrupted", "o-deleted", "o-restarted"))
    if reds < failed:
        fail(f"{reds} failure bars for {failed} failed attempts")
if seen["events"] != [min(len(t["events"]), MAX_EVENT_ROWS) for t in timelines]:
    fail(f"event rows {seen['events']}, events {[len(t['events']) for t in timelines]}")
# The summary lines of the expected text, as the browser shows them.
flat = lambda x: " ".join(x.split())
shown = flat(seen["summary"])
expected = open(f"{ex}/{'compare.expected.txt' if kind == 'compare' else 'expected.txt'}").read()
if kind == "single":
    lines = expected.rstrip("\n").split("\n\n")[-1].splitlines()  # the summary: the last paragraph
    for line in lines:
        if line.strip() and flat(line) not in shown:
            fail(f"the summary does not show {line!r}")
else:
    for t in timelines:
        for key in ("result", "wallTime"):
            if t["summary"][key] not in shown:
                fail(f"the summary does not show {t['summary'][key]!r}")
# The SVG alone: well-formed XML, and Chromium's XML parser agrees.
root = ET.parse(svg_file).getroot()
if root.tag != "{http://www.w3.org/2000/svg}svg":
    fail(f"the SVG's root is {root.tag}")
bars = [e for e in root.iter("{http://www.w3.org/2000/svg}rect") if "bar" in e.get("class", "").split()]
if len(bars) != sum(len(p["bars"]) for p in seen["panels"]):
    fail(f"the SVG file has {len(bars)} bars, the page {sum(len(p['bars']) for p in seen['panels'])}")
if "parsererror" in open(svg_dom_file).read():
    fail("Chromium cannot parse the SVG file")
print(f"browser-test: {name}: {sum(len(p['rows']) for p in seen['panels'])} rows, "
      f"{sum(len(p['bars']) for p in seen['panels'])} bars, {sum(p['gaps'] for p in seen['panels'])} waits, "
      f"{sum(len(p['marks']) for p in seen['panels'])} marks, {sum(seen['events'])} events: ok")
PY
}

render() { # render NAME DIR ARGS...: the report, the SVG, the JSON timelines, the DOMs
	local name="$1" dir="$2"
	shift 2
	"$JOB_DECIDER" simulate --job "$dir/job.yaml" --script "$dir/script.yaml" "$@" \
		--html "$out/$name.html" --svg "$out/$name.svg" >/dev/null
	PROBE="$probe" python3 -c 'import os, sys
page = open(sys.argv[1]).read()
head, tail = page.rsplit("</body>", 1)
sys.stdout.write(head + os.environ["PROBE"] + "</body>" + tail)' "$out/$name.html" >"$work/$name.probe.html"
	browse "file://$work/$name.probe.html" --dump-dom >"$out/$name.dom.html"
	browse "file://$out/$name.svg" --dump-dom >"$out/$name.svg.dom"
}

n=0
for dir in "$root"/examples/simulate/*/; do
	dir="${dir%/}"
	ex="$(basename "$dir")"
	"$JOB_DECIDER" simulate --job "$dir/job.yaml" --script "$dir/script.yaml" -o json >"$work/$ex.json"
	render "$ex" "$dir"
	check single "$dir" "$ex" "$out/$ex.dom.html" "$out/$ex.svg" "$out/$ex.svg.dom" "$work/$ex.json"
	n=$((n + 1))
	if [[ -f "$dir/compare.yaml" ]]; then
		"$JOB_DECIDER" simulate --job "$dir/compare.yaml" --script "$dir/script.yaml" -o json >"$work/$ex.right.json"
		render "$ex.compare" "$dir" --compare "$dir/compare.yaml"
		check compare "$dir" "$ex.compare" "$out/$ex.compare.dom.html" "$out/$ex.compare.svg" \
			"$out/$ex.compare.svg.dom" "$work/$ex.json" "$work/$ex.right.json"
		n=$((n + 1))
	fi
done
if ((n == 0)); then
	echo "browser-test: no examples in examples/simulate" >&2
	exit 1
fi

# The Monte Carlo report of the training-run example (two policies over the same lives):
# every histogram laid out with bars and every CDF with a curve per Job, and the page's
# Result row the text report's. A few lives: this checks the page, not the odds.
ex=plan-a-training-run
dir="$root/examples/simulate/$ex"
"$JOB_DECIDER" simulate --quiet --job "$dir/job.yaml" --script "$dir/script.yaml" --runs 6 \
	--compare "$dir/compare.yaml" --html "$out/$ex.mc.html" >"$work/$ex.mc.txt"
mc_probe='<script>(function(){
var box=function(e){var r=e.getBoundingClientRect();return {w:r.width,h:r.height};};
var charts=[].slice.call(document.querySelectorAll("svg.mc")).map(function(s){var o=box(s);
 o.cls=s.getAttribute("class");o.label=s.getAttribute("aria-label");
 o.bars=[].slice.call(s.querySelectorAll("rect")).filter(function(r){var b=box(r);return b.w>0&&b.h>0;}).length;
 o.curves=[].slice.call(s.querySelectorAll("polyline")).filter(function(l){var b=box(l);return b.w>0;}).length;return o;});
var pre=document.createElement("pre");pre.id="probe";
pre.textContent=JSON.stringify({charts:charts,text:document.body.innerText});document.body.appendChild(pre);})();</script>'
PROBE="$mc_probe" python3 -c 'import os, sys
page = open(sys.argv[1]).read()
head, tail = page.rsplit("</body>", 1)
sys.stdout.write(head + os.environ["PROBE"] + "</body>" + tail)' "$out/$ex.mc.html" >"$work/$ex.mc.probe.html"
browse "file://$work/$ex.mc.probe.html" --dump-dom >"$out/$ex.mc.dom.html"
python3 - "$out/$ex.mc.dom.html" "$work/$ex.mc.txt" <<'PY'
import html, json, re, sys
dom, text = open(sys.argv[1]).read(), open(sys.argv[2]).read()
def fail(msg):
    sys.exit(f"browser-test: Monte Carlo report: {msg}")
m = re.search(r'<pre id="probe">(.*?)</pre>', dom, re.S)
if not m:
    fail("the probe did not run")
seen = json.loads(html.unescape(m.group(1)))
charts = seen["charts"]
hist = [c for c in charts if "histogram" in c["cls"]]
cdf = [c for c in charts if "cdf" in c["cls"]]
if len(hist) < 4 or len(cdf) != len(hist):
    fail(f"{len(hist)} histograms and {len(cdf)} CDFs")
for c in charts:
    if c["w"] < 200 or c["h"] < 100:
        fail(f"{c['label']} is laid out {c['w']}x{c['h']}")
for c in hist:
    if c["bars"] < 1:
        fail(f"{c['label']} shows no bar")
for c in cdf:
    if c["curves"] != 2:
        fail(f"{c['label']} shows {c['curves']} curves for two Jobs")
results = re.findall(r"^\*? *Result: +(.*)$\n +(.*)$", text, re.M)
if len(results) != 1:
    fail(f"the text report has {len(results)} Result rows")
for value in results[0]:
    if value.strip() not in seen["text"]:
        fail(f"the page does not show the Result {value.strip()!r}")
print(f"browser-test: Monte Carlo report: {len(hist)} histograms, {len(cdf)} CDFs, "
      f"{sum(c['bars'] for c in hist)} bars, Result rows as the text's: ok")
PY
n=$((n + 1))

# The check can fail: the same report with one bar's outcome class taken away must be refused.
ex=what-if-oom-and-drain
python3 -c 'import sys
page = open(sys.argv[1]).read()
sys.stdout.write(page.replace("<rect class=\"bar o-succeeded", "<rect class=\"bar", 1))' \
	"$work/$ex.probe.html" >"$work/tampered.html"
browse "file://$work/tampered.html" --dump-dom >"$work/tampered.dom.html"
if check single "$root/examples/simulate/$ex" tampered "$work/tampered.dom.html" "$out/$ex.svg" \
	"$out/$ex.svg.dom" "$work/$ex.json" 2>"$work/tampered.err"; then
	echo "browser-test: a report missing a bar's class passed the check" >&2
	exit 1
fi
echo "browser-test: a tampered report is refused: $(cat "$work/tampered.err")"

# A screenshot of one report: a PNG of the page's size, not an error page.
shot="$out/what-if-oom-and-drain.png"
browse "file://$out/what-if-oom-and-drain.html" --screenshot="$shot" --window-size=1280,1000 \
	--hide-scrollbars >/dev/null 2>&1 || true
python3 - "$shot" <<'PY'
import struct, sys
data = open(sys.argv[1], "rb").read()
if data[:8] != b"\x89PNG\r\n\x1a\n":
    sys.exit("browser-test: the screenshot is not a PNG")
w, h = struct.unpack(">II", data[16:24])
if (w, h) != (1280, 1000) or len(data) < 20000:
    sys.exit(f"browser-test: the screenshot is {w}x{h}, {len(data)} bytes")
print(f"browser-test: screenshot {w}x{h}, {len(data)} bytes: ok")
PY
echo "browser-test: $n reports checked in $("$chromium" --version 2>/dev/null | head -1)"
