//! Decisions run below the serving threads' CPU priority. With every slot
//! busy on one core, the reactor threads (health probes, small calls, accepting
//! connections) would otherwise share the core evenly with eight CPU-bound
//! decisions, and a probe can miss kubelet's 1 s under outside load
//! (`make hostile`, sequence c1). A lower priority only orders who runs first:
//! a decision still gets every cycle the serving threads leave.

use std::cell::Cell;

/// The nice value a thread takes the first time it runs a decision. At 10 a
/// busy decision thread weighs about a tenth of a serving thread at 0 in the
/// kernel's fair scheduler, so a woken reactor thread runs almost at once.
pub const DECISION_NICENESS: i32 = 10;

thread_local! {
    // A blocking-pool thread is lowered once and keeps it: it only ever runs
    // decisions and the freeing of their snapshots.
    static LOWERED: Cell<bool> = const { Cell::new(false) };
}

/// Lowers the calling thread to [`DECISION_NICENESS`], once per thread; a
/// thread already lower is left alone (raising needs a privilege the server
/// does not ask for), and a refusal is ignored: priority is a preference.
pub fn lower_this_thread() {
    LOWERED.with(|lowered| {
        if !lowered.get() {
            lowered.set(true);
            set_at_least(DECISION_NICENESS);
        }
    });
}

/// This thread's nice value (Linux only; elsewhere 0).
pub fn this_thread_niceness() -> i32 {
    imp::get()
}

fn set_at_least(niceness: i32) {
    if imp::get() < niceness {
        imp::set(niceness);
    }
}

#[cfg(target_os = "linux")]
#[allow(unsafe_code)] // two libc calls on the calling thread, no pointers.
mod imp {
    // On Linux, PRIO_PROCESS with `who` 0 names the calling thread, not the
    // whole process: each thread has its own nice value.
    pub fn get() -> i32 {
        // SAFETY: getpriority reads the caller's own scheduling value.
        unsafe { libc::getpriority(libc::PRIO_PROCESS as _, 0) }
    }

    pub fn set(niceness: i32) {
        // SAFETY: setpriority changes only the caller's own scheduling value.
        let _ = unsafe { libc::setpriority(libc::PRIO_PROCESS as _, 0, niceness) };
    }
}

#[cfg(not(target_os = "linux"))]
mod imp {
    pub fn get() -> i32 {
        0
    }

    pub fn set(_niceness: i32) {}
}

#[cfg(all(test, target_os = "linux"))]
mod tests;
