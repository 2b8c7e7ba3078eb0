//! Conflict strategies B and C end to end. B: a scripted model merges a real conflict in
//! `merge-resolve-tmp`; its merge is regated before it lands, and a bad one (markers left, or
//! tests broken) never lands. C: `feat/T-n` is marked failed (check run `hive/merge`, the status
//! comment, the dashboard), the ticket is requeued behind its repository's queued tickets and
//! lands after the Builder redid it; the repository's requeued tickets run one at a time.
//! Strategy A and a plain C are in `e2e_merge.rs`.

use crate::support;

use serde_json::Value;
use support::fake_llm::Step;
use support::hive::*;
use vibeloop::ids::{RepoName, TicketKey};
use vibeloop::store::tickets::Ticket;
use vibeloop::ticket::TaskState;

/// Main after someone changed `add` and added `sub` (conflicts with the Builder's `a + b`).
const MAIN: &str = "def add(a, b):\n    return b - a\n\n\ndef sub(a, b):\n    return a - b\n";
/// Both changes: the Builder's `add` and main's `sub`.
const MERGED: &str = "def add(a, b):\n    return a + b\n\n\ndef sub(a, b):\n    return a - b\n";
const B_YML: &str =
    "gates: { test: \"python3 -m unittest -v\" }\nmerge: { resolve_with_model: true }\n";
/// What strategy B's model is asked (the Builder's route, its own conversation).
const B_TASK: &str = "builder|Rebasing this change onto the current base branch";

/// The merge strategies the ticket's timeline records.
async fn strategies(w: &World, key: TicketKey) -> Vec<String> {
    let store = w.bot.store().await;
    let events = store.events(key).await.unwrap();
    store.close().await;
    events
        .into_iter()
        .filter(|(_, kind, _)| kind == "merge_strategy")
        .map(|(_, _, data)| data["strategy"].as_str().unwrap_or_default().to_owned())
        .collect()
}

async fn ticket_of(w: &World, issue: u64) -> Option<Ticket> {
    let store = w.bot.store().await;
    let t = store
        .ticket_for_issue(&RepoName::parse(REPO).unwrap(), issue)
        .await
        .unwrap();
    store.close().await;
    t
}

async fn flow_of(w: &World, key: TicketKey) -> Value {
    let store = w.bot.store().await;
    let f = store.flow(key).await.unwrap().unwrap_or_default();
    store.close().await;
    f
}

/// Waits until the ticket of `issue` asks for a person's approval again after `requeues`
/// requeues and `attempt` Builder attempts.
async fn approval_prompt(w: &World, issue: u64, requeues: u64, attempt: u64) -> Ticket {
    w.bot
        .wait_until(
            &format!("#{issue}'s approval prompt after attempt {attempt}"),
            WAIT,
            || async {
                let t = ticket_of(w, issue).await?;
                let f = flow_of(w, t.key).await;
                let prompt = t.state == TaskState::AwaitingVerification
                    && t.detail.as_deref().unwrap_or("").contains("/hive approve")
                    && f["next"] == "await_approval"
                    && f["requeues"] == requeues
                    && f["attempt"] == attempt;
                prompt.then_some(t)
            },
        )
        .await
}

fn file_at(w: &World, sha: &str, path: &str) -> String {
    let git = git2::Repository::open_bare(w.gh.bare_path(REPO)).unwrap();
    let commit = git.find_commit(git2::Oid::from_str(sha).unwrap()).unwrap();
    let blob = commit
        .tree()
        .unwrap()
        .get_path(std::path::Path::new(path))
        .unwrap();
    let blob = git.find_blob(blob.id()).unwrap();
    String::from_utf8(blob.content().to_vec()).unwrap()
}

fn parent_of(w: &World, sha: &str) -> Vec<String> {
    let git = git2::Repository::open_bare(w.gh.bare_path(REPO)).unwrap();
    let commit = git.find_commit(git2::Oid::from_str(sha).unwrap()).unwrap();
    commit.parent_ids().map(|p| p.to_string()).collect()
}

/// The `hive/merge` check runs, oldest first.
fn merge_runs(w: &World) -> Vec<support::fake_github::CheckRun> {
    w.gh.check_runs(REPO)
        .into_iter()
        .filter(|c| c.name == "hive/merge")
        .collect()
}

/// The regate's check runs (`hive/<gate>` on a rebased commit), oldest first.
fn regate_runs(w: &World, name: &str) -> Vec<support::fake_github::CheckRun> {
    w.gh.check_runs(REPO)
        .into_iter()
        .filter(|c| c.name == name)
        .filter(|c| {
            c.external_id
                .as_deref()
                .is_some_and(|e| e.contains(":regate-"))
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_model_merges_a_real_conflict_and_the_merge_is_regated_before_it_lands() {
    let script = script_with(vec![(
        B_TASK,
        vec![
            Step::tool("read_file", serde_json::json!({ "path": "calc.py" })),
            Step::tool(
                "write_file",
                serde_json::json!({ "path": "calc.py", "content": MERGED }),
            ),
            Step::say("Kept main's sub() and this change's add()."),
        ],
    )]);
    let w = World::start(script, &calc(B_YML)).await;
    w.label().await;
    w.waiting_for_approval().await;
    let moved =
        w.gh.push_commit(REPO, "main", &[("calc.py", MAIN)], "Add sub()");
    w.say("/hive approve").await;
    let t = w.wait_state(TaskState::Completed).await;

    assert_eq!(strategies(&w, t.key).await, ["B"]);
    // The model saw both sides between markers in its worktree.
    let shown = w
        .llm
        .requests("builder")
        .iter()
        .flat_map(|r| r["messages"].as_array().cloned().unwrap_or_default())
        .filter(|m| m["role"] == "tool")
        .filter_map(|m| m["content"].as_str().map(str::to_owned))
        .find(|c| c.contains("<<<<<<< base branch"))
        .expect("the model read the conflicted file");
    assert!(
        shown.contains("return b - a") && shown.contains("return a + b"),
        "{shown}"
    );
    let tasks = tasks_of(&w.llm, "builder");
    assert_eq!(tasks.len(), 2, "{tasks:?}");
    assert!(tasks[1].contains("conflicts in calc.py"), "{}", tasks[1]);

    // The merge is one commit on the moved base, and every gate ran on exactly it.
    let head = w.gh.branch_sha(REPO, "feat/T-1").unwrap();
    assert_eq!(file_at(&w, &head, "calc.py"), MERGED);
    assert_eq!(parent_of(&w, &head), [moved]);
    let tests = regate_runs(&w, "hive/test");
    assert_eq!(tests.len(), 1, "{tests:?}");
    assert_eq!(
        (tests[0].head_sha.as_str(), tests[0].conclusion.as_deref()),
        (head.as_str(), Some("success"))
    );
    assert!(
        regate_runs(&w, "hive/security")
            .iter()
            .any(|c| c.head_sha == head)
    );
    // The merge says a model wrote it.
    let merge = merge_runs(&w);
    assert_eq!(merge.len(), 1, "{merge:?}");
    assert_eq!(
        (merge[0].head_sha.as_str(), merge[0].conclusion.as_deref()),
        (head.as_str(), Some("success"))
    );
    assert_eq!(
        merge[0].title.as_deref(),
        Some("hive/merge: a model resolved the conflicts in calc.py")
    );
    // It landed with both changes; nothing was marked failed.
    assert_eq!(
        w.gh.file_on_branch(REPO, "main", "calc.py").as_deref(),
        Some(MERGED)
    );
    assert!(w.gh.pull(REPO, 2).unwrap().merged);
    assert!(!w.status_comment().contains("Merge failed"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_merge_that_leaves_conflict_markers_is_rejected_and_the_ticket_is_requeued() {
    const HALF: &str = "def add(a, b):\n<<<<<<< base branch\n    return b - a\n=======\n    return a + b\n>>>>>>> this change\n\n\ndef sub(a, b):\n    return a - b\n";
    let script = script_with(vec![
        (B_TASK, writes("calc.py", HALF, "Merged.")),
        (
            "builder|the base branch changed",
            writes("calc.py", MERGED, "Redone on the new base."),
        ),
    ]);
    let w = World::start(script, &calc(B_YML)).await;
    w.label().await;
    w.waiting_for_approval().await;
    let old_head = w.gh.branch_sha(REPO, "feat/T-1").unwrap();
    w.gh.push_commit(REPO, "main", &[("calc.py", MAIN)], "Add sub()");
    w.say("/hive approve").await;

    // The model's merge is refused before it reaches GitHub: strategy C instead.
    let t = approval_prompt(&w, w.issue, 1, 2).await;
    assert_eq!(strategies(&w, t.key).await, ["B", "C"]);
    assert!(
        regate_runs(&w, "hive/test").is_empty(),
        "the bad merge was regated"
    );
    assert_eq!(
        w.gh.file_on_branch(REPO, "main", "calc.py").as_deref(),
        Some(MAIN)
    );
    // The branch's head that did not rebase is marked failed, and the status comment says so.
    let merge = merge_runs(&w);
    assert_eq!(merge.len(), 1, "{merge:?}");
    assert_eq!(
        (merge[0].head_sha.as_str(), merge[0].conclusion.as_deref()),
        (old_head.as_str(), Some("failure"))
    );
    let summary = merge[0].summary.clone().unwrap_or_default();
    assert!(
        merge[0].title.as_deref().unwrap_or("").contains("calc.py")
            && summary.contains("A model's merge of them (strategy B) was refused")
            && summary.contains("requeued (1 of 3)"),
        "{summary}"
    );
    let status = w.status_comment();
    assert!(
        status.contains("**Merge failed.**")
            && status.contains("(a model's merge was refused): `feat/T-1` was marked failed")
            && status.contains("Requeued (1 of 3)"),
        "{status}"
    );
    // The Builder redid the change on the new base, in the same pull request.
    assert_eq!(
        w.gh.file_on_branch(REPO, "feat/T-1", "calc.py").as_deref(),
        Some(MERGED)
    );

    w.say("/hive approve").await;
    w.wait_state(TaskState::Completed).await;
    assert_eq!(strategies(&w, t.key).await, ["B", "C"]);
    assert_eq!(
        w.gh.file_on_branch(REPO, "main", "calc.py").as_deref(),
        Some(MERGED)
    );
    assert_eq!(w.gh.pulls(REPO).len(), 1);
    let status = w.status_comment();
    assert!(
        !status.contains("Merge failed") && status.contains("landed"),
        "{status}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_merge_that_breaks_the_tests_fails_its_regate_and_never_lands() {
    const WRONG: &str = "def add(a, b):\n    return a * b\n\n\ndef sub(a, b):\n    return a - b\n";
    let script = script_with(vec![
        (B_TASK, writes("calc.py", WRONG, "Merged.")),
        (
            "builder|after the rebase",
            writes("calc.py", MERGED, "add() adds again."),
        ),
    ]);
    let w = World::start(script, &calc(B_YML)).await;
    w.label().await;
    w.waiting_for_approval().await;
    w.gh.push_commit(REPO, "main", &[("calc.py", MAIN)], "Add sub()");
    w.say("/hive approve").await;

    // The merge was regated and failed: the Builder fixes it and a person approves again.
    let t = approval_prompt(&w, w.issue, 0, 2).await;
    assert_eq!(strategies(&w, t.key).await, ["B"]);
    let tests = regate_runs(&w, "hive/test");
    assert_eq!(tests.len(), 1, "{tests:?}");
    assert_eq!(tests[0].conclusion.as_deref(), Some("failure"));
    assert_eq!(file_at(&w, &tests[0].head_sha, "calc.py"), WRONG);
    // The rejected merge is the model's, and says so.
    let merge = merge_runs(&w);
    assert_eq!(merge.len(), 1, "{merge:?}");
    assert_eq!(merge[0].head_sha, tests[0].head_sha);
    assert!(
        merge[0]
            .summary
            .as_deref()
            .unwrap_or("")
            .contains("A model resolved them"),
        "{merge:?}"
    );
    assert_eq!(
        w.gh.file_on_branch(REPO, "main", "calc.py").as_deref(),
        Some(MAIN)
    );
    let redo = tasks_of(&w.llm, "builder");
    assert!(
        redo.last().unwrap().contains("after the rebase, hive/test"),
        "{redo:?}"
    );

    w.say("/hive approve").await;
    w.wait_state(TaskState::Completed).await;
    assert_eq!(
        w.gh.file_on_branch(REPO, "main", "calc.py").as_deref(),
        Some(MERGED)
    );
    let tests = regate_runs(&w, "hive/test");
    assert_eq!(
        tests
            .iter()
            .map(|c| c.conclusion.clone().unwrap_or_default())
            .collect::<Vec<_>>(),
        ["failure", "success"]
    );
}

/// Three tickets of one repository: T-1 fixes `add` and `mul`; T-2 fixes `sub` next to `add`
/// and T-3 `div` next to `mul`, so each conflicts with T-1 and not with the other.
mod three {
    pub const CALC: &str = "def add(a, b): return a - b\ndef sub(a, b): return a + b\n";
    pub const MUL: &str = "def mul(a, b): return a + b\ndef div(a, b): return a * b\n";
    pub const T1_CALC: &str = "def add(a, b): return a + b\ndef sub(a, b): return a + b\n";
    pub const T1_MUL: &str = "def mul(a, b): return a * b\ndef div(a, b): return a * b\n";
    pub const T1_TESTS: &str = "import unittest\n\nfrom calc import add\nfrom mul import mul\n\n\nclass T(unittest.TestCase):\n    def test_add(self):\n        self.assertEqual(add(2, 3), 5)\n\n    def test_mul(self):\n        self.assertEqual(mul(3, 4), 12)\n";
    pub const T2_CALC: &str = "def add(a, b): return a - b\ndef sub(a, b): return a - b\n";
    pub const T2_REDONE: &str = "def add(a, b): return a + b\ndef sub(a, b): return a - b\n";
    pub const T2_TESTS: &str = "import unittest\n\nfrom calc import sub\n\n\nclass T(unittest.TestCase):\n    def test_sub(self):\n        self.assertEqual(sub(5, 3), 2)\n";
    pub const T3_MUL: &str = "def mul(a, b): return a + b\ndef div(a, b): return a / b\n";
    pub const T3_REDONE: &str = "def mul(a, b): return a * b\ndef div(a, b): return a / b\n";
    pub const T3_TESTS: &str = "import unittest\n\nfrom mul import div\n\n\nclass T(unittest.TestCase):\n    def test_div(self):\n        self.assertEqual(div(8, 2), 4)\n";
}

/// A run of a requeued ticket: its events' ids from first to last.
#[derive(Debug, Clone, Copy)]
struct Run {
    ticket: TicketKey,
    what: &'static str,
    from: i64,
    to: i64,
}

/// The runs of a requeued ticket after its requeue, from the timeline: the redo (the Builder on
/// the new base up to the Critic) and the landing (from the approval to the snapshot).
fn runs(events: &[vibeloop::store::views::Event], ticket: TicketKey) -> Vec<Run> {
    let mine: Vec<_> = events.iter().filter(|e| e.ticket == ticket).collect();
    let cp = |e: &vibeloop::store::views::Event, node: &str| {
        e.kind == "checkpoint" && e.data["node"] == node
    };
    let requeued = mine
        .iter()
        .position(|e| cp(e, "rebase") && e.data["next"] == "code")
        .expect("a requeue");
    let after = &mine[requeued + 1..];
    let critic = after
        .iter()
        .position(|e| cp(e, "critic"))
        .expect("a review");
    let approved = after[critic..]
        .iter()
        .position(|e| cp(e, "await_approval"))
        .expect("an approval")
        + critic;
    let snapshot = after[approved..]
        .iter()
        .position(|e| cp(e, "snapshot"))
        .expect("a snapshot")
        + approved;
    vec![
        Run {
            ticket,
            what: "redo",
            from: after[0].id,
            to: after[critic].id,
        },
        Run {
            ticket,
            what: "landing",
            from: after[approved].id,
            to: after[snapshot].id,
        },
    ]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn conflicting_tickets_are_marked_failed_requeued_and_land_one_at_a_time() {
    use three::*;
    const TOKEN: &str = "dashboard-token-for-tests-0123456789";
    let plan = |title: &str, file: &str| {
        let mut p: Value = serde_json::from_str(&plan_json()).unwrap();
        p["ticket"]["context_refs"] = serde_json::json!([file]);
        p["plan"]["title"] = title.into();
        vec![Step::say(&p.to_string())]
    };
    let mut t1_builder = vec![Step::tool(
        "write_file",
        serde_json::json!({ "path": "calc.py", "content": T1_CALC }),
    )];
    t1_builder.extend(writes("mul.py", T1_MUL, "add() and mul() fixed."));
    // Script keys: the first (sorted) whose text is in the task wins, so each redo's key sorts
    // before its ticket's.
    let script = script_with(vec![
        ("breaker", writes("test_fix.py", T1_TESTS, "Tests.")),
        ("builder", t1_builder),
        (
            "architect|sub() adds",
            plan("Make sub() subtract", "calc.py"),
        ),
        (
            "breaker|sub() adds",
            writes("test_sub.py", T2_TESTS, "Tests."),
        ),
        (
            "builder|sub() adds",
            writes("calc.py", T2_CALC, "sub() fixed."),
        ),
        (
            "builder|calc.py: the base branch changed",
            writes("calc.py", T2_REDONE, "Redone."),
        ),
        (
            "architect|the div() function",
            plan("Make div() divide", "mul.py"),
        ),
        (
            "breaker|the div() function",
            writes("test_div.py", T3_TESTS, "Tests."),
        ),
        (
            "builder|the div() function",
            writes("mul.py", T3_MUL, "div() fixed."),
        ),
        (
            "builder|mul.py: the base branch changed",
            writes("mul.py", T3_REDONE, "Redone."),
        ),
    ]);
    let files = vec![
        ("calc.py", CALC.to_owned()),
        ("mul.py", MUL.to_owned()),
        (".github/hive.yml", HIVE_YML.to_owned()),
    ];
    let env = vec![("VIBELOOP_DASHBOARD_TOKEN".to_owned(), TOKEN.to_owned())];
    let w = World::start_with(script, &files, env).await;
    let i2 = w.gh.add_issue(
        REPO,
        "sub() adds",
        "`sub(5, 3)` returns 8; it should return 2.",
    );
    let i3 = w.gh.add_issue(
        REPO,
        "the div() function multiplies",
        "`div(8, 2)` returns 16; it should return 4.",
    );
    // Labelled one after the other: the repository's deliveries are handled in that order, so
    // issue #1 is T-1, #2 T-2 and #3 T-3; the tickets then run side by side.
    for issue in [w.issue, i2, i3] {
        let sent = w.gh.label_issue(REPO, issue, "hive").await;
        assert_eq!(sent.status, 202, "{}", sent.text);
    }
    for issue in [w.issue, i2, i3] {
        approval_prompt(&w, issue, 0, 1).await;
    }
    let old = |n: u32| w.gh.branch_sha(REPO, &format!("feat/T-{n}")).unwrap();
    let (head2, head3) = (old(2), old(3));
    let t1 = ticket_of(&w, w.issue).await.unwrap();
    assert_eq!(t1.id.to_string(), "T-1");

    // T-1 lands first; then T-2 and T-3 are approved: both conflict with it.
    w.say("/hive approve").await;
    w.wait_state(TaskState::Completed).await;
    let approve = |issue: u64| w.gh.comment_on(REPO, issue, MAINTAINER, "/hive approve");
    let ((_, a), (_, b)) = tokio::join!(approve(i2), approve(i3));
    assert_eq!((a.status, b.status), (202, 202));
    let t2 = approval_prompt(&w, i2, 1, 2).await;
    let t3 = approval_prompt(&w, i3, 1, 2).await;

    // Each branch's head that did not rebase is marked failed, saying why and what happens.
    for (n, head, file) in [(2, &head2, "calc.py"), (3, &head3, "mul.py")] {
        let run =
            w.gh.check_runs(REPO)
                .into_iter()
                .find(|c| c.name == "hive/merge" && &c.head_sha == head)
                .unwrap_or_else(|| panic!("no hive/merge on feat/T-{n}'s head"));
        assert_eq!(run.conclusion.as_deref(), Some("failure"));
        let summary = run.summary.unwrap_or_default();
        assert!(
            summary.contains(&format!("- `{file}`"))
                && summary.contains("behind the repository's other queued tickets")
                && summary.contains("one at a time until they land"),
            "{summary}"
        );
    }
    assert_eq!(w.conclusions("hive/merge").len(), 2);
    for (issue, n) in [(i2, 2), (i3, 3)] {
        let status: String =
            w.gh.comments(REPO, issue)
                .into_iter()
                .find(|c| c.body.contains("<!-- vibeloop:status"))
                .unwrap()
                .body;
        assert!(
            status.contains("**Merge failed.**")
                && status.contains(&format!("`feat/T-{n}` was marked failed"))
                && status.contains("Requeued (1 of 3)"),
            "{status}"
        );
    }
    // The dashboard's ticket view shows it too.
    let view: Value = reqwest::Client::new()
        .get(format!("{}/api/tickets/{REPO}/{}", w.bot.url, t2.id))
        .bearer_auth(TOKEN)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let conflict = &view["flow"]["conflict"];
    assert_eq!(
        (
            &conflict["branch"],
            &conflict["files"],
            &conflict["head"],
            &conflict["requeue"]
        ),
        (
            &Value::from("feat/T-2"),
            &serde_json::json!(["calc.py"]),
            &Value::from(head2.as_str()),
            &Value::from(1)
        ),
        "{view}"
    );

    // Approved again, both land, each redone once on the new base.
    let ((_, a), (_, b)) = tokio::join!(approve(i2), approve(i3));
    assert_eq!((a.status, b.status), (202, 202));
    let store = w.bot.store().await;
    w.bot
        .wait_until("T-2 and T-3 to land", WAIT, || async {
            let all = store.tickets().await.ok()?;
            all.iter()
                .all(|t| t.state == TaskState::Completed)
                .then_some(())
        })
        .await;
    assert_eq!(
        w.gh.file_on_branch(REPO, "main", "calc.py").as_deref(),
        Some(T2_REDONE)
    );
    assert_eq!(
        w.gh.file_on_branch(REPO, "main", "mul.py").as_deref(),
        Some(T3_REDONE)
    );
    for t in [&t2, &t3] {
        assert_eq!(strategies(&w, t.key).await, ["C"], "{}", t.id);
    }

    // The requeued tickets ran one at a time: no run of one overlaps a run of the other.
    let mut events = store.recent_events(100_000).await.unwrap();
    store.close().await;
    events.reverse();
    let mut all = runs(&events, t2.key);
    all.extend(runs(&events, t3.key));
    for a in &all {
        for b in all.iter().filter(|b| b.ticket != a.ticket) {
            assert!(
                a.to < b.from || b.to < a.from,
                "{} of ticket {} overlaps {} of ticket {}: {all:?}",
                a.what,
                a.ticket,
                b.what,
                b.ticket
            );
        }
    }
}
