use super::*;
use crate::model::NodeSignals;

fn present(name: &str, signals: NodeSignals) -> NodeReport {
    NodeReport {
        name: name.into(),
        state: NodeState::Present(signals),
    }
}

fn ready(status: ConditionStatus) -> NodeSignals {
    NodeSignals {
        ready: Some(status),
        ..NodeSignals::default()
    }
}

#[test]
fn each_signal_makes_a_node_unhealthy_and_a_ready_untainted_node_is_healthy() {
    let tainted = NodeSignals {
        unhealthy_taints: vec!["node.kubernetes.io/out-of-service".into()],
        ..ready(ConditionStatus::True)
    };
    let maintenance = NodeSignals {
        maintenance_in_progress: Some(ConditionStatus::True),
        ..ready(ConditionStatus::True)
    };
    let nodes = vec![
        NodeReport {
            name: "a-gone".into(),
            state: NodeState::Missing,
        },
        present("b-not-ready", ready(ConditionStatus::False)),
        present("c-unknown", ready(ConditionStatus::Unknown)),
        present("d-tainted", tainted),
        present("e-maintenance", maintenance),
        present("f-healthy", ready(ConditionStatus::True)),
        present("g-no-conditions", NodeSignals::default()),
    ];
    let cases = [
        ("a-gone", Some(Unhealthy::Missing)),
        ("b-not-ready", Some(Unhealthy::NotReady)),
        ("c-unknown", Some(Unhealthy::ReadyUnknown)),
        (
            "d-tainted",
            Some(Unhealthy::Tainted("node.kubernetes.io/out-of-service")),
        ),
        ("e-maintenance", Some(Unhealthy::Maintenance)),
        ("f-healthy", None),
        ("g-no-conditions", None),
        ("not-reported", None),
    ];
    for (name, want) in cases {
        assert_eq!(unhealthy(&nodes, name), want, "{name}");
    }
}

#[test]
fn a_taint_outside_the_list_and_maintenance_false_leave_a_node_healthy() {
    let signals = NodeSignals {
        ready: Some(ConditionStatus::True),
        maintenance_in_progress: Some(ConditionStatus::False),
        unhealthy_taints: vec!["node.kubernetes.io/unschedulable".into()],
    };
    assert_eq!(unhealthy(&[present("n", signals)], "n"), None);
}

#[test]
fn not_ready_is_named_before_a_taint_and_maintenance() {
    let signals = NodeSignals {
        ready: Some(ConditionStatus::False),
        maintenance_in_progress: Some(ConditionStatus::True),
        unhealthy_taints: vec!["node.kubernetes.io/unreachable".into()],
    };
    assert_eq!(
        unhealthy(&[present("n", signals)], "n"),
        Some(Unhealthy::NotReady)
    );
}

#[test]
fn only_no_execute_taints_of_the_list_count() {
    let cases = [
        ("node.kubernetes.io/unreachable", "NoExecute", true),
        ("node.kubernetes.io/not-ready", "NoExecute", true),
        ("node.kubernetes.io/out-of-service", "NoExecute", true),
        // What a node carries from registration until its kubelet reports.
        ("node.kubernetes.io/not-ready", "NoSchedule", false),
        ("node.kubernetes.io/unreachable", "NoSchedule", false),
        ("node.kubernetes.io/unschedulable", "NoExecute", false),
    ];
    for (key, effect, want) in cases {
        assert_eq!(unhealthy_taint(key, effect), want, "{key}:{effect}");
    }
}
