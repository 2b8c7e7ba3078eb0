//! `vibeloop setup`: registers the GitHub App through GitHub's manifest flow. (To be written.)

use crate::config::tools::SetupArgs;

/// Runs the command.
pub async fn run(_args: &SetupArgs) -> anyhow::Result<()> {
    anyhow::bail!("vibeloop setup is not written yet")
}
