//! The repository's config, `.github/hive.yml`, as the hive reads it: from the base branch on
//! GitHub (never from a branch an agent wrote), the defaults when the file is absent, and the
//! parse error — to be said on the issue — when it is invalid. One loader for every job.

use super::job::JobError;
use crate::commands::Permission;
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

/// The branch `ticket`'s change lands on: the one its issue chose (`base:`, `/hive base`),
/// else `base` in its `config`, else the repository's default branch.
pub fn landing_base(ticket: &crate::store::tickets::Ticket, config: &HiveConfig) -> String {
    ticket
        .chosen_base
        .clone()
        .or_else(|| config.base.clone())
        .unwrap_or_else(|| ticket.base_branch.clone())
}

/// The labels that hand issues to the hive on `branch`'s config — to build, and to plan only;
/// the default labels when the config is broken, so the ticket can still start and report the
/// error.
pub async fn labels(client: &RepoClient, branch: &str) -> Result<(String, String), JobError> {
    let r = starting(client, branch).await?;
    Ok((r.label, r.plan_label))
}

/// What starts a ticket on `branch`'s config: the labels, and the least permission of who puts
/// one on (and of who edits the issue afterwards, for the agents to read it). The defaults when
/// the config is broken.
pub struct Starting {
    pub label: String,
    pub plan_label: String,
    pub permission: Permission,
}

pub async fn starting(client: &RepoClient, branch: &str) -> Result<Starting, JobError> {
    let c = load(client, branch)
        .await?
        .unwrap_or_else(|_| HiveConfig::default());
    Ok(Starting {
        permission: Permission::parse(&c.label_permission).unwrap_or(Permission::Triage),
        label: c.label,
        plan_label: c.plan_label,
    })
}
