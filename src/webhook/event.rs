//! Our typed view of webhook deliveries. octocrab parses the payload; we keep only what the
//! hive acts on, in [`Event`]. A payload octocrab cannot parse (a new action GitHub added, say)
//! is an [`Unparsed`] error: stored, logged, never a crash.

use octocrab::models::webhook_events::payload::CommitState as StatusState;
use octocrab::models::webhook_events::payload::{
    CheckRunWebhookEventAction, CheckSuiteWebhookEventAction, InstallationWebhookEventAction,
    IssueCommentWebhookEventAction, IssuesWebhookEventAction, PullRequestReviewWebhookEventAction,
    PullRequestWebhookEventAction,
};
use octocrab::models::webhook_events::{EventInstallation, WebhookEvent, WebhookEventPayload};
use serde::Deserialize;

use crate::ids::{InstallationId, RepoName};

/// Event types (`X-GitHub-Event`) Vibeloop handles; deliveries of any other are stored as ignored.
pub const HANDLED_EVENTS: &[&str] = &[
    "issues",
    "issue_comment",
    "pull_request",
    "pull_request_review",
    "check_run",
    "check_suite",
    "status",
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
    },
    /// A pull-request review was submitted.
    ReviewSubmitted(ReviewEvent),
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
                default_branch: repository.default_branch.unwrap_or_else(|| "main".into()),
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

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    fn fixture(rel: &str) -> Vec<u8> {
        std::fs::read(
            Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("tests/fixtures/github/webhooks")
                .join(rel),
        )
        .unwrap()
    }

    #[test]
    fn issues_labeled_parses() {
        let e = parse("issues", &fixture("issues/labeled.payload.json")).unwrap();
        let Event::IssueLabeled(l) = e else {
            panic!("{e:?}")
        };
        assert_eq!(l.repo.as_str(), "Codertocat/Hello-World");
        assert_eq!(l.number, 1);
        assert_eq!(l.label, "bug");
        assert_eq!(l.default_branch, "master");
        assert_eq!(l.installation, None);
    }

    #[test]
    fn rerequests_parse() {
        let e = parse("check_run", &fixture("check_run/rerequested.payload.json")).unwrap();
        let Event::ChecksRerequested(r) = e else {
            panic!("{e:?}")
        };
        assert_eq!(r.head_sha, "d6fde92930d4715a2b49857d24b940956b26d2d3");
        assert_eq!(
            r.check_run.as_ref().map(|c| c.0.as_str()),
            Some("randscape")
        );
        let e = parse(
            "check_suite",
            &fixture("check_suite/rerequested.payload.json"),
        )
        .unwrap();
        let Event::ChecksRerequested(r) = e else {
            panic!("{e:?}")
        };
        assert_eq!(
            (r.check_run, r.head_branch.as_deref()),
            (None, Some("changes"))
        );
    }

    #[test]
    fn completed_checks_and_statuses_parse() {
        let e = parse("check_run", &fixture("check_run/completed.payload.json")).unwrap();
        let Event::CheckCompleted(c) = e else {
            panic!("{e:?}")
        };
        assert_eq!(c.head_sha, "ec26c3e57ca3a959ca5aad62de7213c562f8c821");
        assert_eq!(c.branches, ["changes"]);
        // GitHub's documented `status` payload (the collection has no example of it).
        let status = serde_json::json!({
            "id": 1, "sha": "ec26c3e57ca3a959ca5aad62de7213c562f8c821", "name": "acme/widgets",
            "target_url": null, "avatar_url": null, "context": "ci/legacy", "description": null,
            "state": "success", "commit": {}, "created_at": "2026-11-24T12:00:00Z",
            "updated_at": "2026-11-24T12:00:00Z",
            "branches": [{ "name": "feat/T-3", "commit": { "sha": "ec26c3e" }, "protected": false }],
            "repository": serde_json::from_slice::<serde_json::Value>(&fixture("check_run/completed.payload.json")).unwrap()["repository"],
        });
        let e = parse("status", status.to_string().as_bytes()).unwrap();
        let Event::CheckCompleted(c) = e else {
            panic!("{e:?}")
        };
        assert_eq!(
            (c.name.as_str(), c.branches.as_slice()),
            ("ci/legacy", &["feat/T-3".to_owned()][..])
        );
        let mut pending = status.clone();
        pending["state"] = "pending".into();
        assert!(matches!(
            parse("status", pending.to_string().as_bytes()).unwrap(),
            Event::NotActionable(_)
        ));
    }

    #[test]
    fn installation_events_parse() {
        let e = parse(
            "installation",
            &fixture("installation/created.payload.json"),
        )
        .unwrap();
        assert!(matches!(e, Event::InstallationCreated { .. }), "{e:?}");
        let e = parse(
            "installation",
            &fixture("installation/deleted.payload.json"),
        )
        .unwrap();
        assert!(matches!(e, Event::InstallationDeleted { .. }), "{e:?}");
    }

    #[test]
    fn new_actions_are_unparsed_not_fatal() {
        for f in [
            "issues/typed.from-octokit-webhooks.net.payload.json",
            "issues/untyped.from-octokit-webhooks.net.payload.json",
        ] {
            let err = parse("issues", &fixture(f)).unwrap_err();
            assert!(err.reason.contains("typed"), "{err}");
        }
    }

    /// Every real payload example parses into our type, except the two that octocrab cannot
    /// parse (new `issues` actions), which come back as [`Unparsed`].
    #[test]
    fn every_example_payload_parses_or_is_cleanly_unparsed() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/github/webhooks");
        let mut seen = 0;
        for dir in std::fs::read_dir(&root).unwrap() {
            let dir = dir.unwrap().path();
            let event = dir.file_name().unwrap().to_str().unwrap().to_owned();
            assert!(
                HANDLED_EVENTS.contains(&event.as_str()) || event == "push",
                "{event}"
            );
            for file in std::fs::read_dir(&dir).unwrap() {
                let file = file.unwrap().path();
                if file.extension().is_none_or(|e| e != "json") {
                    continue;
                }
                seen += 1;
                let body = std::fs::read(&file).unwrap();
                let name = file.file_name().unwrap().to_str().unwrap();
                match parse(&event, &body) {
                    Ok(_) => assert!(!name.contains("typed"), "{name} parsed"),
                    Err(e) => assert!(name.contains("typed"), "{event}/{name}: {e}"),
                }
                // The receiver's envelope reads every example too.
                serde_json::from_slice::<Envelope>(&body).unwrap_or_else(|e| panic!("{name}: {e}"));
            }
        }
        assert_eq!(seen, 59, "payload examples found");
    }
}
