//! Landing through the base's merge queue, where its rules require one (GitHub refuses a direct
//! merge there). [`enqueue`] adds the approved, regated pull request to the queue, guarded by
//! its head; [`queue`] gates each merge group GitHub makes for it on the group's head — the
//! last attempt's verdicts carried where the group's tree is the one they passed on — as the
//! check runs the queue waits for, then waits for GitHub to merge it (`pull_request.closed`:
//! the snapshot). A group the gates fail is taken out of the queue by the bot and the change
//! rebased onto the base, where the regate gives the failure to the Builder; a pull request
//! GitHub took out ([`dequeued`]) is rebased again after a conflict, else a person hears
//! GitHub's reason.

use super::ctx::{Ctx, Step, drop_scratch, enter_node, git, scratch, sync};
use super::regate::{changed_on_the_base, gated_as, report_carried};
use super::state::{Flow, Group, MAX_RELANDS, Node, Queued};
use crate::github::merge::MergeRefusal;
use crate::github::queue::graphql_words;
use crate::hive::job::JobError;
use crate::hive::verify::{Verification, run_gates};
use crate::ids::CommitSha;
use crate::ticket::TaskState;

/// Adds pull request `pr` at `sha` to the base's merge queue, once (a retried step finds it
/// there). `Err` when GitHub's head is no longer `sha`: the landing rebases again.
pub(super) async fn enqueue(
    cx: &mut Ctx<'_, '_>,
    pr: u64,
    sha: &CommitSha,
) -> Result<Result<Step, MergeRefusal>, JobError> {
    if cx.flow.land.queue.as_ref().is_none_or(|q| q.head != *sha)
        && let Err(e) = cx.run.client.enqueue_pull(pr, sha).await
        && let Some(instead) = not_queued(cx, pr, sha, e).await?
    {
        return Ok(instead);
    }
    cx.flow.land.queue = Some(Queued {
        head: sha.clone(),
        group: None,
    });
    cx.flow.land.waiting = None;
    cx.flow.next = Node::Queue;
    cx.checkpoint(
        Node::Merge,
        serde_json::json!({ "sha": sha.as_str(), "method": "queue" }),
        serde_json::json!({ "queued": true }),
    )
    .await?;
    Ok(Ok(Step::Next))
}

/// GitHub would not queue `pr` at `sha` (`e`): `None` when it is in the queue all the same
/// (a retried step), else what the landing does instead — rebase when the head moved, or a
/// person with GitHub's words.
async fn not_queued(
    cx: &mut Ctx<'_, '_>,
    pr: u64,
    sha: &CommitSha,
    e: crate::github::GitHubError,
) -> Result<Option<Result<Step, MergeRefusal>>, JobError> {
    if e.is_transient() {
        return Err(e.into());
    }
    let said = match &e {
        crate::github::GitHubError::Api { message, .. } => graphql_words(message),
        other => other.to_string(),
    };
    let now = cx.run.client.queue_state(pr).await?;
    if now.head != sha.as_str() {
        return Ok(Some(Err(MergeRefusal::HeadMoved(said))));
    }
    if now.queued {
        return Ok(None);
    }
    let base = cx.base_branch();
    let report = format!(
        "GitHub would not add #{pr} to `{base}`'s merge queue: {said}\n\nDo what it asks (or add the pull request to the queue yourself), then `/hive retry`."
    );
    Ok(Some(Ok(cx.needs_human(&report).await?)))
}

/// Queue: gate the merge group GitHub asked checks of, or wait for the next word from the
/// queue.
pub(super) async fn queue(cx: &mut Ctx<'_, '_>) -> Result<Step, JobError> {
    enter_node(cx).await?;
    let Some(queued) = cx.flow.land.queue.clone() else {
        cx.flow.next = Node::Merge;
        return Ok(Step::Next);
    };
    match queued.group {
        Some(group) if group.passed.is_none() => gate_group(cx, &group).await,
        _ => waiting(cx).await,
    }
}

/// Says where the pull request stands in the queue, and stops until GitHub says more.
async fn waiting(cx: &mut Ctx<'_, '_>) -> Result<Step, JobError> {
    let base = cx.base_branch();
    let pr = cx.flow.review.pr.unwrap_or_default();
    let Some(q) = cx.flow.land.queue.as_ref() else {
        return Ok(Step::Stop);
    };
    let detail = match &q.group {
        Some(g) if g.passed == Some(true) => format!(
            "In `{base}`'s merge queue: the gates passed on the merge group of #{pr} (`{}`). GitHub merges it once the group's other required checks pass.",
            g.head.short()
        ),
        _ => format!(
            "In `{base}`'s merge queue: #{pr} (`{}`) waits for its merge group, which the bot gates when GitHub asks; the ticket completes once it merges.",
            q.head.short()
        ),
    };
    let t = &cx.run.ticket;
    if t.state != TaskState::AwaitingVerification || t.detail.as_deref() != Some(&detail) {
        cx.settle(TaskState::AwaitingVerification, detail).await?;
    }
    Ok(Step::Stop)
}

/// Runs the gates on `group`'s head, or carries the last attempt's verdicts where its tree is
/// the one they passed on; a group they fail goes back to the rebase.
async fn gate_group(cx: &mut Ctx<'_, '_>, group: &Group) -> Result<Step, JobError> {
    let run_id = format!("vibeloop:{}:group-{}", cx.run.ticket.id, group.head.short());
    let inputs = serde_json::json!({ "group": group.head.as_str(), "base": group.base });
    // The group's branch is GitHub's: fetched before its commit is read.
    sync(cx).await?;
    let failed = match gated_as(cx, &group.head).await? {
        Some(gated) => {
            let why = "The merge group changed no file of the gated change";
            report_carried(cx, &group.head, &gated, &run_id, why).await?;
            vec![]
        }
        None => run_on_group(cx, group, run_id).await?,
    };
    if failed.is_empty() {
        if let Some(g) = cx.flow.land.queue.as_mut().and_then(|q| q.group.as_mut()) {
            g.passed = Some(true);
        }
        let outputs = serde_json::json!({ "passed": true });
        cx.checkpoint(Node::Queue, inputs, outputs).await?;
        return waiting(cx).await;
    }
    let failed = failed.join("; ");
    let outputs = serde_json::json!({ "passed": false });
    cx.checkpoint_failed(Node::Queue, inputs, outputs, &failed)
        .await?;
    let base = cx.base_branch();
    let pr = cx.flow.review.pr.unwrap_or_default();
    // Out of the queue before anything else: GitHub must not merge what the gates fail.
    if let Err(e) = cx.run.client.dequeue_pull(pr).await {
        if e.is_transient() {
            return Err(e.into());
        }
        tracing::warn!(error = %e, "the pull request is out of the queue already");
    }
    let why = format!(
        "On `{base}`'s merge group `{}` (the change on what the queue put before it), {failed}.",
        group.head.short()
    );
    rebase_again(cx, &why).await
}

/// Every gate on the group's head, in a scratch worktree; what failed, in words.
async fn run_on_group(
    cx: &mut Ctx<'_, '_>,
    group: &Group,
    run_id: String,
) -> Result<Vec<String>, JobError> {
    let tests = cx.flow.tests.breaker.as_ref().map(|b| b.sha.clone());
    let wt = scratch(cx, "group", Some(&group.head)).await?;
    let base = match group.base.clone() {
        Some(base) => base,
        None => {
            let head = group.head.oid();
            git(cx, move |_, g| {
                Ok(CommitSha::from(g.find_commit(head)?.parent_id(0)?))
            })
            .await?
        }
    };
    let excused = changed_on_the_base(cx, &base).await?;
    let expect = cx.flow.expect(excused);
    let v = Verification {
        worktree: &wt,
        base: &base,
        head: &group.head,
        gates: None,
        run_id,
        role: "group",
        tests: tests.as_ref(),
        known_failures: &cx.flow.known_failures(),
        expect: &expect,
    };
    let gates = run_gates(cx.run, &cx.env, v).await;
    drop_scratch(cx, "group").await;
    Ok(gates?
        .iter()
        .filter_map(|g| match &g.held {
            // What steers the tests changed: nobody vouched for it in the group.
            Some(why) => Some(format!("hive/{} is held: {why}", g.gate)),
            None => (!g.ok()).then(|| format!("hive/{} {}", g.gate, g.describe())),
        })
        .collect())
}

/// Out of the queue for `why`: rebase onto the base and land again (bounded with the other
/// re-landings), else a person.
async fn rebase_again(cx: &mut Ctx<'_, '_>, why: &str) -> Result<Step, JobError> {
    let base = cx.base_branch();
    let pr = cx.flow.review.pr.unwrap_or_default();
    cx.flow.land.queue = None;
    cx.flow.land.relands += 1;
    if cx.flow.land.relands > MAX_RELANDS {
        cx.flow.next = Node::Merge;
        let report = format!(
            "{why}\n\n#{pr} left `{base}`'s merge queue after {MAX_RELANDS} rebases. Look at its merge group's checks, then `/hive retry` to queue it again."
        );
        return cx.needs_human(&report).await;
    }
    cx.flow.land.rebased = None;
    cx.flow.land.waiting = None;
    cx.flow.next = Node::Rebase;
    cx.note(format!(
        "{why} #{pr} is out of the queue; rebasing onto `{base}` to check it there ({} of {MAX_RELANDS}).",
        cx.flow.land.relands
    ))
    .await?;
    cx.publish().await?;
    Ok(Step::Next)
}

/// `Signal::Group`: the queue asks checks of a group for the pull request. One the bot did not
/// queue (a person added it) is taken up once the change is past its attempts, unless the bot
/// is rebasing it. `true`: the flow goes on to gate it.
pub(super) fn group_asked(flow: &mut Flow, head: &CommitSha, base: Option<&CommitSha>) -> bool {
    if flow.land.merged.is_some() || flow.review.pr.is_none() {
        return false;
    }
    if flow.land.queue.is_none() {
        // Past its attempts and not replacing its head: a group asked while the bot rebases
        // is of a head that is going away.
        let past_attempts = matches!(flow.next, Node::AwaitApproval | Node::Ci | Node::Merge);
        let Some(pushed) = flow.land.rebased.clone().or(flow.code.pushed.clone()) else {
            return false;
        };
        if !past_attempts {
            return false;
        }
        flow.land.queue = Some(Queued {
            head: pushed,
            group: None,
        });
    }
    if let Some(q) = flow.land.queue.as_mut() {
        q.group = Some(Group {
            head: head.clone(),
            base: base.cloned(),
            passed: None,
        });
    }
    flow.land.waiting = None;
    flow.next = Node::Queue;
    true
}

/// What leaving the queue for GitHub's `reason` asks of the flow.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Left {
    /// Not the landing under way (the bot took it out, a push did, or it merged): nothing.
    Nothing,
    /// It conflicts with what the queue put before it: rebase and land again.
    Rebase,
    /// A person decides: why, in words.
    Person(String),
}

/// `Signal::Dequeued`: the pull request, with head `head`, left the queue for `reason`
/// (`by` sent it).
pub(super) fn dequeued(flow: &mut Flow, reason: &str, head: Option<&CommitSha>, by: &str) -> Left {
    let Some(q) = flow.land.queue.as_ref() else {
        return Left::Nothing;
    };
    let code = reason.trim().to_ascii_uppercase();
    if head.is_some_and(|h| *h != q.head) || code == "ALREADY_MERGED" {
        return Left::Nothing;
    }
    flow.land.queue = None;
    if code.contains("CONFLICT") {
        return Left::Rebase;
    }
    flow.next = Node::Merge;
    Left::Person(reason_words(&code, by))
}

/// GitHub's reason for taking a pull request out of the queue, in words.
fn reason_words(code: &str, by: &str) -> String {
    let known = match code {
        "CI_FAILURE" | "CHECKS_FAILED" => "a required check failed on its merge group",
        "CI_TIMEOUT" => "a required check did not report on its merge group in time",
        "QUEUE_CLEARED" => "the queue was cleared",
        "BRANCH_PROTECTIONS" => "the base's rules no longer let it merge",
        "ROLL_BACK" => "the queue rolled back",
        "GIT_TREE_INVALID" | "INVALID_MERGE_COMMIT" => "GitHub could not make its merge group",
        "MANUAL" => return format!("@{by} removed it"),
        _ => "",
    };
    let code: String = code
        .chars()
        .filter(|c| c.is_ascii_alphanumeric() || *c == '_')
        .take(40)
        .collect();
    match (known, code.as_str()) {
        ("", "") => "GitHub gave no reason".into(),
        ("", code) => format!("GitHub says `{code}`"),
        (known, code) => format!("{known} (`{code}`)"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hive::flow::state::{Coding, Landing, Reviewing};

    fn sha(c: char) -> CommitSha {
        CommitSha::parse(&c.to_string().repeat(40)).unwrap()
    }

    #[test]
    fn a_group_is_gated_once_the_change_is_past_its_attempts() {
        let mut f = Flow {
            next: Node::Code,
            review: Reviewing {
                pr: Some(3),
                ..Default::default()
            },
            code: Coding {
                pushed: Some(sha('a')),
                ..Default::default()
            },
            ..Flow::default()
        };
        assert!(!group_asked(&mut f, &sha('b'), None), "still coding");
        assert_eq!((f.next, f.land.queue.is_none()), (Node::Code, true));
        f.next = Node::Rebase;
        assert!(
            !group_asked(&mut f, &sha('b'), None),
            "its head is being replaced"
        );
        // A person queued it while it waited for approval: taken up.
        f.next = Node::AwaitApproval;
        assert!(group_asked(&mut f, &sha('b'), Some(&sha('c'))));
        let q = f.land.queue.clone().unwrap();
        assert_eq!((q.head, f.next), (sha('a'), Node::Queue));
        assert_eq!(q.group.unwrap().passed, None);
        // Merged already: nothing.
        f.land.merged = Some(sha('d'));
        f.next = Node::Snapshot;
        assert!(!group_asked(&mut f, &sha('e'), None));
        assert_eq!(f.next, Node::Snapshot);
    }

    #[test]
    fn leaving_the_queue_rebases_after_a_conflict_and_else_asks_a_person() {
        let queued = || Flow {
            next: Node::Queue,
            review: Reviewing {
                pr: Some(3),
                ..Default::default()
            },
            land: Landing {
                queue: Some(Queued {
                    head: sha('a'),
                    group: None,
                }),
                ..Default::default()
            },
            ..Flow::default()
        };
        let mut f = queued();
        assert_eq!(dequeued(&mut f, "MERGE_CONFLICT", None, "x"), Left::Rebase);
        assert!(f.land.queue.is_none());
        // Once out, a second word changes nothing.
        assert_eq!(dequeued(&mut f, "CI_FAILURE", None, "x"), Left::Nothing);
        let mut f = queued();
        assert_eq!(
            dequeued(&mut f, "CI_FAILURE", Some(&sha('a')), "x"),
            Left::Person("a required check failed on its merge group (`CI_FAILURE`)".into())
        );
        assert_eq!(f.next, Node::Merge, "`/hive retry` queues it again");
        let mut f = queued();
        assert_eq!(
            dequeued(&mut f, "MANUAL", None, "alice"),
            Left::Person("@alice removed it".into())
        );
        // Another head (a push took it out) or merged: not this landing's business.
        let mut f = queued();
        assert_eq!(
            dequeued(&mut f, "MANUAL", Some(&sha('b')), "x"),
            Left::Nothing
        );
        assert_eq!(dequeued(&mut f, "ALREADY_MERGED", None, "x"), Left::Nothing);
        assert!(f.land.queue.is_some());
        // A reason GitHub adds later is said as sent, and only as a plain code.
        let mut f = queued();
        assert_eq!(
            dequeued(&mut f, "NEW_REASON <b>", None, "x"),
            Left::Person("GitHub says `NEW_REASONB`".into())
        );
    }
}
