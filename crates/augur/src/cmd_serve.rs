//! `augur serve` (not written yet).

#[derive(clap::Args)]
pub struct Args {}

pub fn run(_args: Args) -> anyhow::Result<()> {
    anyhow::bail!("augur serve is not implemented yet")
}
