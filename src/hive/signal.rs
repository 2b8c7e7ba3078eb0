//! Sending a ticket a [`Signal`]: stored with the ticket, and its job woken (a job that is
//! running now runs once more when it ends, so nothing sent meanwhile is missed).

use super::job::{Hive, JobError};
use crate::store::jobs::JobKey;
use crate::store::tickets::Ticket;
use crate::ticket::Signal;

/// Queues `signal` from `author` for ticket `t` and wakes the ticket.
pub(super) async fn send(
    hive: &Hive,
    t: &Ticket,
    signal: &Signal,
    author: &str,
) -> Result<(), JobError> {
    hive.store.signal(t.key, signal, author).await?;
    if hive.store.enqueue(&JobKey::Ticket(t.key)).await? {
        hive.jobs_queued.notify_one();
    }
    Ok(())
}
