//! The workflow's state ([`Flow`]), stored on the ticket at every checkpoint, its nodes
//! ([`Node`]), the signals people send, and moving the ticket's [`TaskState`] to where a node
//! needs it through legal transitions only.

use serde::{Deserialize, Serialize};

use super::{Ctx, Step, state_of};
use crate::gates::GateResult;
use crate::gates::redproof::Verdict;
use crate::hive::JobError;
use crate::ids::CommitSha;
use crate::ticket::Finding;
use crate::ticket::TaskState;
use crate::ticket::plan::Blueprint;

/// The nodes, in order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Node {
    #[default]
    Plan,
    PlanCheck,
    AwaitPlanApproval,
    /// The Breaker and the Builder, in parallel (each checkpointed as `breaker`, `builder`).
    Code,
    RedProof,
    Encounter,
    OpenPr,
    Critic,
    AwaitApproval,
    Rebase,
    Regate,
    Merge,
    Snapshot,
    Done,
}

impl Node {
    pub fn as_str(self) -> &'static str {
        match self {
            Node::Plan => "plan",
            Node::PlanCheck => "plan_check",
            Node::AwaitPlanApproval => "await_plan_approval",
            Node::Code => "code",
            Node::RedProof => "red_proof",
            Node::Encounter => "encounter",
            Node::OpenPr => "open_pr",
            Node::Critic => "critic",
            Node::AwaitApproval => "await_approval",
            Node::Rebase => "rebase",
            Node::Regate => "regate",
            Node::Merge => "merge",
            Node::Snapshot => "snapshot",
            Node::Done => "done",
        }
    }
}

/// A role's pushed work.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Work {
    /// The attempt that produced it.
    pub attempt: u32,
    pub sha: String,
    pub files: Vec<String>,
    pub summary: String,
}

/// One gate's result, as the status comment and the stall check need it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GateLine {
    pub gate: String,
    /// Nothing held the change back: passed, or skipped.
    pub passed: bool,
    /// It had no command (or was turned off): it checked nothing.
    #[serde(default)]
    pub skipped: bool,
    pub result: String,
}

/// One Builder attempt and what the gates said of it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Attempt {
    pub n: u32,
    pub sha: String,
    pub gates: Vec<GateLine>,
    /// What failed, in a form two identical failures share (stall detection).
    pub signature: String,
    /// A hash of the change's tree, so an unchanged retry is spotted.
    pub tree: String,
}

impl Attempt {
    pub fn from_gates(n: u32, sha: &str, tree: &str, gates: &[GateResult]) -> Self {
        let mut failing: Vec<String> = gates
            .iter()
            .filter(|g| !g.ok())
            .map(|g| {
                let mut places: Vec<String> = g
                    .annotations
                    .iter()
                    .map(|a| format!("{}:{}:{}", a.path, a.start_line, a.message))
                    .collect();
                places.sort();
                format!("{}|{}|{}", g.gate, g.status.as_str(), places.join(";"))
            })
            .collect();
        failing.sort();
        Self {
            n,
            sha: sha.to_owned(),
            gates: gates
                .iter()
                .map(|g| GateLine {
                    gate: g.gate.to_owned(),
                    passed: g.ok(),
                    skipped: g.is_skipped(),
                    result: g.describe(),
                })
                .collect(),
            signature: failing.join("\n"),
            tree: tree.to_owned(),
        }
    }

    pub fn passed(&self) -> bool {
        self.gates.iter().all(|g| g.passed)
    }
}

/// The Critic's verdict.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Review {
    pub approve: bool,
    pub summary: String,
    pub comments: usize,
    pub sha: String,
}

/// Everything a ticket's run has established so far.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Flow {
    pub next: Node,
    /// The Builder attempt in progress (1-based).
    pub attempt: u32,
    /// The last attempt allowed before a person is asked (`limits.max_retries` after the
    /// first, counted again from a `/hive retry`).
    pub attempt_limit: u32,
    /// The base commit the work started from.
    pub base_sha: Option<String>,
    pub blueprint: Option<Blueprint>,
    /// Open questions posted while Blocked.
    pub questions: Vec<String>,
    pub plan_approved: bool,
    pub breaker: Option<Work>,
    pub breaker_attempts: u32,
    /// What the Breaker must fix on its next attempt.
    pub breaker_findings: Vec<Finding>,
    /// How many findings the Reflector had on each version of the tests it checked.
    pub test_reflections: Vec<usize>,
    pub red_proof: Option<Verdict>,
    pub builder: Option<Work>,
    /// What the Builder must fix on its next attempt (gate failures, a Critic's veto).
    pub findings: Vec<Finding>,
    pub attempts: Vec<Attempt>,
    /// `/hive feedback` from people, given to every later agent.
    pub feedback: Vec<String>,
    pub pr: Option<u64>,
    pub pr_url: Option<String>,
    pub critic: Option<Review>,
    pub critic_rounds: u32,
    pub approved_by: Option<String>,
    /// The Builder's branch after the last rebase.
    pub rebased: Option<String>,
    /// Times the merge was sent back to the queue's tail (conflict strategy C).
    pub requeues: u32,
    /// Rebases because GitHub refused to land the change (the head or the base moved).
    pub relands: u32,
    /// What the landing waits for, when GitHub said a review or a check is missing.
    pub waiting: Option<Wait>,
    /// The head the bot last pushed to `feat/T-n` (the lease of its next push).
    pub pushed: Option<String>,
    /// The commit the landing put on the base.
    pub merged: Option<String>,
    /// Who merged the pull request, when a person did it on GitHub.
    pub merged_by: Option<String>,
    pub tag: Option<String>,
}

/// What a landing waits for before GitHub lets it merge.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Wait {
    /// An approving review by someone with write access.
    Review,
    /// Required checks to pass on the head.
    Checks,
}

/// Moves the ticket to `target` along legal transitions (the shortest path in the table).
pub(super) async fn enter(cx: &mut Ctx<'_, '_>, target: TaskState) -> Result<(), JobError> {
    let from = cx.run.ticket.state;
    let path = from.path_to(target).ok_or_else(|| {
        JobError::Permanent(format!("a ticket cannot go from {from} to {target}"))
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
/// rebase. The signals are consumed in the same transaction that stores the flow they changed.
/// `Stop` when the ticket must not go on: aborted, or parked (HumanNeeded, Failed) and nothing
/// asked it to resume.
pub(super) async fn apply_signals(cx: &mut Ctx<'_, '_>) -> Result<Step, JobError> {
    let key = cx.run.ticket.key;
    let signals = cx.run.hive.store.pending_signals(key).await?;
    let mut resume = false;
    for s in &signals {
        let text = |k: &str| {
            s.data
                .get(k)
                .and_then(|v| v.as_str())
                .unwrap_or_default()
                .to_owned()
        };
        cx.run
            .event(
                "signal",
                serde_json::json!({ "kind": s.kind, "author": s.author }),
            )
            .await;
        match s.kind.as_str() {
            "abort" => {
                let why = match text("why") {
                    w if w.is_empty() => format!("Aborted by @{}.", s.author),
                    w => format!("Stopped: {w}. Relabel the issue to start again."),
                };
                cx.settle(TaskState::Failed, why).await?;
                super::land::cleanup(cx).await;
                let last = signals.last().map(|s| s.id).unwrap_or(s.id);
                let flow = serde_json::to_value(&cx.flow).unwrap_or_default();
                cx.run.hive.store.consume_signals(key, last, &flow).await?;
                return Ok(Step::Stop);
            }
            // The pull request was merged on GitHub: by the bot's own landing (already
            // recorded), or by a person — then the snapshot tags what their merge put on the base.
            "landed" if cx.flow.merged.is_none() => {
                let sha = text("sha");
                if CommitSha::parse(&sha).is_err() {
                    let pr = s
                        .data
                        .get("pr")
                        .and_then(|v| v.as_u64())
                        .unwrap_or_default();
                    let detail = format!("Pull request #{pr} was merged on GitHub by hand.");
                    cx.flow.next = Node::Done;
                    cx.settle(TaskState::Completed, detail).await?;
                    super::land::cleanup(cx).await;
                    let last = signals.last().map(|s| s.id).unwrap_or(s.id);
                    let flow = serde_json::to_value(&cx.flow).unwrap_or_default();
                    cx.run.hive.store.consume_signals(key, last, &flow).await?;
                    return Ok(Step::Stop);
                }
                cx.flow.merged = Some(sha);
                cx.flow.merged_by = Some(text("by")).filter(|b| !b.is_empty());
                cx.flow.waiting = None;
                cx.flow.next = Node::Snapshot;
                resume = true;
            }
            // A check completed or the sweep looked again: a landing that waits tries again.
            "recheck" if cx.flow.waiting.is_some() => resume = true,
            "feedback" => cx
                .flow
                .feedback
                .push(format!("@{}: {}", s.author, text("text"))),
            "plan" => {
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
            }
            "approve" => {
                match cx.flow.next {
                    Node::AwaitPlanApproval => cx.flow.plan_approved = true,
                    _ => cx.flow.approved_by = Some(s.author.clone()),
                }
                resume = true;
            }
            "rebase" if cx.flow.pr.is_some() => {
                cx.flow.next = Node::Rebase;
                cx.flow.rebased = None;
                resume = true;
            }
            "retry" => {
                retry(&mut cx.flow, &text("role"), cx.config.limits.max_retries);
                resume = true;
            }
            _ => {}
        }
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
    use TaskState::*;

    #[test]
    fn paths_go_through_legal_states_only() {
        assert_eq!(
            Pending.path_to(InProgress),
            Some(vec![Preparing, Validating, InProgress])
        );
        assert_eq!(HumanNeeded.path_to(InProgress), Some(vec![InProgress]));
        assert_eq!(
            Failed.path_to(InProgress),
            Some(vec![Pending, Preparing, Validating, InProgress])
        );
        assert_eq!(Blocked.path_to(Preparing), Some(vec![Preparing]));
        assert_eq!(
            Preparing.path_to(HumanNeeded),
            Some(vec![Validating, HumanNeeded])
        );
        assert_eq!(Completed.path_to(Completed), Some(vec![]));
        assert_eq!(Completed.path_to(Pending), None);
    }

    #[test]
    fn flows_round_trip_and_default_to_plan() {
        let f: Flow = serde_json::from_value(serde_json::json!({})).unwrap();
        assert_eq!((f.next, f.attempt), (Node::Plan, 0));
        let mut f = Flow {
            next: Node::Critic,
            pr: Some(3),
            ..Flow::default()
        };
        f.feedback.push("x".into());
        let back: Flow = serde_json::from_value(serde_json::to_value(&f).unwrap()).unwrap();
        assert_eq!(back, f);
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
            rebased: Some("x".into()),
            requeues: 4,
            ..Flow::default()
        };
        retry(&mut f, "", 3);
        assert_eq!((f.next, f.rebased, f.requeues), (Node::Rebase, None, 0));
    }

    #[test]
    fn retry_starts_where_asked() {
        let mut f = Flow {
            next: Node::Done,
            blueprint: Some(Default::default()),
            breaker: Some(Work::default()),
            builder: Some(Work::default()),
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
