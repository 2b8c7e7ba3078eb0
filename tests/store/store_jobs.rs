//! The durable job queue, on both databases (see `harness/store_db.rs`): one live job per
//! subject, claims and leases, takeovers, retries and their timing, requeues while running, and
//! a delivery's outcome recorded only by its job's owner, deliveries of one repository
//! claimed one at a time in the order they were stored, and a requeued ticket (conflict strategy
//! C) behind its repository's queued tickets, in a lane where one requeued ticket runs at a time;
//! a ticket at a resting point giving its worker to a job that waits for one; a restarted
//! instance freeing its predecessor's leases and no other's.

use std::collections::HashSet;

use vibeloop::ids::DeliveryId;
use vibeloop::ids::{InstallationId, RepoName, TicketKey};
use vibeloop::store::Store;
use vibeloop::store::deliveries::NewDelivery;
use vibeloop::store::jobs::{Job, JobKey};
use vibeloop::store::tickets::NewTicket;

use crate::store_db::delivery;

both!(
    a_delivery_outcome_is_recorded_only_by_its_jobs_owner,
    jobs_are_claimed_once_and_leases_expire,
    a_restarted_instance_frees_only_its_own_earlier_leases,
    concurrent_claims_never_share_a_job,
    retries_wait_until_due,
    a_job_queued_for_later_can_be_hurried,
    a_job_asked_for_while_it_runs_runs_again,
    fresh_retries_restart_the_count_of_attempts,
    deliveries_of_one_repository_are_claimed_in_the_order_stored,
    a_delivery_retried_later_holds_back_the_later_ones_of_its_repository,
    a_failed_delivery_holds_nothing_back,
    a_repositorys_ping_is_not_held_behind_its_deliveries,
    a_requeued_ticket_goes_behind_its_repositorys_queued_tickets,
    a_repositorys_requeued_tickets_run_one_at_a_time_until_they_land,
    a_ticket_gives_its_worker_to_a_job_that_waited_and_runs_again_behind_it,
);

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

async fn a_restarted_instance_frees_only_its_own_earlier_leases(store: Store) {
    for t in 1..=4 {
        store.enqueue(&JobKey::Ticket(TicketKey(t))).await.unwrap();
    }
    // The instance `h/a1/` ran jobs 1 and 2 and died; `h/a10/` (a prefix of whose owners
    // `h/a1` is) and `h/b2/` are alive.
    for owner in ["h/a1/7", "h/a1/8", "h/a10/9", "h/b2/9"] {
        store.claim_job(owner, 3_600_000).await.unwrap().unwrap();
    }
    let me = "h/a1/12";
    assert_eq!(store.release_leases_of("h/a1/", me).await.unwrap(), 2);
    let mut resumed = Vec::new();
    while let Some(job) = store.claim_job(me, 3_600_000).await.unwrap() {
        resumed.push(job.key);
    }
    let expect = [JobKey::Ticket(TicketKey(1)), JobKey::Ticket(TicketKey(2))];
    assert_eq!(resumed, expect, "its own two jobs and nobody else's");
    assert_eq!(
        store.release_leases_of("h/a1/", me).await.unwrap(),
        0,
        "its own leases are not freed"
    );
}

async fn jobs_are_claimed_once_and_leases_expire(store: Store) {
    assert!(store.enqueue(&JobKey::Ticket(TicketKey(1))).await.unwrap());
    assert!(
        !store.enqueue(&JobKey::Ticket(TicketKey(1))).await.unwrap(),
        "a second live job for the same ticket"
    );
    assert!(store.enqueue(&JobKey::Ticket(TicketKey(2))).await.unwrap());

    let j1 = store.claim_job("w1", 60_000).await.unwrap().unwrap();
    assert_eq!((&j1.key, j1.attempts), (&JobKey::Ticket(TicketKey(1)), 1));
    let j2 = store.claim_job("w2", 60_000).await.unwrap().unwrap();
    assert_eq!(j2.key, JobKey::Ticket(TicketKey(2)));
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
        store.enqueue(&JobKey::Ticket(TicketKey(1))).await.unwrap(),
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
            .enqueue(&JobKey::Delivery(format!("d{i}")))
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
    store.enqueue(&JobKey::Delivery("d".into())).await.unwrap();
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
        .enqueue_after(&JobKey::Sweep, 3_600_000)
        .await
        .unwrap();
    assert!(store.claim_job("w", 60_000).await.unwrap().is_none());
    // Asking again does not bring it forward; hurrying does.
    store.enqueue(&JobKey::Sweep).await.unwrap();
    assert!(store.claim_job("w", 60_000).await.unwrap().is_none());
    store.hurry(&JobKey::Sweep).await.unwrap();
    let job = store
        .claim_job("w", 60_000)
        .await
        .unwrap()
        .expect("due now");
    assert_eq!(job.key, JobKey::Sweep);
    // A running job is left alone.
    store.hurry(&JobKey::Sweep).await.unwrap();
    assert!(store.claim_job("v", 60_000).await.unwrap().is_none());
}

async fn a_job_asked_for_while_it_runs_runs_again(store: Store) {
    assert!(store.enqueue(&JobKey::Ticket(TicketKey(7))).await.unwrap());
    let job = store.claim_job("w", 60_000).await.unwrap().unwrap();
    // A signal arrives while the run works: no second live job, but the request is kept.
    assert!(!store.enqueue(&JobKey::Ticket(TicketKey(7))).await.unwrap());
    assert!(store.claim_job("w", 60_000).await.unwrap().is_none());
    store.complete_job(job.id, "w").await.unwrap();
    let again = store
        .claim_job("w", 60_000)
        .await
        .unwrap()
        .expect("queued again");
    assert_eq!(
        (&again.key, again.attempts),
        (&JobKey::Ticket(TicketKey(7)), 1)
    );
    // Without a request during the run, a finished job is gone.
    store.complete_job(again.id, "w").await.unwrap();
    assert!(store.claim_job("w", 60_000).await.unwrap().is_none());
    assert_eq!(store.job_counts().await.unwrap(), vec![]);

    // A requeue at the tail, asked by the run itself, waits for its delay.
    store.enqueue(&JobKey::Ticket(TicketKey(8))).await.unwrap();
    let job = store.claim_job("w", 60_000).await.unwrap().unwrap();
    assert!(
        !store
            .enqueue_after(&JobKey::Ticket(TicketKey(8)), 3_600_000)
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
    store.enqueue(&JobKey::Ticket(TicketKey(1))).await.unwrap();
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

/// Stores a handled delivery `id` of `repo` (`None`: an event without a repository).
async fn store_delivery(store: &Store, id: &str, repo: Option<&str>) {
    let d = NewDelivery {
        repo: repo.map(str::to_owned),
        ..delivery(&DeliveryId::parse(id).unwrap(), None)
    };
    store.insert_delivery(&d).await.unwrap();
}

fn key(id: &str) -> JobKey {
    JobKey::Delivery(id.into())
}

async fn deliveries_of_one_repository_are_claimed_in_the_order_stored(store: Store) {
    store_delivery(&store, "a-1", Some("o/a")).await;
    store_delivery(&store, "a-2", Some("o/a")).await;
    store_delivery(&store, "b-1", Some("o/b")).await;
    store_delivery(&store, "ping-1", None).await;

    let a1 = store.claim_job("w1", 60_000).await.unwrap().unwrap();
    assert_eq!(a1.key, key("a-1"));
    let b1 = store.claim_job("w2", 60_000).await.unwrap().unwrap();
    assert_eq!(b1.key, key("b-1"), "a-2 was claimed while a-1 runs");
    let ping = store.claim_job("w3", 60_000).await.unwrap().unwrap();
    assert_eq!(
        ping.key,
        key("ping-1"),
        "a delivery without a repository waits"
    );
    assert!(store.claim_job("w4", 60_000).await.unwrap().is_none());

    // a-1's worker dies: a-1 is taken over, a-2 still waits for it.
    assert!(store.renew_lease(a1.id, "w1", -1).await.unwrap());
    let taken = store.claim_job("w4", 60_000).await.unwrap().unwrap();
    assert_eq!(
        (&taken.key, taken.taken_from.as_deref()),
        (&key("a-1"), Some("w1"))
    );
    assert!(store.claim_job("w5", 60_000).await.unwrap().is_none());

    assert!(
        store
            .finish_delivery_job(taken.id, "w4", "a-1", "processed", None)
            .await
            .unwrap()
    );
    let a2 = store.claim_job("w5", 60_000).await.unwrap().unwrap();
    assert_eq!(a2.key, key("a-2"));
}

async fn a_delivery_retried_later_holds_back_the_later_ones_of_its_repository(store: Store) {
    store_delivery(&store, "a-1", Some("o/a")).await;
    store_delivery(&store, "a-2", Some("o/a")).await;
    store_delivery(&store, "b-1", Some("o/b")).await;

    let a1 = store.claim_job("w", 60_000).await.unwrap().unwrap();
    assert_eq!(a1.key, key("a-1"));
    store
        .retry_job(a1.id, "w", 3_600_000, "GitHub 502", false)
        .await
        .unwrap();
    // a-2 is due and a-1 is not, yet a-2 waits; the other repository goes on.
    let b1 = store.claim_job("w", 60_000).await.unwrap().unwrap();
    assert_eq!(b1.key, key("b-1"), "a-2 was claimed before a-1");
    assert!(
        store.claim_job("w", 60_000).await.unwrap().is_none(),
        "a-2 was claimed before a-1"
    );

    // Once a-1 is due, it comes first although a-2 was due before it.
    store.hurry(&key("a-1")).await.unwrap();
    let again = store.claim_job("w", 60_000).await.unwrap().unwrap();
    assert_eq!((&again.key, again.attempts), (&key("a-1"), 2));
    assert!(store.claim_job("v", 60_000).await.unwrap().is_none());
    store.complete_job(again.id, "w").await.unwrap();
    let a2 = store.claim_job("w", 60_000).await.unwrap().unwrap();
    assert_eq!(a2.key, key("a-2"));
}

async fn a_failed_delivery_holds_nothing_back(store: Store) {
    store_delivery(&store, "a-1", Some("o/a")).await;
    store_delivery(&store, "a-2", Some("o/a")).await;

    let a1 = store.claim_job("w", 60_000).await.unwrap().unwrap();
    assert_eq!(a1.key, key("a-1"));
    assert!(
        store.claim_job("v", 60_000).await.unwrap().is_none(),
        "a-2 was claimed while a-1 runs"
    );
    store
        .fail_job(a1.id, "w", "unreadable payload")
        .await
        .unwrap();
    let a2 = store
        .claim_job("v", 60_000)
        .await
        .unwrap()
        .expect("a-2 waits for a failed delivery");
    assert_eq!(a2.key, key("a-2"));
    assert_eq!(
        store.job_counts().await.unwrap(),
        vec![("failed".into(), 1), ("running".into(), 1)]
    );
}

/// Opens the ticket of issue `issue` in `repo` (its job queued).
/// Claims the next job for `owner`, waiting up to 5 s for one to come due: a job that gave
/// its worker up is due a millisecond after it did, which a quick claim can beat.
async fn claim_when_due(store: &Store, owner: &str) -> Job {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
    loop {
        if let Some(job) = store.claim_job(owner, 60_000).await.unwrap() {
            return job;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "no job came due in 5 s"
        );
        tokio::task::yield_now().await;
    }
}

async fn open(store: &Store, repo: &str, issue: u64) -> TicketKey {
    let repo = RepoName::parse(repo).unwrap();
    let t = NewTicket {
        repo: &repo,
        issue_number: issue,
        installation_id: InstallationId(7),
        title: "t",
        body: "b",
        base_branch: "main",
        chosen_base: None,
        start: Default::default(),
    };
    store.open_ticket(&t).await.unwrap().0.key
}

async fn a_requeued_ticket_goes_behind_its_repositorys_queued_tickets(store: Store) {
    let t1 = open(&store, "o/a", 1).await;
    let t2 = open(&store, "o/a", 2).await;
    let j1 = store.claim_job("w", 60_000).await.unwrap().unwrap();
    assert_eq!(j1.key, JobKey::Ticket(t1));
    // t2's run failed in passing and waits an hour for its retry.
    let j2 = store.claim_job("w", 60_000).await.unwrap().unwrap();
    assert_eq!(j2.key, JobKey::Ticket(t2));
    store
        .retry_job(j2.id, "w", 3_600_000, "GitHub 502", false)
        .await
        .unwrap();
    let t3 = open(&store, "o/b", 1).await;

    // t1's rebase conflicts: from its own job it goes behind t2, and runs after that job ends.
    store.requeue_in_lane(t1, "serial:o/a").await.unwrap();
    let other = store.claim_job("v", 60_000).await.unwrap().unwrap();
    assert_eq!(other.key, JobKey::Ticket(t3));
    store.complete_job(j1.id, "w").await.unwrap();
    assert!(
        store.claim_job("v", 60_000).await.unwrap().is_none(),
        "the requeued ticket ran before its repository's queued one"
    );
    store.hurry(&JobKey::Ticket(t2)).await.unwrap();
    let next = store.claim_job("v", 60_000).await.unwrap().unwrap();
    assert_eq!(next.key, JobKey::Ticket(t2));
    assert!(store.claim_job("v", 60_000).await.unwrap().is_none());
    store.hurry(&JobKey::Ticket(t1)).await.unwrap();
    let again = store.claim_job("v", 60_000).await.unwrap().unwrap();
    assert_eq!((&again.key, again.attempts), (&JobKey::Ticket(t1), 1));
}

async fn a_repositorys_requeued_tickets_run_one_at_a_time_until_they_land(store: Store) {
    let t1 = open(&store, "o/a", 1).await;
    let t2 = open(&store, "o/a", 2).await;
    let j1 = store.claim_job("w1", 60_000).await.unwrap().unwrap();
    let j2 = store.claim_job("w2", 60_000).await.unwrap().unwrap();
    assert_eq!(
        (&j1.key, &j2.key),
        (&JobKey::Ticket(t1), &JobKey::Ticket(t2))
    );
    // Both conflict; t2's job ends first, so t2 is first in the lane.
    store.requeue_in_lane(t2, "serial:o/a").await.unwrap();
    store.requeue_in_lane(t1, "serial:o/a").await.unwrap();
    store.complete_job(j2.id, "w2").await.unwrap();
    store.complete_job(j1.id, "w1").await.unwrap();
    let first = store.claim_job("w1", 60_000).await.unwrap().unwrap();
    assert_eq!(first.key, JobKey::Ticket(t2));
    assert!(
        store.claim_job("w2", 60_000).await.unwrap().is_none(),
        "two requeued tickets of one repository ran at once"
    );
    // A ticket of the repository that was not requeued is not held back.
    let t3 = open(&store, "o/a", 3).await;
    let other = store.claim_job("w3", 60_000).await.unwrap().unwrap();
    assert_eq!(other.key, JobKey::Ticket(t3));
    store.complete_job(other.id, "w3").await.unwrap();

    // t2 waits for a person: its job ends and t1 runs. A person's approval of t2 meanwhile
    // queues t2 in the lane again: it waits for t1's job.
    store.complete_job(first.id, "w1").await.unwrap();
    let second = store.claim_job("w1", 60_000).await.unwrap().unwrap();
    assert_eq!(second.key, JobKey::Ticket(t1));
    assert!(store.enqueue(&JobKey::Ticket(t2)).await.unwrap());
    assert!(
        store.claim_job("w2", 60_000).await.unwrap().is_none(),
        "a requeued ticket's later job ran beside another requeued ticket's"
    );
    // Asked for again while it runs, t1 goes to the lane's tail, behind t2.
    assert!(!store.enqueue(&JobKey::Ticket(t1)).await.unwrap());
    store.complete_job(second.id, "w1").await.unwrap();
    let third = store.claim_job("w2", 60_000).await.unwrap().unwrap();
    assert_eq!(third.key, JobKey::Ticket(t2));
    assert!(store.claim_job("w1", 60_000).await.unwrap().is_none());
    store.complete_job(third.id, "w2").await.unwrap();
    let fourth = store.claim_job("w1", 60_000).await.unwrap().unwrap();
    assert_eq!(fourth.key, JobKey::Ticket(t1));
    store.complete_job(fourth.id, "w1").await.unwrap();
    assert!(store.job_counts().await.unwrap().is_empty());

    // Deliveries of the repository keep their own order beside the lane.
    store_delivery(&store, "a-1", Some("o/a")).await;
    store.requeue_in_lane(t1, "serial:o/a").await.unwrap();
    let d = store.claim_job("w1", 60_000).await.unwrap().unwrap();
    assert_eq!(d.key, key("a-1"));
    let t = store.claim_job("w2", 60_000).await.unwrap().unwrap();
    assert_eq!(t.key, JobKey::Ticket(t1));
}

/// A ping steers nothing: it names its repository but waits for none of its deliveries.
async fn a_repositorys_ping_is_not_held_behind_its_deliveries(store: Store) {
    store_delivery(&store, "a-1", Some("o/a")).await;
    let ping = NewDelivery {
        event: "ping".into(),
        repo: Some("o/a".into()),
        ..delivery(&DeliveryId::parse("ping-a").unwrap(), None)
    };
    store.insert_delivery(&ping).await.unwrap();
    let a1 = store.claim_job("w1", 60_000).await.unwrap().unwrap();
    assert_eq!(a1.key, key("a-1"));
    let next = store.claim_job("w2", 60_000).await.unwrap().unwrap();
    assert_eq!(next.key, key("ping-a"), "the ping waited for a-1");
}

/// A ticket's job gives its worker up only to a job that has waited for one, and then runs
/// again behind it; a ticket in a lane keeps its worker until it lands.
async fn a_ticket_gives_its_worker_to_a_job_that_waited_and_runs_again_behind_it(store: Store) {
    let t1 = open(&store, "o/a", 1).await;
    let j1 = store.claim_job("w", 60_000).await.unwrap().unwrap();
    assert!(
        !store.yield_to_waiting(t1, 0).await.unwrap(),
        "gave way to nobody"
    );
    let t2 = open(&store, "o/b", 1).await;
    assert!(
        !store.yield_to_waiting(t1, 3_600_000).await.unwrap(),
        "gave way to a job that has not waited an hour"
    );
    assert!(store.yield_to_waiting(t1, 0).await.unwrap());
    store.complete_job(j1.id, "w").await.unwrap();
    let next = store.claim_job("w", 60_000).await.unwrap().unwrap();
    assert_eq!(next.key, JobKey::Ticket(t2), "the waiting job goes first");
    let again = claim_when_due(&store, "w").await;
    assert_eq!((&again.key, again.attempts), (&JobKey::Ticket(t1), 1));
    store.complete_job(next.id, "w").await.unwrap();
    store.complete_job(again.id, "w").await.unwrap();
    assert!(store.job_counts().await.unwrap().is_empty());

    let t3 = open(&store, "o/c", 1).await;
    store.requeue_in_lane(t3, "serial:o/c").await.unwrap();
    let j3 = store.claim_job("w", 60_000).await.unwrap().unwrap();
    assert_eq!(j3.key, JobKey::Ticket(t3));
    open(&store, "o/d", 1).await;
    assert!(
        !store.yield_to_waiting(t3, 0).await.unwrap(),
        "a ticket in a lane gave its worker up"
    );
}
