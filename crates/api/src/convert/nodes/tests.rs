use super::*;

fn node(name: &str, conditions: &[(&str, &str)], taints: &[&str]) -> pb::Node {
    pb::Node {
        name: name.into(),
        conditions: conditions
            .iter()
            .map(|(t, s)| pb::NodeCondition {
                r#type: (*t).into(),
                status: (*s).into(),
            })
            .collect(),
        taints: taints
            .iter()
            .map(|k| match k.split_once(':') {
                Some((key, effect)) => pb::Taint {
                    key: key.into(),
                    effect: effect.into(),
                },
                None => pb::Taint {
                    key: (*k).into(),
                    effect: "NoExecute".into(),
                },
            })
            .collect(),
    }
}

fn convert(nodes: Vec<pb::Node>, missing: &[&str]) -> (Vec<NodeReport>, Vec<String>) {
    let mut errs = Violations::default();
    let out = nodes_from_wire(
        nodes,
        missing.iter().map(|m| m.to_string()).collect(),
        &mut errs,
    );
    (out, errs.fields())
}

#[test]
fn nodes_are_sorted_and_kept_to_the_signals_node_health_reads() {
    let (out, errs) = convert(
        vec![
            node(
                "z",
                &[("Ready", "Unknown"), ("DiskPressure", "True")],
                &[
                    "node.kubernetes.io/unreachable",
                    "example.com/gpu",
                    // A new node's taint before its kubelet reports: not a verdict.
                    "node.kubernetes.io/not-ready:NoSchedule",
                ],
            ),
            node("a", &[("MaintenanceInProgress", "True")], &[]),
        ],
        &["m"],
    );
    assert!(errs.is_empty(), "{errs:?}");
    let names: Vec<&str> = out.iter().map(|n| n.name.as_str()).collect();
    assert_eq!(names, ["a", "m", "z"]);
    assert_eq!(out[1].state, NodeState::Missing);
    assert_eq!(
        out[2].state,
        NodeState::Present(NodeSignals {
            ready: Some(ConditionStatus::Unknown),
            maintenance_in_progress: None,
            unhealthy_taints: vec!["node.kubernetes.io/unreachable".into()],
        })
    );
    assert_eq!(
        out[0].state,
        NodeState::Present(NodeSignals {
            maintenance_in_progress: Some(ConditionStatus::True),
            ..NodeSignals::default()
        })
    );
}

#[test]
fn a_node_named_twice_or_both_present_and_missing_is_refused_at_the_later_entry() {
    let (out, errs) = convert(vec![node("a", &[], &[]), node("a", &[], &[])], &["a", "b"]);
    assert_eq!(errs, ["nodes[1].name", "missingNodes[0]"]);
    assert_eq!(out.len(), 2, "one a, one b");
}

#[test]
fn empty_long_names_and_a_repeated_ready_condition_are_violations_at_their_fields() {
    let long = "n".repeat(254);
    let (_, errs) = convert(
        vec![
            node("", &[], &[]),
            node(&long, &[], &[]),
            node("x", &[("Ready", "True"), ("Ready", "False")], &[]),
        ],
        &[""],
    );
    assert_eq!(
        errs,
        [
            "nodes[0].name",
            "nodes[1].name",
            "nodes[2].conditions[1].type",
            "missingNodes[0]"
        ]
    );
}

#[test]
fn too_many_nodes_is_one_violation_not_one_per_node() {
    let missing: Vec<String> = (0..=MAX_NODES).map(|i| format!("n{i}")).collect();
    let mut errs = Violations::default();
    let out = nodes_from_wire(Vec::new(), missing, &mut errs);
    assert!(out.is_empty());
    assert_eq!(errs.fields(), ["nodes"]);
}
