//! The hive workflow as a checkpointed state machine. A ticket moves through the nodes
//! plan → plan_check → (breaker ∥ builder) → red_proof → encounter → open_pr → critic →
//! await_approval → rebase → regate → ci → merge → snapshot; each node, once done, writes a
//! checkpoint (node, attempt, inputs, outputs) together with the [`Flow`] state the next node
//! starts from, so a run killed anywhere resumes where it was. Nodes only do idempotent side
//! effects: a resumed node finds its comment, branch, check run, pull request or tag again
//! instead of making a second.
//!
//! People steer through signals (approve, abort, feedback, plan, retry, rebase) that the run
//! reads at every node boundary; waiting nodes (plan approval, human approval, a landing GitHub
//! holds back) end the job and a signal queues it again.
//!
//! Before the plan, [`baseline`] runs setup and the tests on the unchanged base (no model is
//! asked when they cannot run).
//!
//! This file is the dispatcher only; data flows down from it: the nodes ([`plan`], [`code`],
//! [`proof`], [`review`], [`merge`], [`ci`], [`land`], with [`reflect`], [`resolve`],
//! [`memory`] and [`ci_report`]
//! beside them, and [`signals`] between them) →
//! [`ctx`] (what every node shares) → [`git`] and [`state`].

mod base;
mod baseline;
mod ci;
mod ci_report;
mod code;
mod critic;
mod ctx;
mod encounter;
mod git;
mod knowledge;
mod land;
mod memory;
mod people;
mod plan;
mod proof;
mod queue;
mod rebase;
mod reflect;
mod regate;
mod resolve;
mod review;
mod signals;
mod signed;
pub mod state;
mod withhold;

use tracing::info;

use crate::config::repo::HiveConfig;
use crate::hive::job::JobError;
use crate::hive::ticket_run::TicketRun;
use crate::llm::budget::Ledger;
use ctx::{Ctx, Step};
pub use state::{Flow, Node, Wait, load};

/// Runs the ticket from its stored flow until it waits, stops or completes.
pub(in crate::hive) async fn drive(
    run: &mut TicketRun<'_>,
    config: HiveConfig,
) -> Result<(), JobError> {
    let key = run.ticket.key;
    let flow = load(&run.hive.store, key).await?;
    let ledger = Ledger::new(config.budget, run.hive.store.budget(key).await?);
    let mut cx = Ctx {
        run,
        flow,
        env: crate::env::Resolved::plain(config),
        ledger,
        signoff: Default::default(),
        kept_base: None,
    };
    cx.run.spent = Some(cx.ledger.total());
    ctx::resolve_env(&mut cx).await?;
    let ran = run_nodes(&mut cx).await;
    ctx::release_kept(&mut cx).await;
    ran
}

/// Runs node after node until the ticket waits, stops or completes.
async fn run_nodes(cx: &mut Ctx<'_, '_>) -> Result<(), JobError> {
    loop {
        if let Step::Stop = signals::apply_signals(cx).await? {
            return Ok(());
        }
        let node = cx.flow.next;
        info!(node = node.as_str(), attempt = cx.flow.code.attempt, "node");
        let step = match node {
            Node::Plan => plan::plan(cx).await?,
            Node::PlanCheck => plan::check(cx).await?,
            Node::AwaitPlanApproval => plan::await_approval(cx).await?,
            Node::Code => code::code(cx).await?,
            Node::RedProof => proof::red_proof(cx).await?,
            Node::Encounter => encounter::encounter(cx).await?,
            Node::OpenPr => review::open_pr(cx).await?,
            Node::Critic => critic::critic(cx).await?,
            Node::AwaitApproval => review::await_approval(cx).await?,
            Node::Rebase => rebase::rebase(cx).await?,
            Node::Regate => regate::regate(cx).await?,
            Node::Ci => ci::ci(cx).await?,
            Node::Merge => land::merge(cx).await?,
            Node::Queue => queue::queue(cx).await?,
            Node::Snapshot => land::snapshot(cx).await?,
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
