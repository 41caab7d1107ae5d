package main

import (
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// layers are the internal packages, each allowed to import only those before
// it (ARCHITECTURE.md, `conformance/`); main may import any of them.
var layers = []string{"canon", "upstream", "gen", "decider", "cluster", "refserver", "compare"}

// TestInternalPackagesAreLayered keeps the internal packages free of import
// circles and of imports upward: a package imports only earlier layers.
func TestInternalPackagesAreLayered(t *testing.T) {
	dirs, err := os.ReadDir("internal")
	if err != nil {
		t.Fatal(err)
	}
	const prefix = "job-decider.dev/conformance/internal/"
	checked := 0
	for _, d := range dirs {
		if !d.IsDir() {
			continue
		}
		at := slices.Index(layers, d.Name())
		if at < 0 {
			t.Errorf("internal/%s is not in the layer list", d.Name())
			continue
		}
		files, err := filepath.Glob(filepath.Join("internal", d.Name(), "*.go"))
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range files {
			file, err := parser.ParseFile(token.NewFileSet(), f, nil, parser.ImportsOnly)
			if err != nil {
				t.Fatal(err)
			}
			for _, imp := range file.Imports {
				path, _ := strconv.Unquote(imp.Path.Value)
				if !strings.HasPrefix(path, prefix) {
					continue
				}
				checked++
				dep := strings.TrimPrefix(path, prefix)
				if i := slices.Index(layers, dep); i < 0 || i >= at {
					t.Errorf("%s imports internal/%s, which is not below it (%v)", f, dep, layers)
				}
			}
		}
	}
	if checked == 0 {
		t.Fatal("no internal import found: the test read nothing")
	}
}
