//! The loss test: thousands of signed deliveries under load while the bot is killed with SIGKILL
//! at random moments and restarted. Senders behave like GitHub with a patient operator: a
//! delivery that got no 2xx is sent again under the same id until it does. Afterwards every
//! delivery is stored once, the stored ones are exactly the acknowledged ones, and each was
//! processed once.
//!
//! Run on SQLite and on PostgreSQL. `VIBELOOP_LOSS_DELIVERIES` sets how many (10,000 by
//! default).

use crate::support;

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use support::hive::*;
use support::payloads;

const SENDERS: usize = 16;

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn deliveries_survive_sigkills_stored_as_acknowledged_and_processed_once() {
    loss("SQLite", vec![]).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn on_postgres_too_deliveries_survive_sigkills_stored_once_and_processed_once() {
    let url = support::pg::fresh_database().await;
    loss("PostgreSQL", vec![("DATABASE_URL".into(), url)]).await;
}

/// Sends the deliveries to a bot on the database `extra` names, killing it meanwhile.
async fn loss(database: &str, extra: Vec<(String, String)>) {
    let total: usize = std::env::var("VIBELOOP_LOSS_DELIVERIES")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(10_000);
    let mut w = World::start_with(happy_script(), &calc(HIVE_YML), extra).await;
    let url = format!("{}/webhook", w.bot.url);
    let body = Arc::new(payloads::example("ping/payload.json"));
    let signature = payloads::sign(SECRET, &body);
    let http = reqwest::Client::builder()
        .timeout(Duration::from_secs(10))
        .build()
        .unwrap();
    let next = Arc::new(AtomicUsize::new(0));
    // id → how many answers were not a 2xx before one was.
    let acked: Arc<Mutex<HashMap<String, u32>>> = Arc::default();
    let started = Instant::now();
    let mut senders = Vec::new();
    for _ in 0..SENDERS {
        let (http, url, body, signature) =
            (http.clone(), url.clone(), body.clone(), signature.clone());
        let (next, acked) = (next.clone(), acked.clone());
        senders.push(tokio::spawn(async move {
            while next.fetch_add(1, Ordering::Relaxed) < total {
                let id = payloads::delivery_id();
                let mut refused = 0;
                loop {
                    let answer = http
                        .post(&url)
                        .header("content-type", "application/json")
                        .header("X-GitHub-Event", "ping")
                        .header("X-GitHub-Delivery", &id)
                        .header("X-Hub-Signature-256", &signature)
                        .body(body.to_vec())
                        .send()
                        .await;
                    match answer {
                        Ok(r) if r.status().is_success() => break,
                        Ok(r) => assert!(
                            r.status().is_server_error(),
                            "a delivery was refused: {}",
                            r.status()
                        ),
                        // Down (being killed or restarting): like GitHub, try again later.
                        Err(_) => {}
                    }
                    refused += 1;
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
                acked.lock().unwrap().insert(id, refused);
            }
        }));
    }

    // Kill the bot at random moments until every delivery is acknowledged.
    let mut kills = 0;
    while !senders.iter().all(|s| s.is_finished()) {
        let pause = 50 + rand::random::<u64>() % 450;
        tokio::time::sleep(Duration::from_millis(pause)).await;
        if senders.iter().all(|s| s.is_finished()) {
            break;
        }
        w.bot.restart(&w.env).await;
        kills += 1;
    }
    for s in senders {
        s.await.unwrap();
    }
    let took = started.elapsed();
    let acked = std::mem::take(&mut *acked.lock().unwrap());
    assert_eq!(
        acked.len(),
        total,
        "every delivery was acknowledged in the end"
    );
    assert!(kills >= 3, "only {kills} kills: the test proved little");

    // Stored = acknowledged, each once; every one processed, each once.
    let store = w.bot.store().await;
    // Counted while waiting, read once: every delivery's row each 25 ms would load the
    // database the bot drains.
    w.bot
        .wait_until(
            "every delivery processed",
            Duration::from_secs(600),
            || async {
                let counts = store.delivery_counts().await.ok()?;
                counts.iter().all(|(s, _)| s != "queued").then_some(())
            },
        )
        .await;
    let drained = started.elapsed();
    let rows = store.delivery_statuses().await.unwrap();
    let stored: HashSet<&str> = rows.iter().map(|(id, _)| id.as_str()).collect();
    assert_eq!(stored.len(), rows.len(), "a delivery id stored twice");
    let sent: HashSet<&str> = acked.keys().map(String::as_str).collect();
    assert_eq!(stored, sent, "stored and acknowledged differ");
    assert!(
        rows.iter().all(|(_, s)| s == "processed"),
        "a delivery not processed"
    );
    let log = w.bot.log();
    let mut processed: HashMap<&str, u32> = HashMap::new();
    for line in log.lines().filter(|l| l.contains("delivery processed")) {
        if let Some(id) = line
            .split("delivery{id=")
            .nth(1)
            .and_then(|r| r.split(' ').next())
        {
            *processed.entry(id).or_default() += 1;
        }
    }
    let twice: Vec<_> = processed.iter().filter(|(_, n)| **n > 1).collect();
    assert!(twice.is_empty(), "processed more than once: {twice:?}");
    let retried = acked.values().filter(|n| **n > 0).count();
    println!(
        "{database}: {total} deliveries, {kills} SIGKILLs, {retried} sent again after no answer, all acknowledged in {:.1} s, processed in {:.1} s",
        took.as_secs_f64(),
        drained.as_secs_f64()
    );
    store.close().await;
}
