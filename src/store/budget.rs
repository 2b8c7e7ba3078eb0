//! The `budget` table: the ledger of each ticket by role, so a resumed ticket keeps counting
//! from what it already spent.

use std::collections::BTreeMap;

use sqlx::Row as _;

use super::{Result, Store};
use crate::ids::TicketKey;
use crate::llm::budget::Spend;

impl Store {
    /// What each role of ticket `key` spent so far.
    pub async fn budget(&self, key: TicketKey) -> Result<BTreeMap<String, Spend>> {
        let rows = sqlx::query(
            "SELECT role, calls, prompt_tokens, completion_tokens, cost_usd, millis FROM budget WHERE ticket_id = $1",
        )
        .bind(key.0)
        .fetch_all(self.reader())
        .await?;
        Ok(rows
            .into_iter()
            .map(|r| {
                let spend = Spend {
                    calls: r.get::<i64, _>(1) as u64,
                    prompt_tokens: r.get::<i64, _>(2) as u64,
                    completion_tokens: r.get::<i64, _>(3) as u64,
                    cost_usd: r.get(4),
                    millis: r.get::<i64, _>(5) as u64,
                };
                (r.get(0), spend)
            })
            .collect())
    }

    /// Replaces the ledger of ticket `key` with `by_role`.
    pub async fn save_budget(
        &self,
        key: TicketKey,
        by_role: &BTreeMap<String, Spend>,
    ) -> Result<()> {
        let mut tx = self.writer().begin().await?;
        for (role, s) in by_role {
            sqlx::query(
                "INSERT INTO budget (ticket_id, role, calls, prompt_tokens, completion_tokens, cost_usd, millis) \
                 VALUES ($1, $2, $3, $4, $5, $6, $7) ON CONFLICT (ticket_id, role) DO UPDATE SET \
                 calls = excluded.calls, prompt_tokens = excluded.prompt_tokens, \
                 completion_tokens = excluded.completion_tokens, cost_usd = excluded.cost_usd, millis = excluded.millis",
            )
            .bind(key.0)
            .bind(role)
            .bind(s.calls as i64)
            .bind(s.prompt_tokens as i64)
            .bind(s.completion_tokens as i64)
            .bind(s.cost_usd)
            .bind(s.millis as i64)
            .execute(&mut *tx)
            .await?;
        }
        tx.commit().await?;
        Ok(())
    }
}
