//! Taking turns at the workers: a ticket's job that reached a resting point gives its worker
//! to jobs that have waited for one, and runs again behind them.

use super::jobs::{JobKey, claimable, enqueue_at, lane_of};
use super::{Result, Store};
use crate::ids::TicketKey;
use crate::now_ms;

impl Store {
    /// Whether ticket `t`'s running job gives its worker up now: another job has been due for
    /// `waited_ms` and no worker took it (every one is busy), and `t` is in no lane (a lane's
    /// tickets run one at a time until they land). When it does, `t`'s job runs again once it
    /// ends, behind the jobs due now.
    pub async fn yield_to_waiting(&self, t: TicketKey, waited_ms: i64) -> Result<bool> {
        let now = now_ms();
        let sql = format!(
            "SELECT 1 FROM jobs j WHERE {} AND j.status = 'queued' AND j.run_after <= $2 LIMIT 1",
            claimable("$1")
        );
        let waiting = sqlx::query(&sql)
            .bind(now)
            .bind(now - waited_ms)
            .fetch_optional(self.reader())
            .await?;
        if waiting.is_none() {
            return Ok(false);
        }
        let mut tx = self.writer().begin().await?;
        if lane_of(&mut tx, t).await?.is_some() {
            return Ok(false);
        }
        // Due a millisecond later than now: behind every job due now, whatever its id.
        enqueue_at(&mut tx, &JobKey::Ticket(t), None, now + 1, now).await?;
        tx.commit().await?;
        Ok(true)
    }
}
