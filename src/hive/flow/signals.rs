//! What people asked, applied at every node boundary: the stored signals (approve, abort,
//! feedback, plan, retry, rebase, a review's findings, a person's push, a landing on GitHub, a
//! recheck), oldest first, consumed in the same transaction that stores the flow they changed.

use super::ctx::{Ctx, Step};
use super::queue::Left;
use super::state::{Flow, Node, state_of};
use crate::hive::job::JobError;
use crate::ids::CommitSha;
use crate::ticket::{Signal, TaskState};

/// Back to the Architect: the plan, its questions and its approval are dropped.
fn plan_again(flow: &mut Flow) {
    flow.edit_refused = None;
    flow.next = Node::Plan;
    flow.blueprint = None;
    flow.questions.clear();
    flow.plan_approved = false;
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
        Signal::Abort { .. } if cx.flow.merged.is_some() && author == "github" => Effect::NOTHING,
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
        Signal::Landed { pr, sha, by } if cx.flow.merged.is_none() => match sha {
            Some(sha) => {
                cx.flow.merged = Some(sha.clone());
                cx.flow.merged_by = by.clone();
                cx.flow.waiting = None;
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
            resume: cx.flow.waiting.is_some(),
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
            cx.flow.feedback.push(format!("@{author}: {text}"));
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
        Signal::Build if cx.flow.plan_only => {
            cx.flow.plan_only = false;
            cx.flow.plan_approved = true;
            Effect::RESUME
        }
        Signal::Build => Effect::NOTHING,
        Signal::Approve => {
            match cx.flow.next {
                // An approved plan-only ticket builds, as with the hive's label.
                Node::AwaitPlanApproval => {
                    cx.flow.plan_approved = true;
                    cx.flow.plan_only = false;
                }
                _ => {
                    cx.flow.approved_by = Some(author.to_owned());
                    cx.flow.approval_withdrawn = None;
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
                Left::Rebase if cx.flow.relands >= super::state::MAX_RELANDS => {
                    let pr = cx.flow.pr.unwrap_or_default();
                    let base = cx.base_branch();
                    let why = format!(
                        "#{pr} conflicts with what `{base}`'s merge queue put before it, again after {} rebases. `/hive rebase` tries once more; or resolve it on the branch yourself.",
                        super::state::MAX_RELANDS
                    );
                    Effect::ends(TaskState::HumanNeeded, why)
                }
                Left::Rebase => {
                    cx.flow.relands += 1;
                    cx.flow.rebased = None;
                    cx.flow.next = Node::Rebase;
                    Effect::RESUME
                }
                Left::Person(why) => {
                    let pr = cx.flow.pr.unwrap_or_default();
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
            cx.flow.review_findings.extend(findings.iter().cloned());
            cx.flow.review_threads.extend(threads.iter().cloned());
            match review_starts_attempt(&mut cx.flow) {
                Some(true) => Effect::RESUME,
                Some(false) => {
                    Effect::ends(TaskState::HumanNeeded, NO_ATTEMPT_FOR_REVIEW.to_owned())
                }
                None => Effect::NOTHING,
            }
        }
        Signal::Rebase if cx.flow.pr.is_some() => {
            cx.flow.next = Node::Rebase;
            cx.flow.rebased = None;
            // Its push takes the pull request out of the queue, if it is in one.
            cx.flow.queue = None;
            Effect::RESUME
        }
        Signal::Rebase => Effect::NOTHING,
        Signal::Push { sha } => {
            pushed(cx, sha, author).await;
            Effect::NOTHING
        }
        // Said in the status until the text is taken (`/hive plan`, or a new label).
        Signal::EditRefused { by } => {
            cx.flow.edit_refused = Some(by.clone());
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
        cx.flow.approval_withdrawn = Some(format!(
            "@{by} pushed {} after @{approver} approved, so the approval no longer holds.",
            sha.short()
        ));
    }
}

/// What a push by `by` changes in the flow: an approval given before it is withdrawn unless its
/// giver pushed (returned: whose approval), and a landing under way starts again from the
/// rebase so that it lands the new commit — or waits for an approval again.
fn after_push(flow: &mut Flow, by: &str) -> Option<String> {
    let withdrawn = flow.approved_by.take_if(|a| a != by);
    if matches!(
        flow.next,
        Node::Rebase | Node::Regate | Node::Ci | Node::Merge | Node::Queue
    ) {
        // GitHub takes a pull request out of its merge queue when its head moves.
        flow.queue = None;
        flow.rebased = None;
        flow.waiting = None;
        flow.next = if flow.approved_by.is_some() {
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
    // The attempt's push takes the pull request out of a merge queue.
    flow.queue = None;
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
                plan_only: flow.plan_only,
                unlabelled: flow.unlabelled,
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
        // The repository's CI failed past `ci.max_attempts`: the Builder tries again with
        // what it said, and the CI's attempts are counted again.
        "builder" if flow.next == Node::Ci => {
            flow.ci.charged = 0;
            flow.rebased = None;
            flow.waiting = None;
            flow.approved_by = None;
            flow.next = Node::Code;
            flow.attempt += 1;
            flow.attempt_limit = flow.attempt + max_retries;
            flow.critic_rounds = 0;
        }
        // A landing refused by GitHub or stopped by conflicts, or held by the repository's CI:
        // land it again (the CI is heard again).
        _ if matches!(
            flow.next,
            Node::Rebase | Node::Ci | Node::Merge | Node::Queue
        ) && flow.pr.is_some() =>
        {
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
    fn a_push_withdraws_someone_elses_approval_and_lands_again_from_the_rebase() {
        let sha = CommitSha::parse(&"c".repeat(40)).unwrap();
        let mut f = Flow {
            next: Node::Merge,
            approved_by: Some("alice".into()),
            rebased: Some(sha.clone()),
            ..Flow::default()
        };
        // The approver's own push keeps the approval; the landing rebases again.
        assert_eq!(after_push(&mut f, "alice"), None);
        assert_eq!((f.next, f.rebased.clone()), (Node::Rebase, None));
        // Someone else's: the approval is withdrawn and asked for again.
        f.next = Node::Regate;
        f.rebased = Some(sha);
        assert_eq!(after_push(&mut f, "bob").as_deref(), Some("alice"));
        assert_eq!((f.next, f.approved_by.clone()), (Node::AwaitApproval, None));
        // Before the landing, only the approval changes.
        let mut f = Flow {
            next: Node::Code,
            approved_by: Some("alice".into()),
            ..Flow::default()
        };
        assert_eq!(after_push(&mut f, "bob").as_deref(), Some("alice"));
        assert_eq!(f.next, Node::Code);
        assert_eq!(after_push(&mut f, "bob"), None);
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
