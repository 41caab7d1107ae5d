use super::*;

#[test]
fn rule_match_counts_are_read_leniently() {
    assert_eq!(
        parse_rule_match_counts(" oom = 2 ,,x,=3,y=-1,z=abc,oom=1,w=4"),
        vec![("oom".to_string(), 2), ("w".to_string(), 4)]
    );
    // The core's name bound is the one the wire validates rule names with.
    assert_eq!(
        job_decider_core::extended::MAX_RULE_NAME_BYTES,
        crate::convert::failure_policy::MAX_RULE_NAME
    );
}

#[test]
fn failed_nodes_are_read_leniently() {
    assert_eq!(failed_nodes("a, b,,c "), vec!["a", "b", "c"]);
    assert!(failed_nodes(" , ").is_empty());
    assert!(failed_nodes(&"n".repeat(300)).is_empty());
    // Past the bound, the most recent (last) nodes are the ones kept.
    let many: Vec<String> = (0..100).map(|i| format!("n{i}")).collect();
    let kept = failed_nodes(&many.join(","));
    assert_eq!(kept.len(), MAX_ANNOTATION_ENTRIES);
    assert_eq!(kept.last().map(String::as_str), Some("n99"));
    assert_eq!(kept.first().map(String::as_str), Some("n36"));
}

#[test]
fn details_are_bounded_and_scheduling_read() {
    let long = "é".repeat(10_000);
    let details = WireDetails {
        message: &long,
        terminations: vec![("main".into(), false, "OOMKilled", &long)],
        scheduled: Some((
            "True",
            "",
            Some(Timestamp {
                seconds: 5,
                nanos: 0,
            }),
        )),
        ..Default::default()
    }
    .build();
    assert!(details.message.len() <= MAX_MESSAGE_BYTES);
    assert!(details.terminations[0].message.len() <= MAX_MESSAGE_BYTES);
    assert_eq!(details.terminations[0].reason, "OOMKilled");
    assert!(details.scheduled_at.is_some() && !details.unschedulable);
    let details = WireDetails {
        scheduled: Some(("False", "Unschedulable", None)),
        ..Default::default()
    }
    .build();
    assert!(details.scheduled_at.is_none() && details.unschedulable);
}
