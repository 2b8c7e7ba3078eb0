//! What every node of one run shares ([`Ctx`]: the ticket's run, its flow state, its config and
//! its budget ledger) and what every node does with it: checkpoints, notes, the status comment,
//! moving the ticket's state (legally, and after the status comment says so), the signals people
//! sent, `/hive retry`, and the git steps of [`super::git`] on the ticket's repository.

use super::git;
use super::state::{Flow, Node, state_of};
use crate::env::Resolved;
use crate::hive::job::JobError;
use crate::hive::status::Extras;
use crate::hive::ticket_run::TicketRun;
use crate::ids::CommitSha;
use crate::llm::budget::Ledger;
use crate::ticket::{Signal, TaskState};
use crate::workspace::{Workspace, Worktree};

/// What a node tells the driver.
pub(super) enum Step {
    /// Go on to the flow's next node.
    Next,
    /// Stop here: the ticket waits for people, or reached a final state.
    Stop,
}

/// What every node of one run shares.
pub(super) struct Ctx<'r, 'a> {
    pub run: &'r mut TicketRun<'a>,
    pub flow: Flow,
    /// The repository's environment as resolved on the base; `env.config` is the effective
    /// config: `.github/hive.yml` with what the base's files show filled in.
    pub env: Resolved,
    pub ledger: Ledger,
}

impl Ctx<'_, '_> {
    /// Writes the checkpoint of `node` and the flow state after it.
    pub(super) async fn checkpoint(
        &self,
        node: Node,
        inputs: serde_json::Value,
        outputs: serde_json::Value,
    ) -> Result<(), JobError> {
        let flow = serde_json::to_value(&self.flow).unwrap_or_default();
        self.run
            .hive
            .store
            .checkpoint(
                self.run.ticket.key,
                node.as_str(),
                self.flow.attempt,
                &inputs,
                &outputs,
                &flow,
            )
            .await?;
        self.run.event("checkpoint", serde_json::json!({ "node": node.as_str(), "attempt": self.flow.attempt, "next": self.flow.next.as_str() })).await;
        Ok(())
    }

    /// Keeps a memory entry of this ticket (it rises with the ticket; Canonical ones feed later
    /// tickets of the repository).
    pub(super) async fn remember(
        &self,
        kind: &str,
        text: &str,
        stability: crate::ticket::MemoryStability,
    ) -> Result<(), JobError> {
        let t = &self.run.ticket;
        self.run
            .hive
            .store
            .add_memory(&t.repo, t.key, kind, text, stability)
            .await?;
        Ok(())
    }

    /// Says, on the ticket, where it stands (kept, and shown in the status comment).
    pub(super) async fn note(&mut self, detail: impl Into<String>) -> Result<(), JobError> {
        let detail = detail.into();
        self.run
            .hive
            .store
            .set_ticket_detail(self.run.ticket.key, &detail)
            .await?;
        self.run.ticket.detail = Some(detail);
        Ok(())
    }

    /// Saves the ledger and shows the spend from now on.
    pub(super) async fn book(&mut self) -> Result<(), JobError> {
        self.run
            .hive
            .store
            .save_budget(self.run.ticket.key, &self.ledger.by_role())
            .await?;
        self.run.spent = Some(self.ledger.total());
        Ok(())
    }

    /// Posts the status comment with the flow's plan and attempts.
    pub(super) async fn publish(&mut self) -> Result<(), JobError> {
        let extras = Extras {
            flow: Some(&self.flow),
            ..Extras::default()
        };
        self.run.publish(&extras).await
    }

    /// Moves the ticket to `to`, a state where it waits for people or ends, with `detail`: the
    /// spend is saved and the status comment (with the flow's plan and attempts) says so first.
    pub(super) async fn settle(
        &mut self,
        to: TaskState,
        detail: impl Into<String>,
    ) -> Result<(), JobError> {
        self.book().await?;
        let extras = Extras {
            flow: Some(&self.flow),
            ..Extras::default()
        };
        self.run.settle(to, &detail.into(), &extras).await
    }

    /// Stops for a person: HumanNeeded with a report, and the `hive:needs-human` label.
    pub(super) async fn needs_human(&mut self, report: &str) -> Result<Step, JobError> {
        self.book().await?;
        // Labelled, then reported, then the state moves: whoever sees HumanNeeded also sees
        // the label and the report.
        if let Err(e) = self
            .run
            .client
            .add_labels(self.run.ticket.issue_number, &["hive:needs-human"])
            .await
        {
            tracing::warn!(error = %e, "cannot label the issue");
        }
        let extras = Extras {
            flow: Some(&self.flow),
            ..Extras::default()
        };
        self.run.needs_human(report, &extras).await?;
        Ok(Step::Stop)
    }
}

/// Fetches the mirror and, the first time, fixes the base commit the work starts from.
pub(super) async fn sync(cx: &mut Ctx<'_, '_>) -> Result<CommitSha, JobError> {
    let token = cx.run.client.token().await?;
    let base = cx
        .env
        .config
        .base
        .clone()
        .unwrap_or_else(|| cx.run.ticket.base_branch.clone());
    let tip = git::fetch(&cx.run.hive.workspace, &cx.run.ticket.repo, token, &base).await?;
    Ok(cx.flow.base_sha.get_or_insert(tip).clone())
}

/// Resolves the effective config on the base commit: `.github/hive.yml` (as read) with the keys
/// it leaves unset filled from the base's files (ecosystems, a devcontainer). The mirror is
/// fetched only when the flow has no base commit yet or the mirror lacks it.
pub(super) async fn resolve_env(cx: &mut Ctx<'_, '_>) -> Result<(), JobError> {
    let tree_at = |base: CommitSha| {
        let oid = base.oid();
        move |_: &Workspace, repo: &git2::Repository| {
            Ok(crate::env::tree::Tree::of_commit(repo, oid)?)
        }
    };
    let known = match cx.flow.base_sha.clone() {
        Some(base) => git(cx, tree_at(base)).await.ok(),
        None => None,
    };
    let tree = match known {
        Some(tree) => tree,
        None => {
            let base = sync(cx).await?;
            git(cx, tree_at(base)).await?
        }
    };
    let yaml = cx.env.config.clone();
    cx.env = crate::env::resolve(yaml, &tree);
    Ok(())
}

/// The sandbox of `role` for a worktree, with the repository's environment (see
/// [`crate::hive::verify::sandbox_spec`]).
pub(super) async fn sandbox_spec(
    cx: &Ctx<'_, '_>,
    wt: &Worktree,
    role: &str,
    lock_tests: bool,
) -> Result<crate::sandbox::SandboxSpec, JobError> {
    Ok(crate::hive::verify::sandbox_spec(cx.run, &cx.env, wt, role, lock_tests).await?)
}

/// Runs `f` on the workspace and the ticket's mirror, off the async threads.
pub(super) async fn git<T: Send + 'static>(
    cx: &Ctx<'_, '_>,
    f: impl FnOnce(&Workspace, &git2::Repository) -> Result<T, crate::workspace::WorkspaceError>
    + Send
    + 'static,
) -> Result<T, JobError> {
    git::on_mirror(&cx.run.hive.workspace, &cx.run.ticket.repo, f).await
}

/// A scratch worktree `vibeloop/<name>-T-n` at `at` (or the base commit).
pub(super) async fn scratch(
    cx: &mut Ctx<'_, '_>,
    name: &str,
    at: Option<&CommitSha>,
) -> Result<Worktree, JobError> {
    let base = sync(cx).await?;
    let at = at.cloned().unwrap_or(base);
    let branch = format!("vibeloop/{name}-{}", cx.run.ticket.id);
    git::worktree(&cx.run.hive.workspace, &cx.run.ticket.repo, &branch, &at).await
}

pub(super) async fn drop_scratch(cx: &Ctx<'_, '_>, name: &str) {
    let branch = format!("vibeloop/{name}-{}", cx.run.ticket.id);
    git::drop_scratch(&cx.run.hive.workspace, &cx.run.ticket.repo, &branch).await
}

/// Commits an agent's work in the worktree (if it changed: tracked files, and the new files
/// in `written`), without pushing; the branch's head.
pub(super) async fn commit(
    cx: &Ctx<'_, '_>,
    wt: &Worktree,
    message: String,
    written: Vec<String>,
) -> Result<CommitSha, JobError> {
    let (ws, repo, author) = (
        &cx.run.hive.workspace,
        &cx.run.ticket.repo,
        &cx.run.hive.author,
    );
    git::commit(ws, repo, wt, message, written, author).await
}

/// Commits an agent's work in the worktree (if it changed: tracked files, and the new files
/// in `written`) and pushes its branch; the branch's head.
pub(super) async fn commit_push(
    cx: &Ctx<'_, '_>,
    wt: &Worktree,
    message: String,
    written: Vec<String>,
) -> Result<CommitSha, JobError> {
    let token = cx.run.client.token().await?;
    let (ws, repo, author) = (
        &cx.run.hive.workspace,
        &cx.run.ticket.repo,
        &cx.run.hive.author,
    );
    git::commit_push(ws, repo, token, wt, message, written, author).await
}

/// Moves the ticket to `target` along legal transitions (the shortest path in the table).
pub(super) async fn enter(cx: &mut Ctx<'_, '_>, target: TaskState) -> Result<(), JobError> {
    let from = cx.run.ticket.state;
    let path = from.path_to(target).ok_or_else(|| {
        JobError::permanent(format!("a ticket cannot go from {from} to {target}"))
    })?;
    for step in path {
        let current = cx.run.ticket.state;
        cx.run
            .hive
            .store
            .move_ticket(cx.run.ticket.key, current, step, None)
            .await?;
        cx.run.ticket.state = step;
        cx.run.ticket.detail = None;
    }
    Ok(())
}

/// Moves the ticket to the state of the node about to run.
pub(super) async fn enter_node(cx: &mut Ctx<'_, '_>) -> Result<(), JobError> {
    enter(cx, state_of(cx.flow.next)).await
}

/// Applies what people asked since the last node: abort, feedback, plan, approve, retry,
/// rebase, a landing on GitHub, a recheck. The signals are consumed in the same transaction that
/// stores the flow they changed. `Stop` when the ticket must not go on: aborted, landed by a
/// person before anything could be tagged, or parked (HumanNeeded, Failed) and nothing asked it
/// to resume. A stored signal this version cannot read is put on the timeline and left.
pub(super) async fn apply_signals(cx: &mut Ctx<'_, '_>) -> Result<Step, JobError> {
    let key = cx.run.ticket.key;
    let signals = cx.run.hive.store.pending_signals(key).await?;
    let mut resume = false;
    for s in &signals {
        let signal = match &s.signal {
            Ok(signal) => signal,
            Err(why) => {
                tracing::warn!(signal = s.id, why, "a signal this version cannot read");
                cx.run
                    .event(
                        "signal_unreadable",
                        serde_json::json!({ "id": s.id, "why": why, "author": s.author }),
                    )
                    .await;
                continue;
            }
        };
        cx.run
            .event(
                "signal",
                serde_json::json!({ "kind": signal.kind(), "author": s.author }),
            )
            .await;
        let ends = match signal {
            // GitHub closed the issue because the change landed: that is no stop.
            Signal::Abort { .. } if cx.flow.merged.is_some() && s.author == "github" => None,
            Signal::Abort { why } => {
                let why = match why.as_deref() {
                    None | Some("") => format!("Aborted by @{}.", s.author),
                    Some(w) => format!("Stopped: {w}. Relabel the issue to start again."),
                };
                Some((TaskState::Failed, why))
            }
            // The pull request was merged on GitHub: by the bot's own landing (already
            // recorded), or by a person — then the snapshot tags what their merge put on the
            // base (or, without its merge commit, the ticket just completes).
            Signal::Landed { pr, sha, by } if cx.flow.merged.is_none() => match sha {
                Some(sha) => {
                    cx.flow.merged = Some(sha.clone());
                    cx.flow.merged_by = by.clone();
                    cx.flow.waiting = None;
                    cx.flow.next = Node::Snapshot;
                    resume = true;
                    None
                }
                None => {
                    cx.flow.next = Node::Done;
                    let detail = format!("Pull request #{pr} was merged on GitHub by hand.");
                    Some((TaskState::Completed, detail))
                }
            },
            Signal::Landed { .. } => None,
            // A check completed or the sweep looked again: a landing that waits tries again.
            Signal::Recheck => {
                resume |= cx.flow.waiting.is_some();
                None
            }
            Signal::Feedback { text } => {
                cx.flow.feedback.push(format!("@{}: {text}", s.author));
                None
            }
            // Held for the Builder's next attempt: the one that starts now, if the change
            // waits for review or landing, else the next one the flow makes.
            Signal::Review {
                findings, threads, ..
            } => {
                cx.flow.review_findings.extend(findings.iter().cloned());
                cx.flow.review_threads.extend(threads.iter().cloned());
                match review_starts_attempt(&mut cx.flow) {
                    Some(true) => {
                        resume = true;
                        None
                    }
                    Some(false) => Some((TaskState::HumanNeeded, NO_ATTEMPT_FOR_REVIEW.to_owned())),
                    None => None,
                }
            }
            Signal::Plan => {
                // The issue may have been edited since this run loaded it.
                if let Some(t) = cx.run.hive.store.ticket(key).await? {
                    cx.run.ticket.title = t.title;
                    cx.run.ticket.body = t.body;
                }
                cx.flow.next = Node::Plan;
                cx.flow.blueprint = None;
                cx.flow.questions.clear();
                cx.flow.plan_approved = false;
                resume = true;
                None
            }
            Signal::Approve => {
                match cx.flow.next {
                    Node::AwaitPlanApproval => cx.flow.plan_approved = true,
                    _ => cx.flow.approved_by = Some(s.author.clone()),
                }
                resume = true;
                None
            }
            Signal::Rebase if cx.flow.pr.is_some() => {
                cx.flow.next = Node::Rebase;
                cx.flow.rebased = None;
                resume = true;
                None
            }
            Signal::Rebase => None,
            Signal::Retry { role } => {
                retry(
                    &mut cx.flow,
                    role.as_deref().unwrap_or(""),
                    cx.env.config.limits.max_retries,
                );
                resume = true;
                None
            }
        };
        if let Some((state, detail)) = ends {
            cx.settle(state, detail).await?;
            cx.run.cleanup().await;
            let last = signals.last().map(|s| s.id).unwrap_or(s.id);
            let flow = serde_json::to_value(&cx.flow).unwrap_or_default();
            cx.run.hive.store.consume_signals(key, last, &flow).await?;
            return Ok(Step::Stop);
        }
    }
    // Review comments that came while an attempt ran start the next one once it is done.
    if signals.is_empty() && review_starts_attempt(&mut cx.flow) == Some(true) {
        resume = true;
    }
    if let Some(last) = signals.last() {
        let flow = serde_json::to_value(&cx.flow).unwrap_or_default();
        cx.run
            .hive
            .store
            .consume_signals(key, last.id, &flow)
            .await?;
    }
    let parked = matches!(
        cx.run.ticket.state,
        TaskState::HumanNeeded | TaskState::Failed
    );
    if parked && !resume {
        return Ok(Step::Stop);
    }
    Ok(Step::Next)
}

/// People's review comments wait for the Builder; when the change is past its attempts (the
/// Critic, the approval, the landing) they start one, on the pull request's current head.
/// `Some(true)`: the flow moved to it; `Some(false)`: no attempt is left (the limit applies to
/// reviews too); `None`: nothing to start now.
pub(super) fn review_starts_attempt(flow: &mut Flow) -> Option<bool> {
    let past_attempts = matches!(
        flow.next,
        Node::Critic | Node::AwaitApproval | Node::Rebase | Node::Regate | Node::Merge
    );
    if flow.review_findings.is_empty() || !past_attempts || flow.builder.is_none() {
        return None;
    }
    if flow.attempt >= flow.attempt_limit {
        return Some(false);
    }
    flow.attempt += 1;
    flow.approved_by = None;
    flow.rebased = None;
    flow.waiting = None;
    flow.next = Node::Code;
    Some(true)
}

/// What a person reads when a review asks for changes and no attempt is left.
const NO_ATTEMPT_FOR_REVIEW: &str = "A review asks for changes, but the Builder has no attempts left. Its comments are kept for the next attempt: `/hive retry builder` starts one (or take over the branch yourself).";

/// Where `/hive retry [role]` starts again, with fresh attempts.
fn retry(flow: &mut Flow, role: &str, max_retries: u32) {
    match role {
        "architect" => {
            *flow = Flow {
                feedback: std::mem::take(&mut flow.feedback),
                ..Flow::default()
            };
        }
        "breaker" => {
            flow.breaker = None;
            flow.breaker_attempts = 0;
            flow.red_proof = None;
            flow.next = Node::Code;
        }
        "critic" if flow.pr.is_some() => {
            flow.critic = None;
            flow.critic_rounds = 0;
            flow.next = Node::Critic;
        }
        // A landing refused by GitHub or stopped by conflicts: land it again.
        _ if matches!(flow.next, Node::Rebase | Node::Merge) && flow.pr.is_some() => {
            flow.requeues = 0;
            if flow.next == Node::Rebase {
                flow.rebased = None;
            }
        }
        // The Builder, or the stage the ticket stopped in.
        _ => {
            if flow.blueprint.is_none() {
                flow.next = Node::Plan;
            } else {
                flow.next = Node::Code;
                flow.attempt += 1;
                flow.attempt_limit = flow.attempt + max_retries;
                flow.critic_rounds = 0;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hive::flow::state::Work;

    #[test]
    fn a_review_starts_an_attempt_only_past_the_attempts_and_within_the_limit() {
        let work = Work {
            attempt: 1,
            sha: CommitSha::parse(&"a".repeat(40)).unwrap(),
            files: vec![],
            summary: String::new(),
        };
        let mut f = Flow {
            next: Node::AwaitApproval,
            attempt: 1,
            attempt_limit: 2,
            builder: Some(work),
            approved_by: Some("maintainer".into()),
            ..Flow::default()
        };
        assert_eq!(
            review_starts_attempt(&mut f),
            None,
            "no review comment waits"
        );
        f.review_findings = vec![crate::ticket::Finding::new("review", "say why")];
        assert_eq!(review_starts_attempt(&mut f), Some(true));
        assert_eq!(
            (f.next, f.attempt, f.approved_by.clone()),
            (Node::Code, 2, None)
        );
        // While an attempt runs, comments wait for it to end.
        assert_eq!(review_starts_attempt(&mut f), None);
        f.next = Node::Critic;
        assert_eq!(
            review_starts_attempt(&mut f),
            Some(false),
            "no attempt left"
        );
        assert_eq!(f.next, Node::Critic);
    }

    #[test]
    fn retry_of_a_refused_landing_lands_again() {
        let mut f = Flow {
            next: Node::Merge,
            pr: Some(4),
            attempt: 2,
            attempt_limit: 4,
            requeues: 1,
            ..Flow::default()
        };
        retry(&mut f, "", 3);
        assert_eq!((f.next, f.attempt, f.requeues), (Node::Merge, 2, 0));
        let mut f = Flow {
            next: Node::Rebase,
            pr: Some(4),
            rebased: Some(CommitSha::parse(&"a".repeat(40)).unwrap()),
            requeues: 4,
            ..Flow::default()
        };
        retry(&mut f, "", 3);
        assert_eq!((f.next, f.rebased, f.requeues), (Node::Rebase, None, 0));
    }

    #[test]
    fn retry_starts_where_asked() {
        let work = || Work {
            attempt: 1,
            sha: CommitSha::parse(&"b".repeat(40)).unwrap(),
            files: vec![],
            summary: String::new(),
        };
        let mut f = Flow {
            next: Node::Done,
            blueprint: Some(Default::default()),
            breaker: Some(work()),
            builder: Some(work()),
            attempt: 3,
            attempt_limit: 3,
            ..Flow::default()
        };
        retry(&mut f, "builder", 2);
        assert_eq!(
            (f.next, f.attempt, f.attempt_limit, f.breaker.is_some()),
            (Node::Code, 4, 6, true)
        );
        retry(&mut f, "architect", 2);
        assert_eq!((f.next, f.blueprint.is_none()), (Node::Plan, true));
    }
}
