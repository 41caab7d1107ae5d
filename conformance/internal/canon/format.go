package canon

import (
	"bytes"
	"encoding/json"
	"fmt"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
)

// JSONString renders a value as compact JSON.
func JSONString(v any) (string, error) {
	b, err := json.Marshal(v)
	return string(b), err
}

// PrettyProto renders a message as indented proto3 JSON (stable whitespace).
func PrettyProto(m proto.Message) string {
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
