//! Success policy matching (KEP-3998): whether an Indexed Job's succeeded
//! indexes meet one of its rules, so it can succeed before every index has.

use crate::index_set::IndexSet;
use crate::model::SuccessPolicy;

/// The index of the first rule the succeeded indexes meet (upstream `matchSuccessPolicy`).
///
/// `None` when there is no policy, no index has succeeded yet, or no rule is
/// met. A rule's `succeededIndexes` is read leniently against `completions`;
/// a rule whose list reads as empty is skipped. It is met when all its indexes
/// succeeded, or when at least `succeededCount` of them did. A rule with only
/// `succeededCount` is met by that many succeeded indexes overall.
pub fn match_success_policy(
    policy: Option<&SuccessPolicy>,
    completions: i32,
    succeeded: &IndexSet,
) -> Option<usize> {
    let policy = policy?;
    if succeeded.is_empty() {
        return None;
    }
    policy
        .rules
        .iter()
        .position(|rule| match &rule.succeeded_indexes {
            Some(listed) => {
                let required = IndexSet::parse_lenient(listed, completions);
                if required.is_empty() {
                    return false;
                }
                let met = required.overlap_count(succeeded);
                met == required.total() || rule.succeeded_count.is_some_and(|n| at_least(met, n))
            }
            None => rule
                .succeeded_count
                .is_some_and(|n| at_least(succeeded.total(), n)),
        })
}

/// `count >= n`, where a negative `n` is always reached.
fn at_least(count: u64, n: i32) -> bool {
    u64::try_from(n).map_or(true, |n| count >= n)
}

/// The SuccessCriteriaMet message for the rule at `rule_index`, as upstream writes it.
pub fn success_policy_message(rule_index: usize) -> String {
    format!("Matched rules at index {rule_index}")
}

#[cfg(test)]
mod tests;
