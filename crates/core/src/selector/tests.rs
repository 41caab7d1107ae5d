use super::*;
use crate::model::SelectorRequirement;

fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

#[test]
fn match_labels_and_expressions_must_all_hold() {
    let mut s = LabelSelector::default();
    assert!(
        matches(&s, &labels(&[])),
        "empty selector matches everything"
    );
    s.match_labels.insert("app".into(), "x".into());
    assert!(matches(&s, &labels(&[("app", "x"), ("other", "y")])));
    assert!(!matches(&s, &labels(&[("app", "y")])));
    s.match_expressions.push(SelectorRequirement {
        key: "tier".into(),
        operator: SelectorOperator::NotIn,
        values: vec!["db".into()],
    });
    assert!(matches(&s, &labels(&[("app", "x")])));
    assert!(!matches(&s, &labels(&[("app", "x"), ("tier", "db")])));
    s.match_expressions.push(SelectorRequirement {
        key: "tier".into(),
        operator: SelectorOperator::Unknown("Near".into()),
        values: vec![],
    });
    assert!(!matches(&s, &labels(&[("app", "x")])));
}
