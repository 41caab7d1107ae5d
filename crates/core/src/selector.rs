//! Label selector matching, for adopting and releasing pods.

use std::collections::BTreeMap;

use crate::model::{LabelSelector, PodLabels, SelectorOperator};

/// A set of labels a selector can be matched against.
pub trait Labels {
    /// The value of the label `key`, if present.
    fn label(&self, key: &str) -> Option<&str>;
}

impl Labels for BTreeMap<String, String> {
    fn label(&self, key: &str) -> Option<&str> {
        self.get(key).map(String::as_str)
    }
}

impl Labels for PodLabels {
    fn label(&self, key: &str) -> Option<&str> {
        self.get(key)
    }
}

/// Whether `labels` satisfy the selector. An empty selector matches everything,
/// as upstream's conversion of an empty LabelSelector does; an unknown operator
/// matches nothing (validation rejects it before a decision).
pub fn matches(selector: &LabelSelector, labels: &impl Labels) -> bool {
    let labels_match = selector
        .match_labels
        .iter()
        .all(|(k, v)| labels.label(k) == Some(v.as_str()));
    labels_match
        && selector.match_expressions.iter().all(|req| {
            let value = labels.label(&req.key);
            let listed = |v: &str| req.values.iter().any(|x| x == v);
            match &req.operator {
                SelectorOperator::In => value.is_some_and(listed),
                SelectorOperator::NotIn => value.is_none_or(|v| !listed(v)),
                SelectorOperator::Exists => value.is_some(),
                SelectorOperator::DoesNotExist => value.is_none(),
                SelectorOperator::Unknown(_) => false,
            }
        })
}

#[cfg(test)]
mod tests;
