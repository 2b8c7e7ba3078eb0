//! What people asked, applied at every node boundary: the stored signals (approve, abort,
//! feedback, plan, retry, rebase, a review's findings, a person's push, a landing on GitHub, a
//! recheck), oldest first, consumed in the same transaction that stores the flow they changed.

use super::ctx::{Ctx, Step};
use super::queue::Left;
use super::state::{Flow, Node, Planning, state_of};
use crate::hive::job::JobError;
use crate::ids::CommitSha;
use crate::ticket::{Signal, TaskState};

/// Back to the Architect: the plan, its questions and its approval are dropped.
fn plan_again(flow: &mut Flow) {
    flow.plan.edit_refused = None;
    flow.next = Node::Plan;
    flow.plan.blueprint = None;
    flow.plan.questions.clear();
    flow.plan.plan_approved = false;
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
        let effect = apply_one(cx, signal, &s.author).await?;
        resume |= effect.resume;
        if let Some((state, detail)) = effect.ends {
            cx.settle(state, detail).await?;
            cx.run.cleanup().await;
            let last = signals.last().map(|s| s.id).unwrap_or(s.id);
            let flow = serde_json::to_value(&cx.flow).unwrap_or_default();
            let of = cx.run.ticket.run_of();
            cx.run.hive.store.consume_signals(of, last, &flow).await?;
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
            .consume_signals(cx.run.ticket.run_of(), last.id, &flow)
            .await?;
    }
    let parked = matches!(
        cx.run.ticket.state,
        TaskState::HumanNeeded | TaskState::Failed
    );
    if parked && !resume {
        return Ok(Step::Stop);
    }
    if parked {
        // Resumed: the ticket no longer waits for a person, even where the node it goes on
        // with enters no state of its own (a landing that was approved, say).
        super::ctx::enter_node(cx).await?;
    }
    Ok(Step::Next)
}

/// What one signal did: whether the flow goes on at once, and whether the ticket ends (the
/// state it ends in, and why).
#[derive(Debug)]
struct Effect {
    resume: bool,
    ends: Option<(TaskState, String)>,
}

impl Effect {
    const NOTHING: Effect = Effect {
        resume: false,
        ends: None,
    };
    const RESUME: Effect = Effect {
        resume: true,
        ends: None,
    };

    fn ends(state: TaskState, why: String) -> Self {
        Self {
            resume: false,
            ends: Some((state, why)),
        }
    }
}

/// Applies one signal from `author` to the flow.
async fn apply_one(
    cx: &mut Ctx<'_, '_>,
    signal: &Signal,
    author: &str,
) -> Result<Effect, JobError> {
    match signal {
        Signal::Abort { .. } | Signal::Landed { .. } | Signal::Recheck => {
            ending(cx, signal, author)
        }
        Signal::Base { .. }
        | Signal::Feedback { .. }
        | Signal::Plan
        | Signal::Build
        | Signal::Approve => planning(cx, signal, author).await,
        Signal::Group { .. } | Signal::Dequeued { .. } => queueing(cx, signal, author),
        Signal::Review { .. }
        | Signal::Rebase
        | Signal::Push { .. }
        | Signal::EditRefused { .. }
        | Signal::Retry { .. } => steering(cx, signal, author).await,
    }
}

/// Signals that end the ticket or its wait: an abort, a landing on GitHub, a recheck.
fn ending(cx: &mut Ctx<'_, '_>, signal: &Signal, author: &str) -> Result<Effect, JobError> {
    Ok(match signal {
        // GitHub closed the issue because the change landed: that is no stop.
        Signal::Abort { .. } if cx.flow.land.merged.is_some() && author == "github" => {
            Effect::NOTHING
        }
        Signal::Abort { why } => {
            let why = match why.as_deref() {
                None | Some("") => format!("Aborted by @{author}."),
                Some(w) => format!("Stopped: {w}. Relabel the issue to start again."),
            };
            Effect::ends(TaskState::Failed, why)
        }
        // The pull request was merged on GitHub: by the bot's own landing (already recorded),
        // or by a person — then the snapshot tags what their merge put on the base (or,
        // without its merge commit, the ticket just completes).
        Signal::Landed { pr, sha, by } if cx.flow.land.merged.is_none() => match sha {
            Some(sha) => {
                cx.flow.land.merged = Some(sha.clone());
                cx.flow.land.merged_by = by.clone();
                cx.flow.land.waiting = None;
                cx.flow.next = Node::Snapshot;
                Effect::RESUME
            }
            None => {
                cx.flow.next = Node::Done;
                let detail = format!("Pull request #{pr} was merged on GitHub by hand.");
                Effect::ends(TaskState::Completed, detail)
            }
        },
        Signal::Landed { .. } => Effect::NOTHING,
        // A check completed or the sweep looked again: a landing that waits tries again.
        Signal::Recheck => Effect {
            resume: cx.flow.land.waiting.is_some(),
            ends: None,
        },
        _ => Effect::NOTHING,
    })
}

/// Signals about the plan: another base, feedback, plan again, build, approve.
async fn planning(cx: &mut Ctx<'_, '_>, signal: &Signal, author: &str) -> Result<Effect, JobError> {
    Ok(match signal {
        Signal::Base { branch } if !super::base::before_code(cx) => {
            let why = "its code is being written already";
            let data = serde_json::json!({ "branch": branch, "refused": why });
            cx.run.event("base", data).await;
            Effect::NOTHING
        }
        Signal::Base { branch } => match super::base::move_to(cx, branch).await? {
            Ok(()) => {
                cx.run
                    .event("base", serde_json::json!({ "branch": branch }))
                    .await;
                plan_again(&mut cx.flow);
                Effect::RESUME
            }
            Err(why) => Effect::ends(TaskState::Failed, why),
        },
        Signal::Feedback { text } => {
            cx.flow.plan.feedback.push(format!("@{author}: {text}"));
            // A plan waiting for approval is planned again with the feedback.
            if cx.flow.next == Node::AwaitPlanApproval {
                plan_again(&mut cx.flow);
                Effect::RESUME
            } else {
                Effect::NOTHING
            }
        }
        Signal::Plan => {
            // The issue may have been edited since this run loaded it.
            if let Some(t) = cx.run.hive.store.ticket(cx.run.ticket.key).await? {
                cx.run.ticket.title = t.title;
                cx.run.ticket.body = t.body;
            }
            plan_again(&mut cx.flow);
            Effect::RESUME
        }
        // The hive's label on a plan-only ticket: its plan, once made, is approved (a ticket
        // that builds already has nothing to do).
        Signal::Build if cx.flow.plan.plan_only => {
            cx.flow.plan.plan_only = false;
            cx.flow.plan.plan_approved = true;
            Effect::RESUME
        }
        Signal::Build => Effect::NOTHING,
        Signal::Approve => {
            match cx.flow.next {
                // An approved plan-only ticket builds, as with the hive's label.
                Node::AwaitPlanApproval => {
                    cx.flow.plan.plan_approved = true;
                    cx.flow.plan.plan_only = false;
                }
                _ => {
                    cx.flow.review.approved_by = Some(author.to_owned());
                    cx.flow.review.approval_withdrawn = None;
                }
            }
            Effect::RESUME
        }
        _ => Effect::NOTHING,
    })
}

/// The base's merge queue: a group to gate, the pull request out of the queue.
fn queueing(cx: &mut Ctx<'_, '_>, signal: &Signal, author: &str) -> Result<Effect, JobError> {
    Ok(match signal {
        Signal::Group { head, base } => Effect {
            resume: super::queue::group_asked(&mut cx.flow, head, base.as_ref()),
            ends: None,
        },
        Signal::Dequeued { reason, head } => {
            match super::queue::dequeued(&mut cx.flow, reason, head.as_ref(), author) {
                Left::Nothing => Effect::NOTHING,
                Left::Rebase if cx.flow.land.relands >= super::state::MAX_RELANDS => {
                    let pr = cx.flow.review.pr.unwrap_or_default();
                    let base = cx.base_branch();
                    let why = format!(
                        "#{pr} conflicts with what `{base}`'s merge queue put before it, again after {} rebases. `/hive rebase` tries once more; or resolve it on the branch yourself.",
                        super::state::MAX_RELANDS
                    );
                    Effect::ends(TaskState::HumanNeeded, why)
                }
                Left::Rebase => {
                    cx.flow.land.relands += 1;
                    cx.flow.land.rebased = None;
                    cx.flow.next = Node::Rebase;
                    Effect::RESUME
                }
                Left::Person(why) => {
                    let pr = cx.flow.review.pr.unwrap_or_default();
                    let base = cx.base_branch();
                    let why = format!(
                        "GitHub took #{pr} out of `{base}`'s merge queue: {why}. `/hive retry` adds it again; `/hive rebase` rebases and checks it first."
                    );
                    Effect::ends(TaskState::HumanNeeded, why)
                }
            }
        }
        _ => Effect::NOTHING,
    })
}

/// People steering the change: a review's findings, a rebase, a push, a refused edit, a retry.
async fn steering(cx: &mut Ctx<'_, '_>, signal: &Signal, author: &str) -> Result<Effect, JobError> {
    Ok(match signal {
        // Held for the Builder's next attempt: the one that starts now, if the change waits
        // for review or landing, else the next one the flow makes.
        Signal::Review {
            findings, threads, ..
        } => {
            cx.flow
                .code
                .review_findings
                .extend(findings.iter().cloned());
            cx.flow.code.review_threads.extend(threads.iter().cloned());
            match review_starts_attempt(&mut cx.flow) {
                Some(true) => Effect::RESUME,
                Some(false) => {
                    Effect::ends(TaskState::HumanNeeded, NO_ATTEMPT_FOR_REVIEW.to_owned())
                }
                None => Effect::NOTHING,
            }
        }
        Signal::Rebase if cx.flow.review.pr.is_some() => {
            cx.flow.next = Node::Rebase;
            cx.flow.land.rebased = None;
            // Its push takes the pull request out of the queue, if it is in one.
            cx.flow.land.queue = None;
            Effect::RESUME
        }
        Signal::Rebase => Effect::NOTHING,
        Signal::Push { sha } => {
            pushed(cx, sha, author).await;
            Effect::NOTHING
        }
        // Said in the status until the text is taken (`/hive plan`, or a new label).
        Signal::EditRefused { by } => {
            cx.flow.plan.edit_refused = Some(by.clone());
            Effect::NOTHING
        }
        // After the retry engine gave up on failures in passing, the flow goes on where it
        // stopped.
        Signal::Retry { role: None } if stalled(cx) => Effect::RESUME,
        Signal::Retry { role } => {
            retry(
                &mut cx.flow,
                role.as_deref().unwrap_or(""),
                cx.env.config.retry.max_retries,
            );
            Effect::RESUME
        }
        _ => Effect::NOTHING,
    })
}

/// A person pushed `sha` to `feat/T-n`. Every step that writes the branch adopts it anyway (and
/// a running Builder stopped for it at its checkpoint); here the approval and the landing
/// change as [`after_push`] says, and the timeline and the status say why.
async fn pushed(cx: &mut Ctx<'_, '_>, sha: &CommitSha, by: &str) {
    if let Some(approver) = after_push(&mut cx.flow, by) {
        let data =
            serde_json::json!({ "approved_by": approver, "pushed_by": by, "sha": sha.as_str() });
        cx.run.event("approval_withdrawn", data).await;
        cx.flow.review.approval_withdrawn = Some(format!(
            "@{by} pushed {} after @{approver} approved, so the approval no longer holds.",
            sha.short()
        ));
    }
}

/// What a push by `by` changes in the flow: an approval given before it is withdrawn unless its
/// giver pushed (returned: whose approval), and a landing under way starts again from the
/// rebase so that it lands the new commit — or waits for an approval again.
fn after_push(flow: &mut Flow, by: &str) -> Option<String> {
    let withdrawn = flow.review.approved_by.take_if(|a| a != by);
    if matches!(
        flow.next,
        Node::Rebase | Node::Regate | Node::Ci | Node::Merge | Node::Queue
    ) {
        // GitHub takes a pull request out of its merge queue when its head moves.
        flow.land.queue = None;
        flow.land.rebased = None;
        flow.land.waiting = None;
        flow.next = if flow.review.approved_by.is_some() {
            Node::Rebase
        } else {
            Node::AwaitApproval
        };
    }
    withdrawn
}

/// The ticket waits for a person because the retry engine gave up on failures in passing.
fn stalled(cx: &Ctx<'_, '_>) -> bool {
    cx.run.ticket.state == TaskState::HumanNeeded
        && cx
            .run
            .ticket
            .detail
            .as_deref()
            .is_some_and(|d| d.starts_with(crate::hive::ticket_run::STALLED))
}

/// People's review comments wait for the Builder; when the change is past its attempts (the
/// Critic, the approval, the landing) they start one, on the pull request's current head.
/// `Some(true)`: the flow moved to it; `Some(false)`: no attempt is left (the limit applies to
/// reviews too); `None`: nothing to start now.
pub(super) fn review_starts_attempt(flow: &mut Flow) -> Option<bool> {
    // Past its attempts: the Critic, the approval, the landing.
    let past_attempts = state_of(flow.next) == TaskState::AwaitingVerification;
    if flow.code.review_findings.is_empty() || !past_attempts || flow.code.builder.is_none() {
        return None;
    }
    if flow.code.attempt >= flow.code.attempt_limit {
        return Some(false);
    }
    flow.code.attempt += 1;
    flow.review.approved_by = None;
    flow.land.rebased = None;
    flow.land.waiting = None;
    // The attempt's push takes the pull request out of a merge queue.
    flow.land.queue = None;
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
                plan: Planning {
                    feedback: std::mem::take(&mut flow.plan.feedback),
                    plan_only: flow.plan.plan_only,
                    unlabelled: flow.plan.unlabelled,
                    ..Planning::default()
                },
                ..Flow::default()
            };
        }
        "breaker" => {
            flow.tests.breaker = None;
            flow.tests.breaker_attempts = 0;
            flow.tests.red_proof = None;
            flow.next = Node::Code;
        }
        "critic" if flow.review.pr.is_some() => {
            flow.review.critic = None;
            flow.review.critic_rounds = 0;
            flow.next = Node::Critic;
        }
        // The repository's CI failed past `ci.max_attempts`: the Builder tries again with
        // what it said, and the CI's attempts are counted again.
        "builder" if flow.next == Node::Ci => {
            flow.land.ci.charged = 0;
            flow.land.rebased = None;
            flow.land.waiting = None;
            flow.review.approved_by = None;
            flow.next = Node::Code;
            flow.code.attempt += 1;
            flow.code.attempt_limit = flow.code.attempt + max_retries;
            flow.review.critic_rounds = 0;
        }
        // A landing refused by GitHub or stopped by conflicts, or held by the repository's CI:
        // land it again (the CI is heard again).
        _ if matches!(
            flow.next,
            Node::Rebase | Node::Ci | Node::Merge | Node::Queue
        ) && flow.review.pr.is_some() =>
        {
            flow.land.requeues = 0;
            if flow.next == Node::Rebase {
                flow.land.rebased = None;
            }
        }
        // The Builder, or the stage the ticket stopped in.
        _ => {
            if flow.plan.blueprint.is_none() {
                flow.next = Node::Plan;
            } else {
                flow.next = Node::Code;
                flow.code.attempt += 1;
                flow.code.attempt_limit = flow.code.attempt + max_retries;
                flow.review.critic_rounds = 0;
            }
        }
    }
}

#[cfg(test)]
mod tests;
