//! One run of a ticket's job: the [`TicketRun`] every node works with — the ticket, its GitHub
//! client, its status comment, and moving its state where people can see it (the status comment
//! first, then the state) — and cleaning up after it.

use tracing::warn;

use super::job::{Hive, JobError, blocking};
use super::status::{self, Extras};
use crate::github::RepoClient;
use crate::llm::budget::Spend;
use crate::store::tickets::Ticket;
use crate::ticket::TaskState;

/// How the retry engine's report begins (a ticket that stopped after failures in passing):
/// `/hive retry` then goes on where it stopped instead of starting an attempt.
pub const STALLED: &str = "Stopped after";

/// One run of one ticket: what every stage of the workflow works with.
pub struct TicketRun<'a> {
    pub hive: &'a Hive,
    pub client: RepoClient,
    pub ticket: Ticket,
    /// What the ticket's agents spent, once known (shown in the status comment).
    pub spent: Option<Spend>,
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
            JobError::permanent(format!("a ticket cannot go from {from} to {to}"))
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

    /// Removes the ticket's worktrees and containers (when it ends, or on abort and reset).
    pub(super) async fn cleanup(&self) {
        let id = self.ticket.id;
        let (ws, repo) = (self.hive.workspace.clone(), self.ticket.repo.clone());
        let branches = [id.feat_branch(), id.test_branch()];
        let _ = blocking(move || {
            for b in &branches {
                let _ = ws.drop_worktree(&repo, b);
            }
            Ok(())
        })
        .await;
        self.sweep_containers().await;
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
