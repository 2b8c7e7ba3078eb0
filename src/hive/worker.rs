//! The workers: each claims a due job from the store (holding a lease it renews by heartbeat),
//! runs it — a webhook delivery ([`super::deliveries`]), a ticket's workflow ([`super::run`]), a
//! gates re-run ([`super::rerun`]) or the sweep ([`super::sweep`]) — and records how it ended:
//! done, retried with backoff, or failed for good (a ticket then says so on its issue). A ticket
//! whose job keeps failing in passing is retried by its repository's `retry:` settings and, past
//! `retry.human_intervention_after` failures without progress, waits for a person with a report.

use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::sync::watch;
use tracing::{Instrument as _, error, info_span, warn};

use super::job::{Done, Hive, JobError};
use crate::store::Store;
use crate::store::jobs::{Job, JobKey};

/// Workers look for due jobs at least this often (a queued job wakes them sooner).
const POLL: Duration = Duration::from_millis(500);

/// Runs `count` workers until `shutdown` turns true.
pub async fn run_workers(hive: Arc<Hive>, count: usize, shutdown: watch::Receiver<bool>) {
    let mut handles = Vec::new();
    for n in 0..count {
        let hive = hive.clone();
        let shutdown = shutdown.clone();
        handles.push(tokio::spawn(
            worker(hive, shutdown).instrument(info_span!("worker", n)),
        ));
    }
    for h in handles {
        let _ = h.await;
    }
}

async fn worker(hive: Arc<Hive>, mut shutdown: watch::Receiver<bool>) {
    while !*shutdown.borrow() {
        match hive.store.claim_job(&hive.owner, hive.lease_ms()).await {
            Ok(Some(job)) => run_job(&hive, job).await,
            Ok(None) => {
                tokio::select! {
                    _ = hive.jobs_queued.notified() => {}
                    _ = tokio::time::sleep(POLL) => {}
                    _ = shutdown.changed() => {}
                }
            }
            Err(e) => {
                warn!(error = %e, "cannot claim a job");
                tokio::time::sleep(Duration::from_secs(1)).await;
            }
        }
    }
}

async fn run_job(hive: &Arc<Hive>, job: Job) {
    let kind = job.key.kind().as_str();
    if let Some(from) = &job.taken_from {
        warn!(job = job.id, kind, key = %job.key.key(), from = %from, "resumed a job whose lease ran out");
    }
    // Two workers never run one job: when the lease is lost, the job stops.
    let (heartbeat, mut lost) = heartbeat(hive, job.id);
    // A ticket's run that gets further before it fails starts its count of attempts afresh:
    // only failures without progress use them up.
    let progress = |store: Store, job: Job| async move {
        match job.key {
            JobKey::Ticket(key) => store.checkpoint_count(key).await.ok(),
            _ => None,
        }
    };
    let before = progress(hive.store.clone(), job.clone()).await;
    // A ticket's repository may set how its failures in passing are retried; other jobs keep
    // the defaults.
    let mut retry = crate::config::repo::Retry::default();
    let work = async {
        match &job.key {
            JobKey::Delivery(id) => super::deliveries::process(hive, job.id, id).await,
            JobKey::Ticket(key) => {
                let (result, settings) = super::run::run_ticket(hive, *key).await;
                retry = settings.unwrap_or(retry);
                result.map(|()| Done::Finished)
            }
            JobKey::Gates { ticket, sha, gate } => {
                super::rerun::rerun(hive, job.id, *ticket, sha, gate)
                    .await
                    .map(|()| Done::Finished)
            }
            JobKey::Sweep => super::sweep::sweep(hive).await.map(|()| Done::Finished),
            JobKey::Intervention(source) => super::intervene::carry_out(hive, source)
                .await
                .map(|()| Done::Finished),
            JobKey::Question(source) => super::ask::answer(hive, source)
                .instrument(info_span!("question", source = %source))
                .await
                .map(|()| Done::Finished),
        }
    };
    let result = tokio::select! {
        result = work => result,
        Ok(why) = &mut lost => {
            warn!(job = job.id, kind, key = %job.key.key(), why, "lease lost; stopping the job so that one worker runs it");
            crate::metrics::job_ran(kind, "lease_lost");
            return;
        }
    };
    heartbeat.abort();
    let store = &hive.store;
    let ran = match &result {
        Ok(_) => "done",
        Err(JobError::Transient(_)) => "retry",
        Err(JobError::Permanent(_)) => "failed",
    };
    crate::metrics::job_ran(kind, ran);
    let outcome = match result {
        Ok(Done::Recorded) => Ok(()),
        Ok(Done::Finished) => store.complete_job(job.id, &hive.owner).await,
        Err(e)
            if e.is_transient()
                && (job.attempts < i64::from(retry.human_intervention_after)
                    || before < progress(store.clone(), job.clone()).await) =>
        {
            let msg = e.to_string();
            let fresh = before < progress(store.clone(), job.clone()).await;
            let attempt = if fresh { 1 } else { job.attempts };
            let delay = i64::try_from(retry.delay_ms(attempt as u32)).unwrap_or(i64::MAX);
            warn!(job = job.id, kind, attempt, error = %msg, "job failed; will retry");
            store
                .retry_job(job.id, &hive.owner, delay, &msg, fresh)
                .await
        }
        // The retry engine's human-intervention report: the ticket waits for a person, who
        // may retry it from where it stopped.
        Err(e) if e.is_transient() && matches!(job.key, JobKey::Ticket(_)) => {
            let msg = e.to_string();
            warn!(job = job.id, kind, attempts = job.attempts, error = %msg, "ticket waits for a person after failures in passing");
            if let JobKey::Ticket(key) = &job.key {
                super::run::stalled(hive, *key, &msg, job.attempts).await;
            }
            store.complete_job(job.id, &hive.owner).await
        }
        Err(e) => {
            let msg = e.to_string();
            error!(job = job.id, kind, error = %msg, "job failed for good");
            failed_for_good(hive, &job.key, &msg).await;
            store.fail_job(job.id, &hive.owner, &msg).await
        }
    };
    if let Err(e) = outcome {
        warn!(job = job.id, error = %e, "cannot record the job's outcome; its lease will run out and it will run again");
    }
}

/// The job's heartbeat: it renews the lease every third of it. When it cannot — another worker
/// holds the job now, or the database does not answer in time — it says so on the receiver
/// before the lease can run out, and the job stops: two workers never run one job (they
/// would share its worktrees).
fn heartbeat(
    hive: &Hive,
    id: i64,
) -> (
    tokio::task::JoinHandle<()>,
    tokio::sync::oneshot::Receiver<&'static str>,
) {
    let (lost_tx, lost) = tokio::sync::oneshot::channel::<&'static str>();
    let store = hive.store.clone();
    let owner = hive.owner.clone();
    let lease = hive.lease;
    let lease_ms = hive.lease_ms();
    let beat = tokio::spawn(async move {
        let tick = lease / 3;
        let mut valid_until = Instant::now() + lease;
        loop {
            tokio::time::sleep(tick).await;
            let asked = Instant::now();
            match tokio::time::timeout(tick, store.renew_lease(id, &owner, lease_ms)).await {
                Ok(Ok(true)) => valid_until = asked + lease,
                Ok(Ok(false)) => {
                    let _ = lost_tx.send("another worker holds it now");
                    return;
                }
                Ok(Err(e)) => warn!(job = id, error = %e, "cannot renew lease"),
                Err(_) => warn!(job = id, "renewing the lease timed out"),
            }
            if Instant::now() + tick >= valid_until {
                let _ = lost_tx.send("it could not be renewed in time");
                return;
            }
        }
    });
    (beat, lost)
}

/// What a job that failed for good leaves behind, by kind: a failed ticket, a failed
/// delivery, the next sweep, the asker told, the intervention's page told.
async fn failed_for_good(hive: &Arc<Hive>, key: &JobKey, msg: &str) {
    let store = &hive.store;
    match key {
        JobKey::Ticket(key) => super::run::fail_ticket(hive, *key, msg).await,
        JobKey::Delivery(id) => {
            let _ = store.finish_delivery(id, "failed", Some(msg)).await;
        }
        // The re-run's check runs say what happened, if it got that far.
        JobKey::Gates { .. } => {}
        // Queue the next one, or the sweep would stop for good.
        JobKey::Sweep => {
            let every = hive.sweep_every.as_millis() as i64;
            let _ = store.enqueue_after(&JobKey::Sweep, every).await;
        }
        // The asker hears why there is no answer.
        JobKey::Question(source) => super::ask::failed(hive, source, msg).await,
        // The page shows why it was not carried out.
        JobKey::Intervention(source) => {
            if let Ok(Some(c)) = store.command_by_source(source).await {
                let reply = format!("Not carried out: {msg}");
                let _ = store
                    .finish_command(source, &c.command, "failed", &reply)
                    .await;
            }
        }
    }
}
