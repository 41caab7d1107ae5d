//! Narration: the events people read about a failed pod (which policy rule it
//! matched and what that rule did) and why the controller deleted pods.

use super::*;
use job_decider_api::convert::JobForPods;
use job_decider_core::extended::timeouts::{Timeout, next_timeout};
use job_decider_core::model::Pod;
use job_decider_core::time::Time;

impl<'s> World<'s> {
    /// Records the failure of pod `i` as an event of `kind`: `what` happened, then
    /// the policy rule it matches, if any (kept on the pod for its attempt line).
    pub(super) fn tell_failure(&mut self, i: usize, kind: EventKind, what: &str) {
        let policy = self.policy_of(i);
        let detail = match &policy {
            Some(p) => format!("{what}; {p}"),
            None => what.to_string(),
        };
        self.pods[i].policy = policy;
        self.push(kind, Some(i), detail);
    }

    /// Which pod failure policy rule the failed pod matches, as job-decider's
    /// matcher reads it (the same rules upstream applies). `None` when the Job, its
    /// document or a pod it reads does not convert (then the decider refuses it too).
    pub(super) fn policy_of(&mut self, i: usize) -> Option<String> {
        self.refresh_narration_document();
        let mut kept = self.narration_document.take()?;
        let told = self.tell_match(i, &mut kept);
        self.narration_document = Some(kept);
        told
    }

    /// [`Self::policy_of`] with the Job converted and its pods' conversions kept in `kept`.
    fn tell_match(&mut self, i: usize, kept: &mut NarrationDocument) -> Option<String> {
        let has_policy = self
            .job
            .spec
            .as_ref()
            .is_some_and(|s| s.pod_failure_policy.is_some());
        let uid = self.pods[i]
            .pod
            .metadata
            .as_ref()
            .map(|m| m.uid.clone())
            .unwrap_or_default();
        // A document's retry limits count a failure among its scope's: every pod then.
        let documented = !self.failure_policy.is_empty()
            || self
                .job
                .metadata
                .as_ref()
                .is_some_and(|m| m.annotations.contains_key(FAILURE_POLICY_ANNOTATION));
        let targets: Vec<usize> = if documented {
            (0..self.pods.len())
                .filter(|&k| !self.pods[k].gone)
                .collect()
        } else {
            vec![i]
        };
        let mut pods = Vec::with_capacity(targets.len());
        for k in targets {
            pods.push(kept.pod(k, &self.pods[k].pod)?);
        }
        let job = kept.job.job();
        if !kept.job.within_match_budget(&pods) {
            return None;
        }
        let pod = pods.iter().find(|p| p.uid == uid)?;
        if let Some(doc) = job.extended_failure_policy.as_deref()
            && let Some(m) = document_match_among(job, &pods, &uid)
        {
            return Some(self.narrate_document_match(i, doc, &m, pod));
        }
        let decision =
            match_pod_failure_policy(job.spec.pod_failure_policy.as_ref(), &job.namespace, pod);
        let Some(rule) = decision.rule_index else {
            let rules = job
                .extended_failure_policy
                .as_deref()
                .is_some_and(|d| !d.rules.is_empty());
            return (has_policy || rules)
                .then(|| "no pod failure policy rule matches: counted".to_string());
        };
        let action = decision.action.clone()?;
        let on = match &decision.matched_on {
            Some(MatchedOn::ExitCode {
                container,
                exit_code,
                ..
            }) => format!("exit code {exit_code} of {container}"),
            Some(MatchedOn::Condition { condition_type, .. }) => {
                format!("condition {condition_type}")
            }
            // Upstream's policy matches only exit codes and conditions.
            _ => String::new(),
        };
        let name = action.as_str().to_string();
        let effect = self.handled_by(i, action);
        Some(format!(
            "podFailurePolicy rule {rule} ({name}) matches {on}: {effect}"
        ))
    }

    /// Whether a requeue `wait` ns from now is the active deadline's or a pod's timeout
    /// (pendingTimeout, readyTimeout, attemptDeadline), not a pod-failure backoff: the deadline falls
    /// exactly then (startTime + activeDeadlineSeconds), or the next pending timeout does
    /// (read with the core's own `next_timeout`, as the decision reads it).
    pub(super) fn requeue_for_deadline_or_pending_timeout(&mut self, wait: i64) -> bool {
        let at = self.now.saturating_add(wait);
        let deadline = self
            .job
            .spec
            .as_ref()
            .and_then(|s| s.active_deadline_seconds)
            .zip(self.job.status.as_ref().and_then(|s| s.start_time.as_ref()))
            .map(|(secs, t)| ts_nanos(t).saturating_add(secs.saturating_mul(SECOND)));
        if deadline == Some(at) {
            return true;
        }
        self.refresh_narration_document();
        let Some(mut kept) = self.narration_document.take() else {
            return false;
        };
        let has_timeout = kept
            .job
            .job()
            .extended_failure_policy
            .as_deref()
            .is_some_and(|d| Timeout::ALL.iter().any(|t| t.in_force(d)));
        let mut pods = Vec::new();
        if has_timeout {
            for (k, sp) in self.pods.iter().enumerate() {
                if let (false, Some(p)) = (sp.gone, kept.pod(k, &sp.pod)) {
                    pods.push(p);
                }
            }
        }
        let next = has_timeout
            .then(|| next_timeout(kept.job.job(), &pods, Time::from_unix_nanos(self.now)))
            .flatten();
        self.narration_document = Some(kept);
        next.is_some_and(|(d, _)| i64::try_from(d.as_nanos()).is_ok_and(|d| d == wait))
    }

    /// Keeps the Job as narration reads it current: its document compiled and the Job
    /// converted once, and again only when the Job's spec or its annotation changes — not
    /// once per failure, which made narrating N failures cost N compiles and N conversions
    /// of the Job and its pods. Left empty when the Job or its document does not convert.
    pub(super) fn refresh_narration_document(&mut self) {
        let annotation = self
            .job
            .metadata
            .as_ref()
            .and_then(|m| m.annotations.get(FAILURE_POLICY_ANNOTATION));
        if let Some(kept) = &self.narration_document
            && kept.spec == self.job.spec
            && kept.annotation.as_ref() == annotation
        {
            return;
        }
        let annotation = annotation.cloned();
        self.narration_document = CompiledDocument::compile(&self.job, &self.failure_policy)
            .and_then(|compiled| JobForPods::convert(&self.job, &compiled))
            .ok()
            .map(|job| NarrationDocument {
                spec: self.job.spec.clone(),
                annotation,
                job,
                pods: Vec::new(),
            });
    }

    /// Records on pod `i` the action its failure was handled by, and says what
    /// that did: `counted`, `fails the Job`… and whether the Job's outcome was
    /// already settled (a pod that ends after it changes nothing).
    pub(super) fn handled_by(&mut self, i: usize, action: PodFailurePolicyAction) -> String {
        let effect = match action {
            PodFailurePolicyAction::FailJob => "fails the Job",
            PodFailurePolicyAction::FailIndex => "fails its index",
            PodFailurePolicyAction::Ignore => "not counted",
            PodFailurePolicyAction::Count => "counted",
            PodFailurePolicyAction::Unknown(_) => "skipped",
        };
        let settled = has_condition(
            &self.job,
            &["FailureTarget", "Failed", "SuccessCriteriaMet", "Complete"],
        )
        .is_some();
        let sp = &mut self.pods[i];
        sp.ignored = action == PodFailurePolicyAction::Ignore;
        sp.settled = settled;
        sp.rule = Some(action);
        if settled {
            format!("{effect} (the Job's outcome is already settled)")
        } else {
            effect.to_string()
        }
    }

    /// The story of a failure the extended policy document handled, as `policy_of` tells it.
    pub(super) fn narrate_document_match(
        &mut self,
        i: usize,
        doc: &ExtendedFailurePolicy,
        m: &DocumentMatch,
        pod: &Pod,
    ) -> String {
        let asked = asked(doc, m.rule);
        let on: Vec<String> = matched_on(doc, m.rule, pod)
            .iter()
            .map(|o| o.describe(&asked))
            .collect();
        let effect = self.handled_by(i, policy_action_of(m.action).clone());
        let rule = rule_label(doc, m.rule);
        let limit = match max_retries(doc, m.rule) {
            Some(max) if m.exhausted => format!(
                "; match {} of a rule allowing {max} retries: used up, so whenRetriesExhausted",
                m.ordinal
            ),
            Some(max) => format!("; match {} of {max} retries", m.ordinal),
            None => String::new(),
        };
        format!(
            "failure policy document rule {rule} ({}) matches {}{limit}: {effect}",
            rule_action(doc, m.rule).as_str(),
            on.join(" and ")
        )
    }
}

/// What the Job was going through when its controller deleted pods, as far as
/// the Job and the plan's status say (the plan itself gives no reasons).
pub(super) fn deletion_context(job: &pb::Job, response: &pb::DecideJobResponse) -> String {
    let planned = response
        .actions
        .iter()
        .rev()
        .find_map(|a| match a.kind.as_ref() {
            Some(Kind::UpdateStatus(u)) => u.status.as_ref(),
            _ => None,
        });
    let status = planned.or(job.status.as_ref());
    let condition = |kind: &str| {
        status.and_then(|s| {
            s.conditions
                .iter()
                .find(|c| c.r#type == kind && c.status == "True")
        })
    };
    if let Some(c) = condition("FailureTarget").or_else(|| condition("Failed")) {
        return format!(": the Job is failing ({})", c.reason);
    }
    if let Some(c) = condition("SuccessCriteriaMet").or_else(|| condition("Complete")) {
        return format!(": the Job has succeeded ({})", c.reason);
    }
    if job.spec.as_ref().and_then(|s| s.suspend) == Some(true) {
        return ": the Job is suspended".to_string();
    }
    String::new()
}

/// The Job as narration reads it (converted, its document compiled) and what it was read
/// from: the Job's spec (a document is checked against it) and its annotation; the request
/// field is the world's, fixed for the run. What the matchers read of a Job is its spec and
/// document, so its status and versions changing leave it as it is.
pub(super) struct NarrationDocument {
    pub(super) spec: Option<pb::JobSpec>,
    pub(super) annotation: Option<String>,
    job: JobForPods,
    /// Each world pod (by its place in `World::pods`) as last converted, with the message it
    /// was converted from: a pod is converted again only once it has changed.
    pods: Vec<Option<(pb::Pod, Pod)>>,
}

impl NarrationDocument {
    /// World pod `k`, now `pod`, in the domain: converted only if it changed since the last time.
    fn pod(&mut self, k: usize, pod: &pb::Pod) -> Option<Pod> {
        if self.pods.len() <= k {
            self.pods.resize_with(k + 1, || None);
        }
        if let Some((was, converted)) = &self.pods[k]
            && was == pod
        {
            return Some(converted.clone());
        }
        let converted = self.job.pod(pod).ok()?;
        self.pods[k] = Some((pod.clone(), converted.clone()));
        Some(converted)
    }
}
