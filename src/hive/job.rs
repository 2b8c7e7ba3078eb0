//! What every job of the hive shares: the [`Hive`] (store, GitHub App, workspace, models,
//! prompts, sandbox…), how a job ends ([`Done`]) or fails ([`JobError`], keeping the error it
//! came from), and [`blocking`] for git work off the async threads.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::Notify;

use crate::agent::prompts::Prompts;
use crate::github::{GitHubApp, GitHubError};
use crate::llm::LlmError;
use crate::llm::routing::Router;
use crate::store::Store;
use crate::workspace::{Author, Workspace, WorkspaceError};

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
    /// Where repositories' set-up environments are kept, and what setup may use of the network.
    pub environments: crate::env::Settings,
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
    pub(super) fn lease_ms(&self) -> i64 {
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

/// How a job failed. Either way the error it came from is kept, with its chain of causes;
/// `{}` shows them all ("pushing feat/T-1: the remote refused …").
#[derive(Debug, thiserror::Error)]
pub enum JobError {
    /// Worth another try later.
    #[error("{0:#}")]
    Transient(anyhow::Error),
    /// Trying again will not help; the message is for people.
    #[error("{0:#}")]
    Permanent(anyhow::Error),
}

impl JobError {
    /// A failure worth another try, said in words.
    pub fn transient(message: impl std::fmt::Display) -> Self {
        JobError::Transient(anyhow::Error::msg(message.to_string()))
    }

    /// A failure trying again will not mend, said in words for people.
    pub fn permanent(message: impl std::fmt::Display) -> Self {
        JobError::Permanent(anyhow::Error::msg(message.to_string()))
    }

    pub fn is_transient(&self) -> bool {
        matches!(self, JobError::Transient(_))
    }

    /// The ticket started over while this job ran: nothing of the job is to be kept, and
    /// nothing failed (the next run is the ticket's now).
    pub fn is_superseded(&self) -> bool {
        let (JobError::Transient(e) | JobError::Permanent(e)) = self;
        matches!(
            e.downcast_ref::<crate::store::StoreError>(),
            Some(crate::store::StoreError::Superseded(_))
        )
    }
}

impl From<GitHubError> for JobError {
    fn from(e: GitHubError) -> Self {
        if e.is_transient() {
            JobError::Transient(e.into())
        } else {
            JobError::Permanent(e.into())
        }
    }
}

impl From<crate::store::StoreError> for JobError {
    fn from(e: crate::store::StoreError) -> Self {
        JobError::Transient(e.into())
    }
}

impl From<LlmError> for JobError {
    fn from(e: LlmError) -> Self {
        match e {
            LlmError::Status { status, .. } if (400..500).contains(&status) && status != 429 => {
                JobError::Permanent(e.into())
            }
            _ => JobError::Transient(e.into()),
        }
    }
}

impl From<WorkspaceError> for JobError {
    fn from(e: WorkspaceError) -> Self {
        match e {
            // What ran in a sandbox tried to steer the bot's git: no retry makes that right.
            WorkspaceError::MissingBranch(_)
            | WorkspaceError::Tampered(_)
            | WorkspaceError::RuleViolation { .. } => JobError::Permanent(e.into()),
            _ => JobError::Transient(e.into()),
        }
    }
}

/// How long one git step of the bot (a fetch, a commit, a look at a worktree) may take before
/// its job fails: what a sandbox left behind must never hold a worker for good.
pub const GIT_DEADLINE: std::time::Duration = std::time::Duration::from_secs(600);

/// Runs git work (`f`) on a blocking thread within [`GIT_DEADLINE`]; a panic there is a
/// transient failure.
pub async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> Result<T, WorkspaceError> + Send + 'static,
) -> Result<T, JobError> {
    blocking_within(GIT_DEADLINE, f).await
}

/// [`blocking`] with its own deadline. Past it the job fails for good with the reason (the
/// thread is left to finish or not; the worker goes on).
pub async fn blocking_within<T: Send + 'static>(
    deadline: std::time::Duration,
    f: impl FnOnce() -> Result<T, WorkspaceError> + Send + 'static,
) -> Result<T, JobError> {
    match tokio::time::timeout(deadline, tokio::task::spawn_blocking(f)).await {
        Err(_) => Err(JobError::permanent(format!(
            "a git step of the bot did not finish within {deadline:?}: something in the repository or a worktree blocks it; the job stops here"
        ))),
        Ok(joined) => joined
            .map_err(|e| JobError::transient(format!("workspace task panicked: {e}")))?
            .map_err(JobError::from),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_git_step_past_its_deadline_fails_the_job_with_the_reason() {
        let (tx, rx) = std::sync::mpsc::channel::<()>();
        let stuck = blocking_within(std::time::Duration::from_millis(50), move || {
            // Blocks until the test ends, as an open() of a FIFO would.
            let _ = rx.recv();
            Ok(())
        });
        let e = stuck.await.unwrap_err();
        drop(tx);
        assert!(matches!(e, JobError::Permanent(_)), "{e}");
        assert!(e.to_string().contains("did not finish within 50ms"), "{e}");
    }
}
