//! `vibeloop doctor`: checks an installation, one line per check. (To be written.)

use crate::config::ServeArgs;

/// Runs the checks; returns the process exit code.
pub async fn run(_args: &ServeArgs) -> anyhow::Result<i32> {
    anyhow::bail!("vibeloop doctor is not written yet")
}
