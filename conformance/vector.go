package main

// Vector files: tests/vectors/**/*.yaml, one scenario each:
//
//	name: ...
//	description: ...
//	scope: syncJob | controller  (optional; default syncJob)
//	request:  DecideJobRequest in proto3 JSON form, written as YAML
//	expected: DecideJobResponse in proto3 JSON form (canonical)
//
// scope says what of upstream the expected response records: syncJob alone
// (as upstream's unit tests pin it), or the controller as `random` runs it
// (syncJob, then for a finished Job the orphan-pod worker's sweep).

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	yaml "go.yaml.in/yaml/v3"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	sigyaml "sigs.k8s.io/yaml"

	pb "job-decider.dev/clients/go/jobdecider/v1"
)

type metaOwnerRef = metav1.OwnerReference

type vector struct {
	path        string
	raw         []byte     // the file as read; save splices the new expected block into it
	doc         *yaml.Node // the whole document
	Name        string
	Description string
	Scope       string // "" (syncJob) or "controller"
	Request     *pb.DecideJobRequest
	Expected    *pb.DecideJobResponse // nil when the file has none
}

var unmarshalOpts = protojson.UnmarshalOptions{DiscardUnknown: true}

func loadVector(path string) (*vector, error) {
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
	v := &vector{path: path, raw: b, doc: &doc}
	root := doc.Content[0]
	if n := mapValue(root, "name"); n != nil {
		v.Name = n.Value
	}
	if v.Name == "" {
		v.Name = strings.TrimSuffix(filepath.Base(path), filepath.Ext(path))
	}
	if n := mapValue(root, "description"); n != nil {
		v.Description = n.Value
	}
	if n := mapValue(root, "scope"); n != nil {
		switch n.Value {
		case "syncJob":
		case "controller":
			v.Scope = n.Value
		default:
			return nil, fmt.Errorf("%s: scope %q: want syncJob or controller", path, n.Value)
		}
	}
	reqNode := mapValue(root, "request")
	if reqNode == nil {
		return nil, fmt.Errorf("%s: no request", path)
	}
	v.Request = &pb.DecideJobRequest{}
	if err := nodeToProto(reqNode, v.Request); err != nil {
		return nil, fmt.Errorf("%s: request: %w", path, err)
	}
	if n := mapValue(root, "expected"); n != nil && !(n.Kind == yaml.ScalarNode && n.Tag == "!!null") {
		v.Expected = &pb.DecideJobResponse{}
		if err := nodeToProto(n, v.Expected); err != nil {
			return nil, fmt.Errorf("%s: expected: %w", path, err)
		}
	}
	return v, nil
}

func mapValue(m *yaml.Node, key string) *yaml.Node {
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			return m.Content[i+1]
		}
	}
	return nil
}

func nodeToProto(n *yaml.Node, m proto.Message) error {
	y, err := yaml.Marshal(n)
	if err != nil {
		return err
	}
	j, err := sigyaml.YAMLToJSON(y)
	if err != nil {
		return err
	}
	return unmarshalOpts.Unmarshal(j, m)
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

// opts is how much of upstream the vector's expected records.
func (v *vector) opts() upstreamOpts {
	if v.Scope == "controller" {
		return upstreamWhole
	}
	return upstreamOpts{}
}

// setExpected replaces (or adds) the vector's expected block.
func (v *vector) setExpected(resp *pb.DecideJobResponse) error {
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

func (v *vector) bytes() ([]byte, error) {
	if v.raw == nil {
		return encodeYAML(v.doc)
	}
	// Splice: replace the top-level "expected:" block of the original text
	// (or append one), leaving every other byte of the file as it was.
	root := v.doc.Content[0]
	node := mapValue(root, "expected")
	block, err := encodeYAML(&yaml.Node{Kind: yaml.MappingNode, Content: []*yaml.Node{
		{Kind: yaml.ScalarNode, Value: "expected"}, node}})
	if err != nil {
		return nil, err
	}
	lines := strings.SplitAfter(string(v.raw), "\n")
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
		out.WriteString(string(v.raw))
		if len(v.raw) > 0 && !strings.HasSuffix(string(v.raw), "\n") {
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

func (v *vector) save() error {
	b, err := v.bytes()
	if err != nil {
		return err
	}
	return os.WriteFile(v.path, b, 0o644)
}

// newVectorDoc builds a fresh vector document (for saved mismatches and
// generated scenarios).
func newVectorDoc(path, name, description, scope string, req *pb.DecideJobRequest, expected *pb.DecideJobResponse) (*vector, error) {
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
	v := &vector{path: path, doc: &yaml.Node{Kind: yaml.DocumentNode, Content: []*yaml.Node{root}}, Name: name, Description: description, Scope: scope, Request: req}
	if expected != nil {
		if err := v.setExpected(expected); err != nil {
			return nil, err
		}
	}
	return v, nil
}

// expandVectorArgs turns file and directory arguments into vector files.
func expandVectorArgs(args []string) ([]string, error) {
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
			// JobSet vectors (tests/vectors/jobset/) hold DecideJobSet requests, not Job ones.
			if d.IsDir() && p != a && d.Name() == "jobset" {
				return filepath.SkipDir
			}
			if !d.IsDir() && (strings.HasSuffix(p, ".yaml") || strings.HasSuffix(p, ".yml")) {
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

// jsonString renders a value as compact JSON.
func jsonString(v any) (string, error) {
	b, err := json.Marshal(v)
	return string(b), err
}

// prettyProto renders a message as indented proto3 JSON (stable whitespace).
func prettyProto(m proto.Message) string {
	b, err := protojson.Marshal(m)
	if err != nil {
		return fmt.Sprintf("<%v>", err)
	}
	var out bytes.Buffer
	if err := json.Indent(&out, b, "", "  "); err != nil {
		return string(b)
	}
	return out.String()
}
