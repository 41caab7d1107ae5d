package controller

import "job-decider.dev/clients/go/apply"

// cachedResource names an informer cache the shim reads decisions from; the
// own-writes guard (apply.OwnWrites) and the freshness barrier share the names.
type cachedResource = apply.Resource

const (
	jobsCache = apply.ResourceJobs
	podsCache = apply.ResourcePods
)

// syncedVersion reports the newest resourceVersion an informer's store has seen.
type syncedVersion = apply.SyncedVersion
