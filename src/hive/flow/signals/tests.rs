//! How signals change the flow: reviews, pushes, retries.

use super::*;
use crate::hive::flow::state::Work;
use crate::hive::flow::state::{Coding, Landing, Reviewing, Testing};

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
        code: Coding {
            attempt: 1,
            attempt_limit: 2,
            builder: Some(work),
            ..Default::default()
        },
        review: Reviewing {
            approved_by: Some("maintainer".into()),
            ..Default::default()
        },
        ..Flow::default()
    };
    assert_eq!(
        review_starts_attempt(&mut f),
        None,
        "no review comment waits"
    );
    f.code.review_findings = vec![crate::ticket::Finding::new("review", "say why")];
    assert_eq!(review_starts_attempt(&mut f), Some(true));
    assert_eq!(
        (f.next, f.code.attempt, f.review.approved_by.clone()),
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
        review: Reviewing {
            approved_by: Some("alice".into()),
            ..Default::default()
        },
        land: Landing {
            rebased: Some(sha.clone()),
            ..Default::default()
        },
        ..Flow::default()
    };
    // The approver's own push keeps the approval; the landing rebases again.
    assert_eq!(after_push(&mut f, "alice"), None);
    assert_eq!((f.next, f.land.rebased.clone()), (Node::Rebase, None));
    // Someone else's: the approval is withdrawn and asked for again.
    f.next = Node::Regate;
    f.land.rebased = Some(sha);
    assert_eq!(after_push(&mut f, "bob").as_deref(), Some("alice"));
    assert_eq!(
        (f.next, f.review.approved_by.clone()),
        (Node::AwaitApproval, None)
    );
    // Before the landing, only the approval changes.
    let mut f = Flow {
        next: Node::Code,
        review: Reviewing {
            approved_by: Some("alice".into()),
            ..Default::default()
        },
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
        review: Reviewing {
            pr: Some(4),
            ..Default::default()
        },
        code: Coding {
            attempt: 2,
            attempt_limit: 4,
            ..Default::default()
        },
        land: Landing {
            requeues: 1,
            ..Default::default()
        },
        ..Flow::default()
    };
    retry(&mut f, "", 3);
    assert_eq!(
        (f.next, f.code.attempt, f.land.requeues),
        (Node::Merge, 2, 0)
    );
    let mut f = Flow {
        next: Node::Rebase,
        review: Reviewing {
            pr: Some(4),
            ..Default::default()
        },
        land: Landing {
            rebased: Some(CommitSha::parse(&"a".repeat(40)).unwrap()),
            requeues: 4,
            ..Default::default()
        },
        ..Flow::default()
    };
    retry(&mut f, "", 3);
    assert_eq!(
        (f.next, f.land.rebased, f.land.requeues),
        (Node::Rebase, None, 0)
    );
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
        plan: Planning {
            blueprint: Some(Default::default()),
            ..Default::default()
        },
        tests: Testing {
            breaker: Some(work()),
            ..Default::default()
        },
        code: Coding {
            builder: Some(work()),
            attempt: 3,
            attempt_limit: 3,
            ..Default::default()
        },
        ..Flow::default()
    };
    retry(&mut f, "builder", 2);
    assert_eq!(
        (
            f.next,
            f.code.attempt,
            f.code.attempt_limit,
            f.tests.breaker.is_some()
        ),
        (Node::Code, 4, 6, true)
    );
    retry(&mut f, "architect", 2);
    assert_eq!((f.next, f.plan.blueprint.is_none()), (Node::Plan, true));
}
