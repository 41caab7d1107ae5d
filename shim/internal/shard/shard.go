// Package shard splits the namespaces of a cluster among shim replicas, the
// way KEP-5866 (server-side sharded list and watch) splits a collection: the
// 64-bit FNV-1a hash of a key, here metadata.namespace, cut into equal ranges.
// A Job and its pods share a namespace, so they always land on one shard.
//
// The hashing and matching are apimachinery's own (k8s.io/apimachinery/pkg/sharding),
// so the client-side fallback keeps exactly what the API server would send.
package shard

import (
	"fmt"
	"math/bits"

	"k8s.io/apimachinery/pkg/sharding"
)

// Key is the field the shards are cut on: a Job's pods are in its namespace.
const Key = "object.metadata.namespace"

// fullEnd is the exclusive end of the hash space, 2^64, as KEP-5866 writes it.
const fullEnd = "0x10000000000000000"

// Range is one shard: the namespaces whose hash falls in [Start, End).
type Range struct {
	// Index is the shard's number, 0 to Count-1.
	Index int
	// Count is how many shards the namespaces are cut into.
	Count int
	// Start and End bound the hash, as 0x-prefixed 16-digit lowercase hex
	// (End of the last shard is 2^64, with 17 digits).
	Start, End string
}

// Ranges cuts the hash space into count equal ranges (count ≥ 1).
func Ranges(count int) ([]Range, error) {
	if count < 1 {
		return nil, fmt.Errorf("shards must be at least 1, not %d", count)
	}
	out := make([]Range, count)
	for i := range out {
		out[i] = Range{Index: i, Count: count, Start: boundary(i, count), End: boundary(i+1, count)}
	}
	return out, nil
}

// boundary is floor(i·2^64/count) in KEP-5866's notation; 2^64 itself for i = count.
func boundary(i, count int) string {
	if i >= count {
		return fullEnd
	}
	q, _ := bits.Div64(uint64(i), 0, uint64(count))
	return fmt.Sprintf("0x%016x", q)
}

// Whole reports whether the range is the whole hash space (one shard): no
// selector is sent and nothing is filtered.
func (r Range) Whole() bool {
	return r.Count <= 1
}

// Selector is the range as a shard selector, the `shardSelector` of a list or watch.
func (r Range) Selector() sharding.Selector {
	if r.Whole() {
		return sharding.Everything()
	}
	return sharding.NewSelector(sharding.ShardRangeRequirement{Key: Key, Start: r.Start, End: r.End})
}

// String is the selector's wire form, e.g.
// shardRange(object.metadata.namespace, '0x0000000000000000', '0x8000000000000000').
func (r Range) String() string {
	return r.Selector().String()
}

// HasNamespace reports whether a namespace's objects belong to this shard.
func (r Range) HasNamespace(namespace string) bool {
	if r.Whole() {
		return true
	}
	hash := "0x" + sharding.HashField(namespace)
	return !sharding.HexLess(hash, r.Start) && sharding.HexLess(hash, r.End)
}

// Of returns the shard, of count, that a namespace belongs to.
func Of(namespace string, count int) int {
	ranges, err := Ranges(count)
	if err != nil {
		return 0
	}
	for _, r := range ranges {
		if r.HasNamespace(namespace) {
			return r.Index
		}
	}
	return 0
}
