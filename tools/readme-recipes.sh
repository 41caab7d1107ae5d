#!/usr/bin/env bash
# Runs the documentation's marked recipes as written and checks what they print:
#   bash tools/readme-recipes.sh [PAGE.md...]   # default: README.md docs/api.md docs/performance.md
#
# A recipe is the ```sh block right after a `<!-- recipe: NAME -->` line; the block after
# `<!-- recipe-output: NAME -->` is what the page says it prints. The recipes run in
# page order (the pages in the order given), in one scratch directory (later ones read the
# files earlier ones wrote: the README's `decide` writes job.json and pods.json),
# under `bash -euo pipefail`, against a live server: this script starts one with
# tools/with-server.sh unless JOB_DECIDER_ADDR is set. Only the address changes: the
# recipes' 127.0.0.1:50051 becomes JOB_DECIDER_ADDR. On PATH: a stand-in `kubectl` that
# prints examples/kep-3329-failjob-exit-code-42 (and fails on a pod selector that is not
# that Job's controller-uid), grpcurl and ghz from ./bin (`make tools`), and the server's
# job-decider. Every recipe has a check below; a recipe without one fails the run. It also
# fails when README.md passes 300 lines, or when a page it does not read has a recipe.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
if [[ $# -eq 0 ]]; then
	set -- "$root/README.md" "$root/docs/api.md" "$root/docs/performance.md"
fi
pages=()
for page in "$@"; do
	pages+=("$(realpath "$page")")
done

# The README stays one screenful for a newcomer (issue 24): the rest belongs in docs/.
if (($(wc -l <"$root/README.md") > 300)); then
	echo "readme-recipes: README.md has $(wc -l <"$root/README.md") lines, more than 300: move the detail to a docs/ page" >&2
	exit 1
fi

# A recipe on a page this run does not read would be a check silently lost.
for md in $(cd "$root" && git ls-files --cached --others --exclude-standard '*.md'); do
	if grep -q '^<!-- recipe' "$root/$md" && [[ ! " ${pages[*]} " == *" $(realpath "$root/$md") "* ]]; then
		echo "readme-recipes: $md has recipes but is not one of the pages read: ${pages[*]}" >&2
		exit 1
	fi
done

if [[ -z "${JOB_DECIDER_ADDR:-}" ]]; then
	exec bash "$root/tools/with-server.sh" bash "$root/tools/readme-recipes.sh" "${pages[@]}"
fi

bin="${JOB_DECIDER_BIN:-$root/target/debug/job-decider}"
example="$root/examples/kep-3329-failjob-exit-code-42"
for tool in grpcurl ghz; do
	if [[ ! -x "$root/bin/$tool" ]]; then
		echo "readme-recipes: $root/bin/$tool is missing: run make tools" >&2
		exit 1
	fi
done
if [[ ! -x "$bin" ]]; then
	echo "readme-recipes: $bin is missing: cargo build --bin job-decider" >&2
	exit 1
fi

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/recipes" "$work/outputs" "$work/run" "$work/path"
ln -s "$bin" "$work/path/job-decider"

# The stand-in kubectl: `get job NAME -o json` and `get pods -l SELECTOR -o json`, nothing else.
cat >"$work/path/kubectl" <<'EOF'
#!/usr/bin/env python3
import json, os, sys

example = os.environ["FAKE_KUBECTL_EXAMPLE"]
args = sys.argv[1:]
def fail(why):
    sys.exit(f"kubectl (stand-in for the documented recipes): {why}: {' '.join(args)}")
if len(args) < 2 or args[0] != "get":
    fail("only `get` is supported")
if args[-2:] != ["-o", "json"]:
    fail("only `-o json` output is supported")
kind, rest = args[1], args[2:-2]
if kind in ("job", "jobs", "job.batch"):
    if len(rest) != 1:
        fail("want one Job name")
    sys.stdout.write(open(os.path.join(example, "job.json")).read())
elif kind in ("pod", "pods"):
    uid = json.load(open(os.path.join(example, "job.json")))["metadata"]["uid"]
    want = f"batch.kubernetes.io/controller-uid={uid}"
    if rest != ["-l", want]:
        fail(f"want the pods of the Job's uid, `-l {want}`")
    sys.stdout.write(open(os.path.join(example, "pods.json")).read())
else:
    fail(f"unknown kind {kind}")
EOF
chmod +x "$work/path/kubectl"

# The marked blocks, each to a file; their names in page order.
names="$(
	python3 - "$work" "$JOB_DECIDER_ADDR" "${pages[@]}" <<'EOF'
import re, sys
work, addr, *pages = sys.argv[1:]
blocks = []
for page in pages:
    text = open(page).read()
    markers = re.findall(r"<!-- recipe(?:-output)?: [\w-]+ -->", text)
    found = re.findall(r"<!-- recipe(-output)?: ([\w-]+) -->\n```(\w*)\n(.*?)^```$", text, re.S | re.M)
    if len(found) != len(markers):
        sys.exit(f"readme-recipes: {page}: {len(markers)} markers but {len(found)} blocks right after one")
    blocks += found
seen, shown = set(), set()
for output, name, lang, body in blocks:
    if output:
        open(f"{work}/outputs/{name}.txt", "w").write(body)
        shown.add(name)
        continue
    if lang != "sh":
        sys.exit(f"readme-recipes: recipe {name} is a ```{lang} block, not ```sh")
    if name in seen:
        sys.exit(f"readme-recipes: two recipes named {name}")
    seen.add(name)
    calls = "grpcurl" in body or "ghz" in body
    if calls and "127.0.0.1:50051" not in body:
        sys.exit(f"readme-recipes: recipe {name} calls a server but not at 127.0.0.1:50051")
    open(f"{work}/recipes/{name}.sh", "w").write(body.replace("127.0.0.1:50051", addr))
    print(name)
if shown - seen:
    sys.exit(f"readme-recipes: recipe-output without its recipe: {sorted(shown - seen)}")
EOF
)"
# The recipes checked below are all still on the pages (a lost marker is a lost check).
for want in decide bad-input ghz; do
	if ! grep -qx "$want" <<<"$names"; then
		echo "readme-recipes: no page of ${pages[*]} has a recipe named $want" >&2
		exit 1
	fi
done

export PATH="$work/path:$root/bin:$PATH"
export FAKE_KUBECTL_EXAMPLE="$example"

# Each line with its runs of blanks (grpcurl indents with tabs) made one space.
squeeze() { sed -e 's/[[:space:]]\+/ /g' -e 's/^ //' -e 's/ $//' -e '/^$/d' "$1"; }

failures=0
fail() {
	echo "readme-recipes: $name: $*" >&2
	failures=$((failures + 1))
}

for name in $names; do
	echo "readme-recipes: running $name" >&2
	set +e
	(cd "$work/run" && bash -euo pipefail "$work/recipes/$name.sh" >"$work/$name.out" 2>"$work/$name.err")
	status=$?
	set -e
	case "$name" in
	decide)
		# The plan the server sent is the plan `decide` makes of the example's own files:
		# the same actions, and the same conditions in its status writes.
		if [[ $status -ne 0 ]]; then
			fail "exited $status"
		elif ! python3 - "$work/$name.out" \
			<("$bin" decide --job "$example/job.json" --pods "$example/pods.json" -o json) <<'EOF'; then
import json, sys
got, want = (json.load(open(p)) for p in sys.argv[1:])
def shape(plan):
    return [
        (kind, [(c["type"], c.get("reason")) for c in body.get("status", {}).get("conditions", [])])
        for action in plan["actions"] for kind, body in action.items()
    ]
if not want["actions"] or shape(got) != shape(want):
    sys.exit(f"plan {shape(got)}, want {shape(want)}")
EOF
			fail "the plan differs from job-decider decide's"
		fi
		;;
	bad-input)
		# grpcurl's exit status is 64 + the gRPC code (3, INVALID_ARGUMENT); its stderr is
		# what the page shows, field violations decoded.
		if [[ $status -ne 67 ]]; then
			fail "exited $status, want 67 (INVALID_ARGUMENT)"
		fi
		if ! grep -q '"field": "job.metadata.uid"' "$work/$name.err"; then
			fail "no field violation naming job.metadata.uid"
		fi
		if [[ ! -f "$work/outputs/$name.txt" ]]; then
			fail "no page shows a recipe-output for it"
		elif ! diff <(squeeze "$work/outputs/$name.txt") <(squeeze "$work/$name.err") >&2; then
			fail "prints other than the page shows (above: < page, > actual)"
		fi
		;;
	ghz)
		# Every call answered OK: the count ghz was asked for, all in the OK line.
		calls="$(grep -o -- '-n [0-9]\+' "$work/recipes/$name.sh" | awk '{print $2}')"
		if [[ $status -ne 0 ]]; then
			fail "exited $status"
		elif [[ -z "$calls" ]]; then
			fail "no -n in the recipe"
		elif ! grep -Eq "Count:[[:space:]]+$calls\$" "$work/$name.out" ||
			! grep -Eq "\[OK\][[:space:]]+$calls responses" "$work/$name.out" ||
			grep -q "Error distribution" "$work/$name.out"; then
			fail "not all $calls calls answered OK"
		fi
		;;
	*)
		fail "no check for this recipe: add one to tools/readme-recipes.sh"
		;;
	esac
	if [[ $failures -ne 0 ]]; then
		echo "--- $name stdout (tail) ---" >&2
		tail -n 20 "$work/$name.out" >&2
		echo "--- $name stderr (tail) ---" >&2
		tail -n 20 "$work/$name.err" >&2
		exit 1
	fi
done
echo "readme-recipes: $(wc -w <<<"$names") recipes ran as written: $(echo $names)" >&2
