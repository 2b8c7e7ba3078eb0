//! Scale-out on PostgreSQL with three real processes: one `--role ingress` takes the webhooks,
//! two `--role worker`s (each with its own data directory, as on two machines) share the job
//! queue. The worker running a ticket is killed with SIGKILL mid-ticket; its lease runs out and
//! the other worker resumes the ticket from its checkpoint, with every side effect once. A worker
//! started again on its own data directory takes its predecessor's jobs back at once.

use crate::support;

use std::time::Duration;

use support::bot::{Bot, BotEnv};
use support::hive::{AUTO_YML, World, calc, happy_script};
use vibeloop::sandbox::Backend;
use vibeloop::ticket::TaskState;

const LEASE_SECONDS: &str = "3";

fn worker_env(w: &World, name: &str, database_url: &str) -> BotEnv {
    BotEnv {
        data_dir: w.dir.path().join(name),
        github_api_url: w.env.github_api_url.clone(),
        llm_url: w.env.llm_url.clone(),
        webhook_secret: w.env.webhook_secret.clone(),
        app_id: w.env.app_id,
        extra: vec![
            ("DATABASE_URL".into(), database_url.into()),
            ("VIBELOOP_ROLE".into(), "worker".into()),
            ("VIBELOOP_LEASE_SECONDS".into(), LEASE_SECONDS.into()),
        ],
        cwd: None,
    }
}

/// The lease owner of the ticket's running job (`<host>/<instance>/<boot>/<pid>`), if one runs
/// it now.
async fn runner(w: &World) -> Option<String> {
    let store = w.bot.store().await;
    let jobs = store.queued_jobs(100).await.ok()?;
    store.close().await;
    jobs.into_iter()
        .find(|j| j.kind == "ticket" && j.status == "running")
        .and_then(|j| j.lease_owner)
}

#[tokio::test(flavor = "multi_thread")]
async fn a_worker_killed_mid_ticket_loses_its_lease_and_another_finishes_the_ticket() {
    let database_url = support::pg::fresh_database().await;
    let w = World::start_with(
        happy_script(),
        &calc(AUTO_YML),
        vec![
            ("DATABASE_URL".into(), database_url.clone()),
            ("VIBELOOP_ROLE".into(), "ingress".into()),
        ],
    )
    .await;
    let envs = [
        worker_env(&w, "worker-a", &database_url),
        worker_env(&w, "worker-b", &database_url),
    ];
    let mut workers = [Bot::start(&envs[0]).await, Bot::start(&envs[1]).await];

    // Slow GitHub down so the kill lands inside the run, not after it.
    w.gh.set_latency(Duration::from_millis(40));
    w.label().await;
    let owner = support::poll_until(Duration::from_secs(120), || async {
        let past = w.checkpoints().await.iter().any(|c| c == "plan_check");
        match runner(&w).await {
            Some(owner) if past => Some(owner),
            _ => None,
        }
    })
    .await
    .unwrap_or_else(|| {
        panic!(
            "no worker got past the plan check\n--- ingress ---\n{}\n--- worker a ---\n{}\n--- worker b ---\n{}",
            w.bot.log(),
            workers[0].log(),
            workers[1].log()
        )
    });
    let victim = workers
        .iter()
        .position(|b| owner.ends_with(&format!("/{}", b.pid())))
        .unwrap_or_else(|| panic!("{owner} is none of the workers"));
    let survivor = 1 - victim;
    workers[victim].kill();
    w.gh.set_latency(Duration::ZERO);

    let done = w.wait_state(TaskState::Completed).await;
    assert_eq!(done.issue_number, w.issue);
    w.assert_each_side_effect_once();
    // The ingress took the webhook and ran nothing; the survivor took over the victim's job.
    assert!(w.bot.log().contains("role=\"ingress\""), "{}", w.bot.log());
    assert!(!w.bot.log().contains("workers started"), "{}", w.bot.log());
    let took_over = format!("from={owner}");
    assert!(
        workers[survivor]
            .log()
            .lines()
            .any(|l| l.contains("resumed a job whose lease ran out") && l.contains(&took_over)),
        "the survivor took over from {owner}:\n{}",
        workers[survivor].log()
    );
    let checkpoints = w.checkpoints().await;
    for node in ["open_pr", "merge", "snapshot"] {
        assert!(
            checkpoints.iter().any(|c| c == node),
            "{node} was reached: {checkpoints:?}"
        );
    }
    let store = w.bot.store().await;
    let jobs = store.queued_jobs(100).await.unwrap();
    assert!(
        jobs.iter().all(|j| j.kind != "ticket"),
        "the ticket's job is done: {jobs:?}"
    );
    store.close().await;

    // The killed worker's containers stay until it starts again; remove them here.
    if let Ok((Backend::Docker(docker), _)) = Backend::detect(
        &envs[victim].data_dir,
        Some(vibeloop::sandbox::Kind::Docker),
    )
    .await
    {
        docker.remove_leftovers().await.unwrap();
    }
}

/// On a shared database a worker cannot tell a lease of a live process from a dead one's, but a
/// data directory has one process at a time: a worker killed mid-ticket and started again on
/// its own resumes the ticket at its start, not when the lease runs out (an hour here).
#[tokio::test(flavor = "multi_thread")]
async fn a_worker_started_again_on_its_data_directory_resumes_its_ticket_at_once() {
    let database_url = support::pg::fresh_database().await;
    let mut w = World::start_with(
        happy_script(),
        &calc(AUTO_YML),
        vec![
            ("DATABASE_URL".into(), database_url),
            ("VIBELOOP_LEASE_SECONDS".into(), "3600".into()),
        ],
    )
    .await;
    w.gh.set_latency(Duration::from_millis(40));
    w.label().await;
    let owner = support::poll_until(Duration::from_secs(120), || async {
        let past = w.checkpoints().await.iter().any(|c| c == "plan_check");
        runner(&w).await.filter(|_| past)
    })
    .await
    .unwrap_or_else(|| {
        panic!(
            "the ticket did not get past the plan check\n{}",
            w.bot.log()
        )
    });
    w.bot.restart(&w.env).await;
    w.gh.set_latency(Duration::ZERO);

    let done = w.wait_state(TaskState::Completed).await;
    assert_eq!(done.issue_number, w.issue);
    w.assert_each_side_effect_once();
    let log = w.bot.log();
    assert!(
        log.contains("resuming jobs interrupted by the last shutdown jobs=1"),
        "the new process took back {owner}'s job:\n{log}"
    );
}
