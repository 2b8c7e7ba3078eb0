//! Landing an approved change, end to end: the rebase onto a base branch that moved on (clean,
//! a formatting-only conflict settled by the formatter — strategy A —, a real conflict sent back
//! to the Builder — strategy C), a merge GitHub refuses, and two tickets of one repository at
//! once. Landing under branch protection is in `e2e_land.rs`.

use crate::support;

use support::hive::*;
use vibeloop::ticket::TaskState;

/// The merge strategies the ticket's timeline records.
async fn strategies(w: &World) -> Vec<String> {
    let t = w.ticket().await.unwrap();
    let store = w.bot.store().await;
    let events = store.events(t.key).await.unwrap();
    store.close().await;
    events
        .into_iter()
        .filter(|(_, kind, _)| kind == "merge_strategy")
        .map(|(_, _, data)| data["strategy"].as_str().unwrap_or_default().to_owned())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_base_that_moved_elsewhere_is_rebased_onto_cleanly() {
    let w = World::start(happy_script(), &calc(HIVE_YML)).await;
    w.label().await;
    w.waiting_for_approval().await;
    w.gh.push_commit(REPO, "main", &[("README.md", "# widgets\n")], "Docs");
    w.say("/hive approve").await;
    w.wait_state(TaskState::Completed).await;
    assert_eq!(
        w.gh.file_on_branch(REPO, "main", "README.md").as_deref(),
        Some("# widgets\n")
    );
    assert_eq!(
        w.gh.file_on_branch(REPO, "main", "calc.py").as_deref(),
        Some(CALC_FIXED)
    );
    assert!(
        strategies(&w).await.is_empty(),
        "a clean rebase needs no strategy"
    );
    // The gates ran again on the rebased commit, the pull request's head, which GitHub's
    // rebase then put on main (committed anew, on the new base, with the same tree).
    let head = w.gh.branch_sha(REPO, "feat/T-1").unwrap();
    let on_head: Vec<_> =
        w.gh.check_runs(REPO)
            .into_iter()
            .filter(|c| c.head_sha == head)
            .map(|c| c.name)
            .collect();
    assert!(
        on_head.contains(&"hive/test".to_owned()) && on_head.contains(&"hive/security".to_owned()),
        "{on_head:?}"
    );
    let git = git2::Repository::open_bare(w.gh.bare_path(REPO)).unwrap();
    let commit = |b: &str| {
        git.find_commit(git2::Oid::from_str(&w.gh.branch_sha(REPO, b).unwrap()).unwrap())
            .unwrap()
    };
    assert_eq!(commit("main").tree_id(), commit("feat/T-1").tree_id());
    assert_eq!(
        commit("main").parent_ids().collect::<Vec<_>>(),
        commit("feat/T-1").parent_ids().collect::<Vec<_>>()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_formatting_conflict_is_settled_by_the_formatter() {
    // A formatter that strips trailing whitespace; the Builder leaves some behind.
    const FMT: &str = "import pathlib\nfor p in pathlib.Path('.').glob('*.py'):\n    try:\n        p.write_text(''.join(l.rstrip() + '\\n' for l in p.read_text().splitlines()))\n    except OSError:\n        pass  # the tests are mounted read-only\n";
    let yml =
        "gates: { test: \"python3 -m unittest -v\" }\nmerge: { formatter: \"python3 fmt.py\" }\n";
    let mut files = calc(yml);
    files.push(("fmt.py", FMT.into()));
    let sloppy = "def add(a, b):\n    return a + b   \n";
    let w = World::start(
        script_with(vec![("builder", writes("calc.py", sloppy, "add() adds."))]),
        &files,
    )
    .await;
    w.label().await;
    w.waiting_for_approval().await;
    // Meanwhile someone reformats the same lines on main.
    w.gh.push_commit(
        REPO,
        "main",
        &[("calc.py", "def add(a,b):\n    return a-b\n")],
        "Reformat",
    );
    w.say("/hive approve").await;
    w.wait_state(TaskState::Completed).await;
    assert_eq!(strategies(&w).await, ["A"]);
    assert_eq!(
        w.gh.file_on_branch(REPO, "main", "calc.py").as_deref(),
        Some(CALC_FIXED)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_real_conflict_sends_the_builder_back_to_the_current_base() {
    const MAIN: &str = "def add(a, b):\n    return b - a\n\n\ndef sub(a, b):\n    return a - b\n";
    const REDONE: &str = "def add(a, b):\n    return a + b\n\n\ndef sub(a, b):\n    return a - b\n";
    let script = script_with(vec![(
        "builder|the base branch changed",
        writes("calc.py", REDONE, "Redone on the new base."),
    )]);
    let w = World::start(script, &calc(HIVE_YML)).await;
    w.label().await;
    w.waiting_for_approval().await;
    w.gh.push_commit(REPO, "main", &[("calc.py", MAIN)], "Add sub()");
    w.say("/hive approve").await;

    // Strategy C: the Builder redoes the change on the new base; the Critic reviews it and a
    // person approves again.
    w.bot
        .wait_until("the second approval prompt", WAIT, || async {
            let t = w.ticket().await?;
            let prompt = t.state == TaskState::AwaitingVerification
                && t.detail.as_deref().unwrap_or("").contains("/hive approve");
            (prompt && tasks_of(&w.llm, "builder").len() == 2).then_some(())
        })
        .await;
    let redo = &tasks_of(&w.llm, "builder")[1];
    assert!(
        redo.contains("calc.py: the base branch changed this file"),
        "{redo}"
    );
    w.say("/hive approve").await;
    w.wait_state(TaskState::Completed).await;
    assert_eq!(strategies(&w).await, ["C"]);
    assert_eq!(
        w.gh.file_on_branch(REPO, "main", "calc.py").as_deref(),
        Some(REDONE)
    );
    assert_eq!(
        w.gh.pulls(REPO).len(),
        1,
        "the redo stays in the same pull request"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_merge_github_refuses_asks_a_person_and_a_retry_lands_it() {
    let w = World::start(happy_script(), &calc(AUTO_YML)).await;
    // The repository turned rebase merges off; `merge.method` says `rebase` (the default).
    w.gh.forbid_merge_method(REPO, "rebase");
    w.label().await;
    let t = w.wait_state(TaskState::HumanNeeded).await;
    let why = t.detail.unwrap_or_default();
    assert!(
        why.contains(
            "GitHub refused to merge #2: Rebase merges are not allowed on this repository."
        ) && why.contains("Set `merge.method` in `.github/hive.yml`"),
        "{why}"
    );
    assert!(w.status_comment().contains("Rebase merges are not allowed"));
    assert_eq!(
        w.gh.file_on_branch(REPO, "main", "calc.py").as_deref(),
        Some(CALC_BUGGY)
    );

    // The admin allows it again; /hive retry lands it.
    w.gh.allow_merge_methods(REPO);
    let rebased = w.gh.branch_sha(REPO, "feat/T-1").unwrap();
    let id = w.say("/hive retry").await;
    assert!(w.reply_to(id).await.contains("try again"));
    w.wait_state(TaskState::Completed).await;
    assert!(w.gh.pull(REPO, 2).unwrap().merged);
    assert_eq!(
        w.gh.file_on_branch(REPO, "main", "calc.py").as_deref(),
        Some(CALC_FIXED)
    );
    assert_eq!(w.gh.branch_sha(REPO, "feat/T-1").unwrap(), rebased);
    assert_eq!(
        tasks_of(&w.llm, "builder").len(),
        1,
        "a retry of the landing does not rebuild"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_tickets_on_one_repository_land_one_after_the_other() {
    let (script, files) = mul_world(AUTO_YML);
    let w = World::start(script, &files).await;
    let second = w.gh.add_issue(REPO, MUL_ISSUE.0, MUL_ISSUE.1);
    let (a, b) = tokio::join!(
        w.gh.label_issue(REPO, w.issue, "hive"),
        w.gh.label_issue(REPO, second, "hive")
    );
    assert_eq!((a.status, b.status), (202, 202));

    let store = w.bot.store().await;
    let done = w
        .bot
        .wait_until("both tickets to complete", WAIT, || async {
            let all = store.tickets().await.ok()?;
            (all.len() == 2 && all.iter().all(|t| t.state == TaskState::Completed)).then_some(all)
        })
        .await;
    assert_eq!(
        done.iter().map(|t| t.id.to_string()).collect::<Vec<_>>(),
        ["T-1", "T-2"]
    );
    assert_eq!(
        w.gh.file_on_branch(REPO, "main", "calc.py").as_deref(),
        Some(CALC_FIXED)
    );
    assert_eq!(
        w.gh.file_on_branch(REPO, "main", "mul.py").as_deref(),
        Some(MUL_FIXED)
    );
    let mut tags: Vec<String> =
        w.gh.tags(REPO)
            .into_iter()
            .map(|(t, _)| t)
            .filter(|t| t.starts_with("auto-v"))
            .collect();
    tags.sort();
    assert_eq!(tags, ["auto-v0.0.1", "auto-v0.0.2"]);
    let latest =
        w.gh.tags(REPO)
            .into_iter()
            .find(|(t, _)| t == "LATEST_STABLE")
            .unwrap()
            .1;
    assert_eq!(Some(latest), w.gh.branch_sha(REPO, "main"));
    assert_eq!(w.gh.pulls(REPO).len(), 2);
    for issue in [w.issue, second] {
        let status: Vec<_> =
            w.gh.comments(REPO, issue)
                .into_iter()
                .filter(|c| c.body.contains("<!-- vibeloop:status"))
                .collect();
        assert_eq!(status.len(), 1, "issue #{issue}: {status:?}");
    }
}
