//! Gate re-runs asked on GitHub (`check_run.rerequested` for one gate, `check_suite.rerequested`
//! for all): the commit is checked out in a scratch worktree and the gates run again in a fresh
//! sandbox, as new check runs (GitHub shows them as the re-run).

use std::sync::Arc;

use tracing::{Instrument as _, info, info_span};

use super::job::{Hive, JobError, blocking};
use super::ticket_run::TicketRun;
use super::verify::{Verification, run_gates};
use crate::ids::{CommitSha, TicketKey};

/// Runs gates job `job_id`: `gate` (or `all`) again on `sha` of ticket `key`.
pub async fn rerun(
    hive: &Arc<Hive>,
    job_id: i64,
    key: TicketKey,
    sha: &CommitSha,
    gate: &str,
) -> Result<(), JobError> {
    let Some(ticket) = hive.store.ticket(key).await? else {
        return Err(JobError::permanent(format!("ticket {key} is not stored")));
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
        // A re-run is judged as the ticket's own runs are: the base's known failures excused,
        // the Breaker's tests and the base's passing ones wanted by name.
        let flow = super::flow::state::load(&hive.store, key).await?;
        let token = run.client.token().await?;
        let config = super::repo_config::load(&run.client, run.ticket.config_branch())
            .await?
            .map_err(|e| JobError::permanent(e.to_string()));
        let base = match &config {
            Ok(c) => super::repo_config::landing_base(&run.ticket, c),
            Err(_) => run.ticket.config_branch().to_owned(),
        };
        let (workspace, repo) = (hive.workspace.clone(), run.ticket.repo.clone());
        let scratch = format!("vibeloop/rerun-{job_id}");
        let room = config.as_ref().map_or(0, |c| c.limits.disk_mb);
        let (merge_base, worktree, tree) = blocking({
            let (workspace, repo, scratch, head) =
                (workspace.clone(), repo.clone(), scratch.clone(), sha.oid());
            move || {
                let git = workspace.sync_mirror(&repo, &token)?;
                let base_tip = workspace.remote_head(&git, &base)?.oid();
                let merge_base = git.merge_base(head, base_tip)?;
                let worktree = workspace.worktree_at(&repo, &git, &scratch, (head, room))?;
                let tree = crate::env::tree::Tree::of_commit(&git, base_tip)?;
                Ok((CommitSha::from(merge_base), worktree, tree))
            }
        })
        .await?;
        let only = [gate];
        let result = match config {
            Ok(config) => {
                let mut env = crate::env::resolve(config, &tree);
                env.base_commit = Some(merge_base.clone());
                let v = Verification {
                    worktree: &worktree,
                    base: &merge_base,
                    head: sha,
                    gates: (gate != "all").then_some(&only[..]),
                    run_id: format!("vibeloop:{}:rerun-{}", run.ticket.id, job_id),
                    role: "rerun",
                    tests: None,
                    known_failures: &flow.known_failures(),
                    expect: &flow.expect(vec![]),
                };
                run_gates(&run, &env, v).await.map(|results| {
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
