use super::*;
use crate::index_set::Interval;
use crate::model::SuccessPolicyRule;

fn rule(indexes: Option<&str>, count: Option<i32>) -> SuccessPolicyRule {
    SuccessPolicyRule {
        succeeded_indexes: indexes.map(str::to_string),
        succeeded_count: count,
    }
}

fn by_indexes(indexes: &str) -> SuccessPolicyRule {
    rule(Some(indexes), None)
}

struct Case {
    name: &'static str,
    rules: Option<Vec<SuccessPolicyRule>>,
    completions: i32,
    succeeded: &'static [(i32, i32)],
    want: Option<usize>,
}

fn check(cases: Vec<Case>) {
    for c in cases {
        let policy = c.rules.map(|rules| SuccessPolicy { rules });
        let succeeded =
            IndexSet::from_intervals(c.succeeded.iter().map(|&(a, b)| Interval::new(a, b)));
        let got = match_success_policy(policy.as_ref(), c.completions, &succeeded);
        assert_eq!(got, c.want, "{}", c.name);
        let want_message = c.want.map(|i| format!("Matched rules at index {i}"));
        assert_eq!(
            got.map(success_policy_message),
            want_message,
            "{}: message",
            c.name
        );
    }
}

// Upstream TestMatchSuccessPolicy, every case (the gate is always on here).
#[test]
fn matches_like_upstream() {
    let cases = vec![
        Case {
            name: "successPolicy is null",
            rules: None,
            completions: 10,
            succeeded: &[(0, 0)],
            want: None,
        },
        Case {
            name: "any rules are nothing",
            rules: Some(vec![]),
            completions: 10,
            succeeded: &[(0, 0)],
            want: None,
        },
        Case {
            name: "rules.succeededIndexes is invalid format",
            rules: Some(vec![by_indexes("invalid-form")]),
            completions: 10,
            succeeded: &[(0, 0)],
            want: None,
        },
        Case {
            name: "rules.succeededIndexes is specified; succeededIndexes matched rules",
            rules: Some(vec![by_indexes("0-2")]),
            completions: 10,
            succeeded: &[(0, 2), (4, 7)],
            want: Some(0),
        },
        Case {
            name: "rules.succeededIndexes is specified; succeededIndexes didn't match rules",
            rules: Some(vec![by_indexes("3")]),
            completions: 10,
            succeeded: &[(0, 2)],
            want: None,
        },
        Case {
            name: "rules.succeededCount is specified; succeededIndexes matched rules",
            rules: Some(vec![rule(None, Some(2))]),
            completions: 10,
            succeeded: &[(0, 2)],
            want: Some(0),
        },
        Case {
            name: "rules.succeededCount is specified; succeededIndexes didn't match rules",
            rules: Some(vec![rule(None, Some(4))]),
            completions: 10,
            succeeded: &[(0, 2)],
            want: None,
        },
        Case {
            name: "multiple rules; rules.succeededIndexes is specified; succeededIndexes met one of rules",
            rules: Some(vec![by_indexes("9"), by_indexes("4,6")]),
            completions: 10,
            succeeded: &[(0, 2), (4, 7)],
            want: Some(1),
        },
        Case {
            name: "multiple rules; rules.succeededIndexes is specified; succeededIndexes met all rules",
            rules: Some(vec![by_indexes("0,1"), by_indexes("5")]),
            completions: 10,
            succeeded: &[(0, 2), (4, 7)],
            want: Some(0),
        },
        Case {
            name: "rules.succeededIndexes and rules.succeededCount are specified; succeededIndexes met all rules",
            rules: Some(vec![rule(Some("3-6"), Some(2))]),
            completions: 10,
            succeeded: &[(0, 2), (4, 7)],
            want: Some(0),
        },
        Case {
            name: "rules.succeededIndexes and rules.succeededCount are specified; succeededIndexes didn't match rules",
            rules: Some(vec![rule(Some("3-6"), Some(2))]),
            completions: 10,
            succeeded: &[(0, 2), (6, 7)],
            want: None,
        },
        Case {
            name: "rules.succeededIndexes is specified; succeededIndexes are nothing",
            rules: Some(vec![rule(None, Some(4))]),
            completions: 10,
            succeeded: &[],
            want: None,
        },
        Case {
            name: "rules.succeededIndexes is specified; succeededIndexes matched rules; rules is proper subset of succeededIndexes",
            rules: Some(vec![by_indexes("2-4,6-8")]),
            completions: 10,
            succeeded: &[(1, 5), (6, 9)],
            want: Some(0),
        },
        Case {
            name: "rules.succeededIndexes is specified; succeededIndexes matched rules; rules equals succeededIndexes",
            rules: Some(vec![by_indexes("2-4,6-9")]),
            completions: 10,
            succeeded: &[(2, 4), (6, 9)],
            want: Some(0),
        },
        Case {
            name: "rules.succeededIndexes is specified; succeededIndexes matched rules; rules is subset of succeededIndexes",
            rules: Some(vec![by_indexes("2-4,8-12")]),
            completions: 10,
            succeeded: &[(2, 5), (7, 15)],
            want: Some(0),
        },
        Case {
            name: "rules.succeededIndexes is specified; succeededIndexes didn't match rules; rules is an empty set",
            rules: Some(vec![by_indexes("")]),
            completions: 10,
            succeeded: &[(1, 3)],
            want: None,
        },
        Case {
            name: "rules.succeededIndexes is specified; succeededIndexes didn't match rules; succeededIndexes is an empty set",
            rules: Some(vec![by_indexes("")]),
            completions: 10,
            succeeded: &[],
            want: None,
        },
        Case {
            name: "rules.succeededIndexes is specified; succeededIndexes didn't match rules; rules and succeededIndexes are empty set",
            rules: Some(vec![by_indexes("")]),
            completions: 10,
            succeeded: &[],
            want: None,
        },
        Case {
            name: "rules.succeededIndexes is specified; succeededIndexes didn't match rules; all elements of rules.succeededIndexes aren't included in succeededIndexes",
            rules: Some(vec![by_indexes("10-12,14-16")]),
            completions: 10,
            succeeded: &[(1, 3), (5, 7)],
            want: None,
        },
        Case {
            name: "rules.succeededIndexes is specified; succeededIndexes didn't match rules; rules overlaps succeededIndexes at first",
            rules: Some(vec![by_indexes("1-3,5-7")]),
            completions: 10,
            succeeded: &[(2, 4), (6, 8)],
            want: None,
        },
        Case {
            name: "rules.succeededIndexes and rules.succeededCount are specified; succeededIndexes matched rules; rules overlaps succeededIndexes at first",
            rules: Some(vec![rule(Some("1-3,5-7"), Some(4))]),
            completions: 10,
            succeeded: &[(2, 4), (6, 8)],
            want: Some(0),
        },
        Case {
            name: "rules.succeededIndexes is specified; succeededIndexes didn't match rules; rules overlaps succeededIndexes at last",
            rules: Some(vec![by_indexes("2-4,6-9")]),
            completions: 10,
            succeeded: &[(1, 3), (5, 7)],
            want: None,
        },
        Case {
            name: "rules.succeededIndexes and rules.succeededCount are specified; succeededIndexes matched rules; rules overlaps succeededIndexes at last",
            rules: Some(vec![rule(Some("2-4,6-9"), Some(4))]),
            completions: 10,
            succeeded: &[(1, 3), (5, 7)],
            want: Some(0),
        },
        Case {
            name: "rules.succeededIndexes is specified; succeededIndexes didn't match rules; rules completely overlaps succeededIndexes",
            rules: Some(vec![by_indexes("0-4,6-9")]),
            completions: 10,
            succeeded: &[(1, 3), (7, 8)],
            want: None,
        },
        Case {
            name: "rules.succeededIndexes and rules.succeededCount are specified; succeededIndexes matched rules; rules completely overlaps succeededIndexes",
            rules: Some(vec![rule(Some("0-4,6-9"), Some(5))]),
            completions: 10,
            succeeded: &[(1, 3), (7, 8)],
            want: Some(0),
        },
        Case {
            name: "rules.succeededIndexes is specified; succeededIndexes didn't match rules; rules overlaps multiple succeededIndexes at last",
            rules: Some(vec![by_indexes("0-6,8-9")]),
            completions: 10,
            succeeded: &[(1, 3), (5, 9)],
            want: None,
        },
        Case {
            name: "rules.succeededIndexes and rules.succeededCount are specified; succeededIndexes matched rules; rules overlaps multiple succeededIndexes at last",
            rules: Some(vec![rule(Some("0-6,8-9"), Some(7))]),
            completions: 10,
            succeeded: &[(1, 3), (5, 9)],
            want: Some(0),
        },
        Case {
            name: "rules.succeededIndexes is specified; succeededIndexes didn't match rules; rules overlaps succeededIndexes at first, and rules equals succeededIndexes at last",
            rules: Some(vec![by_indexes("0-5,7-9")]),
            completions: 10,
            succeeded: &[(1, 5), (7, 10)],
            want: None,
        },
        Case {
            name: "rules.succeededIndexes and rules.succeededCount are specified; succeededIndexes matched rules; rules overlaps succeededIndexes at first, and rules equals succeededIndexes at last",
            rules: Some(vec![rule(Some("0-5,7-9"), Some(8))]),
            completions: 10,
            succeeded: &[(1, 5), (7, 10)],
            want: Some(0),
        },
        Case {
            name: "rules.succeededIndexes is specified; succeededIndexes didn't match rules; the first rules overlaps succeededIndexes at first",
            rules: Some(vec![by_indexes("0-3,6-9")]),
            completions: 10,
            succeeded: &[(1, 10)],
            want: None,
        },
        Case {
            name: "rules.succeededIndexes and rules.succeededCount are specified; succeededIndexes matched rules; the first rules overlaps succeededIndexes at first",
            rules: Some(vec![rule(Some("0-3,6-9"), Some(7))]),
            completions: 10,
            succeeded: &[(1, 10)],
            want: Some(0),
        },
    ];
    check(cases);
}

#[test]
fn edges_beyond_upstream_table() {
    let cases = vec![
        Case {
            name: "a rule with neither field is never met",
            rules: Some(vec![rule(None, None), rule(None, Some(1))]),
            completions: 10,
            succeeded: &[(0, 0)],
            want: Some(1),
        },
        Case {
            name: "indexes beyond completions are dropped from the rule",
            rules: Some(vec![by_indexes("1,12")]),
            completions: 10,
            succeeded: &[(1, 1)],
            want: Some(0),
        },
        Case {
            name: "a count of zero with listed indexes is met by any success",
            rules: Some(vec![rule(Some("5"), Some(0))]),
            completions: 10,
            succeeded: &[(1, 1)],
            want: Some(0),
        },
        Case {
            name: "a count of zero alone is met once anything succeeded",
            rules: Some(vec![rule(None, Some(0))]),
            completions: 10,
            succeeded: &[(3, 3)],
            want: Some(0),
        },
        Case {
            name: "a negative count is always reached",
            rules: Some(vec![rule(None, Some(-1))]),
            completions: 10,
            succeeded: &[(3, 3)],
            want: Some(0),
        },
        Case {
            name: "nothing succeeded meets no rule, even a count of zero",
            rules: Some(vec![rule(None, Some(0))]),
            completions: 10,
            succeeded: &[],
            want: None,
        },
        Case {
            name: "all of 2^31-1 indexes",
            rules: Some(vec![by_indexes("0-2147483646")]),
            completions: i32::MAX,
            succeeded: &[(0, i32::MAX - 1)],
            want: Some(0),
        },
        Case {
            name: "a count of i32::MAX is met by every index of the largest job",
            rules: Some(vec![rule(None, Some(i32::MAX))]),
            completions: i32::MAX,
            succeeded: &[(0, i32::MAX - 1)],
            want: Some(0),
        },
        Case {
            name: "a count of i32::MAX is not met when one index is missing",
            rules: Some(vec![rule(None, Some(i32::MAX))]),
            completions: i32::MAX,
            succeeded: &[(1, i32::MAX - 1)],
            want: None,
        },
    ];
    check(cases);
}
