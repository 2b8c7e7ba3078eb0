//! Reconciling one open ticket with GitHub, for the sweep and for the webhooks that say a
//! ticket's issue or pull request changed: a pull request merged (by the bot, or by a person)
//! lands the ticket; a closed issue, a removed label or a pull request closed unmerged stops it;
//! a landing that waits for a review or a check tries again.

use super::job::{Hive, JobError};
use crate::github::GitHubError;
use crate::store::tickets::Ticket;
use crate::ticket::Signal;

/// Compares one open ticket with GitHub and signals what changed; what it did, if anything.
pub(super) async fn reconcile(hive: &Hive, t: &Ticket) -> Result<Option<&'static str>, JobError> {
    let flow = super::flow::load(&hive.store, t.key).await?;
    if flow.land.merged.is_some() {
        // Landed, and the bot knows: GitHub closes the issue and the pull request on its own.
        return Ok(None);
    }
    let client = match hive.github.repo(t.installation_id, &t.repo).await {
        Ok(c) => c,
        Err(GitHubError::NotInstalled { .. }) => {
            let why = format!("the App is no longer installed on {}", t.repo);
            stop(hive, t, &why).await?;
            return Ok(Some("uninstalled"));
        }
        Err(e) => return Err(e.into()),
    };
    // The issue first, then the pull request: merging the pull request closes the issue (a
    // moment later), so an issue seen closed is a stop only if the pull request, read after it,
    // was not merged. Read the other way round, the bot's own merge landing in between would
    // look like an issue closed by hand.
    let issue = client.issue(t.issue_number).await?;
    if let Some(pr) = t.pr_number {
        let pull = client.pull(pr).await?;
        if pull.merged {
            // The bot's own landing, whose answer was lost, is recorded as the bot's.
            let by = pull
                .merged_by
                .as_ref()
                .map(|u| u.login.clone())
                .filter(|login| !login.ends_with("[bot]"));
            let landed = Signal::Landed {
                pr,
                sha: pull.landed(),
                by,
            };
            super::signal::send(hive, t, &landed, "github").await?;
            return Ok(Some("merged on GitHub"));
        }
        if pull.state == "closed" {
            let why = format!("pull request #{pr} was closed on GitHub");
            stop(hive, t, &why).await?;
            return Ok(Some("pull request closed"));
        }
        if flow.land.waiting.is_some() && issue.state != "closed" {
            // A review or a check event may have been missed: the landing tries again.
            super::signal::send(hive, t, &Signal::Recheck, "github").await?;
        }
    }
    if issue.state == "closed" {
        stop(hive, t, "the issue was closed on GitHub").await?;
        return Ok(Some("issue closed"));
    }
    // A ticket started by a label stops when the issue has neither the hive's label nor the
    // plan-only one; one started by `/hive plan` has no label to lose.
    let (label, plan_label) = super::repo_config::labels(&client, &t.base_branch).await?;
    let labelled = issue
        .labels
        .iter()
        .any(|l| l.name == label || l.name == plan_label);
    if !labelled && !flow.plan.unlabelled {
        let why = format!("the `{label}` label was removed from the issue");
        stop(hive, t, &why).await?;
        return Ok(Some("label removed"));
    }
    Ok(None)
}

async fn stop(hive: &Hive, t: &Ticket, why: &str) -> Result<(), JobError> {
    let abort = Signal::Abort {
        why: Some(why.to_owned()),
    };
    super::signal::send(hive, t, &abort, "github").await
}
