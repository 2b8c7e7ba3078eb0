//! The `memory_entries` table: what the hive learned per repository, with its stability.
//! Entries only rise (Ephemeral → Derived → Verified → Canonical); Canonical ones of a
//! repository are what later tickets are told.

use sqlx::Row as _;

use super::{Result, Store, StoreError};
use crate::ids::{RepoName, TicketKey};
use crate::now_ms;
use crate::ticket::MemoryStability;

/// One entry.
#[derive(Debug, Clone, PartialEq)]
pub struct MemoryEntry {
    pub id: i64,
    pub kind: String,
    pub text: String,
    pub stability: MemoryStability,
}

impl Store {
    /// Records an entry of ticket `ticket` (Ephemeral unless said otherwise).
    pub async fn add_memory(
        &self,
        repo: &RepoName,
        ticket: TicketKey,
        kind: &str,
        text: &str,
        stability: MemoryStability,
    ) -> Result<i64> {
        let now = now_ms();
        let id = sqlx::query(
            "INSERT INTO memory_entries (repo, ticket_id, kind, text, stability, created_at, updated_at) \
             VALUES ($1, $2, $3, $4, $5, $6, $6) RETURNING id",
        )
        .bind(repo.as_str())
        .bind(ticket.0)
        .bind(kind)
        .bind(text)
        .bind(stability.as_str())
        .bind(now)
        .fetch_one(self.writer())
        .await?
        .get(0);
        Ok(id)
    }

    /// Raises every entry of `ticket` below `to` up to `to` (never lowers one).
    pub async fn promote_memory(&self, ticket: TicketKey, to: MemoryStability) -> Result<u64> {
        let below: Vec<&str> = MemoryStability::ALL
            .iter()
            .filter(|m| **m < to)
            .map(|m| m.as_str())
            .collect();
        if below.is_empty() {
            return Ok(0);
        }
        let placeholders: Vec<String> = (0..below.len()).map(|i| format!("${}", i + 4)).collect();
        let sql = format!(
            "UPDATE memory_entries SET stability = $1, updated_at = $2 WHERE ticket_id = $3 AND stability IN ({})",
            placeholders.join(", ")
        );
        let mut q = sqlx::query(&sql)
            .bind(to.as_str())
            .bind(now_ms())
            .bind(ticket.0);
        for b in below {
            q = q.bind(b);
        }
        Ok(q.execute(self.writer()).await?.rows_affected())
    }

    /// The entries of `ticket`, oldest first.
    pub async fn ticket_memory(&self, ticket: TicketKey) -> Result<Vec<MemoryEntry>> {
        let rows = sqlx::query(
            "SELECT id, kind, text, stability FROM memory_entries WHERE ticket_id = $1 ORDER BY id",
        )
        .bind(ticket.0)
        .fetch_all(self.reader())
        .await?;
        rows.iter().map(entry).collect()
    }

    /// The newest `limit` Canonical entries of `repo`, newest first.
    pub async fn canonical_memory(&self, repo: &RepoName, limit: i64) -> Result<Vec<MemoryEntry>> {
        let rows = sqlx::query(
            "SELECT id, kind, text, stability FROM memory_entries WHERE repo = $1 AND stability = 'Canonical' \
             ORDER BY id DESC LIMIT $2",
        )
        .bind(repo.as_str())
        .bind(limit)
        .fetch_all(self.reader())
        .await?;
        rows.iter().map(entry).collect()
    }
}

fn entry(r: &sqlx::any::AnyRow) -> Result<MemoryEntry> {
    let stability: String = r.get(3);
    Ok(MemoryEntry {
        id: r.get(0),
        kind: r.get(1),
        text: r.get(2),
        stability: MemoryStability::parse(&stability)
            .ok_or_else(|| StoreError::Invalid(format!("unknown stability {stability:?}")))?,
    })
}
