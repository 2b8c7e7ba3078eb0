//! A repository is known by GitHub's id, not its name. Played as an attack: a repository is
//! deleted and another one made under the same name (by whoever can now take it). The newcomer
//! inherits nothing of the one before — not its tickets (its issue #1 opens a ticket of its own),
//! not what earlier tickets established (the Architect is told none of it), not its set-up
//! environments — while the old repository's tickets stay, under `owner/name.gone-<id>`.

use crate::support;

use support::hive::*;
use vibeloop::env::cache::{EnvKey, Envs, Record};
use vibeloop::ids::RepoName;
use vibeloop::store::memory::Memo;
use vibeloop::ticket::{MemoryKind, MemoryStability, TaskState};

const LESSON: &str = "LESSON-4417: calc.py's add() is checked by test_calc";

async fn planned(w: &World, issue: u64, title: &str) -> vibeloop::store::tickets::Ticket {
    let repo = RepoName::parse(REPO).unwrap();
    w.bot
        .wait_until(&format!("a plan for {title:?}"), WAIT, || async {
            let store = w.bot.store().await;
            let t = store.ticket_for_issue(&repo, issue).await.unwrap();
            store.close().await;
            t.filter(|t| t.title == title && t.state == TaskState::Blocked)
        })
        .await
}

/// The Architect's first prompt on the issue titled `title`.
fn architect_on(w: &World, title: &str) -> String {
    tasks_of(&w.llm, "architect")
        .into_iter()
        .find(|t| t.contains(title))
        .unwrap_or_else(|| panic!("no Architect task on {title:?}"))
}

/// Makes a new repository `name` with the calculator, where the maintainer may write.
fn make_repo(w: &World, name: &str) {
    let files = calc(HIVE_YML);
    let refs: Vec<(&str, &str)> = files.iter().map(|(p, c)| (*p, c.as_str())).collect();
    w.gh.add_repo(INSTALLATION, name, &refs);
    w.gh.set_permission(name, MAINTAINER, "write");
}

/// A bot whose first ticket (plan only) is planned, and what it established: [`LESSON`],
/// Canonical, about calc.py.
async fn planned_with_a_lesson() -> (World, vibeloop::store::tickets::Ticket) {
    let w = World::start(happy_script(), &calc(HIVE_YML)).await;
    let sent = w.gh.label_issue(REPO, w.issue, "hive:plan").await;
    assert_eq!(sent.status, 202);
    let first = planned(&w, w.issue, "add() subtracts").await;
    let store = w.bot.store().await;
    let memo = Memo {
        kind: MemoryKind::FileRole,
        step: "attempt-1",
        text: LESSON,
        paths: &["calc.py".to_owned()],
    };
    store
        .add_memory(&first.repo, first.key, &memo, MemoryStability::Canonical)
        .await
        .unwrap();
    store.close().await;
    (w, first)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_repository_made_again_under_the_same_name_inherits_nothing() {
    let (w, first) = planned_with_a_lesson().await;
    // An environment set up for the first repository.
    let envs = Envs::in_data_dir(&w.env.data_dir);
    let key = EnvKey::new("vibeloop-runner:python", "pip install -e .", &[], &[]);
    let scratch = envs.scratch(REPO).unwrap();
    std::fs::write(scratch.path().join("site.pth"), "/cache/private-wheel").unwrap();
    let record = Record {
        key: key.clone(),
        repo: REPO.into(),
        image: "vibeloop-runner:python".into(),
        setup: "pip install -e .".into(),
        inputs: vec![],
        created: 1,
        used: vibeloop::env::cache::now(),
        setup_seconds: 1.0,
        tree: String::new(),
        how: None,
    };
    envs.keep(scratch, &record).unwrap();
    assert!(envs.list().iter().any(|e| e.record.repo == REPO));

    // The same repository's next ticket is told what the first established.
    let again =
        w.gh.add_issue(REPO, "mul() in calc.py", "calc.py needs mul(a, b).");
    let sent = w.gh.label_issue(REPO, again, "hive:plan").await;
    assert_eq!(sent.status, 202);
    planned(&w, again, "mul() in calc.py").await;
    assert!(architect_on(&w, "mul() in calc.py").contains("LESSON-4417"));

    // The repository is deleted, and another one is made under its name.
    w.gh.delete_repo(REPO);
    make_repo(&w, REPO);
    let newcomer =
        w.gh.add_issue(REPO, "div() in calc.py", "calc.py needs div(a, b).");
    assert_eq!(newcomer, 1, "the new repository's first issue");
    let sent = w.gh.label_issue(REPO, newcomer, "hive:plan").await;
    assert_eq!(sent.status, 202, "{}", sent.text);

    // Its issue #1 is a ticket of its own, T-1 of the new repository…
    let fresh = planned(&w, newcomer, "div() in calc.py").await;
    assert_ne!(fresh.key, first.key);
    assert_eq!(fresh.id.to_string(), "T-1");
    // …told nothing the old repository's tickets established…
    let task = architect_on(&w, "div() in calc.py");
    assert!(!task.contains("LESSON-4417"), "memory inherited:\n{task}");
    // …and given none of its environments.
    assert!(
        envs.list().iter().all(|e| e.record.repo != REPO),
        "{:?}",
        envs.list()
    );
    // The old repository's tickets stay, under a name of their own.
    let store = w.bot.store().await;
    let old = store.ticket(first.key).await.unwrap().unwrap();
    store.close().await;
    assert!(
        old.repo.as_str().starts_with("acme/widgets.gone-"),
        "{}",
        old.repo
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_renamed_repository_keeps_its_memory_and_whoever_takes_its_old_name_gets_none() {
    let (w, first) = planned_with_a_lesson().await;

    // acme/widgets becomes acme/gadgets, and someone makes a new acme/widgets.
    const RENAMED: &str = "acme/gadgets";
    w.gh.rename_repo(REPO, RENAMED);
    make_repo(&w, REPO);
    let taken =
        w.gh.add_issue(REPO, "div() in calc.py", "calc.py needs div(a, b).");
    let sent = w.gh.label_issue(REPO, taken, "hive:plan").await;
    assert_eq!(sent.status, 202);
    let fresh = planned(&w, taken, "div() in calc.py").await;
    assert_ne!(fresh.key, first.key);
    assert!(!architect_on(&w, "div() in calc.py").contains("LESSON-4417"));

    // The renamed repository's next ticket is told what its first established, under its
    // new name, and its first ticket follows it there.
    let next =
        w.gh.add_issue(RENAMED, "mul() in calc.py", "calc.py needs mul(a, b).");
    let sent = w.gh.label_issue(RENAMED, next, "hive:plan").await;
    assert_eq!(sent.status, 202, "{}", sent.text);
    let renamed = RepoName::parse(RENAMED).unwrap();
    w.bot
        .wait_until("the renamed repository's plan", WAIT, || async {
            let store = w.bot.store().await;
            let t = store.ticket_for_issue(&renamed, next).await.unwrap();
            store.close().await;
            t.filter(|t| t.state == TaskState::Blocked)
        })
        .await;
    assert!(architect_on(&w, "mul() in calc.py").contains("LESSON-4417"));
    let store = w.bot.store().await;
    assert_eq!(
        store.ticket(first.key).await.unwrap().unwrap().repo,
        renamed
    );
    store.close().await;
}
