//! Ticket benchmark: the real bot against the fake GitHub and the fake model (the harness of
//! `tests/`), gates in real containers.
//!
//! 1. One ticket, `--runs` times: wall-clock from the labelling webhook to the pull request,
//!    and from a maintainer's approving review to the merge, as a user sees them; the steps of
//!    the median run read from the ticket's own timeline (each step ends at an event: a state
//!    change, the baseline, an agent's stage, the red proof, the pull request, the merge).
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

/// One ticket's run: label → pull request, approval → merged and tagged, and the steps of
/// each, in seconds.
struct OneTicket {
    to_pr: f64,
    to_merged: f64,
    /// (step, seconds) from the label to the pull request, then from the approval to the merge.
    steps: Vec<(String, f64)>,
}

fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64
}

/// What an event of the ticket's timeline marks the end of, when it ends a step.
fn step_of(kind: &str, data: &serde_json::Value) -> Option<String> {
    let s = |k: &str| data[k].as_str().unwrap_or("?").to_owned();
    match kind {
        "state" => Some(format!("→ {}", s("to"))),
        "baseline" => Some("baseline".into()),
        // An agent's run ends at its clean-up; the gates and the red proof have no role.
        "stage_exit" => match (data["role"].as_str(), s("stage")) {
            (None, stage) => Some(stage),
            (Some(role), stage) if stage == "cleanup" => Some(format!("{role} done")),
            _ => None,
        },
        "red_proof" | "pull_request" | "regate_carried" | "merged" | "snapshot" => {
            Some(kind.to_owned())
        }
        _ => None,
    }
}

/// The steps between `from` and `to` (ms since the epoch): each marked event ends one, named
/// by it, its time the gap since the previous mark.
fn steps_between(
    events: &[vibeloop::store::views::Event],
    from: i64,
    to: i64,
) -> Vec<(String, f64)> {
    let mut steps = Vec::new();
    let mut last = from;
    for e in events.iter().filter(|e| e.at >= from && e.at <= to) {
        if let Some(step) = step_of(&e.kind, &e.data) {
            steps.push((step, (e.at - last) as f64 / 1000.0));
            last = e.at;
        }
    }
    steps.push(("(to the end)".into(), (to - last) as f64 / 1000.0));
    steps
}

async fn one_ticket() -> OneTicket {
    let w = World::start(happy_script(), &calc(HIVE_YML)).await;
    let (start, labelled) = (Instant::now(), now_ms());
    w.label().await;
    w.bot
        .wait_until("the pull request", Duration::from_secs(300), || async {
            w.gh.pulls(REPO).into_iter().next()
        })
        .await;
    let (to_pr, opened) = (start.elapsed().as_secs_f64(), now_ms());
    let pr = w.waiting_for_approval().await.pr_number.unwrap();
    let (start, approved) = (Instant::now(), now_ms());
    w.gh.review_pull(REPO, pr, MAINTAINER, "approved", "").await;
    w.bot
        .wait_until("the merge", Duration::from_secs(300), || async {
            w.gh.pulls(REPO).into_iter().find(|p| p.merged).map(|_| ())
        })
        .await;
    let (to_merged, merged) = (start.elapsed().as_secs_f64(), now_ms());
    let t = w.ticket().await.unwrap();
    let store = w.bot.store().await;
    let events = store.events_after(t.key, 0, 100_000).await.unwrap();
    store.close().await;
    let mut steps = steps_between(&events, labelled, opened);
    steps.push(("— approval —".into(), 0.0));
    steps.extend(steps_between(&events, approved, merged));
    OneTicket {
        to_pr,
        to_merged,
        steps,
    }
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
    let mut sorted = prs.clone();
    sorted.sort_by(|a, b| a.total_cmp(b));
    let p95 = sorted
        .get(((sorted.len() as f64 * 0.95).ceil() as usize).max(1) - 1)
        .copied()
        .unwrap_or(f64::NAN);
    println!(
        "| label → PR, median / p95 / max | {:.1} s / {p95:.1} s / {:.1} s |",
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
    let med = |f: &dyn Fn(&OneTicket) -> f64| median(rows.iter().map(f).collect());
    println!("## One ticket (median of {runs})\n");
    println!("| measure | seconds |\n|---|---|");
    println!("| label → pull request | {:.2} |", med(&|r| r.to_pr));
    println!("| approval → merged | {:.2} |", med(&|r| r.to_merged));
    // The steps of the run whose label → pull request is the median.
    rows.sort_by(|a, b| a.to_pr.total_cmp(&b.to_pr));
    let mid = &rows[rows.len() / 2];
    println!("\n| step (the median run; each ends at its event) | seconds |\n|---|---|");
    for (step, secs) in &mid.steps {
        println!("| {step} | {secs:.2} |");
    }
    if tickets > 0 {
        many_tickets(tickets, workers).await;
    }
}
