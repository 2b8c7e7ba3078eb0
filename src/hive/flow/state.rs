//! The workflow's state ([`Flow`]), stored on the ticket at every checkpoint, and its nodes
//! ([`Node`]) with the [`TaskState`] the ticket shows while each runs. Plain data: what reads
//! and changes it lives in the nodes and in `ctx.rs`.

use serde::{Deserialize, Serialize};

use crate::gates::GateResult;
use crate::gates::expect::{Expect, TestVerdict, Wanted};
use crate::gates::redproof::Verdict;
use crate::ids::{CommitSha, TicketKey};
use crate::ticket::Finding;
use crate::ticket::TaskState;
use crate::ticket::plan::Blueprint;

/// Rebases after GitHub refused to land the change (the base or the head moved, the merge
/// queue took it out), before a person is asked.
pub const MAX_RELANDS: u32 = 3;

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
    /// The repository's own CI on the regated head.
    Ci,
    Merge,
    /// In the base's merge queue: its merge groups gated, until GitHub merges it.
    Queue,
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
            Node::Ci => "ci",
            Node::Merge => "merge",
            Node::Queue => "queue",
            Node::Snapshot => "snapshot",
            Node::Done => "done",
        }
    }
}

/// A role's pushed work.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Work {
    /// The attempt that produced it.
    #[serde(default)]
    pub attempt: u32,
    pub sha: CommitSha,
    #[serde(default)]
    pub files: Vec<String>,
    #[serde(default)]
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
    /// Passed, but counts only once a person approves: why.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub held: Option<String>,
}

/// One Builder attempt and what the gates said of it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Attempt {
    #[serde(default)]
    pub n: u32,
    pub sha: CommitSha,
    #[serde(default)]
    pub gates: Vec<GateLine>,
    /// What failed, in a form two identical failures share (stall detection).
    #[serde(default)]
    pub signature: String,
    /// A hash of the change's tree, so an unchanged retry is spotted.
    #[serde(default)]
    pub tree: String,
    /// The Breaker's tests with their verdicts on the base and on this attempt.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub verdicts: Vec<TestVerdict>,
    /// Which of the change's dependency files made its environment, and how it was set up.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub environment: Option<String>,
}

impl Attempt {
    pub fn from_gates(n: u32, sha: &CommitSha, tree: &str, gates: &[GateResult]) -> Self {
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
            sha: sha.clone(),
            gates: gates
                .iter()
                .map(|g| GateLine {
                    gate: g.gate.to_owned(),
                    passed: g.ok(),
                    skipped: g.is_skipped(),
                    result: g.describe(),
                    held: g.held.clone(),
                })
                .collect(),
            signature: failing.join("\n"),
            tree: tree.to_owned(),
            verdicts: gates.iter().flat_map(|g| g.verdicts.clone()).collect(),
            environment: gates
                .iter()
                .flat_map(|g| g.notes.iter())
                .find_map(|n| n.strip_prefix(crate::gates::ENVIRONMENT_NOTE))
                .map(|n| n.trim_end_matches('.').to_owned()),
        }
    }

    pub fn passed(&self) -> bool {
        self.gates.iter().all(|g| g.passed)
    }

    /// Why the attempt's green waits for a person ("the change edits files that steer the
    /// tests: `conftest.py` (added)"), if it does.
    pub fn held(&self) -> Option<&str> {
        self.gates.iter().find_map(|g| g.held.as_deref())
    }
}

/// The Critic's verdict.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Review {
    #[serde(default)]
    pub approve: bool,
    #[serde(default)]
    pub summary: String,
    #[serde(default)]
    pub comments: usize,
    pub sha: CommitSha,
}

/// Everything a ticket's run has established so far, grouped by the stage that sets it; each
/// group is stored flattened, so a stored flow is one object of every field, as before the
/// groups (`a_stored_flow_reads_and_writes_back_the_same`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Flow {
    pub next: Node,
    #[serde(flatten)]
    pub plan: Planning,
    #[serde(flatten)]
    pub tests: Testing,
    #[serde(flatten)]
    pub code: Coding,
    #[serde(flatten)]
    pub review: Reviewing,
    #[serde(flatten)]
    pub land: Landing,
}

/// What the work starts from, and its plan: the base and its tests, the Architect's plan, its
/// questions and approval, what people said. Stored flat in the flow (see [`Flow`]).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Planning {
    /// The base commit the work started from.
    pub base_sha: Option<CommitSha>,
    /// The tests on the unchanged base, before any model was asked.
    pub baseline: Option<Baseline>,
    pub blueprint: Option<Blueprint>,
    /// Open questions posted while Blocked.
    pub questions: Vec<String>,
    pub plan_approved: bool,
    /// Plan only (the plan-only label, `/hive plan` on an issue without a ticket): the plan
    /// waits for `/hive approve` or the hive's label, which builds it.
    pub plan_only: bool,
    /// Started by `/hive plan`, without a label: no label's removal stops it.
    pub unlabelled: bool,
    /// `/hive feedback` from people, given to every later agent.
    pub feedback: Vec<String>,
    /// The repository's instruction files (`AGENTS.md`…) the agents were given.
    pub instructions: std::collections::BTreeSet<String>,
    /// Who edited the issue after it was labelled without the permission to steer the ticket:
    /// the agents keep the text as labelled.
    pub edit_refused: Option<String>,
    /// The issue opened for what the plan needs and the project lacks
    /// (`knowledge.missing: dependency_ticket`): the ticket plans again once it lands.
    pub waits_for: Option<u64>,
}

/// The Breaker's tests and their red proof. Stored flat in the flow (see [`Flow`]).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Testing {
    pub breaker: Option<Work>,
    pub breaker_attempts: u32,
    /// What the Breaker must fix on its next attempt.
    pub breaker_findings: Vec<Finding>,
    /// How many findings the Reflector had on each version of the tests it checked.
    pub test_reflections: Vec<usize>,
    pub red_proof: Option<Verdict>,
    /// Tests people changed on `feat/T-n`: the test lock and the red proof were taken again
    /// from them.
    pub people_tests: Vec<PeopleTests>,
}

/// The Builder's attempts, what they must fix, and the commits on `feat/T-n`. Stored flat in the flow (see [`Flow`]).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Coding {
    /// The Builder attempt in progress (1-based).
    pub attempt: u32,
    /// The last attempt allowed before a person is asked (`retry.max_retries` after the
    /// first, counted again from a `/hive retry`).
    pub attempt_limit: u32,
    pub builder: Option<Work>,
    /// What the Builder must fix on its next attempt (gate failures, a Critic's veto).
    pub findings: Vec<Finding>,
    pub attempts: Vec<Attempt>,
    /// People's review comments waiting for the Builder's next attempt.
    pub review_findings: Vec<Finding>,
    /// Their threads, until a Builder attempt takes their comments…
    pub review_threads: Vec<crate::ticket::ReviewThread>,
    /// …and then, answered once that attempt passes.
    pub answering: Vec<crate::ticket::ReviewThread>,
    /// Commits people pushed to `feat/T-n`: part of the change, credited when it lands.
    pub people: Vec<crate::workspace::PersonCommit>,
    /// The head the bot last pushed to `feat/T-n` (the lease of its next push).
    pub pushed: Option<CommitSha>,
    /// Set once GitHub refused a push for unsigned commits: the ticket's commits are made
    /// through GitHub's API from then on (`flow/signed.rs`), and this is the email GitHub
    /// gives the App's commits there (`""` until the first is made).
    pub signed: Option<String>,
}

/// The pull request, the Critic's review and people's approval. Stored flat in the flow (see [`Flow`]).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Reviewing {
    pub pr: Option<u64>,
    pub pr_url: Option<String>,
    pub critic: Option<Review>,
    pub critic_rounds: u32,
    pub approved_by: Option<String>,
    /// Why an approval was withdrawn (a person pushed after it), until the next one.
    pub approval_withdrawn: Option<String>,
}

/// The landing: rebases, the repository's CI, GitHub's refusals, the merge queue, the merge
/// and its tag. Stored flat in the flow (see [`Flow`]).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Landing {
    /// The Builder's branch after the last rebase.
    pub rebased: Option<CommitSha>,
    /// Times the merge was sent back to the queue's tail (conflict strategy C).
    pub requeues: u32,
    /// The last rebase that conflicted and sent the ticket back (strategy C): what the status
    /// comment and the dashboard show.
    pub conflict: Option<MergeConflict>,
    /// Rebases because GitHub refused to land the change (the head or the base moved).
    pub relands: u32,
    /// What the landing waits for, when GitHub said a review or a check is missing.
    pub waiting: Option<Wait>,
    /// The landing through the base's merge queue, while the pull request is in it.
    pub queue: Option<Queued>,
    /// What the repository's own CI said of the pull request's heads.
    pub ci: CiWatch,
    /// The commit the landing put on the base.
    pub merged: Option<CommitSha>,
    /// Who merged the pull request, when a person did it on GitHub.
    pub merged_by: Option<String>,
    pub tag: Option<String>,
}

/// The repository's own CI, as the landing heard it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct CiWatch {
    /// Builder attempts its failures sent back (`ci.max_attempts` bounds them).
    pub charged: u32,
    /// GitHub Actions jobs the bot re-ran, as `(commit, check name)`: once each.
    pub reruns: Vec<(CommitSha, String)>,
    /// Checks that failed and then passed on the same commit: not charged to the Builder.
    pub flaky: Vec<(CommitSha, String)>,
}

/// A pull request in its base's merge queue (`flow/queue.rs`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Queued {
    /// The head the bot added to the queue.
    pub head: CommitSha,
    /// The merge group GitHub last asked checks of.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub group: Option<Group>,
}

/// A merge group: the change on what the queue put before it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Group {
    pub head: CommitSha,
    /// The base commit it was made on, where GitHub said (else the head's first parent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub base: Option<CommitSha>,
    /// Whether the gates passed on it (`None`: not gated yet).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub passed: Option<bool>,
}

/// A rebase onto the base that conflicted (strategy C): `feat/T-n`'s head `head` is marked
/// failed (check run `hive/merge`), and the ticket goes back to the queue.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MergeConflict {
    /// `feat/T-n`.
    pub branch: String,
    pub head: CommitSha,
    /// The base branch, and the commit of it the change did not rebase onto.
    pub base: String,
    pub onto: CommitSha,
    pub files: Vec<String>,
    /// Which requeue this was (`Flow::requeues`), and how many are allowed.
    pub requeue: u32,
    pub max_requeues: u32,
    /// A model's merge (strategy B) was tried and refused first.
    #[serde(default)]
    pub model_refused: bool,
    /// The `hive/merge` check run.
    #[serde(default)]
    pub check_run_url: Option<String>,
}

/// Tests a person changed in their commits on `feat/T-n`, adopted as the Breaker's: `tests` is
/// the commit on `test/T-n` that holds them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PeopleTests {
    /// Whose commits changed them.
    pub by: Vec<String>,
    pub paths: Vec<String>,
    pub tests: CommitSha,
}

/// What the test command showed on the unchanged base.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Baseline {
    pub sha: CommitSha,
    pub counts: Option<crate::gates::test_results::TestCounts>,
    /// Tests that already fail on the base: later judgements leave them out.
    #[serde(default)]
    pub failing: Vec<String>,
    /// Tests that pass on the base: every later run must still see them pass, by name.
    #[serde(default)]
    pub passing: Vec<Wanted>,
    /// What lint and typecheck report on the base: the repository's, never the change's.
    #[serde(default)]
    pub known_findings: Vec<crate::gates::debt::Known>,
}

impl Flow {
    /// What the test gate must see passing: the Breaker's tests, by name (what the red proof
    /// saw), and the base's passing tests but those of the Breaker's files (its own now) and
    /// of `excused` (files the base changed since the baseline).
    pub fn expect(&self, excused: Vec<String>) -> Expect {
        let breaker: Vec<Wanted> = self
            .tests
            .red_proof
            .as_ref()
            .map(|v| v.wanted().to_vec())
            .unwrap_or_default();
        let whole: Vec<&str> = breaker
            .iter()
            .filter(|w| w.name.is_none())
            .filter_map(|w| w.unit.as_deref())
            .collect();
        let baseline = self
            .plan
            .baseline
            .iter()
            .flat_map(|b| b.passing.iter())
            .filter(|w| !w.unit.as_deref().is_some_and(|u| whole.contains(&u)))
            .cloned()
            .collect();
        Expect {
            breaker,
            baseline,
            excused,
            steering: vec![],
            steering_approved_by: self.review.approved_by.clone(),
            known_findings: self
                .plan
                .baseline
                .as_ref()
                .map(|b| b.known_findings.clone())
                .unwrap_or_default(),
        }
    }

    /// The tests that failed on the base before any change.
    pub fn known_failures(&self) -> Vec<String> {
        self.plan
            .baseline
            .as_ref()
            .map(|b| b.failing.clone())
            .unwrap_or_default()
    }
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

/// The ticket's stored flow; a fresh one when it has none yet. One that cannot be read is an
/// error, never a silent fresh start (that would redo the ticket's side effects).
pub async fn load(store: &crate::store::Store, key: TicketKey) -> crate::store::Result<Flow> {
    match store.flow(key).await? {
        None => Ok(Flow::default()),
        Some(v) => serde_json::from_value::<Flow>(v).map_err(|e| {
            crate::store::StoreError::Invalid(format!("ticket {key}'s stored flow: {e}"))
        }),
    }
}

/// The state the ticket shows while `node` runs.
pub fn state_of(node: Node) -> TaskState {
    match node {
        Node::Plan => TaskState::Preparing,
        Node::PlanCheck | Node::AwaitPlanApproval => TaskState::Validating,
        Node::Code | Node::RedProof | Node::Encounter | Node::OpenPr => TaskState::InProgress,
        Node::Critic
        | Node::AwaitApproval
        | Node::Rebase
        | Node::Regate
        | Node::Ci
        | Node::Merge
        | Node::Queue => TaskState::AwaitingVerification,
        Node::Snapshot | Node::Done => TaskState::Completed,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A checkpoint's flow as a run stored it (every field set), read and written again
    /// unchanged: how a flow is stored does not change with how the code groups it.
    #[test]
    fn a_stored_flow_reads_and_writes_back_the_same() {
        let stored: serde_json::Value = serde_json::from_str(include_str!(
            "../../../tests/fixtures/flow/checkpoint-before-stages.json"
        ))
        .unwrap();
        let flow: Flow = serde_json::from_value(stored.clone()).unwrap();
        assert_eq!(
            (flow.next, flow.code.attempt, flow.review.pr),
            (Node::Done, 1, Some(2))
        );
        assert_eq!(serde_json::to_value(&flow).unwrap(), stored);
    }

    #[test]
    fn flows_round_trip_and_default_to_plan() {
        let f: Flow = serde_json::from_value(serde_json::json!({})).unwrap();
        assert_eq!((f.next, f.code.attempt), (Node::Plan, 0));
        let mut f = Flow {
            next: Node::Critic,
            review: Reviewing {
                pr: Some(3),
                ..Default::default()
            },
            ..Flow::default()
        };
        f.plan.feedback.push("x".into());
        let back: Flow = serde_json::from_value(serde_json::to_value(&f).unwrap()).unwrap();
        assert_eq!(back, f);
    }
}
