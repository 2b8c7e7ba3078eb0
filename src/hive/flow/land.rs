//! Landing the rebased and regated change, then the snapshot. `merge` lands it through the pull
//! request's own merge (`PUT …/pulls/{n}/merge` with `sha` = the regated commit, by
//! `merge.method`), the one way into a base branch that requires pull requests, so branch
//! protection decides and the pull request shows as merged; `fast-forward` moves the base
//! through the refs API instead, where protection allows it. GitHub's refusals each lead
//! somewhere: the head or the base moved, or the change conflicts → rebase again (bounded); a
//! review or a check is missing → wait for it (a review, a completed check run or the sweep
//! wakes the ticket; a check is heard again by `ci.rs` first); anything else → a person. A base
//! whose rules require a merge queue is landed through it instead (`queue.rs`). `snapshot` tags `auto-vX.Y.Z` and
//! `LATEST_STABLE` on the commit the landing put on the base — ours, or a person's merge by
//! hand — promotes the ticket's memory to Canonical and completes the ticket.

use super::ctx::enter_node;
use super::ctx::{Ctx, Step};
use super::ctx::{git, sync};
use super::state::{MAX_RELANDS, Node, Wait};
use crate::config::repo::MergeMethod;
use crate::github::GitHubError;
use crate::github::merge::{BranchRule, MergeRefusal};
use crate::hive::job::JobError;
use crate::ids::CommitSha;
use crate::ticket::{MemoryStability, TaskState};

fn base_branch(cx: &Ctx<'_, '_>) -> String {
    cx.base_branch()
}

/// Merge: land the regated commit on the base.
pub(super) async fn merge(cx: &mut Ctx<'_, '_>) -> Result<Step, JobError> {
    enter_node(cx).await?;
    let sha = cx
        .flow
        .land
        .rebased
        .clone()
        .ok_or_else(|| JobError::permanent("merge without a rebased commit"))?;
    // What the base's rules ask, read once: how to land, and what a refusal waits for.
    let base = base_branch(cx);
    let rule = match cx.run.client.branch_rule(&base).await {
        Ok(rule) => rule,
        Err(e) if e.is_transient() => return Err(e.into()),
        Err(e) => {
            tracing::warn!(error = %e, "cannot read the base branch's rules");
            None
        }
    };
    // A base that requires a merge queue is moved by its queue alone, whatever the method.
    if rule.as_ref().is_some_and(|r| r.merge_queue) {
        let pr = cx
            .flow
            .review
            .pr
            .ok_or_else(|| JobError::permanent("merge without a pull request"))?;
        return match super::queue::enqueue(cx, pr, &sha).await? {
            Ok(step) => Ok(step),
            Err(refusal) => refused(cx, &sha, refusal, rule.as_ref()).await,
        };
    }
    let landed = match cx.env.config.merge.method {
        MergeMethod::FastForward => fast_forward(cx, &sha).await?,
        configured => {
            let pr = cx
                .flow
                .review
                .pr
                .ok_or_else(|| JobError::permanent("merge without a pull request"))?;
            let (method, why) = method_under(rule.as_ref(), configured);
            if let Some(why) = why {
                cx.note(format!("Landing #{pr} by {}: {why}", method.as_str()))
                    .await?;
            }
            let t = &cx.run.ticket;
            let title = format!("{}: {} (#{pr})", t.id, t.title);
            let message = format!("Closes #{}.", t.issue_number);
            cx.run
                .client
                .merge_pull(pr, method.as_str(), &sha, &title, &message)
                .await?
        }
    };
    match landed {
        Ok(on_base) => {
            cx.flow.land.merged = Some(on_base.clone());
            cx.flow.land.waiting = None;
            cx.flow.next = Node::Snapshot;
            cx.checkpoint(
                Node::Merge,
                serde_json::json!({ "sha": sha.as_str(), "method": cx.env.config.merge.method.as_str() }),
                serde_json::json!({ "merged": on_base.as_str() }),
            )
            .await?;
            Ok(Step::Next)
        }
        Err(refusal) => refused(cx, &sha, refusal, rule.as_ref()).await,
    }
}

/// `merge.method: fast-forward`: the base moved to the regated commit itself.
async fn fast_forward(
    cx: &mut Ctx<'_, '_>,
    sha: &CommitSha,
) -> Result<Result<CommitSha, MergeRefusal>, JobError> {
    let reference = format!("heads/{}", base_branch(cx));
    if cx.run.client.get_ref(&reference).await?.as_deref() == Some(sha.as_str()) {
        return Ok(Ok(sha.clone()));
    }
    match cx.run.client.update_ref(&reference, sha, false).await {
        Ok(()) => Ok(Ok(sha.clone())),
        Err(GitHubError::Api {
            status, message, ..
        }) if status.as_u16() == 422 => Ok(Err(if message.contains("fast forward") {
            MergeRefusal::BaseMoved(message)
        } else {
            MergeRefusal::Refused {
                status: 422,
                message,
            }
        })),
        Err(e) => Err(e.into()),
    }
}

/// GitHub would not land `sha`: rebase again, wait, or ask a person (saying what `rule`, the
/// base's rules, asks).
async fn refused(
    cx: &mut Ctx<'_, '_>,
    sha: &CommitSha,
    refusal: MergeRefusal,
    rule: Option<&BranchRule>,
) -> Result<Step, JobError> {
    let base = base_branch(cx);
    let pr = cx.flow.review.pr.unwrap_or_default();
    let said = refusal.message().trim().to_owned();
    let inputs = serde_json::json!({ "sha": sha.as_str() });
    let outputs = serde_json::json!({ "refused": said });
    let wait = match &refusal {
        MergeRefusal::HeadMoved(_) | MergeRefusal::BaseMoved(_) | MergeRefusal::Conflicts(_) => {
            None
        }
        // Under a strict rule a head behind its base has every check "expected": a base that
        // moved since the rebase means rebase again, not wait.
        MergeRefusal::NeedsChecks(_) if base_moved(cx, &base).await? => None,
        MergeRefusal::NeedsChecks(_) => Some(Wait::Checks),
        MergeRefusal::NeedsReview(_) => Some(Wait::Review),
        MergeRefusal::Refused { status, .. } => {
            let hint = if *status == 403 {
                "The App may not merge here: give it the Contents and Pull requests write permissions, or merge the pull request yourself, then `/hive retry`.".to_owned()
            } else if said.contains("not allowed on this repository") {
                format!(
                    "Set `merge.method` in `.github/hive.yml` to a method `{}` allows (`rebase`, `squash` or `merge`), then `/hive retry`.",
                    cx.run.ticket.repo
                )
            } else {
                "Branch protection decides; satisfy it (or merge the pull request yourself), then `/hive retry`.".to_owned()
            };
            cx.checkpoint(Node::Merge, inputs, outputs).await?;
            let report = format!("GitHub refused to merge #{pr}: {said}\n\n{hint}");
            return cx.needs_human(&report).await;
        }
    };
    let Some(wait) = wait else {
        cx.flow.land.relands += 1;
        if cx.flow.land.relands > MAX_RELANDS {
            cx.checkpoint(Node::Merge, inputs, outputs).await?;
            let report = format!(
                "GitHub refused to merge #{pr} after {MAX_RELANDS} rebases: {said}\n\nThe base `{base}` keeps moving. Merge the pull request yourself, or `/hive retry` when it settles."
            );
            return cx.needs_human(&report).await;
        }
        cx.flow.land.waiting = None;
        cx.flow.land.rebased = None;
        cx.flow.next = Node::Rebase;
        cx.checkpoint(Node::Merge, inputs, outputs).await?;
        cx.note(format!(
            "GitHub did not merge #{pr}: {said} Rebasing onto `{base}` again ({} of {MAX_RELANDS}).",
            cx.flow.land.relands
        ))
        .await?;
        cx.publish().await?;
        return Ok(Step::Next);
    };
    cx.flow.land.waiting = Some(wait);
    if wait == Wait::Checks {
        // The checks are heard again before the next try: one that fails goes to the Builder.
        cx.flow.next = Node::Ci;
    }
    cx.checkpoint(Node::Merge, inputs, outputs).await?;
    let rule = rule
        .and_then(BranchRule::describe)
        .map(|r| format!(" `{base}` needs {r}."))
        .unwrap_or_default();
    let next = match wait {
        Wait::Review => "An approving review from someone with write access lets the bot land it.",
        Wait::Checks => "The bot lands it once they pass.",
    };
    let detail = format!(
        "Waiting to merge #{pr} (`{}`): {said}{rule} {next}",
        sha.short()
    );
    cx.settle(TaskState::AwaitingVerification, detail).await?;
    Ok(Step::Stop)
}

/// The merge method to land by under the base's rules, and why when it is not `configured`:
/// no merge commit under a linear history, and no rebase-merge (GitHub's new, unsigned
/// commits) where commits must be signed.
fn method_under(
    rule: Option<&BranchRule>,
    configured: MergeMethod,
) -> (MergeMethod, Option<&'static str>) {
    let Some(rule) = rule else {
        return (configured, None);
    };
    match configured {
        MergeMethod::Merge if rule.linear_history && rule.signatures => (
            MergeMethod::Squash,
            Some("the base's rules forbid merge commits and require signed commits"),
        ),
        MergeMethod::Merge if rule.linear_history => (
            MergeMethod::Rebase,
            Some("the base's rules forbid merge commits (a linear history)"),
        ),
        MergeMethod::Rebase if rule.signatures => (
            MergeMethod::Squash,
            Some("the base's rules require signed commits, which a rebase-merge would not keep"),
        ),
        method => (method, None),
    }
}

/// True when the base branch moved past the commit the change was rebased onto.
async fn base_moved(cx: &mut Ctx<'_, '_>, base: &str) -> Result<bool, JobError> {
    let tip = cx.run.client.get_ref(&format!("heads/{base}")).await?;
    Ok(tip.is_some() && tip.as_deref() != cx.flow.plan.base_sha.as_ref().map(CommitSha::as_str))
}

/// The names of a base's snapshots: the prefix of its tags and its stable tag.
pub(super) struct Series {
    pub prefix: String,
    pub stable: String,
}

impl Series {
    /// `auto-vX.Y.Z` and `LATEST_STABLE` on the branch the repository lands on (`base` in
    /// `.github/hive.yml`, else its default); a series of its own on a branch an issue chose,
    /// its slashes as dashes: `auto-release-1.x-v0.0.1`, `LATEST_STABLE-release-1.x`.
    pub(super) fn of(cx: &Ctx<'_, '_>) -> Self {
        let t = &cx.run.ticket;
        let usual = cx.env.config.base.as_deref().unwrap_or(&t.base_branch);
        match t.chosen_base.as_deref().filter(|b| *b != usual) {
            None => Self {
                prefix: "auto-v".into(),
                stable: "LATEST_STABLE".into(),
            },
            Some(branch) => {
                let slug = branch.replace('/', "-");
                Self {
                    prefix: format!("auto-{slug}-v"),
                    stable: format!("LATEST_STABLE-{slug}"),
                }
            }
        }
    }
}

/// The version of tag `name` in the series `prefix` (`auto-v1.2.3`: 1.2.3), if it is one.
fn version_of(prefix: &str, name: &str) -> Option<(u64, u64, u64)> {
    let mut parts = name.strip_prefix(prefix)?.split('.');
    let mut next = || parts.next()?.parse::<u64>().ok();
    let version = (next()?, next()?, next()?);
    parts.next().is_none().then_some(version)
}

/// The next `{prefix}X.Y.Z` after the highest one in `tags` (a patch bump).
pub(super) fn next_version(prefix: &str, tags: &[(String, String)]) -> String {
    let best = tags
        .iter()
        .filter_map(|(name, _)| version_of(prefix, name))
        .max();
    let (major, minor, patch) = best.map(|(a, b, c)| (a, b, c + 1)).unwrap_or((0, 0, 1));
    format!("{prefix}{major}.{minor}.{patch}")
}

/// Snapshot: tag, move `LATEST_STABLE`, promote the memory, complete.
pub(super) async fn snapshot(cx: &mut Ctx<'_, '_>) -> Result<Step, JobError> {
    let sha = cx
        .flow
        .land
        .merged
        .clone()
        .ok_or_else(|| JobError::permanent("snapshot without a merge"))?;
    let series = Series::of(cx);
    if cx.flow.land.tag.is_none() {
        sync(cx).await?;
        let tags = git(cx, |ws, g| ws.tags(g)).await?;
        let prefix = series.prefix.as_str();
        let tag = match tags
            .iter()
            .find(|(name, at)| at == sha.as_str() && version_of(prefix, name).is_some())
        {
            Some((name, _)) => name.clone(),
            None => {
                let mut tag = next_version(prefix, &tags);
                while !cx
                    .run
                    .client
                    .create_ref(&format!("tags/{tag}"), &sha)
                    .await?
                {
                    if cx
                        .run
                        .client
                        .get_ref(&format!("tags/{tag}"))
                        .await?
                        .as_deref()
                        == Some(sha.as_str())
                    {
                        break;
                    }
                    tag = next_version(prefix, &[(tag.clone(), String::new())]);
                }
                tag
            }
        };
        cx.flow.land.tag = Some(tag);
    }
    let stable = format!("tags/{}", series.stable);
    if !cx.run.client.create_ref(&stable, &sha).await? {
        cx.run.client.update_ref(&stable, &sha, true).await?;
    }
    // Merged: what the gates verified becomes Canonical, for later tickets.
    cx.promote_memory(MemoryStability::Canonical).await?;
    cx.flow.next = Node::Done;
    let tag = cx.flow.land.tag.clone().unwrap_or_default();
    cx.checkpoint(
        Node::Snapshot,
        serde_json::json!({ "sha": sha.as_str() }),
        serde_json::json!({ "tag": tag }),
    )
    .await?;
    let detail = match (&cx.flow.land.merged_by, cx.flow.review.pr) {
        (_, Some(pr)) if cx.flow.land.queue.is_some() => format!(
            "Pull request #{pr} was merged by `{}`'s merge queue as `{}`, tagged `{tag}`.",
            cx.base_branch(),
            sha.short()
        ),
        (Some(who), Some(pr)) => format!(
            "Pull request #{pr} was merged on GitHub by @{who} as `{}`, tagged `{tag}`.",
            sha.short()
        ),
        _ => format!("Merged as `{}`, tagged `{tag}`.", sha.short()),
    };
    cx.settle(TaskState::Completed, detail).await?;
    // Tickets that waited for this one's change plan again.
    super::knowledge::wake_dependents(cx).await?;
    cleanup(cx).await;
    Ok(Step::Stop)
}

/// Removes the ticket's worktrees and containers (when it ends, or on abort and reset).
pub(super) async fn cleanup(cx: &mut Ctx<'_, '_>) {
    let id = cx.run.ticket.id;
    let repo = cx.run.ticket.repo.clone();
    let branches = [id.feat_branch(), id.test_branch()];
    let _ = git(cx, move |ws, _| {
        for b in &branches {
            let _ = ws.drop_worktree(&repo, b);
        }
        Ok(())
    })
    .await;
    if let Err(e) = cx
        .run
        .hive
        .sandbox
        .remove_ticket(cx.run.ticket.repo.as_str(), &id.to_string())
        .await
    {
        tracing::warn!(error = %e, "cannot remove the ticket's containers");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_bump_the_patch() {
        let t = |names: &[&str]| {
            names
                .iter()
                .map(|n| (n.to_string(), String::new()))
                .collect::<Vec<_>>()
        };
        assert_eq!(next_version("auto-v", &[]), "auto-v0.0.1");
        assert_eq!(
            next_version(
                "auto-v",
                &t(&[
                    "auto-v0.0.1",
                    "auto-v0.0.10",
                    "auto-v0.0.9",
                    "v9.9.9",
                    "auto-vx",
                    "auto-v0.0.99.1"
                ])
            ),
            "auto-v0.0.11"
        );
        assert_eq!(next_version("auto-v", &t(&["auto-v1.2.3"])), "auto-v1.2.4");
        // A base's own series is apart from the default one's.
        let both = t(&["auto-v3.0.0", "auto-release-1.x-v1.0.4"]);
        assert_eq!(
            next_version("auto-release-1.x-v", &both),
            "auto-release-1.x-v1.0.5"
        );
        assert_eq!(next_version("auto-v", &both), "auto-v3.0.1");
    }

    #[test]
    fn the_merge_method_keeps_to_what_the_base_allows() {
        let rule = |linear_history, signatures| BranchRule {
            linear_history,
            signatures,
            ..BranchRule::default()
        };
        use MergeMethod::{Merge, Rebase, Squash};
        // (linear history, signatures, configured) → what it lands by.
        let cases = [
            (false, false, Merge, Merge),
            (true, false, Merge, Rebase),
            (true, true, Merge, Squash),
            (false, true, Rebase, Squash),
            (true, true, Squash, Squash),
        ];
        for (linear, signed, configured, landed) in cases {
            let (method, why) = method_under(Some(&rule(linear, signed)), configured);
            assert_eq!(method, landed, "{linear} {signed} {configured:?}");
            assert_eq!(why.is_some(), method != configured);
        }
        assert_eq!(method_under(None, Merge), (Merge, None));
    }
}
