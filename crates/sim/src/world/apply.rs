//! Applying a plan as the shim applies one against the API server: pod creations
//! (with generateName and the index's labels), deletions, finalizer removals and
//! the status write, each checked the way the API server would check it.

use super::*;

impl<'s> World<'s> {
    /// One sync: the request, the decision, the plan applied.
    pub(super) fn sync(
        &mut self,
        decider: &mut dyn Decider,
    ) -> Result<pb::DecideJobResponse, SimError> {
        self.syncs += 1;
        let request = LazyDecideJobRequest {
            job: Some(self.job.clone()),
            // The pods a decision can read (every pod still there with carry_all).
            pods: self.carried_pods(),
            now: Some(ts(self.now)),
            state: self.state,
            controller_name: self.controller_name.clone(),
            failure_policy: self.failure_policy.clone(),
            // The world's pod cache is never stale: every write is seen at once.
            expectations: Some(pb::Expectations::default()),
            lean_pods: Vec::new(),
            explain: false,
            // What a node informer shows of the lost nodes terminating pods are on.
            nodes: self.lost_node_reports(),
            missing_nodes: Vec::new(),
        };
        let response = decider
            .decide_encoded(request)
            .map_err(|source| SimError::Decide {
                sync: self.syncs,
                at: rfc3339(self.now),
                source,
            })?;
        let response = canonical(response);
        self.state = response.state;
        self.apply(&response)?;
        Ok(response)
    }

    pub(super) fn apply(&mut self, response: &pb::DecideJobResponse) -> Result<(), SimError> {
        let sync = self.syncs;
        let refused = |message: String| SimError::Apply { sync, message };
        for action in &response.actions {
            match action.kind.as_ref() {
                Some(Kind::CreatePods(c)) => {
                    for (k, pc) in c.pods.iter().enumerate() {
                        self.create_pod(pc, k).map_err(refused)?;
                    }
                }
                Some(Kind::DeletePods(d)) => {
                    for pd in &d.pods {
                        let Some(i) = self.find(&pd.name) else {
                            continue;
                        };
                        self.check_uid(i, &pd.uid).map_err(refused)?;
                        self.touch(i);
                        if pd.remove_finalizer_first {
                            remove_tracking_finalizer(&mut self.pods[i].pod);
                        }
                        let detail = format!(
                            "deleted by the controller{}",
                            deletion_context(&self.job, response)
                        );
                        self.push(EventKind::PodDeleted, Some(i), detail);
                        self.pods[i].deleted_by_controller = true;
                        self.delete_pod(i);
                        self.collect();
                    }
                }
                Some(Kind::FailPods(f)) => {
                    for failure in &f.pods {
                        let Some(pr) = failure.pod.as_ref() else {
                            return Err(refused("failPods names no pod".to_string()));
                        };
                        let Some(i) = self.find(&pr.name) else {
                            continue;
                        };
                        self.check_uid(i, &pr.uid).map_err(refused)?;
                        self.touch(i);
                        if terminal(&self.pods[i].pod) {
                            return Err(refused(format!(
                                "failPods: {} has already ended",
                                pr.name
                            )));
                        }
                        self.fail_stuck_pod(i, failure);
                    }
                }
                Some(Kind::RemoveFinalizers(r)) => {
                    for pr in &r.pods {
                        let Some(i) = self.find(&pr.name) else {
                            continue;
                        };
                        self.check_uid(i, &pr.uid).map_err(refused)?;
                        self.touch(i);
                        remove_tracking_finalizer(&mut self.pods[i].pod);
                    }
                    self.collect();
                }
                Some(Kind::AdoptPods(r)) => {
                    let owner = self.owner_ref();
                    for pr in &r.pods {
                        let Some(i) = self.find(&pr.name) else {
                            continue;
                        };
                        self.check_uid(i, &pr.uid).map_err(refused)?;
                        self.touch(i);
                        let m = meta(&mut self.pods[i].pod);
                        m.owner_references.retain(|o| o.uid != owner.uid);
                        m.owner_references.push(owner.clone());
                        if !m.finalizers.iter().any(|f| f == JOB_TRACKING_FINALIZER) {
                            m.finalizers.push(JOB_TRACKING_FINALIZER.to_string());
                        }
                    }
                }
                Some(Kind::ReleasePods(r)) => {
                    let uid = self.owner_ref().uid;
                    for pr in &r.pods {
                        let Some(i) = self.find(&pr.name) else {
                            continue;
                        };
                        self.check_uid(i, &pr.uid).map_err(refused)?;
                        self.touch(i);
                        meta(&mut self.pods[i].pod)
                            .owner_references
                            .retain(|o| o.uid != uid);
                    }
                }
                Some(Kind::UpdateStatus(u)) => {
                    let new = u.status.clone().unwrap_or_default();
                    self.record_status(&new);
                    self.job.status = Some(new);
                    self.rv += 1;
                    self.job
                        .metadata
                        .get_or_insert_with(Default::default)
                        .resource_version = self.rv.to_string();
                }
                Some(Kind::RecordEvent(e)) => {
                    self.push(
                        EventKind::JobEvent,
                        None,
                        format!("{} {}: {}", e.r#type, e.reason, e.message),
                    );
                }
                None => {
                    return Err(refused(
                        "an action of a kind this simulator does not know".to_string(),
                    ));
                }
            }
        }
        Ok(())
    }

    pub(super) fn owner_ref(&self) -> pb::OwnerReference {
        let m = self.job.metadata.clone().unwrap_or_default();
        pb::OwnerReference {
            api_version: "batch/v1".to_string(),
            kind: "Job".to_string(),
            name: m.name,
            uid: m.uid,
            controller: Some(true),
            block_owner_deletion: Some(true),
        }
    }

    pub(super) fn check_uid(&self, i: usize, uid: &str) -> Result<(), String> {
        let have = self.pods[i]
            .pod
            .metadata
            .as_ref()
            .map(|m| m.uid.as_str())
            .unwrap_or("");
        if uid.is_empty() || uid == have {
            Ok(())
        } else {
            Err(format!(
                "pod {i}: uid precondition {uid}, the pod has {have}"
            ))
        }
    }

    /// Creates one pod as the API server would from the template and the plan's entry.
    pub(super) fn create_pod(&mut self, pc: &pb::PodCreation, k: usize) -> Result<(), String> {
        let job_meta = self.job.metadata.clone().unwrap_or_default();
        let template_meta = self
            .job
            .spec
            .as_ref()
            .and_then(|s| s.template.as_ref())
            .and_then(|t| t.metadata.clone())
            .unwrap_or_default();
        let name = if pc.name.is_empty() {
            let mut base = if pc.generate_name.is_empty() {
                format!("{}-", job_meta.name)
            } else {
                pc.generate_name.clone()
            };
            if base.len() > MAX_GENERATE_NAME {
                let mut cut = MAX_GENERATE_NAME;
                while !base.is_char_boundary(cut) {
                    cut -= 1;
                }
                base.truncate(cut);
            }
            format!("{base}{}", suffix(self.created))
        } else {
            pc.name.clone()
        };
        if self.find(&name).is_some() {
            return Err(format!("create {name}: already exists"));
        }
        if self.pods.len() >= self.limits.pods {
            // The API server would take it; the simulation stops here instead.
            let most = self.limits.pods;
            self.reach(
                "podLimit",
                format!("the Job reached {most} pods, the simulator's bound"),
            );
            return Ok(());
        }
        let mut labels = template_meta.labels.clone();
        labels.extend(pc.labels.clone());
        let mut annotations = template_meta.annotations.clone();
        annotations.extend(pc.annotations.clone());
        let mut finalizers = template_meta.finalizers.clone();
        for f in &pc.finalizers {
            if !finalizers.contains(f) {
                finalizers.push(f.clone());
            }
        }
        let mut owner_references = template_meta.owner_references.clone();
        owner_references.extend(pc.owner_reference.clone());
        let created = self
            .now
            .saturating_add((i64::try_from(k).unwrap_or(0) + 1).saturating_mul(1_000_000));
        let placed = self.place(pc.avoid_nodes.as_ref());
        let mut pod_status = pb::PodStatus {
            phase: "Pending".to_string(),
            ..Default::default()
        };
        if self.script.nodes.is_some() {
            let (status, reason) = match &placed {
                Some(_) => ("True", ""),
                None => ("False", "Unschedulable"),
            };
            pod_status.conditions.push(pb::PodCondition {
                r#type: "PodScheduled".to_string(),
                status: status.to_string(),
                reason: reason.to_string(),
                last_transition_time: Some(whole(created)),
                ..Default::default()
            });
        }
        let pod = pb::Pod {
            metadata: Some(pb::ObjectMeta {
                name: name.clone(),
                generate_name: pc.generate_name.clone(),
                namespace: job_meta.namespace.clone(),
                uid: format!("{}-pod-{}", job_meta.uid, self.created + 1),
                creation_timestamp: Some(ts(created)),
                labels,
                annotations,
                finalizers,
                owner_references,
                ..Default::default()
            }),
            spec: Some(pb::PodSpecSummary {
                node_name: placed.clone().unwrap_or_default(),
                ..Default::default()
            }),
            status: Some(pod_status),
            ..Default::default()
        };
        let index = if self.indexed {
            pc.completion_index.or_else(|| self.pod_index(&pod))
        } else {
            None
        };
        let mut sp = self.new_sim_pod(pod, index, created);
        let unschedulable = self.script.nodes.is_some() && placed.is_none();
        if unschedulable {
            // No node may take it: it waits, unscheduled, until failed or deleted.
            sp.start_at = None;
        }
        let avoiding = pc
            .avoid_nodes
            .as_ref()
            .filter(|a| !a.nodes.is_empty())
            .map(|a| format!(", avoiding {} ({})", a.nodes.join(", "), a.mode))
            .unwrap_or_default();
        let detail = match &placed {
            Some(node) if self.script.nodes.is_some() => {
                format!("attempt {}, on {node}{avoiding}", sp.attempt)
            }
            _ if unschedulable => {
                format!("attempt {}, unschedulable{avoiding}", sp.attempt)
            }
            _ => format!("attempt {}{avoiding}", sp.attempt),
        };
        self.pods.push(sp);
        let i = self.pods.len() - 1;
        self.map_new_pod(i);
        self.push(EventKind::PodCreated, Some(i), detail);
        Ok(())
    }
}
