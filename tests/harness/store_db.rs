//! Both databases for the store suites (`tests/store/`): a migrated SQLite file in a temp
//! dir, and a fresh PostgreSQL database on the server named by `VIBELOOP_TEST_POSTGRES_URL`
//! (which `scripts/test` starts); [`both!`] runs each listed test on each.
// Each suite uses part of it.
#![allow(dead_code)]

use vibeloop::ids::DeliveryId;
use vibeloop::store::Store;
use vibeloop::store::deliveries::NewDelivery;

/// A migrated store of one dialect, dropped with its database at the end.
pub struct TestDb {
    pub store: Store,
    _dir: Option<tempfile::TempDir>,
}

pub async fn sqlite() -> TestDb {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}/store.db?mode=rwc", dir.path().display());
    TestDb {
        store: vibeloop::app::open_store(&url).await.unwrap(),
        _dir: Some(dir),
    }
}

pub async fn postgres() -> TestDb {
    let url = crate::support::pg::fresh_database().await;
    TestDb {
        store: vibeloop::app::open_store(&url).await.unwrap(),
        _dir: None,
    }
}

/// Runs each `async fn name(store: Store)` of the test file on SQLite and on PostgreSQL.
macro_rules! both {
    ($($name:ident),* $(,)?) => {
        mod on_sqlite {
            $(#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn $name() { super::$name(crate::store_db::sqlite().await.store).await })*
        }
        mod on_postgres {
            $(#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn $name() { super::$name(crate::store_db::postgres().await.store).await })*
        }
    };
}

/// A delivery of `issues.labeled`, handled unless `ignored` says why not.
pub fn delivery(id: &DeliveryId, ignored: Option<&'static str>) -> NewDelivery {
    NewDelivery {
        delivery_id: id.clone(),
        event: "issues".into(),
        action: Some("labeled".into()),
        installation_id: Some(7),
        repo: Some("a/b".into()),
        payload: bytes::Bytes::from_static(b"{}"),
        ignored,
    }
}
