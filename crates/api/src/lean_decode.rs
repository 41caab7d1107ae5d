//! A `LeanPod` decoded straight into the domain's `Pod`: the high-volume path.
//!
//! prost would build a `pb::LeanPod` first — a string for every field, a map
//! for the labels, a list for the conditions — which conversion then moves or
//! drops. Read here from the encoded bytes ([`crate::wire`]), a pod allocates
//! only what the domain keeps: its name and uid, the labels the selector names,
//! the conditions decisions read, its container statuses. The rules are those
//! of the `Pod` form (`convert`): the same checks, the same field paths under
//! `leanPods[i]`. Bytes prost would reject are rejected here too.

use std::sync::Arc;

use job_decider_core::defaults;
use job_decider_core::model::{
    ConditionStatus, ContainerStatus, Deletion, OwnerRef, Pod, PodCondition, PodLabels, PodPhase,
    Terminated,
};
use pbjson_types::Timestamp;
use prost::Message;

use crate::pb;
use crate::pod_details::{POD_READY, POD_SCHEDULED, WireDetails};
use crate::pod_fields::{PodAt, ReadFields, SharedNames, controller_ref};
use crate::violations::Violations;
use crate::wire::{Fields, WireError, checked, known, map_entry, merge_timestamp};

/// One condition as read off the wire, before it is judged.
#[derive(Default)]
struct Condition<'a> {
    condition_type: &'a [u8],
    status: i32,
    last_transition_time: Option<Timestamp>,
    reason: &'a str,
}

fn condition(bytes: &[u8]) -> Result<Condition<'_>, WireError> {
    let mut c = Condition::default();
    let mut fields = Fields::of(bytes);
    while let Some((tag, value)) = fields.next_field()? {
        match tag {
            1 => c.condition_type = value.bytes("LeanPodCondition.type")?,
            2 => c.status = value.int32("LeanPodCondition.status")?,
            3 => merge_timestamp(
                &mut c.last_transition_time,
                value.bytes("LeanPodCondition.last_transition_time")?,
            )?,
            4 => c.reason = value.str("LeanPodCondition.reason")?,
            _ => {}
        }
    }
    Ok(c)
}

/// One container status as read off the wire.
#[derive(Default)]
struct Container<'a> {
    name: Arc<str>,
    restart_count: i32,
    /// Set when `terminated` is present: exit code and finish time.
    terminated: Option<(i32, Option<Timestamp>)>,
    /// The terminated state's reason and message.
    terminated_text: (&'a str, &'a str),
    /// `state.waiting.reason`.
    waiting_reason: &'a str,
}

fn container<'a>(bytes: &'a [u8], names: &mut SharedNames) -> Result<Container<'a>, WireError> {
    let mut c = Container::default();
    let mut fields = Fields::of(bytes);
    while let Some((tag, value)) = fields.next_field()? {
        match tag {
            1 => {
                const F: &str = "LeanContainerStatus.name";
                c.name = names.name_from(value.bytes(F)?, F)?;
            }
            2 => c.restart_count = value.int32("LeanContainerStatus.restart_count")?,
            3 => {
                let (exit_code, finished_at) = c.terminated.get_or_insert((0, None));
                let mut inner = Fields::of(value.bytes("LeanContainerStatus.terminated")?);
                while let Some((tag, value)) = inner.next_field()? {
                    match tag {
                        1 => *exit_code = value.int32("LeanTerminated.exit_code")?,
                        2 => merge_timestamp(
                            finished_at,
                            value.bytes("LeanTerminated.finished_at")?,
                        )?,
                        3 => c.terminated_text.0 = value.str("LeanTerminated.reason")?,
                        4 => c.terminated_text.1 = value.str("LeanTerminated.message")?,
                        _ => {}
                    }
                }
            }
            4 => c.waiting_reason = value.str("LeanContainerStatus.waiting_reason")?,
            _ => {}
        }
    }
    Ok(c)
}

/// Decodes and converts one encoded `LeanPod`, the `i`th of `leanPods`; bytes
/// that are not a `LeanPod` are an error, any other problem a violation.
///
/// Lists (labels, conditions, container statuses) are built in their domain
/// form as they are read; their violations are kept apart and reported after
/// those of the pod's other fields, in field order.
pub(crate) fn lean_pod(
    bytes: &[u8],
    at: PodAt,
    own: &Arc<OwnerRef>,
    read: &ReadFields<'_>,
    names: &mut SharedNames,
    errs: &mut Violations,
) -> Result<Pod, WireError> {
    let mut lists = Violations::default();
    let (mut name, mut uid) = ("", "");
    let mut labels: Vec<(Arc<str>, Arc<str>)> = Vec::new();
    let (mut completion_index, mut index_failure_count, mut index_ignored_failure_count) =
        (None, None, None);
    let mut controlled_by_job = false;
    let mut owner_references: Vec<pb::OwnerReference> = Vec::new();
    let mut tracking_finalizer = false;
    let (mut creation_timestamp, mut deletion_timestamp) = (None, None);
    let mut deletion_grace_period_seconds = None;
    let mut scheduled = false;
    let mut sidecars: Vec<String> = Vec::new();
    let mut phase = 0;
    let mut conditions: Vec<PodCondition> = Vec::new();
    let mut condition_count = 0;
    let mut container_statuses: Vec<ContainerStatus> = Vec::new();
    let mut init_container_statuses: Vec<ContainerStatus> = Vec::new();
    // Gathered always (borrowed, no allocation); built only for a Job with a document.
    let mut details = WireDetails::default();

    let mut fields = Fields::of(bytes);
    while let Some((tag, value)) = fields.next_field()? {
        match tag {
            1 => name = value.str("LeanPod.name")?,
            2 => uid = value.str("LeanPod.uid")?,
            3 => {
                let (key, value) = map_entry(value.bytes("LeanPod.labels")?, "LeanPod.labels")?;
                // Only the keys the selector names are kept (as the `Pod` form keeps them).
                match known(&read.label_keys, key) {
                    Some(key) => {
                        let value = names.label_value_from(value, "LeanPod.LabelsEntry.value")?;
                        labels.push((names.get(key), value));
                    }
                    None => {
                        checked(key, "LeanPod.LabelsEntry.key")?;
                        checked(value, "LeanPod.LabelsEntry.value")?;
                    }
                }
            }
            4 => completion_index = Some(value.str("LeanPod.completion_index")?),
            5 => index_failure_count = Some(value.str("LeanPod.index_failure_count")?),
            6 => {
                index_ignored_failure_count =
                    Some(value.str("LeanPod.index_ignored_failure_count")?)
            }
            7 => controlled_by_job = value.bool("LeanPod.controlled_by_job")?,
            8 => {
                // Rare (orphans, other owners): prost's own decoding is fine here.
                let bytes = value.bytes("LeanPod.owner_references")?;
                let owner = pb::OwnerReference::decode(bytes).map_err(|_| WireError::Message {
                    field: "LeanPod.owner_references",
                })?;
                owner_references.push(owner);
            }
            9 => tracking_finalizer = value.bool("LeanPod.tracking_finalizer")?,
            10 => merge_timestamp(
                &mut creation_timestamp,
                value.bytes("LeanPod.creation_timestamp")?,
            )?,
            11 => merge_timestamp(
                &mut deletion_timestamp,
                value.bytes("LeanPod.deletion_timestamp")?,
            )?,
            12 => {
                deletion_grace_period_seconds =
                    Some(value.int64("LeanPod.deletion_grace_period_seconds")?)
            }
            13 => scheduled = value.bool("LeanPod.scheduled")?,
            14 => sidecars.push(value.str("LeanPod.sidecar_init_containers")?.to_string()),
            15 => phase = value.int32("LeanPod.phase")?,
            16 => {
                let c = condition_count;
                condition_count += 1;
                let condition = condition(value.bytes("LeanPod.conditions")?)?;
                if read.details && condition.condition_type == POD_SCHEDULED.as_bytes() {
                    let status = match condition.status {
                        1 => "True",
                        2 => "False",
                        3 => "Unknown",
                        _ => "",
                    };
                    details.scheduled =
                        Some((status, condition.reason, condition.last_transition_time));
                }
                if read.details && condition.condition_type == POD_READY.as_bytes() {
                    details.ready_reason = condition.reason;
                }
                // Conditions decisions do not read are ignored, as the contract says.
                let Some(condition_type) = known(&read.conditions, condition.condition_type) else {
                    checked(condition.condition_type, "LeanPodCondition.type")?;
                    continue;
                };
                conditions.push(read_condition(
                    names.get(condition_type),
                    &condition,
                    at,
                    c,
                    &mut lists,
                ));
            }
            17 => {
                let c = container_statuses.len();
                let status = container(value.bytes("LeanPod.container_statuses")?, names)?;
                if read.details {
                    keep_details(&mut details, &status, false);
                }
                container_statuses.push(container_status(
                    status,
                    at,
                    "containerStatuses",
                    c,
                    &mut lists,
                ));
            }
            18 => {
                let c = init_container_statuses.len();
                let status = container(value.bytes("LeanPod.init_container_statuses")?, names)?;
                if read.details {
                    keep_details(&mut details, &status, true);
                }
                init_container_statuses.push(container_status(
                    status,
                    at,
                    "initContainerStatuses",
                    c,
                    &mut lists,
                ));
            }
            19 => details.reason = value.str("LeanPod.reason")?,
            20 => details.message = value.str("LeanPod.message")?,
            21 => details.node_name = value.str("LeanPod.node_name")?,
            22 => details.rule_match_counts = Some(value.str("LeanPod.rule_match_counts")?),
            23 => details.failed_nodes = Some(value.str("LeanPod.failed_nodes")?),
            24 => merge_timestamp(&mut details.start_time, value.bytes("LeanPod.start_time")?)?,
            _ => {}
        }
    }

    if uid.is_empty() {
        errs.required(at.sub("uid"), "");
    }
    if name.is_empty() {
        errs.required(at.sub("name"), "");
    }
    let owners_name_job = controlled_by_job || owner_references.iter().any(|o| o.uid == own.uid);
    let controller = if controlled_by_job {
        Some(Arc::clone(own))
    } else {
        owner_references
            .into_iter()
            .enumerate()
            .find(|(_, owner)| owner.controller == Some(true))
            .map(|(j, owner)| {
                controller_ref(owner, own, errs, || {
                    at.sub(format_args!("ownerReferences[{j}].uid"))
                })
            })
    };
    let creation_timestamp = errs.time(creation_timestamp.as_ref(), || at.sub("creationTimestamp"));
    let deletion = errs
        .time(deletion_timestamp.as_ref(), || at.sub("deletionTimestamp"))
        .map(|timestamp| Deletion {
            timestamp,
            grace_period_seconds: deletion_grace_period_seconds,
        });
    let phase = match pb::LeanPodPhase::try_from(phase) {
        Ok(pb::LeanPodPhase::Unspecified | pb::LeanPodPhase::Pending) => PodPhase::Pending,
        Ok(pb::LeanPodPhase::Running) => PodPhase::Running,
        Ok(pb::LeanPodPhase::Succeeded) => PodPhase::Succeeded,
        Ok(pb::LeanPodPhase::Failed) => PodPhase::Failed,
        Ok(pb::LeanPodPhase::Unknown) => PodPhase::Unknown,
        Err(_) => {
            errs.invalid(at.sub("phase"), phase, "not a LeanPodPhase value");
            PodPhase::Pending
        }
    };
    errs.append(lists);
    let failure_details = read.details.then(|| details.build());
    Ok(Pod {
        name: name.to_string(),
        uid: uid.to_string(),
        labels: labels.into_iter().collect::<PodLabels>(),
        completion_index: defaults::completion_index(completion_index),
        index_failure_count: defaults::failure_count(index_failure_count),
        index_ignored_failure_count: defaults::failure_count(index_ignored_failure_count),
        controller,
        owners_name_job,
        has_tracking_finalizer: tracking_finalizer,
        creation_timestamp,
        deletion,
        scheduled,
        sidecar_init_containers: sidecars,
        phase,
        conditions,
        container_statuses,
        init_container_statuses,
        failure_details,
    })
}

/// A container's waiting reason and termination, for the failure details.
fn keep_details<'a>(details: &mut WireDetails<'a>, status: &Container<'a>, init: bool) {
    if !status.waiting_reason.is_empty() {
        details
            .waiting
            .push((Arc::clone(&status.name), status.waiting_reason));
    }
    if status.terminated.is_some() {
        let (reason, message) = status.terminated_text;
        details
            .terminations
            .push((Arc::clone(&status.name), init, reason, message));
    }
}

/// A condition decisions read, judged: its status must be one of the three.
fn read_condition(
    condition_type: Arc<str>,
    condition: &Condition<'_>,
    at: PodAt,
    c: usize,
    errs: &mut Violations,
) -> PodCondition {
    let status = match pb::LeanConditionStatus::try_from(condition.status) {
        Ok(pb::LeanConditionStatus::True) => ConditionStatus::True,
        Ok(pb::LeanConditionStatus::False) => ConditionStatus::False,
        Ok(pb::LeanConditionStatus::Unknown) => ConditionStatus::Unknown,
        // Unset reads as an empty status string does: not one decisions can use.
        Ok(pb::LeanConditionStatus::Unspecified) | Err(_) => {
            errs.not_supported(
                at.sub(format_args!("conditions[{c}].status")),
                &condition.status.to_string(),
                &[
                    "LEAN_CONDITION_STATUS_TRUE",
                    "LEAN_CONDITION_STATUS_FALSE",
                    "LEAN_CONDITION_STATUS_UNKNOWN",
                ],
            );
            ConditionStatus::Other(String::new())
        }
    };
    let last_transition_time = errs.time(condition.last_transition_time.as_ref(), || {
        at.sub(format_args!("conditions[{c}].lastTransitionTime"))
    });
    PodCondition {
        condition_type,
        status,
        last_transition_time,
    }
}

/// A container status, judged: its restart count may not be negative.
fn container_status(
    status: Container,
    at: PodAt,
    list: &str,
    c: usize,
    errs: &mut Violations,
) -> ContainerStatus {
    errs.non_negative(status.restart_count, || {
        at.sub(format_args!("{list}[{c}].restartCount"))
    });
    let terminated = status
        .terminated
        .as_ref()
        .map(|(exit_code, finished_at)| Terminated {
            exit_code: *exit_code,
            finished_at: errs.time(finished_at.as_ref(), || {
                at.sub(format_args!("{list}[{c}].terminated.finishedAt"))
            }),
        });
    ContainerStatus {
        name: status.name,
        terminated,
        restart_count: status.restart_count,
    }
}

#[cfg(test)]
mod tests;
