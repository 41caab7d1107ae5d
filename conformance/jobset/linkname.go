package main

// The JobSet mutating webhook's Default is a method of an unexported type
// (pkg/webhooks.jobSetWebhook), reachable from outside only through
// go:linkname. Default never reads the receiver's one field (a client), so a
// struct of the same shape stands in for it.

import (
	"context"
	"fmt"
	_ "unsafe" // go:linkname

	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"
	jobset "sigs.k8s.io/jobset/api/jobset/v1alpha2"
	_ "sigs.k8s.io/jobset/pkg/webhooks" // links the method pulled below
)

// webhookShape has the field list of upstream's jobSetWebhook.
type webhookShape struct {
	client client.Client
}

//go:linkname webhookDefault sigs.k8s.io/jobset/pkg/webhooks.(*jobSetWebhook).Default
func webhookDefault(w *webhookShape, ctx context.Context, js *jobset.JobSet) error

// defaultJobSet applies upstream's webhook defaults, as every JobSet read
// from an API server with JobSet installed has them.
func defaultJobSet(ctx context.Context, js *jobset.JobSet) error {
	return webhookDefault(&webhookShape{}, ctx, js)
}

//go:linkname webhookValidateCreate sigs.k8s.io/jobset/pkg/webhooks.(*jobSetWebhook).ValidateCreate
func webhookValidateCreate(w *webhookShape, ctx context.Context, js *jobset.JobSet) (admission.Warnings, error)

// admissionErrors says why upstream's API would refuse to create this JobSet:
// the CRD's enum on rule actions and the validating webhook (which reads its
// client only for volume claim policies, which the contract cannot carry).
func admissionErrors(ctx context.Context, js *jobset.JobSet) []string {
	var out []string
	if fp := js.Spec.FailurePolicy; fp != nil {
		for i, r := range fp.Rules {
			switch r.Action {
			case jobset.FailJobSet, jobset.RestartJobSet, jobset.RestartJobSetAndIgnoreMaxRestarts, jobset.RestartJob, jobset.RestartJobAndIgnoreMaxRestarts:
			default:
				out = append(out, fmt.Sprintf("CRD: spec.failurePolicy.rules[%d].action: Unsupported value: %q", i, r.Action))
			}
		}
	}
	if len(js.Spec.VolumeClaimPolicies) > 0 {
		return append(out, "webhook: not run (volume claim policies need a client)")
	}
	if _, err := webhookValidateCreate(&webhookShape{}, ctx, js); err != nil {
		out = append(out, "webhook: "+err.Error())
	}
	return out
}
