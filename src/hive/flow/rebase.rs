//! Getting an approved change ready to land: `rebase` replays it onto the current base as one
//! commit (a conflict is solved by the formatter when it is only whitespace — strategy A —, by a
//! model in a `merge-resolve-tmp` worktree when the repository allows — B, whose result the
//! regate judges like any other —, or else the branch is marked failed (check run `hive/merge`)
//! and the ticket sent back behind its repository's queued tickets, in the lane where the
//! repository's requeued tickets run one at a time until they land — C) and pushes it to the pull
//! request's branch with a lease. Gating that commit is [`super::regate`]'s, landing it
//! [`super::land`]'s.

use std::time::Duration;

use super::ctx::enter_node;
use super::ctx::{Ctx, Step};
use super::ctx::{git, sync};
use super::state::{MergeConflict, Node};
use crate::github::checks::{CheckOutput, Conclusion};
use crate::hive::job::JobError;
use crate::ids::CommitSha;
use crate::ticket::Finding;
use crate::workspace::{Conflict, Squashed};

const MAX_REQUEUES: u32 = 3;

/// True when a conflict is only about formatting: the base branch changed the file's
/// whitespace alone (someone ran a formatter), or both sides agree but for whitespace. Taking
/// the change's side and running the formatter then loses nothing.
fn formatting_only(c: &Conflict) -> bool {
    fn squash(b: &Option<Vec<u8>>) -> Option<Vec<u8>> {
        b.as_ref().map(|b| {
            b.iter()
                .filter(|c| !c.is_ascii_whitespace())
                .copied()
                .collect()
        })
    }
    let (ours, theirs) = (squash(&c.ours), squash(&c.theirs));
    ours.is_some() && theirs.is_some() && (ours == theirs || ours == squash(&c.ancestor))
}

/// Rebase: the change as one commit on the current base.
pub(super) async fn rebase(cx: &mut Ctx<'_, '_>) -> Result<Step, JobError> {
    enter_node(cx).await?;
    let from = sync(cx).await?;
    let head = cx
        .flow
        .code
        .builder
        .as_ref()
        .map(|w| w.sha.clone())
        .ok_or_else(|| JobError::permanent("nothing to rebase"))?;
    let base_branch = cx.base_branch();
    let (id, title, issue) = (
        cx.run.ticket.id,
        cx.run.ticket.title.clone(),
        cx.run.ticket.issue_number,
    );
    // What people pushed to the branch is part of the change: the rebase starts from the
    // branch's head on GitHub when it holds commits the bot did not write.
    let mut lease = None;
    let head = match super::people::adopt_people(cx, &head).await? {
        Some(theirs) => {
            lease = Some(theirs.clone());
            theirs
        }
        None => head,
    };
    if super::proof::retake_red_proof(cx, Node::Rebase).await? {
        return Ok(Step::Next);
    }
    let message = format!(
        "{id}: {title}\n\nCloses #{issue}.{}",
        co_authors(&cx.flow.code.people)
    );
    let (author, bb) = (cx.author().await?, base_branch.clone());
    let (f, h) = (from.oid(), head.oid());
    let msg = message.clone();
    let (tip, squashed) = git(cx, move |ws, g| {
        let tip = ws.remote_head(g, &bb)?;
        let t = git2::Oid::from_str(tip.as_str())?;
        Ok((tip, ws.squash_onto(g, f, h, t, &msg, &author)?))
    })
    .await?;
    // `feat/T-n`'s head on GitHub as the bot knows it: the lease of the push below.
    let expected = lease.or_else(|| {
        cx.flow
            .code
            .pushed
            .clone()
            .or_else(|| cx.flow.code.builder.as_ref().map(|w| w.sha.clone()))
    });
    // The files a model merged (strategy B), said on the merge once it is on GitHub.
    let mut by_model = None;
    let rebased = match squashed {
        Squashed::Clean(sha) => sha,
        Squashed::Conflicts(conflicts) => {
            match resolve(cx, &conflicts, &from, &head, &tip, &message).await? {
                Some((sha, strategy)) => {
                    if strategy == "B" {
                        by_model =
                            Some(conflicts.iter().map(|c| c.path.clone()).collect::<Vec<_>>());
                    }
                    sha
                }
                None => {
                    let branch_head = expected.unwrap_or(head);
                    return requeue(cx, &conflicts, &tip, &branch_head).await;
                }
            }
        }
    };
    let during = "of the rebased change";
    let rebased =
        match super::people::push_or_rerun(cx, &rebased, expected.as_ref(), during).await? {
            super::withhold::Pushed::Yes(head) => head,
            super::withhold::Pushed::Withheld(found) => {
                return super::withhold::builder_withheld(cx, Node::Rebase, found, during).await;
            }
        };
    if let Some(files) = by_model {
        model_merged(cx, &rebased, &tip, &files).await?;
    }
    cx.flow.code.pushed = Some(rebased.clone());
    cx.flow.land.rebased = Some(rebased.clone());
    // The change now sits on `tip`: a later rebase replays it from there (replaying the old
    // head from the new base would undo what the base gained in between).
    cx.flow.code.builder = cx.flow.code.builder.take().map(|w| super::state::Work {
        sha: rebased.clone(),
        ..w
    });
    cx.flow.plan.base_sha = Some(tip.clone());
    cx.flow.next = Node::Regate;
    let out = serde_json::json!({ "onto": tip.as_str(), "sha": rebased.as_str() });
    cx.checkpoint(
        Node::Rebase,
        serde_json::json!({ "head": head.as_str() }),
        out,
    )
    .await?;
    Ok(Step::Next)
}

/// `Co-authored-by` trailers for the people whose commits are in the change (GitHub credits
/// them on the landed commit), one per person; "" when there are none.
fn co_authors(people: &[crate::workspace::PersonCommit]) -> String {
    let mut seen = std::collections::BTreeSet::new();
    let lines: Vec<String> = people
        .iter()
        .filter(|p| seen.insert(p.email.to_lowercase()))
        .map(|p| {
            format!(
                "Co-authored-by: {} <{}>",
                p.name.replace(['<', '>', '\n'], ""),
                p.email.replace(['<', '>', '\n'], "")
            )
        })
        .collect();
    if lines.is_empty() {
        String::new()
    } else {
        format!("\n\n{}", lines.join("\n"))
    }
}

/// Strategy A (formatting-only conflicts and a formatter) or B (a model merges): the commit and
/// which strategy made it; `None` for C.
async fn resolve(
    cx: &mut Ctx<'_, '_>,
    conflicts: &[Conflict],
    from: &CommitSha,
    head: &CommitSha,
    tip: &CommitSha,
    message: &str,
) -> Result<Option<(CommitSha, &'static str)>, JobError> {
    let paths: Vec<&str> = conflicts.iter().map(|c| c.path.as_str()).collect();
    if let Some(formatter) = cx
        .env
        .config
        .merge
        .formatter
        .clone()
        .filter(|_| conflicts.iter().all(formatting_only))
    {
        // A: either side will do; take the change's, then let the formatter settle it.
        let (author, msg) = (cx.author().await?, message.to_owned());
        let (f, h, t) = (from.oid(), head.oid(), tip.oid());
        let taken = git(cx, move |ws, g| {
            ws.squash_taking_theirs(g, f, h, t, &msg, &author)
        })
        .await?;
        let wt = super::ctx::scratch(cx, "merge-format", Some(&taken)).await?;
        let spec = super::ctx::sandbox_spec(cx, &wt, "formatter", true).await?;
        let sandbox = cx.run.hive.sandbox.start(&spec).await?;
        let out = sandbox
            .exec(
                &formatter,
                Duration::from_secs(cx.env.config.limits.timeout_seconds),
            )
            .await;
        sandbox.stop().await;
        let out = out?;
        cx.run
            .event(
                "merge_strategy",
                serde_json::json!({ "strategy": "A", "files": paths, "formatter": out.describe() }),
            )
            .await;
        let author = cx.author().await?;
        let wt2 = wt.clone();
        let sha = git(cx, move |ws, g| {
            let committed = ws.commit_all(&wt2, "Formatting after the rebase", &author)?;
            let sha = match committed {
                Some(s) => s,
                None => g
                    .find_branch(&wt2.branch, git2::BranchType::Local)?
                    .get()
                    .peel_to_commit()?
                    .id()
                    .into(),
            };
            Ok(sha)
        })
        .await?;
        super::ctx::drop_scratch(cx, "merge-format").await;
        return Ok(Some((sha, "A")));
    }
    if cx.env.config.merge.resolve_with_model {
        cx.run
            .event(
                "merge_strategy",
                serde_json::json!({ "strategy": "B", "files": paths }),
            )
            .await;
        let merged = super::resolve::with_model(cx, conflicts, from, head, tip, message).await?;
        return Ok(merged.map(|sha| (sha, "B")));
    }
    Ok(None)
}

/// Strategy C: this attempt fails. `feat/T-n`'s head (`head`) is marked failed (check run
/// `hive/merge`, and the status comment); the ticket goes behind its repository's other queued
/// tickets, in the repository's lane of requeued tickets (one runs at a time, until it lands),
/// and the Builder redoes its change on the current base with the conflicts as findings; the
/// Critic and the approval then see the new change.
async fn requeue(
    cx: &mut Ctx<'_, '_>,
    conflicts: &[Conflict],
    tip: &CommitSha,
    head: &CommitSha,
) -> Result<Step, JobError> {
    let files: Vec<&str> = conflicts.iter().map(|c| c.path.as_str()).collect();
    cx.run
        .event(
            "merge_strategy",
            serde_json::json!({ "strategy": "C", "files": files }),
        )
        .await;
    cx.flow.land.requeues += 1;
    let conflict = MergeConflict {
        branch: cx.run.ticket.id.feat_branch(),
        head: head.clone(),
        base: cx.base_branch(),
        onto: tip.clone(),
        files: files.iter().map(|f| (*f).to_owned()).collect(),
        requeue: cx.flow.land.requeues,
        max_requeues: MAX_REQUEUES,
        model_refused: cx.env.config.merge.resolve_with_model,
        check_run_url: None,
    };
    let check_run_url = mark_failed(cx, &conflict).await?;
    cx.flow.land.conflict = Some(MergeConflict {
        check_run_url,
        ..conflict
    });
    if cx.flow.land.requeues > MAX_REQUEUES {
        let report = format!(
            "The change conflicts with `{}` in {} after {MAX_REQUEUES} tries. Resolve the conflict on `{}`, or `/hive retry` once the base settles.",
            cx.base_branch(),
            files.join(", "),
            cx.run.ticket.id.feat_branch()
        );
        cx.checkpoint(
            Node::Rebase,
            serde_json::json!({}),
            serde_json::json!({ "conflicts": files, "requeued": cx.flow.land.requeues }),
        )
        .await?;
        return cx.needs_human(&report).await;
    }
    cx.flow.code.findings = conflicts
        .iter()
        .map(|c| Finding {
            code: "conflict".into(),
            message: format!(
                "{}: the base branch changed this file since your change. Redo your change on its current version, keeping what the base added.",
                c.path
            ),
            path: Some(c.path.clone()),
        })
        .collect();
    cx.flow.plan.base_sha = Some(tip.clone());
    cx.flow.code.builder = None;
    cx.flow.land.rebased = None;
    cx.flow.review.approved_by = None;
    cx.flow.code.attempt += 1;
    cx.flow.code.attempt_limit = cx.flow.code.attempt_limit.max(cx.flow.code.attempt);
    cx.flow.next = Node::Code;
    cx.note(format!(
        "Rebase {} conflicted in {}: requeued behind the other work; the Builder redoes the change on the current base.",
        cx.flow.land.requeues,
        files.join(", ")
    ))
    .await?;
    cx.checkpoint(
        Node::Rebase,
        serde_json::json!({}),
        serde_json::json!({ "conflicts": files, "requeued": cx.flow.land.requeues }),
    )
    .await?;
    cx.publish().await?;
    let lane = format!("serial:{}", cx.run.ticket.repo);
    cx.run
        .hive
        .store
        .requeue_in_lane(cx.run.ticket.key, &lane)
        .await?;
    Ok(Step::Stop)
}

/// Marks `feat/T-n`'s head failed after a conflict: check run `hive/merge` (found again by its
/// external id on a resumed run), saying which files conflict and what happens next. Its link.
async fn mark_failed(cx: &mut Ctx<'_, '_>, c: &MergeConflict) -> Result<Option<String>, JobError> {
    let external = format!("vibeloop:{}:merge:{}", cx.run.ticket.id, c.requeue);
    let client = &cx.run.client;
    let run = client
        .ensure_check_run("hive/merge", &c.head, &external, "in_progress")
        .await?;
    let next = if c.requeue > c.max_requeues {
        format!(
            "No requeue is left after {}: a person decides. Resolve the conflict on `{}`, or `/hive retry` once the base settles.",
            c.max_requeues, c.branch
        )
    } else {
        format!(
            "The ticket is requeued ({} of {}) behind the repository's other queued tickets; the repository's requeued tickets run one at a time until they land. The Builder redoes the change on the current `{}`, then the Critic, the approval and the rebase follow again.",
            c.requeue, c.max_requeues, c.base
        )
    };
    let list: Vec<String> = c.files.iter().map(|f| format!("- `{f}`")).collect();
    let refused = if c.model_refused {
        "\n\nA model's merge of them (strategy B) was refused: it left conflict markers, or gave up."
    } else {
        ""
    };
    let output = CheckOutput {
        title: format!(
            "hive/merge: conflicts with {} in {}",
            c.base,
            c.files.join(", ")
        ),
        summary: format!(
            "Rebasing `{}` onto `{}` (`{}`) conflicts in:\n\n{}{refused}\n\n{next}",
            c.head.short(),
            c.base,
            c.onto.short(),
            list.join("\n")
        ),
    };
    client
        .complete_check_run(run.id, Conclusion::Failure, &output, &[])
        .await?;
    Ok(run.html_url)
}

/// Says on the merge a model made (strategy B), `sha` on GitHub, that a model wrote it: check
/// run `hive/merge`, beside the gates that judge it next.
async fn model_merged(
    cx: &mut Ctx<'_, '_>,
    sha: &CommitSha,
    tip: &CommitSha,
    files: &[String],
) -> Result<(), JobError> {
    let external = format!("vibeloop:{}:merge:model", cx.run.ticket.id);
    let client = &cx.run.client;
    let run = client
        .ensure_check_run("hive/merge", sha, &external, "in_progress")
        .await?;
    let list: Vec<String> = files.iter().map(|f| format!("- `{f}`")).collect();
    let output = CheckOutput {
        title: format!(
            "hive/merge: a model resolved the conflicts in {}",
            files.join(", ")
        ),
        summary: format!(
            "Rebasing the change onto `{}` conflicts in:\n\n{}\n\nA model resolved them in a `merge-resolve-tmp` worktree (strategy B): this commit is its merge. Every gate runs again on it before it can land; review the resolution in the pull request's diff.",
            tip.short(),
            list.join("\n")
        ),
    };
    client
        .complete_check_run(run.id, Conclusion::Success, &output, &[])
        .await?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn people_are_credited_once_each_and_cannot_break_the_trailer() {
        let person = |sha: &str, name: &str, email: &str| crate::workspace::PersonCommit {
            sha: CommitSha::parse(&sha.repeat(40)).unwrap(),
            name: name.into(),
            email: email.into(),
            summary: String::new(),
        };
        assert_eq!(co_authors(&[]), "");
        let people = [
            person("a", "Ada", "ada@example.com"),
            person("b", "Ada", "ADA@example.com"),
            person("c", "Eve <x>\nSigned-off-by: Mallory", "eve@example.com"),
        ];
        assert_eq!(
            co_authors(&people),
            "\n\nCo-authored-by: Ada <ada@example.com>\nCo-authored-by: Eve xSigned-off-by: Mallory <eve@example.com>"
        );
    }

    #[test]
    fn whitespace_only_conflicts_are_formatting() {
        let c = |anc: &str, a: &str, b: &str| Conflict {
            path: "a.py".into(),
            ancestor: Some(anc.into()),
            ours: Some(a.into()),
            theirs: Some(b.into()),
        };
        // Both sides agree but for spacing.
        assert!(formatting_only(&c("x = 0\n", "x = 1\n", "x=1\n")));
        // The base branch only reformatted what the change rewrote.
        assert!(formatting_only(&c("x = 0\n", "x=0\n", "x = 1\n")));
        // A real change on both sides.
        assert!(!formatting_only(&c("x = 0\n", "x = 1\n", "x = 2\n")));
        // The change only reformatted what the base changed: taking the change would lose it.
        assert!(!formatting_only(&c("x = 0\n", "x = 2\n", "x=0\n")));
        let deleted = Conflict {
            path: "a".into(),
            ancestor: None,
            ours: None,
            theirs: Some(b"x".to_vec()),
        };
        assert!(!formatting_only(&deleted));
    }
}
