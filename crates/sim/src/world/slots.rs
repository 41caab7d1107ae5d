//! Finding pods without looking at every one: names, uids and indexes mapped to
//! slots, each pod's timers in a queue, and the pods a request must carry. Every
//! change to a pod is noted ([`World::touch`]); each of these looks again only at the
//! pods changed since it last looked, so a run's cost grows with its events, not with
//! its syncs times its pods.

use super::*;

/// At most three timers a pod has at once (a running pod's finish, stop and restart).
type Timers = [Option<(i64, Happening)>; 3];

impl<'s> World<'s> {
    /// Notes that pod `i` changed: its timers, whether it is gone, whether the next
    /// request carries it and whether its index waits for a replacement are looked at again.
    pub(super) fn touch(&mut self, i: usize) {
        let s = &mut self.slots;
        let oldest = s
            .scheduled_to
            .min(s.collected_to)
            .min(s.carried_to)
            .min(s.indexed_to);
        // Every cursor is past the start: the log's head is read by nobody.
        if oldest > 0 && oldest == s.touched.len() {
            s.touched.clear();
            s.scheduled_to = 0;
            s.collected_to = 0;
            s.carried_to = 0;
            s.indexed_to = 0;
        }
        s.touched.push(i);
        if let Some(e) = s.encoded.get_mut(i) {
            *e = None;
        }
    }

    /// A new pod in slot `i` (already pushed): mapped by name, uid and index.
    pub(super) fn map_new_pod(&mut self, i: usize) {
        // A pod without metadata has no name or uid to be found by.
        if let Some(m) = self.pods[i].pod.metadata.as_ref() {
            let (name, uid) = (m.name.clone(), m.uid.clone());
            self.slots.by_name.entry(name).or_default().push(i);
            self.slots.by_uid.entry(uid).or_default().push(i);
        }
        if let Some(index) = self.pods[i].index {
            self.slots.by_index.entry(index).or_default().push(i);
        }
        self.touch(i);
    }

    /// Pod `i` is gone from the API: no longer found by name.
    pub(super) fn unmap_gone_pod(&mut self, i: usize) {
        let name = self.pods[i]
            .pod
            .metadata
            .as_ref()
            .map(|m| m.name.as_str())
            .unwrap_or("");
        if let Some(slots) = self.slots.by_name.get_mut(name) {
            slots.retain(|&k| k != i);
            if slots.is_empty() {
                self.slots.by_name.remove(name);
            }
        }
        self.touch(i);
    }

    /// The pod not gone named `name` (the first one, if the given pods repeat a name).
    pub(super) fn find(&self, name: &str) -> Option<usize> {
        self.slots
            .by_name
            .get(name)
            .and_then(|s| s.first().copied())
    }

    /// The pods that ever had `uid`.
    pub(super) fn slots_of_uid(&self, uid: &str) -> &[usize] {
        self.slots.by_uid.get(uid).map_or(&[], Vec::as_slice)
    }

    /// The pods of index `index`, oldest first.
    pub(super) fn slots_of_index(&self, index: i32) -> &[usize] {
        self.slots.by_index.get(&index).map_or(&[], Vec::as_slice)
    }

    /// The pods changed since `cursor`, each once, in the world's order; the cursor moved to the end.
    fn changed_since(touched: &[usize], cursor: &mut usize) -> Vec<usize> {
        let mut changed = touched[(*cursor).min(touched.len())..].to_vec();
        *cursor = touched.len();
        changed.sort_unstable();
        changed.dedup();
        changed
    }

    /// Pod `i`'s pending timers, when each falls (not yet held to now): what the kubelet
    /// or the clock will do to it next.
    pub(super) fn timers_of(&self, i: usize) -> Timers {
        let mut out: Timers = [None; 3];
        let sp = &self.pods[i];
        if sp.gone || terminal(&sp.pod) {
            return out;
        }
        let deleting = sp
            .pod
            .metadata
            .as_ref()
            .is_some_and(|m| m.deletion_timestamp.is_some());
        // A lost node's kubelet does nothing: only the taint manager acts on its pods.
        if self.on_lost_node(&sp.pod) {
            out[0] = sp
                .evict_at
                .filter(|_| !deleting)
                .map(|t| (t, Happening::Evict(i)));
            return out;
        }
        match phase(&sp.pod) {
            "Running" => {
                out[0] = sp
                    .started
                    .map(|t| (t.saturating_add(sp.plan.run_time), Happening::Finish(i)));
                out[1] = sp.stop_at.map(|t| (t, Happening::Stop(i)));
                out[2] = sp
                    .restart_at
                    .filter(|_| !deleting)
                    .map(|t| (t, Happening::Restart(i)));
            }
            _ if !deleting => out[0] = sp.start_at.map(|t| (t, Happening::Start(i))),
            // Deleted on its node before it ran: the kubelet ends it.
            _ => out[0] = sp.stop_at.map(|t| (t, Happening::Stop(i))),
        }
        out
    }

    /// Whether pod `i` still has the timer `(t, h)`.
    fn has_timer(&self, t: i64, h: Happening) -> bool {
        let i = match h {
            Happening::Finish(i)
            | Happening::Stop(i)
            | Happening::Restart(i)
            | Happening::Start(i)
            | Happening::Evict(i) => i,
            Happening::Scripted(_) => return false,
        };
        self.timers_of(i).contains(&Some((t, h)))
    }

    /// The next happening and its time: the earliest timer of any pod, or the next
    /// scripted event. A time already past counts as now, and happenings at one instant
    /// go in [`Happening`]'s order, as when every pod was looked at each time.
    pub(super) fn next_happening(&mut self) -> Option<(i64, Happening)> {
        let changed = Self::changed_since(&self.slots.touched, &mut self.slots.scheduled_to);
        for i in changed {
            for (t, h) in self.timers_of(i).into_iter().flatten() {
                self.slots.timers.push(Reverse((t, h)));
            }
        }
        let now = self.now;
        while let Some(&Reverse((t, h))) = self.slots.timers.peek() {
            if t > now {
                break;
            }
            self.slots.timers.pop();
            self.slots.timers_due.insert((h, t));
        }
        // Entries a pod no longer has are dropped as they come up.
        let pod_next = loop {
            if let Some(&(h, t)) = self.slots.timers_due.first() {
                if self.has_timer(t, h) {
                    break Some((now, h));
                }
                self.slots.timers_due.pop_first();
                continue;
            }
            match self.slots.timers.peek() {
                Some(&Reverse((t, h))) if self.has_timer(t, h) => break Some((t, h)),
                Some(_) => {
                    self.slots.timers.pop();
                }
                None => break None,
            }
        };
        let scripted = self.script.events.get(self.next_scripted).map(|e| {
            (
                self.start.saturating_add(e.at.nanos()).max(now),
                Happening::Scripted(self.next_scripted),
            )
        });
        let next = match (pod_next, scripted) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        #[cfg(debug_assertions)]
        if self.pods.len() <= CROSS_CHECK_PODS {
            debug_assert_eq!(next, self.next_happening_by_scan(), "the timer queue");
        }
        next
    }

    /// The next happening found by looking at every pod: what the timer queue must
    /// agree with (checked in debug builds on small worlds).
    #[cfg(debug_assertions)]
    fn next_happening_by_scan(&self) -> Option<(i64, Happening)> {
        let mut all: Vec<(i64, Happening)> = (0..self.pods.len())
            .flat_map(|i| self.timers_of(i).into_iter().flatten())
            .map(|(t, h)| (t.max(self.now), h))
            .collect();
        if let Some(e) = self.script.events.get(self.next_scripted) {
            all.push((
                self.start.saturating_add(e.at.nanos()).max(self.now),
                Happening::Scripted(self.next_scripted),
            ));
        }
        all.into_iter().min()
    }

    /// Whether deleted pod `i` is gone from the API now: nothing holds it (no
    /// finalizer) and the kubelet is done with it (it ended, never had a node, or its
    /// grace period was cut to nothing).
    fn collectable(sp: &SimPod) -> bool {
        if sp.gone {
            return false;
        }
        let Some(m) = sp.pod.metadata.as_ref() else {
            return false;
        };
        if m.deletion_timestamp.is_none() || !m.finalizers.is_empty() {
            return false;
        }
        terminal(&sp.pod) || !scheduled(&sp.pod) || m.deletion_grace_period_seconds == Some(0)
    }

    /// Removes deleted pods that nothing holds any more: of those changed since the
    /// last time (a pod becomes collectable only by changing), in the world's order.
    pub(super) fn collect(&mut self) {
        let now = self.now;
        let changed = Self::changed_since(&self.slots.touched, &mut self.slots.collected_to);
        let mut removed = Vec::new();
        for i in changed {
            let sp = &mut self.pods[i];
            if !Self::collectable(sp) {
                continue;
            }
            sp.gone = true;
            if sp.ended.is_none() {
                sp.ended = Some(now);
                sp.outcome = "removed".to_string();
                sp.why = "deleted before it ended".to_string();
            }
            removed.push(i);
        }
        #[cfg(debug_assertions)]
        if self.pods.len() <= CROSS_CHECK_PODS {
            let missed: Vec<usize> = (0..self.pods.len())
                .filter(|&i| Self::collectable(&self.pods[i]))
                .collect();
            debug_assert_eq!(
                missed,
                Vec::<usize>::new(),
                "pods collectable but not noted"
            );
        }
        for &i in &removed {
            self.unmap_gone_pod(i);
        }
        // Looked at again later only if changed again.
        self.slots.collected_to = self.slots.touched.len();
        for i in removed {
            self.push(
                EventKind::PodRemoved,
                Some(i),
                "gone from the API".to_string(),
            );
        }
    }

    /// Whether a request may leave pod `i` out: no decision reads it, so its absence
    /// changes nothing.
    ///
    /// A pod that has ended, whose tracking finalizer is off, that is not being deleted,
    /// that the Job controls and whose uid is not among `status.uncountedTerminatedPods`
    /// has been counted in the Job's status, and upstream v1.37.2's `syncJob`
    /// (`pkg/controller/job/job_controller.go`) reads it nowhere that matters: new
    /// successes and failures, the failed and completed indexes and the pods held per
    /// index come from `getValidPodsWithFilter`, which skips pods without the finalizer;
    /// the active, ready, terminating counts and `pastBackoffLimitOnFailure` take running,
    /// pending or deleting pods; `getFailJobMessage` reads failed pods, but one that failed
    /// by a FailJob rule made the Job's FailureTarget condition before its finalizer came
    /// off; `claimPods` adopts and releases only pods the Job does not control; and the
    /// `WorkloadWithJob` gate's `isNewJob` is off by default and false once the Job has
    /// counted a pod. An extended failure policy document reads the failed pods it can
    /// see (`core::extended` node avoidance and retry limits): then every pod is carried.
    fn prunable(&self, i: usize, uncounted: &[String]) -> bool {
        let sp = &self.pods[i];
        if self.carry_all || !terminal(&sp.pod) {
            return false;
        }
        let Some(m) = sp.pod.metadata.as_ref() else {
            return false;
        };
        let job_uid = self.job.metadata.as_ref().map_or("", |m| m.uid.as_str());
        m.deletion_timestamp.is_none()
            && !m.finalizers.iter().any(|f| f == JOB_TRACKING_FINALIZER)
            && m.owner_references
                .iter()
                .any(|o| o.controller == Some(true) && o.uid == job_uid)
            && !uncounted.contains(&m.uid)
    }

    /// Brings the pods the next request carries up to date (those changed, and those
    /// whose uid entered or left the uncounted lists) and returns how many there are.
    pub(super) fn refresh_carried(&mut self) -> usize {
        let uncounted: Vec<String> = self
            .job
            .status
            .as_ref()
            .and_then(|s| s.uncounted_terminated_pods.as_ref())
            .map(|u| u.succeeded.iter().chain(&u.failed).cloned().collect())
            .unwrap_or_default();
        let mut changed = Self::changed_since(&self.slots.touched, &mut self.slots.carried_to);
        if uncounted != self.slots.uncounted {
            for uid in self.slots.uncounted.iter().chain(&uncounted) {
                changed.extend_from_slice(self.slots_of_uid(uid));
            }
            changed.sort_unstable();
            changed.dedup();
        }
        for i in changed {
            if self.pods[i].gone || self.prunable(i, &uncounted) {
                self.slots.carried.remove(&i);
            } else {
                self.slots.carried.insert(i);
            }
        }
        self.slots.uncounted = uncounted;
        #[cfg(debug_assertions)]
        if self.pods.len() <= CROSS_CHECK_PODS {
            let all: BTreeSet<usize> = (0..self.pods.len())
                .filter(|&i| !self.pods[i].gone && !self.prunable(i, &self.slots.uncounted))
                .collect();
            debug_assert_eq!(all, self.slots.carried, "the pods a request carries");
        }
        self.slots.carried.len()
    }

    /// The pods the next request carries, encoded, in the world's order (after
    /// [`Self::refresh_carried`]): a pod is encoded again only once it has changed.
    pub(super) fn carried_pods(&mut self) -> Vec<Bytes> {
        let s = &mut self.slots;
        if s.encoded.len() < self.pods.len() {
            s.encoded.resize(self.pods.len(), None);
        }
        let mut out = Vec::with_capacity(s.carried.len());
        for &i in &s.carried {
            let pod = &self.pods[i].pod;
            let bytes = s.encoded[i].get_or_insert_with(|| pod.encode_to_vec().into());
            #[cfg(debug_assertions)]
            if self.pods.len() <= CROSS_CHECK_PODS {
                debug_assert_eq!(bytes.as_ref(), pod.encode_to_vec(), "pod {i} kept encoded");
            }
            out.push(bytes.clone());
        }
        out
    }

    /// backoffLimitPerIndex: the indexes whose latest pod failed and has ended, brought
    /// up to date from the pods changed since the last time.
    pub(super) fn indexes_with_a_failed_last_pod(&mut self) -> &BTreeSet<i32> {
        let changed = Self::changed_since(&self.slots.touched, &mut self.slots.indexed_to);
        for i in changed {
            let Some(index) = self.pods[i].index else {
                continue;
            };
            let Some(&last) = self.slots_of_index(index).last() else {
                continue;
            };
            let sp = &self.pods[last];
            if sp.outcome == "failed" && terminal(&sp.pod) {
                self.slots.failed_last.insert(index);
            } else {
                self.slots.failed_last.remove(&index);
            }
        }
        &self.slots.failed_last
    }
}

/// Debug builds check the world's maps against a look at every pod, up to this many pods
/// (each check looks at every pod: at 3,000 a 512-index example took 8 s instead of 3).
#[cfg(debug_assertions)]
const CROSS_CHECK_PODS: usize = 300;
