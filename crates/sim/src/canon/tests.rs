use super::*;

fn create(name: &str, index: Option<i32>) -> pb::Action {
    action(Kind::CreatePods(pb::CreatePods {
        pods: vec![pb::PodCreation {
            generate_name: name.to_string(),
            completion_index: index,
            ..Default::default()
        }],
    }))
}

fn refs(names: &[&str]) -> Vec<pb::PodReference> {
    names
        .iter()
        .map(|n| pb::PodReference {
            name: (*n).to_string(),
            uid: String::new(),
        })
        .collect()
}

#[test]
fn merges_runs_and_sorts_them() {
    let resp = pb::DecideJobResponse {
        actions: vec![
            create("j-2-", Some(2)),
            create("j-0-", Some(0)),
            action(Kind::ReleasePods(pb::ReleasePods { pods: refs(&["b"]) })),
            action(Kind::AdoptPods(pb::AdoptPods {
                pods: refs(&["z", "a"]),
            })),
            action(Kind::RecordEvent(pb::RecordEvent::default())),
            create("j-1-", Some(1)),
        ],
        ..Default::default()
    };
    let out = canonical(resp);
    let kinds: Vec<String> = out
        .actions
        .iter()
        .map(|a| match a.kind.as_ref() {
            Some(Kind::CreatePods(c)) => format!(
                "create {}",
                c.pods
                    .iter()
                    .map(|p| p.generate_name.as_str())
                    .collect::<Vec<_>>()
                    .join(",")
            ),
            Some(Kind::AdoptPods(r)) => format!(
                "adopt {}",
                r.pods
                    .iter()
                    .map(|p| p.name.as_str())
                    .collect::<Vec<_>>()
                    .join(",")
            ),
            Some(Kind::ReleasePods(_)) => "release".to_string(),
            Some(Kind::RecordEvent(_)) => "event".to_string(),
            _ => "other".to_string(),
        })
        .collect();
    assert_eq!(
        kinds,
        [
            "create j-0-,j-2-",
            "adopt a,z",
            "release",
            "event",
            "create j-1-"
        ]
    );
    assert!(out.state.is_none());
}

#[test]
fn status_times_are_whole_seconds_and_uids_sorted() {
    let mut s = pb::JobStatus {
        start_time: Some(pbjson_types::Timestamp {
            seconds: 5,
            nanos: 7,
        }),
        uncounted_terminated_pods: Some(pb::UncountedTerminatedPods {
            succeeded: vec!["b".into(), "a".into()],
            failed: vec![],
        }),
        ..Default::default()
    };
    canonical_status(&mut s);
    assert_eq!(s.start_time.map(|t| t.nanos), Some(0));
    assert_eq!(
        s.uncounted_terminated_pods.map(|u| u.succeeded),
        Some(vec!["a".to_string(), "b".to_string()])
    );
}
