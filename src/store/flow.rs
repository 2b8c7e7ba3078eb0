//! Checkpoints of the hive's workflow: each node transition of a ticket is a row (node,
//! attempt, inputs, outputs), written in the same transaction as the ticket's accumulated
//! `flow` state, which a resumed run starts from.

use sqlx::Row as _;

use super::{Result, Store, StoreError};
use crate::ids::TicketKey;
use crate::now_ms;
use crate::ticket::Signal;

/// One recorded node transition.
#[derive(Debug, Clone, PartialEq)]
pub struct Checkpoint {
    pub node: String,
    pub attempt: i64,
    pub inputs: serde_json::Value,
    pub outputs: serde_json::Value,
    pub at: i64,
}

/// Which run of a ticket writes: its key and the run it started with ([`Ticket::run`]).
///
/// [`Ticket::run`]: super::tickets::Ticket::run
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RunOf {
    pub key: TicketKey,
    pub run: i64,
}

/// Stores a ticket's flow state inside a transaction, if `of` is still the ticket's current
/// run; [`StoreError::Superseded`] (and nothing written) if it started over since.
async fn set_flow_in(
    tx: &mut sqlx::Transaction<'_, sqlx::Any>,
    of: RunOf,
    flow: &serde_json::Value,
    now: i64,
) -> Result<()> {
    let n = sqlx::query("UPDATE tickets SET flow = $1, updated_at = $2 WHERE id = $3 AND run = $4")
        .bind(flow.to_string())
        .bind(now)
        .bind(of.key.0)
        .bind(of.run)
        .execute(&mut **tx)
        .await?
        .rows_affected();
    if n == 0 {
        return Err(StoreError::Superseded(of.key));
    }
    Ok(())
}

impl Store {
    /// Records that `node` (attempt `attempt`) finished with `outputs`, and stores `flow`, the
    /// state the next node starts from; neither if the run `of` is no longer the ticket's.
    pub async fn checkpoint(
        &self,
        of: RunOf,
        node: &str,
        attempt: u32,
        inputs: &serde_json::Value,
        outputs: &serde_json::Value,
        flow: &serde_json::Value,
    ) -> Result<()> {
        let now = now_ms();
        let mut tx = self.writer().begin().await?;
        sqlx::query("INSERT INTO checkpoints (ticket_id, node, attempt, inputs, outputs, created_at) VALUES ($1, $2, $3, $4, $5, $6)")
            .bind(of.key.0)
            .bind(node)
            .bind(i64::from(attempt))
            .bind(inputs.to_string())
            .bind(outputs.to_string())
            .bind(now)
            .execute(&mut *tx)
            .await?;
        set_flow_in(&mut tx, of, flow, now).await?;
        tx.commit().await?;
        Ok(())
    }

    /// The ticket's stored flow state, if any node ran yet.
    pub async fn flow(&self, key: TicketKey) -> Result<Option<serde_json::Value>> {
        let row = sqlx::query("SELECT flow FROM tickets WHERE id = $1")
            .bind(key.0)
            .fetch_optional(self.reader())
            .await?;
        Ok(row
            .and_then(|r| r.get::<Option<String>, _>(0))
            .and_then(|s| serde_json::from_str(&s).ok()))
    }

    /// Every checkpoint of a ticket, oldest first.
    pub async fn checkpoints(&self, key: TicketKey) -> Result<Vec<Checkpoint>> {
        let rows = sqlx::query("SELECT node, attempt, inputs, outputs, created_at FROM checkpoints WHERE ticket_id = $1 ORDER BY id")
            .bind(key.0)
            .fetch_all(self.reader())
            .await?;
        Ok(rows
            .into_iter()
            .map(|r| {
                let json =
                    |i: usize| serde_json::from_str(&r.get::<String, _>(i)).unwrap_or_default();
                Checkpoint {
                    node: r.get(0),
                    attempt: r.get(1),
                    inputs: json(2),
                    outputs: json(3),
                    at: r.get(4),
                }
            })
            .collect())
    }
}

/// A stored signal: what a person asked of a ticket, or why it cannot be read.
#[derive(Debug, Clone, PartialEq)]
pub struct StoredSignal {
    pub id: i64,
    pub signal: std::result::Result<Signal, String>,
    pub author: String,
}

impl Store {
    /// Queues a signal for the ticket's run.
    pub async fn signal(&self, key: TicketKey, signal: &Signal, author: &str) -> Result<()> {
        sqlx::query("INSERT INTO signals (ticket_id, kind, data, author, created_at) VALUES ($1, $2, $3, $4, $5)")
            .bind(key.0)
            .bind(signal.kind())
            .bind(signal.data().to_string())
            .bind(author)
            .bind(now_ms())
            .execute(self.writer())
            .await?;
        Ok(())
    }

    /// The ticket's pending signals, oldest first. They stay pending until
    /// [`Store::consume_signals`] records what they did.
    pub async fn pending_signals(&self, key: TicketKey) -> Result<Vec<StoredSignal>> {
        let rows = sqlx::query("SELECT id, kind, data, author FROM signals WHERE ticket_id = $1 AND consumed_at IS NULL ORDER BY id")
            .bind(key.0)
            .fetch_all(self.writer())
            .await?;
        Ok(rows
            .into_iter()
            .map(|r| {
                let data = serde_json::from_str(&r.get::<String, _>(2)).unwrap_or_default();
                StoredSignal {
                    id: r.get(0),
                    signal: Signal::read(&r.get::<String, _>(1), &data),
                    author: r.get(3),
                }
            })
            .collect())
    }

    /// Marks signals up to `last_id` consumed and stores the `flow` they produced, in one
    /// transaction: a crash leaves either both or neither, so no approval is lost. Neither
    /// either if the run `of` is no longer the ticket's: the signals are the next run's.
    pub async fn consume_signals(
        &self,
        of: RunOf,
        last_id: i64,
        flow: &serde_json::Value,
    ) -> Result<()> {
        let now = now_ms();
        let mut tx = self.writer().begin().await?;
        sqlx::query(
            "UPDATE signals SET consumed_at = $1 WHERE ticket_id = $2 AND consumed_at IS NULL AND id <= $3",
        )
        .bind(now)
        .bind(of.key.0)
        .bind(last_id)
        .execute(&mut *tx)
        .await?;
        set_flow_in(&mut tx, of, flow, now).await?;
        tx.commit().await?;
        Ok(())
    }

    /// How many checkpoints the ticket has: a run that adds one made progress.
    pub async fn checkpoint_count(&self, key: TicketKey) -> Result<i64> {
        let row = sqlx::query("SELECT COUNT(*) FROM checkpoints WHERE ticket_id = $1")
            .bind(key.0)
            .fetch_one(self.writer())
            .await?;
        Ok(row.get(0))
    }
}
