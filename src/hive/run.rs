//! Running a ticket's job: reading `.github/hive.yml` from the base branch and handing the
//! ticket to its workflow ([`super::flow`]) where it stands; marking a ticket Failed when its job
//! fails for good, and HumanNeeded when it keeps failing in passing (the retry engine's report).

use std::sync::Arc;

use tracing::{Instrument as _, info, info_span, warn};

use super::job::{Hive, JobError};
use super::status::Extras;
use super::ticket_run::TicketRun;
use crate::config::repo::PATH as CONFIG_PATH;
use crate::ids::TicketKey;
use crate::ticket::TaskState;

/// Runs the ticket stored under `key`: reads its config from the base branch and drives its
/// workflow from where it stands. Also the repository's retry settings, once read, for how the
/// worker retries a failure in passing.
pub async fn run_ticket(
    hive: &Arc<Hive>,
    key: TicketKey,
) -> (Result<(), JobError>, Option<crate::config::repo::Retry>) {
    let mut retry = None;
    let result = match run(hive, key, &mut retry).await {
        // The issue was relabelled while this run tidied up after its end: the run that
        // starts next is the ticket's, and this one's last writes were dropped.
        Err(e) if e.is_superseded() => {
            info!(%key, "the ticket started over during this run; it ends here");
            Ok(())
        }
        result => result,
    };
    (result, retry)
}

async fn run(
    hive: &Arc<Hive>,
    key: TicketKey,
    retry: &mut Option<crate::config::repo::Retry>,
) -> Result<(), JobError> {
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
        // The config first: its retry settings then apply to whatever fails after it.
        let base = run.ticket.config_branch().to_owned();
        let config = match super::repo_config::load(&run.client, &base).await? {
            Ok(c) => c,
            Err(e) => {
                let why = format!("{e}\n\nFix `{CONFIG_PATH}` on `{base}`, then `/hive retry`.");
                return run.fail(&why, &Extras::default()).await;
            }
        };
        *retry = Some(config.retry);
        run.client
            .react_to_issue(run.ticket.issue_number, "eyes")
            .await?;
        super::flow::drive(&mut run, config).await
    }
    .instrument(span)
    .await
}

/// The retry engine's human-intervention report: the ticket's job failed in passing `tries`
/// times in a row without progress, so the ticket waits as HumanNeeded (its workflow kept where
/// it stopped) and says why on its issue; `/hive retry` goes on from there.
pub async fn stalled(hive: &Arc<Hive>, key: TicketKey, reason: &str, tries: i64) {
    let Ok(Some(ticket)) = hive.store.ticket(key).await else {
        return;
    };
    if ticket.state.is_final() || ticket.state == TaskState::HumanNeeded {
        return;
    }
    if !ticket.state.can_move_to(TaskState::HumanNeeded) {
        // Before the plan is checked there is nothing to go on from: it fails as any job does.
        return fail_ticket(hive, key, reason).await;
    }
    let why = format!(
        "{} {tries} tries in a row without progress: {reason}\n\nWhen the cause is gone (GitHub reachable again, Docker running…), `/hive retry` goes on from where it stopped.",
        super::ticket_run::STALLED
    );
    settle_after_job(hive, &ticket, TaskState::HumanNeeded, &why).await;
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
    settle_after_job(hive, &ticket, TaskState::Failed, &why).await;
}

/// Moves `ticket` to `to` with `why` after its job ended, outside any run: said on the issue
/// first where GitHub answers (as `settle` does), its containers removed; the state moves anyway.
async fn settle_after_job(
    hive: &Arc<Hive>,
    ticket: &crate::store::tickets::Ticket,
    to: TaskState,
    why: &str,
) {
    if let Ok(client) = hive.github.repo(ticket.installation_id, &ticket.repo).await {
        let mut run = TicketRun {
            hive,
            client,
            ticket: ticket.clone(),
            spent: None,
        };
        run.sweep_containers().await;
        run.ticket.state = to;
        run.ticket.detail = Some(why.to_owned());
        if let Err(e) = run.publish(&Extras::default()).await {
            warn!(error = %e, "cannot update the status comment");
        }
    }
    if let Err(e) = hive
        .store
        .move_ticket(ticket.key, ticket.state, to, Some(why))
        .await
    {
        warn!(error = %e, "cannot move the ticket to {to}");
    }
}
