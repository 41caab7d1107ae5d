//! placeholder
/// Options.
#[derive(clap::Args, Debug)]
pub struct Options {}
/// Run.
pub fn run(_o: &Options) -> Result<(), crate::Error> { Ok(()) }
