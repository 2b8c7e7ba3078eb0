//! Ticket benchmark: the real bot against the fake GitHub and the fake model (the harness of
//! `tests/`), gates in real containers.
//!
//! 1. One ticket, `--runs` times: wall-clock from the labelling webhook to the pull request,
//!    split into model time (the Architect, then the slower of Breaker and Builder — they run
//!    side by side), gate time (red proof and the gates, in their sandboxes) and the rest:
//!    orchestration (webhooks, GitHub calls, git, the store, waiting for a worker).
//! 2. `--tickets` tickets at once, each on its own repository: time until every one has its
//!    pull request and has merged, the bot's peak RSS and open file descriptors.
//!
//! `cargo bench --bench ticket [-- --runs 5 --tickets 20 --workers 4]` (see bench/README.md)

// The harness of `tests/`. Its `bot` and `hive` modules exist only under `cfg(test)` there, so
// they are loaded here by path too (twice when clippy builds this with `cfg(test)`).
#![allow(clippy::duplicate_mod)]

#[path = "args.rs"]
mod args;
#[path = "../tests/support/mod.rs"]
mod support;
use args::arg;
use support::{answers_ok, fake_github, fake_llm, openapi, payloads, poll_until};
#[allow(dead_code)]
#[path = "../tests/support/bot.rs"]
mod bot;
#[allow(dead_code)]
#[path = "../tests/support/hive.rs"]
mod hive;

use std::time::{Duration, Instant};

use hive::*;
use vibeloop::ids::RepoName;
use vibeloop::ticket::TaskState;

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    v[v.len() / 2]
}

/// `VmRSS` of a process in MiB, and its open file descriptors.
fn rss_and_fds(pid: u32) -> (f64, usize) {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    let kib: f64 = status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
        .unwrap_or(0.0);
    let fds = std::fs::read_dir(format!("/proc/{pid}/fd"))
        .map(|d| d.count())
        .unwrap_or(0);
    (kib / 1024.0, fds)
}

/// One ticket's split, in seconds: (label → PR, model, gates, orchestration).
async fn one_ticket() -> (f64, f64, f64, f64) {
    let w = World::start(happy_script(), &calc(HIVE_YML)).await;
    let start = Instant::now();
    w.label().await;
    w.bot
        .wait_until("the pull request", Duration::from_secs(300), || async {
            w.gh.pulls(REPO).into_iter().next()
        })
        .await;
    let total = start.elapsed().as_secs_f64();
    let t = w.ticket().await.unwrap();
    let store = w.bot.store().await;
    let events = store.events(t.key).await.unwrap();
    store.close().await;
    let mut by_role = std::collections::HashMap::<String, f64>::new();
    let mut gates = 0.0;
    for (_, kind, data) in &events {
        let secs = data["millis"].as_f64().unwrap_or(0.0) / 1000.0;
        match kind.as_str() {
            "llm_usage" => {
                *by_role
                    .entry(data["role"].as_str().unwrap_or("").to_owned())
                    .or_default() += secs
            }
            "stage_exit" if matches!(data["stage"].as_str(), Some("gates" | "red_proof")) => {
                gates += secs
            }
            _ => {}
        }
    }
    let role = |r: &str| by_role.get(r).copied().unwrap_or(0.0);
    let model = role("architect") + role("breaker").max(role("builder"));
    (total, model, gates, (total - model - gates).max(0.0))
}

async fn many_tickets(n: usize, workers: usize) {
    let extra = vec![("VIBELOOP_WORKERS".to_owned(), workers.to_string())];
    let w = World::start_with(happy_script(), &calc(AUTO_YML), extra).await;
    let files = calc(AUTO_YML);
    let refs: Vec<(&str, &str)> = files.iter().map(|(p, c)| (*p, c.as_str())).collect();
    let mut repos = vec![REPO.to_owned()];
    for i in 2..=n {
        let repo = format!("acme/widgets-{i}");
        w.gh.add_repo(INSTALLATION, &repo, &refs);
        w.gh.add_issue(
            &repo,
            "add() subtracts",
            "`add(2, 3)` returns -1; it should return 5.",
        );
        repos.push(repo);
    }
    let pid = w.bot.pid();
    let (idle_rss, idle_fds) = rss_and_fds(pid);
    let start = Instant::now();
    let sent =
        futures_util::future::join_all(repos.iter().map(|r| w.gh.label_issue(r, 1, "hive"))).await;
    assert!(sent.iter().all(|s| s.status == 202));

    let (mut peak_rss, mut peak_fds) = (idle_rss, idle_fds);
    let mut samples = Vec::new();
    let mut first_pr: Vec<Option<f64>> = vec![None; n];
    let store = w.bot.store().await;
    let deadline = Instant::now() + Duration::from_secs(1800);
    loop {
        let (rss, fds) = rss_and_fds(pid);
        peak_rss = peak_rss.max(rss);
        peak_fds = peak_fds.max(fds);
        let elapsed = start.elapsed().as_secs_f64();
        for (i, repo) in repos.iter().enumerate() {
            if first_pr[i].is_none() && !w.gh.pulls(repo).is_empty() {
                first_pr[i] = Some(elapsed);
            }
        }
        let mut done = 0;
        for repo in &repos {
            let t = store
                .ticket_for_issue(&RepoName::parse(repo).unwrap(), 1)
                .await
                .unwrap();
            if t.is_some_and(|t| t.state == TaskState::Completed) {
                done += 1;
            }
        }
        if samples.last().is_none_or(|(t, _, _, _)| elapsed - t >= 5.0) {
            samples.push((elapsed, rss, fds, done));
        }
        if done == n || Instant::now() > deadline {
            break;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let total = start.elapsed().as_secs_f64();
    let stages = stage_latencies(&store, &repos).await;
    let prs: Vec<f64> = first_pr.iter().flatten().copied().collect();
    println!("\n## {n} tickets at once ({workers} workers, one repository each)\n");
    println!("| measure | value |\n|---|---|");
    println!("| label → all merged and tagged | {total:.1} s |");
    println!(
        "| throughput | {:.2} tickets/min |",
        n as f64 / total * 60.0
    );
    println!(
        "| label → PR, median / max | {:.1} s / {:.1} s |",
        median(prs.clone()),
        prs.iter().cloned().fold(0.0, f64::max)
    );
    println!("| bot RSS idle → peak | {idle_rss:.0} MiB → {peak_rss:.0} MiB |");
    println!("| bot open fds idle → peak | {idle_fds} → {peak_fds} |");
    println!("\n| stage (time in state) | median s | max s | tickets |\n|---|---|---|---|");
    for (state, mut secs) in stages {
        secs.sort_by(|a, b| a.total_cmp(b));
        let max = secs.last().copied().unwrap_or(0.0);
        println!(
            "| {state} | {:.1} | {max:.1} | {} |",
            median(secs.clone()),
            secs.len()
        );
    }
    println!("\n| t (s) | RSS (MiB) | fds | completed |\n|---|---|---|---|");
    for (t, rss, fds, done) in samples {
        println!("| {t:.0} | {rss:.0} | {fds} | {done} |");
    }
}

/// How long each ticket spent in each state, from its timeline's `state` events, in the order
/// the states first occur: `(state, seconds of every ticket that was in it)`.
async fn stage_latencies(
    store: &vibeloop::store::Store,
    repos: &[String],
) -> Vec<(String, Vec<f64>)> {
    let mut stages: Vec<(String, Vec<f64>)> = Vec::new();
    for repo in repos {
        let Some(t) = store
            .ticket_for_issue(&RepoName::parse(repo).unwrap(), 1)
            .await
            .unwrap()
        else {
            continue;
        };
        let events = store.events_after(t.key, 0, 100_000).await.unwrap();
        let moves: Vec<(i64, String)> = events
            .iter()
            .filter(|e| e.kind == "state")
            .map(|e| (e.at, e.data["to"].as_str().unwrap_or("?").to_owned()))
            .collect();
        for pair in moves.windows(2) {
            let secs = (pair[1].0 - pair[0].0) as f64 / 1000.0;
            match stages.iter_mut().find(|(s, _)| *s == pair[0].1) {
                Some((_, v)) => v.push(secs),
                None => stages.push((pair[0].1.clone(), vec![secs])),
            }
        }
    }
    stages
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let runs = arg("--runs", 5);
    let tickets = arg("--tickets", 20);
    let workers = arg("--workers", 4);
    let mut rows = Vec::new();
    for _ in 0..runs {
        rows.push(one_ticket().await);
    }
    let col = |f: fn(&(f64, f64, f64, f64)) -> f64| median(rows.iter().map(f).collect());
    println!("## One ticket, label → pull request (median of {runs})\n");
    println!("| part | seconds |\n|---|---|");
    println!("| total | {:.2} |", col(|r| r.0));
    println!("| model (fake LLM, critical path) | {:.2} |", col(|r| r.1));
    println!(
        "| gates (red proof and gates, in containers) | {:.2} |",
        col(|r| r.2)
    );
    println!("| orchestration (the rest) | {:.2} |", col(|r| r.3));
    many_tickets(tickets, workers).await;
}
