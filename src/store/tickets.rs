//! The `tickets` and `ticket_events` tables. State changes go through [`Store::move_ticket`],
//! which enforces the transition table of [`crate::ticket`] and records an event.

use sqlx::Row as _;
use sqlx::any::AnyRow;

use super::jobs::{JobKey, enqueue_in};
use super::{Result, Store, StoreError};
use crate::ids::{InstallationId, RepoName, TicketKey};
use crate::now_ms;
use crate::ticket::{TaskState, TicketId, check_transition};

/// A ticket row.
#[derive(Debug, Clone)]
pub struct Ticket {
    /// Database key.
    pub key: TicketKey,
    pub id: TicketId,
    pub repo: RepoName,
    pub issue_number: u64,
    pub installation_id: InstallationId,
    pub title: String,
    pub body: String,
    pub base_branch: String,
    pub state: TaskState,
    pub status_comment_id: Option<u64>,
    pub pr_number: Option<u64>,
    pub head_sha: Option<String>,
    /// Why the ticket is where it is, in words for people (a failure reason, say).
    pub detail: Option<String>,
    pub created_at: i64,
    pub updated_at: i64,
    /// The branch the issue chose to land on (`base:` in it, `/hive base`), if any: it comes
    /// before `.github/hive.yml`'s `base` and `base_branch`, the default branch.
    pub chosen_base: Option<String>,
    /// Which run of the ticket this is: it grows each time the ticket starts over, and a run
    /// writes its flow only while it is still the current one.
    pub run: i64,
}

impl Ticket {
    /// The branch the ticket's config is read from: the one its issue chose, else the
    /// repository's default (`.github/hive.yml` there may name another to land on).
    pub fn config_branch(&self) -> &str {
        self.chosen_base.as_deref().unwrap_or(&self.base_branch)
    }

    /// This run of the ticket, as its flow writes name it.
    pub fn run_of(&self) -> super::flow::RunOf {
        super::flow::RunOf {
            key: self.key,
            run: self.run,
        }
    }
}

/// What a labelled issue asks for.
#[derive(Debug, Clone)]
pub struct NewTicket<'a> {
    pub repo: &'a RepoName,
    pub issue_number: u64,
    pub installation_id: InstallationId,
    pub title: &'a str,
    pub body: &'a str,
    pub base_branch: &'a str,
    /// The branch the issue asks to land on (`base:` in it), checked to exist.
    pub chosen_base: Option<&'a str>,
    pub start: Start,
}

/// How a ticket starts: the whole hive, or the Architect's plan only.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Start {
    /// The hive's label: plan, build, review, land.
    #[default]
    Build,
    /// The plan-only label: the plan is posted and the ticket waits for its approval.
    PlanLabel,
    /// `/hive plan` on an issue without a ticket: as [`Start::PlanLabel`], and with no label
    /// whose removal would stop it.
    PlanCommand,
}

impl Start {
    /// What the ticket's run knows from its start (its stored flow's first fields), `None` for
    /// a plain build.
    fn seed(self) -> Option<&'static str> {
        match self {
            Start::Build => None,
            Start::PlanLabel => Some(r#"{"plan_only":true}"#),
            Start::PlanCommand => Some(r#"{"plan_only":true,"unlabelled":true}"#),
        }
    }
}

/// What [`Store::open_ticket`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Opened {
    /// A new ticket, queued.
    Created,
    /// A failed ticket for the same issue, moved back to Pending and queued.
    Restarted,
    /// A ticket for the issue is already under way: nothing changed.
    AlreadyOpen,
    /// The issue's ticket completed: nothing changed.
    AlreadyDone,
}

const COLUMNS: &str = "id, number, repo, issue_number, installation_id, title, body, base_branch, \
    state, status_comment_id, pr_number, head_sha, detail, created_at, updated_at, run, chosen_base";

fn to_u64(v: Option<i64>) -> Option<u64> {
    v.and_then(|v| u64::try_from(v).ok())
}

fn ticket_from_row(r: &AnyRow) -> Result<Ticket> {
    let invalid = |e: &dyn std::fmt::Display| StoreError::Invalid(e.to_string());
    let repo: String = r.get(2);
    let state: String = r.get(8);
    Ok(Ticket {
        key: TicketKey(r.get(0)),
        id: TicketId(u32::try_from(r.get::<i64, _>(1)).map_err(|e| invalid(&e))?),
        repo: RepoName::parse(&repo).map_err(|e| invalid(&e))?,
        issue_number: to_u64(Some(r.get(3))).unwrap_or_default(),
        installation_id: InstallationId(to_u64(Some(r.get(4))).unwrap_or_default()),
        title: r.get(5),
        body: r.get(6),
        base_branch: r.get(7),
        state: state.parse().map_err(|e| invalid(&e))?,
        status_comment_id: to_u64(r.get(9)),
        pr_number: to_u64(r.get(10)),
        head_sha: r.get(11),
        detail: r.get(12),
        created_at: r.get(13),
        updated_at: r.get(14),
        run: r.get(15),
        chosen_base: r.get(16),
    })
}

impl Store {
    /// Opens the ticket of an issue and queues its run, or says why nothing changed. A Failed
    /// ticket starts over (a fresh flow; its branches, pull request and status comment are
    /// found again and reused).
    pub async fn open_ticket(&self, t: &NewTicket<'_>) -> Result<(Ticket, Opened)> {
        let now = now_ms();
        let mut tx = self.writer().begin().await?;
        let existing = sqlx::query(&format!(
            "SELECT {COLUMNS} FROM tickets WHERE repo = $1 AND issue_number = $2"
        ))
        .bind(t.repo.as_str())
        .bind(t.issue_number as i64)
        .fetch_optional(&mut *tx)
        .await?;
        let (key, opened) = match existing.as_ref().map(ticket_from_row).transpose()? {
            Some(ticket) if ticket.state == TaskState::Completed => {
                return Ok((ticket, Opened::AlreadyDone));
            }
            Some(ticket) if ticket.state != TaskState::Failed => {
                return Ok((ticket, Opened::AlreadyOpen));
            }
            Some(ticket) => {
                check_transition(ticket.state, TaskState::Pending)
                    .map_err(|e| StoreError::Invalid(e.to_string()))?;
                sqlx::query(
                    "UPDATE tickets SET state = 'Pending', detail = NULL, title = $1, body = $2, \
                     flow = $5, lane = NULL, run = run + 1, chosen_base = $6, updated_at = $3 WHERE id = $4",
                )
                .bind(t.title)
                .bind(t.body)
                .bind(now)
                .bind(ticket.key.0)
                .bind(t.start.seed())
                .bind(t.chosen_base)
                .execute(&mut *tx)
                .await?;
                // What was asked of the run that failed is not asked of the next one (an abort
                // that run read but could not mark done would stop the new one at once).
                sqlx::query(
                    "UPDATE signals SET consumed_at = $1 WHERE ticket_id = $2 AND consumed_at IS NULL",
                )
                .bind(now)
                .bind(ticket.key.0)
                .execute(&mut *tx)
                .await?;
                (ticket.key, Opened::Restarted)
            }
            None => {
                let number: i64 =
                    sqlx::query("SELECT COALESCE(MAX(number), 0) + 1 FROM tickets WHERE repo = $1")
                        .bind(t.repo.as_str())
                        .fetch_one(&mut *tx)
                        .await?
                        .get(0);
                let key = TicketKey(sqlx::query(
                    "INSERT INTO tickets (repo, number, issue_number, installation_id, title, body, \
                     base_branch, state, created_at, updated_at, flow, chosen_base) \
                     VALUES ($1, $2, $3, $4, $5, $6, $7, 'Pending', $8, $8, $9, $10) RETURNING id",
                )
                .bind(t.repo.as_str())
                .bind(number)
                .bind(t.issue_number as i64)
                .bind(t.installation_id.0 as i64)
                .bind(t.title)
                .bind(t.body)
                .bind(t.base_branch)
                .bind(now)
                .bind(t.start.seed())
                .bind(t.chosen_base)
                .fetch_one(&mut *tx)
                .await?
                .get(0));
                (key, Opened::Created)
            }
        };
        insert_event(
            &mut tx,
            key,
            "state",
            &serde_json::json!({ "to": "Pending" }),
        )
        .await?;
        enqueue_in(&mut tx, &JobKey::Ticket(key), now).await?;
        tx.commit().await?;
        let ticket = self
            .ticket(key)
            .await?
            .ok_or_else(|| StoreError::Invalid("ticket vanished".into()))?;
        Ok((ticket, opened))
    }

    pub async fn ticket(&self, key: TicketKey) -> Result<Option<Ticket>> {
        let row = sqlx::query(&format!("SELECT {COLUMNS} FROM tickets WHERE id = $1"))
            .bind(key.0)
            .fetch_optional(self.reader())
            .await?;
        row.as_ref().map(ticket_from_row).transpose()
    }

    pub async fn ticket_for_issue(
        &self,
        repo: &RepoName,
        issue_number: u64,
    ) -> Result<Option<Ticket>> {
        let row = sqlx::query(&format!(
            "SELECT {COLUMNS} FROM tickets WHERE repo = $1 AND issue_number = $2"
        ))
        .bind(repo.as_str())
        .bind(issue_number as i64)
        .fetch_optional(self.reader())
        .await?;
        row.as_ref().map(ticket_from_row).transpose()
    }

    pub async fn tickets(&self) -> Result<Vec<Ticket>> {
        let rows = sqlx::query(&format!("SELECT {COLUMNS} FROM tickets ORDER BY id"))
            .fetch_all(self.reader())
            .await?;
        rows.iter().map(ticket_from_row).collect()
    }

    /// Moves a ticket from `from` to `to`, if the table allows it and nobody moved it first.
    /// A ticket that ends Failed has its memory demoted to Ephemeral in the same transaction.
    pub async fn move_ticket(
        &self,
        key: TicketKey,
        from: TaskState,
        to: TaskState,
        detail: Option<&str>,
    ) -> Result<()> {
        check_transition(from, to).map_err(|e| StoreError::Invalid(e.to_string()))?;
        let mut tx = self.writer().begin().await?;
        let n = sqlx::query("UPDATE tickets SET state = $1, detail = $2, updated_at = $3 WHERE id = $4 AND state = $5")
            .bind(to.as_str())
            .bind(detail)
            .bind(now_ms())
            .bind(key.0)
            .bind(from.as_str())
            .execute(&mut *tx)
            .await?
            .rows_affected();
        if n == 0 {
            return Err(StoreError::Invalid(format!(
                "ticket {key} is no longer {from}; not moved to {to}"
            )));
        }
        let data =
            serde_json::json!({ "from": from.as_str(), "to": to.as_str(), "detail": detail });
        insert_event(&mut tx, key, "state", &data).await?;
        if to == TaskState::Failed {
            // What a failed ticket produced is not to be trusted, nor told to later tickets.
            super::memory::demote_in(&mut *tx, key, None).await?;
        }
        tx.commit().await?;
        Ok(())
    }

    /// Remembers the status comment, so later runs edit it instead of posting another.
    pub async fn set_status_comment(&self, key: TicketKey, comment_id: u64) -> Result<()> {
        self.set_ticket_column(key, "status_comment_id", comment_id as i64)
            .await
    }

    pub async fn set_pr_number(&self, key: TicketKey, pr_number: u64) -> Result<()> {
        self.set_ticket_column(key, "pr_number", pr_number as i64)
            .await
    }

    /// Makes `branch` the branch the ticket lands on (`/hive base`), for the run `of` only.
    pub async fn set_chosen_base(&self, of: super::flow::RunOf, branch: &str) -> Result<()> {
        let n = sqlx::query(
            "UPDATE tickets SET chosen_base = $1, updated_at = $2 WHERE id = $3 AND run = $4",
        )
        .bind(branch)
        .bind(now_ms())
        .bind(of.key.0)
        .bind(of.run)
        .execute(self.writer())
        .await?
        .rows_affected();
        if n == 0 {
            return Err(StoreError::Superseded(of.key));
        }
        Ok(())
    }

    /// Number of tickets by state (for the metrics page and the dashboard).
    pub async fn ticket_counts(&self) -> Result<Vec<(String, i64)>> {
        let rows = sqlx::query("SELECT state, COUNT(*) FROM tickets GROUP BY state ORDER BY state")
            .fetch_all(self.reader())
            .await?;
        Ok(rows.into_iter().map(|r| (r.get(0), r.get(1))).collect())
    }

    /// Updates the ticket's copy of its issue's title and body (after an edit).
    pub async fn set_ticket_issue(&self, key: TicketKey, title: &str, body: &str) -> Result<()> {
        sqlx::query("UPDATE tickets SET title = $1, body = $2, updated_at = $3 WHERE id = $4")
            .bind(title)
            .bind(body)
            .bind(now_ms())
            .bind(key.0)
            .execute(self.writer())
            .await?;
        Ok(())
    }

    /// Records why the ticket is where it is, without moving it.
    pub async fn set_ticket_detail(&self, key: TicketKey, detail: &str) -> Result<()> {
        sqlx::query("UPDATE tickets SET detail = $1, updated_at = $2 WHERE id = $3")
            .bind(detail)
            .bind(now_ms())
            .bind(key.0)
            .execute(self.writer())
            .await?;
        Ok(())
    }

    pub async fn set_head_sha(&self, key: TicketKey, sha: &str) -> Result<()> {
        sqlx::query("UPDATE tickets SET head_sha = $1, updated_at = $2 WHERE id = $3")
            .bind(sha)
            .bind(now_ms())
            .bind(key.0)
            .execute(self.writer())
            .await?;
        Ok(())
    }

    async fn set_ticket_column(
        &self,
        key: TicketKey,
        column: &'static str,
        value: i64,
    ) -> Result<()> {
        sqlx::query(&format!(
            "UPDATE tickets SET {column} = $1, updated_at = $2 WHERE id = $3"
        ))
        .bind(value)
        .bind(now_ms())
        .bind(key.0)
        .execute(self.writer())
        .await?;
        Ok(())
    }

    /// Appends a progress event to a ticket's timeline.
    pub async fn add_event(
        &self,
        key: TicketKey,
        kind: &str,
        data: &serde_json::Value,
    ) -> Result<()> {
        let mut tx = self.writer().begin().await?;
        insert_event(&mut tx, key, kind, data).await?;
        tx.commit().await?;
        Ok(())
    }

    /// A ticket's timeline, oldest first: `(at, kind, data)`.
    pub async fn events(&self, key: TicketKey) -> Result<Vec<(i64, String, serde_json::Value)>> {
        let rows = sqlx::query(
            "SELECT at, kind, data FROM ticket_events WHERE ticket_id = $1 ORDER BY id",
        )
        .bind(key.0)
        .fetch_all(self.reader())
        .await?;
        Ok(rows
            .into_iter()
            .map(|r| {
                let data: String = r.get(2);
                (
                    r.get(0),
                    r.get(1),
                    serde_json::from_str(&data).unwrap_or_default(),
                )
            })
            .collect())
    }
}

async fn insert_event(
    tx: &mut sqlx::Transaction<'_, sqlx::Any>,
    key: TicketKey,
    kind: &str,
    data: &serde_json::Value,
) -> Result<()> {
    sqlx::query("INSERT INTO ticket_events (ticket_id, at, kind, data) VALUES ($1, $2, $3, $4)")
        .bind(key.0)
        .bind(now_ms())
        .bind(kind)
        .bind(data.to_string())
        .execute(&mut **tx)
        .await?;
    Ok(())
}

impl Store {
    /// The ticket whose pull request is `pr` of `repo`.
    pub async fn ticket_by_pr(&self, repo: &RepoName, pr: u64) -> Result<Option<Ticket>> {
        let row = sqlx::query(&format!(
            "SELECT {COLUMNS} FROM tickets WHERE repo = $1 AND pr_number = $2"
        ))
        .bind(repo.as_str())
        .bind(pr as i64)
        .fetch_optional(self.reader())
        .await?;
        row.as_ref().map(ticket_from_row).transpose()
    }

    /// The ticket `T-<number>` of `repo`.
    pub async fn ticket_by_number(&self, repo: &RepoName, number: u32) -> Result<Option<Ticket>> {
        let row = sqlx::query(&format!(
            "SELECT {COLUMNS} FROM tickets WHERE repo = $1 AND number = $2"
        ))
        .bind(repo.as_str())
        .bind(i64::from(number))
        .fetch_optional(self.reader())
        .await?;
        row.as_ref().map(ticket_from_row).transpose()
    }
}
