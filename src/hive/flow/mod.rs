//! The hive workflow as a checkpointed state machine. A ticket moves through the nodes
//! plan → plan_check → (breaker ∥ builder) → red_proof → encounter → open_pr → critic →
//! await_approval → rebase → regate → merge → snapshot; each node, once done, writes a
//! checkpoint (node, attempt, inputs, outputs) together with the [`Flow`] state the next node
//! starts from, so a run killed anywhere resumes where it was. Nodes only do idempotent side
//! effects: a resumed node finds its comment, branch, check run, pull request or tag again
//! instead of making a second.
//!
//! People steer through signals (approve, abort, feedback, plan, retry, rebase) that the run
//! reads at every node boundary; waiting nodes (plan approval, human approval) end the job and
//! a signal queues it again.

mod code;
mod land;
mod merge;
mod plan;
mod proof;
mod reflect;
mod resolve;
mod review;
pub(super) mod state;
mod summary;

use tracing::info;

use super::JobError;
use super::run::TicketRun;
use super::status::Extras;
use crate::config::repo::HiveConfig;
use crate::llm::budget::Ledger;
use crate::ticket::TaskState;
pub use state::{Flow, Node, Wait};
pub use summary::status_section;

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
    pub config: HiveConfig,
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

/// The ticket's stored flow; a fresh one when it has none yet (or an unreadable one).
pub async fn load(store: &crate::store::Store, key: i64) -> crate::store::Result<Flow> {
    Ok(store
        .flow(key)
        .await?
        .and_then(|v| serde_json::from_value::<Flow>(v).ok())
        .unwrap_or_default())
}

/// Runs the ticket from its stored flow until it waits, stops or completes.
pub(super) async fn drive(run: &mut TicketRun<'_>, config: HiveConfig) -> Result<(), JobError> {
    let key = run.ticket.key;
    let flow = load(&run.hive.store, key).await?;
    let ledger = Ledger::new(config.budget, run.hive.store.budget(key).await?);
    let mut cx = Ctx {
        run,
        flow,
        config,
        ledger,
    };
    cx.run.spent = Some(cx.ledger.total());
    loop {
        if let Step::Stop = state::apply_signals(&mut cx).await? {
            return Ok(());
        }
        let node = cx.flow.next;
        info!(node = node.as_str(), attempt = cx.flow.attempt, "node");
        let step = match node {
            Node::Plan => plan::plan(&mut cx).await?,
            Node::PlanCheck => plan::check(&mut cx).await?,
            Node::AwaitPlanApproval => plan::await_approval(&mut cx).await?,
            Node::Code => code::code(&mut cx).await?,
            Node::RedProof => proof::red_proof(&mut cx).await?,
            Node::Encounter => proof::encounter(&mut cx).await?,
            Node::OpenPr => review::open_pr(&mut cx).await?,
            Node::Critic => review::critic(&mut cx).await?,
            Node::AwaitApproval => review::await_approval(&mut cx).await?,
            Node::Rebase => merge::rebase(&mut cx).await?,
            Node::Regate => merge::regate(&mut cx).await?,
            Node::Merge => land::merge(&mut cx).await?,
            Node::Snapshot => land::snapshot(&mut cx).await?,
            Node::Done => return Ok(()),
        };
        if let Step::Stop = step {
            return Ok(());
        }
        if cx.run.ticket.state.is_final() {
            return Ok(());
        }
    }
}

/// The state the ticket shows while `node` runs.
pub(super) fn state_of(node: Node) -> TaskState {
    match node {
        Node::Plan => TaskState::Preparing,
        Node::PlanCheck | Node::AwaitPlanApproval => TaskState::Validating,
        Node::Code | Node::RedProof | Node::Encounter | Node::OpenPr => TaskState::InProgress,
        Node::Critic | Node::AwaitApproval | Node::Rebase | Node::Regate | Node::Merge => {
            TaskState::AwaitingVerification
        }
        Node::Snapshot | Node::Done => TaskState::Completed,
    }
}
