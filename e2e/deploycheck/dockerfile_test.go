package deploycheck

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"job-decider.dev/e2e/harness"
)

// instruction is one Dockerfile instruction, continuation lines joined.
type instruction struct {
	line int
	cmd  string // upper case
	args string
}

// parseDockerfile splits a Dockerfile into instructions: comments and blank
// lines dropped, lines ending in a backslash joined to the next.
func parseDockerfile(text string) []instruction {
	var out []instruction
	var cur strings.Builder
	start := 0
	for i, line := range strings.Split(text, "\n") {
		trimmed := strings.TrimSpace(line)
		if cur.Len() == 0 && (trimmed == "" || strings.HasPrefix(trimmed, "#")) {
			continue
		}
		if cur.Len() > 0 && strings.HasPrefix(trimmed, "#") {
			continue // a comment inside a continued instruction
		}
		if cur.Len() == 0 {
			start = i + 1
		}
		if strings.HasSuffix(trimmed, "\\") {
			cur.WriteString(strings.TrimSuffix(trimmed, "\\") + " ")
			continue
		}
		cur.WriteString(trimmed)
		cmd, args, _ := strings.Cut(cur.String(), " ")
		out = append(out, instruction{start, strings.ToUpper(cmd), strings.TrimSpace(args)})
		cur.Reset()
	}
	return out
}

// dockerignore is a .dockerignore's patterns, evaluated as Docker does: in
// order, the last matching pattern decides, "!" re-includes, and a pattern
// that matches a directory matches everything under it.
type dockerignore []struct {
	re     *regexp.Regexp
	negate bool
}

func parseDockerignore(text string) dockerignore {
	var d dockerignore
	for _, line := range strings.Split(text, "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		neg := strings.HasPrefix(line, "!")
		line = strings.Trim(strings.TrimPrefix(line, "!"), "/")
		line = filepath.Clean(line)
		var re strings.Builder
		re.WriteString("^")
		for i := 0; i < len(line); i++ {
			switch {
			case strings.HasPrefix(line[i:], "**/"):
				re.WriteString("(.*/)?")
				i += 2
			case strings.HasPrefix(line[i:], "**"):
				re.WriteString(".*")
				i++
			case line[i] == '*':
				re.WriteString("[^/]*")
			case line[i] == '?':
				re.WriteString("[^/]")
			default:
				re.WriteString(regexp.QuoteMeta(line[i : i+1]))
			}
		}
		re.WriteString("$")
		d = append(d, struct {
			re     *regexp.Regexp
			negate bool
		}{regexp.MustCompile(re.String()), neg})
	}
	return d
}

// excluded says whether a path (relative, slash-separated) is left out of the
// build context.
func (d dockerignore) excluded(path string) bool {
	parts := strings.Split(path, "/")
	out := false
	for _, p := range d {
		for i := 1; i <= len(parts); i++ {
			if p.re.MatchString(strings.Join(parts[:i], "/")) {
				out = !p.negate
				break
			}
		}
	}
	return out
}

var goBuild = regexp.MustCompile(`\bgo build\b`)

var digestRef = regexp.MustCompile(`^[a-z0-9.-]+(:\d+)?/[a-z0-9._/-]+:[A-Za-z0-9._-]+@sha256:[0-9a-f]{64}$`)

// The Dockerfiles keep the rules deploy/README.md states for the images (CI
// has no container engine to build them): every base image pinned by digest
// with its tag beside it, never latest; multi-stage, the last stage running
// as a numeric non-root USER; no ADD (so no URL or git source); COPY only of
// paths that exist and that the .dockerignore lets into the context, never
// the whole tree; cargo with --locked, go with -trimpath and a verified
// module download. And the .dockerignore keeps target/, .git and local
// request files out.
func TestDockerfilesFollowTheRules(t *testing.T) {
	root := filepath.Dir(harness.DeployDir())
	ignoreText, err := os.ReadFile(filepath.Join(root, ".dockerignore"))
	if err != nil {
		t.Fatalf("no .dockerignore at the repository root: %v", err)
	}
	ignore := parseDockerignore(string(ignoreText))
	for _, p := range []string{"target/release/job-decider", "target", ".git/HEAD", ".git", "shim/target/x", "crates/core/target/debug/x",
		"load/requests/100000.bin", "e2e/go.mod", "README.md", "clients/python/x.py", "deploy/base/kustomization.yaml"} {
		if !ignore.excluded(p) {
			t.Errorf(".dockerignore lets %s into the build context", p)
		}
	}
	for _, p := range []string{"Cargo.toml", "Cargo.lock", "src/main.rs", "crates/api/build.rs", "proto/jobdecider/v1/job_decider.proto",
		"shim/go.mod", "clients/go/go.mod"} {
		if ignore.excluded(p) {
			t.Errorf(".dockerignore leaves out %s, which the build needs", p)
		}
	}

	files, err := filepath.Glob(filepath.Join(root, "deploy", "docker", "*.Dockerfile"))
	if err != nil || len(files) != 2 {
		t.Fatalf("want the two Dockerfiles in deploy/docker, got %v (%v)", files, err)
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			text, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			ins := parseDockerfile(string(text))
			stages := map[string]bool{}
			froms, lastFrom, lastUser := 0, -1, ""
			var compiles []string
			for i, in := range ins {
				switch in.cmd {
				case "FROM":
					froms++
					lastFrom, lastUser = i, ""
					fields := strings.Fields(in.args)
					var img string
					for j, fld := range fields {
						if strings.HasPrefix(fld, "--") {
							continue
						}
						img = fld
						if j+2 < len(fields) && strings.EqualFold(fields[j+1], "AS") {
							stages[fields[j+2]] = true
						}
						break
					}
					if stages[img] {
						break
					}
					if !digestRef.MatchString(img) {
						t.Errorf("line %d: FROM %s is not registry/name:tag@sha256:digest", in.line, img)
					}
					if strings.Contains(img, ":latest") {
						t.Errorf("line %d: FROM %s uses latest", in.line, img)
					}
				case "USER":
					lastUser = in.args
				case "ADD":
					t.Errorf("line %d: ADD %s (COPY what the context holds; no URLs or git sources)", in.line, in.args)
				case "COPY":
					fields := strings.Fields(in.args)
					if strings.HasPrefix(in.args, "--from=") {
						break
					}
					var srcs []string
					for _, fld := range fields[:len(fields)-1] {
						if !strings.HasPrefix(fld, "--") {
							srcs = append(srcs, fld)
						}
					}
					for _, src := range srcs {
						src = strings.Trim(filepath.ToSlash(filepath.Clean(src)), "/")
						if src == "." || src == "" {
							t.Errorf("line %d: COPY of the whole tree", in.line)
							continue
						}
						if _, err := os.Stat(filepath.Join(root, src)); err != nil {
							t.Errorf("line %d: COPY %s: %v", in.line, src, err)
						}
						if ignore.excluded(src) {
							t.Errorf("line %d: COPY %s, which .dockerignore leaves out", in.line, src)
						}
					}
				case "RUN":
					if goBuild.MatchString(in.args) || strings.Contains(in.args, "cargo build") {
						compiles = append(compiles, in.args)
					}
					if regexp.MustCompile(`\b(curl|wget)\b`).MatchString(in.args) {
						t.Errorf("line %d: RUN downloads with curl/wget: %s", in.line, in.args)
					}
				}
			}
			if froms < 2 {
				t.Errorf("%d stages: want a build stage and a runtime stage", froms)
			}
			if lastFrom < 0 || lastUser == "" {
				t.Errorf("the final stage sets no USER")
			} else if u, _, _ := strings.Cut(lastUser, ":"); u == "0" || u == "root" || !regexp.MustCompile(`^[1-9]\d*$`).MatchString(u) {
				t.Errorf("the final stage runs as %q: want a numeric non-root UID", lastUser)
			}
			if len(compiles) != 1 {
				t.Fatalf("want one compile step, got %q", compiles)
			}
			c := compiles[0]
			if strings.Contains(c, "cargo build") && (!strings.Contains(c, "--locked") || !strings.Contains(c, "--release")) {
				t.Errorf("cargo build without --release --locked: %s", c)
			}
			if goBuild.MatchString(c) {
				if !strings.Contains(c, "-trimpath") || !strings.Contains(c, "-buildvcs=false") {
					t.Errorf("go build without -trimpath -buildvcs=false: %s", c)
				}
				if !strings.Contains(string(text), "go mod verify") {
					t.Errorf("no go mod verify before the build")
				}
			}
		})
	}
}

// The rules above can fail: a Dockerfile that breaks each is refused.
func TestDockerfileRulesCatchBreaches(t *testing.T) {
	ignore := parseDockerignore("*\n!src/\n**/target/\n")
	if !ignore.excluded("src/target/x") || ignore.excluded("src/main.rs") || !ignore.excluded("README.md") {
		t.Errorf("the .dockerignore evaluator is wrong")
	}
	ins := parseDockerfile("FROM rust:latest AS b\n# c\nRUN a \\\n  b\nADD https://x/y /y\n")
	if len(ins) != 3 || ins[1].args != "a  b" || ins[2].cmd != "ADD" {
		t.Errorf("parse: %+v", ins)
	}
	if digestRef.MatchString("docker.io/library/rust:1.95") || !digestRef.MatchString("docker.io/library/rust:1.95@sha256:"+strings.Repeat("a", 64)) {
		t.Errorf("the digest rule is wrong")
	}
}
