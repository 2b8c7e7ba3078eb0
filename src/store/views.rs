//! Read-only views for the dashboard and its JSON API: a ticket's timeline after a given
//! event (the live stream), the latest events of every ticket (the history), and the job
//! queue.

use serde::Serialize;
use sqlx::Row as _;

use super::jobs::JobKey;
use super::{Result, Store};
use crate::ids::TicketKey;

/// One timeline row.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Event {
    pub id: i64,
    /// The ticket's row id.
    pub ticket: TicketKey,
    pub at: i64,
    pub kind: String,
    pub data: serde_json::Value,
}

/// One job of the queue.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct QueuedJob {
    pub id: i64,
    pub kind: String,
    pub key: String,
    pub status: String,
    pub attempts: i64,
    pub run_after: i64,
    pub lease_owner: Option<String>,
    pub last_error: Option<String>,
}

fn queued_job(r: &sqlx::any::AnyRow) -> QueuedJob {
    QueuedJob {
        id: r.get(0),
        kind: r.get(1),
        key: r.get(2),
        status: r.get(3),
        attempts: r.get(4),
        run_after: r.get(5),
        lease_owner: r.get(6),
        last_error: r.get(7),
    }
}

fn event(r: &sqlx::any::AnyRow) -> Event {
    Event {
        id: r.get(0),
        ticket: TicketKey(r.get(1)),
        at: r.get(2),
        kind: r.get(3),
        data: serde_json::from_str(&r.get::<String, _>(4)).unwrap_or_default(),
    }
}

impl Store {
    /// The ticket's events after event `after` (0: all), oldest first, at most `limit`.
    pub async fn events_after(
        &self,
        ticket: TicketKey,
        after: i64,
        limit: i64,
    ) -> Result<Vec<Event>> {
        let rows = sqlx::query(
            "SELECT id, ticket_id, at, kind, data FROM ticket_events \
             WHERE ticket_id = $1 AND id > $2 ORDER BY id LIMIT $3",
        )
        .bind(ticket.0)
        .bind(after)
        .bind(limit)
        .fetch_all(self.reader())
        .await?;
        Ok(rows.iter().map(event).collect())
    }

    /// The newest `limit` events of all tickets, newest first.
    pub async fn recent_events(&self, limit: i64) -> Result<Vec<Event>> {
        let rows = sqlx::query(
            "SELECT id, ticket_id, at, kind, data FROM ticket_events ORDER BY id DESC LIMIT $1",
        )
        .bind(limit)
        .fetch_all(self.reader())
        .await?;
        Ok(rows.iter().map(event).collect())
    }

    /// Queued, running and failed jobs, in the order they run.
    pub async fn queued_jobs(&self, limit: i64) -> Result<Vec<QueuedJob>> {
        let rows = sqlx::query(
            "SELECT id, kind, key, status, attempts, run_after, lease_owner, last_error FROM jobs \
             ORDER BY CASE status WHEN 'running' THEN 0 WHEN 'queued' THEN 1 ELSE 2 END, run_after, id \
             LIMIT $1",
        )
        .bind(limit)
        .fetch_all(self.reader())
        .await?;
        Ok(rows.iter().map(queued_job).collect())
    }

    /// The job for `(kind, key)` while it is queued (due now or later) or running.
    pub async fn live_job(&self, job: &JobKey) -> Result<Option<QueuedJob>> {
        let (kind, key) = (job.kind(), job.key());
        let row = sqlx::query(
            "SELECT id, kind, key, status, attempts, run_after, lease_owner, last_error FROM jobs \
             WHERE kind = $1 AND key = $2 AND status IN ('queued', 'running') LIMIT 1",
        )
        .bind(kind.as_str())
        .bind(&key)
        .fetch_optional(self.reader())
        .await?;
        Ok(row.as_ref().map(queued_job))
    }
}
