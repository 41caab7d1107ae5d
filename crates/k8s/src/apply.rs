//! Plans applied with kube-rs (feature `kube`): a `DecideJobResponse` turned
//! into Kubernetes API calls in the order, with the preconditions and the
//! conflict handling of the shim's own applier (`clients/go/apply`).
//!
//! The plan is checked whole before its first write (an action kind this
//! crate does not know, a pod that does not build from the template, a status
//! that does not convert refuse it: nothing is written). Then its actions run
//! in order, and the first that fails stops the plan:
//!
//! - `create_pods`: the Job's template overlaid with each `PodCreation`,
//!   created in slow-start batches of 1, 2, 4, …, stopping after a batch with
//!   a failed creation;
//! - `delete_pods`: each delete guarded by the pod's UID (a precondition),
//!   the tracking finalizer removed first when `removeFinalizerFirst`; a pod
//!   already gone is not an error;
//! - `remove_finalizers`: a strategic merge patch per pod
//!   (`$deleteFromPrimitiveList/finalizers`) carrying `metadata.uid`, so the
//!   API server refuses it for another pod of the same name;
//! - `update_status`: a PUT of the status subresource carrying the
//!   resourceVersion of the Job the decision was made on; a second status
//!   write carries the resourceVersion the first returned;
//! - `record_event` (to [`Applier::with_events`]'s sink), `adopt_pods` (after
//!   a fresh read of the Job), `release_pods`, `fail_pods` (a status patch to
//!   Failed, then a delete guarded by UID).
//!
//! A 409 Conflict, like any error, stops the plan and is not retried: decide
//! again from a fresh read ([`Error::is_conflict`]).

use std::collections::BTreeMap;
use std::sync::Arc;

use futures::stream::{self, StreamExt};
use k8s_openapi::api::batch::v1::JobStatus;
use k8s_openapi::api::core::v1::{
    EnvVar, NodeAffinity, NodeSelector, NodeSelectorRequirement, NodeSelectorTerm, PodSpec,
    PreferredSchedulingTerm,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference};
use kube::Api;
use kube::api::{DeleteParams, Patch, PatchParams, PostParams, Preconditions};
use serde_json::json;

use crate::job_decider_api::pb;
use crate::{Job, Pod};

/// The finalizer through which Jobs track their pods.
pub const JOB_TRACKING_FINALIZER: &str = "batch.kubernetes.io/job-tracking";

/// Pod writes of one action in flight at once (the Go applier's bound).
const POD_WRITE_CONCURRENCY: usize = 50;

/// The weight of the preferred node-avoidance term: the most a preference
/// can weigh, so it outranks the template's own preferences.
const PREFERRED_AVOID_WEIGHT: i32 = 100;

/// Where `record_event` actions go: called with the Job the plan was decided
/// on and the event (type, reason, message).
pub type EventSink = Arc<dyn Fn(&Job, &pb::RecordEvent) + Send + Sync>;

/// Why a plan was refused whole, before any write.
#[derive(Debug, thiserror::Error)]
pub enum Refusal {
    /// An action of a kind this crate does not know: the decider is newer.
    #[error("unknown action: this applier is older than the decider")]
    UnknownAction,
    /// An action this crate knows but cannot apply.
    #[error("{action}: {detail}")]
    Invalid {
        /// The action's name, as the contract spells its kind.
        action: &'static str,
        /// What is wrong with it.
        detail: String,
    },
}

/// An action that failed part-way.
#[derive(Debug, thiserror::Error)]
pub enum ActionError {
    /// The API server refused a write or could not be reached (a 409 Conflict
    /// is `kube::Error::Api` with code 409).
    #[error(transparent)]
    Kube(#[from] kube::Error),
    /// Several pod writes of one action failed; the first is kept.
    #[error("{failed} pod writes failed, the first: {first}")]
    Pods {
        /// How many of the action's pod writes failed.
        failed: usize,
        /// The first failure.
        #[source]
        first: kube::Error,
    },
    /// `adopt_pods` found the Job re-created under its name.
    #[error("job was re-created (uid {now}, decided on {decided}); not adopting")]
    JobRecreated {
        /// The uid the API server has now.
        now: String,
        /// The uid of the Job the plan was decided on.
        decided: String,
    },
    /// `adopt_pods` found the Job being deleted.
    #[error("job is being deleted; not adopting")]
    JobDeleting,
}

/// Applying a plan failed.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The plan was refused whole: nothing was written.
    #[error("plan refused, nothing applied: action {index} of {total}: {reason}")]
    Refused {
        /// The 1-based position of the first action refused.
        index: usize,
        /// The number of actions in the plan.
        total: usize,
        /// Why.
        #[source]
        reason: Refusal,
    },
    /// The Job has no name or namespace to write to.
    #[error("plan refused, nothing applied: the job has no {0}")]
    JobUnnamed(&'static str),
    /// An action failed; the actions before it were applied, none after.
    #[error("action {index} of {total} ({action}): {source}")]
    Action {
        /// The 1-based position of the failed action.
        index: usize,
        /// The number of actions in the plan.
        total: usize,
        /// The action's name, as the contract spells its kind.
        action: &'static str,
        /// What failed.
        #[source]
        source: ActionError,
        /// What was applied before the failure.
        outcome: Box<Outcome>,
    },
}

impl Error {
    /// Whether the API server answered 409 Conflict (the Job or a pod changed
    /// since the decision, or a UID precondition failed): decide again from a
    /// fresh read rather than retry.
    pub fn is_conflict(&self) -> bool {
        match self {
            Error::Action {
                source: ActionError::Kube(e) | ActionError::Pods { first: e, .. },
                ..
            } => code(e) == Some(409),
            _ => false,
        }
    }

    /// What was applied before the failure (`None` for a plan refused whole).
    pub fn outcome(&self) -> Option<&Outcome> {
        match self {
            Error::Action { outcome, .. } => Some(outcome),
            _ => None,
        }
    }

    /// Whether the plan's state is to be sent with the next request (see
    /// [`Outcome::state_holds`]); `false` for a refused plan.
    pub fn state_holds(&self) -> bool {
        self.outcome().is_some_and(Outcome::state_holds)
    }
}

/// What [`Applier::apply`] did.
#[derive(Debug, Clone)]
pub struct Outcome {
    /// The Job as the last successful status write returned it, or the Job
    /// given to `apply` when no status was written.
    pub job: Job,
    /// The number of actions applied in full, in order.
    pub applied: usize,
    /// Set when every action was applied.
    pub complete: bool,
    /// Set once an `update_status` action succeeded.
    pub status_written: bool,
}

impl Outcome {
    /// Whether the plan's `state` is to be sent with the next request for
    /// this Job: it describes the Job as of the plan's status write, so it
    /// holds once that write succeeded (or the whole plan applied).
    pub fn state_holds(&self) -> bool {
        self.complete || self.status_written
    }
}

/// Applies plans through one kube-rs client. It holds no per-Job state, so
/// one `Applier` serves any number of Jobs and tasks.
#[derive(Clone)]
pub struct Applier {
    client: kube::Client,
    events: Option<EventSink>,
}

impl std::fmt::Debug for Applier {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Applier")
            .field("events", &self.events.is_some())
            .finish_non_exhaustive()
    }
}

impl Applier {
    /// An applier that writes through `client`; `record_event` actions are
    /// dropped until [`Applier::with_events`] names a sink.
    pub fn new(client: kube::Client) -> Self {
        Self {
            client,
            events: None,
        }
    }

    /// The same applier, passing `record_event` actions to `sink` (an
    /// `events.k8s.io` recorder of the caller's choice).
    pub fn with_events(mut self, sink: EventSink) -> Self {
        self.events = Some(sink);
        self
    }

    /// Applies `plan` to `job`, the Job it was decided on as read (its
    /// resourceVersion guards the status write). Refuses the plan, writing
    /// nothing, when any action cannot be applied; otherwise runs the actions
    /// in order and stops at the first failure.
    pub async fn apply(&self, job: &Job, plan: &pb::DecideJobResponse) -> Result<Outcome, Error> {
        let total = plan.actions.len();
        let mut run = Run {
            applier: self,
            decided: job,
            job: job.clone(),
            status_written: false,
            namespace: String::new(),
            name: String::new(),
        };
        if total == 0 {
            return Ok(run.outcome(0, true));
        }
        run.namespace = job
            .metadata
            .namespace
            .clone()
            .filter(|n| !n.is_empty())
            .ok_or(Error::JobUnnamed("namespace"))?;
        run.name = job
            .metadata
            .name
            .clone()
            .filter(|n| !n.is_empty())
            .ok_or(Error::JobUnnamed("name"))?;
        for (i, action) in plan.actions.iter().enumerate() {
            validate(job, action).map_err(|reason| Error::Refused {
                index: i + 1,
                total,
                reason,
            })?;
        }
        for (i, action) in plan.actions.iter().enumerate() {
            let Some(kind) = &action.kind else {
                // validate refused such a plan before its first write.
                continue;
            };
            if let Err(source) = run.apply_one(kind).await {
                return Err(Error::Action {
                    index: i + 1,
                    total,
                    action: name_of(kind),
                    source,
                    outcome: Box::new(run.outcome(i, false)),
                });
            }
        }
        Ok(run.outcome(total, true))
    }
}

/// The contract's name for an action kind.
fn name_of(kind: &pb::action::Kind) -> &'static str {
    use pb::action::Kind;
    match kind {
        Kind::CreatePods(_) => "create_pods",
        Kind::DeletePods(_) => "delete_pods",
        Kind::RemoveFinalizers(_) => "remove_finalizers",
        Kind::UpdateStatus(_) => "update_status",
        Kind::RecordEvent(_) => "record_event",
        Kind::AdoptPods(_) => "adopt_pods",
        Kind::ReleasePods(_) => "release_pods",
        Kind::FailPods(_) => "fail_pods",
    }
}

/// Checks without writing that the action is one this crate knows and can
/// apply: a plan refused part-way would leave its prefix written.
fn validate(job: &Job, action: &pb::Action) -> Result<(), Refusal> {
    use pb::action::Kind;
    // A newer decider's kind decodes as no kind at all.
    let kind = action.kind.as_ref().ok_or(Refusal::UnknownAction)?;
    let invalid = |detail: String| Refusal::Invalid {
        action: name_of(kind),
        detail,
    };
    match kind {
        Kind::CreatePods(c) => {
            for pc in &c.pods {
                pod_from_template(job, pc).map_err(invalid)?;
            }
        }
        Kind::UpdateStatus(u) => {
            status_to_kube(u.status.as_ref()).map_err(invalid)?;
        }
        Kind::FailPods(f) => {
            for p in &f.pods {
                if p.condition_type.is_empty() {
                    let name = p.pod.as_ref().map_or("", |r| r.name.as_str());
                    return Err(invalid(format!("pod {name} has no condition type")));
                }
            }
        }
        Kind::DeletePods(_)
        | Kind::RemoveFinalizers(_)
        | Kind::RecordEvent(_)
        | Kind::AdoptPods(_)
        | Kind::ReleasePods(_) => {}
    }
    Ok(())
}

/// A contract message as the Kubernetes type of the same JSON form: the
/// contract names every field as the API does (these messages hold no int64,
/// the one type proto3 JSON writes differently).
fn to_kube<M: serde::Serialize, K: serde::de::DeserializeOwned>(msg: &M) -> Result<K, String> {
    serde_json::to_value(msg)
        .and_then(serde_json::from_value)
        .map_err(|e| e.to_string())
}

/// The plan's status as the API's `JobStatus`.
fn status_to_kube(status: Option<&pb::JobStatus>) -> Result<JobStatus, String> {
    status.map_or_else(|| Ok(JobStatus::default()), to_kube)
}

/// The pod one `PodCreation` asks for: the Job's pod template (labels,
/// annotations, finalizers, spec) overlaid with the entry's name or
/// generateName (else `<job>-`), labels, annotations, finalizers, hostname,
/// environment (added to each container lacking a variable of that name),
/// node avoidance and owner reference. Exported for dry runs.
pub fn pod_from_template(job: &Job, pc: &pb::PodCreation) -> Result<Pod, String> {
    let template = job.spec.as_ref().map(|s| s.template.clone());
    let template = template.unwrap_or_default();
    let tmeta = template.metadata.unwrap_or_default();
    let mut spec = template.spec.unwrap_or_default();
    let mut labels = tmeta.labels.unwrap_or_default();
    labels.extend(pc.labels.iter().map(|(k, v)| (k.clone(), v.clone())));
    let mut annotations = tmeta.annotations.unwrap_or_default();
    annotations.extend(pc.annotations.iter().map(|(k, v)| (k.clone(), v.clone())));
    let mut finalizers = tmeta.finalizers.unwrap_or_default();
    for f in &pc.finalizers {
        if !finalizers.contains(f) {
            finalizers.push(f.clone());
        }
    }
    let (name, generate_name) = if !pc.name.is_empty() {
        (Some(pc.name.clone()), None)
    } else if !pc.generate_name.is_empty() {
        (None, Some(pc.generate_name.clone()))
    } else {
        let job_name = job.metadata.name.clone().unwrap_or_default();
        (None, Some(format!("{job_name}-")))
    };
    if !pc.hostname.is_empty() {
        spec.hostname = Some(pc.hostname.clone());
    }
    if !pc.env.is_empty() {
        let env = pc
            .env
            .iter()
            .map(|e| to_kube::<_, EnvVar>(e).map_err(|err| format!("env {:?}: {err}", e.name)))
            .collect::<Result<Vec<_>, _>>()?;
        for c in spec.init_containers.iter_mut().flatten() {
            add_missing_env(&mut c.env, &env);
        }
        for c in &mut spec.containers {
            add_missing_env(&mut c.env, &env);
        }
    }
    if let Some(an) = &pc.avoid_nodes {
        avoid_nodes(&mut spec, an)?;
    }
    let mut owner_references = Vec::new();
    if let Some(r) = &pc.owner_reference {
        owner_references
            .push(to_kube::<_, OwnerReference>(r).map_err(|e| format!("owner reference: {e}"))?);
    }
    let some_map = |m: BTreeMap<String, String>| (!m.is_empty()).then_some(m);
    Ok(Pod {
        metadata: ObjectMeta {
            namespace: job.metadata.namespace.clone(),
            name,
            generate_name,
            labels: some_map(labels),
            annotations: some_map(annotations),
            finalizers: (!finalizers.is_empty()).then_some(finalizers),
            owner_references: (!owner_references.is_empty()).then_some(owner_references),
            ..ObjectMeta::default()
        },
        spec: Some(spec),
        status: None,
    })
}

/// Adds each variable to a container's env unless one of its name is there.
fn add_missing_env(have: &mut Option<Vec<EnvVar>>, env: &[EnvVar]) {
    let have = have.get_or_insert_with(Vec::new);
    for e in env {
        if !have.iter().any(|h| h.name == e.name) {
            have.push(e.clone());
        }
    }
}

/// Adds the plan's node exclusion to a pod spec: one `metadata.name NotIn`
/// requirement per node (a field requirement takes one value), in every
/// required term (terms are ORed) or in one preferred term.
fn avoid_nodes(spec: &mut PodSpec, an: &pb::AvoidNodes) -> Result<(), String> {
    if an.nodes.is_empty() {
        return Ok(());
    }
    let not_on = || {
        an.nodes
            .iter()
            .map(|n| NodeSelectorRequirement {
                key: "metadata.name".to_string(),
                operator: "NotIn".to_string(),
                values: Some(vec![n.clone()]),
            })
            .collect::<Vec<_>>()
    };
    let affinity = spec.affinity.get_or_insert_with(Default::default);
    let na = affinity
        .node_affinity
        .get_or_insert_with(NodeAffinity::default);
    match an.mode.as_str() {
        "Preferred" => {
            na.preferred_during_scheduling_ignored_during_execution
                .get_or_insert_with(Vec::new)
                .push(PreferredSchedulingTerm {
                    weight: PREFERRED_AVOID_WEIGHT,
                    preference: NodeSelectorTerm {
                        match_fields: Some(not_on()),
                        match_expressions: None,
                    },
                });
        }
        "Required" => {
            let req = na
                .required_during_scheduling_ignored_during_execution
                .get_or_insert_with(NodeSelector::default);
            if req.node_selector_terms.is_empty() {
                req.node_selector_terms.push(NodeSelectorTerm::default());
            }
            for term in &mut req.node_selector_terms {
                term.match_fields
                    .get_or_insert_with(Vec::new)
                    .extend(not_on());
            }
        }
        other => {
            return Err(format!(
                "avoid_nodes: unknown mode {other:?} (want \"Required\" or \"Preferred\")"
            ));
        }
    }
    Ok(())
}

/// The HTTP status of an API error.
fn code(e: &kube::Error) -> Option<u16> {
    match e {
        kube::Error::Api(status) => Some(status.code),
        _ => None,
    }
}

/// The first of a set of pod writes' failures, if any.
fn first_failure(results: Vec<Result<(), kube::Error>>) -> Result<(), ActionError> {
    let mut errors: Vec<kube::Error> = results.into_iter().filter_map(Result::err).collect();
    match errors.len() {
        0 => Ok(()),
        1 => Err(ActionError::Kube(errors.remove(0))),
        failed => Err(ActionError::Pods {
            failed,
            first: errors.remove(0),
        }),
    }
}

/// One plan being applied to one Job.
struct Run<'a> {
    applier: &'a Applier,
    /// The Job the plan was decided on; the event sink receives it.
    decided: &'a Job,
    /// `decided` until a status write, then what the API server returned, so
    /// a second write carries the current resourceVersion.
    job: Job,
    status_written: bool,
    namespace: String,
    name: String,
}

impl Run<'_> {
    fn outcome(&self, applied: usize, complete: bool) -> Outcome {
        Outcome {
            job: self.job.clone(),
            applied,
            complete,
            status_written: self.status_written,
        }
    }

    fn pods(&self) -> Api<Pod> {
        Api::namespaced(self.applier.client.clone(), &self.namespace)
    }

    fn jobs(&self) -> Api<Job> {
        Api::namespaced(self.applier.client.clone(), &self.namespace)
    }

    async fn apply_one(&mut self, kind: &pb::action::Kind) -> Result<(), ActionError> {
        use pb::action::Kind;
        match kind {
            Kind::CreatePods(c) => self.create_pods(&c.pods).await,
            Kind::DeletePods(d) => self.delete_pods(&d.pods).await,
            Kind::RemoveFinalizers(r) => self.remove_finalizers(&r.pods).await,
            Kind::UpdateStatus(u) => self.update_status(u.status.as_ref()).await,
            Kind::RecordEvent(e) => {
                if let Some(sink) = &self.applier.events {
                    sink(self.decided, e);
                }
                Ok(())
            }
            Kind::AdoptPods(a) => self.adopt_pods(&a.pods).await,
            Kind::ReleasePods(r) => self.release_pods(&r.pods).await,
            Kind::FailPods(f) => self.fail_pods(&f.pods).await,
        }
    }

    /// Creates the pods in slow-start batches of 1, 2, 4, …, stopping after
    /// a batch in which a creation failed (upstream's job controller does the
    /// same, so a broken template costs one failed call, not hundreds).
    async fn create_pods(&self, creations: &[pb::PodCreation]) -> Result<(), ActionError> {
        let mut pods = Vec::with_capacity(creations.len());
        for pc in creations {
            // validate built every pod already; a failure here cannot happen.
            if let Ok(pod) = pod_from_template(&self.job, pc) {
                pods.push(pod);
            }
        }
        let api = self.pods();
        let post = PostParams::default();
        let mut batch = 1;
        let mut rest = pods.as_slice();
        while !rest.is_empty() {
            let (now, later) = rest.split_at(batch.min(rest.len()));
            let results = futures::future::join_all(
                now.iter()
                    .map(|pod| async { api.create(&post, pod).await.map(|_| ()) }),
            )
            .await;
            first_failure(results)?;
            rest = later;
            batch *= 2;
        }
        Ok(())
    }

    /// Runs `write` on every pod, a bounded number at once; the first failure wins.
    async fn for_each_pod<'p, T, F, Fut>(&self, pods: &'p [T], write: F) -> Result<(), ActionError>
    where
        F: Fn(&'p T) -> Fut,
        Fut: std::future::Future<Output = Result<(), kube::Error>>,
    {
        let results = stream::iter(pods.iter().map(write))
            .buffered(POD_WRITE_CONCURRENCY)
            .collect::<Vec<_>>()
            .await;
        first_failure(results)
    }

    /// Deletes pods, each guarded by its UID, a pod already gone not an error.
    async fn delete_pods(&self, pods: &[pb::PodDeletion]) -> Result<(), ActionError> {
        let api = self.pods();
        self.for_each_pod(pods, |p| {
            let api = api.clone();
            async move {
                if p.remove_finalizer_first {
                    remove_finalizer(&api, &p.name, &p.uid).await?;
                }
                delete_guarded(&api, &p.name, &p.uid).await
            }
        })
        .await
    }

    /// Takes the tracking finalizer off pods the status already counts.
    async fn remove_finalizers(&self, pods: &[pb::PodReference]) -> Result<(), ActionError> {
        let api = self.pods();
        self.for_each_pod(pods, |p| {
            let api = api.clone();
            async move {
                match remove_finalizer(&api, &p.name, &p.uid).await {
                    Err(e) if code(&e) == Some(404) => Ok(()),
                    other => other,
                }
            }
        })
        .await
    }

    /// Replaces the Job's status, guarded by its resourceVersion.
    async fn update_status(&mut self, status: Option<&pb::JobStatus>) -> Result<(), ActionError> {
        let mut job = self.job.clone();
        // validate converted this status already; keep an empty one if not.
        job.status = Some(status_to_kube(status).unwrap_or_default());
        let written = self
            .jobs()
            .replace_status(&self.name, &PostParams::default(), &job)
            .await?;
        self.job = written;
        self.status_written = true;
        Ok(())
    }

    /// Makes the Job the controller of orphan pods, after a fresh read
    /// confirms it is the same Job and not being deleted.
    async fn adopt_pods(&self, pods: &[pb::PodReference]) -> Result<(), ActionError> {
        let fresh = self.jobs().get(&self.name).await?;
        let decided = self.job.metadata.uid.clone().unwrap_or_default();
        let now = fresh.metadata.uid.clone().unwrap_or_default();
        if now != decided {
            return Err(ActionError::JobRecreated { now, decided });
        }
        if fresh.metadata.deletion_timestamp.is_some() {
            return Err(ActionError::JobDeleting);
        }
        let owner = json!({
            "apiVersion": "batch/v1",
            "kind": "Job",
            "name": self.name,
            "uid": decided,
            "controller": true,
            "blockOwnerDeletion": true,
        });
        let api = self.pods();
        self.for_each_pod(pods, |p| {
            let api = api.clone();
            let patch = json!({"metadata": {
                "ownerReferences": [owner.clone()],
                "finalizers": [JOB_TRACKING_FINALIZER],
                "uid": p.uid,
            }});
            async move { strategic_patch(&api, &p.name, patch).await }
        })
        .await
    }

    /// Removes the Job's owner reference and the tracking finalizer, in one
    /// patch, from pods it no longer selects.
    async fn release_pods(&self, pods: &[pb::PodReference]) -> Result<(), ActionError> {
        let job_uid = self.job.metadata.uid.clone().unwrap_or_default();
        let api = self.pods();
        self.for_each_pod(pods, |p| {
            let api = api.clone();
            let patch = json!({"metadata": {
                "ownerReferences": [{"$patch": "delete", "uid": job_uid}],
                "$deleteFromPrimitiveList/finalizers": [JOB_TRACKING_FINALIZER],
                "uid": p.uid,
            }});
            async move {
                match strategic_patch(&api, &p.name, patch).await {
                    // Gone, or no longer ours to release.
                    Err(e) if matches!(code(&e), Some(404 | 422)) => Ok(()),
                    other => other,
                }
            }
        })
        .await
    }

    /// Fails pods as upstream's pod garbage collector does: a status patch to
    /// Failed with the plan's condition, then a delete guarded by UID.
    async fn fail_pods(&self, pods: &[pb::PodFailure]) -> Result<(), ActionError> {
        let api = self.pods();
        // The transition time, as the pod garbage collector writes it: the API's clock-free form.
        let now = k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(
            k8s_openapi::jiff::Timestamp::now(),
        );
        self.for_each_pod(pods, |p| {
            let api = api.clone();
            let empty = pb::PodReference::default();
            let pod = p.pod.as_ref().unwrap_or(&empty).clone();
            let patch = json!({
                "metadata": {"uid": pod.uid},
                "status": {
                    "phase": "Failed",
                    "conditions": [{
                        "type": p.condition_type,
                        "status": "True",
                        "reason": p.reason,
                        "message": p.message,
                        "lastTransitionTime": now,
                    }],
                },
            });
            async move {
                let result = async {
                    api.patch_status(&pod.name, &PatchParams::default(), &Patch::Strategic(patch))
                        .await?;
                    // terminatingTimeout's forceDelete: no kubelet will finish the pod.
                    let grace = p.force_delete.then_some(0);
                    delete_guarded_with(&api, &pod.name, &pod.uid, grace).await
                }
                .await;
                match result {
                    Err(e) if code(&e) == Some(404) => Ok(()),
                    other => other,
                }
            }
        })
        .await
    }
}

/// A strategic merge patch of one pod.
async fn strategic_patch(
    api: &Api<Pod>,
    name: &str,
    patch: serde_json::Value,
) -> Result<(), kube::Error> {
    api.patch(name, &PatchParams::default(), &Patch::Strategic(patch))
        .await
        .map(|_| ())
}

/// Removes the tracking finalizer from one pod; the uid in the patch makes
/// the API server refuse it for another pod of the same name.
async fn remove_finalizer(api: &Api<Pod>, name: &str, uid: &str) -> Result<(), kube::Error> {
    let patch = json!({"metadata": {
        "$deleteFromPrimitiveList/finalizers": [JOB_TRACKING_FINALIZER],
        "uid": uid,
    }});
    strategic_patch(api, name, patch).await
}

/// Deletes one pod with its UID as a precondition, so a pod re-created under
/// the name is never deleted in its place; a pod already gone is no error.
async fn delete_guarded(api: &Api<Pod>, name: &str, uid: &str) -> Result<(), kube::Error> {
    delete_guarded_with(api, name, uid, None).await
}

/// [`delete_guarded`] with a grace period of its own (`Some(0)`: a force delete).
async fn delete_guarded_with(
    api: &Api<Pod>,
    name: &str,
    uid: &str,
    grace_period_seconds: Option<u32>,
) -> Result<(), kube::Error> {
    let params = DeleteParams {
        preconditions: Some(Preconditions {
            uid: Some(uid.to_string()),
            resource_version: None,
        }),
        grace_period_seconds,
        ..DeleteParams::default()
    };
    match api.delete(name, &params).await {
        Err(e) if code(&e) == Some(404) => Ok(()),
        Err(e) => Err(e),
        Ok(_) => Ok(()),
    }
}

#[cfg(test)]
mod tests;
