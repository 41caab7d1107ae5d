//! One form for a plan, whoever decided it: upstream's controller issues pod
//! writes from parallel goroutines and appends uncounted UIDs in informer
//! order, so two deciders that agree can still list them differently. The
//! world applies every plan in this form (the conformance harness compares
//! in the same one), so the timelines of two agreeing deciders are the same
//! byte for byte.

use job_decider_api::pb;
use pb::action::Kind;

/// Which list action an action is, if any: consecutive ones of a kind merge.
fn list_kind(a: &pb::Action) -> Option<u8> {
    match a.kind.as_ref()? {
        Kind::CreatePods(_) => Some(0),
        Kind::DeletePods(_) => Some(1),
        Kind::RemoveFinalizers(_) => Some(2),
        Kind::AdoptPods(_) | Kind::ReleasePods(_) => Some(3),
        _ => None,
    }
}

/// The canonical form of a plan: runs of one list action merged, their pods
/// sorted (creations by completion index, then generateName and name; the
/// rest by name); adoptions before releases; uncounted UIDs sorted; status
/// timestamps in whole seconds, as the API server stores them; an empty
/// backoff record is no state.
pub fn canonical(mut resp: pb::DecideJobResponse) -> pb::DecideJobResponse {
    let actions = std::mem::take(&mut resp.actions);
    let mut out: Vec<pb::Action> = Vec::with_capacity(actions.len());
    let mut i = 0;
    while i < actions.len() {
        let Some(kind) = list_kind(&actions[i]) else {
            let mut a = actions[i].clone();
            if let Some(Kind::UpdateStatus(u)) = a.kind.as_mut()
                && let Some(status) = u.status.as_mut()
            {
                canonical_status(status);
            }
            out.push(a);
            i += 1;
            continue;
        };
        let end = (i..actions.len())
            .find(|&e| list_kind(&actions[e]) != Some(kind))
            .unwrap_or(actions.len());
        let run = &actions[i..end];
        i = end;
        let (mut creates, mut deletes, mut removals, mut adopts, mut releases) =
            (Vec::new(), Vec::new(), Vec::new(), Vec::new(), Vec::new());
        for a in run {
            match a.kind.as_ref() {
                Some(Kind::CreatePods(c)) => creates.extend(c.pods.iter().cloned()),
                Some(Kind::DeletePods(d)) => deletes.extend(d.pods.iter().cloned()),
                Some(Kind::RemoveFinalizers(r)) => removals.extend(r.pods.iter().cloned()),
                Some(Kind::AdoptPods(r)) => adopts.extend(r.pods.iter().cloned()),
                Some(Kind::ReleasePods(r)) => releases.extend(r.pods.iter().cloned()),
                _ => {}
            }
        }
        if kind == 0 {
            creates.sort_by(|x: &pb::PodCreation, y| {
                (
                    x.completion_index.is_some(),
                    x.completion_index,
                    &x.generate_name,
                    &x.name,
                )
                    .cmp(&(
                        y.completion_index.is_some(),
                        y.completion_index,
                        &y.generate_name,
                        &y.name,
                    ))
            });
            out.push(action(Kind::CreatePods(pb::CreatePods { pods: creates })));
        }
        if kind == 1 {
            deletes.sort_by(|x, y| x.name.cmp(&y.name));
            out.push(action(Kind::DeletePods(pb::DeletePods { pods: deletes })));
        }
        if kind == 2 {
            removals.sort_by(|x, y| x.name.cmp(&y.name));
            out.push(action(Kind::RemoveFinalizers(pb::RemoveFinalizers {
                pods: removals,
            })));
        }
        if !adopts.is_empty() {
            adopts.sort_by(|x, y| x.name.cmp(&y.name));
            out.push(action(Kind::AdoptPods(pb::AdoptPods { pods: adopts })));
        }
        if !releases.is_empty() {
            releases.sort_by(|x, y| x.name.cmp(&y.name));
            out.push(action(Kind::ReleasePods(pb::ReleasePods {
                pods: releases,
            })));
        }
    }
    resp.actions = out;
    let empty_backoff = resp.state.as_ref().is_none_or(|s| {
        s.backoff
            .as_ref()
            .is_none_or(|b| b.failures_after_last_success == 0 && b.last_failure_time.is_none())
    });
    if empty_backoff {
        resp.state = None;
    }
    resp
}

fn action(kind: Kind) -> pb::Action {
    pb::Action { kind: Some(kind) }
}

/// A status as the API server stores it: timestamps in whole seconds; the
/// uncounted UIDs sorted (their order carries nothing).
pub fn canonical_status(s: &mut pb::JobStatus) {
    if let Some(u) = s.uncounted_terminated_pods.as_mut() {
        u.succeeded.sort();
        u.failed.sort();
    }
    let trunc = |t: &mut Option<pbjson_types::Timestamp>| {
        if let Some(t) = t.as_mut() {
            t.nanos = 0;
        }
    };
    trunc(&mut s.start_time);
    trunc(&mut s.completion_time);
    for c in &mut s.conditions {
        trunc(&mut c.last_probe_time);
        trunc(&mut c.last_transition_time);
    }
}

#[cfg(test)]
mod tests;
