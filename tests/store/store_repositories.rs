//! Repositories by GitHub's id, on both databases: rows from before the table belong to the
//! first id seen under their name; a renamed repository's rows follow it; a name that passes to
//! another repository (one made again, or another moved in) leaves the old holder's rows under
//! `owner/name.gone-<id>`, so the newcomer finds no ticket, memory or question of it.

use vibeloop::ids::{InstallationId, RepoName, RepositoryId};
use vibeloop::store::Store;
use vibeloop::store::memory::Memo;
use vibeloop::store::tickets::{NewTicket, Start};
use vibeloop::ticket::{MemoryKind, MemoryStability};

both!(names_follow_repositories_by_id_and_a_new_holder_inherits_nothing);

fn name(s: &str) -> RepoName {
    RepoName::parse(s).unwrap()
}

async fn names_follow_repositories_by_id_and_a_new_holder_inherits_nothing(store: Store) {
    let widgets = name("acme/widgets");
    let (first, second) = (RepositoryId(11), RepositoryId(22));
    // A ticket and what it taught, from before the bot knew repositories' ids.
    let (t, _) = store
        .open_ticket(&NewTicket {
            repo: &widgets,
            issue_number: 1,
            installation_id: InstallationId(7),
            title: "t",
            body: "b",
            base_branch: "main",
            chosen_base: None,
            start: Start::Build,
        })
        .await
        .unwrap();
    let memo = Memo {
        kind: MemoryKind::GateCommand,
        step: "attempt-1",
        text: "python3 -m unittest passes",
        paths: &[],
    };
    store
        .add_memory(&widgets, t.key, &memo, MemoryStability::Canonical)
        .await
        .unwrap();
    let canonical = |r: RepoName| {
        let store = store.clone();
        async move { store.canonical_memory(&r, 10).await.unwrap().len() }
    };

    // The first id seen under the name adopts those rows; seeing it again changes nothing.
    for _ in 0..2 {
        let changed = store.repository_seen(first, &widgets).await.unwrap();
        assert!(changed.is_empty(), "{changed:?}");
    }
    assert_eq!(canonical(widgets.clone()).await, 1);

    // Renamed: its rows follow it, and the old name is reported (its environments go).
    let gadgets = name("acme/gadgets");
    assert_eq!(
        store.repository_seen(first, &gadgets).await.unwrap(),
        vec![widgets.clone()]
    );
    assert_eq!(canonical(gadgets.clone()).await, 1);
    assert_eq!(canonical(widgets.clone()).await, 0);
    let moved = store.ticket(t.key).await.unwrap().unwrap();
    assert_eq!(moved.repo, gadgets);
    assert!(store.ticket_for_issue(&gadgets, 1).await.unwrap().is_some());

    // Another repository takes the name: the first one's rows step aside.
    assert_eq!(
        store.repository_seen(second, &gadgets).await.unwrap(),
        vec![gadgets.clone()]
    );
    assert_eq!(
        canonical(gadgets.clone()).await,
        0,
        "the newcomer inherits memory"
    );
    assert!(
        store.ticket_for_issue(&gadgets, 1).await.unwrap().is_none(),
        "the newcomer inherits a ticket"
    );
    let gone = name("acme/gadgets.gone-11");
    assert_eq!(canonical(gone.clone()).await, 1);
    assert_eq!(store.ticket(t.key).await.unwrap().unwrap().repo, gone);
    // The newcomer's issue 1 opens a ticket of its own.
    let (fresh, _) = store
        .open_ticket(&NewTicket {
            repo: &gadgets,
            issue_number: 1,
            installation_id: InstallationId(7),
            title: "new",
            body: "b",
            base_branch: "main",
            chosen_base: None,
            start: Start::Build,
        })
        .await
        .unwrap();
    assert_ne!(fresh.key, t.key);
    assert_eq!(fresh.id.to_string(), "T-1");

    // The first one comes back under a name of its own: its rows follow it there.
    let back = name("acme/back");
    store.repository_seen(first, &back).await.unwrap();
    assert_eq!(canonical(back.clone()).await, 1);
    assert_eq!(store.ticket(t.key).await.unwrap().unwrap().repo, back);
    assert_eq!(
        store.ticket(fresh.key).await.unwrap().unwrap().repo,
        gadgets
    );
}
