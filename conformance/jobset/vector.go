package main

// JobSet vector files (tests/vectors/jobset/*.yaml): name, description, a
// DecideJobSetRequest and its expected DecideJobSetResponse, both in proto3
// JSON form written as YAML.

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"google.golang.org/protobuf/encoding/protojson"
	sigyaml "sigs.k8s.io/yaml"

	pb "job-decider.dev/clients/go/jobdecider/v1"
)

type vector struct {
	path        string
	Name        string
	Description string
	Request     *pb.DecideJobSetRequest
	Expected    *pb.DecideJobSetResponse
}

// strict rejects fields the contract does not have, so a typo in a vector is
// an error here rather than an input silently left out.
var strict = protojson.UnmarshalOptions{}

func loadVector(path string) (*vector, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	j, err := sigyaml.YAMLToJSON(raw)
	if err != nil {
		return nil, fmt.Errorf("%s: yaml: %w", path, err)
	}
	var doc map[string]json.RawMessage
	if err := json.Unmarshal(j, &doc); err != nil {
		return nil, fmt.Errorf("%s: not a YAML mapping: %w", path, err)
	}
	v := &vector{path: path}
	stem := strings.TrimSuffix(filepath.Base(path), filepath.Ext(path))
	if err := json.Unmarshal(doc["name"], &v.Name); err != nil || v.Name == "" {
		return nil, fmt.Errorf("%s: field name: missing or not a string", path)
	}
	if v.Name != stem {
		return nil, fmt.Errorf("%s: field name: %q differs from the file name", path, v.Name)
	}
	if d, ok := doc["description"]; ok {
		if err := json.Unmarshal(d, &v.Description); err != nil {
			return nil, fmt.Errorf("%s: field description: %w", v.Name, err)
		}
	}
	req, ok := doc["request"]
	if !ok {
		return nil, fmt.Errorf("%s: field request: missing", v.Name)
	}
	v.Request = &pb.DecideJobSetRequest{}
	if err := strict.Unmarshal(req, v.Request); err != nil {
		return nil, fmt.Errorf("%s: field request: %w", v.Name, err)
	}
	exp, ok := doc["expected"]
	if !ok || string(exp) == "null" {
		return nil, fmt.Errorf("%s: field expected: missing", v.Name)
	}
	v.Expected = &pb.DecideJobSetResponse{}
	if err := strict.Unmarshal(exp, v.Expected); err != nil {
		return nil, fmt.Errorf("%s: field expected: %w", v.Name, err)
	}
	if v.Request.GetJobSet() == nil {
		return nil, fmt.Errorf("%s: field request.jobSet: missing", v.Name)
	}
	if v.Request.GetNow() == nil {
		return nil, fmt.Errorf("%s: field request.now: missing", v.Name)
	}
	return v, nil
}

// vectorFiles turns file and directory arguments into .yaml files, sorted per directory.
func vectorFiles(args []string) ([]string, error) {
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
		entries, err := os.ReadDir(a)
		if err != nil {
			return nil, err
		}
		var found []string
		for _, e := range entries {
			if !e.IsDir() && (strings.HasSuffix(e.Name(), ".yaml") || strings.HasSuffix(e.Name(), ".yml")) {
				found = append(found, filepath.Join(a, e.Name()))
			}
		}
		sort.Strings(found)
		out = append(out, found...)
	}
	return out, nil
}
