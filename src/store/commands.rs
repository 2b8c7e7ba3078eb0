//! The `commands` table: every slash command (and button, and dashboard intervention) with who
//! sent it, when, the permission they had and what came of it. A command is recorded once per
//! source: a redelivered or re-edited comment does not run it twice.

use sqlx::Row as _;

use super::{Result, Store};
use crate::ids::{RepoName, TicketKey};
use crate::now_ms;

/// A command as recorded.
#[derive(Debug, Clone, PartialEq)]
pub struct CommandRecord {
    pub repo: String,
    pub issue: i64,
    pub ticket: Option<TicketKey>,
    pub source: String,
    pub author: String,
    pub command: String,
    pub permission: String,
    pub outcome: String,
    /// What it answered, in words, once carried out (interventions).
    pub reply: Option<String>,
    pub at: i64,
}

/// What to record.
#[derive(Debug, Clone)]
pub struct NewCommand<'a> {
    pub repo: &'a RepoName,
    pub issue: u64,
    pub ticket: Option<TicketKey>,
    /// `comment:<id>#<line>`, `button:<check run id>`, `dashboard:<n>`.
    pub source: &'a str,
    pub author: &'a str,
    pub command: &'a str,
    pub permission: &'a str,
}

impl Store {
    /// Records a command before it runs; false when this source already sent it (skip it).
    pub async fn claim_command(&self, c: &NewCommand<'_>) -> Result<bool> {
        self.record_command(c, "received").await
    }

    /// Records a command whose outcome is `outcome` for now (`pending`: a worker carries it
    /// out); false when this source already sent it.
    pub async fn record_command(&self, c: &NewCommand<'_>, outcome: &str) -> Result<bool> {
        let n = sqlx::query(
            "INSERT INTO commands (repo, issue, ticket_id, source, author, command, permission, outcome, created_at) \
             VALUES ($1, $2, $3, $4, $5, $6, $7, $9, $8) ON CONFLICT DO NOTHING",
        )
        .bind(c.repo.as_str())
        .bind(c.issue as i64)
        .bind(c.ticket.map(|t| t.0))
        .bind(c.source)
        .bind(c.author)
        .bind(c.command)
        .bind(c.permission)
        .bind(now_ms())
        .bind(outcome)
        .execute(self.writer())
        .await?
        .rows_affected();
        Ok(n > 0)
    }

    /// Records what a command did.
    pub async fn command_outcome(&self, source: &str, command: &str, outcome: &str) -> Result<()> {
        sqlx::query("UPDATE commands SET outcome = $1 WHERE source = $2 AND command = $3")
            .bind(outcome)
            .bind(source)
            .bind(command)
            .execute(self.writer())
            .await?;
        Ok(())
    }

    /// Records what a command did and answered.
    pub async fn finish_command(
        &self,
        source: &str,
        command: &str,
        outcome: &str,
        reply: &str,
    ) -> Result<()> {
        sqlx::query(
            "UPDATE commands SET outcome = $1, reply = $2 WHERE source = $3 AND command = $4",
        )
        .bind(outcome)
        .bind(reply)
        .bind(source)
        .bind(command)
        .execute(self.writer())
        .await?;
        Ok(())
    }

    /// The command sent as `source` (an intervention's `dashboard:<nonce>`).
    pub async fn command_by_source(&self, source: &str) -> Result<Option<CommandRecord>> {
        let row = sqlx::query(&format!("{SELECT} WHERE source = $1 ORDER BY id LIMIT 1"))
            .bind(source)
            .fetch_optional(self.reader())
            .await?;
        Ok(row.as_ref().map(record))
    }

    /// The commands about an issue, oldest first.
    pub async fn commands_for(&self, repo: &RepoName, issue: u64) -> Result<Vec<CommandRecord>> {
        let rows = sqlx::query(&format!(
            "{SELECT} WHERE repo = $1 AND issue = $2 ORDER BY id"
        ))
        .bind(repo.as_str())
        .bind(issue as i64)
        .fetch_all(self.reader())
        .await?;
        Ok(rows.iter().map(record).collect())
    }
}

const SELECT: &str = "SELECT repo, issue, ticket_id, source, author, command, permission, outcome, created_at, reply FROM commands";

fn record(r: &sqlx::any::AnyRow) -> CommandRecord {
    CommandRecord {
        repo: r.get(0),
        issue: r.get(1),
        ticket: r.get::<Option<i64>, _>(2).map(TicketKey),
        source: r.get(3),
        author: r.get(4),
        command: r.get(5),
        permission: r.get(6),
        outcome: r.get(7),
        at: r.get(8),
        reply: r.get(9),
    }
}
