//! The git steps the nodes share, each taking what it needs (the workspace, the repository, a
//! token, a worktree) rather than a ticket's whole context: fetching the mirror and reading the
//! base's tip, scratch worktrees, committing an agent's work and pushing a branch (after
//! `withhold`'s scan). All run off
//! the async threads.

use secrecy::SecretString;

use crate::agent::tools::WriteScope;
use crate::hive::job::{JobError, blocking, blocking_within};

/// How long a fetch of the mirror may take ([`crate::hive::job::GIT_DEADLINE`] is for the
/// steps that touch a worktree).
const FETCH_DEADLINE: std::time::Duration = std::time::Duration::from_secs(3600);
use crate::ids::{CommitSha, RepoName};
use crate::workspace::{Author, Workspace, Worktree};

/// Fetches the mirror of `repo`; the tip of `base` on the remote.
pub(super) async fn fetch(
    ws: &Workspace,
    repo: &RepoName,
    token: SecretString,
    base: &str,
) -> Result<CommitSha, JobError> {
    let (ws, repo, base) = (ws.clone(), repo.clone(), base.to_owned());
    // A first fetch of a large repository takes long; it reads no worktree.
    blocking_within(FETCH_DEADLINE, move || {
        let git = ws.sync_mirror(&repo, &token)?;
        ws.remote_head(&git, &base)
    })
    .await
}

/// Runs `f` on the workspace and the mirror of `repo`, off the async threads.
pub(super) async fn on_mirror<T: Send + 'static>(
    ws: &Workspace,
    repo: &RepoName,
    f: impl FnOnce(&Workspace, &git2::Repository) -> Result<T, crate::workspace::WorkspaceError>
    + Send
    + 'static,
) -> Result<T, JobError> {
    let (ws, repo) = (ws.clone(), repo.clone());
    blocking(move || {
        let git = git2::Repository::open_bare(ws.mirror_path(&repo))?;
        f(&ws, &git)
    })
    .await
}

/// A worktree of `branch` at `at`, with `room_mb` MiB its commands may write.
pub(super) async fn worktree(
    ws: &Workspace,
    repo: &RepoName,
    branch: &str,
    (at, room_mb): (&CommitSha, u64),
) -> Result<Worktree, JobError> {
    let (repo2, branch, at) = (repo.clone(), branch.to_owned(), at.oid());
    on_mirror(ws, repo, move |ws, g| {
        ws.worktree_at(&repo2, g, &branch, (at, room_mb))
    })
    .await
}

/// Removes scratch worktree `branch` (a failure is only logged: the next add clears it).
pub(super) async fn drop_scratch(ws: &Workspace, repo: &RepoName, branch: &str) {
    let (repo2, branch) = (repo.clone(), branch.to_owned());
    if let Err(e) = on_mirror(ws, repo, move |ws, _| ws.drop_scratch(&repo2, &branch)).await {
        tracing::warn!(error = %e, "cannot remove a scratch worktree");
    }
}

/// An agent's work in a worktree: the new files its tools wrote, and what it may change
/// (`None`: anything), whatever changed it — a tool, a command, a process left running.
pub(super) struct Work {
    pub written: Vec<String>,
    pub scope: Option<WriteScope>,
}

/// Commits an agent's work in `wt` (if it changed: tracked files, and the new files in
/// `written`, within its scope) as `author`, without pushing; the branch's head.
pub(super) async fn commit(
    ws: &Workspace,
    repo: &RepoName,
    wt: &Worktree,
    message: String,
    work: Work,
    author: &Author,
) -> Result<CommitSha, JobError> {
    let (wt, author) = (wt.clone(), author.clone());
    on_mirror(ws, repo, move |ws, g| {
        let within = |p: &str| work.scope.as_ref().is_none_or(|s| s.check(p).is_ok());
        ws.commit_written(&wt, &message, &author, &work.written, &within)?;
        let head = g
            .find_branch(&wt.branch, git2::BranchType::Local)?
            .get()
            .peel_to_commit()?
            .id();
        Ok(head.into())
    })
    .await
}
