//! Gate re-runs asked on GitHub (`check_run.rerequested` for one gate, `check_suite.rerequested`
//! for all): the commit is checked out in a scratch worktree and the gates run again in a fresh
//! sandbox, as new check runs (GitHub shows them as the re-run).

use std::sync::Arc;

use tracing::{Instrument as _, info, info_span};

use super::run::{TicketRun, blocking};
use super::verify::{Verification, run_gates};
use super::{Hive, JobError};
use crate::config::repo::{HiveConfig, PATH as CONFIG_PATH};
use crate::ids::CommitSha;
use crate::store::jobs::Job;

/// Runs a `gates` job: key `<ticket row id>|<sha>|<gate or all>`.
pub async fn rerun(hive: &Arc<Hive>, job: &Job) -> Result<(), JobError> {
    let bad = || JobError::Permanent(format!("bad gates job key {:?}", job.key));
    let mut parts = job.key.split('|');
    let (Some(key), Some(sha), Some(gate)) = (parts.next(), parts.next(), parts.next()) else {
        return Err(bad());
    };
    let key: i64 = key.parse().map_err(|_| bad())?;
    let sha = CommitSha::parse(sha).map_err(|_| bad())?;
    let Some(ticket) = hive.store.ticket(key).await? else {
        return Err(JobError::Permanent(format!("ticket {key} is not stored")));
    };
    let span =
        info_span!("rerun", ticket = %ticket.id, repo = %ticket.repo, sha = sha.short(), gate);
    async move {
        let client = hive
            .github
            .repo(ticket.installation_id, &ticket.repo)
            .await?;
        let run = TicketRun {
            hive,
            client,
            ticket,
            spent: None,
        };
        let token = run.client.token().await?;
        let (workspace, repo, base) = (
            hive.workspace.clone(),
            run.ticket.repo.clone(),
            run.ticket.base_branch.clone(),
        );
        let scratch = format!("vibeloop/rerun-{}", job.id);
        let prepared = blocking({
            let (workspace, repo, scratch, sha) = (
                workspace.clone(),
                repo.clone(),
                scratch.clone(),
                sha.clone(),
            );
            move || {
                let git = workspace.sync_mirror(&repo, &token)?;
                let config = workspace.read_remote_file(&git, &base, CONFIG_PATH)?;
                let head = git2::Oid::from_str(sha.as_str())?;
                let base_tip = git2::Oid::from_str(workspace.remote_head(&git, &base)?.as_str())?;
                let merge_base = git.merge_base(head, base_tip)?;
                let worktree = workspace.worktree_at(&repo, &git, &scratch, head)?;
                Ok((config, CommitSha::from(merge_base), worktree))
            }
        })
        .await?;
        let (config_text, merge_base, worktree) = prepared;
        let config = HiveConfig::parse(config_text.as_deref().unwrap_or(""))
            .map_err(|e| JobError::Permanent(e.to_string()));
        let only = [gate];
        let result = match config {
            Ok(config) => {
                let v = Verification {
                    worktree: &worktree,
                    base: &merge_base,
                    head: &sha,
                    gates: (gate != "all").then_some(&only[..]),
                    run_id: format!("vibeloop:{}:rerun-{}", run.ticket.id, job.id),
                    role: "rerun",
                    tests: None,
                };
                run_gates(&run, &config, v).await.map(|results| {
                    for r in &results {
                        info!(gate = r.gate, result = %r.describe(), "re-run finished");
                    }
                })
            }
            Err(e) => Err(e),
        };
        let _ = blocking({
            let (workspace, repo) = (workspace.clone(), repo.clone());
            move || workspace.drop_scratch(&repo, &scratch)
        })
        .await;
        result
    }
    .instrument(span)
    .await
}
