//! The sweep: at start and every `VIBELOOP_SWEEP_INTERVAL` (ten minutes by default), as a job (so one worker runs it at a time, however
//! many share the database), Vibeloop checks what webhooks alone could miss.
//!
//! * **Missed deliveries**: the App's delivery log on GitHub, from a little before the newest
//!   delivery stored, is compared with what was stored; every delivery GitHub failed to hand us
//!   and we lack is redelivered (GitHub keeps the delivery id, so a copy that did arrive meanwhile
//!   is not processed twice).
//! * **Reconciliation**: each open ticket is compared with its issue and pull request. A closed
//!   issue, a removed label or a pull request closed by hand stops the ticket; a pull request
//!   merged by hand completes it. Tickets the bot itself has merged are left to finish.

use std::collections::HashSet;
use std::sync::Arc;

use tracing::{info, warn};

use super::job::{Hive, JobError};
use crate::store::jobs::JobKey;
/// How far before the newest stored delivery the log is read (clocks and queues differ).
const OVERLAP_MS: i64 = 15 * 60 * 1000;
/// How far back a database with no delivery yet looks.
const FIRST_LOOK_MS: i64 = 60 * 60 * 1000;

/// Queues the sweep to run now (sooner, if the last one queued the next for later), unless it
/// is running already.
pub async fn schedule(store: &crate::store::Store) -> Result<(), crate::store::StoreError> {
    store.enqueue(&JobKey::Sweep).await?;
    store.hurry(&JobKey::Sweep).await
}

/// Runs one sweep and queues the next.
pub async fn sweep(hive: &Arc<Hive>) -> Result<(), JobError> {
    match missed_deliveries(hive).await {
        Ok(0) => {}
        Ok(n) => info!(deliveries = n, "asked GitHub to redeliver missed webhooks"),
        Err(e) => warn!(error = %e, "cannot read the App's webhook deliveries"),
    }
    let mut stopped = 0;
    for t in hive.store.tickets().await? {
        if t.state.is_final() {
            continue;
        }
        match super::reconcile::reconcile(hive, &t).await {
            Ok(Some(what)) => {
                info!(ticket = %t.id, repo = %t.repo, what, "reconciled with GitHub");
                stopped += 1;
            }
            Ok(None) => {}
            Err(e) => warn!(ticket = %t.id, error = %e, "cannot reconcile the ticket"),
        }
    }
    if stopped > 0 {
        info!(tickets = stopped, "tickets changed on GitHub by hand");
    }
    let every = hive.sweep_every.as_millis() as i64;
    hive.store.enqueue_after(&JobKey::Sweep, every).await?;
    Ok(())
}

/// Redelivers the failed deliveries we lack; how many.
async fn missed_deliveries(hive: &Hive) -> Result<usize, JobError> {
    let now = crate::now_ms();
    let since_ms = match hive.store.last_delivery_at().await? {
        Some(at) => at - OVERLAP_MS,
        None => now - FIRST_LOOK_MS,
    };
    let since = chrono::DateTime::from_timestamp_millis(since_ms).unwrap_or_default();
    let log = hive.github.hook_deliveries(since).await?;
    let delivered: HashSet<&str> = log
        .iter()
        .filter(|d| d.succeeded())
        .map(|d| d.guid.as_str())
        .collect();
    // Each delivery that never got through, once (GitHub lists every attempt).
    let mut seen = HashSet::new();
    let failed: Vec<&crate::github::hooks::HookDelivery> = log
        .iter()
        .filter(|d| !d.succeeded() && !delivered.contains(d.guid.as_str()))
        .filter(|d| seen.insert(d.guid.as_str()))
        .collect();
    let guids: Vec<String> = failed.iter().map(|d| d.guid.clone()).collect();
    let stored = hive.store.known_deliveries(&guids).await?;
    let mut asked = 0;
    for d in failed.into_iter().filter(|d| !stored.contains(&d.guid)) {
        info!(delivery = %d.guid, event = %d.event, status = d.status_code, "redelivering a missed webhook");
        hive.github.redeliver(d.id).await?;
        asked += 1;
    }
    Ok(asked)
}
