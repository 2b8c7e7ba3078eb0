//! Our typed view of webhook deliveries. octocrab parses the payload; we keep only what the
//! hive acts on, in [`Event`]. A payload octocrab cannot parse (a new action GitHub added, say)
//! is an [`Unparsed`] error: stored, logged, never a crash.

use octocrab::models::webhook_events::payload::CommitState as StatusState;
use octocrab::models::webhook_events::payload::{
    CheckRunWebhookEventAction, CheckSuiteWebhookEventAction, InstallationWebhookEventAction,
    IssueCommentWebhookEventAction, IssuesWebhookEventAction,
    PullRequestReviewCommentWebhookEventAction, PullRequestReviewWebhookEventAction,
    PullRequestWebhookEventAction,
};
use octocrab::models::webhook_events::{EventInstallation, WebhookEvent, WebhookEventPayload};
use serde::Deserialize;

use crate::ids::{InstallationId, RepoName, RepositoryId};

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
    match parsed.specific {
        WebhookEventPayload::Ping(_) => Ok(Event::Ping),
        WebhookEventPayload::Issues(p) => {
            if p.action == IssuesWebhookEventAction::Edited {
                return Ok(Event::IssueEdited {
                    repo: repo_of(parsed.repository.as_ref()).map_err(unparsed)?,
                    installation,
                    number: p.issue.number,
                    title: p.issue.title.clone(),
                    body: p.issue.body.clone().unwrap_or_default(),
                    sender: parsed
                        .sender
                        .as_ref()
                        .map(|s| s.login.clone())
                        .unwrap_or_default(),
                });
            }
            if matches!(
                p.action,
                IssuesWebhookEventAction::Closed | IssuesWebhookEventAction::Unlabeled
            ) {
                return Ok(Event::TicketChanged {
                    repo: repo_of(parsed.repository.as_ref()).map_err(unparsed)?,
                    installation,
                    number: p.issue.number,
                    is_pull_request: false,
                });
            }
            if p.action != IssuesWebhookEventAction::Labeled {
                return Ok(Event::NotActionable(
                    format!("issues.{:?} is not acted on", p.action).to_lowercase(),
                ));
            }
            let Some(label) = p.label else {
                return Err(unparsed("issues.labeled without a label".into()));
            };
            let repo = repo_of(parsed.repository.as_ref()).map_err(unparsed)?;
            let repository = parsed.repository.expect("checked by repo_of");
            Ok(Event::IssueLabeled(IssueLabeled {
                repo,
                installation,
                number: p.issue.number,
                title: p.issue.title,
                body: p.issue.body.unwrap_or_default(),
                label: label.name,
                default_branch: default_branch(Some(&repository)),
                sender: parsed.sender.map(|s| s.login).unwrap_or_default(),
            }))
        }
        WebhookEventPayload::Installation(p) => match (p.action, installation) {
            (InstallationWebhookEventAction::Created, Some(id)) => Ok(Event::InstallationCreated {
                id,
                account: match parsed.installation {
                    Some(EventInstallation::Full(full)) => full.account.login,
                    _ => String::new(),
                },
            }),
            (InstallationWebhookEventAction::Deleted, Some(id)) => {
                Ok(Event::InstallationDeleted { id })
            }
            (action, _) => Ok(Event::NotActionable(format!(
                "installation.{action:?} is not acted on"
            ))),
        },
        WebhookEventPayload::IssueComment(p)
            if p.action != IssueCommentWebhookEventAction::Deleted =>
        {
            let edited = p.action == IssueCommentWebhookEventAction::Edited;
            Ok(Event::Comment(CommentEvent {
                repo: repo_of(parsed.repository.as_ref()).map_err(unparsed)?,
                installation,
                number: p.issue.number,
                is_pull_request: p.issue.pull_request.is_some(),
                comment_id: p.comment.id.0,
                author_is_bot: p.comment.user.r#type == "Bot"
                    || p.comment.user.login.ends_with("[bot]"),
                author: p.comment.user.login,
                body: p.comment.body.unwrap_or_default(),
                old_body: if edited {
                    p.changes.map(|c| c.body.from)
                } else {
                    None
                },
                thread: None,
                issue_title: p.issue.title,
                issue_body: p.issue.body.unwrap_or_default(),
                default_branch: default_branch(parsed.repository.as_ref()),
                private: is_private(parsed.repository.as_ref()),
            }))
        }
        WebhookEventPayload::PullRequestReviewComment(p)
            if p.action != PullRequestReviewCommentWebhookEventAction::Deleted =>
        {
            let edited = p.action == PullRequestReviewCommentWebhookEventAction::Edited;
            let user = p.comment.user.as_ref();
            let login = user.map(|u| u.login.clone()).unwrap_or_default();
            Ok(Event::Comment(CommentEvent {
                repo: repo_of(parsed.repository.as_ref()).map_err(unparsed)?,
                installation,
                number: p.pull_request.number,
                is_pull_request: true,
                comment_id: p.comment.id.0,
                author_is_bot: user.is_some_and(|u| u.r#type == "Bot") || login.ends_with("[bot]"),
                author: login,
                body: p.comment.body.clone(),
                old_body: if edited {
                    p.changes.and_then(|c| c.body).map(|b| b.from)
                } else {
                    None
                },
                thread: Some(p.comment.in_reply_to_id.unwrap_or(p.comment.id).0),
                issue_title: p.pull_request.title.clone().unwrap_or_default(),
                issue_body: p.pull_request.body.clone().unwrap_or_default(),
                default_branch: default_branch(parsed.repository.as_ref()),
                private: is_private(parsed.repository.as_ref()),
            }))
        }
        WebhookEventPayload::Push(p) => {
            let sender = parsed.sender.as_ref();
            let login = sender.map(|s| s.login.clone()).unwrap_or_default();
            Ok(Event::Pushed(PushEvent {
                repo: repo_of(parsed.repository.as_ref()).map_err(unparsed)?,
                installation,
                branch: p.r#ref.strip_prefix("refs/heads/").map(str::to_owned),
                after: p.after.clone(),
                deleted: p.deleted,
                sender_is_bot: sender.is_some_and(|s| s.r#type == "Bot")
                    || login.ends_with("[bot]"),
                sender: login,
            }))
        }
        WebhookEventPayload::PullRequestReview(p)
            if p.action == PullRequestReviewWebhookEventAction::Submitted =>
        {
            Ok(Event::ReviewSubmitted(ReviewEvent {
                repo: repo_of(parsed.repository.as_ref()).map_err(unparsed)?,
                installation,
                number: p.pull_request.number,
                review_id: p.review.id.0,
                author: p.review.user.map(|u| u.login).unwrap_or_default(),
                state: serde_json::to_value(p.review.state)
                    .ok()
                    .and_then(|v| v.as_str().map(str::to_lowercase))
                    .unwrap_or_default(),
                body: p.review.body.clone(),
                commit: p.review.commit_id,
                head_branch: p.pull_request.head.ref_field.clone(),
            }))
        }
        WebhookEventPayload::CheckRun(p)
            if p.action == CheckRunWebhookEventAction::RequestedAction =>
        {
            let run = &p.check_run;
            Ok(Event::ButtonPressed(ButtonEvent {
                repo: repo_of(parsed.repository.as_ref()).map_err(unparsed)?,
                installation,
                check_run_id: run.get("id").and_then(|v| v.as_u64()).unwrap_or_default(),
                external_id: run
                    .get("external_id")
                    .and_then(|v| v.as_str())
                    .unwrap_or_default()
                    .to_owned(),
                identifier: body_identifier(body).unwrap_or_default(),
                author: parsed.sender.map(|s| s.login).unwrap_or_default(),
            }))
        }
        WebhookEventPayload::CheckRun(p) if p.action == CheckRunWebhookEventAction::Rerequested => {
            let run = &p.check_run;
            let text = |k: &str| {
                run.get(k)
                    .and_then(|v| v.as_str())
                    .unwrap_or_default()
                    .to_owned()
            };
            Ok(Event::ChecksRerequested(ChecksRerequested {
                repo: repo_of(parsed.repository.as_ref()).map_err(unparsed)?,
                installation,
                head_sha: text("head_sha"),
                check_run: Some((text("name"), text("external_id"))),
                head_branch: run
                    .pointer("/check_suite/head_branch")
                    .and_then(|v| v.as_str())
                    .map(str::to_owned),
            }))
        }
        WebhookEventPayload::CheckRun(p) if p.action == CheckRunWebhookEventAction::Completed => {
            let run = &p.check_run;
            let text = |k: &str| run.get(k).and_then(|v| v.as_str()).map(str::to_owned);
            Ok(Event::CheckCompleted(CheckCompleted {
                repo: repo_of(parsed.repository.as_ref()).map_err(unparsed)?,
                installation,
                name: text("name").unwrap_or_default(),
                head_sha: text("head_sha").unwrap_or_default(),
                branches: run
                    .pointer("/check_suite/head_branch")
                    .and_then(|v| v.as_str())
                    .map(|b| vec![b.to_owned()])
                    .unwrap_or_default(),
            }))
        }
        WebhookEventPayload::Status(p) => {
            if p.state == StatusState::Pending {
                return Ok(Event::NotActionable("status is pending".into()));
            }
            Ok(Event::CheckCompleted(CheckCompleted {
                repo: repo_of(parsed.repository.as_ref()).map_err(unparsed)?,
                installation,
                name: p.context.clone(),
                head_sha: p.sha.clone(),
                branches: p
                    .branches
                    .iter()
                    .filter_map(|b| b.get("name")?.as_str().map(str::to_owned))
                    .collect(),
            }))
        }
        WebhookEventPayload::PullRequest(p)
            if p.action == PullRequestWebhookEventAction::Closed =>
        {
            Ok(Event::TicketChanged {
                repo: repo_of(parsed.repository.as_ref()).map_err(unparsed)?,
                installation,
                number: p.number,
                is_pull_request: true,
            })
        }
        WebhookEventPayload::PullRequest(p)
            if p.action == PullRequestWebhookEventAction::Dequeued =>
        {
            let repo = repo_of(parsed.repository.as_ref()).map_err(unparsed)?;
            let sender = parsed.sender.map(|s| s.login).unwrap_or_default();
            Ok(queue::dequeued(&p, repo, installation, sender))
        }
        WebhookEventPayload::MergeGroup(p) => {
            let repo = repo_of(parsed.repository.as_ref()).map_err(unparsed)?;
            queue::merge_group(&p, repo, installation).map_err(unparsed)
        }
        WebhookEventPayload::CheckSuite(p)
            if p.action == CheckSuiteWebhookEventAction::Rerequested =>
        {
            let suite = &p.check_suite;
            let text = |k: &str| suite.get(k).and_then(|v| v.as_str()).map(str::to_owned);
            Ok(Event::ChecksRerequested(ChecksRerequested {
                repo: repo_of(parsed.repository.as_ref()).map_err(unparsed)?,
                installation,
                head_sha: text("head_sha").unwrap_or_default(),
                check_run: None,
                head_branch: text("head_branch"),
            }))
        }
        _ => Ok(Event::NotActionable(format!(
            "{event} events of this kind are not acted on"
        ))),
    }
}

/// `requested_action.identifier` of a `check_run.requested_action` payload (octocrab keeps only
/// the check run).
fn body_identifier(body: &[u8]) -> Option<String> {
    #[derive(Deserialize)]
    struct Action {
        identifier: String,
    }
    #[derive(Deserialize)]
    struct Body {
        requested_action: Action,
    }
    serde_json::from_slice::<Body>(body)
        .ok()
        .map(|b| b.requested_action.identifier)
}

/// `owner/name` of a payload's repository.
fn repo_of(repository: Option<&octocrab::models::Repository>) -> Result<RepoName, String> {
    let r = repository.ok_or("no repository")?;
    let full = match (&r.full_name, &r.owner) {
        (Some(full), _) => full.clone(),
        (None, Some(owner)) => format!("{}/{}", owner.login, r.name),
        (None, None) => return Err("repository without a full name".into()),
    };
    RepoName::parse(&full).map_err(|e| e.to_string())
}

/// A payload repository's default branch (`main` when the payload does not say).
/// Whether the repository is private; a payload that does not say is taken as public (the
/// stricter defaults apply).
fn is_private(repository: Option<&octocrab::models::Repository>) -> bool {
    repository.and_then(|r| r.private).unwrap_or(false)
}

fn default_branch(repository: Option<&octocrab::models::Repository>) -> String {
    repository
        .and_then(|r| r.default_branch.clone())
        .unwrap_or_else(|| "main".into())
}

#[cfg(test)]
mod tests;
