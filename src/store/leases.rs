//! Claims and leases on the `jobs` queue ([`super::jobs`]): a worker claims the job due first
//! and holds it by a lease it renews; a job whose lease ran out is claimed again, and at a start
//! the leases of processes known to be gone are freed at once.

use sqlx::Row as _;

use super::jobs::{Job, JobKey, claimable};
use super::{Dialect, Result, Store};
use crate::now_ms;

impl Store {
    /// Claims the job due first (a requeued job goes behind those due before it), or one
    /// whose lease has run out, for `lease_ms`. A queued job waits while an earlier job of its
    /// scope is live (see the module's doc).
    pub async fn claim_job(&self, owner: &str, lease_ms: i64) -> Result<Option<Job>> {
        if self.dialect() == Dialect::Sqlite {
            let now = now_ms();
            // SQLite has one writer: look first on a reader connection, so an idle worker's
            // poll does not queue behind (or in front of) the webhook receiver's commits. The
            // same test as the claim's, so a delivery held back behind its repository's earlier
            // one does not make every poll try a write.
            let sql = format!("SELECT 1 FROM jobs j WHERE {} LIMIT 1", claimable("$1"));
            let due = sqlx::query(&sql)
                .bind(now)
                .fetch_optional(self.reader())
                .await?;
            if due.is_none() {
                return Ok(None);
            }
        }
        let lock = match self.dialect() {
            Dialect::Postgres => "FOR UPDATE SKIP LOCKED",
            Dialect::Sqlite => "",
        };
        let sql = format!(
            "UPDATE jobs SET status = 'running', lease_owner = $1, lease_until = $2, \
             attempts = attempts + 1, updated_at = $3, \
             taken_from = CASE WHEN status = 'running' THEN lease_owner ELSE NULL END \
             WHERE id = (SELECT j.id FROM jobs j WHERE {} \
                 ORDER BY j.run_after, j.id LIMIT 1 {lock}) \
             RETURNING id, kind, key, attempts, taken_from",
            claimable("$3"),
        );
        // The lease starts once the database is ours: a claim that waited for a connection
        // (a long commit, a database coming back) longer than a lease would otherwise take a
        // job already expired, for another worker to take at once while this one runs it.
        let mut conn = self.writer().acquire().await?;
        let now = now_ms();
        let row = sqlx::query(&sql)
            .bind(owner)
            .bind(now + lease_ms)
            .bind(now)
            .fetch_optional(&mut *conn)
            .await?;
        drop(conn);
        let Some(r) = row else { return Ok(None) };
        let (id, kind, key): (i64, String, String) = (r.get(0), r.get(1), r.get(2));
        let Some(parsed) = JobKey::parse(&kind, &key) else {
            // Not a job this version can run (written by a newer one, or damaged): it fails
            // with the reason instead of being claimed again and again.
            let why = format!("unreadable job: kind {kind:?}, key {key:?}");
            self.fail_job(id, owner, &why).await?;
            return Err(super::StoreError::Invalid(why));
        };
        Ok(Some(Job {
            id,
            key: parsed,
            attempts: r.get(3),
            taken_from: r.get(4),
        }))
    }

    /// Extends a lease; false when the lease was lost (another worker owns the job now).
    pub async fn renew_lease(&self, job_id: i64, owner: &str, lease_ms: i64) -> Result<bool> {
        let mut conn = self.writer().acquire().await?;
        let now = now_ms();
        let n = sqlx::query(
            "UPDATE jobs SET lease_until = $1, updated_at = $2 \
             WHERE id = $3 AND lease_owner = $4 AND status = 'running'",
        )
        .bind(now + lease_ms)
        .bind(now)
        .bind(job_id)
        .bind(owner)
        .execute(&mut *conn)
        .await?
        .rows_affected();
        Ok(n > 0)
    }

    /// Frees every lease at once. Only for a single-process store (SQLite) at start-up, where
    /// no other worker can hold one: a crashed run's jobs resume at once instead of after their
    /// lease runs out.
    pub async fn release_all_leases(&self) -> Result<u64> {
        let n = sqlx::query(
            "UPDATE jobs SET status = 'queued', lease_owner = NULL, lease_until = NULL, run_after = $1 \
             WHERE status = 'running'",
        )
        .bind(now_ms())
        .execute(self.writer())
        .await?
        .rows_affected();
        Ok(n)
    }

    /// Frees the leases held by earlier processes of one instance, whose owners start with
    /// `prefix` (the instance's, [`crate::ids::Instance::owner_prefix`]), but not `me`'s. At a
    /// worker's start on a shared database: a data directory has one process at a time, so its
    /// predecessor's jobs resume at once, and other processes' stay theirs.
    pub async fn release_leases_of(&self, prefix: &str, me: &str) -> Result<u64> {
        let n = sqlx::query(
            "UPDATE jobs SET status = 'queued', lease_owner = NULL, lease_until = NULL, run_after = $1 \
             WHERE status = 'running' AND substr(lease_owner, 1, $2) = $3 AND lease_owner <> $4",
        )
        .bind(now_ms())
        .bind(prefix.chars().count() as i32)
        .bind(prefix)
        .bind(me)
        .execute(self.writer())
        .await?
        .rows_affected();
        Ok(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_claim_that_waited_for_the_database_holds_a_whole_lease() {
        let dir = tempfile::tempdir().unwrap();
        let url = format!("sqlite://{}/jobs.db?mode=rwc", dir.path().display());
        let store = Store::connect(&url).await.unwrap();
        store.migrate().await.unwrap();
        store.enqueue(&JobKey::Sweep).await.unwrap();
        // The one writer connection is busy for longer than a lease (a database restarting).
        let held = store.writer().acquire().await.unwrap();
        let claim = tokio::spawn({
            let store = store.clone();
            async move { store.claim_job("w1", 1_000).await }
        });
        tokio::time::sleep(std::time::Duration::from_millis(1_500)).await;
        drop(held);
        let job = claim.await.unwrap().unwrap().expect("claimed");
        let returned = now_ms();
        let until: i64 = sqlx::query("SELECT lease_until FROM jobs WHERE id = $1")
            .bind(job.id)
            .fetch_one(store.reader())
            .await
            .unwrap()
            .get(0);
        // The lease runs from when the claim got the database: not over before it returned,
        // so no other worker can take the job while this one starts it.
        assert!(
            until > returned,
            "lease until {until}, claimed at {returned}"
        );
        store.close().await;
    }
}
