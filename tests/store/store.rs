//! The store suite, run against both databases (see `harness/store_db.rs`): migrations,
//! deliveries, tickets and their transitions, installations, memory, the budget ledger,
//! commands. The job queue is in `store_jobs.rs`, checkpoints and signals in `store_flow.rs`.

use vibeloop::ids::{DeliveryId, InstallationId, RepoName};
use vibeloop::store::Store;
use vibeloop::store::deliveries::Stored;
use vibeloop::store::memory::{Focus, Memo};
use vibeloop::store::tickets::{NewTicket, Opened};
use vibeloop::ticket::{MemoryKind, MemoryStability};
use vibeloop::ticket::{TaskState, TicketId};

use crate::store_db::delivery;

both!(
    migrations_run_twice,
    deliveries_are_deduplicated,
    tickets_are_numbered_per_repository,
    transitions_are_enforced_and_recorded,
    installations_are_tracked,
    memory_rises_to_its_ceiling_and_to_canonical_only_once_verified,
    a_failed_step_demotes_what_it_produced_for_good,
    a_ticket_that_fails_has_its_memory_demoted,
    later_tickets_are_told_the_canonical_memory_relevant_to_them,
    the_budget_ledger_is_kept_per_role,
    commands_run_once_per_source,
);

async fn migrations_run_twice(store: Store) {
    store.migrate().await.unwrap();
    assert!(store.ping().await);
}

async fn deliveries_are_deduplicated(store: Store) {
    let a = DeliveryId::parse("aaaa-1").unwrap();
    let b = DeliveryId::parse("bbbb-2").unwrap();
    assert_eq!(
        store.insert_delivery(&delivery(&a, None)).await.unwrap(),
        Stored::New
    );
    assert_eq!(
        store.insert_delivery(&delivery(&a, None)).await.unwrap(),
        Stored::Duplicate
    );
    assert_eq!(
        store
            .insert_delivery(&delivery(&b, Some("not handled")))
            .await
            .unwrap(),
        Stored::New
    );
    assert_eq!(
        store.delivery_counts().await.unwrap(),
        vec![("ignored".into(), 1), ("queued".into(), 1)]
    );
    // Only the handled delivery has a job, once.
    assert_eq!(
        store.job_counts().await.unwrap(),
        vec![("queued".into(), 1)]
    );
    store
        .finish_delivery("aaaa-1", "processed", Some("opened T-1"))
        .await
        .unwrap();
    let d = store.delivery("aaaa-1").await.unwrap().unwrap();
    assert_eq!(
        (d.status.as_str(), d.detail.as_deref()),
        ("processed", Some("opened T-1"))
    );
    assert!(store.delivery("nope").await.unwrap().is_none());
}

pub(crate) fn ticket<'a>(repo: &'a RepoName, issue: u64) -> NewTicket<'a> {
    NewTicket {
        repo,
        issue_number: issue,
        installation_id: InstallationId(7),
        title: "t",
        body: "b",
        base_branch: "main",
        chosen_base: None,
        start: Default::default(),
    }
}

async fn tickets_are_numbered_per_repository(store: Store) {
    let a = RepoName::parse("acme/a").unwrap();
    let b = RepoName::parse("acme/b").unwrap();
    let (t1, o1) = store.open_ticket(&ticket(&a, 10)).await.unwrap();
    let (t2, _) = store.open_ticket(&ticket(&a, 11)).await.unwrap();
    let (t3, _) = store.open_ticket(&ticket(&b, 10)).await.unwrap();
    assert_eq!(
        (t1.id, t2.id, t3.id),
        (TicketId(1), TicketId(2), TicketId(1))
    );
    assert_eq!(o1, Opened::Created);
    assert_eq!(t1.state, TaskState::Pending);
    // The same issue labelled again: the open ticket stands.
    let (same, o) = store.open_ticket(&ticket(&a, 10)).await.unwrap();
    assert_eq!((same.key, o), (t1.key, Opened::AlreadyOpen));
    assert_eq!(
        store.job_counts().await.unwrap(),
        vec![("queued".into(), 3)]
    );
    // A failed ticket is restarted by a new label, keeping its number.
    store
        .move_ticket(t1.key, TaskState::Pending, TaskState::Failed, Some("boom"))
        .await
        .unwrap();
    let (restarted, o) = store.open_ticket(&ticket(&a, 10)).await.unwrap();
    assert_eq!(
        (restarted.id, restarted.state, o),
        (TicketId(1), TaskState::Pending, Opened::Restarted)
    );
    assert_eq!(restarted.detail, None);
    assert_eq!(store.tickets().await.unwrap().len(), 3);
    assert_eq!(
        store.ticket_for_issue(&b, 10).await.unwrap().unwrap().key,
        t3.key
    );
}

async fn transitions_are_enforced_and_recorded(store: Store) {
    let repo = RepoName::parse("acme/a").unwrap();
    let (t, _) = store.open_ticket(&ticket(&repo, 1)).await.unwrap();
    assert!(
        store
            .move_ticket(t.key, TaskState::Pending, TaskState::InProgress, None)
            .await
            .is_err(),
        "skipped ahead"
    );
    store
        .move_ticket(t.key, TaskState::Pending, TaskState::Preparing, None)
        .await
        .unwrap();
    // A stale view of the state is refused: nobody moves a ticket they did not see.
    assert!(
        store
            .move_ticket(t.key, TaskState::Pending, TaskState::Preparing, None)
            .await
            .is_err()
    );
    store.set_status_comment(t.key, 99).await.unwrap();
    store.set_pr_number(t.key, 5).await.unwrap();
    store.set_head_sha(t.key, "abc").await.unwrap();
    let t = store.ticket(t.key).await.unwrap().unwrap();
    assert_eq!(
        (
            t.state,
            t.status_comment_id,
            t.pr_number,
            t.head_sha.as_deref()
        ),
        (TaskState::Preparing, Some(99), Some(5), Some("abc"))
    );
    store
        .add_event(
            t.key,
            "tool_complete",
            &serde_json::json!({ "name": "read_file" }),
        )
        .await
        .unwrap();
    let kinds: Vec<String> = store
        .events(t.key)
        .await
        .unwrap()
        .into_iter()
        .map(|(_, k, _)| k)
        .collect();
    assert_eq!(kinds, ["state", "state", "tool_complete"]);
}

async fn installations_are_tracked(store: Store) {
    store
        .upsert_installation(InstallationId(7), "acme")
        .await
        .unwrap();
    store
        .upsert_installation(InstallationId(8), "other")
        .await
        .unwrap();
    store.delete_installation(InstallationId(8)).await.unwrap();
    assert_eq!(
        store.installations().await.unwrap(),
        vec![(7, "acme".into())]
    );
    store
        .upsert_installation(InstallationId(8), "other")
        .await
        .unwrap();
    assert_eq!(store.installations().await.unwrap().len(), 2);
}

/// A memo of `kind` from `step` about `paths`.
fn memo<'a>(kind: MemoryKind, step: &'a str, text: &'a str, paths: &'a [String]) -> Memo<'a> {
    Memo {
        kind,
        step,
        text,
        paths,
    }
}

/// `(text, stability)` of each entry of `t`, oldest first.
async fn levels(store: &Store, t: vibeloop::ids::TicketKey) -> Vec<(String, MemoryStability)> {
    let all = store.ticket_memory(t).await.unwrap();
    all.into_iter().map(|e| (e.text, e.stability)).collect()
}

async fn memory_rises_to_its_ceiling_and_to_canonical_only_once_verified(store: Store) {
    use MemoryStability::*;
    let repo = RepoName::parse("acme/a").unwrap();
    let (t, _) = store.open_ticket(&ticket(&repo, 1)).await.unwrap();
    let calc = ["calc.py".to_owned()];
    let plan = memo(MemoryKind::Plan, "plan", "T-1 (fix add)", &[]);
    let id = store
        .add_memory(&repo, t.key, &plan, Ephemeral)
        .await
        .unwrap();
    // An opinion asked for at Verified is held to its ceiling.
    let opinion = memo(
        MemoryKind::ReviewOpinion,
        "review",
        "calc.py:1 use sum()",
        &[],
    );
    store
        .add_memory(&repo, t.key, &opinion, Verified)
        .await
        .unwrap();
    // The same live entry is not written twice (a resumed step).
    assert_eq!(
        store
            .add_memory(&repo, t.key, &plan, Ephemeral)
            .await
            .unwrap(),
        id
    );
    assert_eq!(store.promote_memory(t.key, Derived).await.unwrap(), 1);
    // Merged before the gates confirmed anything: nothing becomes Canonical.
    assert_eq!(store.promote_memory(t.key, Canonical).await.unwrap(), 0);
    let file = memo(
        MemoryKind::FileRole,
        "attempt-1",
        "`calc.py` is source",
        &calc,
    );
    store
        .add_memory(&repo, t.key, &file, Ephemeral)
        .await
        .unwrap();
    assert_eq!(
        store.promote_memory(t.key, Verified).await.unwrap(),
        2,
        "the plan and the file, not the opinion"
    );
    store.promote_memory(t.key, Canonical).await.unwrap();
    assert_eq!(
        levels(&store, t.key).await,
        [
            ("T-1 (fix add)".to_owned(), Canonical),
            ("calc.py:1 use sum()".to_owned(), Derived),
            ("`calc.py` is source".to_owned(), Canonical),
        ]
    );
    let all = store.ticket_memory(t.key).await.unwrap();
    assert_eq!(
        (all[1].kind.as_str(), all[1].ceiling, all[2].paths.clone()),
        ("review_opinion", Derived, calc.to_vec())
    );
    // An entry never falls by promotion.
    assert_eq!(store.promote_memory(t.key, Derived).await.unwrap(), 0);
    assert_eq!(store.canonical_memory(&repo, 10).await.unwrap().len(), 2);
}

async fn a_failed_step_demotes_what_it_produced_for_good(store: Store) {
    use MemoryStability::*;
    let repo = RepoName::parse("acme/a").unwrap();
    let (t, _) = store.open_ticket(&ticket(&repo, 1)).await.unwrap();
    for (kind, step, text) in [
        (MemoryKind::Plan, "plan", "the plan"),
        (MemoryKind::TestNames, "tests", "test_negative"),
        (MemoryKind::FileRole, "attempt-1", "`calc.py` is source"),
    ] {
        store
            .add_memory(&repo, t.key, &memo(kind, step, text, &[]), Derived)
            .await
            .unwrap();
    }
    store.promote_memory(t.key, Verified).await.unwrap();
    assert_eq!(
        store.demote_memory(t.key, Some("attempt-1")).await.unwrap(),
        1
    );
    assert_eq!(
        levels(&store, t.key).await,
        [
            ("the plan".to_owned(), Verified),
            ("test_negative".to_owned(), Verified),
            ("`calc.py` is source".to_owned(), Ephemeral),
        ]
    );
    // No later promotion lifts it; the next attempt writes the same fact anew.
    let again = memo(
        MemoryKind::FileRole,
        "attempt-2",
        "`calc.py` is source",
        &[],
    );
    store
        .add_memory(&repo, t.key, &again, Ephemeral)
        .await
        .unwrap();
    store.promote_memory(t.key, Verified).await.unwrap();
    store.promote_memory(t.key, Canonical).await.unwrap();
    let all = store.ticket_memory(t.key).await.unwrap();
    let steps: Vec<_> = all
        .iter()
        .map(|e| (e.step.as_str(), e.stability, e.ceiling))
        .collect();
    assert_eq!(
        steps,
        [
            ("plan", Canonical, Canonical),
            ("tests", Canonical, Canonical),
            ("attempt-1", Ephemeral, Ephemeral),
            ("attempt-2", Canonical, Canonical),
        ]
    );
}

async fn a_ticket_that_fails_has_its_memory_demoted(store: Store) {
    use MemoryStability::*;
    let repo = RepoName::parse("acme/a").unwrap();
    let (t, _) = store.open_ticket(&ticket(&repo, 1)).await.unwrap();
    let (u, _) = store.open_ticket(&ticket(&repo, 2)).await.unwrap();
    for k in [t.key, u.key] {
        let m = memo(
            MemoryKind::GateCommand,
            "attempt-1",
            "`make test` works",
            &[],
        );
        store.add_memory(&repo, k, &m, Verified).await.unwrap();
    }
    store
        .move_ticket(
            t.key,
            TaskState::Pending,
            TaskState::Failed,
            Some("aborted"),
        )
        .await
        .unwrap();
    assert_eq!(
        levels(&store, t.key).await,
        [("`make test` works".to_owned(), Ephemeral)]
    );
    assert_eq!(
        levels(&store, u.key).await,
        [("`make test` works".to_owned(), Verified)],
        "another ticket's memory stands"
    );
    // Restarted by a new label, it keeps nothing of its failed run: what it did then never
    // rises with the new run.
    store.open_ticket(&ticket(&repo, 1)).await.unwrap();
    store.promote_memory(t.key, Verified).await.unwrap();
    store.promote_memory(t.key, Canonical).await.unwrap();
    assert_eq!(
        levels(&store, t.key).await,
        [("`make test` works".to_owned(), Ephemeral)]
    );
}

async fn later_tickets_are_told_the_canonical_memory_relevant_to_them(store: Store) {
    use MemoryStability::*;
    let repo = RepoName::parse("acme/a").unwrap();
    let other = RepoName::parse("acme/b").unwrap();
    let (t, _) = store.open_ticket(&ticket(&repo, 1)).await.unwrap();
    let (u, _) = store.open_ticket(&ticket(&other, 1)).await.unwrap();
    let path = |p: &str| vec![p.to_owned()];
    let entries = [
        (
            MemoryKind::FileRole,
            "`calc/add.py` is source",
            path("calc/add.py"),
            Canonical,
        ),
        (
            MemoryKind::FileRole,
            "`web/app.js` is source",
            path("web/app.js"),
            Canonical,
        ),
        (
            MemoryKind::GateCommand,
            "`make test` is the test command",
            vec![],
            Canonical,
        ),
        // Not merged.
        (
            MemoryKind::FileRole,
            "`calc/mul.py` is source",
            path("calc/mul.py"),
            Verified,
        ),
    ];
    for (kind, text, paths, at) in &entries {
        let m = memo(*kind, "attempt-1", text, paths);
        store.add_memory(&repo, t.key, &m, Verified).await.unwrap();
        if *at == Canonical {
            store.promote_memory(t.key, Canonical).await.unwrap();
        }
    }
    let m = memo(
        MemoryKind::FileRole,
        "attempt-1",
        "`calc/add.py` elsewhere",
        &[],
    );
    store.add_memory(&other, u.key, &m, Derived).await.unwrap();
    store.promote_memory(u.key, Verified).await.unwrap();
    store.promote_memory(u.key, Canonical).await.unwrap();

    let focus = Focus::new(&[], "calc/add.py: add() of floats is off");
    let told = |budget| {
        let (store, repo, focus) = (store.clone(), repo.clone(), focus.clone());
        async move {
            let chosen = store.relevant_memory(&repo, &focus, budget).await.unwrap();
            chosen.into_iter().map(|e| e.text).collect::<Vec<_>>()
        }
    };
    // The file the issue names first, then what holds for the whole repository; not the
    // unrelated file, not what was never merged, not another repository's.
    assert_eq!(
        told(4096).await,
        ["`calc/add.py` is source", "`make test` is the test command"]
    );
    // Within the budget, the most relevant.
    assert_eq!(told(30).await, ["`calc/add.py` is source"]);
}

async fn the_budget_ledger_is_kept_per_role(store: Store) {
    use vibeloop::llm::budget::Spend;
    let repo = RepoName::parse("acme/a").unwrap();
    let (t, _) = store.open_ticket(&ticket(&repo, 1)).await.unwrap();
    assert!(store.budget(t.key).await.unwrap().is_empty());
    let mut ledger = std::collections::BTreeMap::new();
    ledger.insert(
        "builder".to_owned(),
        Spend {
            calls: 3,
            prompt_tokens: 1200,
            completion_tokens: 300,
            cost_usd: 0.0125,
            millis: 4200,
        },
    );
    store.save_budget(t.key, &ledger).await.unwrap();
    ledger.get_mut("builder").unwrap().calls = 4;
    ledger.insert(
        "critic".to_owned(),
        Spend {
            calls: 1,
            ..Spend::default()
        },
    );
    store.save_budget(t.key, &ledger).await.unwrap();
    assert_eq!(store.budget(t.key).await.unwrap(), ledger);
}

async fn commands_run_once_per_source(store: Store) {
    use vibeloop::store::commands::NewCommand;
    let repo = RepoName::parse("acme/a").unwrap();
    let c = NewCommand {
        repo: &repo,
        issue: 3,
        ticket: None,
        source: "comment:9#1",
        author: "octocat",
        command: "approve",
        permission: "write",
    };
    assert!(store.claim_command(&c).await.unwrap());
    assert!(
        !store.claim_command(&c).await.unwrap(),
        "the same comment line ran twice"
    );
    assert!(
        store
            .claim_command(&NewCommand {
                source: "comment:9#2",
                ..c.clone()
            })
            .await
            .unwrap()
    );
    store
        .command_outcome("comment:9#1", "approve", "approved")
        .await
        .unwrap();
    let all = store.commands_for(&repo, 3).await.unwrap();
    assert_eq!(
        all.iter().map(|r| r.outcome.as_str()).collect::<Vec<_>>(),
        ["approved", "received"]
    );
    assert_eq!(all[0].author, "octocat");
}
