//! The hive: workers that take jobs from the store and run them — a webhook delivery
//! ([`deliveries`]) or a ticket's workflow ([`run`]). Each job holds a lease, renewed while it
//! works; a job that fails transiently is retried with backoff, and a ticket whose job fails
//! for good is marked Failed with the reason on its status comment.

mod agents;
pub mod checks;
pub mod deliveries;
pub mod flow;
pub mod intervene;
pub mod rerun;
mod reset;
pub mod run;
pub mod status;
mod steer;
pub mod sweep;
pub(crate) mod verify;

use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::sync::{Notify, watch};
use tracing::{Instrument as _, error, info_span, warn};

use crate::agent::prompts::Prompts;
use crate::github::{GitHubApp, GitHubError};
use crate::llm::LlmError;
use crate::llm::routing::Router;
use crate::store::Store;
use crate::store::jobs::{Job, JobKind};
use crate::workspace::{Author, Workspace, WorkspaceError};

/// Workers look for due jobs at least this often (a queued job wakes them sooner).
const POLL: Duration = Duration::from_millis(500);
/// Claims of one job before it fails for good.
const MAX_JOB_ATTEMPTS: i64 = 3;

/// Everything a worker needs.
pub struct Hive {
    pub store: Store,
    pub github: Arc<GitHubApp>,
    pub workspace: Workspace,
    /// Which model each role uses, and the price table.
    pub models: Arc<Router>,
    pub prompts: Prompts,
    /// Where gate commands run.
    pub sandbox: crate::sandbox::Backend,
    pub author: Author,
    /// This process's lease-owner name.
    pub owner: String,
    /// How often the sweep runs.
    pub sweep_every: Duration,
    /// How long a job's lease lasts unless renewed (renewed every third of it).
    pub lease: Duration,
    pub jobs_queued: Arc<Notify>,
}

impl Hive {
    fn lease_ms(&self) -> i64 {
        self.lease.as_millis() as i64
    }
}

/// How a job succeeded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Done {
    /// The job is done; the worker marks it so.
    Finished,
    /// The handler already marked the job done, in the transaction that recorded its result.
    Recorded,
}

/// How a job failed.
#[derive(Debug, thiserror::Error)]
pub enum JobError {
    /// Worth another try later.
    #[error("{0}")]
    Transient(String),
    /// Trying again will not help; the message is for people.
    #[error("{0}")]
    Permanent(String),
}

impl From<GitHubError> for JobError {
    fn from(e: GitHubError) -> Self {
        if e.is_transient() {
            JobError::Transient(e.to_string())
        } else {
            JobError::Permanent(e.to_string())
        }
    }
}

impl From<crate::store::StoreError> for JobError {
    fn from(e: crate::store::StoreError) -> Self {
        JobError::Transient(e.to_string())
    }
}

impl From<LlmError> for JobError {
    fn from(e: LlmError) -> Self {
        match e {
            LlmError::Status { status, .. } if (400..500).contains(&status) && status != 429 => {
                JobError::Permanent(e.to_string())
            }
            _ => JobError::Transient(e.to_string()),
        }
    }
}

impl From<WorkspaceError> for JobError {
    fn from(e: WorkspaceError) -> Self {
        match e {
            WorkspaceError::MissingBranch(_) => JobError::Permanent(e.to_string()),
            _ => JobError::Transient(e.to_string()),
        }
    }
}

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
    if let Some(from) = &job.taken_from {
        warn!(job = job.id, kind = job.kind.as_str(), key = %job.key, from = %from, "resumed a job whose lease ran out");
    }
    // The heartbeat renews the lease every third of it. When it cannot — another worker holds
    // the job now, or the database does not answer in time — it says so before the lease can run
    // out, and the job stops: two workers never run one job (they would share its worktrees).
    let (lost_tx, mut lost) = tokio::sync::oneshot::channel::<&'static str>();
    let heartbeat = {
        let store = hive.store.clone();
        let owner = hive.owner.clone();
        let id = job.id;
        let lease = hive.lease;
        let lease_ms = hive.lease_ms();
        tokio::spawn(async move {
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
        })
    };
    // A ticket's run that gets further before it fails starts its count of attempts afresh:
    // only failures without progress use them up.
    let progress = |store: Store, job: Job| async move {
        match (job.kind, job.key.parse::<i64>()) {
            (JobKind::Ticket, Ok(key)) => store.checkpoint_count(key).await.ok(),
            _ => None,
        }
    };
    let before = progress(hive.store.clone(), job.clone()).await;
    let work = async {
        match job.kind {
            JobKind::Delivery => deliveries::process(hive, &job).await,
            JobKind::Ticket => run::run_ticket(hive, &job.key)
                .await
                .map(|()| Done::Finished),
            JobKind::Gates => rerun::rerun(hive, &job).await.map(|()| Done::Finished),
            JobKind::Sweep => sweep::sweep(hive).await.map(|()| Done::Finished),
        }
    };
    let result = tokio::select! {
        result = work => result,
        Ok(why) = &mut lost => {
            warn!(job = job.id, kind = job.kind.as_str(), key = %job.key, why, "lease lost; stopping the job so that one worker runs it");
            crate::metrics::job_ran(job.kind.as_str(), "lease_lost");
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
    crate::metrics::job_ran(job.kind.as_str(), ran);
    let outcome = match result {
        Ok(Done::Recorded) => Ok(()),
        Ok(Done::Finished) => store.complete_job(job.id, &hive.owner).await,
        Err(JobError::Transient(msg))
            if job.attempts < MAX_JOB_ATTEMPTS
                || before < progress(store.clone(), job.clone()).await =>
        {
            let fresh = before < progress(store.clone(), job.clone()).await;
            let attempt = if fresh { 1 } else { job.attempts };
            let delay = 2_000 * 4i64.pow(attempt as u32 - 1);
            warn!(job = job.id, kind = job.kind.as_str(), attempt, error = %msg, "job failed; will retry");
            store
                .retry_job(job.id, &hive.owner, delay, &msg, fresh)
                .await
        }
        Err(e) => {
            let msg = e.to_string();
            error!(job = job.id, kind = job.kind.as_str(), error = %msg, "job failed for good");
            match job.kind {
                JobKind::Ticket => run::fail_ticket(hive, &job.key, &msg).await,
                JobKind::Delivery => {
                    let _ = store.finish_delivery(&job.key, "failed", Some(&msg)).await;
                }
                // The re-run's check runs say what happened, if it got that far.
                JobKind::Gates => {}
                // Queue the next one, or the sweep would stop for good.
                JobKind::Sweep => {
                    let every = hive.sweep_every.as_millis() as i64;
                    let _ = store.enqueue_after(JobKind::Sweep, sweep::KEY, every).await;
                }
            }
            store.fail_job(job.id, &hive.owner, &msg).await
        }
    };
    if let Err(e) = outcome {
        warn!(job = job.id, error = %e, "cannot record the job's outcome; its lease will run out and it will run again");
    }
}
