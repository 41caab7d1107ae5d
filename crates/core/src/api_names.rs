//! The spelling of each enum the APIs write, both ways, in one place: the
//! Kubernetes Job and Pod, JobSet's failure policy and the extended failure
//! policy document. The wire conversion reads them, validation messages,
//! explanations and metrics write them, and a converter's list of allowed
//! values in an error message is the table's own `NAMES`.
//!
//! Two kinds of enum: an open one keeps a value this version does not know
//! verbatim, so a Job written by a newer API server round-trips unchanged; a
//! closed one (`closed`) has no such variant, and a value it does not know is
//! the caller's error to report.

use std::convert::Infallible;
use std::fmt;
use std::str::FromStr;

use crate::jobset::{FailurePolicyAction, RestartStrategy};
use crate::model::{
    CompletionMode, ConditionStatus, ExitCodeOperator, ExtendedAction, IgnoredFailureDelay,
    JobConditionType, NodeAvoidanceMode, PodFailurePolicyAction, PodPhase, PodReplacementPolicy,
    RestartPolicy, SelectorOperator,
};
use crate::plan::EventType;

/// The spellings of one enum from one table.
///
/// Open form, `Ty { Variant = "Name", … } else Other`: `as_str`, `From<String>`,
/// `FromStr`, `Display` and `NAMES` (the values this version knows), the last
/// variant keeping any value the API may send that this version does not know.
///
/// Closed form, `closed Ty { Variant = "Name" | "alias", … }`: `as_str`, `parse`
/// (`None` for a value the table does not hold), `NAMES` (each variant's name,
/// in the table's order, as an error message lists them), `ALL` (the variants
/// in the same order) and `Display`. An alias after `|` is read as that variant
/// but never written or listed.
macro_rules! api_names {
    (closed $ty:ident { $($variant:ident = $name:literal $(| $alias:literal)*),+ $(,)? }) => {
        impl $ty {
            /// Each variant's name, in the order an error message lists them.
            pub const NAMES: &'static [&'static str] = &[$($name),+];

            /// Every variant, in the order of [`Self::NAMES`].
            pub const ALL: &'static [$ty] = &[$($ty::$variant),+];

            /// The value as the API spells it.
            pub fn as_str(self) -> &'static str {
                match self {
                    $($ty::$variant => $name,)+
                }
            }

            /// Reads the API's spelling (or one of its aliases); `None` for a
            /// value the API does not define.
            pub fn parse(value: &str) -> Option<$ty> {
                match value {
                    $($name $(| $alias)* => Some($ty::$variant),)+
                    _ => None,
                }
            }
        }

        impl fmt::Display for $ty {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(self.as_str())
            }
        }
    };
    ($ty:ident { $($variant:ident = $name:literal),+ $(,)? } else $other:ident) => {
        impl $ty {
            /// The values this version knows, in the order an error message lists them.
            pub const NAMES: &'static [&'static str] = &[$($name),+];

            /// The value as the Kubernetes API spells it.
            pub fn as_str(&self) -> &str {
                match self {
                    $($ty::$variant => $name,)+
                    $ty::$other(value) => value,
                }
            }
        }

        impl From<String> for $ty {
            fn from(value: String) -> Self {
                match value.as_str() {
                    $($name => $ty::$variant,)+
                    _ => $ty::$other(value),
                }
            }
        }

        impl FromStr for $ty {
            type Err = Infallible;

            fn from_str(value: &str) -> Result<Self, Infallible> {
                Ok(match value {
                    $($name => $ty::$variant,)+
                    _ => $ty::$other(value.to_string()),
                })
            }
        }

        impl fmt::Display for $ty {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(self.as_str())
            }
        }
    };
}

api_names!(CompletionMode { NonIndexed = "NonIndexed", Indexed = "Indexed" } else Unknown);
api_names!(PodReplacementPolicy {
    TerminatingOrFailed = "TerminatingOrFailed",
    Failed = "Failed",
} else Unknown);
api_names!(RestartPolicy { Never = "Never", OnFailure = "OnFailure", Always = "Always" } else Other);
api_names!(SelectorOperator {
    In = "In",
    NotIn = "NotIn",
    Exists = "Exists",
    DoesNotExist = "DoesNotExist",
} else Unknown);
api_names!(PodFailurePolicyAction {
    FailJob = "FailJob",
    FailIndex = "FailIndex",
    Ignore = "Ignore",
    Count = "Count",
} else Unknown);
api_names!(ExitCodeOperator { In = "In", NotIn = "NotIn" } else Unknown);
api_names!(ConditionStatus { True = "True", False = "False", Unknown = "Unknown" } else Other);
api_names!(JobConditionType {
    Suspended = "Suspended",
    Complete = "Complete",
    Failed = "Failed",
    FailureTarget = "FailureTarget",
    SuccessCriteriaMet = "SuccessCriteriaMet",
} else Other);

api_names!(closed PodPhase {
    // A pod the kubelet has not reported on yet has no phase and is pending.
    Pending = "Pending" | "",
    Running = "Running",
    Succeeded = "Succeeded",
    Failed = "Failed",
    Unknown = "Unknown",
});
api_names!(closed EventType { Normal = "Normal", Warning = "Warning" });
api_names!(closed ExtendedAction {
    FailJob = "FailJob",
    FailIndex = "FailIndex",
    Ignore = "Ignore",
    Count = "Count",
});
api_names!(closed NodeAvoidanceMode { Required = "Required", Preferred = "Preferred" });
api_names!(closed IgnoredFailureDelay { Delay = "Delay", Immediate = "Immediate" });
api_names!(closed RestartStrategy {
    // An unset strategy is the default.
    Recreate = "Recreate" | "",
    BlockingRecreate = "BlockingRecreate",
    InPlaceRestart = "InPlaceRestart",
});
api_names!(closed FailurePolicyAction {
    FailJobSet = "FailJobSet",
    RestartJobSet = "RestartJobSet",
    RestartJobSetAndIgnoreMaxRestarts = "RestartJobSetAndIgnoreMaxRestarts",
    // The KEP's name, never released.
    RestartJob = "RestartJob" | "RecreateJob",
    RestartJobAndIgnoreMaxRestarts = "RestartJobAndIgnoreMaxRestarts",
});

#[cfg(test)]
mod tests {
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
}
