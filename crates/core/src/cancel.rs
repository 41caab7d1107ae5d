//! Cancellation of a decision that nobody waits for any more.
//!
//! The core reads no clock and knows no runtime, so it cannot tell by itself
//! that a call's deadline passed or that its client went away; the caller
//! hands it an [`Interrupt`] and the long loops (one step per pod) ask it
//! between steps. A decision asked to stop returns [`Cancelled`] instead of a
//! plan: half a plan would be wrong, and nobody reads it anyway.

use std::sync::atomic::{AtomicBool, Ordering};

/// Whether the work should stop now. Asked between pods, so it must be cheap.
pub trait Interrupt {
    /// True once the work's result is no longer wanted.
    fn interrupted(&self) -> bool;
}

/// Set by whoever gives up on the work (another thread: an atomic).
impl Interrupt for AtomicBool {
    fn interrupted(&self) -> bool {
        // Relaxed: the flag guards no other data, only whether to go on.
        self.load(Ordering::Relaxed)
    }
}

impl<T: Interrupt + ?Sized> Interrupt for &T {
    fn interrupted(&self) -> bool {
        (**self).interrupted()
    }
}

impl<T: Interrupt + ?Sized> Interrupt for std::sync::Arc<T> {
    fn interrupted(&self) -> bool {
        (**self).interrupted()
    }
}

/// Never interrupts: the work of callers that always want the answer (the CLI, tests).
#[derive(Clone, Copy, Debug, Default)]
pub struct Never;

impl Interrupt for Never {
    fn interrupted(&self) -> bool {
        false
    }
}

/// The work stopped because its [`Interrupt`] asked it to; it decided nothing.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[error("the decision was stopped before it finished: its result was no longer wanted")]
pub struct Cancelled;

/// `Err(Cancelled)` once `interrupt` is set: for `?` between steps of a loop.
pub fn check(interrupt: &dyn Interrupt) -> Result<(), Cancelled> {
    if interrupt.interrupted() {
        Err(Cancelled)
    } else {
        Ok(())
    }
}

#[cfg(test)]
mod tests;
