//! The `installations` table: installations of the app we heard of through webhooks.

use super::{Result, Store};
use crate::ids::InstallationId;
use crate::now_ms;

impl Store {
    pub async fn upsert_installation(&self, id: InstallationId, account: &str) -> Result<()> {
        sqlx::query(
            "INSERT INTO installations (id, account, created_at) VALUES ($1, $2, $3) \
             ON CONFLICT (id) DO UPDATE SET account = excluded.account, deleted_at = NULL",
        )
        .bind(id.0 as i64)
        .bind(account)
        .bind(now_ms())
        .execute(self.writer())
        .await?;
        Ok(())
    }

    pub async fn delete_installation(&self, id: InstallationId) -> Result<()> {
        sqlx::query("UPDATE installations SET deleted_at = $1 WHERE id = $2")
            .bind(now_ms())
            .bind(id.0 as i64)
            .execute(self.writer())
            .await?;
        Ok(())
    }

    /// Installations not deleted, as `(id, account)`.
    pub async fn installations(&self) -> Result<Vec<(i64, String)>> {
        use sqlx::Row as _;
        let rows = sqlx::query(
            "SELECT id, account FROM installations WHERE deleted_at IS NULL ORDER BY id",
        )
        .fetch_all(self.reader())
        .await?;
        Ok(rows.into_iter().map(|r| (r.get(0), r.get(1))).collect())
    }
}
