package request

import (
	"google.golang.org/protobuf/types/known/timestamppb"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// timestamp is t as the JSON route gives it: unset when zero, whole seconds
// otherwise (metav1.Time marshals as RFC 3339 without fractions).
func timestamp(t metav1.Time) *timestamppb.Timestamp {
	if t.IsZero() {
		return nil
	}
	return &timestamppb.Timestamp{Seconds: t.Unix()}
}

// timestampPtr is timestamp for an optional time.
func timestampPtr(t *metav1.Time) *timestamppb.Timestamp {
	if t == nil {
		return nil
	}
	return timestamp(*t)
}
