package main

import (
	"bytes"
	"encoding/json"
	"fmt"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
)

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
