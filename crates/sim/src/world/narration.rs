//! Narration: the events people read about a failed pod (which policy rule it
//! matched and what that rule did) and why the controller deleted pods.

use super::*;

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
    /// matcher reads it (the same rules upstream applies).
    pub(super) fn policy_of(&mut self, i: usize) -> Option<String> {
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
        let pods = if documented {
            self.pods
                .iter()
                .filter(|p| !p.gone)
                .map(|p| p.pod.clone())
                .collect()
        } else {
            vec![self.pods[i].pod.clone()]
        };
        let document = self.narration_document()?;
        let request = pb::DecideJobRequest {
            job: Some(self.job.clone()),
            pods,
            now: Some(ts(self.now)),
            failure_policy: self.failure_policy.clone(),
            ..Default::default()
        };
        let snapshot = snapshot_with_document(request, &document).ok()?;
        let pod = snapshot.pods.iter().find(|p| p.uid == uid)?;
        if let Some(doc) = snapshot.job.extended_failure_policy.as_deref()
            && let Some(m) = document_match_among(&snapshot.job, &snapshot.pods, &uid)
        {
            return Some(self.narrate_document_match(i, doc, &m, pod));
        }
        let decision = match_pod_failure_policy(
            snapshot.job.spec.pod_failure_policy.as_ref(),
            &snapshot.job.namespace,
            pod,
        );
        let Some(rule) = decision.rule_index else {
            let rules = snapshot
                .job
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

    /// The Job's failure policy document as narration reads it: compiled once, and again
    /// only when the Job's spec or its annotation changes — not once per failure, which made
    /// narrating N failures cost N compiles. `None` when the Job or its document does not
    /// convert (then the decider refuses it too); such an attempt is not kept.
    pub(super) fn narration_document(&mut self) -> Option<CompiledDocument> {
        let annotation = self
            .job
            .metadata
            .as_ref()
            .and_then(|m| m.annotations.get(FAILURE_POLICY_ANNOTATION));
        if let Some(kept) = &self.narration_document
            && kept.spec == self.job.spec
            && kept.annotation.as_ref() == annotation
        {
            return Some(kept.compiled.clone());
        }
        let compiled = CompiledDocument::compile(&self.job, &self.failure_policy).ok()?;
        self.narration_document = Some(NarrationDocument {
            spec: self.job.spec.clone(),
            annotation: annotation.cloned(),
            compiled: compiled.clone(),
        });
        Some(compiled)
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
        pod: &job_decider_core::model::Pod,
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

/// A compiled document and what it was compiled from: the Job's spec (a document is checked
/// against it) and its annotation; the request field is the world's, fixed for the run.
pub(super) struct NarrationDocument {
    pub(super) spec: Option<pb::JobSpec>,
    pub(super) annotation: Option<String>,
    pub(super) compiled: CompiledDocument,
}
