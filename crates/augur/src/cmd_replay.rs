//! `augur replay` (not written yet).

#[derive(clap::Args)]
pub struct Args {}

pub fn run(_args: Args) -> anyhow::Result<()> {
    anyhow::bail!("augur replay is not implemented yet")
}
