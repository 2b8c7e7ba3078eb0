//! One store suite, run against both databases: SQLite (a file in a temp dir) and PostgreSQL
//! (a fresh database per test on the server named by `VIBELOOP_TEST_POSTGRES_URL`, which
//! `scripts/test` starts).

mod support;

use std::collections::HashSet;

use vibeloop::ids::{DeliveryId, InstallationId, RepoName};
use vibeloop::store::Store;
use vibeloop::store::deliveries::{NewDelivery, Stored};
use vibeloop::store::jobs::JobKind;
use vibeloop::store::tickets::{NewTicket, Opened};
use vibeloop::ticket::{TaskState, TicketId};

/// A migrated store of one dialect, dropped with its database at the end.
struct TestDb {
    store: Store,
    _dir: Option<tempfile::TempDir>,
}

async fn sqlite() -> TestDb {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}/store.db?mode=rwc", dir.path().display());
    TestDb {
        store: vibeloop::app::open_store(&url).await.unwrap(),
        _dir: Some(dir),
    }
}

async fn postgres() -> TestDb {
    let url = support::pg::fresh_database().await;
    TestDb {
        store: vibeloop::app::open_store(&url).await.unwrap(),
        _dir: None,
    }
}

macro_rules! both {
    ($($name:ident),* $(,)?) => {
        mod on_sqlite {
            $(#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn $name() { super::$name(super::sqlite().await.store).await })*
        }
        mod on_postgres {
            $(#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn $name() { super::$name(super::postgres().await.store).await })*
        }
    };
}

both!(
    migrations_run_twice,
    deliveries_are_deduplicated,
    a_delivery_outcome_is_recorded_only_by_its_jobs_owner,
    jobs_are_claimed_once_and_leases_expire,
    concurrent_claims_never_share_a_job,
    retries_wait_until_due,
    a_job_queued_for_later_can_be_hurried,
    tickets_are_numbered_per_repository,
    transitions_are_enforced_and_recorded,
    installations_are_tracked,
    memory_only_rises_and_canonical_feeds_the_repository,
    the_budget_ledger_is_kept_per_role,
    checkpoints_keep_the_flow,
    commands_run_once_per_source,
    a_job_asked_for_while_it_runs_runs_again,
    fresh_retries_restart_the_count_of_attempts,
    signals_are_consumed_with_the_flow_they_changed,
);

fn delivery(id: &DeliveryId, ignored: Option<&'static str>) -> NewDelivery {
    NewDelivery {
        delivery_id: id.clone(),
        event: "issues".into(),
        action: Some("labeled".into()),
        installation_id: Some(7),
        repo: Some("a/b".into()),
        payload: bytes::Bytes::from_static(b"{}"),
        ignored,
    }
}

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

async fn a_delivery_outcome_is_recorded_only_by_its_jobs_owner(store: Store) {
    let a = DeliveryId::parse("aaaa-1").unwrap();
    store.insert_delivery(&delivery(&a, None)).await.unwrap();
    let job = store.claim_job("w1", 60_000).await.unwrap().unwrap();
    // w1's lease runs out and w2 takes the job over.
    assert!(store.renew_lease(job.id, "w1", -1).await.unwrap());
    let taken = store.claim_job("w2", 60_000).await.unwrap().unwrap();
    assert_eq!(taken.id, job.id);
    let late = store
        .finish_delivery_job(job.id, "w1", "aaaa-1", "processed", Some("by w1"))
        .await
        .unwrap();
    assert!(!late, "a worker that lost the lease recorded an outcome");
    assert_eq!(
        store.delivery("aaaa-1").await.unwrap().unwrap().status,
        "queued"
    );
    assert!(
        store
            .finish_delivery_job(job.id, "w2", "aaaa-1", "processed", Some("by w2"))
            .await
            .unwrap()
    );
    let d = store.delivery("aaaa-1").await.unwrap().unwrap();
    assert_eq!(
        (d.status.as_str(), d.detail.as_deref()),
        ("processed", Some("by w2"))
    );
    assert!(store.job_counts().await.unwrap().is_empty());
}

async fn jobs_are_claimed_once_and_leases_expire(store: Store) {
    assert!(store.enqueue(JobKind::Ticket, "1").await.unwrap());
    assert!(
        !store.enqueue(JobKind::Ticket, "1").await.unwrap(),
        "a second live job for the same ticket"
    );
    assert!(store.enqueue(JobKind::Ticket, "2").await.unwrap());

    let j1 = store.claim_job("w1", 60_000).await.unwrap().unwrap();
    assert_eq!(
        (j1.kind, j1.key.as_str(), j1.attempts),
        (JobKind::Ticket, "1", 1)
    );
    let j2 = store.claim_job("w2", 60_000).await.unwrap().unwrap();
    assert_eq!(j2.key, "2");
    assert!(store.claim_job("w3", 60_000).await.unwrap().is_none());

    assert!(store.renew_lease(j1.id, "w1", 60_000).await.unwrap());
    assert!(
        !store.renew_lease(j1.id, "w2", 60_000).await.unwrap(),
        "renewed someone else's lease"
    );

    // w2's lease runs out (renewed to the past): the job is claimed again by another worker.
    assert!(store.renew_lease(j2.id, "w2", -1).await.unwrap());
    let again = store.claim_job("w3", 60_000).await.unwrap().unwrap();
    assert_eq!((again.id, again.attempts), (j2.id, 2));
    assert_eq!(
        again.taken_from.as_deref(),
        Some("w2"),
        "whose work it resumes"
    );
    assert_eq!(j1.taken_from, None);
    assert!(
        !store.renew_lease(j2.id, "w2", 60_000).await.unwrap(),
        "the old owner kept its lease"
    );

    store.complete_job(j1.id, "w1").await.unwrap();
    assert!(
        store.enqueue(JobKind::Ticket, "1").await.unwrap(),
        "a finished job blocks a new one"
    );
    assert_eq!(store.release_all_leases().await.unwrap(), 1);
    assert_eq!(
        store.job_counts().await.unwrap(),
        vec![("queued".into(), 2)],
        "finished jobs are deleted"
    );
}

async fn concurrent_claims_never_share_a_job(store: Store) {
    for i in 0..40 {
        store
            .enqueue(JobKind::Delivery, &format!("d{i}"))
            .await
            .unwrap();
    }
    let mut tasks = Vec::new();
    for w in 0..8 {
        let store = store.clone();
        tasks.push(tokio::spawn(async move {
            let mut mine = Vec::new();
            while let Some(job) = store.claim_job(&format!("w{w}"), 60_000).await.unwrap() {
                mine.push(job.key);
            }
            mine
        }));
    }
    let mut seen = HashSet::new();
    for t in tasks {
        for key in t.await.unwrap() {
            assert!(seen.insert(key.clone()), "{key} claimed twice");
        }
    }
    assert_eq!(seen.len(), 40);
}

async fn retries_wait_until_due(store: Store) {
    store.enqueue(JobKind::Delivery, "d").await.unwrap();
    let job = store.claim_job("w", 60_000).await.unwrap().unwrap();
    store
        .retry_job(job.id, "w", 3_600_000, "GitHub 502", false)
        .await
        .unwrap();
    assert!(
        store.claim_job("w", 60_000).await.unwrap().is_none(),
        "claimed before its time"
    );
    store
        .retry_job(job.id, "w", 0, "no owner: ignored", false)
        .await
        .unwrap();
    assert!(
        store.claim_job("w", 60_000).await.unwrap().is_none(),
        "a non-owner rescheduled the job"
    );
    store.fail_job(job.id, "w", "gave up").await.unwrap();
    assert_eq!(
        store.job_counts().await.unwrap(),
        vec![("queued".into(), 1)],
        "only the owner may end a job"
    );
}

async fn a_job_queued_for_later_can_be_hurried(store: Store) {
    store
        .enqueue_after(JobKind::Sweep, "github", 3_600_000)
        .await
        .unwrap();
    assert!(store.claim_job("w", 60_000).await.unwrap().is_none());
    // Asking again does not bring it forward; hurrying does.
    store.enqueue(JobKind::Sweep, "github").await.unwrap();
    assert!(store.claim_job("w", 60_000).await.unwrap().is_none());
    store.hurry(JobKind::Sweep, "github").await.unwrap();
    let job = store
        .claim_job("w", 60_000)
        .await
        .unwrap()
        .expect("due now");
    assert_eq!((job.kind, job.key.as_str()), (JobKind::Sweep, "github"));
    // A running job is left alone.
    store.hurry(JobKind::Sweep, "github").await.unwrap();
    assert!(store.claim_job("v", 60_000).await.unwrap().is_none());
}

fn ticket<'a>(repo: &'a RepoName, issue: u64) -> NewTicket<'a> {
    NewTicket {
        repo,
        issue_number: issue,
        installation_id: InstallationId(7),
        title: "t",
        body: "b",
        base_branch: "main",
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

async fn memory_only_rises_and_canonical_feeds_the_repository(store: Store) {
    use vibeloop::ticket::MemoryStability::*;
    let repo = RepoName::parse("acme/a").unwrap();
    let other = RepoName::parse("acme/b").unwrap();
    let (t, _) = store.open_ticket(&ticket(&repo, 1)).await.unwrap();
    let (u, _) = store.open_ticket(&ticket(&other, 1)).await.unwrap();
    store
        .add_memory(&repo, t.key, "plan", "add() lives in calc.py", Ephemeral)
        .await
        .unwrap();
    store
        .add_memory(
            &repo,
            t.key,
            "gate_command",
            "python3 -m pytest -q works",
            Verified,
        )
        .await
        .unwrap();
    store
        .add_memory(&other, u.key, "plan", "elsewhere", Canonical)
        .await
        .unwrap();
    assert!(store.canonical_memory(&repo, 10).await.unwrap().is_empty());
    assert_eq!(
        store.promote_memory(t.key, Derived).await.unwrap(),
        1,
        "only the Ephemeral entry rises to Derived"
    );
    let levels: Vec<_> = store
        .ticket_memory(t.key)
        .await
        .unwrap()
        .into_iter()
        .map(|e| e.stability)
        .collect();
    assert_eq!(levels, [Derived, Verified], "an entry never falls");
    store.promote_memory(t.key, Canonical).await.unwrap();
    let canon = store.canonical_memory(&repo, 10).await.unwrap();
    assert_eq!(
        canon.iter().map(|e| e.text.as_str()).collect::<Vec<_>>(),
        ["python3 -m pytest -q works", "add() lives in calc.py"]
    );
    assert_eq!(store.canonical_memory(&repo, 1).await.unwrap().len(), 1);
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

async fn checkpoints_keep_the_flow(store: Store) {
    use serde_json::json;
    let repo = RepoName::parse("acme/a").unwrap();
    let (t, _) = store.open_ticket(&ticket(&repo, 1)).await.unwrap();
    assert_eq!(store.flow(t.key).await.unwrap(), None);
    store
        .checkpoint(
            t.key,
            "plan",
            1,
            &json!({"issue": 1}),
            &json!({"steps": 2}),
            &json!({"next": "plan_check"}),
        )
        .await
        .unwrap();
    store
        .checkpoint(
            t.key,
            "plan_check",
            1,
            &json!({}),
            &json!({"findings": []}),
            &json!({"next": "builder"}),
        )
        .await
        .unwrap();
    assert_eq!(
        store.flow(t.key).await.unwrap(),
        Some(json!({"next": "builder"}))
    );
    let cps = store.checkpoints(t.key).await.unwrap();
    assert_eq!(
        cps.iter().map(|c| c.node.as_str()).collect::<Vec<_>>(),
        ["plan", "plan_check"]
    );
    assert_eq!(cps[0].outputs, json!({"steps": 2}));
    store
        .set_flow(t.key, &json!({"next": "abort"}))
        .await
        .unwrap();
    assert_eq!(
        store.flow(t.key).await.unwrap(),
        Some(json!({"next": "abort"}))
    );
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

async fn a_job_asked_for_while_it_runs_runs_again(store: Store) {
    assert!(store.enqueue(JobKind::Ticket, "7").await.unwrap());
    let job = store.claim_job("w", 60_000).await.unwrap().unwrap();
    // A signal arrives while the run works: no second live job, but the request is kept.
    assert!(!store.enqueue(JobKind::Ticket, "7").await.unwrap());
    assert!(store.claim_job("w", 60_000).await.unwrap().is_none());
    store.complete_job(job.id, "w").await.unwrap();
    let again = store
        .claim_job("w", 60_000)
        .await
        .unwrap()
        .expect("queued again");
    assert_eq!((again.key.as_str(), again.attempts), ("7", 1));
    // Without a request during the run, a finished job is gone.
    store.complete_job(again.id, "w").await.unwrap();
    assert!(store.claim_job("w", 60_000).await.unwrap().is_none());
    assert_eq!(store.job_counts().await.unwrap(), vec![]);

    // A requeue at the tail, asked by the run itself, waits for its delay.
    store.enqueue(JobKind::Ticket, "8").await.unwrap();
    let job = store.claim_job("w", 60_000).await.unwrap().unwrap();
    assert!(
        !store
            .enqueue_after(JobKind::Ticket, "8", 3_600_000)
            .await
            .unwrap()
    );
    store.complete_job(job.id, "w").await.unwrap();
    assert!(
        store.claim_job("w", 60_000).await.unwrap().is_none(),
        "ran before its delay"
    );
    assert_eq!(
        store.job_counts().await.unwrap(),
        vec![("queued".into(), 1)]
    );
}

async fn fresh_retries_restart_the_count_of_attempts(store: Store) {
    store.enqueue(JobKind::Ticket, "1").await.unwrap();
    let job = store.claim_job("w", 60_000).await.unwrap().unwrap();
    store.retry_job(job.id, "w", 0, "502", false).await.unwrap();
    let job = store.claim_job("w", 60_000).await.unwrap().unwrap();
    assert_eq!(job.attempts, 2);
    store
        .retry_job(job.id, "w", 0, "502 after progress", true)
        .await
        .unwrap();
    let job = store.claim_job("w", 60_000).await.unwrap().unwrap();
    assert_eq!(job.attempts, 1);
}

async fn signals_are_consumed_with_the_flow_they_changed(store: Store) {
    use serde_json::json;
    let repo = RepoName::parse("acme/a").unwrap();
    let (t, _) = store.open_ticket(&ticket(&repo, 1)).await.unwrap();
    store
        .signal(t.key, "feedback", &json!({"text": "x"}), "ann")
        .await
        .unwrap();
    store
        .signal(t.key, "approve", &json!({}), "bob")
        .await
        .unwrap();
    let pending = store.pending_signals(t.key).await.unwrap();
    assert_eq!(
        pending.iter().map(|s| s.kind.as_str()).collect::<Vec<_>>(),
        ["feedback", "approve"]
    );
    // Read again before they are consumed (a crash in between): still there.
    assert_eq!(store.pending_signals(t.key).await.unwrap(), pending);
    // One more arrives while the first two are applied: it stays pending.
    store
        .signal(t.key, "abort", &json!({}), "cy")
        .await
        .unwrap();
    store
        .consume_signals(t.key, pending[1].id, &json!({"approved_by": "bob"}))
        .await
        .unwrap();
    assert_eq!(
        store.flow(t.key).await.unwrap(),
        Some(json!({"approved_by": "bob"}))
    );
    let left = store.pending_signals(t.key).await.unwrap();
    assert_eq!(
        left.iter().map(|s| s.kind.as_str()).collect::<Vec<_>>(),
        ["abort"]
    );
}
