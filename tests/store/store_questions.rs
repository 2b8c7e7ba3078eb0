//! Questions (`/hive ask`) and plan-only tickets in the store, on both databases: a question is
//! recorded once per source with the job that answers it, a follow-up finds the answers given
//! before it on the same issue, and a ticket started to plan only says so in its first flow.

use vibeloop::ids::{InstallationId, RepoName};
use vibeloop::store::Store;
use vibeloop::store::jobs::JobKey;
use vibeloop::store::questions::{Answer, NewQuestion};
use vibeloop::store::tickets::{NewTicket, Start};

both!(
    a_question_is_recorded_once_with_its_job_and_earlier_answers_are_found,
    a_plan_only_ticket_starts_with_its_flow_saying_so,
    what_was_asked_lately_is_counted_per_person_per_repository_and_in_dollars,
);

async fn what_was_asked_lately_is_counted_per_person_per_repository_and_in_dollars(store: Store) {
    let (repo, other) = (
        RepoName::parse("acme/a").unwrap(),
        RepoName::parse("acme/b").unwrap(),
    );
    let ask = |repo, source, author| NewQuestion {
        source,
        repo,
        installation_id: InstallationId(7),
        issue: 3,
        pull_request: false,
        thread: None,
        base_branch: "main",
        author,
        question: "why?",
    };
    let start = vibeloop::now_ms();
    for (r, source, author) in [
        (&repo, "comment:1#1", "alice"),
        (&repo, "comment:2#1", "alice"),
        (&repo, "review-comment:3#1", "bob"),
        (&other, "comment:4#1", "alice"),
    ] {
        assert!(store.ask_question(&ask(r, source, author)).await.unwrap());
    }
    let spend = |usd: f64| serde_json::json!({ "calls": 1, "cost_usd": usd });
    for (source, usd) in [("comment:1#1", 0.25), ("review-comment:3#1", 0.5)] {
        let s = spend(usd);
        let answer = Answer {
            text: "x",
            reply: "x",
            commit: &"a".repeat(40),
            spend: &s,
        };
        store.answer_question(source, &answer).await.unwrap();
    }
    let asked = store
        .asked_since("acme/a", "alice", start - 1, start - 1)
        .await
        .unwrap();
    assert_eq!((asked.by_person, asked.in_repo), (2, 3));
    assert!(asked.by_person_oldest.is_some_and(|t| t >= start - 1));
    let dollars: Vec<f64> = asked.spent.iter().map(|(_, usd)| *usd).collect();
    assert_eq!(dollars, [0.25, 0.5]);
    // Nothing since a moment from now.
    let later = store
        .asked_since("acme/a", "alice", i64::MAX - 1, i64::MAX - 1)
        .await
        .unwrap();
    assert_eq!(
        (later.by_person, later.in_repo, later.spent.len()),
        (0, 0, 0)
    );
    // One question per comment: another line of comment 1 sees the first.
    assert!(store.comment_asked("comment:1#2").await.unwrap());
    assert!(!store.comment_asked("comment:1#1").await.unwrap(), "itself");
    assert!(!store.comment_asked("comment:9#1").await.unwrap());
    assert!(!store.comment_asked("comment:1").await.unwrap(), "no line");
}

async fn a_question_is_recorded_once_with_its_job_and_earlier_answers_are_found(store: Store) {
    let repo = RepoName::parse("acme/a").unwrap();
    let ask = |source: &'static str, question: &'static str| NewQuestion {
        source,
        repo: &repo,
        installation_id: InstallationId(7),
        issue: 3,
        pull_request: false,
        thread: None,
        base_branch: "main",
        author: "octocat",
        question,
    };
    assert!(
        store
            .ask_question(&ask("comment:1#1", "where?"))
            .await
            .unwrap()
    );
    assert!(
        !store
            .ask_question(&ask("comment:1#1", "where?"))
            .await
            .unwrap(),
        "the same comment line asked twice"
    );
    let job = store
        .live_job(&JobKey::Question("comment:1#1".into()))
        .await
        .unwrap();
    assert!(job.is_some(), "no job answers the question");
    let first = store.question("comment:1#1").await.unwrap().unwrap();
    assert_eq!(
        (first.question.as_str(), first.answer.as_deref()),
        ("where?", None)
    );

    // A follow-up sees only the answered questions asked before it.
    assert!(
        store
            .ask_question(&ask("comment:2#1", "why?"))
            .await
            .unwrap()
    );
    let second = store.question("comment:2#1").await.unwrap().unwrap();
    let before = |at| store.answered_before("acme/a", 3, at, 3);
    assert!(before(second.id).await.unwrap().is_empty());
    let answer = Answer {
        text: "in a.py",
        reply: "in a.py\n\n<sub>$0.00</sub>",
        commit: &"a".repeat(40),
        spend: &serde_json::json!({ "calls": 2 }),
    };
    store.answer_question("comment:1#1", &answer).await.unwrap();
    let earlier = before(second.id).await.unwrap();
    assert_eq!(earlier.len(), 1);
    assert_eq!(earlier[0].answer.as_deref(), Some("in a.py"));
    assert_eq!(
        earlier[0].reply.as_deref(),
        Some("in a.py\n\n<sub>$0.00</sub>")
    );
    assert_eq!(earlier[0].spend, Some(serde_json::json!({ "calls": 2 })));
    assert!(before(first.id).await.unwrap().is_empty());
    assert!(
        store
            .answered_before("acme/a", 4, i64::MAX, 3)
            .await
            .unwrap()
            .is_empty()
    );

    store
        .question_failed("comment:2#1", "the model is down")
        .await
        .unwrap();
    let failed = store.question("comment:2#1").await.unwrap().unwrap();
    assert_eq!(failed.error.as_deref(), Some("the model is down"));
    assert_eq!(
        before(i64::MAX).await.unwrap().len(),
        1,
        "a failed question is no answer"
    );
}

async fn a_plan_only_ticket_starts_with_its_flow_saying_so(store: Store) {
    let repo = RepoName::parse("acme/a").unwrap();
    let open = |issue, start| NewTicket {
        repo: &repo,
        issue_number: issue,
        installation_id: InstallationId(7),
        title: "t",
        body: "b",
        base_branch: "main",
        chosen_base: None,
        start,
    };
    let (build, _) = store.open_ticket(&open(1, Start::Build)).await.unwrap();
    let (label, _) = store.open_ticket(&open(2, Start::PlanLabel)).await.unwrap();
    let (command, _) = store
        .open_ticket(&open(3, Start::PlanCommand))
        .await
        .unwrap();
    assert_eq!(store.flow(build.key).await.unwrap(), None);
    assert_eq!(
        store.flow(label.key).await.unwrap(),
        Some(serde_json::json!({ "plan_only": true }))
    );
    assert_eq!(
        store.flow(command.key).await.unwrap(),
        Some(serde_json::json!({ "plan_only": true, "unlabelled": true }))
    );
}
