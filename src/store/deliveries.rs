//! The `deliveries` table: every webhook delivery we acknowledged, stored before the
//! acknowledgement, deduplicated on GitHub's delivery id.

use sqlx::Row as _;
use tokio::sync::{mpsc, oneshot};

use super::{Result, Store, StoreError};
use crate::ids::DeliveryId;
use crate::now_ms;

/// A verified delivery, as the webhook receiver stores it.
#[derive(Debug, Clone)]
pub struct NewDelivery {
    pub delivery_id: DeliveryId,
    pub event: String,
    pub action: Option<String>,
    pub installation_id: Option<i64>,
    pub repo: Option<String>,
    /// The raw body, valid UTF-8 (it parsed as JSON).
    pub payload: bytes::Bytes,
    /// `None` when the event is one we act on (a job is queued); else why it is ignored.
    pub ignored: Option<&'static str>,
}

/// What storing a delivery did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stored {
    /// First time we see this delivery id.
    New,
    /// Already stored earlier (a redelivery): nothing was written.
    Duplicate,
}

/// Stores deliveries with group commit: whatever arrives while one transaction commits goes
/// into the next, so a burst costs a few commits instead of one each. Each caller still gets
/// its answer only after its delivery is committed.
#[derive(Clone)]
pub struct DeliveryWriter {
    tx: mpsc::Sender<(NewDelivery, oneshot::Sender<Result<Stored>>)>,
}

/// The most deliveries committed in one transaction.
const MAX_BATCH: usize = 256;

impl DeliveryWriter {
    /// Starts the writer task; it ends when every handle is dropped.
    pub fn spawn(store: Store) -> Self {
        let (tx, mut rx) =
            mpsc::channel::<(NewDelivery, oneshot::Sender<Result<Stored>>)>(4 * MAX_BATCH);
        tokio::spawn(async move {
            while let Some(first) = rx.recv().await {
                let mut batch = vec![first];
                while batch.len() < MAX_BATCH {
                    match rx.try_recv() {
                        Ok(next) => batch.push(next),
                        Err(_) => break,
                    }
                }
                let (deliveries, replies): (Vec<_>, Vec<_>) = batch.into_iter().unzip();
                match store.insert_deliveries(&deliveries).await {
                    Ok(results) => {
                        for (reply, result) in replies.into_iter().zip(results) {
                            let _ = reply.send(Ok(result));
                        }
                    }
                    Err(e) => {
                        let (message, reason) = (e.to_string(), e.passing_reason());
                        for reply in replies {
                            let message = message.clone();
                            let _ = reply.send(Err(StoreError::Shared { message, reason }));
                        }
                    }
                }
            }
        });
        Self { tx }
    }

    /// Stores one delivery; returns once it is committed.
    pub async fn store(&self, d: NewDelivery) -> Result<Stored> {
        let (reply, answer) = oneshot::channel();
        let gone = || StoreError::Invalid("the delivery writer has stopped".into());
        self.tx.send((d, reply)).await.map_err(|_| gone())?;
        answer.await.map_err(|_| gone())?
    }
}

/// A stored delivery.
#[derive(Debug, Clone)]
pub struct Delivery {
    pub delivery_id: String,
    pub event: String,
    pub action: Option<String>,
    pub installation_id: Option<i64>,
    pub repo: Option<String>,
    pub status: String,
    pub detail: Option<String>,
    pub payload: String,
    pub received_at: i64,
}

impl Store {
    /// Stores a delivery and, when it is one we act on, queues its job in the same transaction,
    /// behind the live jobs of earlier deliveries of the same repository.
    pub async fn insert_delivery(&self, d: &NewDelivery) -> Result<Stored> {
        Ok(self.insert_deliveries(std::slice::from_ref(d)).await?[0])
    }

    /// Stores deliveries (with their jobs) in one transaction; one result per delivery.
    pub async fn insert_deliveries(&self, batch: &[NewDelivery]) -> Result<Vec<Stored>> {
        let now = now_ms();
        let mut results = Vec::with_capacity(batch.len());
        let mut tx = self.writer().begin().await?;
        for d in batch {
            let status = if d.ignored.is_some() {
                "ignored"
            } else {
                "queued"
            };
            let payload = std::str::from_utf8(&d.payload)
                .map_err(|_| StoreError::Invalid("payload is not UTF-8".into()))?;
            let inserted = sqlx::query(
                "INSERT INTO deliveries \
                 (delivery_id, event, action, installation_id, repo, status, detail, received_at) \
                 VALUES ($1, $2, $3, $4, $5, $6, $7, $8) ON CONFLICT (delivery_id) DO NOTHING",
            )
            .bind(d.delivery_id.as_str())
            .bind(&d.event)
            .bind(&d.action)
            .bind(d.installation_id)
            .bind(&d.repo)
            .bind(status)
            .bind(d.ignored)
            .bind(now)
            .execute(&mut *tx)
            .await?
            .rows_affected();
            if inserted == 0 {
                results.push(Stored::Duplicate);
                continue;
            }
            sqlx::query("INSERT INTO delivery_payloads (delivery_id, payload) VALUES ($1, $2)")
                .bind(d.delivery_id.as_str())
                .bind(payload)
                .execute(&mut *tx)
                .await?;
            if d.ignored.is_none() {
                // In its repository's scope: processed after the deliveries of that repository
                // stored before it. A ping or an installation event steers nothing and has none
                // (a repository's ping names the repository).
                let steers = !matches!(
                    d.event.as_str(),
                    "ping" | "installation" | "installation_repositories"
                );
                super::jobs::enqueue_scoped_in(
                    &mut tx,
                    &super::jobs::JobKey::Delivery(d.delivery_id.as_str().to_owned()),
                    d.repo.as_deref().filter(|_| steers),
                    now,
                )
                .await?;
            }
            results.push(Stored::New);
        }
        tx.commit().await?;
        Ok(results)
    }

    pub async fn delivery(&self, delivery_id: &str) -> Result<Option<Delivery>> {
        let row = sqlx::query(
            "SELECT d.delivery_id, event, action, installation_id, repo, status, detail, payload, received_at \
             FROM deliveries d JOIN delivery_payloads p ON p.delivery_id = d.delivery_id \
             WHERE d.delivery_id = $1",
        )
        .bind(delivery_id)
        .fetch_optional(self.reader())
        .await?;
        Ok(row.map(|r| Delivery {
            delivery_id: r.get(0),
            event: r.get(1),
            action: r.get(2),
            installation_id: r.get(3),
            repo: r.get(4),
            status: r.get(5),
            detail: r.get(6),
            payload: r.get(7),
            received_at: r.get(8),
        }))
    }

    /// Records what processing a delivery did (`processed`, `unparsed`, `rejected`, `failed`…).
    pub async fn finish_delivery(
        &self,
        delivery_id: &str,
        status: &str,
        detail: Option<&str>,
    ) -> Result<()> {
        sqlx::query(
            "UPDATE deliveries SET status = $1, detail = $2, processed_at = $3 WHERE delivery_id = $4",
        )
        .bind(status)
        .bind(detail)
        .bind(now_ms())
        .bind(delivery_id)
        .execute(self.writer())
        .await?;
        Ok(())
    }

    /// Records what processing a delivery did and ends its job, in one transaction.
    /// Records a delivery's outcome and ends its job, in one transaction — only while `owner`
    /// still holds the job. False (nothing recorded) when its lease was lost to another worker,
    /// which then records the outcome itself: each delivery's outcome is recorded once.
    pub async fn finish_delivery_job(
        &self,
        job_id: i64,
        owner: &str,
        delivery_id: &str,
        status: &str,
        detail: Option<&str>,
    ) -> Result<bool> {
        let now = now_ms();
        let mut tx = self.writer().begin().await?;
        if !super::jobs::end_job_in(&mut tx, job_id, owner, "done", None, now).await? {
            tx.rollback().await?;
            return Ok(false);
        }
        sqlx::query("UPDATE deliveries SET status = $1, detail = $2, processed_at = $3 WHERE delivery_id = $4")
            .bind(status)
            .bind(detail)
            .bind(now)
            .bind(delivery_id)
            .execute(&mut *tx)
            .await?;
        tx.commit().await?;
        Ok(true)
    }

    /// How many deliveries are stored, by status.
    /// When the newest stored delivery arrived (Unix ms), if any.
    pub async fn last_delivery_at(&self) -> Result<Option<i64>> {
        let row = sqlx::query("SELECT MAX(received_at) FROM deliveries")
            .fetch_one(self.reader())
            .await?;
        Ok(row.get::<Option<i64>, _>(0))
    }

    /// Which of these delivery ids are stored.
    pub async fn known_deliveries(
        &self,
        ids: &[String],
    ) -> Result<std::collections::HashSet<String>> {
        let mut known = std::collections::HashSet::new();
        for id in ids {
            let row = sqlx::query("SELECT 1 FROM deliveries WHERE delivery_id = $1")
                .bind(id)
                .fetch_optional(self.reader())
                .await?;
            if row.is_some() {
                known.insert(id.clone());
            }
        }
        Ok(known)
    }

    /// `(delivery id, status)` of every delivery, oldest first (audits and the loss test).
    pub async fn delivery_statuses(&self) -> Result<Vec<(String, String)>> {
        let rows = sqlx::query("SELECT delivery_id, status FROM deliveries ORDER BY id")
            .fetch_all(self.reader())
            .await?;
        Ok(rows.into_iter().map(|r| (r.get(0), r.get(1))).collect())
    }

    pub async fn delivery_counts(&self) -> Result<Vec<(String, i64)>> {
        let rows =
            sqlx::query("SELECT status, COUNT(*) FROM deliveries GROUP BY status ORDER BY status")
                .fetch_all(self.reader())
                .await?;
        Ok(rows.into_iter().map(|r| (r.get(0), r.get(1))).collect())
    }
}
