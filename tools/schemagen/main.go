// Command schemagen writes the field schema that job-decider's documents are
// checked against (src/schema/kubernetes.json): for each kind the CLI reads,
// every JSON field name at every depth, found by reflection over the json tags
// of the Kubernetes API's own Go types at the versions this module pins
// (k8s.io/api for batch/v1 and core/v1, sigs.k8s.io/jobset for JobSet).
//
//	go run . -o ../../src/schema/kubernetes.json
//
// Why reflection over the Go types: they are what the API server decodes into,
// so a field is in the schema exactly when the API server would know it.
// Types that decode themselves (a json.Unmarshaler: Time, Quantity,
// IntOrString, RawExtension, FieldsV1, ...) are opaque: any value passes, as
// nothing below them has field names of its own.
package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"reflect"
	"runtime/debug"
	"sort"
	"strings"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"
)

// kind is one top-level object the CLI reads, by the apiVersion and kind its
// documents carry.
type kind struct {
	APIVersion string
	Kind       string
	Type       reflect.Type
}

// kinds is every kind job-decider's document readers accept.
var kinds = []kind{
	{"batch/v1", "Job", reflect.TypeFor[batchv1.Job]()},
	{"batch/v1", "JobList", reflect.TypeFor[batchv1.JobList]()},
	{"v1", "Pod", reflect.TypeFor[corev1.Pod]()},
	{"v1", "PodList", reflect.TypeFor[corev1.PodList]()},
	{"v1", "Node", reflect.TypeFor[corev1.Node]()},
	{"v1", "NodeList", reflect.TypeFor[corev1.NodeList]()},
	{"v1", "List", reflect.TypeFor[metav1.List]()},
	{"jobset.x-k8s.io/v1alpha2", "JobSet", reflect.TypeFor[jobsetv1alpha2.JobSet]()},
}

// modules are the modules whose versions the schema records.
var modules = []string{"k8s.io/api", "k8s.io/apimachinery", "sigs.k8s.io/jobset"}

// Schema is the file's shape; src/schema.rs reads it.
type Schema struct {
	// Comment says where the file comes from (JSON has no comments).
	Comment string `json:"comment"`
	// Modules maps each module to the version the types came from.
	Modules map[string]string `json:"modules"`
	// Kinds maps "apiVersion kind" to the kind's type name.
	Kinds map[string]string `json:"kinds"`
	// Opaque lists the types that decode themselves: any value passes.
	Opaque []string `json:"opaque"`
	// Types maps a type name to its fields: JSON name to a type expression,
	// which is "string", "integer", "number", "boolean", "any" (opaque),
	// "[]" + an element's expression, "{}" + a map value's expression (any
	// key), or a type name in Types.
	Types map[string]map[string]string `json:"types"`
}

var unmarshaler = reflect.TypeFor[json.Unmarshaler]()

// generator walks types, recording each struct once.
type generator struct {
	types  map[string]map[string]string
	opaque map[string]bool
}

func typeName(t reflect.Type) string {
	return t.PkgPath() + "." + t.Name()
}

// expr is t's type expression, recording the structs it reaches.
func (g *generator) expr(t reflect.Type) (string, error) {
	if t.Kind() != reflect.Pointer && (t.Implements(unmarshaler) || reflect.PointerTo(t).Implements(unmarshaler)) {
		g.opaque[typeName(t)] = true
		return "any", nil
	}
	switch t.Kind() {
	case reflect.Pointer:
		return g.expr(t.Elem())
	case reflect.String:
		return "string", nil
	case reflect.Bool:
		return "boolean", nil
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "integer", nil
	case reflect.Float32, reflect.Float64:
		return "number", nil
	case reflect.Interface:
		return "any", nil
	case reflect.Slice:
		if t.Elem().Kind() == reflect.Uint8 {
			// encoding/json writes []byte as a base64 string.
			return "string", nil
		}
		elem, err := g.expr(t.Elem())
		return "[]" + elem, err
	case reflect.Map:
		elem, err := g.expr(t.Elem())
		return "{}" + elem, err
	case reflect.Struct:
		name := typeName(t)
		if _, seen := g.types[name]; seen {
			return name, nil
		}
		fields := map[string]string{}
		// Recorded before its fields, so a recursive type refers to itself.
		g.types[name] = fields
		if err := g.fields(t, fields); err != nil {
			return "", err
		}
		return name, nil
	default:
		return "", fmt.Errorf("%s: no JSON form for a %s", typeName(t), t.Kind())
	}
}

// fields adds t's JSON fields to out, with embedded structs' fields inline as
// encoding/json puts them.
func (g *generator) fields(t reflect.Type, out map[string]string) error {
	for i := range t.NumField() {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		name, _, _ := strings.Cut(tag, ",")
		if name == "-" && !strings.Contains(tag, ",") {
			continue
		}
		if !f.IsExported() && !f.Anonymous {
			continue
		}
		if name == "" && f.Anonymous {
			inner := f.Type
			if inner.Kind() == reflect.Pointer {
				inner = inner.Elem()
			}
			if inner.Kind() == reflect.Struct {
				if err := g.fields(inner, out); err != nil {
					return err
				}
				continue
			}
		}
		if name == "" {
			name = f.Name
		}
		if _, dup := out[name]; dup {
			return fmt.Errorf("%s: field %q twice", typeName(t), name)
		}
		expr, err := g.expr(f.Type)
		if err != nil {
			return fmt.Errorf("%s.%s: %w", typeName(t), f.Name, err)
		}
		out[name] = expr
	}
	return nil
}

// generate builds the schema and renders it as the committed file's bytes.
func generate() ([]byte, error) {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return nil, fmt.Errorf("no build information: cannot tell the modules' versions")
	}
	versions := map[string]string{}
	for _, dep := range info.Deps {
		if dep.Replace != nil {
			dep = dep.Replace
		}
		versions[dep.Path] = dep.Version
	}
	schema := Schema{
		Comment: "Generated by tools/schemagen (go run . -o ../../src/schema/kubernetes.json); do not edit.",
		Modules: map[string]string{},
		Kinds:   map[string]string{},
		Opaque:  []string{},
	}
	for _, m := range modules {
		v, ok := versions[m]
		if !ok {
			return nil, fmt.Errorf("module %s is not in the build", m)
		}
		schema.Modules[m] = v
	}
	g := generator{types: map[string]map[string]string{}, opaque: map[string]bool{}}
	for _, k := range kinds {
		name, err := g.expr(k.Type)
		if err != nil {
			return nil, err
		}
		schema.Kinds[k.APIVersion+" "+k.Kind] = name
	}
	for name := range g.opaque {
		schema.Opaque = append(schema.Opaque, name)
	}
	sort.Strings(schema.Opaque)
	schema.Types = g.types
	var out bytes.Buffer
	enc := json.NewEncoder(&out)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", " ")
	if err := enc.Encode(schema); err != nil {
		return nil, err
	}
	return out.Bytes(), nil
}

func main() {
	output := flag.String("o", "", "write the schema to this file (default: stdout)")
	flag.Parse()
	data, err := generate()
	if err != nil {
		fmt.Fprintln(os.Stderr, "schemagen:", err)
		os.Exit(1)
	}
	if *output == "" {
		_, err = os.Stdout.Write(data)
	} else {
		err = os.WriteFile(*output, data, 0o644)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "schemagen:", err)
		os.Exit(1)
	}
}
