// Package vectors reads and writes the shared test vectors
// (tests/vectors/*.yaml, tests/vectors-extended/*.yaml and
// tests/vectors/jobset/*.yaml): one scenario per file,
//
//	name: ...            the file's stem
//	description: ...
//	scope: syncJob | controller   (Job vectors only; default syncJob)
//	request:  the request in proto3 JSON form, written as YAML
//	expected: the response in proto3 JSON form
//
// The YAML is read by the YAML 1.2 core schema, as serde_yaml reads it for
// the Rust tests: unquoted timestamps and yes/no stay strings. The
// conformance harness, the JobSet harness and the shim's tests all read the
// files here.
package vectors

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"go.yaml.in/yaml/v3"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	pb "job-decider.dev/clients/go/jobdecider/v1"
)

// lenient reads a Job vector's messages as the Rust tests do (pbjson with
// ignore_unknown_fields): the objects carry apiVersion and kind, which the
// contract leaves out.
var lenient = protojson.UnmarshalOptions{DiscardUnknown: true}

// strict reads a JobSet vector's messages, so a typo in one is an error
// rather than an input silently left out.
var strict = protojson.UnmarshalOptions{}

// File is one vector file as read, before its messages are decoded.
type File struct {
	// Path is where the file was read from (or will be written to).
	Path string
	// Name is the name field, or the file's stem when the Job vector has none.
	Name string
	// Description is the description field.
	Description string
	// Scope is "" (syncJob) or "controller": how much of upstream's
	// controller the expected response records (syncJob alone, or syncJob
	// and then, for a finished Job, the orphan-pod worker's sweep).
	Scope string
	raw   []byte     // the file as read; Bytes splices the new expected block into it
	doc   *yaml.Node // the whole document
}

// Read parses one vector file's YAML and its name, description and scope.
func Read(path string) (*File, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(b, &doc); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if doc.Kind != yaml.DocumentNode || len(doc.Content) != 1 || doc.Content[0].Kind != yaml.MappingNode {
		return nil, fmt.Errorf("%s: not a YAML mapping", path)
	}
	f := &File{Path: path, raw: b, doc: &doc}
	if n := f.field("name"); n != nil {
		f.Name = n.Value
	}
	if n := f.field("description"); n != nil {
		f.Description = n.Value
	}
	if n := f.field("scope"); n != nil {
		switch n.Value {
		case "syncJob":
		case "controller":
			f.Scope = n.Value
		default:
			return nil, fmt.Errorf("%s: scope %q: want syncJob or controller", path, n.Value)
		}
	}
	return f, nil
}

// Stem is the file's name without its directory and extension.
func (f *File) Stem() string {
	return strings.TrimSuffix(filepath.Base(f.Path), filepath.Ext(f.Path))
}

// field is a top-level field's value, nil when absent.
func (f *File) field(key string) *yaml.Node {
	return mapValue(f.doc.Content[0], key)
}

// JSON is a top-level field as JSON; nil when the field is absent or null.
func (f *File) JSON(key string) ([]byte, error) {
	n := f.field(key)
	if n == nil || (n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null") {
		return nil, nil
	}
	v, err := ToJSONValue(n)
	if err != nil {
		return nil, fmt.Errorf("%s: %s: %w", f.Path, key, err)
	}
	return json.Marshal(v)
}

// decode reads a top-level field into m; present is false when it is absent or null.
func (f *File) decode(key string, m proto.Message, opts protojson.UnmarshalOptions) (present bool, err error) {
	j, err := f.JSON(key)
	if err != nil || j == nil {
		return false, err
	}
	return true, opts.Unmarshal(j, m)
}

// Job is a Job vector (tests/vectors, tests/vectors-extended).
type Job struct {
	*File
	// Request is the DecideJobRequest.
	Request *pb.DecideJobRequest
	// Expected is the expected response; nil when the file has none.
	Expected *pb.DecideJobResponse
}

// LoadJob reads a Job vector. A missing name is the file's stem; a missing
// expected response is allowed (a vector to be filled in).
func LoadJob(path string) (*Job, error) {
	f, err := Read(path)
	if err != nil {
		return nil, err
	}
	if f.Name == "" {
		f.Name = f.Stem()
	}
	v := &Job{File: f, Request: &pb.DecideJobRequest{}}
	ok, err := f.decode("request", v.Request, lenient)
	if err != nil {
		return nil, fmt.Errorf("%s: request: %w", path, err)
	}
	if !ok {
		return nil, fmt.Errorf("%s: no request", path)
	}
	exp := &pb.DecideJobResponse{}
	ok, err = f.decode("expected", exp, lenient)
	if err != nil {
		return nil, fmt.Errorf("%s: expected: %w", path, err)
	}
	if ok {
		v.Expected = exp
	}
	return v, nil
}

// JobSet is a JobSet vector (tests/vectors/jobset).
type JobSet struct {
	*File
	// Request is the DecideJobSetRequest.
	Request *pb.DecideJobSetRequest
	// Expected is the expected response.
	Expected *pb.DecideJobSetResponse
}

// LoadJobSet reads a JobSet vector strictly: its name must be the file's
// stem, and the request (with a JobSet and a time) and the expected
// response must be there, holding no field the contract lacks.
func LoadJobSet(path string) (*JobSet, error) {
	f, err := Read(path)
	if err != nil {
		return nil, err
	}
	if f.Name == "" {
		return nil, fmt.Errorf("%s: field name: missing or not a string", path)
	}
	if f.Name != f.Stem() {
		return nil, fmt.Errorf("%s: field name: %q differs from the file name", path, f.Name)
	}
	v := &JobSet{File: f, Request: &pb.DecideJobSetRequest{}, Expected: &pb.DecideJobSetResponse{}}
	ok, err := f.decode("request", v.Request, strict)
	if err != nil {
		return nil, fmt.Errorf("%s: field request: %w", v.Name, err)
	}
	if !ok {
		return nil, fmt.Errorf("%s: field request: missing", v.Name)
	}
	ok, err = f.decode("expected", v.Expected, strict)
	if err != nil {
		return nil, fmt.Errorf("%s: field expected: %w", v.Name, err)
	}
	if !ok {
		return nil, fmt.Errorf("%s: field expected: missing", v.Name)
	}
	if v.Request.GetJobSet() == nil {
		return nil, fmt.Errorf("%s: field request.jobSet: missing", v.Name)
	}
	if v.Request.GetNow() == nil {
		return nil, fmt.Errorf("%s: field request.now: missing", v.Name)
	}
	return v, nil
}

// Files turns file and directory arguments into vector files: a directory
// gives its .yaml and .yml files, sorted, its subdirectories' too except
// one named jobset (JobSet vectors hold another request). A file is taken
// as given.
func Files(args []string) ([]string, error) {
	return files(args, func(dir, p string, d os.DirEntry) bool {
		return p == dir || d.Name() != "jobset"
	})
}

// FilesFlat is Files without subdirectories.
func FilesFlat(args []string) ([]string, error) {
	return files(args, func(dir, p string, _ os.DirEntry) bool { return p == dir })
}

func files(args []string, enter func(dir, p string, d os.DirEntry) bool) ([]string, error) {
	var out []string
	for _, a := range args {
		st, err := os.Stat(a)
		if err != nil {
			return nil, err
		}
		if !st.IsDir() {
			out = append(out, a)
			continue
		}
		var found []string
		err = filepath.WalkDir(a, func(p string, d os.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() {
				if !enter(a, p, d) {
					return filepath.SkipDir
				}
				return nil
			}
			if strings.HasSuffix(p, ".yaml") || strings.HasSuffix(p, ".yml") {
				found = append(found, p)
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
		sort.Strings(found)
		out = append(out, found...)
	}
	return out, nil
}

// ToJSONValue converts a YAML tree to JSON values by the YAML 1.2 core
// schema, as serde_yaml reads it for the Rust tests: unquoted timestamps
// stay strings (yaml.v3 would make them time.Time), and yes/no are strings
// (yaml.v2, under sigs.k8s.io/yaml, would make them booleans). A duplicate
// key is an error.
func ToJSONValue(n *yaml.Node) (any, error) {
	switch n.Kind {
	case yaml.DocumentNode:
		if len(n.Content) != 1 {
			return nil, fmt.Errorf("line %d: %d documents", n.Line, len(n.Content))
		}
		return ToJSONValue(n.Content[0])
	case yaml.AliasNode:
		return ToJSONValue(n.Alias)
	case yaml.MappingNode:
		m := make(map[string]any, len(n.Content)/2)
		for i := 0; i+1 < len(n.Content); i += 2 {
			k := n.Content[i]
			if k.Kind != yaml.ScalarNode {
				return nil, fmt.Errorf("line %d: a key that is not a scalar", k.Line)
			}
			if _, dup := m[k.Value]; dup {
				return nil, fmt.Errorf("line %d: duplicate key %q", k.Line, k.Value)
			}
			v, err := ToJSONValue(n.Content[i+1])
			if err != nil {
				return nil, err
			}
			m[k.Value] = v
		}
		return m, nil
	case yaml.SequenceNode:
		s := make([]any, len(n.Content))
		for i, c := range n.Content {
			v, err := ToJSONValue(c)
			if err != nil {
				return nil, err
			}
			s[i] = v
		}
		return s, nil
	case yaml.ScalarNode:
		switch n.ShortTag() {
		case "!!null":
			return nil, nil
		case "!!bool", "!!int", "!!float":
			var v any
			if err := n.Decode(&v); err != nil {
				return nil, fmt.Errorf("line %d: %w", n.Line, err)
			}
			return v, nil
		default:
			// !!str, !!timestamp, !!binary: the text as written.
			return n.Value, nil
		}
	}
	return nil, fmt.Errorf("line %d: unexpected YAML node kind %v", n.Line, n.Kind)
}

func mapValue(m *yaml.Node, key string) *yaml.Node {
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			return m.Content[i+1]
		}
	}
	return nil
}

// protoToNode renders a message as a block-style YAML node of its proto3 JSON form.
func protoToNode(m proto.Message) (*yaml.Node, error) {
	j, err := protojson.Marshal(m)
	if err != nil {
		return nil, err
	}
	var n yaml.Node
	if err := yaml.Unmarshal(j, &n); err != nil {
		return nil, err
	}
	body := n.Content[0]
	var plain func(*yaml.Node)
	plain = func(x *yaml.Node) {
		x.Style = 0
		for _, c := range x.Content {
			plain(c)
		}
	}
	plain(body)
	return body, nil
}

// SetExpected replaces (or adds) the Job vector's expected block.
func (v *Job) SetExpected(resp *pb.DecideJobResponse) error {
	node, err := protoToNode(resp)
	if err != nil {
		return err
	}
	root := v.doc.Content[0]
	for i := 0; i+1 < len(root.Content); i += 2 {
		if root.Content[i].Value == "expected" {
			node.HeadComment = root.Content[i+1].HeadComment
			root.Content[i+1] = node
			v.Expected = resp
			return nil
		}
	}
	root.Content = append(root.Content, &yaml.Node{Kind: yaml.ScalarNode, Value: "expected"}, node)
	v.Expected = resp
	return nil
}

// Bytes is the file's text: a file that was read keeps every byte but its
// top-level expected block, which is written anew (or appended).
func (f *File) Bytes() ([]byte, error) {
	if f.raw == nil {
		return encodeYAML(f.doc)
	}
	node := f.field("expected")
	block, err := encodeYAML(&yaml.Node{Kind: yaml.MappingNode, Content: []*yaml.Node{
		{Kind: yaml.ScalarNode, Value: "expected"}, node}})
	if err != nil {
		return nil, err
	}
	lines := strings.SplitAfter(string(f.raw), "\n")
	start, end := -1, len(lines)
	for i, l := range lines {
		if start < 0 {
			if strings.HasPrefix(l, "expected:") {
				start = i
			}
			continue
		}
		if l != "" && l[0] != ' ' && l[0] != '\t' && l[0] != '\n' && l[0] != '#' && l[0] != '-' {
			end = i
			break
		}
	}
	var out strings.Builder
	if start < 0 {
		out.WriteString(string(f.raw))
		if len(f.raw) > 0 && !strings.HasSuffix(string(f.raw), "\n") {
			out.WriteString("\n")
		}
		out.Write(block)
		return []byte(out.String()), nil
	}
	out.WriteString(strings.Join(lines[:start], ""))
	out.Write(block)
	out.WriteString(strings.Join(lines[end:], ""))
	return []byte(out.String()), nil
}

func encodeYAML(n *yaml.Node) ([]byte, error) {
	var buf bytes.Buffer
	enc := yaml.NewEncoder(&buf)
	enc.SetIndent(2)
	if err := enc.Encode(n); err != nil {
		return nil, err
	}
	if err := enc.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// Save writes the file to its path.
func (f *File) Save() error {
	b, err := f.Bytes()
	if err != nil {
		return err
	}
	return os.WriteFile(f.Path, b, 0o644)
}

// NewJob builds a fresh Job vector document (for saved mismatches and
// generated scenarios); expected may be nil.
func NewJob(path, name, description, scope string, req *pb.DecideJobRequest, expected *pb.DecideJobResponse) (*Job, error) {
	reqNode, err := protoToNode(req)
	if err != nil {
		return nil, err
	}
	root := &yaml.Node{Kind: yaml.MappingNode}
	root.Content = append(root.Content,
		&yaml.Node{Kind: yaml.ScalarNode, Value: "name"}, &yaml.Node{Kind: yaml.ScalarNode, Value: name},
		&yaml.Node{Kind: yaml.ScalarNode, Value: "description"}, &yaml.Node{Kind: yaml.ScalarNode, Value: description},
	)
	if scope != "" {
		root.Content = append(root.Content,
			&yaml.Node{Kind: yaml.ScalarNode, Value: "scope"}, &yaml.Node{Kind: yaml.ScalarNode, Value: scope})
	}
	root.Content = append(root.Content, &yaml.Node{Kind: yaml.ScalarNode, Value: "request"}, reqNode)
	f := &File{Path: path, doc: &yaml.Node{Kind: yaml.DocumentNode, Content: []*yaml.Node{root}}, Name: name, Description: description, Scope: scope}
	v := &Job{File: f, Request: req}
	if expected != nil {
		if err := v.SetExpected(expected); err != nil {
			return nil, err
		}
	}
	return v, nil
}
