// Package request builds DecideJob requests from client-go objects, with no
// JSON step: a batchv1.Job becomes the contract's Job field by field, and each
// corev1.Pod becomes a LeanPod (the lean encoding: only what decisions read),
// or a Kubernetes-shaped Pod when a pod has no lean form.
//
// The conversions keep the meaning the JSON route gives (objects marshalled
// with encoding/json and read with protojson): fields the contract leaves out
// are dropped, a nil pointer is an unset field, and times keep whole seconds,
// the precision metav1.Time has on the wire. LeanPodFromProto converts a
// contract Pod the same way, for callers (the conformance harness) that hold
// requests rather than client-go objects; both agree with the server's own
// reference conversion (crates/api/src/lean.rs).
//
// The returned messages share strings and label maps with their inputs, as
// informer objects are read-only anyway; copy an input before changing it.
package request
