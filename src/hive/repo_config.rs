//! The repository's config, `.github/hive.yml`, as the hive reads it: from the base branch on
//! GitHub (never from a branch an agent wrote), the defaults when the file is absent, and the
//! parse error — to be said on the issue — when it is invalid. One loader for every job.

use super::job::JobError;
use crate::config::repo::{HiveConfig, PATH, RepoConfigError};
use crate::github::RepoClient;

/// `.github/hive.yml` on `branch`: `Ok(Err(…))` when it is there but invalid.
pub async fn load(
    client: &RepoClient,
    branch: &str,
) -> Result<Result<HiveConfig, RepoConfigError>, JobError> {
    let text = client.file(PATH, branch).await?;
    Ok(HiveConfig::parse(text.as_deref().unwrap_or("")))
}

/// The label that hands issues to the hive on `branch`'s config; the default label when the
/// config is broken, so the ticket can still start and report the error.
pub async fn label(client: &RepoClient, branch: &str) -> Result<String, JobError> {
    Ok(match load(client, branch).await? {
        Ok(c) => c.label,
        Err(_) => HiveConfig::default().label,
    })
}
