//! Running a ticket's job: reading `.github/hive.yml` from the base branch and handing the
//! ticket to its workflow ([`super::flow`]) where it stands; and marking a ticket Failed when its
//! job fails for good.

use std::sync::Arc;

use tracing::{Instrument as _, info, info_span, warn};

use super::job::{Hive, JobError};
use super::status::Extras;
use super::ticket_run::TicketRun;
use crate::config::repo::PATH as CONFIG_PATH;
use crate::ids::TicketKey;
use crate::ticket::TaskState;

/// Runs the ticket stored under `key`: reads its config from the base branch and drives its
/// workflow from where it stands.
pub async fn run_ticket(hive: &Arc<Hive>, key: TicketKey) -> Result<(), JobError> {
    let Some(ticket) = hive.store.ticket(key).await? else {
        return Err(JobError::permanent(format!("ticket {key} is not stored")));
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
        let base = run.ticket.base_branch.clone();
        let config = match super::repo_config::load(&run.client, &base).await? {
            Ok(c) => c,
            Err(e) => {
                let why = format!("{e}\n\nFix `{CONFIG_PATH}` on `{base}`, then `/hive retry`.");
                return run.fail(&why, &Extras::default()).await;
            }
        };
        super::flow::drive(&mut run, config).await
    }
    .instrument(span)
    .await
}

/// Marks the ticket Failed after its job failed for good, and says so on the issue.
pub async fn fail_ticket(hive: &Arc<Hive>, key: TicketKey, reason: &str) {
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
