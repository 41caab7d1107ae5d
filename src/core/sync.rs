//! One sync of one Job, in upstream's order.

use crate::core::model::Snapshot;
use crate::core::plan::Plan;

/// Decides one sync of the snapshot's Job: the plan upstream's controller would carry out.
pub fn decide(snapshot: &Snapshot) -> Plan {
    // Being written in this session; the server and CLI are built against this signature.
    let _ = snapshot;
    Plan::default()
}
