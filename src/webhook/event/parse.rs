//! One parser per family of deliveries, from octocrab's payload to our [`Event`]: `Ok(None)`
//! for an action the hive does not act on, `Err` with serde's or our reason for a payload that
//! lacks what the action needs.

use octocrab::models::webhook_events::payload::{
    CheckRunWebhookEventAction, CheckRunWebhookEventPayload, CheckSuiteWebhookEventAction,
    CheckSuiteWebhookEventPayload, CommitState as StatusState, InstallationWebhookEventAction,
    IssueCommentWebhookEventAction, IssueCommentWebhookEventPayload, IssuesWebhookEventAction,
    IssuesWebhookEventPayload, PullRequestReviewCommentWebhookEventAction,
    PullRequestReviewCommentWebhookEventPayload, PullRequestReviewWebhookEventAction,
    PullRequestReviewWebhookEventPayload, PullRequestWebhookEventAction,
    PullRequestWebhookEventPayload, PushWebhookEventPayload, StatusWebhookEventPayload,
};
use octocrab::models::{Author, Repository};
use serde::Deserialize;

use super::{
    ButtonEvent, CheckCompleted, ChecksRerequested, CommentEvent, Event, IssueLabeled, PushEvent,
    ReviewEvent,
};
use crate::ids::{InstallationId, RepoName};

/// What every delivery says beside its payload.
pub(super) struct Delivery<'a> {
    pub repository: Option<&'a Repository>,
    pub sender: Option<&'a Author>,
    pub installation: Option<InstallationId>,
}

/// What a parser gives: the event, `None` for an action not acted on, or why it cannot be read.
type Parsed = Result<Option<Event>, String>;

impl Delivery<'_> {
    /// `owner/name` of the payload's repository.
    pub fn repo(&self) -> Result<RepoName, String> {
        let r = self.repository.ok_or("no repository")?;
        let full = match (&r.full_name, &r.owner) {
            (Some(full), _) => full.clone(),
            (None, Some(owner)) => format!("{}/{}", owner.login, r.name),
            (None, None) => return Err("repository without a full name".into()),
        };
        RepoName::parse(&full).map_err(|e| e.to_string())
    }

    fn sender(&self) -> String {
        self.sender.map(|s| s.login.clone()).unwrap_or_default()
    }

    /// Bots (this App included) are not people.
    fn sender_is_bot(&self) -> bool {
        self.sender
            .is_some_and(|s| s.r#type == "Bot" || s.login.ends_with("[bot]"))
    }

    /// The repository's default branch (`main` when the payload does not say).
    fn default_branch(&self) -> String {
        self.repository
            .and_then(|r| r.default_branch.clone())
            .unwrap_or_else(|| "main".into())
    }

    /// Whether the repository is private; a payload that does not say is taken as public (the
    /// stricter defaults apply).
    fn private(&self) -> bool {
        self.repository.and_then(|r| r.private).unwrap_or(false)
    }
}

/// `issues`: labelled, edited, closed or unlabelled.
pub(super) fn issues(p: IssuesWebhookEventPayload, from: &Delivery<'_>) -> Parsed {
    let installation = from.installation;
    match p.action {
        IssuesWebhookEventAction::Edited => Ok(Some(Event::IssueEdited {
            repo: from.repo()?,
            installation,
            number: p.issue.number,
            title: p.issue.title,
            body: p.issue.body.unwrap_or_default(),
            sender: from.sender(),
        })),
        IssuesWebhookEventAction::Closed | IssuesWebhookEventAction::Unlabeled => {
            Ok(Some(Event::TicketChanged {
                repo: from.repo()?,
                installation,
                number: p.issue.number,
                is_pull_request: false,
            }))
        }
        IssuesWebhookEventAction::Labeled => {
            let label = p.label.ok_or("issues.labeled without a label")?;
            Ok(Some(Event::IssueLabeled(IssueLabeled {
                repo: from.repo()?,
                installation,
                number: p.issue.number,
                title: p.issue.title,
                body: p.issue.body.unwrap_or_default(),
                label: label.name,
                default_branch: from.default_branch(),
                sender: from.sender(),
            })))
        }
        action => Ok(Some(Event::NotActionable(
            format!("issues.{action:?} is not acted on").to_lowercase(),
        ))),
    }
}

/// `installation`: created or deleted.
pub(super) fn installation(
    action: &InstallationWebhookEventAction,
    id: Option<InstallationId>,
    account: String,
) -> Event {
    match (action, id) {
        (InstallationWebhookEventAction::Created, Some(id)) => {
            Event::InstallationCreated { id, account }
        }
        (InstallationWebhookEventAction::Deleted, Some(id)) => Event::InstallationDeleted { id },
        (action, _) => Event::NotActionable(format!("installation.{action:?} is not acted on")),
    }
}

/// `issue_comment`, created or edited: slash commands.
pub(super) fn issue_comment(p: IssueCommentWebhookEventPayload, from: &Delivery<'_>) -> Parsed {
    if p.action == IssueCommentWebhookEventAction::Deleted {
        return Ok(None);
    }
    let edited = p.action == IssueCommentWebhookEventAction::Edited;
    Ok(Some(Event::Comment(CommentEvent {
        repo: from.repo()?,
        installation: from.installation,
        number: p.issue.number,
        is_pull_request: p.issue.pull_request.is_some(),
        comment_id: p.comment.id.0,
        author_is_bot: p.comment.user.r#type == "Bot" || p.comment.user.login.ends_with("[bot]"),
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
        default_branch: from.default_branch(),
        private: from.private(),
    })))
}

/// `pull_request_review_comment`, created or edited: slash commands in a review thread.
pub(super) fn review_comment(
    p: PullRequestReviewCommentWebhookEventPayload,
    from: &Delivery<'_>,
) -> Parsed {
    if p.action == PullRequestReviewCommentWebhookEventAction::Deleted {
        return Ok(None);
    }
    let edited = p.action == PullRequestReviewCommentWebhookEventAction::Edited;
    let user = p.comment.user.as_ref();
    let login = user.map(|u| u.login.clone()).unwrap_or_default();
    Ok(Some(Event::Comment(CommentEvent {
        repo: from.repo()?,
        installation: from.installation,
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
        default_branch: from.default_branch(),
        private: from.private(),
    })))
}

/// `push`.
pub(super) fn push(p: &PushWebhookEventPayload, from: &Delivery<'_>) -> Parsed {
    Ok(Some(Event::Pushed(PushEvent {
        repo: from.repo()?,
        installation: from.installation,
        branch: p.r#ref.strip_prefix("refs/heads/").map(str::to_owned),
        after: p.after.clone(),
        deleted: p.deleted,
        sender_is_bot: from.sender_is_bot(),
        sender: from.sender(),
    })))
}

/// `pull_request_review`, submitted.
pub(super) fn review(p: PullRequestReviewWebhookEventPayload, from: &Delivery<'_>) -> Parsed {
    if p.action != PullRequestReviewWebhookEventAction::Submitted {
        return Ok(None);
    }
    Ok(Some(Event::ReviewSubmitted(ReviewEvent {
        repo: from.repo()?,
        installation: from.installation,
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
    })))
}

/// `check_run`: a button pressed, a re-run asked, or a run completed.
pub(super) fn check_run(
    p: &CheckRunWebhookEventPayload,
    body: &[u8],
    from: &Delivery<'_>,
) -> Parsed {
    let run = &p.check_run;
    let text = |k: &str| run.get(k).and_then(|v| v.as_str()).map(str::to_owned);
    let suite_branch = || {
        run.pointer("/check_suite/head_branch")
            .and_then(|v| v.as_str())
            .map(str::to_owned)
    };
    let (repo, installation) = (from.repo()?, from.installation);
    Ok(Some(match p.action {
        CheckRunWebhookEventAction::RequestedAction => Event::ButtonPressed(ButtonEvent {
            repo,
            installation,
            check_run_id: run.get("id").and_then(|v| v.as_u64()).unwrap_or_default(),
            external_id: text("external_id").unwrap_or_default(),
            identifier: body_identifier(body).unwrap_or_default(),
            author: from.sender(),
        }),
        CheckRunWebhookEventAction::Rerequested => Event::ChecksRerequested(ChecksRerequested {
            repo,
            installation,
            head_sha: text("head_sha").unwrap_or_default(),
            check_run: Some((
                text("name").unwrap_or_default(),
                text("external_id").unwrap_or_default(),
            )),
            head_branch: suite_branch(),
        }),
        CheckRunWebhookEventAction::Completed => Event::CheckCompleted(CheckCompleted {
            repo,
            installation,
            name: text("name").unwrap_or_default(),
            head_sha: text("head_sha").unwrap_or_default(),
            branches: suite_branch().into_iter().collect(),
        }),
        _ => return Ok(None),
    }))
}

/// `status`, once it is no longer pending.
pub(super) fn status(p: &StatusWebhookEventPayload, from: &Delivery<'_>) -> Parsed {
    if p.state == StatusState::Pending {
        return Ok(Some(Event::NotActionable("status is pending".into())));
    }
    Ok(Some(Event::CheckCompleted(CheckCompleted {
        repo: from.repo()?,
        installation: from.installation,
        name: p.context.clone(),
        head_sha: p.sha.clone(),
        branches: p
            .branches
            .iter()
            .filter_map(|b| b.get("name")?.as_str().map(str::to_owned))
            .collect(),
    })))
}

/// `pull_request`: closed (merged or not), or out of the merge queue.
pub(super) fn pull_request(p: &PullRequestWebhookEventPayload, from: &Delivery<'_>) -> Parsed {
    match p.action {
        PullRequestWebhookEventAction::Closed => Ok(Some(Event::TicketChanged {
            repo: from.repo()?,
            installation: from.installation,
            number: p.number,
            is_pull_request: true,
        })),
        PullRequestWebhookEventAction::Dequeued => Ok(Some(super::queue::dequeued(
            p,
            from.repo()?,
            from.installation,
            from.sender(),
        ))),
        _ => Ok(None),
    }
}

/// `check_suite`, a re-run of the whole suite asked.
pub(super) fn check_suite(p: &CheckSuiteWebhookEventPayload, from: &Delivery<'_>) -> Parsed {
    if p.action != CheckSuiteWebhookEventAction::Rerequested {
        return Ok(None);
    }
    let suite = &p.check_suite;
    let text = |k: &str| suite.get(k).and_then(|v| v.as_str()).map(str::to_owned);
    Ok(Some(Event::ChecksRerequested(ChecksRerequested {
        repo: from.repo()?,
        installation: from.installation,
        head_sha: text("head_sha").unwrap_or_default(),
        check_run: None,
        head_branch: text("head_branch"),
    })))
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
