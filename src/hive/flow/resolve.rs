//! Conflict strategy B: in a `merge-resolve-tmp` worktree on the current base, the conflicting
//! files are written with both sides between conflict markers, and a model (the Builder's route)
//! resolves them; the result is one commit, which then goes through every gate again.

use super::ctx::Ctx;
use super::ctx::{drop_scratch, git, scratch};
use crate::hive::agents::{Assignment, Role, run_role};
use crate::hive::job::JobError;
use crate::ids::CommitSha;
use crate::workspace::Conflict;

const NAME: &str = "merge-resolve-tmp";

/// `None` when the model left conflict markers or gave up: the caller falls back to strategy C.
pub(super) async fn with_model(
    cx: &mut Ctx<'_, '_>,
    conflicts: &[Conflict],
    from: &CommitSha,
    head: &CommitSha,
    tip: &CommitSha,
    message: &str,
) -> Result<Option<CommitSha>, JobError> {
    let (author, msg) = (cx.author().await?, message.to_owned());
    let (f, h, t) = (from.oid(), head.oid(), tip.oid());
    let start = git(cx, move |ws, g| {
        ws.squash_taking_theirs(g, f, h, t, &msg, &author)
    })
    .await?;
    let wt = scratch(cx, NAME, Some(&start)).await?;
    for c in conflicts {
        let text = format!(
            "<<<<<<< base branch\n{}=======\n{}>>>>>>> this change\n",
            String::from_utf8_lossy(c.ours.as_deref().unwrap_or_default()),
            String::from_utf8_lossy(c.theirs.as_deref().unwrap_or_default())
        );
        let path = crate::agent::paths::resolve(&wt.path, &c.path)
            .map_err(|e| JobError::permanent(e.message))?;
        std::fs::write(&path, text).map_err(|e| JobError::transient(e.to_string()))?;
    }
    let files: Vec<&str> = conflicts.iter().map(|c| c.path.as_str()).collect();
    let task = format!(
        "Rebasing this change onto the current base branch conflicts in {}. Each file holds both versions \
         between conflict markers (`<<<<<<< base branch`, `=======`, `>>>>>>> this change`). Rewrite each \
         file so it keeps what the base branch added and what this change does, without the markers. \
         Change nothing else.",
        files.join(", ")
    );
    let a = Assignment {
        role: Role::Builder,
        task,
        context_refs: &[],
        focus: &[],
        step_retry: 0,
        history: Vec::new(),
        sandbox: None,
        interrupt: None,
        instructions: cx.env.instructions.clone(),
    };
    let r = run_role(cx.run, &cx.env.config, &wt, &cx.ledger, a).await;
    let resolved = match r {
        Ok(_) => {
            let markers = conflicts.iter().any(|c| {
                crate::untrusted::files::read_text(&wt.path, &c.path, 16 << 20)
                    .ok()
                    .flatten()
                    .is_some_and(|t| t.contains("<<<<<<<") || t.contains(">>>>>>>"))
            });
            if markers {
                None
            } else {
                let (author, wt2) = (cx.author().await?, wt.clone());
                let msg = message.to_owned();
                let sha = git(cx, move |ws, g| {
                    // One commit on the base: the change and its resolution.
                    ws.commit_all(&wt2, "merge resolution", &author)?;
                    let resolved = g
                        .find_branch(&wt2.branch, git2::BranchType::Local)?
                        .get()
                        .peel_to_commit()?;
                    let base = g.find_commit(t)?;
                    let sig = git2::Signature::now(&author.name, &author.email)?;
                    let msg = author.message(&msg);
                    let oid = g.commit(None, &sig, &sig, &msg, &resolved.tree()?, &[&base])?;
                    Ok(CommitSha::from(oid))
                })
                .await?;
                Some(sha)
            }
        }
        Err(e) => {
            tracing::warn!(error = %e, "the model could not resolve the conflict");
            None
        }
    };
    drop_scratch(cx, NAME).await;
    Ok(resolved)
}
