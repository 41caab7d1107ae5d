#!/usr/bin/env bash
# The Rust client's checks against a live server (JOB_DECIDER_ADDR; tools/with-server.sh sets it):
# both examples of crates/k8s on the bundled FailJob example, each compared with what
# `job-decider decide -o json` prints for the same files, and a bad Job whose error must
# name the field; then job-decider-k8s built against every Kubernetes version k8s-openapi has. The in-process equivalence tests (every vector and example) are
# tests/it/k8s_openapi.rs, run by `cargo test`.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$root"
: "${JOB_DECIDER_ADDR:?set JOB_DECIDER_ADDR (host:port), e.g. run this under tools/with-server.sh}"

cargo build --quiet --bin job-decider -p job-decider
cargo build --quiet -p job-decider-k8s --example quickstart --example decide_files
bin="$root/target/debug"
example="examples/kep-3329-failjob-exit-code-42"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
passed=0
failed=0
check() { # NAME CMD...: runs CMD, counts and reports it
	local name="$1"
	shift
	if "$@"; then
		echo "ok   $name"
		passed=$((passed + 1))
	else
		echo "FAIL $name"
		failed=$((failed + 1))
	fi
}

# Plans compared as proto3 JSON values: a time written `+00:00` equals one written `Z`;
# with --ignore-times, the fields that carry the decision's own `now` are left out too
# (the quickstart decides at the current time).
cat >"$work/same.py" <<'EOF'
import json, sys

NOW_FIELDS = {"lastProbeTime", "lastTransitionTime", "completionTime"}

def norm(v, ignore_times):
    if isinstance(v, dict):
        return {k: norm(x, ignore_times) for k, x in v.items() if not (ignore_times and k in NOW_FIELDS)}
    if isinstance(v, list):
        return [norm(x, ignore_times) for x in v]
    if isinstance(v, str) and v.endswith("+00:00"):
        return v[: -len("+00:00")] + "Z"
    return v

ignore = "--ignore-times" in sys.argv
got_path, want_path = [a for a in sys.argv[1:] if not a.startswith("--")]
with open(got_path) as f:
    text = f.read()
# The quickstart prints one action a line (--lines); decide_files the whole response.
if "--lines" in sys.argv:
    got = {"actions": [json.loads(l) for l in text.splitlines() if l.strip()]}
else:
    got = json.loads(text)
with open(want_path) as f:
    want = json.load(f)
if ignore:
    got, want = {"actions": got["actions"]}, {"actions": want["actions"]}
got, want = norm(got, ignore), norm(want, ignore)
if not want["actions"]:
    sys.exit("the CLI's plan has no actions: nothing to compare")
if got != want:
    sys.exit("differs:\n--- got\n%s\n--- want (job-decider decide)\n%s" % (json.dumps(got, indent=1), json.dumps(want, indent=1)))
EOF

now="2025-06-02T10:00:00Z"
"$bin/job-decider" decide --job "$example/job.json" --pods "$example/pods.json" --now "$now" -o json >"$work/cli.json"
"$bin/examples/decide_files" "$example/job.json" "$example/pods.json" "$now" >"$work/decide_files.json"
check "decide_files decides the example as the CLI does" python3 "$work/same.py" "$work/decide_files.json" "$work/cli.json"

# The quickstart decides at the current time: the CLI at (about) the same time, times left out.
"$bin/job-decider" decide --job "$example/job.json" --pods "$example/pods.json" --now "$(date -u +%Y-%m-%dT%H:%M:%SZ)" -o json >"$work/cli-now.json"
"$bin/examples/quickstart" "$example/job.json" "$example/pods.json" >"$work/quickstart.out"
check "quickstart prints the server's plan for the example" python3 "$work/same.py" --lines --ignore-times "$work/quickstart.out" "$work/cli-now.json"

# A Job without metadata.uid: the error must name the field.
python3 -c 'import json,sys; j=json.load(open(sys.argv[1])); del j["metadata"]["uid"]; json.dump(j, open(sys.argv[2], "w"))' \
	"$example/job.json" "$work/no-uid.json"
bad_request() {
	local status=0
	"$bin/examples/quickstart" "$work/no-uid.json" "$example/pods.json" >"$work/bad.out" 2>"$work/bad.err" || status=$?
	cat "$work/bad.err"
	[[ $status -ne 0 ]] && grep -q '^  job\.metadata\.uid: ' "$work/bad.err" && grep -q 'reason: INVALID_SNAPSHOT (jobdecider.dev)' "$work/bad.err"
}
check "quickstart reads the bad request's field violation and ErrorInfo" bad_request
bad_in_process() {
	local status=0
	"$bin/examples/decide_files" "$work/no-uid.json" "$example/pods.json" "$now" 2>"$work/bad-files.err" >/dev/null || status=$?
	[[ $status -ne 0 ]] && grep -q 'job\.metadata\.uid: Required value' "$work/bad-files.err"
}
check "decide_files names the bad Job's field" bad_in_process

# job-decider-k8s leaves the Kubernetes version to the binary: it must build with each one
# k8s-openapi has (a field may turn optional between versions, as onPodConditions' status did
# in 1.35). Its tests above and tests/it/k8s_openapi.rs run at v1_33.
for version in v1_33 v1_34 v1_35 v1_36 v1_37; do
	check "job-decider-k8s builds with k8s-openapi/$version" \
		cargo check --quiet -p job-decider-k8s --lib --features "k8s-openapi/$version"
done

echo "rust client: $passed passed, $failed failed"
[[ $failed -eq 0 ]]
