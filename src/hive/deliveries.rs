//! Processing one stored delivery: parse it, then act — a labelled issue opens a ticket, an
//! installation event updates the installations table — and record what was done on the
//! delivery row. A payload we cannot parse is recorded as `unparsed`, never retried.

use std::sync::Arc;

use tracing::{Instrument as _, info, info_span, warn};

use super::job::{Done, Hive, JobError};
use crate::commands::Permission;
use crate::github::{GitHubError, RepoClient};
use crate::ids::{CommitSha, RepoName, RepositoryId};
use crate::store::jobs::JobKey;
use crate::store::tickets::{NewTicket, Opened, Start};
use crate::ticket::{Signal, TicketId};
use crate::webhook::event::{self, CheckCompleted, ChecksRerequested, Event, IssueLabeled};

/// Processes delivery `delivery_id` (job `job_id`), recording its outcome and ending the job in
/// one transaction.
pub async fn process(hive: &Arc<Hive>, job_id: i64, delivery_id: &str) -> Result<Done, JobError> {
    let Some(mut d) = hive.store.delivery(delivery_id).await? else {
        return Err(JobError::permanent(format!(
            "delivery {delivery_id} is not stored"
        )));
    };
    let span = info_span!("delivery", id = %delivery_id, event = %d.event);
    async move {
        // Parsing a large payload is CPU work: keep it off the threads that answer webhooks.
        let (name, payload) = (d.event.clone(), std::mem::take(&mut d.payload));
        let (parsed, repository) = tokio::task::spawn_blocking(move || {
            let body = payload.as_bytes();
            (event::parse(&name, body), event::repository_of(body))
        })
        .await
        .map_err(|e| JobError::permanent(format!("payload parser panicked: {e}")))?;
        if let Some((id, repo)) = repository {
            repository_seen(hive, id, &repo).await?;
        }
        let (status, detail) = match parsed {
            Err(e) => {
                warn!(reason = %e.reason, "unparsed delivery");
                ("unparsed", e.to_string())
            }
            Ok(Event::IssueLabeled(labeled)) => issue_labeled(hive, &labeled).await?,
            Ok(Event::InstallationCreated { id, account }) => {
                hive.store.upsert_installation(id, &account).await?;
                ("processed", format!("installation {id} recorded"))
            }
            Ok(Event::InstallationDeleted { id }) => {
                hive.store.delete_installation(id).await?;
                ("processed", format!("installation {id} removed"))
            }
            Ok(Event::ChecksRerequested(r)) => rerequested(hive, &r).await?,
            Ok(Event::CheckCompleted(c)) => check_completed(hive, &c).await?,
            Ok(Event::Comment(c)) => match client_for(hive, c.installation, &c.repo).await? {
                Ok(client) => super::steer::on_comment(hive, &client, &c).await?,
                Err(why) => why,
            },
            Ok(Event::ReviewSubmitted(r)) => match client_for(hive, r.installation, &r.repo).await?
            {
                Ok(client) => super::steer::on_review(hive, &client, &r).await?,
                Err(why) => why,
            },
            Ok(Event::Pushed(p)) => super::steer::on_push(hive, &p).await?,
            Ok(Event::ButtonPressed(b)) => match client_for(hive, b.installation, &b.repo).await? {
                Ok(client) => super::steer::on_button(hive, &client, &b).await?,
                Err(why) => why,
            },
            Ok(Event::IssueEdited {
                repo,
                installation,
                number,
                title,
                body,
                sender,
            }) => {
                let edit = IssueEdit {
                    repo: &repo,
                    number,
                    title: &title,
                    body: &body,
                    sender: &sender,
                };
                issue_edited(hive, &edit, installation).await?
            }
            Ok(Event::TicketChanged {
                repo,
                number,
                is_pull_request,
                ..
            }) => ticket_changed(hive, &repo, number, is_pull_request).await?,
            Ok(Event::GroupChecks(g)) => group_checks(hive, &g).await?,
            Ok(Event::Dequeued(d)) => dequeued(hive, &d).await?,
            Ok(Event::Ping) => ("processed", "ping".into()),
            Ok(Event::NotActionable(why)) => ("ignored", why),
        };
        let recorded = hive
            .store
            .finish_delivery_job(job_id, &hive.owner, delivery_id, status, Some(&detail))
            .await?;
        if !recorded {
            warn!(
                status,
                "lease lost before the outcome was recorded; the worker that took over records it"
            );
            return Ok(Done::Recorded);
        }
        // Said once the outcome is committed: a run killed before that runs again, and only
        // the run that recorded the outcome reports it.
        info!(status, %detail, "delivery processed");
        crate::metrics::delivery_processed(status);
        Ok(Done::Recorded)
    }
    .instrument(span)
    .await
}

async fn issue_labeled(hive: &Hive, l: &IssueLabeled) -> Result<(&'static str, String), JobError> {
    let Some(installation) = l.installation else {
        return Ok((
            "rejected",
            "no installation in the payload: not sent to a GitHub App".into(),
        ));
    };
    let client = match hive.github.repo(installation, &l.repo).await {
        Ok(c) => c,
        Err(e @ GitHubError::NotInstalled { .. }) => return Ok(("rejected", e.to_string())),
        Err(e) => return Err(e.into()),
    };
    // The label that hands issues to the hive may be renamed in the repository's config. A
    // broken config falls back to the default label, so the ticket can report the error.
    let rules = super::repo_config::starting(&client, &l.default_branch).await?;
    let (label, plan_label) = (rules.label.as_str(), rules.plan_label.as_str());
    let start = if l.label == label {
        Start::Build
    } else if l.label == plan_label {
        Start::PlanLabel
    } else {
        return Ok((
            "ignored",
            format!(
                "label {:?} is neither {label:?} nor {plan_label:?}",
                l.label
            ),
        ));
    };
    if let Err(why) = may_steer(hive, &client, &l.sender, rules.permission).await? {
        let then = "Someone with that permission can remove the label and put it on again.";
        refuse_label(&client, l, &why, then).await;
        return Ok(("refused", why));
    }
    let chosen_base = match super::base::chosen_in(&client, &l.body).await? {
        Ok(base) => base,
        Err(why) => {
            let then = "Fix `base:` in the issue, then remove the label and put it on again.";
            refuse_label(&client, l, &why, then).await;
            return Ok(("refused", why));
        }
    };
    let (ticket, opened) = hive
        .store
        .open_ticket(&NewTicket {
            repo: &l.repo,
            issue_number: l.number,
            installation_id: installation,
            title: &l.title,
            body: &l.body,
            base_branch: &l.default_branch,
            chosen_base: chosen_base.as_deref(),
            start,
        })
        .await?;
    if matches!(opened, Opened::Created | Opened::Restarted) {
        hive.jobs_queued.notify_one();
    }
    // The hive's label on a plan-only ticket builds its plan.
    if opened == Opened::AlreadyOpen
        && start == Start::Build
        && super::flow::load(&hive.store, ticket.key)
            .await?
            .plan
            .plan_only
    {
        super::signal::send(hive, &ticket, &Signal::Build, &l.sender).await?;
        return Ok((
            "processed",
            format!("{} builds its plan once made", ticket.id),
        ));
    }
    let what = match opened {
        Opened::Created => "opened",
        Opened::Restarted => "restarted",
        Opened::AlreadyOpen => "already open:",
        Opened::AlreadyDone => "already completed:",
    };
    Ok((
        "processed",
        format!("{what} {} for {}#{}", ticket.id, l.repo, l.number),
    ))
}

/// Keeps the store's names true to GitHub's repository ids (`Store::repository_seen`); where a
/// name passed to another repository, what is kept on disk under it — environments, the
/// mirror, worktrees — is removed, so the newcomer inherits nothing of the one before.
async fn repository_seen(hive: &Hive, id: RepositoryId, repo: &RepoName) -> Result<(), JobError> {
    for name in hive.store.repository_seen(id, repo).await? {
        let envs = hive.environments.envs.forget(name.as_str());
        if let Err(e) = hive.workspace.forget(&name) {
            warn!(repo = %name, error = %e, "cannot remove the mirror and worktrees of a name another repository holds now");
        }
        info!(repo = %name, %id, environments = envs, "the name passed to another repository: its environments, mirror and worktrees were removed");
    }
    Ok(())
}

/// `Ok(())` when `who` may start or steer a ticket with `needed` (the App's own bot user
/// always may: it labels the issues it opens); else why not, in a sentence.
async fn may_steer(
    hive: &Hive,
    client: &RepoClient,
    who: &str,
    needed: Permission,
) -> Result<Result<(), String>, JobError> {
    if who.eq_ignore_ascii_case(client.bot()) {
        return Ok(Ok(()));
    }
    let have = hive
        .github
        .permission(client, who, super::steer::PERMISSION_TTL)
        .await?;
    Ok(match Permission::parse(&have) {
        Some(p) if p >= needed => Ok(()),
        _ => Err(format!(
            "@{who} has {} permission on {}; it takes {needed} (`label_permission`)",
            if have.is_empty() || have == "none" {
                "no"
            } else {
                have.as_str()
            },
            client.repo()
        )),
    })
}

/// Says on the issue, once, why a label started nothing.
async fn refuse_label(client: &RepoClient, l: &IssueLabeled, why: &str, then: &str) {
    let marker = format!(
        "<!-- vibeloop:label-refused {} -->",
        l.sender.replace("--", "")
    );
    let body = format!(
        "{marker}\nThe `{}` label from @{} starts nothing: {why}. {then}",
        l.label.replace('`', "'"),
        l.sender
    );
    if let Err(e) = client
        .upsert_marked_comment(l.number, &marker, None, &body)
        .await
    {
        tracing::warn!(error = %e, "cannot say why the label started nothing");
    }
}

/// An issue's edit, as `issues.edited` tells it.
struct IssueEdit<'a> {
    repo: &'a crate::ids::RepoName,
    number: u64,
    title: &'a str,
    body: &'a str,
    sender: &'a str,
}

/// The repository's client, or the delivery's outcome when the app cannot act there.
async fn client_for(
    hive: &Hive,
    installation: Option<crate::ids::InstallationId>,
    repo: &crate::ids::RepoName,
) -> Result<Result<RepoClient, (&'static str, String)>, JobError> {
    let Some(installation) = installation else {
        return Ok(Err((
            "rejected",
            "no installation in the payload: not sent to a GitHub App".into(),
        )));
    };
    match hive.github.repo(installation, repo).await {
        Ok(c) => Ok(Ok(c)),
        Err(e @ GitHubError::NotInstalled { .. }) => Ok(Err(("rejected", e.to_string()))),
        Err(e) => Err(e.into()),
    }
}

/// An edited issue: the ticket's copy of the issue is brought up to date (agents read it from
/// there), and a ticket Blocked on questions plans again — when the editor may steer it
/// (`label_permission`); an edit by anyone else never reaches the agents, and the status says
/// so.
async fn issue_edited(
    hive: &Hive,
    e: &IssueEdit<'_>,
    installation: Option<crate::ids::InstallationId>,
) -> Result<(&'static str, String), JobError> {
    let Some(t) = hive.store.ticket_for_issue(e.repo, e.number).await? else {
        return Ok(("ignored", "no ticket on this issue".into()));
    };
    if t.state.is_final() {
        return Ok(("ignored", format!("{} is {}", t.id, t.state)));
    }
    let client = match client_for(hive, installation, e.repo).await? {
        Ok(c) => c,
        Err(why) => return Ok(why),
    };
    let rules = super::repo_config::starting(&client, &t.base_branch).await?;
    if let Err(why) = may_steer(hive, &client, e.sender, rules.permission).await? {
        let refused = Signal::EditRefused {
            by: e.sender.to_owned(),
        };
        super::signal::send(hive, &t, &refused, e.sender).await?;
        return Ok((
            "refused",
            format!("{} keeps the issue as labelled: {why}", t.id),
        ));
    }
    let (title, body) = (e.title, e.body);
    hive.store.set_ticket_issue(t.key, title, body).await?;
    if t.state == crate::ticket::TaskState::Blocked {
        super::signal::send(hive, &t, &Signal::Plan, "issue edit").await?;
        return Ok(("processed", format!("{} plans again after the edit", t.id)));
    }
    Ok(("processed", format!("{} has the edited issue", t.id)))
}

/// A check completed (or a status was set) on a ticket's branch: a landing of that commit
/// (waiting for its checks, or about to hear them) looks at them again.
async fn check_completed(
    hive: &Hive,
    c: &CheckCompleted,
) -> Result<(&'static str, String), JobError> {
    let Some(id) = c.branches.iter().find_map(|b| TicketId::from_branch(b)) else {
        return Ok(("ignored", format!("{} is not on a Vibeloop branch", c.name)));
    };
    let Some(t) = hive.store.ticket_by_number(&c.repo, id.0).await? else {
        return Ok(("ignored", format!("{} has no ticket {id}", c.repo)));
    };
    let flow = super::flow::load(&hive.store, t.key).await?;
    // The head the landing is about: whether it waits already, or is about to hear the CI
    // (a completion between its look and its wait must not be lost), it looks again.
    let waits = flow.land.rebased.as_ref().map(CommitSha::as_str) == Some(c.head_sha.as_str());
    if t.state.is_final() || !waits {
        return Ok((
            "ignored",
            format!("{id} does not wait for checks on this commit"),
        ));
    }
    super::signal::send(hive, &t, &Signal::Recheck, "github").await?;
    Ok((
        "processed",
        format!("{} completed: {id} tries to merge again", c.name),
    ))
}

/// An issue or a pull request closed, or a label removed: the ticket on it is reconciled with
/// GitHub (it may stop or complete).
async fn ticket_changed(
    hive: &Hive,
    repo: &RepoName,
    number: u64,
    is_pull_request: bool,
) -> Result<(&'static str, String), JobError> {
    let ticket = if is_pull_request {
        hive.store.ticket_by_pr(repo, number).await?
    } else {
        hive.store.ticket_for_issue(repo, number).await?
    };
    Ok(match ticket.filter(|t| !t.state.is_final()) {
        Some(t) => match super::reconcile::reconcile(hive, &t).await? {
            Some(what) => ("processed", format!("{}: {what}", t.id)),
            None => ("ignored", format!("{} goes on", t.id)),
        },
        None => ("ignored", "no open ticket here".into()),
    })
}

/// The merge queue asks checks of a group for a ticket's pull request: the ticket gates it.
async fn group_checks(
    hive: &Hive,
    g: &event::GroupChecks,
) -> Result<(&'static str, String), JobError> {
    let Ok(head) = CommitSha::parse(&g.head_sha) else {
        return Ok(("ignored", "the merge group names no commit".into()));
    };
    let base = g.base_sha.as_deref().and_then(|b| CommitSha::parse(b).ok());
    let group = Signal::Group { head, base };
    let what = format!("gates merge group {}", &g.head_sha[..7]);
    signal_pull(hive, (&g.repo, g.pull), &group, "github", &what).await
}

/// A ticket's pull request left the merge queue unmerged: the ticket hears GitHub's reason.
async fn dequeued(hive: &Hive, d: &event::Dequeued) -> Result<(&'static str, String), JobError> {
    let signal = Signal::Dequeued {
        reason: d.reason.clone(),
        head: CommitSha::parse(&d.head_sha).ok(),
    };
    let pull = (&d.repo, d.number);
    signal_pull(hive, pull, &signal, &d.sender, "left the merge queue").await
}

/// Sends `signal` from `author` to the open ticket of pull request `pull`; `what` it does.
async fn signal_pull(
    hive: &Hive,
    (repo, number): (&RepoName, u64),
    signal: &Signal,
    author: &str,
    what: &str,
) -> Result<(&'static str, String), JobError> {
    let Some(t) = hive.store.ticket_by_pr(repo, number).await? else {
        return Ok(("ignored", format!("#{number} is no ticket's pull request")));
    };
    if t.state.is_final() {
        return Ok(("ignored", format!("{} has ended", t.id)));
    }
    super::signal::send(hive, &t, signal, author).await?;
    Ok(("processed", format!("{} {what}", t.id)))
}

/// A re-run asked on GitHub: queue the gates again for the commit.
async fn rerequested(
    hive: &Hive,
    r: &ChecksRerequested,
) -> Result<(&'static str, String), JobError> {
    let (ticket, gate) = match (&r.check_run, &r.head_branch) {
        (Some((name, external_id)), _) => {
            let Some(id) = external_id
                .strip_prefix("vibeloop:")
                .and_then(|rest| TicketId::parse(rest.split(':').next()?))
            else {
                return Ok((
                    "ignored",
                    format!("check run {name:?} is not one of Vibeloop's"),
                ));
            };
            let Some(gate) = name
                .strip_prefix("hive/")
                .filter(|g| crate::gates::is_check(g))
            else {
                return Ok((
                    "ignored",
                    format!("check run {name:?} cannot be re-run on its own"),
                ));
            };
            (id, gate.to_owned())
        }
        (None, Some(branch)) => match TicketId::from_branch(branch) {
            Some(id) => (id, "all".to_owned()),
            None => {
                return Ok((
                    "ignored",
                    format!("branch {branch:?} is not a Vibeloop branch"),
                ));
            }
        },
        (None, None) => return Ok(("ignored", "the check suite names no branch".into())),
    };
    let Ok(sha) = CommitSha::parse(&r.head_sha) else {
        return Ok((
            "rejected",
            format!("head_sha {:?} is not a commit", r.head_sha),
        ));
    };
    let Some(t) = hive.store.ticket_by_number(&r.repo, ticket.0).await? else {
        return Ok(("ignored", format!("{} has no ticket {ticket}", r.repo)));
    };
    let key = JobKey::Gates {
        ticket: t.key,
        sha,
        gate: gate.clone(),
    };
    let queued = hive.store.enqueue(&key).await?;
    if queued {
        hive.jobs_queued.notify_one();
    }
    let what = if gate == "all" {
        "every gate".to_owned()
    } else {
        format!("hive/{gate}")
    };
    Ok((
        "processed",
        format!("re-running {what} on {} for {ticket}", &r.head_sha[..7]),
    ))
}
