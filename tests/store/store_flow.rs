//! A ticket's flow in the store, on both databases: checkpoints keep the state the next node
//! starts from, signals are consumed with the flow they changed, and a run that outlived its
//! ticket's restart writes nothing the next run would start from.

use serde_json::json;
use vibeloop::ids::RepoName;
use vibeloop::store::tickets::Opened;
use vibeloop::store::{Store, StoreError};
use vibeloop::ticket::{Signal, TaskState};

use crate::store::ticket;

both!(
    checkpoints_keep_the_flow,
    signals_are_consumed_with_the_flow_they_changed,
    a_run_that_outlived_a_restart_hands_the_next_run_nothing,
);

async fn a_run_that_outlived_a_restart_hands_the_next_run_nothing(store: Store) {
    let repo = RepoName::parse("acme/a").unwrap();
    let (t, _) = store.open_ticket(&ticket(&repo, 1)).await.unwrap();
    let old = t.run_of();
    let waiting = json!({"next": "await_approval", "pr": 4});
    store
        .checkpoint(old, "critic", 1, &json!({}), &json!({}), &waiting)
        .await
        .unwrap();
    // `/hive abort`: the run reads the signal and ends the ticket, then tidies up.
    let abort = Signal::Abort { why: None };
    store.signal(t.key, &abort, "ann").await.unwrap();
    let read = store.pending_signals(t.key).await.unwrap();
    store
        .move_ticket(
            t.key,
            TaskState::Pending,
            TaskState::Failed,
            Some("Aborted"),
        )
        .await
        .unwrap();
    // Meanwhile the issue is labelled again: the ticket starts over.
    let (again, opened) = store.open_ticket(&ticket(&repo, 1)).await.unwrap();
    assert_eq!(opened, Opened::Restarted);
    assert_ne!(again.run_of(), old);
    assert_eq!(store.flow(t.key).await.unwrap(), None);
    // The old run's last writes change nothing, and say why.
    let late = store
        .consume_signals(old, read[0].id, &waiting)
        .await
        .unwrap_err();
    assert!(
        matches!(late, StoreError::Superseded(k) if k == t.key),
        "{late}"
    );
    let late = store
        .checkpoint(old, "merge", 1, &json!({}), &json!({}), &waiting)
        .await
        .unwrap_err();
    assert!(matches!(late, StoreError::Superseded(_)), "{late}");
    assert_eq!(
        store.flow(t.key).await.unwrap(),
        None,
        "the next run starts afresh"
    );
    let nodes = store.checkpoints(t.key).await.unwrap();
    assert_eq!(
        nodes.len(),
        1,
        "no checkpoint of the old run after the restart"
    );
    // Nor is the old run's abort asked of the new one.
    assert_eq!(store.pending_signals(t.key).await.unwrap(), vec![]);
    // The new run writes as any run does.
    let planned = json!({"next": "plan_check"});
    store
        .checkpoint(again.run_of(), "plan", 0, &json!({}), &json!({}), &planned)
        .await
        .unwrap();
    assert_eq!(store.flow(t.key).await.unwrap(), Some(planned));
}

async fn checkpoints_keep_the_flow(store: Store) {
    let repo = RepoName::parse("acme/a").unwrap();
    let (t, _) = store.open_ticket(&ticket(&repo, 1)).await.unwrap();
    assert_eq!(store.flow(t.key).await.unwrap(), None);
    store
        .checkpoint(
            t.run_of(),
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
            t.run_of(),
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
}

async fn signals_are_consumed_with_the_flow_they_changed(store: Store) {
    let repo = RepoName::parse("acme/a").unwrap();
    let (t, _) = store.open_ticket(&ticket(&repo, 1)).await.unwrap();
    let kinds = |signals: &[vibeloop::store::flow::StoredSignal]| -> Vec<&'static str> {
        signals
            .iter()
            .map(|s| s.signal.as_ref().map(Signal::kind).unwrap_or("unreadable"))
            .collect()
    };
    let feedback = Signal::Feedback { text: "x".into() };
    store.signal(t.key, &feedback, "ann").await.unwrap();
    store.signal(t.key, &Signal::Approve, "bob").await.unwrap();
    let pending = store.pending_signals(t.key).await.unwrap();
    assert_eq!(kinds(&pending), ["feedback", "approve"]);
    assert_eq!(pending[0].signal, Ok(feedback));
    // Read again before they are consumed (a crash in between): still there.
    assert_eq!(store.pending_signals(t.key).await.unwrap(), pending);
    // One more arrives while the first two are applied: it stays pending.
    let abort = Signal::Abort { why: None };
    store.signal(t.key, &abort, "cy").await.unwrap();
    store
        .consume_signals(t.run_of(), pending[1].id, &json!({"approved_by": "bob"}))
        .await
        .unwrap();
    assert_eq!(
        store.flow(t.key).await.unwrap(),
        Some(json!({"approved_by": "bob"}))
    );
    let left = store.pending_signals(t.key).await.unwrap();
    assert_eq!(kinds(&left), ["abort"]);
}
