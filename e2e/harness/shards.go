package harness

import (
	"context"
	"math/bits"
	"strconv"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/sharding"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
)

// ShardOf is the shard of a namespace among count, as the API server and the
// sharded shim cut them (KEP-5866: the FNV-1a hash of metadata.namespace,
// shard i from floor(i·2^64/count) up to the next shard's start).
func ShardOf(namespace string, count int) int {
	// HashField writes the hash as 16 hex digits.
	h, err := strconv.ParseUint(sharding.HashField(namespace), 16, 64)
	if err != nil || count < 1 {
		return -1
	}
	i, _ := bits.Mul64(h, uint64(count))
	// floor(h·count/2^64) is one short when h sits exactly on a start that
	// floor(i·2^64/count) rounded down.
	if next := int(i) + 1; next < count {
		if start, _ := bits.Div64(uint64(next), 0, uint64(count)); h >= start {
			return next
		}
	}
	return int(i)
}

// LeaseHolder is who holds the Lease namespace/name ("" when nobody does or it
// cannot be read).
func LeaseHolder(ctx context.Context, client kubernetes.Interface, namespace, name string) string {
	lease, err := client.CoordinationV1().Leases(namespace).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return ""
	}
	return ptr.Deref(lease.Spec.HolderIdentity, "")
}
