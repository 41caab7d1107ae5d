use super::*;
use crate::fixtures::t;

#[test]
fn false_condition_is_never_created_from_nothing() {
    let mut list = vec![];
    let changed = ensure_condition(
        &mut list,
        JobConditionType::Suspended,
        ConditionStatus::False,
        "JobResumed",
        "Job resumed",
        t(1),
    );
    assert!(!changed);
    assert!(list.is_empty());
}

#[test]
fn existing_condition_is_replaced_only_when_it_differs() {
    let mut list = vec![new_condition(
        JobConditionType::Failed,
        ConditionStatus::False,
        "",
        "",
        t(1),
    )];
    assert!(ensure_condition(
        &mut list,
        JobConditionType::Failed,
        ConditionStatus::True,
        "BackoffLimitExceeded",
        "m",
        t(2)
    ));
    assert_eq!(list.len(), 1);
    assert_eq!(list[0].last_transition_time, Some(t(2)));
    assert!(!ensure_condition(
        &mut list,
        JobConditionType::Failed,
        ConditionStatus::True,
        "BackoffLimitExceeded",
        "m",
        t(3)
    ));
    assert_eq!(list[0].last_transition_time, Some(t(2)));
}
