//! The `repositories` table: which GitHub repository (by its id) holds each `owner/name` now.
//! Rows elsewhere name repositories; [`Store::repository_seen`] keeps those names true when a
//! repository is renamed or transferred (its rows follow it) and when a name passes to another
//! repository — one deleted and made again, or another renamed into it (the old holder's rows
//! move out of its way, to [`RepoName::gone`]). A newcomer under a known name so starts with no
//! tickets, memory, commands or questions of the one before.

use sqlx::Row as _;

use super::{Result, Store};
use crate::ids::{RepoName, RepositoryId};
use crate::now_ms;

/// Every column that names a repository, with the shape of its value (`{}`: the name).
const NAMED: [(&str, &str, &str); 7] = [
    ("tickets", "repo", "{}"),
    ("tickets", "lane", "serial:{}"),
    ("memory_entries", "repo", "{}"),
    ("commands", "repo", "{}"),
    ("questions", "repo", "{}"),
    ("jobs", "scope", "{}"),
    ("jobs", "scope", "serial:{}"),
];

impl Store {
    /// Records that repository `id` is called `name` now; the names whose holder changed (their
    /// environments and mirror, kept on disk by name, are no longer the holder's). Idempotent: a
    /// repository seen again under the same name changes nothing.
    pub async fn repository_seen(
        &self,
        id: RepositoryId,
        name: &RepoName,
    ) -> Result<Vec<RepoName>> {
        let known = |rows: Vec<sqlx::any::AnyRow>| -> Vec<(i64, String)> {
            rows.iter().map(|r| (r.get(0), r.get(1))).collect()
        };
        let mut tx = self.writer().begin().await?;
        let holders = known(
            sqlx::query("SELECT id, full_name FROM repositories WHERE id = $1 OR full_name = $2")
                .bind(id.0 as i64)
                .bind(name.as_str())
                .fetch_all(&mut *tx)
                .await?,
        );
        let was = holders
            .iter()
            .find(|(i, _)| *i == id.0 as i64)
            .map(|(_, n)| n.clone());
        if was.as_deref() == Some(name.as_str()) {
            return Ok(Vec::new());
        }
        let mut changed = Vec::new();
        // Another repository held the name: its rows step aside.
        for (other, _) in holders.iter().filter(|(i, _)| *i != id.0 as i64) {
            let gone = name.gone(RepositoryId(*other as u64));
            rename_rows(&mut tx, name.as_str(), gone.as_str()).await?;
            sqlx::query("UPDATE repositories SET full_name = $1 WHERE id = $2")
                .bind(gone.as_str())
                .bind(other)
                .execute(&mut *tx)
                .await?;
            changed.push(name.clone());
        }
        // This repository had another name: its rows follow it.
        if let Some(old) = &was {
            rename_rows(&mut tx, old, name.as_str()).await?;
            if let Ok(old) = RepoName::parse(old) {
                changed.push(old);
            }
        }
        sqlx::query(
            "INSERT INTO repositories (id, full_name, seen_at) VALUES ($1, $2, $3) \
             ON CONFLICT (id) DO UPDATE SET full_name = excluded.full_name, seen_at = excluded.seen_at",
        )
        .bind(id.0 as i64)
        .bind(name.as_str())
        .bind(now_ms())
        .execute(&mut *tx)
        .await?;
        tx.commit().await?;
        Ok(changed)
    }
}

/// Renames every row that names `from` to `to`.
async fn rename_rows(
    tx: &mut sqlx::Transaction<'_, sqlx::Any>,
    from: &str,
    to: &str,
) -> Result<()> {
    for (table, column, shape) in NAMED {
        sqlx::query(&format!(
            "UPDATE {table} SET {column} = $1 WHERE {column} = $2"
        ))
        .bind(shape.replace("{}", to))
        .bind(shape.replace("{}", from))
        .execute(&mut **tx)
        .await?;
    }
    Ok(())
}
