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
    CompletionMode, ConditionStatus, ExitCodeOperator, ExtendedAction, FailureMessage,
    IgnoredFailureDelay, JobConditionType, NodeAvoidanceMode, PodFailurePolicyAction, PodPhase,
    PodReplacementPolicy, RestartPolicy, SelectorOperator, TerminatingNodes,
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
api_names!(closed TerminatingNodes { Any = "Any", Unhealthy = "Unhealthy" });
api_names!(closed IgnoredFailureDelay { Delay = "Delay", Immediate = "Immediate" });
api_names!(closed FailureMessage { Upstream = "Upstream", Detailed = "Detailed" });
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
mod tests;
