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
        let n = sqlx::query(
            "INSERT INTO commands (repo, issue, ticket_id, source, author, command, permission, outcome, created_at) \
             VALUES ($1, $2, $3, $4, $5, $6, $7, 'received', $8) ON CONFLICT DO NOTHING",
        )
        .bind(c.repo.as_str())
        .bind(c.issue as i64)
        .bind(c.ticket.map(|t| t.0))
        .bind(c.source)
        .bind(c.author)
        .bind(c.command)
        .bind(c.permission)
        .bind(now_ms())
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

    /// The commands about an issue, oldest first.
    pub async fn commands_for(&self, repo: &RepoName, issue: u64) -> Result<Vec<CommandRecord>> {
        let rows = sqlx::query(
            "SELECT repo, issue, ticket_id, source, author, command, permission, outcome, created_at FROM commands \
             WHERE repo = $1 AND issue = $2 ORDER BY id",
        )
        .bind(repo.as_str())
        .bind(issue as i64)
        .fetch_all(self.reader())
        .await?;
        Ok(rows
            .into_iter()
            .map(|r| CommandRecord {
                repo: r.get(0),
                issue: r.get(1),
                ticket: r.get::<Option<i64>, _>(2).map(TicketKey),
                source: r.get(3),
                author: r.get(4),
                command: r.get(5),
                permission: r.get(6),
                outcome: r.get(7),
                at: r.get(8),
            })
            .collect())
    }
}
