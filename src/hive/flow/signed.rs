//! Pushing where rules require signed commits. A push GitHub refuses for commits without a
//! verified signature (`GH013`, "Commits must have verified signatures") is made through
//! GitHub's git database instead: the commits the remote lacks are made again, oldest first, by
//! the App — which GitHub signs — and the branch is moved to the last of them. From then on
//! every push of the ticket goes that way, and the mirror's branch follows, so later steps
//! build on the signed commits.

use std::collections::HashMap;

use super::ctx::{Ctx, git};
use crate::github::gitdb::TreeChange;
use crate::hive::job::JobError;
use crate::ids::CommitSha;
use crate::workspace::{Content, WorkspaceError};

/// Whether GitHub refused a push for commits without a verified signature.
pub(super) fn wants_signatures(e: &WorkspaceError) -> bool {
    matches!(e, WorkspaceError::RuleViolation { rules, .. }
        if rules.iter().any(|r| r.contains("verified signatures")))
}

/// Puts `head` on `branch` on GitHub through its API, from `lease` when given (the head the
/// branch must be at, `None`: absent; `Err(found)` when it is elsewhere); the head GitHub has
/// now. The mirror's branch moves to it.
pub(super) async fn push(
    cx: &mut Ctx<'_, '_>,
    branch: &str,
    head: &CommitSha,
    lease: Option<Option<&CommitSha>>,
) -> Result<Result<CommitSha, String>, JobError> {
    let new = make_again(cx, head).await?;
    let client = &cx.run.client;
    let reference = format!("heads/{branch}");
    let now = client.get_ref(&reference).await?;
    if let Some(expected) = lease
        && now.as_deref() != expected.map(CommitSha::as_str)
    {
        return Ok(Err(now.unwrap_or_default()));
    }
    if now.as_deref() != Some(new.as_str()) {
        match now {
            Some(_) => client.update_ref(&reference, &new, true).await?,
            None if client.create_ref(&reference, &new).await? => {}
            None => {
                return Err(JobError::transient(format!(
                    "{branch} appeared on GitHub while the bot made it"
                )));
            }
        }
    }
    // The mirror learns the commits GitHub made, and its branch follows.
    let token = cx.run.client.token().await?;
    super::git::fetch(&cx.run.hive.workspace, &cx.run.ticket.repo, token, branch).await?;
    let (b, n) = (branch.to_owned(), new.oid());
    git(cx, move |ws, g| ws.set_branch(g, &b, n)).await?;
    Ok(Ok(new))
}

/// Makes the commits of `head` that GitHub lacks again through its API, oldest first, each with
/// the tree, parents and message it has here; the commit standing for `head`.
async fn make_again(cx: &mut Ctx<'_, '_>, head: &CommitSha) -> Result<CommitSha, JobError> {
    let h = head.oid();
    let plan = git(cx, move |_, g| crate::workspace::to_replay(g, h)).await?;
    let client = cx.run.client.clone();
    let mut made: HashMap<git2::Oid, CommitSha> = HashMap::new();
    for c in &plan {
        let mut changes = Vec::with_capacity(c.changes.len());
        for ch in &c.changes {
            let sha = match &ch.content {
                Content::Blob(bytes) => Some(client.create_blob(bytes).await?),
                Content::Gitlink(id) => Some(id.to_string()),
                Content::Removed => None,
            };
            changes.push(TreeChange {
                path: ch.path.clone(),
                mode: ch.mode,
                sha,
            });
        }
        let base = c.base_tree.map(|t| t.to_string());
        let tree = client.create_tree(base.as_deref(), &changes).await?;
        if tree != c.tree.to_string() {
            return Err(JobError::permanent(format!(
                "GitHub made tree {tree} for commit {}, which has tree {}: nothing was sent",
                c.id, c.tree
            )));
        }
        let parents: Vec<CommitSha> = c
            .parents
            .iter()
            .map(|p| made.get(p).cloned().unwrap_or_else(|| CommitSha::from(*p)))
            .collect();
        let refs: Vec<&CommitSha> = parents.iter().collect();
        let commit = client.create_commit(&c.message, &tree, &refs).await?;
        if !commit.verified {
            tracing::warn!(sha = %commit.sha, "GitHub did not sign a commit the App made");
        }
        if cx.flow.code.signed.as_deref().is_none_or(str::is_empty) {
            cx.flow.code.signed = Some(commit.author_email.clone());
        }
        made.insert(c.id, commit.sha);
    }
    Ok(made.get(&h).cloned().unwrap_or_else(|| head.clone()))
}

/// Puts `head` on the bot's `branch` on GitHub, replacing what is there: a push, or — where
/// rules require signed commits — through GitHub's API. The head GitHub has now.
pub(super) async fn replace(
    cx: &mut Ctx<'_, '_>,
    branch: &str,
    head: &CommitSha,
) -> Result<CommitSha, JobError> {
    if cx.flow.code.signed.is_none() {
        let token = cx.run.client.token().await?;
        let (repo, b) = (cx.run.ticket.repo.clone(), branch.to_owned());
        match git(cx, move |ws, _| Ok(ws.push(&repo, &b, &token))).await? {
            Ok(()) => return Ok(head.clone()),
            Err(e) if wants_signatures(&e) => refused(cx, branch).await,
            Err(e) => return Err(e.into()),
        }
    }
    push(cx, branch, head, None)
        .await?
        .map_err(|found| JobError::transient(format!("{branch} moved to {found} meanwhile")))
}

/// GitHub refused a push of `branch` for unsigned commits: this ticket's commits go through
/// its API from now on.
pub(super) async fn refused(cx: &mut Ctx<'_, '_>, branch: &str) {
    cx.flow.code.signed = Some(String::new());
    let data = serde_json::json!({ "branch": branch, "why": "rules require signed commits" });
    cx.run.event("signed_commits", data).await;
}
