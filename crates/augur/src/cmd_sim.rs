//! `augur sim` (not written yet).

#[derive(clap::Args)]
pub struct Args {}

pub fn run(_args: Args) -> anyhow::Result<()> {
    anyhow::bail!("augur sim is not implemented yet")
}
