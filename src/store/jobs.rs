//! The `jobs` table: a durable work queue with leases. A worker claims the oldest due job and
//! holds a lease it renews while working; a job whose lease runs out (its worker died) is
//! claimed again. At most one live (queued or running) job exists per `(kind, key)`; a finished
//! job is deleted, a failed one kept with its error.
//!
//! A job may have a scope: a delivery's job has its repository (`owner/name`), other jobs none.
//! A queued job with a scope is not claimed while an earlier job (smaller id) of the same scope
//! is still live, whatever that one's `run_after` or lease: deliveries of one repository are
//! processed one at a time, in the order they were stored, and one retried later holds the later
//! ones of its repository back while other repositories go on. A failed job no longer holds
//! anything back, and a job whose lease ran out is taken over as any other.
//!
//! A ticket may be in a lane (`tickets.lane`, `serial:owner/name`): conflict strategy C puts it
//! there ([`Store::requeue_in_lane`]), behind its repository's other queued tickets. Every job
//! of a ticket in a lane is queued with the lane as its scope, and one asked for again while it
//! ran is queued anew at the lane's tail: the repository's requeued tickets run one at a time,
//! in the order they joined, until they land.

use sqlx::{Any, Row as _, Transaction};

use super::{Result, Store};
use crate::ids::{CommitSha, TicketKey};
use crate::now_ms;

/// What a job is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum JobKind {
    /// Process one stored webhook delivery.
    Delivery,
    /// Run a ticket's workflow.
    Ticket,
    /// Run gates again on a commit.
    Gates,
    /// The periodic sweep: missed webhooks, tickets reconciled with GitHub.
    Sweep,
    /// Carry out a person's intervention from the dashboard.
    Intervention,
    /// Answer a question (`/hive ask`).
    Question,
}

impl JobKind {
    pub fn as_str(self) -> &'static str {
        match self {
            JobKind::Delivery => "delivery",
            JobKind::Ticket => "ticket",
            JobKind::Gates => "gates",
            JobKind::Sweep => "sweep",
            JobKind::Intervention => "intervention",
            JobKind::Question => "question",
        }
    }

    fn parse(s: &str) -> Option<Self> {
        match s {
            "delivery" => Some(JobKind::Delivery),
            "ticket" => Some(JobKind::Ticket),
            "gates" => Some(JobKind::Gates),
            "sweep" => Some(JobKind::Sweep),
            "intervention" => Some(JobKind::Intervention),
            "question" => Some(JobKind::Question),
            _ => None,
        }
    }
}

/// What a job is about: its kind and subject, read once from its row's `(kind, key)`.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum JobKey {
    /// A stored webhook delivery, by its delivery id.
    Delivery(String),
    Ticket(TicketKey),
    /// Gates to run again on `sha` of the ticket: one gate, or `all`.
    Gates {
        ticket: TicketKey,
        sha: CommitSha,
        gate: String,
    },
    Sweep,
    /// An intervention, by the `source` it is recorded under.
    Intervention(String),
    /// A question to answer, by the `source` it is recorded under.
    Question(String),
}

impl JobKey {
    pub fn kind(&self) -> JobKind {
        match self {
            JobKey::Delivery(_) => JobKind::Delivery,
            JobKey::Ticket(_) => JobKind::Ticket,
            JobKey::Gates { .. } => JobKind::Gates,
            JobKey::Sweep => JobKind::Sweep,
            JobKey::Intervention(_) => JobKind::Intervention,
            JobKey::Question(_) => JobKind::Question,
        }
    }

    /// The `key` column.
    pub fn key(&self) -> String {
        match self {
            JobKey::Delivery(id) => id.clone(),
            JobKey::Ticket(t) => t.to_string(),
            JobKey::Gates { ticket, sha, gate } => format!("{ticket}|{sha}|{gate}"),
            JobKey::Sweep => "github".into(),
            JobKey::Intervention(source) | JobKey::Question(source) => source.clone(),
        }
    }

    /// Reads a row's `(kind, key)`; `None` when they are not a job this version knows.
    pub fn parse(kind: &str, key: &str) -> Option<Self> {
        Some(match JobKind::parse(kind)? {
            JobKind::Delivery => JobKey::Delivery(key.to_owned()),
            JobKind::Ticket => JobKey::Ticket(key.parse().ok()?),
            JobKind::Gates => {
                let mut parts = key.splitn(3, '|');
                JobKey::Gates {
                    ticket: parts.next()?.parse().ok()?,
                    sha: CommitSha::parse(parts.next()?).ok()?,
                    gate: parts.next()?.to_owned(),
                }
            }
            JobKind::Sweep => JobKey::Sweep,
            JobKind::Intervention => JobKey::Intervention(key.to_owned()),
            JobKind::Question => JobKey::Question(key.to_owned()),
        })
    }
}

impl std::fmt::Display for JobKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} {}", self.kind().as_str(), self.key())
    }
}

/// A claimed job.
#[derive(Debug, Clone)]
pub struct Job {
    pub id: i64,
    pub key: JobKey,
    /// How many times it has been claimed, this claim included.
    pub attempts: i64,
    /// The worker whose lease had run out, when this claim took the job over from it.
    pub taken_from: Option<String>,
}

pub(super) async fn enqueue_in(
    tx: &mut Transaction<'_, Any>,
    key: &JobKey,
    now: i64,
) -> Result<bool> {
    enqueue_at(tx, key, None, now, now).await
}

/// As [`enqueue_in`], in `scope` (a delivery's repository): the job waits for the live jobs
/// queued before it in the same scope (see the module's doc). `None` is no scope.
pub(super) async fn enqueue_scoped_in(
    tx: &mut Transaction<'_, Any>,
    key: &JobKey,
    scope: Option<&str>,
    now: i64,
) -> Result<bool> {
    enqueue_at(tx, key, scope, now, now).await
}

/// Queues `(kind, key)` to run at `run_after`, in `scope` if any. When a live job exists, a
/// running one is marked to run once more after it finishes (so a request that arrives while it
/// works is not lost) and a queued one is left as it is. True when a new job row was queued.
pub(super) async fn enqueue_at(
    conn: &mut sqlx::AnyConnection,
    job: &JobKey,
    scope: Option<&str>,
    run_after: i64,
    now: i64,
) -> Result<bool> {
    let (kind, key) = (job.kind(), job.key());
    let key = key.as_str();
    let lane = match (job, scope) {
        (JobKey::Ticket(t), None) => lane_of(conn, *t).await?,
        _ => None,
    };
    let n = sqlx::query(
        "INSERT INTO jobs (kind, key, scope, status, run_after, created_at, updated_at) \
         VALUES ($1, $2, $3, 'queued', $4, $5, $5) ON CONFLICT DO NOTHING",
    )
    .bind(kind.as_str())
    .bind(key)
    .bind(scope.or(lane.as_deref()))
    .bind(run_after)
    .bind(now)
    .execute(&mut *conn)
    .await?
    .rows_affected();
    if n == 0 {
        sqlx::query(
            "UPDATE jobs SET again_after = $1, updated_at = $2 \
             WHERE kind = $3 AND key = $4 AND status = 'running' \
               AND (again_after IS NULL OR again_after > $1)",
        )
        .bind(run_after)
        .bind(now)
        .bind(kind.as_str())
        .bind(key)
        .execute(&mut *conn)
        .await?;
    }
    Ok(n > 0)
}

/// The lane ticket `t`'s jobs run in (see the module's doc), if any.
pub(super) async fn lane_of(
    conn: &mut sqlx::AnyConnection,
    t: TicketKey,
) -> Result<Option<String>> {
    let row = sqlx::query("SELECT lane FROM tickets WHERE id = $1")
        .bind(t.0)
        .fetch_optional(&mut *conn)
        .await?;
    Ok(row.and_then(|r| r.get::<Option<String>, _>(0)))
}

/// Ends a job its owner holds: a finished job is deleted, a failed one kept with its error.
pub(super) async fn end_job_in(
    tx: &mut Transaction<'_, Any>,
    job_id: i64,
    owner: &str,
    status: &str,
    error: Option<&str>,
    now: i64,
) -> Result<bool> {
    if status == "done" {
        // A ticket in a lane asked for again while it ran goes to the lane's tail: a new row,
        // behind the lane's jobs queued meanwhile.
        let asked = sqlx::query(
            "SELECT kind, key, again_after FROM jobs \
             WHERE id = $1 AND lease_owner = $2 AND again_after IS NOT NULL",
        )
        .bind(job_id)
        .bind(owner)
        .fetch_optional(&mut **tx)
        .await?;
        if let Some(r) = asked {
            let (kind, key, again_after): (String, String, i64) = (r.get(0), r.get(1), r.get(2));
            let lane = match JobKey::parse(&kind, &key) {
                Some(JobKey::Ticket(t)) => lane_of(tx, t).await?,
                _ => None,
            };
            if let Some(lane) = lane {
                sqlx::query("DELETE FROM jobs WHERE id = $1")
                    .bind(job_id)
                    .execute(&mut **tx)
                    .await?;
                sqlx::query(
                    "INSERT INTO jobs (kind, key, scope, status, run_after, created_at, updated_at) \
                     VALUES ($1, $2, $3, 'queued', $4, $5, $5)",
                )
                .bind(&kind)
                .bind(&key)
                .bind(&lane)
                .bind(again_after)
                .bind(now)
                .execute(&mut **tx)
                .await?;
                return Ok(true);
            }
        }
        // Asked for again while it ran: queue it once more, with a fresh count of attempts.
        let again = sqlx::query(
            "UPDATE jobs SET status = 'queued', run_after = again_after, again_after = NULL, \
             attempts = 0, last_error = NULL, lease_owner = NULL, lease_until = NULL, updated_at = $1 \
             WHERE id = $2 AND lease_owner = $3 AND again_after IS NOT NULL",
        )
        .bind(now)
        .bind(job_id)
        .bind(owner)
        .execute(&mut **tx)
        .await?
        .rows_affected();
        if again > 0 {
            return Ok(true);
        }
        let deleted = sqlx::query("DELETE FROM jobs WHERE id = $1 AND lease_owner = $2")
            .bind(job_id)
            .bind(owner)
            .execute(&mut **tx)
            .await?
            .rows_affected();
        return Ok(deleted > 0);
    }
    let n = sqlx::query(
        "UPDATE jobs SET status = $1, last_error = $2, lease_owner = NULL, lease_until = NULL, \
         updated_at = $3 WHERE id = $4 AND lease_owner = $5",
    )
    .bind(status)
    .bind(error)
    .bind(now)
    .bind(job_id)
    .bind(owner)
    .execute(&mut **tx)
    .await?
    .rows_affected();
    Ok(n > 0)
}

/// Which live job `j` a worker may claim at time `now` (a bind parameter such as `$1`): a queued
/// one that is due and not held back by an earlier live job of its scope, or a running one whose
/// lease has run out (taken over as it is: no earlier job of its scope was live at its claim).
pub(super) fn claimable(now: &str) -> String {
    format!(
        "j.status IN ('queued', 'running') \
         AND ((j.status = 'queued' AND j.run_after <= {now} \
               AND (j.scope IS NULL OR NOT EXISTS (SELECT 1 FROM jobs e \
                   WHERE e.scope = j.scope AND e.id < j.id AND e.status IN ('queued', 'running')))) \
           OR (j.status = 'running' AND j.lease_until < {now}))"
    )
}

impl Store {
    /// Queues a job unless a live one exists for the same subject; a running one then runs once
    /// more after it finishes. True when a new job was queued.
    pub async fn enqueue(&self, key: &JobKey) -> Result<bool> {
        let now = now_ms();
        let mut conn = self.writer().acquire().await?;
        enqueue_at(&mut conn, key, None, now, now).await
    }

    /// Queues a job to run after `delay_ms`, behind everything queued now (a requeue at the
    /// tail). A running job of the same subject — the caller's own, typically — runs again
    /// after it finishes, no sooner than that.
    pub async fn enqueue_after(&self, key: &JobKey, delay_ms: i64) -> Result<bool> {
        let now = now_ms();
        let mut conn = self.writer().acquire().await?;
        enqueue_at(&mut conn, key, None, now + delay_ms, now).await
    }

    /// Conflict strategy C's requeue: ticket `t` joins the lane `lane` (its repository's, see
    /// the module's doc) and its job goes behind the repository's other queued tickets — due no
    /// sooner than the latest of them, and queued after them. From the ticket's own running job,
    /// it runs again once that job finishes.
    pub async fn requeue_in_lane(&self, t: TicketKey, lane: &str) -> Result<()> {
        let now = now_ms();
        let job = JobKey::Ticket(t);
        let mut tx = self.writer().begin().await?;
        sqlx::query("UPDATE tickets SET lane = $1 WHERE id = $2")
            .bind(lane)
            .bind(t.0)
            .execute(&mut *tx)
            .await?;
        let latest: Option<i64> = sqlx::query(
            "SELECT MAX(j.run_after) FROM jobs j JOIN tickets o ON j.key = CAST(o.id AS TEXT) \
             WHERE j.kind = 'ticket' AND j.status = 'queued' AND o.id <> $1 \
               AND o.repo = (SELECT repo FROM tickets WHERE id = $1)",
        )
        .bind(t.0)
        .fetch_one(&mut *tx)
        .await?
        .get(0);
        let run_after = latest.map_or(now, |l| l.max(now));
        let running = sqlx::query(
            "UPDATE jobs SET again_after = $1, updated_at = $2 \
             WHERE kind = 'ticket' AND key = $3 AND status = 'running'",
        )
        .bind(run_after)
        .bind(now)
        .bind(job.key())
        .execute(&mut *tx)
        .await?
        .rows_affected();
        if running == 0 {
            // Not from its own job: a queued one moves to the tail, in the lane.
            sqlx::query(
                "DELETE FROM jobs WHERE kind = 'ticket' AND key = $1 AND status = 'queued'",
            )
            .bind(job.key())
            .execute(&mut *tx)
            .await?;
            enqueue_at(&mut tx, &job, Some(lane), run_after, now).await?;
        }
        tx.commit().await?;
        Ok(())
    }

    /// Makes a queued `(kind, key)` due now if it waits for later (a sweep at start, say).
    pub async fn hurry(&self, job: &JobKey) -> Result<()> {
        let (kind, key) = (job.kind(), job.key());
        let now = now_ms();
        sqlx::query(
            "UPDATE jobs SET run_after = $1, updated_at = $1 \
             WHERE kind = $2 AND key = $3 AND status = 'queued' AND run_after > $1",
        )
        .bind(now)
        .bind(kind.as_str())
        .bind(&key)
        .execute(self.writer())
        .await?;
        Ok(())
    }

    /// Marks a job done.
    pub async fn complete_job(&self, job_id: i64, owner: &str) -> Result<()> {
        self.end_job(job_id, owner, "done", None).await
    }

    /// Marks a job failed for good, with the reason.
    pub async fn fail_job(&self, job_id: i64, owner: &str, error: &str) -> Result<()> {
        self.end_job(job_id, owner, "failed", Some(error)).await
    }

    async fn end_job(
        &self,
        job_id: i64,
        owner: &str,
        status: &str,
        error: Option<&str>,
    ) -> Result<()> {
        let mut tx = self.writer().begin().await?;
        end_job_in(&mut tx, job_id, owner, status, error, now_ms()).await?;
        tx.commit().await?;
        Ok(())
    }

    /// Puts a job back in the queue to run again after `delay_ms`. `fresh` restarts its count
    /// of attempts (the failed run made progress, so earlier failures no longer count).
    pub async fn retry_job(
        &self,
        job_id: i64,
        owner: &str,
        delay_ms: i64,
        error: &str,
        fresh: bool,
    ) -> Result<()> {
        let now = now_ms();
        sqlx::query(
            "UPDATE jobs SET status = 'queued', run_after = $1, last_error = $2, lease_owner = NULL, \
             lease_until = NULL, again_after = NULL, updated_at = $3, \
             attempts = CASE WHEN $6 THEN 0 ELSE attempts END \
             WHERE id = $4 AND lease_owner = $5",
        )
        .bind(now + delay_ms)
        .bind(error)
        .bind(now)
        .bind(job_id)
        .bind(owner)
        .bind(fresh)
        .execute(self.writer())
        .await?;
        Ok(())
    }

    /// Number of jobs by status, for health pages and tests.
    pub async fn job_counts(&self) -> Result<Vec<(String, i64)>> {
        let rows = sqlx::query("SELECT status, COUNT(*) FROM jobs GROUP BY status ORDER BY status")
            .fetch_all(self.reader())
            .await?;
        Ok(rows.into_iter().map(|r| (r.get(0), r.get(1))).collect())
    }
}
