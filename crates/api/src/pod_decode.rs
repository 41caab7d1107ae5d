//! A Kubernetes-shaped `Pod` decoded straight into the domain's `Pod`.
//!
//! A pod as the API server returns it is three quarters fields decisions never
//! read (generateName, resourceVersion, most labels, annotations, condition
//! reasons and messages, container states). prost would allocate every one of
//! them; read here from the encoded bytes ([`crate::wire`]), they are checked —
//! bytes prost would reject are rejected — and only what the domain keeps is
//! allocated. The checks and field paths are those `convert` has always
//! applied to a `Pod` (`pods[i].metadata.uid`, …).

use std::sync::Arc;

use job_decider_core::defaults;
use job_decider_core::extended::{FAILED_NODES_ANNOTATION, RULE_MATCH_COUNTS_ANNOTATION};
use job_decider_core::model::{
    COMPLETION_INDEX_KEY, ConditionStatus, ContainerStatus, Deletion, INDEX_FAILURE_COUNT_KEY,
    INDEX_IGNORED_FAILURE_COUNT_KEY, JOB_TRACKING_FINALIZER, OwnerRef, Pod, PodCondition,
    PodLabels, PodPhase, Terminated,
};
use pbjson_types::Timestamp;

use crate::pb;
use crate::pod_details::{POD_READY, POD_SCHEDULED, WireDetails};
use crate::pod_fields::{PodAt, ReadFields, SharedNames, controller_ref};
use crate::violations::Violations;
use crate::wire::{
    Fields, Kind, Schema, TIMESTAMP, WireError, check, checked, known, map_entry, merge_timestamp,
};

/// `ContainerStateRunning`: startedAt.
const RUNNING: &Schema = &[(1, Kind::Message(TIMESTAMP))];

/// An owner reference, borrowed from the wire (checked UTF-8) until it is known to be needed.
#[derive(Default)]
struct Owner<'a> {
    api_version: &'a [u8],
    kind: &'a [u8],
    name: &'a [u8],
    uid: &'a [u8],
    controller: Option<bool>,
}

impl Owner<'_> {
    /// Whether this is the Job's own reference, `own`.
    fn is(&self, own: &OwnerRef) -> bool {
        self.api_version == own.api_version.as_bytes()
            && self.kind == own.kind.as_bytes()
            && self.name == own.name.as_bytes()
            && self.uid == own.uid.as_bytes()
    }
}

/// Checked bytes as the string they are.
fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

fn owner(bytes: &[u8]) -> Result<Owner<'_>, WireError> {
    const F: &str = "OwnerReference";
    let mut o = Owner::default();
    let mut fields = Fields::of(bytes);
    while let Some((tag, v)) = fields.next_field()? {
        match tag {
            1 => o.api_version = v.checked_bytes(F)?,
            2 => o.kind = v.checked_bytes(F)?,
            3 => o.name = v.checked_bytes(F)?,
            4 => o.uid = v.checked_bytes(F)?,
            5 => o.controller = Some(v.bool(F)?),
            6 => {
                v.bool(F)?;
            }
            _ => {}
        }
    }
    Ok(o)
}

/// What of `metadata` decisions read, borrowed.
#[derive(Default)]
struct Meta<'a> {
    name: &'a str,
    uid: &'a str,
    creation_timestamp: Option<Timestamp>,
    deletion_timestamp: Option<Timestamp>,
    deletion_grace_period_seconds: Option<i64>,
    labels: Vec<(Arc<str>, Arc<str>)>,
    completion_index: Option<&'a str>,
    index_failure_count: Option<&'a str>,
    index_ignored_failure_count: Option<&'a str>,
    /// The first controller reference and its position.
    controller: Option<(usize, Owner<'a>)>,
    owners: usize,
    owners_name_job: bool,
    tracking_finalizer: bool,
    rule_match_counts: Option<&'a str>,
    failed_nodes: Option<&'a str>,
}

fn metadata<'a>(
    bytes: &'a [u8],
    meta: &mut Meta<'a>,
    read: &ReadFields<'_>,
    names: &mut SharedNames,
    job_uid: &str,
) -> Result<(), WireError> {
    const F: &str = "ObjectMeta";
    let mut fields = Fields::of(bytes);
    while let Some((tag, v)) = fields.next_field()? {
        match tag {
            1 => meta.name = v.str(F)?,
            4 => meta.uid = v.str(F)?,
            2 | 3 | 5 => {
                v.checked_bytes(F)?;
            }
            6 => {
                v.int64(F)?;
            }
            7 => merge_timestamp(&mut meta.creation_timestamp, v.bytes(F)?)?,
            8 => merge_timestamp(&mut meta.deletion_timestamp, v.bytes(F)?)?,
            9 => meta.deletion_grace_period_seconds = Some(v.int64(F)?),
            10 => {
                const L: &str = "ObjectMeta.labels";
                let (key, value) = map_entry(v.bytes(F)?, L)?;
                match known(&read.label_keys, key) {
                    // A later entry of the same key wins, as in a map.
                    Some(key) => {
                        let value = names.label_value_from(value, L)?;
                        meta.labels.push((names.get(key), value));
                    }
                    None => {
                        checked(key, L)?;
                        checked(value, L)?;
                    }
                }
            }
            11 => {
                const A: &str = "ObjectMeta.annotations";
                let (key, value) = map_entry(v.bytes(F)?, A)?;
                checked(key, A)?;
                checked(value, A)?;
                let value = || std::str::from_utf8(value).unwrap_or_default();
                match key {
                    k if k == COMPLETION_INDEX_KEY.as_bytes() => {
                        meta.completion_index = Some(value())
                    }
                    k if k == INDEX_FAILURE_COUNT_KEY.as_bytes() => {
                        meta.index_failure_count = Some(value())
                    }
                    k if k == INDEX_IGNORED_FAILURE_COUNT_KEY.as_bytes() => {
                        meta.index_ignored_failure_count = Some(value())
                    }
                    k if k == RULE_MATCH_COUNTS_ANNOTATION.as_bytes() => {
                        meta.rule_match_counts = Some(value())
                    }
                    k if k == FAILED_NODES_ANNOTATION.as_bytes() => {
                        meta.failed_nodes = Some(value())
                    }
                    _ => {}
                }
            }
            12 => {
                let o = owner(v.bytes(F)?)?;
                meta.owners_name_job |= o.uid == job_uid.as_bytes();
                if o.controller == Some(true) && meta.controller.is_none() {
                    meta.controller = Some((meta.owners, o));
                }
                meta.owners += 1;
            }
            13 => {
                meta.tracking_finalizer |= v.checked_bytes(F)? == JOB_TRACKING_FINALIZER.as_bytes()
            }
            _ => {}
        }
    }
    Ok(())
}

fn spec<'a>(
    bytes: &'a [u8],
    node_name: &mut &'a str,
    sidecars: &mut Vec<String>,
) -> Result<(), WireError> {
    const F: &str = "PodSpecSummary";
    let mut fields = Fields::of(bytes);
    while let Some((tag, v)) = fields.next_field()? {
        match tag {
            1 => *node_name = v.str(F)?,
            2 => {
                let (mut name, mut always) = ("", false);
                let mut inner = Fields::of(v.bytes(F)?);
                while let Some((tag, v)) = inner.next_field()? {
                    match tag {
                        1 => name = v.str("InitContainerSummary")?,
                        2 => always = v.checked_bytes("InitContainerSummary")? == b"Always",
                        _ => {}
                    }
                }
                if always {
                    sidecars.push(name.to_string());
                }
            }
            _ => {}
        }
    }
    Ok(())
}

/// A container status as read off the wire: name, restart count, the
/// terminated state and the waiting reason; the rest checked.
struct WireContainer<'a> {
    name: Arc<str>,
    restart_count: i32,
    terminated: Option<WireTerminated<'a>>,
    /// `state.waiting.reason`, when the container waits.
    waiting_reason: Option<&'a str>,
}

fn container<'a>(bytes: &'a [u8], names: &mut SharedNames) -> Result<WireContainer<'a>, WireError> {
    const F: &str = "ContainerStatus";
    let (mut name, mut restart_count, mut terminated) = (None, 0, None);
    let mut waiting_reason = None;
    let mut fields = Fields::of(bytes);
    while let Some((tag, v)) = fields.next_field()? {
        match tag {
            1 => name = Some(names.name_from(v.bytes(F)?, F)?),
            2 => {
                let mut state = Fields::of(v.bytes(F)?);
                while let Some((tag, v)) = state.next_field()? {
                    match tag {
                        1 => {
                            const W: &str = "ContainerStateWaiting";
                            let reason: &mut &str = waiting_reason.get_or_insert_default();
                            let mut inner = Fields::of(v.bytes(F)?);
                            while let Some((tag, v)) = inner.next_field()? {
                                match tag {
                                    1 => *reason = v.str(W)?,
                                    2 => {
                                        v.checked_bytes(W)?;
                                    }
                                    _ => {}
                                }
                            }
                        }
                        2 => check(v.bytes(F)?, RUNNING, "ContainerStateRunning")?,
                        3 => {
                            let t: &mut WireTerminated = terminated.get_or_insert_default();
                            let mut inner = Fields::of(v.bytes(F)?);
                            while let Some((tag, v)) = inner.next_field()? {
                                const T: &str = "ContainerStateTerminated";
                                match tag {
                                    1 => t.exit_code = v.int32(T)?,
                                    2 => {
                                        v.int32(T)?;
                                    }
                                    3 => t.reason = v.str(T)?,
                                    4 => t.message = v.str(T)?,
                                    5 => check(v.bytes(T)?, TIMESTAMP, T)?,
                                    6 => merge_timestamp(&mut t.finished_at, v.bytes(T)?)?,
                                    _ => {}
                                }
                            }
                        }
                        _ => {}
                    }
                }
            }
            3 => restart_count = v.int32(F)?,
            4 => {
                v.bool(F)?;
            }
            _ => {}
        }
    }
    let name = name.unwrap_or_else(|| names.get(""));
    Ok(WireContainer {
        name,
        restart_count,
        terminated,
        waiting_reason,
    })
}

/// A terminated state as read off the wire, before its time is judged.
#[derive(Default)]
struct WireTerminated<'a> {
    exit_code: i32,
    finished_at: Option<Timestamp>,
    reason: &'a str,
    message: &'a str,
}

/// Decodes and converts one encoded `Pod`, the `i`th of `pods`; bytes that are
/// not a `Pod` are an error, any other problem a violation.
pub(crate) fn pod(
    bytes: &[u8],
    at: PodAt,
    own: &Arc<OwnerRef>,
    read: &ReadFields<'_>,
    names: &mut SharedNames,
    errs: &mut Violations,
) -> Result<Pod, WireError> {
    let mut lists = Violations::default();
    let mut meta = Meta::default();
    let mut node_name = "";
    let mut sidecars = Vec::new();
    let mut phase = "";
    // Gathered always (borrowed, no allocation); built only for a Job with a document.
    let mut details = WireDetails::default();
    let mut conditions: Vec<PodCondition> = Vec::new();
    let mut condition_count = 0;
    let mut container_statuses: Vec<ContainerStatus> = Vec::new();
    let mut init_container_statuses: Vec<ContainerStatus> = Vec::new();

    let mut fields = Fields::of(bytes);
    while let Some((tag, v)) = fields.next_field()? {
        match tag {
            1 | 2 => {
                v.checked_bytes("Pod")?;
            }
            3 => metadata(v.bytes("Pod.metadata")?, &mut meta, read, names, &own.uid)?,
            4 => spec(v.bytes("Pod.spec")?, &mut node_name, &mut sidecars)?,
            5 => {
                const F: &str = "PodStatus";
                let mut status = Fields::of(v.bytes("Pod.status")?);
                while let Some((tag, v)) = status.next_field()? {
                    match tag {
                        1 => phase = v.str(F)?,
                        2 => {
                            let c = condition_count;
                            condition_count += 1;
                            if let Some(kept) = condition(
                                v.bytes(F)?,
                                read,
                                names,
                                at,
                                c,
                                &mut lists,
                                &mut details,
                            )? {
                                conditions.push(kept);
                            }
                        }
                        3 | 4 => {
                            let (list, statuses) = if tag == 3 {
                                ("containerStatuses", &mut container_statuses)
                            } else {
                                ("initContainerStatuses", &mut init_container_statuses)
                            };
                            let c = statuses.len();
                            let WireContainer {
                                name,
                                restart_count,
                                terminated,
                                waiting_reason,
                            } = container(v.bytes(F)?, names)?;
                            if read.details {
                                if let Some(reason) = waiting_reason.filter(|r| !r.is_empty()) {
                                    details.waiting.push((Arc::clone(&name), reason));
                                }
                                if let Some(t) = &terminated {
                                    details.terminations.push((
                                        Arc::clone(&name),
                                        tag == 4,
                                        t.reason,
                                        t.message,
                                    ));
                                }
                            }
                            lists.non_negative(restart_count, || {
                                at.sub(format_args!("status.{list}[{c}].restartCount"))
                            });
                            let terminated = terminated.map(|t| Terminated {
                                exit_code: t.exit_code,
                                finished_at: lists.time(t.finished_at.as_ref(), || {
                                    at.sub(format_args!(
                                        "status.{list}[{c}].state.terminated.finishedAt"
                                    ))
                                }),
                            });
                            statuses.push(ContainerStatus {
                                name,
                                terminated,
                                restart_count,
                            });
                        }
                        5 => details.reason = v.str(F)?,
                        6 => details.message = v.str(F)?,
                        7 => merge_timestamp(&mut details.start_time, v.bytes(F)?)?,
                        _ => {}
                    }
                }
            }
            _ => {}
        }
    }

    if meta.uid.is_empty() {
        errs.required(at.sub("metadata.uid"), "");
    }
    if meta.name.is_empty() {
        errs.required(at.sub("metadata.name"), "");
    }
    let controller = meta.controller.take().map(|(j, o)| {
        // The Job's own reference is shared, not copied (most pods have it).
        if o.is(own) {
            return Arc::clone(own);
        }
        let owner = pb::OwnerReference {
            api_version: text(o.api_version),
            kind: text(o.kind),
            name: text(o.name),
            uid: text(o.uid),
            controller: o.controller,
            block_owner_deletion: None,
        };
        controller_ref(owner, own, errs, || {
            at.sub(format_args!("metadata.ownerReferences[{j}].uid"))
        })
    });
    let creation_timestamp = errs.time(meta.creation_timestamp.as_ref(), || {
        at.sub("metadata.creationTimestamp")
    });
    let deletion = errs
        .time(meta.deletion_timestamp.as_ref(), || {
            at.sub("metadata.deletionTimestamp")
        })
        .map(|timestamp| Deletion {
            timestamp,
            grace_period_seconds: meta.deletion_grace_period_seconds,
        });
    let phase = PodPhase::parse(phase).unwrap_or_else(|| {
        errs.not_supported(at.sub("status.phase"), phase, PodPhase::NAMES);
        PodPhase::Pending
    });
    errs.append(lists);
    let failure_details = read.details.then(|| {
        details.node_name = node_name;
        details.rule_match_counts = meta.rule_match_counts;
        details.failed_nodes = meta.failed_nodes;
        details.build()
    });
    Ok(Pod {
        name: meta.name.to_string(),
        uid: meta.uid.to_string(),
        labels: meta.labels.into_iter().collect::<PodLabels>(),
        completion_index: defaults::completion_index(meta.completion_index),
        index_failure_count: defaults::failure_count(meta.index_failure_count),
        index_ignored_failure_count: defaults::failure_count(meta.index_ignored_failure_count),
        controller,
        owners_name_job: meta.owners_name_job,
        has_tracking_finalizer: meta.tracking_finalizer,
        creation_timestamp,
        deletion,
        scheduled: !node_name.is_empty(),
        sidecar_init_containers: sidecars,
        phase,
        conditions,
        container_statuses,
        init_container_statuses,
        failure_details,
    })
}

/// One condition: every condition's time is checked; the ones decisions read
/// have their status checked and are kept; PodScheduled goes to the details.
fn condition<'a>(
    bytes: &'a [u8],
    read: &ReadFields<'_>,
    names: &mut SharedNames,
    at: PodAt,
    c: usize,
    errs: &mut Violations,
    details: &mut WireDetails<'a>,
) -> Result<Option<PodCondition>, WireError> {
    const F: &str = "PodCondition";
    let (mut condition_type, mut status): (&[u8], &str) = (b"", "");
    let mut reason = "";
    let mut last_transition_time = None;
    let mut fields = Fields::of(bytes);
    while let Some((tag, v)) = fields.next_field()? {
        match tag {
            1 => condition_type = v.bytes(F)?,
            2 => status = v.str(F)?,
            3 => check(v.bytes(F)?, TIMESTAMP, F)?,
            4 => merge_timestamp(&mut last_transition_time, v.bytes(F)?)?,
            5 => reason = v.str(F)?,
            6 => {
                v.checked_bytes(F)?;
            }
            _ => {}
        }
    }
    if read.details && condition_type == POD_SCHEDULED.as_bytes() {
        details.scheduled = Some((status, reason, last_transition_time));
    }
    if read.details && condition_type == POD_READY.as_bytes() {
        details.ready_reason = reason;
    }
    let Some(condition_type) = known(&read.conditions, condition_type) else {
        checked(condition_type, F)?;
        errs.time(last_transition_time.as_ref(), || {
            at.sub(format_args!("status.conditions[{c}].lastTransitionTime"))
        });
        return Ok(None);
    };
    let Ok(status) = status.parse::<ConditionStatus>();
    if let ConditionStatus::Other(other) = &status {
        errs.not_supported(
            at.sub(format_args!("status.conditions[{c}].status")),
            other,
            ConditionStatus::NAMES,
        );
    }
    let last_transition_time = errs.time(last_transition_time.as_ref(), || {
        at.sub(format_args!("status.conditions[{c}].lastTransitionTime"))
    });
    Ok(Some(PodCondition {
        condition_type: names.get(condition_type),
        status,
        last_transition_time,
    }))
}

#[cfg(test)]
pub(crate) mod tests;
