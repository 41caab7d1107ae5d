use super::*;

#[test]
fn every_known_name_reads_back_as_itself() {
    let actions = ["FailJob", "FailIndex", "Ignore", "Count"];
    for name in actions {
        let action = PodFailurePolicyAction::from(name.to_string());
        assert!(
            !matches!(action, PodFailurePolicyAction::Unknown(_)),
            "{name}"
        );
        assert_eq!(action.as_str(), name);
    }
    for name in [
        "Suspended",
        "Complete",
        "Failed",
        "FailureTarget",
        "SuccessCriteriaMet",
    ] {
        let parsed: JobConditionType = name
            .parse()
            .unwrap_or(JobConditionType::Other(String::new()));
        assert!(!matches!(parsed, JobConditionType::Other(_)), "{name}");
        assert_eq!(parsed.to_string(), name);
    }
    for phase in ["Pending", "Unknown", "Running", "Succeeded", "Failed"] {
        assert_eq!(PodPhase::parse(phase).map(PodPhase::as_str), Some(phase));
    }
}

#[test]
fn unknown_values_are_kept_verbatim() {
    assert_eq!(
        SelectorOperator::from("Matches".to_string()),
        SelectorOperator::Unknown("Matches".into())
    );
    assert_eq!(RestartPolicy::from(String::new()).as_str(), "");
    assert_eq!(ConditionStatus::from("true".to_string()).as_str(), "true");
}

#[test]
fn closed_enums_read_their_aliases_and_list_only_their_names() {
    assert_eq!(PodPhase::parse("Done"), None);
    assert_eq!(PodPhase::parse(""), Some(PodPhase::Pending));
    assert_eq!(RestartStrategy::parse(""), Some(RestartStrategy::Recreate));
    assert_eq!(
        FailurePolicyAction::parse("RecreateJob"),
        Some(FailurePolicyAction::RestartJob)
    );
    assert_eq!(FailurePolicyAction::parse("restartJob"), None);
    assert_eq!(
        RestartStrategy::NAMES,
        ["Recreate", "BlockingRecreate", "InPlaceRestart"]
    );
    assert_eq!(
        PodPhase::NAMES,
        ["Pending", "Running", "Succeeded", "Failed", "Unknown"]
    );
    // Every name reads back as the variant at the same place in `ALL`.
    fn round_trips<T: Copy + PartialEq + std::fmt::Debug>(
        all: &[T],
        names: &[&str],
        parse: fn(&str) -> Option<T>,
        as_str: fn(T) -> &'static str,
    ) {
        assert_eq!(all.len(), names.len());
        for (variant, name) in all.iter().zip(names) {
            assert_eq!(parse(name), Some(*variant), "{name}");
            assert_eq!(as_str(*variant), *name);
        }
    }
    round_trips(
        PodPhase::ALL,
        PodPhase::NAMES,
        PodPhase::parse,
        PodPhase::as_str,
    );
    round_trips(
        EventType::ALL,
        EventType::NAMES,
        EventType::parse,
        EventType::as_str,
    );
    round_trips(
        ExtendedAction::ALL,
        ExtendedAction::NAMES,
        ExtendedAction::parse,
        ExtendedAction::as_str,
    );
    round_trips(
        NodeAvoidanceMode::ALL,
        NodeAvoidanceMode::NAMES,
        NodeAvoidanceMode::parse,
        NodeAvoidanceMode::as_str,
    );
    round_trips(
        IgnoredFailureDelay::ALL,
        IgnoredFailureDelay::NAMES,
        IgnoredFailureDelay::parse,
        IgnoredFailureDelay::as_str,
    );
    round_trips(
        RestartStrategy::ALL,
        RestartStrategy::NAMES,
        RestartStrategy::parse,
        RestartStrategy::as_str,
    );
    round_trips(
        FailurePolicyAction::ALL,
        FailurePolicyAction::NAMES,
        FailurePolicyAction::parse,
        FailurePolicyAction::as_str,
    );
}
