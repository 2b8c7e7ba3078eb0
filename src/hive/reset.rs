//! `/hive reset <tag>` (admin only): the base branch goes back to a snapshot by a revert commit
//! whose tree is the tag's, made through GitHub's API so that GitHub signs it (a force push only
//! where `.github/hive.yml` allows it), and every open ticket of the repository stops, its
//! worktrees and containers removed.

use super::job::{Hive, JobError, blocking};
use crate::github::GitHubError;
use crate::ids::CommitSha;
use crate::ids::{InstallationId, RepoName};
use crate::ticket::Signal;

/// Who asks for the reset, of which repository.
pub(super) struct Requester<'a> {
    pub repo: &'a RepoName,
    pub installation: Option<InstallationId>,
    pub author: &'a str,
}

/// Runs the reset; `(reaction, reply, outcome)`.
pub(super) async fn reset(
    hive: &Hive,
    c: &Requester<'_>,
    tag: &str,
) -> Result<(&'static str, String, String), JobError> {
    let Some(installation) = c.installation else {
        return Ok((
            "confused",
            "this delivery names no installation".into(),
            "invalid".into(),
        ));
    };
    let client = hive.github.repo(installation, c.repo).await?;
    let base = client.default_branch().await?;
    let config = super::repo_config::load(&client, &base)
        .await?
        .map_err(|e| JobError::permanent(e.to_string()))?;
    let base = config.base.clone().unwrap_or(base);
    let signoff = config.commits.signoff
        || client
            .branch_rule(&base)
            .await?
            .is_some_and(|r| r.asks_signoff());
    let author = crate::workspace::Author {
        signoff,
        ..hive.author.clone()
    };
    let Some((target, tree, tip, same)) = find_tag(hive, &client, c.repo, tag, &base).await? else {
        return Ok((
            "confused",
            format!("there is no tag `{tag}`. Snapshots are named `auto-vX.Y.Z`."),
            "no such tag".into(),
        ));
    };
    let force = config.merge.allow_force_reset;
    // The revert is the App's commit made through GitHub's API: signed, as rules may require.
    let sha = match (force, same) {
        (true, _) => target,
        (false, true) => tip.clone(),
        (false, false) => {
            let who = c.author;
            let msg = author.message(&format!(
                "Reset {base} to {tag}\n\nRequested by @{who} with `/hive reset {tag}`."
            ));
            client
                .create_commit(&msg, &tree.to_string(), &[&tip])
                .await?
                .sha
        }
    };
    if sha != tip
        && let Err(e) = client
            .update_ref(&format!("heads/{base}"), &sha, force)
            .await
    {
        let why = match e {
            GitHubError::Api { message, .. } => message,
            other => other.to_string(),
        };
        let how = if force { "force" } else { "move" };
        return Ok((
            "-1",
            format!("GitHub refused to {how} `{base}` to `{tag}`: {why}"),
            "refused by GitHub".into(),
        ));
    }
    let stopped = stop_open_tickets(hive, c, tag).await?;
    let how = if force {
        "force-pushed"
    } else {
        "reverted by commit"
    };
    let reply = format!(
        "`{base}` is reset to `{tag}` ({how} `{}`). Open tickets stopped: {}.",
        sha.short(),
        if stopped.is_empty() {
            "none".to_owned()
        } else {
            stopped.join(", ")
        }
    );
    Ok(("+1", reply, format!("reset to {tag}")))
}

/// The tag's commit and tree, the base's tip, and whether the tip has the tag's tree, as the
/// mirror has them; `None` when there is no such tag.
async fn find_tag(
    hive: &Hive,
    client: &crate::github::RepoClient,
    repo: &RepoName,
    tag: &str,
    base: &str,
) -> Result<Option<(CommitSha, git2::Oid, CommitSha, bool)>, JobError> {
    let token = client.token().await?;
    let (ws, repo, tag_name, base) = (
        hive.workspace.clone(),
        repo.clone(),
        tag.to_owned(),
        base.to_owned(),
    );
    blocking(move || {
        let git = ws.sync_mirror(&repo, &token)?;
        let Ok(target) = git
            .find_reference(&format!("refs/tags/{tag_name}"))
            .and_then(|r| r.peel_to_commit())
        else {
            return Ok(None);
        };
        let tip = ws.remote_head(&git, &base)?;
        let same = git.find_commit(tip.oid())?.tree_id() == target.tree_id();
        Ok(Some((
            CommitSha::from(target.id()),
            target.tree_id(),
            tip,
            same,
        )))
    })
    .await
}

/// Stops every open ticket of the repository, saying why; their ids.
async fn stop_open_tickets(
    hive: &Hive,
    c: &Requester<'_>,
    tag: &str,
) -> Result<Vec<String>, JobError> {
    let mut stopped = Vec::new();
    for t in hive
        .store
        .tickets()
        .await?
        .into_iter()
        .filter(|t| &t.repo == c.repo && !t.state.is_final())
    {
        let abort = Signal::Abort {
            why: Some(format!("reset to {tag}")),
        };
        super::signal::send(hive, &t, &abort, c.author).await?;
        stopped.push(t.id.to_string());
    }
    Ok(stopped)
}
