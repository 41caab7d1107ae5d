package main

import (
	"bytes"
	"encoding/json"
	"os"
	"strings"
	"testing"
)

const committed = "../../src/schema/kubernetes.json"

// The committed schema is what the pinned modules give today: regenerate it
// with `go run . -o ../../src/schema/kubernetes.json` after changing go.mod.
func TestCommittedSchemaIsCurrent(t *testing.T) {
	want, err := generate()
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(committed)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("%s is stale: run `go run . -o %s` in tools/schemagen", committed, committed)
	}
}

// Every type expression names a scalar, "any", a list, a map, or a type the
// file defines, so the Rust reader never meets a dangling name.
func TestEveryTypeReferenceResolves(t *testing.T) {
	data, err := generate()
	if err != nil {
		t.Fatal(err)
	}
	var s Schema
	if err := json.Unmarshal(data, &s); err != nil {
		t.Fatal(err)
	}
	check := func(where, expr string) {
		for {
			if rest, ok := strings.CutPrefix(expr, "[]"); ok {
				expr = rest
			} else if rest, ok := strings.CutPrefix(expr, "{}"); ok {
				expr = rest
			} else {
				break
			}
		}
		switch expr {
		case "string", "integer", "number", "boolean", "any":
			return
		}
		if _, ok := s.Types[expr]; !ok {
			t.Errorf("%s: %q is not a type of the schema", where, expr)
		}
	}
	for kind, name := range s.Kinds {
		check(kind, name)
	}
	for name, fields := range s.Types {
		for field, expr := range fields {
			check(name+"."+field, expr)
		}
	}
}

// The fields the issue names are where they belong (a regression guard on the
// walk itself: inline embedding, pointers, maps, opaque types).
func TestKnownFields(t *testing.T) {
	data, err := generate()
	if err != nil {
		t.Fatal(err)
	}
	var s Schema
	if err := json.Unmarshal(data, &s); err != nil {
		t.Fatal(err)
	}
	cases := []struct{ typ, field, expr string }{
		{"k8s.io/api/batch/v1.Job", "apiVersion", "string"},
		{"k8s.io/api/batch/v1.Job", "metadata", "k8s.io/apimachinery/pkg/apis/meta/v1.ObjectMeta"},
		{"k8s.io/api/batch/v1.JobSpec", "backoffLimit", "integer"},
		{"k8s.io/api/batch/v1.PodFailurePolicyRule", "onPodConditions", "[]k8s.io/api/batch/v1.PodFailurePolicyOnPodConditionsPattern"},
		{"k8s.io/api/core/v1.Container", "args", "[]string"},
		{"k8s.io/api/core/v1.ContainerStateTerminated", "exitCode", "integer"},
		{"k8s.io/api/core/v1.PodSpec", "nodeSelector", "{}string"},
		{"k8s.io/api/core/v1.ResourceRequirements", "limits", "{}any"},
		{"k8s.io/apimachinery/pkg/apis/meta/v1.ObjectMeta", "creationTimestamp", "any"},
		{"k8s.io/apimachinery/pkg/apis/meta/v1.List", "items", "[]any"},
		{"k8s.io/apimachinery/pkg/apis/meta/v1.ManagedFieldsEntry", "fieldsV1", "any"},
	}
	for _, c := range cases {
		if got := s.Types[c.typ][c.field]; got != c.expr {
			t.Errorf("%s.%s = %q, want %q", c.typ, c.field, got, c.expr)
		}
	}
	if _, ok := s.Types["k8s.io/api/batch/v1.JobSpec"]["backofLimit"]; ok {
		t.Error("a misspelt field is in the schema")
	}
}
