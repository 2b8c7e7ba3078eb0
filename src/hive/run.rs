//! One run of a ticket's job: the [`TicketRun`] every node works with (the ticket, its GitHub
//! client, its status comment and state moves), reading `.github/hive.yml` from the base
//! branch, and handing over to the workflow in [`super::flow`].

use std::sync::Arc;

use tracing::{Instrument as _, info, info_span, warn};

use super::status::{self, Extras};
use super::{Hive, JobError};
use crate::config::repo::{HiveConfig, PATH as CONFIG_PATH};
use crate::github::RepoClient;
use crate::llm::budget::Spend;
use crate::store::tickets::Ticket;
use crate::ticket::TaskState;

/// One run of one ticket: what every stage of the workflow works with.
pub(super) struct TicketRun<'a> {
    pub(super) hive: &'a Hive,
    pub(super) client: RepoClient,
    pub(super) ticket: Ticket,
    /// What the ticket's agents spent, once known (shown in the status comment).
    pub(super) spent: Option<Spend>,
}

impl TicketRun<'_> {
    /// Posts or edits the status comment.
    pub(super) async fn publish(&mut self, extras: &Extras<'_>) -> Result<(), JobError> {
        let extras = Extras {
            spent: extras.spent.or(self.spent),
            ..*extras
        };
        let body = status::render(&self.ticket, &extras);
        let id = self
            .client
            .upsert_marked_comment(
                self.ticket.issue_number,
                &status::marker(self.ticket.id),
                self.ticket.status_comment_id,
                &body,
            )
            .await?;
        if self.ticket.status_comment_id != Some(id) {
            self.hive
                .store
                .set_status_comment(self.ticket.key, id)
                .await?;
            self.ticket.status_comment_id = Some(id);
        }
        Ok(())
    }

    /// Moves the ticket to `to` with `detail` (why it waits, or how it ended), *after* the
    /// status comment says so: whoever sees the new state — the dashboard, the API, a test —
    /// finds the report on GitHub already. A run that dies between the two finds the comment
    /// right on its next try and moves the state then.
    pub(super) async fn settle(
        &mut self,
        to: TaskState,
        detail: &str,
        extras: &Extras<'_>,
    ) -> Result<(), JobError> {
        let from = self.ticket.state;
        let path = from.path_to(to).ok_or_else(|| {
            JobError::Permanent(format!("a ticket cannot go from {from} to {to}"))
        })?;
        self.ticket.state = to;
        self.ticket.detail = Some(detail.to_owned());
        self.publish(extras).await?;
        let store = &self.hive.store;
        if path.is_empty() {
            store.set_ticket_detail(self.ticket.key, detail).await?;
        }
        let mut at = from;
        for (i, step) in path.iter().enumerate() {
            let last = i + 1 == path.len();
            store
                .move_ticket(self.ticket.key, at, *step, last.then_some(detail))
                .await?;
            at = *step;
        }
        Ok(())
    }

    /// Stops the run for a person to decide (HumanNeeded), saying why on the issue.
    pub(super) async fn needs_human(
        &mut self,
        reason: &str,
        extras: &Extras<'_>,
    ) -> Result<(), JobError> {
        self.settle(TaskState::HumanNeeded, reason, extras).await?;
        self.sweep_containers().await;
        Ok(())
    }

    /// Removes whatever container of this ticket is left (each step stops its own; this
    /// catches one a failed step could not).
    pub(super) async fn sweep_containers(&self) {
        let (repo, id) = (self.ticket.repo.as_str(), self.ticket.id.to_string());
        if let Err(e) = self.hive.sandbox.remove_ticket(repo, &id).await {
            warn!(error = %e, "cannot remove the ticket's containers");
        }
    }

    /// Ends the run as Failed, saying why on the issue.
    pub(super) async fn fail(&mut self, reason: &str, extras: &Extras<'_>) -> Result<(), JobError> {
        self.settle(TaskState::Failed, reason, extras).await?;
        self.sweep_containers().await;
        Ok(())
    }

    pub(super) async fn event(&self, kind: &str, data: serde_json::Value) {
        if let Err(e) = self
            .hive
            .store
            .add_event(self.ticket.key, kind, &data)
            .await
        {
            warn!(error = %e, "cannot record a ticket event");
        }
    }
}

/// Runs the ticket stored under `key` (a job's key): reads its config from the base branch
/// and drives its workflow from where it stands.
pub async fn run_ticket(hive: &Arc<Hive>, key: &str) -> Result<(), JobError> {
    let key: i64 = key
        .parse()
        .map_err(|_| JobError::Permanent(format!("bad ticket key {key:?}")))?;
    let Some(ticket) = hive.store.ticket(key).await? else {
        return Err(JobError::Permanent(format!("ticket {key} is not stored")));
    };
    if ticket.state == TaskState::Completed {
        info!(ticket = %ticket.id, "completed: nothing to do");
        return Ok(());
    }
    let span =
        info_span!("ticket", id = %ticket.id, repo = %ticket.repo, issue = ticket.issue_number);
    async move {
        let client = hive
            .github
            .repo(ticket.installation_id, &ticket.repo)
            .await?;
        let mut run = TicketRun {
            hive,
            client,
            ticket,
            spent: None,
        };
        run.client
            .react_to_issue(run.ticket.issue_number, "eyes")
            .await?;
        let config = match read_config(&run).await? {
            Ok(c) => c,
            Err(why) => return run.fail(&why, &Extras::default()).await,
        };
        super::flow::drive(&mut run, config).await
    }
    .instrument(span)
    .await
}

/// `.github/hive.yml` from the base branch of a freshly synced mirror; `Err` is the reason to
/// give on the issue when it is invalid.
async fn read_config(run: &TicketRun<'_>) -> Result<Result<HiveConfig, String>, JobError> {
    let token = run.client.token().await?;
    let (ws, repo, base) = (
        run.hive.workspace.clone(),
        run.ticket.repo.clone(),
        run.ticket.base_branch.clone(),
    );
    let text = blocking({
        let base = base.clone();
        move || {
            let git = ws.sync_mirror(&repo, &token)?;
            ws.read_remote_file(&git, &base, CONFIG_PATH)
        }
    })
    .await?;
    Ok(HiveConfig::parse(text.as_deref().unwrap_or(""))
        .map_err(|e| format!("{e}\n\nFix `{CONFIG_PATH}` on `{base}`, then `/hive retry`.")))
}

/// Marks the ticket Failed after its job failed for good, and says so on the issue.
pub async fn fail_ticket(hive: &Arc<Hive>, key: &str, reason: &str) {
    let Ok(key) = key.parse::<i64>() else { return };
    let Ok(Some(ticket)) = hive.store.ticket(key).await else {
        return;
    };
    if ticket.state.is_final() {
        return;
    }
    let why = format!("Stopped by an error: {reason}\n\nRelabel the issue to try again.");
    // Said on the issue first where GitHub answers, as `settle` does; the state moves anyway.
    if let Ok(client) = hive.github.repo(ticket.installation_id, &ticket.repo).await {
        let mut run = TicketRun {
            hive,
            client,
            ticket: ticket.clone(),
            spent: None,
        };
        run.sweep_containers().await;
        run.ticket.state = TaskState::Failed;
        run.ticket.detail = Some(why.clone());
        if let Err(e) = run.publish(&Extras::default()).await {
            warn!(error = %e, "cannot update the status comment");
        }
    }
    if let Err(e) = hive
        .store
        .move_ticket(key, ticket.state, TaskState::Failed, Some(&why))
        .await
    {
        warn!(error = %e, "cannot mark the ticket failed");
    }
}

pub(super) async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> Result<T, crate::workspace::WorkspaceError> + Send + 'static,
) -> Result<T, JobError> {
    tokio::task::spawn_blocking(f)
        .await
        .map_err(|e| JobError::Transient(format!("workspace task panicked: {e}")))?
        .map_err(JobError::from)
}
