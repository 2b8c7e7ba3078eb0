//! Ingest benchmark: starts `vibeloop serve` on SQLite (workers on, processing what arrives),
//! then, from this separate process, sends signed `issue_comment` deliveries with unique ids —
//! first at a fixed rate, then as fast as it can — and prints throughput, acknowledgement
//! latency (p50/p99/max) and deliveries stored versus sent.
//!
//! `cargo bench --bench ingest [-- --rate 500 --seconds 10 --concurrency 32]` (see bench/README.md)

#[path = "args.rs"]
mod args;
use args::arg;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use tokio::sync::Mutex;

const SECRET: &str = "bench-secret";

struct Server {
    child: Child,
    url: String,
    data: tempfile::TempDir,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

async fn start_server() -> Server {
    let data = tempfile::tempdir().unwrap();
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let child = Command::new(env!("CARGO_BIN_EXE_vibeloop"))
        .arg("serve")
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("RUST_LOG", "warn")
        .env("VIBELOOP_LISTEN", format!("127.0.0.1:{port}"))
        .env("VIBELOOP_DATA_DIR", data.path())
        .env("GITHUB_WEBHOOK_SECRET", SECRET)
        // App credentials turn the workers on; the deliveries sent need no GitHub call.
        .env("GITHUB_APP_ID", "1")
        .env(
            "GITHUB_PRIVATE_KEY_PATH",
            root().join("tests/fixtures/keys/app.pem"),
        )
        .env("GITHUB_API_URL", "http://127.0.0.1:9")
        .stdout(Stdio::null())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("vibeloop starts");
    let url = format!("http://127.0.0.1:{port}");
    let client = reqwest::Client::new();
    let deadline = Instant::now() + Duration::from_secs(30);
    while client.get(format!("{url}/healthz")).send().await.is_err() {
        assert!(Instant::now() < deadline, "server did not start");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    Server { child, url, data }
}

struct Load {
    client: reqwest::Client,
    url: String,
    body: bytes::Bytes,
    signature: String,
    seq: AtomicU64,
    run: u64,
}

impl Load {
    /// Sends one delivery; returns its latency when acknowledged with 202.
    async fn one(&self) -> Option<Duration> {
        let n = self.seq.fetch_add(1, Ordering::Relaxed);
        let id = format!("bench-{:08x}-{n:012x}", self.run);
        let started = Instant::now();
        let resp = self
            .client
            .post(&self.url)
            .header("content-type", "application/json")
            .header("x-github-event", "issue_comment")
            .header("x-github-delivery", id)
            .header("x-hub-signature-256", &self.signature)
            .body(self.body.clone())
            .send()
            .await
            .ok()?;
        let ok = resp.status().as_u16() == 202;
        let _ = resp.bytes().await;
        ok.then(|| started.elapsed())
    }
}

#[derive(Default)]
struct Phase {
    sent: u64,
    acked: u64,
    latencies: Vec<Duration>,
    elapsed: Duration,
}

impl Phase {
    fn row(&mut self, name: &str) -> String {
        self.latencies.sort();
        let pct = |p: f64| {
            let i = ((self.latencies.len() as f64 * p).ceil() as usize)
                .clamp(1, self.latencies.len().max(1))
                - 1;
            self.latencies
                .get(i)
                .map(|d| d.as_secs_f64() * 1000.0)
                .unwrap_or(f64::NAN)
        };
        format!(
            "| {name} | {} | {} | {:.0} | {:.2} | {:.2} | {:.2} |",
            self.sent,
            self.acked,
            self.acked as f64 / self.elapsed.as_secs_f64(),
            pct(0.50),
            pct(0.99),
            self.latencies
                .last()
                .map(|d| d.as_secs_f64() * 1000.0)
                .unwrap_or(f64::NAN),
        )
    }
}

async fn fixed_rate(load: Arc<Load>, rate: u64, seconds: u64) -> Phase {
    let results = Arc::new(Mutex::new(Phase::default()));
    let mut tick = tokio::time::interval(Duration::from_nanos(1_000_000_000 / rate));
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Burst);
    let started = Instant::now();
    let mut tasks = Vec::new();
    for _ in 0..rate * seconds {
        tick.tick().await;
        let (load, results) = (load.clone(), results.clone());
        tasks.push(tokio::spawn(async move {
            let r = load.one().await;
            let mut p = results.lock().await;
            p.sent += 1;
            if let Some(l) = r {
                p.acked += 1;
                p.latencies.push(l);
            }
        }));
    }
    for t in tasks {
        t.await.unwrap();
    }
    let mut p = Arc::try_unwrap(results).ok().unwrap().into_inner();
    p.elapsed = started.elapsed();
    p
}

async fn max_rate(load: Arc<Load>, concurrency: usize, seconds: u64) -> Phase {
    let deadline = Instant::now() + Duration::from_secs(seconds);
    let started = Instant::now();
    let mut tasks = Vec::new();
    for _ in 0..concurrency {
        let load = load.clone();
        tasks.push(tokio::spawn(async move {
            let mut p = Phase::default();
            while Instant::now() < deadline {
                p.sent += 1;
                if let Some(l) = load.one().await {
                    p.acked += 1;
                    p.latencies.push(l);
                }
            }
            p
        }));
    }
    let mut all = Phase::default();
    for t in tasks {
        let p = t.await.unwrap();
        all.sent += p.sent;
        all.acked += p.acked;
        all.latencies.extend(p.latencies);
    }
    all.elapsed = started.elapsed();
    all
}

#[tokio::main]
async fn main() {
    let rate = arg("--rate", 500);
    let seconds = arg("--seconds", 10);
    let concurrency = arg("--concurrency", 32) as usize;
    let server = start_server().await;
    let body = std::fs::read(root().join(
        "tests/fixtures/github/webhooks/issue_comment/created.with-installation.payload.json",
    ))
    .unwrap();
    let signature =
        vibeloop::webhook::signature::sign(&secrecy::SecretString::from(SECRET.to_owned()), &body);
    let load = Arc::new(Load {
        client: reqwest::Client::builder()
            .pool_max_idle_per_host(256)
            .build()
            .unwrap(),
        url: format!("{}/webhook", server.url),
        body: body.into(),
        signature,
        seq: AtomicU64::new(0),
        run: rand::random::<u32>() as u64,
    });
    // Warm up connections and the database.
    for _ in 0..200 {
        load.one().await;
    }
    let mut fixed = fixed_rate(load.clone(), rate, seconds).await;
    let mut max = max_rate(load.clone(), concurrency, seconds).await;

    let store = vibeloop::store::Store::connect(&format!(
        "sqlite://{}?mode=ro",
        server.data.path().join("vibeloop.db").display()
    ))
    .await
    .unwrap();
    let stored: i64 = store
        .delivery_counts()
        .await
        .unwrap()
        .iter()
        .map(|(_, n)| n)
        .sum();
    let sent = load.seq.load(Ordering::Relaxed);
    let acked = fixed.acked + max.acked + 200;
    println!(
        "ingest: {} cores, SQLite (WAL), workers on; payload issue_comment ({} bytes)",
        std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(0),
        load.body.len()
    );
    println!();
    println!("| phase | sent | acked 202 | deliveries/s | p50 ms | p99 ms | max ms |");
    println!("|---|---|---|---|---|---|---|");
    println!("{}", fixed.row(&format!("fixed {rate}/s for {seconds} s")));
    println!(
        "{}",
        max.row(&format!("max, {concurrency} senders, {seconds} s"))
    );
    println!();
    println!(
        "stored {stored} / sent {sent} / acknowledged {acked} (warm-up included): {}",
        if stored as u64 == sent && acked == sent {
            "stored = sent"
        } else {
            "MISMATCH"
        }
    );
}
