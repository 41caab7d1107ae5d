// Command jobset-conformance checks the JobSet vectors' expected plans
// against sigs.k8s.io/jobset v0.12.0's own reconciler and prints a per-vector
// report ending in "N vectors: M match, K mismatch, D known differences".
// It exits 1 on a mismatch not listed in known-differences.md, or on an entry
// there that no longer excuses anything.
package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"google.golang.org/protobuf/encoding/protojson"
	"job-decider.dev/testkit/vectors"
)

func defaultVectorDir() string {
	rel := filepath.Join("..", "..", "tests", "vectors", "jobset")
	if _, err := os.Stat(rel); err == nil {
		return rel
	}
	return filepath.Join(moduleDir(), rel)
}

func main() {
	verbose := flag.Bool("v", false, "also print excused fields and what upstream did outside DecideJobSet's scope")
	printUpstream := flag.Bool("upstream", false, "print upstream's canonical response for each vector instead of checking")
	knownFile := flag.String("known", defaultKnownFile(), "the known-differences file")
	flag.Usage = func() {
		fmt.Fprintf(flag.CommandLine.Output(), "usage: %s [-v] [-known FILE] [FILE|DIR ...]   (default: tests/vectors/jobset)\n", os.Args[0])
		flag.PrintDefaults()
	}
	flag.Parse()
	args := flag.Args()
	if len(args) == 0 {
		args = []string{defaultVectorDir()}
	}
	files, err := vectors.FilesFlat(args)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	if *printUpstream {
		if err := printUpstreamResponses(os.Stdout, files); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		return
	}
	known, err := loadKnown(*knownFile)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	s := checkFiles(files, known)
	s.report(os.Stdout, *verbose)
	if s.failed() {
		os.Exit(1)
	}
}

// printUpstreamResponses prints, per vector, upstream's canonical response as
// indented proto3 JSON, with its Reconcile error if any.
func printUpstreamResponses(w io.Writer, files []string) error {
	for _, f := range files {
		v, err := vectors.LoadJobSet(f)
		if err != nil {
			return err
		}
		up, err := runUpstream(v)
		if err != nil {
			return err
		}
		b, err := protojson.Marshal(up.resp)
		if err != nil {
			return fmt.Errorf("%s: %w", v.Name, err)
		}
		var out bytes.Buffer
		if err := json.Indent(&out, b, "", "  "); err != nil {
			return fmt.Errorf("%s: %w", v.Name, err)
		}
		fmt.Fprintf(w, "# %s\n", v.Name)
		if up.err != nil {
			fmt.Fprintf(w, "# reconcile error: %v\n", up.err)
		}
		fmt.Fprintf(w, "%s\n", out.String())
	}
	return nil
}
