//! A Job's whole life on a virtual clock.
//!
//! Given a Job (and optionally its current pods) and a [`Script`] saying how its
//! pods behave and what happens around them, [`simulate`] plays sync after
//! sync: each builds the `DecideJobRequest` a controller would send (with the
//! `state` of the last answer fed back), asks a [`Decider`], applies the plan
//! as the shim applies one against the API server, then moves the clock to
//! the next thing that happens: a pod starting or ending as scripted, a
//! scripted event, the plan's `requeueAfter`, a deleted pod stopping. The
//! result is a [`Timeline`].
//!
//! The crate is pure: no I/O, no clock, no async runtime. The decider is the
//! caller's: `job_decider_api::decide` in process, or a gRPC client for any
//! server speaking the contract (the conformance harness's reference server
//! answers with upstream's own controller, so the same script played both
//! ways shows whether the timelines agree). [`render`] draws a timeline as an SVG
//! Gantt chart and a self-contained HTML report.

pub mod canon;
pub mod duration;
pub mod monte_carlo;
pub mod render;
pub mod script;
pub mod timeline;
pub mod world;

pub use script::{Dist, Script, ScriptError, ScriptErrors, ScriptWarning};
pub use timeline::{Timeline, compare_text, diverge};
pub use world::{
    ContainerRestart, ContainerRestartRule, DecideError, Decider, Limits, Options, Played,
    RunningPods, SimError, check, play, simulate,
};
