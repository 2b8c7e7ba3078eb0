//! The database: SQLite (WAL) by default, PostgreSQL when the URL says so. Both run the same
//! SQL through sqlx's `Any` driver; the few statements that differ branch on [`Dialect`].
//!
//! Sub-modules own one table family each: [`deliveries`], [`jobs`], [`tickets`].
//! Times are Unix milliseconds (`crate::now_ms`); JSON is stored as text.

pub mod budget;
pub mod commands;
pub mod deliveries;
pub mod flow;
pub mod installations;
pub mod jobs;
mod leases;
pub mod memory;
pub mod questions;
pub mod repositories;
pub mod tickets;
pub mod turns;
pub mod views;

use std::borrow::Cow;
use std::path::Path;
use std::str::FromStr;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context as _;
use sqlx::any::{AnyConnectOptions, AnyPoolOptions};
use sqlx::migrate::{Migration, MigrationType, Migrator};
use sqlx::{AnyPool, Executor as _};

/// Which SQL dialect the store speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dialect {
    Sqlite,
    Postgres,
}

/// A handle on the database; cheap to clone.
#[derive(Clone, Debug)]
pub struct Store {
    /// Reads, and on Postgres writes too.
    pool: AnyPool,
    /// On SQLite a single connection, so writers queue in order instead of spinning on
    /// SQLITE_BUSY; on Postgres the same pool as `pool`.
    writer: AnyPool,
    dialect: Dialect,
    /// SQLite only: the task that checkpoints the WAL, stopped with the last handle.
    _checkpointer: Option<Arc<AbortOnDrop>>,
}

/// Aborts a background task when dropped.
#[derive(Debug)]
struct AbortOnDrop(tokio::task::JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// How often the SQLite WAL is checkpointed, off the writer's path.
const CHECKPOINT_EVERY: Duration = Duration::from_millis(200);

/// Errors callers branch on.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("database error: {0}")]
    Db(#[from] sqlx::Error),
    #[error("{0}")]
    Invalid(String),
    /// The ticket started over since this run began: the run's writes are no longer its own.
    #[error("ticket {0} started over; this run's writes are dropped")]
    Superseded(crate::ids::TicketKey),
    /// One failure shared by several callers (a group commit's), with its passing reason.
    #[error("{message}")]
    Shared {
        message: String,
        reason: Option<&'static str>,
    },
}

pub type Result<T, E = StoreError> = std::result::Result<T, E>;

impl StoreError {
    /// Why the database cannot take a write now, in words for the sender of a delivery, when
    /// that is a passing condition: its disk is full, it is locked, or it does not answer.
    pub fn passing_reason(&self) -> Option<&'static str> {
        let code = match self {
            StoreError::Shared { reason, .. } => return *reason,
            StoreError::Db(sqlx::Error::Database(d)) => d.code().map(|c| c.into_owned()),
            // No connection came free in time: every one is waiting on a lock (SQLite) or on
            // a server that is overloaded or gone.
            StoreError::Db(sqlx::Error::PoolTimedOut) => {
                return Some("the database is busy or does not answer");
            }
            StoreError::Db(sqlx::Error::PoolClosed | sqlx::Error::Io(_)) => {
                return Some("the database does not answer");
            }
            _ => None,
        };
        let text = self.to_string();
        // SQLite: SQLITE_FULL (13), SQLITE_BUSY (5, 517), SQLITE_LOCKED (6); PostgreSQL:
        // disk_full (53100), and the 57P0x family when the server shuts down.
        match code.as_deref() {
            Some("13" | "53100") => Some("the bot's disk is full"),
            Some("5" | "6" | "517") => Some("the database is locked"),
            Some(c) if c.starts_with("57P0") => Some("the database does not answer"),
            _ if text.contains("No space left on device")
                || text.contains("disk is full")
                || text.contains("(code: 13)") =>
            {
                Some("the bot's disk is full")
            }
            _ if text.contains("database is locked") || text.contains("(code: 5)") => {
                Some("the database is locked")
            }
            _ => None,
        }
    }
}

macro_rules! migrations {
    ($dialect:literal, $($version:literal $name:literal),* $(,)?) => {
        vec![$(Migration::new(
            $version,
            Cow::Borrowed($name),
            MigrationType::Simple,
            Cow::Borrowed(include_str!(concat!("../../migrations/", $dialect, "/", $name, ".sql"))),
            false,
        )),*]
    };
}

pub(crate) fn migrator(dialect: Dialect) -> Migrator {
    let migrations = match dialect {
        Dialect::Sqlite => {
            migrations!("sqlite", 1 "0001_initial", 2 "0002_budget", 3 "0003_memory", 4 "0004_flow", 5 "0005_requeue", 6 "0006_taken_from", 7 "0007_command_reply", 8 "0008_job_scope", 9 "0009_ticket_lane", 10 "0010_memory_lifecycle", 11 "0011_questions", 12 "0012_repositories", 13 "0013_ticket_run", 14 "0014_chosen_base", 15 "0015_jobs_due")
        }
        Dialect::Postgres => {
            migrations!("postgres", 1 "0001_initial", 2 "0002_budget", 3 "0003_memory", 4 "0004_flow", 5 "0005_requeue", 6 "0006_taken_from", 7 "0007_command_reply", 8 "0008_job_scope", 9 "0009_ticket_lane", 10 "0010_memory_lifecycle", 11 "0011_questions", 12 "0012_repositories", 13 "0013_ticket_run", 14 "0014_chosen_base", 15 "0015_jobs_due")
        }
    };
    Migrator {
        migrations: Cow::Owned(migrations),
        ..Migrator::DEFAULT
    }
}

impl Store {
    /// Opens the database at `url` (`sqlite://…` or `postgres://…`), creating a SQLite file
    /// and its directory when missing. Does not migrate; call [`Store::migrate`].
    pub async fn connect(url: &str) -> anyhow::Result<Self> {
        sqlx::any::install_default_drivers();
        let dialect = if url.starts_with("postgres://") || url.starts_with("postgresql://") {
            Dialect::Postgres
        } else if url.starts_with("sqlite:") {
            Dialect::Sqlite
        } else {
            anyhow::bail!("DATABASE_URL must start with sqlite:// or postgres://");
        };
        let options =
            AnyConnectOptions::from_str(url).context("DATABASE_URL is not a valid database URL")?;
        match dialect {
            Dialect::Sqlite => {
                if let Some(dir) = sqlite_dir(url) {
                    std::fs::create_dir_all(dir)
                        .with_context(|| format!("cannot create {}", dir.display()))?;
                }
                let pool = sqlite_pool(8, true).connect_with(options.clone()).await?;
                let writer = sqlite_pool(1, false).connect_with(options).await?;
                // WAL is a property of the file: set once, it holds for every connection.
                writer.execute("PRAGMA journal_mode = WAL").await?;
                // The writer never checkpoints (a checkpoint copies pages and syncs the file,
                // stalling the commit that triggers it); a reader connection does it instead,
                // while writes go on.
                let readers = pool.clone();
                let checkpointer = tokio::spawn(async move {
                    loop {
                        tokio::time::sleep(CHECKPOINT_EVERY).await;
                        if let Err(e) = readers.execute("PRAGMA wal_checkpoint(PASSIVE)").await {
                            tracing::warn!(error = %e, "WAL checkpoint failed");
                        }
                    }
                });
                Ok(Self {
                    pool,
                    writer,
                    dialect,
                    _checkpointer: Some(Arc::new(AbortOnDrop(checkpointer))),
                })
            }
            Dialect::Postgres => {
                let pool = AnyPoolOptions::new()
                    .max_connections(16)
                    .acquire_timeout(Duration::from_secs(10))
                    .connect_with(options)
                    .await
                    .context("cannot connect to PostgreSQL")?;
                Ok(Self {
                    writer: pool.clone(),
                    pool,
                    dialect,
                    _checkpointer: None,
                })
            }
        }
    }

    /// Applies pending migrations of this store's dialect.
    pub async fn migrate(&self) -> anyhow::Result<()> {
        migrator(self.dialect)
            .run(&self.writer)
            .await
            .context("database migration failed")
    }

    /// True when the database answers.
    pub async fn ping(&self) -> bool {
        sqlx::query("SELECT 1").execute(&self.pool).await.is_ok()
    }

    pub fn dialect(&self) -> Dialect {
        self.dialect
    }

    pub(crate) fn reader(&self) -> &AnyPool {
        &self.pool
    }

    pub(crate) fn writer(&self) -> &AnyPool {
        &self.writer
    }

    /// Closes every connection (checkpointing SQLite's WAL).
    pub async fn close(&self) {
        self.pool.close().await;
        self.writer.close().await;
    }
}

fn sqlite_pool(max: u32, autocheckpoint: bool) -> AnyPoolOptions {
    AnyPoolOptions::new()
        .max_connections(max)
        .acquire_timeout(Duration::from_secs(30))
        // A local file needs no liveness ping before each use.
        .test_before_acquire(false)
        .after_connect(move |conn, _meta| {
            Box::pin(async move {
                // NORMAL is durable across process crashes in WAL mode; only a power cut can
                // lose the last commits.
                conn.execute(
                    "PRAGMA busy_timeout = 10000; PRAGMA synchronous = NORMAL; PRAGMA foreign_keys = ON;",
                )
                .await?;
                if !autocheckpoint {
                    conn.execute("PRAGMA wal_autocheckpoint = 0").await?;
                }
                Ok(())
            })
        })
}

/// The directory of a `sqlite://path?…` URL, when it names a file.
fn sqlite_dir(url: &str) -> Option<&Path> {
    let path = url
        .strip_prefix("sqlite://")
        .or_else(|| url.strip_prefix("sqlite:"))?;
    let path = path.split('?').next()?;
    if path.is_empty() || path == ":memory:" {
        return None;
    }
    Path::new(path)
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sqlite_dir_is_found() {
        assert_eq!(
            sqlite_dir("sqlite:///a/b/c.db?mode=rwc"),
            Some(Path::new("/a/b"))
        );
        assert_eq!(sqlite_dir("sqlite://c.db"), None);
        assert_eq!(sqlite_dir("sqlite::memory:"), None);
    }

    #[test]
    fn passing_conditions_are_named_and_survive_a_shared_batch_error() {
        let timed_out = StoreError::Db(sqlx::Error::PoolTimedOut);
        assert_eq!(
            timed_out.passing_reason(),
            Some("the database is busy or does not answer")
        );
        // What each caller of a failed group commit gets keeps the reason.
        let shared = StoreError::Shared {
            message: timed_out.to_string(),
            reason: timed_out.passing_reason(),
        };
        assert_eq!(shared.passing_reason(), timed_out.passing_reason());
        assert_eq!(shared.to_string(), timed_out.to_string());
        let locked = StoreError::Invalid("error returned from database: database is locked".into());
        assert_eq!(locked.passing_reason(), Some("the database is locked"));
        let full = StoreError::Invalid("No space left on device (os error 28)".into());
        assert_eq!(full.passing_reason(), Some("the bot's disk is full"));
        assert_eq!(
            StoreError::Invalid("no such row".into()).passing_reason(),
            None
        );
    }

    #[test]
    fn both_dialects_have_the_same_migrations() {
        let names = |d| {
            migrator(d)
                .migrations
                .iter()
                .map(|m| (m.version, m.description.to_string()))
                .collect::<Vec<_>>()
        };
        assert_eq!(names(Dialect::Sqlite), names(Dialect::Postgres));
        // Every file in migrations/ is listed (a new one is easy to forget), in order.
        for dialect in ["sqlite", "postgres"] {
            let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("migrations")
                .join(dialect);
            let mut files: Vec<String> = std::fs::read_dir(dir)
                .unwrap()
                .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
                .filter_map(|f| f.strip_suffix(".sql").map(str::to_owned))
                .collect();
            files.sort();
            let listed: Vec<String> = names(Dialect::Sqlite).into_iter().map(|(_, n)| n).collect();
            assert_eq!(files, listed, "migrations/{dialect}");
        }
    }
}
