//! Faults of the bot's own database, end to end: a SQLite file locked by another process. A
//! short lock delays deliveries and loses none; a lock longer than the bot will wait (8 s, as
//! GitHub gives up at 10) gets a 503 with the reason (GitHub marks the delivery failed and it is
//! redelivered), and the delivery is stored and processed once.

use crate::support;

use std::time::{Duration, Instant};

use sqlx::Connection as _;
use support::hive::*;
use support::payloads;

/// Takes SQLite's write lock on the bot's database, as another process would.
async fn lock(w: &World) -> sqlx::AnyConnection {
    sqlx::any::install_default_drivers();
    let url = format!("sqlite://{}", w.bot.data_dir.join("vibeloop.db").display());
    let mut conn = sqlx::AnyConnection::connect(&url).await.unwrap();
    sqlx::query("BEGIN IMMEDIATE")
        .execute(&mut conn)
        .await
        .unwrap();
    conn
}

async fn unlock(mut conn: sqlx::AnyConnection) {
    sqlx::query("COMMIT").execute(&mut conn).await.unwrap();
    conn.close().await.unwrap();
}

fn ping() -> Vec<u8> {
    payloads::example("ping/payload.json")
}

#[tokio::test(flavor = "multi_thread")]
async fn a_short_lock_delays_a_delivery_and_loses_nothing() {
    let w = World::start(happy_script(), &calc(HIVE_YML)).await;
    let held = lock(&w).await;
    let url = w.bot.url.clone();
    let send = tokio::spawn(async move {
        let sent = payloads::send(&url, SECRET, "ping", &ping()).await;
        (sent, Instant::now())
    });
    // The lock is the fault: hold it a while, then let go.
    tokio::time::sleep(Duration::from_secs(1)).await;
    let released = Instant::now();
    unlock(held).await;
    let (sent, answered) = send.await.unwrap();
    assert_eq!(sent.status, 202, "{}", sent.text);
    assert!(
        answered >= released,
        "acknowledged before it could be stored"
    );
    let d = w.handled(&sent).await;
    assert_eq!(d.status, "processed");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_lock_longer_than_the_wait_gets_503_and_the_redelivery_is_stored_once() {
    let w = World::start(happy_script(), &calc(HIVE_YML)).await;
    let held = lock(&w).await;
    let body = ping();
    let id = payloads::delivery_id();
    let headers = |sig: &str| {
        vec![
            ("X-GitHub-Event", "ping".to_owned()),
            ("X-GitHub-Delivery", id.clone()),
            ("X-Hub-Signature-256", sig.to_owned()),
        ]
    };
    let sig = payloads::sign(SECRET, &body);
    let h = headers(&sig);
    let h: Vec<(&str, &str)> = h.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let refused = payloads::send_with(&w.bot.url, &h, &body, &id).await;
    assert_eq!(refused.status, 503, "{}", refused.text);
    // GitHub waits 10 s at most: the bot answers at its own 8 s, before SQLite's busy timeout.
    assert!(
        refused.text.contains("(the database is busy)")
            && refused.text.contains("redeliver it later"),
        "{}\nthe bot's error: {:?}",
        refused.text,
        w.bot
            .log()
            .lines()
            .filter(|l| l.contains("cannot store delivery"))
            .collect::<Vec<_>>()
    );
    unlock(held).await;

    // The refused copy stayed queued and may have been stored once the lock went: the
    // redelivery then finds it.
    let again = payloads::send_with(&w.bot.url, &h, &body, &id).await;
    assert!([200, 202].contains(&again.status), "{}", again.text);
    let d = w.handled(&again).await;
    assert_eq!(d.status, "processed");
    let twice = payloads::send_with(&w.bot.url, &h, &body, &id).await;
    assert_eq!(
        twice.status, 200,
        "a third copy is a duplicate: {}",
        twice.text
    );
    let store = w.bot.store().await;
    let rows = store.delivery_statuses().await.unwrap();
    assert_eq!(rows.iter().filter(|(d, _)| *d == id).count(), 1);
    store.close().await;
}
