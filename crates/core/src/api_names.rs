//! The Kubernetes API's spelling of each model enum, both ways, in one place:
//! the wire conversion reads them, validation messages, explanations and
//! metrics write them. Values this version does not know are kept verbatim,
//! so a Job written by a newer API server round-trips unchanged.

use std::convert::Infallible;
use std::fmt;
use std::str::FromStr;

use crate::model::{
    CompletionMode, ConditionStatus, ExitCodeOperator, JobConditionType, PodFailurePolicyAction,
    PodPhase, PodReplacementPolicy, RestartPolicy, SelectorOperator,
};

/// `as_str`, `From<String>`, `FromStr` and `Display` for an enum whose last
/// variant keeps any value the API may send that this version does not know.
macro_rules! api_names {
    ($ty:ident { $($variant:ident = $name:literal),+ $(,)? } else $other:ident) => {
        impl $ty {
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

impl PodPhase {
    /// The phase as the Kubernetes API spells it.
    pub fn as_str(self) -> &'static str {
        match self {
            PodPhase::Pending => "Pending",
            PodPhase::Unknown => "Unknown",
            PodPhase::Running => "Running",
            PodPhase::Succeeded => "Succeeded",
            PodPhase::Failed => "Failed",
        }
    }

    /// Reads the API's spelling; a pod the kubelet has not reported on yet has
    /// no phase and is pending. `None` for a value the API never writes.
    pub fn from_api(value: &str) -> Option<PodPhase> {
        match value {
            "" | "Pending" => Some(PodPhase::Pending),
            "Unknown" => Some(PodPhase::Unknown),
            "Running" => Some(PodPhase::Running),
            "Succeeded" => Some(PodPhase::Succeeded),
            "Failed" => Some(PodPhase::Failed),
            _ => None,
        }
    }
}

impl fmt::Display for PodPhase {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

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
            assert_eq!(PodPhase::from_api(phase).map(PodPhase::as_str), Some(phase));
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
        assert_eq!(PodPhase::from_api("Done"), None);
        assert_eq!(PodPhase::from_api(""), Some(PodPhase::Pending));
    }
}
