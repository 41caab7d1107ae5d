package shardlease

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	coordinationclient "k8s.io/client-go/kubernetes/typed/coordination/v1"
)

// ShardsLabel, on each shard's Lease, is the shard count its holder cuts
// the namespaces by: replicas that disagree on it disagree on the ranges.
const ShardsLabel = "job-decider.dev/shim-shards"

// OtherLayoutHeld names a Lease of this shim (base: --leader-elect-name)
// that another replica holds under another shard count — the one Lease of
// an unsharded shim (base itself) or a shard's Lease labelled with another
// count — or "" when there is none. Until it is gone, acting would overlap
// that replica's namespaces: during a change of --shards, or a move from the
// Deployment to the StatefulSet, the new layout waits for the old one.
func OtherLayoutHeld(ctx context.Context, leases coordinationclient.LeaseInterface, base string, count int, identity string, now time.Time) (string, error) {
	list, err := leases.List(ctx, metav1.ListOptions{})
	if err != nil {
		return "", err
	}
	for i := range list.Items {
		lease := &list.Items[i]
		var theirs int
		switch {
		case lease.Name == base:
			theirs = 1
		case strings.HasPrefix(lease.Name, base+"-shard-"):
			n, err := strconv.Atoi(lease.Labels[ShardsLabel])
			if err != nil {
				n = 0 // unlabelled: not this layout's either
			}
			theirs = n
		default:
			continue
		}
		if theirs != count && heldByAnother(lease, identity, now) {
			return fmt.Sprintf("%s (held by %s, %d shards)", lease.Name, ptrValue(lease.Spec.HolderIdentity), theirs), nil
		}
	}
	return "", nil
}

// WaitForOtherLayouts polls OtherLayoutHeld every period until no other
// layout holds a Lease, or ctx is done (then its error). waiting hears what
// it waits for. Without the right to list Leases (the RBAC of a shim older
// than sharding) there is nothing to check: it says so and returns.
func WaitForOtherLayouts(ctx context.Context, leases coordinationclient.LeaseInterface, base string, count int, identity string, period time.Duration, waiting func(held string)) error {
	for {
		held, err := OtherLayoutHeld(ctx, leases, base, count, identity, time.Now())
		if apierrors.IsForbidden(err) {
			waiting("(none checked: listing Leases is forbidden; grant leases list to check for other layouts)")
			return nil
		}
		if err == nil && held == "" {
			return nil
		}
		if err == nil {
			waiting(held)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(period):
		}
	}
}
