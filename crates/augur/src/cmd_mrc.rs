//! `augur mrc` and `augur mrc-compare` (not written yet).

#[derive(clap::Args)]
pub struct MrcArgs {}

#[derive(clap::Args)]
pub struct CompareArgs {}

pub fn run_mrc(_args: MrcArgs) -> anyhow::Result<()> {
    anyhow::bail!("augur mrc is not implemented yet")
}

pub fn run_compare(_args: CompareArgs) -> anyhow::Result<()> {
    anyhow::bail!("augur mrc-compare is not implemented yet")
}
