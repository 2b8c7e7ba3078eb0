//! Ingest benchmark: starts `vibeloop serve` on SQLite (workers on, processing what arrives),
//! then, from this separate process, sends signed `issue_comment` deliveries with unique ids —
//! first at a fixed rate, then as fast as it can — and prints throughput, acknowledgement
//! latency (p50/p99/max) and deliveries stored versus sent.
//!
//! With `--against <vibeloop binary>` (a previous build: `bench/ingest-compare.sh` makes one)
//! it measures both builds side by side in one run, `--rounds` times each, taking turns, and
//! prints each round and the medians, so that a regression shows beside the same machine's
//! noise.
//!
//! `cargo bench --bench ingest [-- --rate 500 --seconds 10 --concurrency 32 --against PATH --rounds 3]`
//! (see bench/README.md)

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

async fn start_server(binary: &std::path::Path) -> Server {
    let data = tempfile::tempdir().unwrap();
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let child = Command::new(binary)
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

/// One build's run: both phases and what was stored.
struct Run {
    fixed: Phase,
    max: Phase,
    stored: Option<i64>,
    sent: u64,
    acked: u64,
}

async fn measure(binary: &std::path::Path, rate: u64, seconds: u64, concurrency: usize) -> Run {
    let server = start_server(binary).await;
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
    let fixed = fixed_rate(load.clone(), rate, seconds).await;
    let max = max_rate(load.clone(), concurrency, seconds).await;
    let db = server.data.path().join("vibeloop.db");
    let stored = match vibeloop::store::Store::connect(&format!(
        "sqlite://{}?mode=ro",
        db.display()
    ))
    .await
    {
        Ok(store) => store
            .delivery_counts()
            .await
            .ok()
            .map(|c| c.iter().map(|(_, n)| n).sum()),
        Err(_) => None,
    };
    Run {
        acked: fixed.acked + max.acked + 200,
        sent: load.seq.load(Ordering::Relaxed),
        fixed,
        max,
        stored,
    }
}

impl Run {
    fn verdict(&self) -> String {
        match self.stored {
            Some(s) if s as u64 >= self.acked && s as u64 == self.sent => {
                format!("stored = sent ({s})")
            }
            Some(s) => format!(
                "MISMATCH: stored {s}, sent {}, acknowledged {}",
                self.sent, self.acked
            ),
            None => "stored: unreadable".into(),
        }
    }
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    v.get(v.len() / 2).copied().unwrap_or(f64::NAN)
}

#[tokio::main]
async fn main() {
    let rate = arg("--rate", 500);
    let seconds = arg("--seconds", 10);
    let concurrency = arg("--concurrency", 32) as usize;
    let against: Option<PathBuf> = arg("--against", String::new())
        .parse::<PathBuf>()
        .ok()
        .filter(|p| !p.as_os_str().is_empty());
    let this = PathBuf::from(env!("CARGO_BIN_EXE_vibeloop"));
    println!(
        "ingest: {} cores, SQLite (WAL), workers on; payload issue_comment",
        std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(0),
    );
    let Some(previous) = against else {
        let mut run = measure(&this, rate, seconds, concurrency).await;
        println!();
        println!("| phase | sent | acked 202 | deliveries/s | p50 ms | p99 ms | max ms |");
        println!("|---|---|---|---|---|---|---|");
        println!(
            "{}",
            run.fixed.row(&format!("fixed {rate}/s for {seconds} s"))
        );
        println!(
            "{}",
            run.max
                .row(&format!("max, {concurrency} senders, {seconds} s"))
        );
        println!();
        println!("{} (warm-up included)", run.verdict());
        return;
    };
    let rounds = arg("--rounds", 3);
    let builds = [("this build", this), ("previous", previous)];
    let mut figures: Vec<Vec<(f64, f64)>> = vec![vec![], vec![]];
    println!();
    println!("| round | build | fixed {rate}/s p99 ms | max deliveries/s | max p99 ms | stored |");
    println!("|---|---|---|---|---|---|");
    for round in 0..rounds {
        // Each takes the first turn every other round: the machine warms as it goes.
        let order = if round % 2 == 0 { [0, 1] } else { [1, 0] };
        for i in order {
            let (name, binary) = &builds[i];
            let mut run = measure(binary, rate, seconds, concurrency).await;
            let p99 = |p: &mut Phase| {
                p.latencies.sort();
                let i = ((p.latencies.len() as f64 * 0.99).ceil() as usize).max(1) - 1;
                p.latencies
                    .get(i)
                    .map_or(f64::NAN, |d| d.as_secs_f64() * 1000.0)
            };
            let (fixed_p99, max_p99) = (p99(&mut run.fixed), p99(&mut run.max));
            let per_s = run.max.acked as f64 / run.max.elapsed.as_secs_f64();
            figures[i].push((fixed_p99, per_s));
            println!(
                "| {} | {name} | {fixed_p99:.2} | {per_s:.0} | {max_p99:.2} | {} |",
                round + 1,
                run.verdict()
            );
        }
    }
    println!();
    println!("| medians of {rounds} | fixed p99 ms | max deliveries/s |\n|---|---|---|");
    for (i, (name, _)) in builds.iter().enumerate() {
        let p99 = median(figures[i].iter().map(|f| f.0).collect());
        let per_s = median(figures[i].iter().map(|f| f.1).collect());
        println!("| {name} | {p99:.2} | {per_s:.0} |");
    }
}
