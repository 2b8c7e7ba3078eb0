//! Our typed view of webhook deliveries. octocrab parses the payload; we keep only what the
//! hive acts on, in [`Event`]. A payload octocrab cannot parse (a new action GitHub added, say)
//! is an [`Unparsed`] error: stored, logged, never a crash.

use octocrab::models::webhook_events::{EventInstallation, WebhookEvent, WebhookEventPayload};
use serde::Deserialize;

use crate::ids::{InstallationId, RepoName, RepositoryId};

mod parse;
mod queue;
pub use queue::{Dequeued, GroupChecks};

/// Event types (`X-GitHub-Event`) Vibeloop handles; deliveries of any other are stored as ignored.
pub const HANDLED_EVENTS: &[&str] = &[
    "issues",
    "issue_comment",
    "pull_request",
    "pull_request_review",
    "pull_request_review_comment",
    "push",
    "check_run",
    "check_suite",
    "status",
    "merge_group",
    "installation",
    "installation_repositories",
    "ping",
];

/// The few fields the receiver reads before storing a delivery.
#[derive(Debug, Default, Deserialize)]
pub struct Envelope {
    pub action: Option<String>,
    pub installation: Option<IdOnly>,
    pub repository: Option<RepoOnly>,
}

#[derive(Debug, Deserialize)]
pub struct IdOnly {
    pub id: u64,
}

#[derive(Debug, Deserialize)]
pub struct RepoOnly {
    pub full_name: String,
    /// GitHub's repository id (`None` in payloads that lack it).
    #[serde(default)]
    pub id: Option<u64>,
}

/// The repository a payload is about, by GitHub's id and the name it has now.
pub fn repository_of(body: &[u8]) -> Option<(RepositoryId, RepoName)> {
    let e: Envelope = serde_json::from_slice(body).ok()?;
    let r = e.repository?;
    Some((RepositoryId(r.id?), RepoName::parse(&r.full_name).ok()?))
}

/// What a delivery means to the hive.
#[derive(Debug, Clone, PartialEq)]
pub enum Event {
    IssueLabeled(IssueLabeled),
    InstallationCreated {
        id: InstallationId,
        account: String,
    },
    InstallationDeleted {
        id: InstallationId,
    },
    Ping,
    /// Someone asked GitHub to re-run one of our check runs (`check_run.rerequested`) or a whole
    /// check suite (`check_suite.rerequested`, then `check_run` is `None`).
    ChecksRerequested(ChecksRerequested),
    /// A comment created or edited on an issue or pull request (slash commands).
    Comment(CommentEvent),
    /// An issue's title or body changed (a Blocked ticket plans again).
    IssueEdited {
        repo: RepoName,
        installation: Option<InstallationId>,
        number: u64,
        /// The issue's title and body after the edit.
        title: String,
        body: String,
        /// Who edited it.
        sender: String,
    },
    /// A pull-request review was submitted.
    ReviewSubmitted(ReviewEvent),
    /// Commits were pushed to a branch (or it was deleted).
    Pushed(PushEvent),
    /// A button on one of our check runs was pressed (`check_run.requested_action`).
    ButtonPressed(ButtonEvent),
    /// A check run completed, or a commit status was set, on a commit (a landing that waits
    /// for required checks tries again).
    CheckCompleted(CheckCompleted),
    /// An issue closed or unlabelled, or a pull request closed (merged or not): a ticket on
    /// it may have to stop or complete. `number` is the issue's or the pull request's.
    TicketChanged {
        repo: RepoName,
        installation: Option<InstallationId>,
        number: u64,
        is_pull_request: bool,
    },
    /// The base's merge queue made a group for a pull request and waits for its checks.
    GroupChecks(GroupChecks),
    /// A pull request left the merge queue unmerged.
    Dequeued(Dequeued),
    /// A handled event type whose action asks nothing of us; says why.
    NotActionable(String),
}

/// `issue_comment.created` or `.edited`.
#[derive(Debug, Clone, PartialEq)]
pub struct CommentEvent {
    pub repo: RepoName,
    pub installation: Option<InstallationId>,
    /// The issue or pull request number.
    pub number: u64,
    pub is_pull_request: bool,
    pub comment_id: u64,
    pub author: String,
    /// Bots (this app included) do not steer.
    pub author_is_bot: bool,
    pub body: String,
    /// The body before an edit.
    pub old_body: Option<String>,
    /// For a comment on a line of a pull request's diff: its review thread, named by the
    /// thread's first comment (the one GitHub's reply endpoint takes). `None` for a comment on
    /// an issue or on a pull request's conversation.
    pub thread: Option<u64>,
    /// The issue's (or pull request's) title and body, and the repository's default branch:
    /// what `/hive plan` on an issue without a ticket starts one from.
    pub issue_title: String,
    pub issue_body: String,
    pub default_branch: String,
    /// The repository is private (only people it was shared with read it).
    pub private: bool,
}

/// `push`.
#[derive(Debug, Clone, PartialEq)]
pub struct PushEvent {
    pub repo: RepoName,
    pub installation: Option<InstallationId>,
    /// The branch pushed to; `None` for a tag.
    pub branch: Option<String>,
    /// The branch's head after the push.
    pub after: String,
    /// The branch was deleted.
    pub deleted: bool,
    /// Who pushed.
    pub sender: String,
    /// Bots (this app included) are not people.
    pub sender_is_bot: bool,
}

/// `pull_request_review.submitted`.
#[derive(Debug, Clone, PartialEq)]
pub struct ReviewEvent {
    pub repo: RepoName,
    pub installation: Option<InstallationId>,
    pub number: u64,
    pub review_id: u64,
    pub author: String,
    /// `approved`, `commented`, `changes_requested`…
    pub state: String,
    /// The review's own text.
    pub body: Option<String>,
    pub commit: Option<String>,
    /// The pull request's head branch (a bot branch names its ticket).
    pub head_branch: String,
}

/// `check_run.requested_action`.
#[derive(Debug, Clone, PartialEq)]
pub struct ButtonEvent {
    pub repo: RepoName,
    pub installation: Option<InstallationId>,
    pub check_run_id: u64,
    pub external_id: String,
    /// The action's identifier (`retry`, `approve`).
    pub identifier: String,
    pub author: String,
}

/// `issues.labeled`.
#[derive(Debug, Clone, PartialEq)]
pub struct IssueLabeled {
    pub repo: RepoName,
    pub installation: Option<InstallationId>,
    pub number: u64,
    pub title: String,
    pub body: String,
    pub label: String,
    pub default_branch: String,
    pub sender: String,
}

/// `check_run.completed`, or a `status` that is no longer pending.
#[derive(Debug, Clone, PartialEq)]
pub struct CheckCompleted {
    pub repo: RepoName,
    pub installation: Option<InstallationId>,
    /// The check's or the status's name.
    pub name: String,
    pub head_sha: String,
    /// Branches whose head is the commit, where GitHub says (the check suite's branch, or a
    /// status's `branches`).
    pub branches: Vec<String>,
}

/// A re-run request.
#[derive(Debug, Clone, PartialEq)]
pub struct ChecksRerequested {
    pub repo: RepoName,
    pub installation: Option<InstallationId>,
    pub head_sha: String,
    /// Set for a single check run: its name and our `external_id`.
    pub check_run: Option<(String, String)>,
    /// The suite's branch, for a whole suite.
    pub head_branch: Option<String>,
}

/// A payload octocrab could not parse, with serde's reason.
#[derive(Debug, thiserror::Error)]
#[error("unparsed {event} payload: {reason}")]
pub struct Unparsed {
    pub event: String,
    pub reason: String,
}

/// Parses a stored delivery into an [`Event`].
pub fn parse(event: &str, body: &[u8]) -> Result<Event, Unparsed> {
    let unparsed = |reason: String| Unparsed {
        event: event.to_owned(),
        reason,
    };
    let parsed =
        WebhookEvent::try_from_header_and_body(event, body).map_err(|e| unparsed(e.to_string()))?;
    let installation = parsed.installation.as_ref().map(|i| match i {
        EventInstallation::Full(full) => InstallationId(full.id.0),
        EventInstallation::Minimal(min) => InstallationId(min.id.0),
    });
    let from = parse::Delivery {
        repository: parsed.repository.as_ref(),
        sender: parsed.sender.as_ref(),
        installation,
    };
    let account = match &parsed.installation {
        Some(EventInstallation::Full(full)) => full.account.login.clone(),
        _ => String::new(),
    };
    let not_acted_on =
        || Event::NotActionable(format!("{event} events of this kind are not acted on"));
    match parsed.specific {
        WebhookEventPayload::Ping(_) => Ok(Some(Event::Ping)),
        WebhookEventPayload::Issues(p) => parse::issues(*p, &from),
        WebhookEventPayload::Installation(p) => {
            Ok(Some(parse::installation(&p.action, installation, account)))
        }
        WebhookEventPayload::IssueComment(p) => parse::issue_comment(*p, &from),
        WebhookEventPayload::PullRequestReviewComment(p) => parse::review_comment(*p, &from),
        WebhookEventPayload::Push(p) => parse::push(&p, &from),
        WebhookEventPayload::PullRequestReview(p) => parse::review(*p, &from),
        WebhookEventPayload::CheckRun(p) => parse::check_run(&p, body, &from),
        WebhookEventPayload::Status(p) => parse::status(&p, &from),
        WebhookEventPayload::PullRequest(p) => parse::pull_request(&p, &from),
        WebhookEventPayload::CheckSuite(p) => parse::check_suite(&p, &from),
        WebhookEventPayload::MergeGroup(p) => from
            .repo()
            .and_then(|repo| queue::merge_group(&p, repo, installation))
            .map(Some),
        _ => Ok(None),
    }
    .map(|e| e.unwrap_or_else(not_acted_on))
    .map_err(unparsed)
}

#[cfg(test)]
mod tests;
