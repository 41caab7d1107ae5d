// Package kubejson converts between the contract's messages and the
// Kubernetes API types (client-go's k8s.io/api, or a CRD's Go types) through
// JSON: the contract names every field as the Kubernetes API does, so
// protojson on one side and encoding/json on the other meet with no field
// mapped by hand.
//
// Two differences are bridged, and both strictly:
//
//   - proto3 JSON writes 64-bit integers as quoted strings, which
//     encoding/json will not read into an int64. Which values to unquote is
//     read from the message's descriptor, field by field, so every int64 of
//     the contract is covered and nothing else is touched (a label whose key
//     happens to be "generation" stays a string).
//   - A field one side has and the other lacks is an error in both
//     directions: a contract field the API type does not know, or an API
//     field the contract cannot carry, would otherwise reach one side only.
//
// The conformance harnesses and the shim all convert through this package.
package kubejson

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// strict refuses JSON fields the contract's message does not have.
var strict = protojson.UnmarshalOptions{}

// ToKube converts a contract message into the Kubernetes object out (a
// pointer), refusing any field out's type does not have.
func ToKube(msg proto.Message, out any) error {
	g, err := ToMap(msg)
	if err != nil {
		return err
	}
	return FromMap(g, out)
}

// ToMap is a message's proto3 JSON form as generic JSON values, its 64-bit
// integers as numbers: the Kubernetes JSON form, for a caller that adjusts
// the object (say, applies an API server's defaults) before FromMap.
func ToMap(msg proto.Message) (map[string]any, error) {
	b, err := protojson.Marshal(msg)
	if err != nil {
		return nil, err
	}
	var g map[string]any
	dec := json.NewDecoder(bytes.NewReader(b))
	// Numbers stay as written: a float64 would round an int64 above 2^53.
	dec.UseNumber()
	if err := dec.Decode(&g); err != nil {
		return nil, err
	}
	if err := unquoteInt64s(g, msg.ProtoReflect().Descriptor(), ""); err != nil {
		return nil, err
	}
	return g, nil
}

// FromProtoJSON converts an object written by hand in proto3 JSON (a test
// vector's request.job, say) into the Kubernetes object out (a pointer),
// md being the contract's message for it. Fields the contract lacks but out's
// type has (a vector's apiVersion and kind) are kept; fields neither has are
// an error.
func FromProtoJSON(data []byte, md protoreflect.MessageDescriptor, out any) error {
	var g map[string]any
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	if err := dec.Decode(&g); err != nil {
		return err
	}
	if err := unquoteInt64s(g, md, ""); err != nil {
		return err
	}
	return FromMap(g, out)
}

// FromMap decodes generic JSON values into the Kubernetes object out (a
// pointer), refusing any field out's type does not have.
func FromMap(g map[string]any, out any) error {
	b, err := json.Marshal(g)
	if err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	return dec.Decode(out)
}

// FromKube converts a Kubernetes object into the contract message msg,
// refusing any field the contract cannot carry.
func FromKube(obj any, msg proto.Message) error {
	b, err := json.Marshal(obj)
	if err != nil {
		return err
	}
	if err := strict.Unmarshal(b, msg); err != nil {
		return fmt.Errorf("the contract cannot carry %s: %w", b, err)
	}
	return nil
}

// unquoteInt64s turns the quoted 64-bit integers of obj, a message of type
// md in generic JSON form, into numbers; path names the place for errors.
func unquoteInt64s(obj map[string]any, md protoreflect.MessageDescriptor, path string) error {
	if wellKnown(md) {
		// Timestamps, durations and the like have JSON forms of their own.
		return nil
	}
	for key, val := range obj {
		fd := md.Fields().ByJSONName(key)
		if fd == nil {
			// protojson writes JSON names only; anything else is not ours to touch.
			continue
		}
		at := path + "." + key
		switch {
		case fd.IsMap():
			if fd.MapValue().Kind() != protoreflect.MessageKind {
				// A map of strings (labels, annotations) holds no int64 field.
				continue
			}
			m, _ := val.(map[string]any)
			for k, e := range m {
				em, _ := e.(map[string]any)
				if err := unquoteInt64s(em, fd.MapValue().Message(), at+"["+k+"]"); err != nil {
					return err
				}
			}
		case fd.Kind() == protoreflect.MessageKind || fd.Kind() == protoreflect.GroupKind:
			if fd.IsList() {
				list, _ := val.([]any)
				for i, e := range list {
					em, _ := e.(map[string]any)
					if err := unquoteInt64s(em, fd.Message(), fmt.Sprintf("%s[%d]", at, i)); err != nil {
						return err
					}
				}
				continue
			}
			em, _ := val.(map[string]any)
			if err := unquoteInt64s(em, fd.Message(), at); err != nil {
				return err
			}
		case is64Bit(fd.Kind()):
			if fd.IsList() {
				list, _ := val.([]any)
				for i, e := range list {
					n, err := number(e, fmt.Sprintf("%s[%d]", at, i))
					if err != nil {
						return err
					}
					list[i] = n
				}
				continue
			}
			n, err := number(val, at)
			if err != nil {
				return err
			}
			obj[key] = n
		}
	}
	return nil
}

// number is a 64-bit integer written as a string or a number, as a JSON number.
func number(v any, at string) (any, error) {
	s, ok := v.(string)
	if !ok {
		return v, nil
	}
	_, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		_, err = strconv.ParseUint(s, 10, 64)
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %q is not an integer", at[1:], s)
	}
	return json.Number(s), nil
}

func is64Bit(k protoreflect.Kind) bool {
	switch k {
	case protoreflect.Int64Kind, protoreflect.Sint64Kind, protoreflect.Sfixed64Kind,
		protoreflect.Uint64Kind, protoreflect.Fixed64Kind:
		return true
	}
	return false
}

func wellKnown(md protoreflect.MessageDescriptor) bool {
	return md.ParentFile().Package() == "google.protobuf"
}

// Int64Fields lists the 64-bit integer fields reachable from md (outside the
// well-known types) by their JSON paths: the fields ToKube unquotes.
func Int64Fields(md protoreflect.MessageDescriptor) []string {
	var out []string
	var walk func(md protoreflect.MessageDescriptor, path string, seen map[protoreflect.FullName]bool)
	walk = func(md protoreflect.MessageDescriptor, path string, seen map[protoreflect.FullName]bool) {
		if seen[md.FullName()] || wellKnown(md) {
			return
		}
		seen[md.FullName()] = true
		defer delete(seen, md.FullName())
		fields := md.Fields()
		for i := range fields.Len() {
			fd := fields.Get(i)
			at := path + "." + fd.JSONName()
			if fd.IsMap() {
				fd = fd.MapValue()
				at += "[*]"
			}
			switch {
			case is64Bit(fd.Kind()):
				out = append(out, at[1:])
			case fd.Kind() == protoreflect.MessageKind || fd.Kind() == protoreflect.GroupKind:
				walk(fd.Message(), at, seen)
			}
		}
	}
	walk(md, "", map[protoreflect.FullName]bool{})
	return out
}
