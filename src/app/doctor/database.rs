//! The database check: connects the way `serve` would, but creates nothing (a missing SQLite
//! file stays missing, and is opened read-only when present), and compares the migrations the
//! database holds with the ones this build carries. It applies none.

use std::path::Path;
use std::str::FromStr as _;
use std::time::Duration;

use sqlx::Connection as _;
use sqlx::postgres::{PgConnectOptions, PgConnection};
use sqlx::sqlite::{SqliteConnectOptions, SqliteConnection};

use super::Check;
use crate::config::StoreArgs;
use crate::store::{Dialect, migrator};

const NAME: &str = "database";
const CONNECT_WITHIN: Duration = Duration::from_secs(10);
/// Where sqlx records the migrations applied.
const TABLE: &str = "_sqlx_migrations";

/// What the database holds.
struct Found {
    dialect: Dialect,
    /// `SQLite <path>` or `PostgreSQL <host:port/db>`: never the credentials.
    place: String,
    /// `(version, success)` rows of the migrations table; empty when there is no table.
    applied: Vec<(i64, bool)>,
}

pub(super) async fn check(store: &StoreArgs) -> Check {
    let url = store.database_url();
    let found = if url.starts_with("postgres://") || url.starts_with("postgresql://") {
        postgres(&url).await
    } else if url.starts_with("sqlite:") {
        sqlite(&url).await
    } else {
        Err(Check::fail(
            NAME,
            "DATABASE_URL must start with sqlite:// or postgres://",
            "correct DATABASE_URL, or unset it for a SQLite file in the data directory",
        ))
    };
    match found {
        Ok(found) => judge(&found),
        Err(check) => check,
    }
}

async fn sqlite(url: &str) -> Result<Found, Check> {
    let options = SqliteConnectOptions::from_str(url)
        .map_err(|e| {
            Check::fail(
                NAME,
                format!("DATABASE_URL is not a SQLite URL ({e})"),
                "correct DATABASE_URL",
            )
        })?
        .read_only(true)
        .create_if_missing(false);
    let path = options.get_filename().to_owned();
    let place = format!("SQLite {}", path.display());
    if path != Path::new(":memory:") && !path.exists() {
        return Err(Check::fail(
            NAME,
            format!("no database yet at {}", path.display()),
            "`vibeloop migrate` creates it",
        ));
    }
    let cannot = |e: sqlx::Error| {
        Check::fail(
            NAME,
            format!("cannot read {place}: {e}"),
            "check the file and its permissions (VIBELOOP_DATA_DIR, DATABASE_URL)",
        )
    };
    let mut conn = SqliteConnection::connect_with(&options)
        .await
        .map_err(cannot)?;
    let tables: i64 =
        sqlx::query_scalar("SELECT COUNT(*) FROM sqlite_master WHERE type = 'table' AND name = ?")
            .bind(TABLE)
            .fetch_one(&mut conn)
            .await
            .map_err(cannot)?;
    let applied = if tables > 0 {
        sqlx::query_as(&format!(
            "SELECT version, success FROM {TABLE} ORDER BY version"
        ))
        .fetch_all(&mut conn)
        .await
        .map_err(cannot)?
    } else {
        Vec::new()
    };
    let _ = conn.close().await;
    Ok(Found {
        dialect: Dialect::Sqlite,
        place,
        applied,
    })
}

async fn postgres(url: &str) -> Result<Found, Check> {
    let options = PgConnectOptions::from_str(url).map_err(|e| {
        Check::fail(
            NAME,
            format!("DATABASE_URL is not a PostgreSQL URL ({e})"),
            "correct DATABASE_URL",
        )
    })?;
    let place = format!(
        "PostgreSQL {}:{}/{}",
        options.get_host(),
        options.get_port(),
        options.get_database().unwrap_or("")
    );
    let cannot = |e: String| {
        Check::fail(
            NAME,
            format!("cannot use {place}: {e}"),
            "check DATABASE_URL, and that the server runs and lets this user in",
        )
    };
    let mut conn = tokio::time::timeout(CONNECT_WITHIN, PgConnection::connect_with(&options))
        .await
        .map_err(|_| cannot(format!("no answer within {}s", CONNECT_WITHIN.as_secs())))?
        .map_err(|e| cannot(e.to_string()))?;
    let exists: bool = sqlx::query_scalar("SELECT to_regclass($1) IS NOT NULL")
        .bind(TABLE)
        .fetch_one(&mut conn)
        .await
        .map_err(|e| cannot(e.to_string()))?;
    let applied = if exists {
        sqlx::query_as(&format!(
            "SELECT version, success FROM {TABLE} ORDER BY version"
        ))
        .fetch_all(&mut conn)
        .await
        .map_err(|e| cannot(e.to_string()))?
    } else {
        Vec::new()
    };
    let _ = conn.close().await;
    Ok(Found {
        dialect: Dialect::Postgres,
        place,
        applied,
    })
}

/// Compares what the database holds with this build's migrations.
fn judge(found: &Found) -> Check {
    let place = &found.place;
    let known = migrator(found.dialect);
    if let Some((version, _)) = found.applied.iter().find(|(_, ok)| !ok) {
        return Check::fail(
            NAME,
            format!("migration {version} stopped halfway in {place}"),
            format!(
                "repair the database by hand, delete row {version} of {TABLE}, then run `vibeloop migrate`"
            ),
        );
    }
    if let Some((version, _)) = found
        .applied
        .iter()
        .find(|(v, _)| !known.iter().any(|m| m.version == *v))
    {
        return Check::fail(
            NAME,
            format!("{place} holds migration {version}, which this vibeloop does not know"),
            "run the newer vibeloop that migrated it",
        );
    }
    let pending: Vec<&str> = known
        .iter()
        .filter(|m| !found.applied.iter().any(|(v, _)| *v == m.version))
        .map(|m| m.description.as_ref())
        .collect();
    if !pending.is_empty() {
        let n = pending.len();
        return Check::fail(
            NAME,
            format!(
                "{place}: {n} migration{} pending ({})",
                if n == 1 { "" } else { "s" },
                pending.join(", ")
            ),
            "run `vibeloop migrate`",
        );
    }
    Check::pass(
        NAME,
        format!(
            "{place}, {} migrations applied, none pending",
            found.applied.len()
        ),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn found(applied: &[(i64, bool)]) -> Found {
        Found {
            dialect: Dialect::Sqlite,
            place: "SQLite x.db".into(),
            applied: applied.to_vec(),
        }
    }

    #[test]
    fn migrations_are_judged_against_this_build() {
        let all: Vec<(i64, bool)> = migrator(Dialect::Sqlite)
            .iter()
            .map(|m| (m.version, true))
            .collect();
        assert!(!judge(&found(&all)).failed());
        let text = judge(&found(&all[..all.len() - 1])).to_string();
        assert!(
            text.contains("1 migration pending") && text.contains("`vibeloop migrate`"),
            "{text}"
        );
        let text = judge(&found(&[])).to_string();
        assert!(text.contains("0001_initial"), "{text}");
        let mut newer = all.clone();
        newer.push((999, true));
        assert!(judge(&found(&newer)).to_string().contains("migration 999"));
        let mut dirty = all;
        dirty[0].1 = false;
        assert!(judge(&found(&dirty)).to_string().contains("halfway"));
    }
}
