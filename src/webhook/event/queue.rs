//! The merge queue's deliveries: `merge_group.checks_requested` (gate the group's head) and
//! `pull_request.dequeued` (a pull request left the queue unmerged, with GitHub's reason).
//! `merge_group.destroyed` asks nothing: a merged group arrives as `pull_request.closed`, a
//! dequeued one as `pull_request.dequeued`, and an invalidated one is made again.

use octocrab::models::webhook_events::payload::{
    MergeGroupWebhookEventAction, MergeGroupWebhookEventPayload, PullRequestWebhookEventPayload,
};

use super::Event;
use crate::ids::{InstallationId, RepoName};

/// `merge_group.checks_requested`: GitHub waits for the required checks on `head_sha`.
#[derive(Debug, Clone, PartialEq)]
pub struct GroupChecks {
    pub repo: RepoName,
    pub installation: Option<InstallationId>,
    /// The pull request the group is for (its head ref names it).
    pub pull: u64,
    pub head_sha: String,
    /// The base commit the group was made on (older deliveries lack it), and the branch it
    /// merges into.
    pub base_sha: Option<String>,
    pub base_branch: String,
}

/// `pull_request.dequeued`.
#[derive(Debug, Clone, PartialEq)]
pub struct Dequeued {
    pub repo: RepoName,
    pub installation: Option<InstallationId>,
    pub number: u64,
    /// GitHub's reason (`MERGE_CONFLICT`, `CI_FAILURE`, `MANUAL`…), as sent.
    pub reason: String,
    /// The pull request's head when it left the queue.
    pub head_sha: String,
    pub sender: String,
}

/// The [`Event`] of a `merge_group` delivery.
pub(super) fn merge_group(
    p: &MergeGroupWebhookEventPayload,
    repo: RepoName,
    installation: Option<InstallationId>,
) -> Result<Event, String> {
    if p.action != MergeGroupWebhookEventAction::ChecksRequested {
        return Ok(Event::NotActionable(
            "merge_group.destroyed asks nothing: the pull request's own events follow".into(),
        ));
    }
    let text = |k: &str| {
        p.merge_group[k]
            .as_str()
            .map(str::to_owned)
            .ok_or(format!("merge_group without {k}"))
    };
    let head_ref = text("head_ref")?;
    let Some(pull) = crate::github::queue::group_pull(&head_ref) else {
        return Err(format!(
            "merge group ref {head_ref:?} names no pull request"
        ));
    };
    let base_ref = text("base_ref")?;
    Ok(Event::GroupChecks(GroupChecks {
        repo,
        installation,
        pull,
        head_sha: text("head_sha")?,
        base_sha: text("base_sha").ok(),
        base_branch: base_ref
            .strip_prefix("refs/heads/")
            .unwrap_or(&base_ref)
            .to_owned(),
    }))
}

/// The [`Event`] of `pull_request.dequeued`.
pub(super) fn dequeued(
    p: &PullRequestWebhookEventPayload,
    repo: RepoName,
    installation: Option<InstallationId>,
    sender: String,
) -> Event {
    Event::Dequeued(Dequeued {
        repo,
        installation,
        number: p.number,
        reason: p.reason.clone().unwrap_or_default(),
        head_sha: p.pull_request.head.sha.clone(),
        sender,
    })
}
