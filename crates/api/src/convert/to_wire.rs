//! Domain → wire: a plan, the controller state and a Job status as the contract's
//! messages, in the core's order (the way in is the parent's).

use super::*;

/// The plan on the wire (without an explanation).
pub fn response_from_plan(plan: &Plan) -> pb::DecideJobResponse {
    pb::DecideJobResponse {
        explanation: None,
        actions: plan.actions.iter().map(action_to_pb).collect(),
        requeue_after: plan.requeue_after.map(duration_to_pb),
        // An empty record is the same as no state (a controller that just started).
        state: (plan.state != ControllerState::default()).then(|| state_to_pb(&plan.state)),
    }
}

/// Controller state on the wire.
pub fn state_to_pb(state: &ControllerState) -> pb::ControllerState {
    pb::ControllerState {
        backoff: Some(pb::BackoffRecord {
            failures_after_last_success: state.backoff.failures_after_last_success,
            last_failure_time: state.backoff.last_failure_time.map(time_to_pb),
        }),
    }
}

fn pod_refs(pods: &[PodRef]) -> Vec<pb::PodReference> {
    pods.iter()
        .map(|p| pb::PodReference {
            name: p.name.clone(),
            uid: p.uid.clone(),
        })
        .collect()
}

fn action_to_pb(action: &Action) -> pb::Action {
    use pb::action::Kind;
    let kind = match action {
        Action::AdoptPods(pods) => Kind::AdoptPods(pb::AdoptPods {
            pods: pod_refs(pods),
        }),
        Action::ReleasePods(pods) => Kind::ReleasePods(pb::ReleasePods {
            pods: pod_refs(pods),
        }),
        // In the core's order: ascending completion index (manage creates them so).
        Action::CreatePods(pods) => Kind::CreatePods(pb::CreatePods {
            pods: pods.iter().map(pod_creation_to_pb).collect(),
        }),
        Action::DeletePods(pods) => Kind::DeletePods(pb::DeletePods {
            pods: pods.iter().map(pod_deletion_to_pb).collect(),
        }),
        Action::RemoveFinalizers(pods) => Kind::RemoveFinalizers(pb::RemoveFinalizers {
            pods: pod_refs(pods),
        }),
        Action::UpdateStatus(status) => Kind::UpdateStatus(pb::UpdateStatus {
            status: Some(job_status_to_pb(status)),
        }),
        Action::RecordEvent(event) => Kind::RecordEvent(event_to_pb(event)),
        Action::FailPods(pods) => Kind::FailPods(pb::FailPods {
            pods: pods
                .iter()
                .map(|p| pb::PodFailure {
                    pod: Some(pb::PodReference {
                        name: p.pod.name.clone(),
                        uid: p.pod.uid.clone(),
                    }),
                    condition_type: p.condition_type.clone(),
                    reason: p.reason.clone(),
                    message: p.message.clone(),
                    force_delete: p.force_delete,
                })
                .collect(),
        }),
    };
    pb::Action { kind: Some(kind) }
}

fn pod_creation_to_pb(pod: &PodCreation) -> pb::PodCreation {
    pb::PodCreation {
        name: String::new(),
        generate_name: pod.generate_name.clone(),
        labels: pod.labels.clone().into_iter().collect(),
        annotations: pod.annotations.clone().into_iter().collect(),
        finalizers: pod.finalizers.clone(),
        hostname: pod.hostname.clone(),
        env: pod
            .env
            .iter()
            .map(|e| pb::EnvVar {
                name: e.name.clone(),
                value: String::new(),
                value_from: Some(pb::EnvVarSource {
                    field_ref: Some(pb::ObjectFieldSelector {
                        api_version: String::new(),
                        field_path: e.field_path.clone(),
                    }),
                }),
            })
            .collect(),
        completion_index: pod.completion_index,
        // As metav1.NewControllerRef builds it: controller and blockOwnerDeletion set.
        owner_reference: Some(pb::OwnerReference {
            api_version: pod.owner.api_version.clone(),
            kind: pod.owner.kind.clone(),
            name: pod.owner.name.clone(),
            uid: pod.owner.uid.clone(),
            controller: Some(true),
            block_owner_deletion: Some(true),
        }),
        avoid_nodes: pod.avoid_nodes.as_ref().map(|a| pb::AvoidNodes {
            nodes: a.nodes.clone(),
            mode: a.mode.as_str().to_string(),
        }),
    }
}

fn pod_deletion_to_pb(pod: &PodDeletion) -> pb::PodDeletion {
    pb::PodDeletion {
        name: pod.pod.name.clone(),
        uid: pod.pod.uid.clone(),
        remove_finalizer_first: pod.remove_finalizer_first,
        ready: pod.ready,
    }
}

fn event_to_pb(event: &Event) -> pb::RecordEvent {
    pb::RecordEvent {
        r#type: event.event_type.as_str().to_string(),
        reason: event.reason.clone(),
        message: event.message.clone(),
    }
}

/// A Job status on the wire.
pub fn job_status_to_pb(status: &JobStatus) -> pb::JobStatus {
    pb::JobStatus {
        conditions: status
            .conditions
            .iter()
            .map(|c| pb::JobCondition {
                r#type: c.condition_type.as_str().to_string(),
                status: c.status.as_str().to_string(),
                last_probe_time: c.last_probe_time.map(time_to_pb),
                last_transition_time: c.last_transition_time.map(time_to_pb),
                reason: c.reason.clone(),
                message: c.message.clone(),
            })
            .collect(),
        start_time: status.start_time.map(time_to_pb),
        completion_time: status.completion_time.map(time_to_pb),
        active: status.active,
        succeeded: status.succeeded,
        failed: status.failed,
        terminating: status.terminating,
        completed_indexes: status.completed_indexes.clone(),
        failed_indexes: status.failed_indexes.clone(),
        uncounted_terminated_pods: status.uncounted_terminated_pods.as_ref().map(|u| {
            pb::UncountedTerminatedPods {
                succeeded: u.succeeded.clone(),
                failed: u.failed.clone(),
            }
        }),
        ready: status.ready,
    }
}
