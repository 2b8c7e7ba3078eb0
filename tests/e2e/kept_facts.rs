//! Facts of a base kept for every ticket on it (issue 43): the baseline — the tests, lint and
//! typecheck on the unchanged base — is computed once per base commit and config, and a
//! second ticket on that base takes it, with the same verdicts, and runs nothing for it. The
//! ticket that ran the baseline proves its tests red in the baseline's sandbox, one container
//! fewer, unless the base's run left too little of its disk.

use crate::support;

use support::hive::*;
use vibeloop::ticket::TaskState;

/// The data of the first event of ticket `key` that `matches` (kind, data).
async fn first_event(
    w: &World,
    key: vibeloop::ids::TicketKey,
    matches: impl Fn(&str, &serde_json::Value) -> bool,
) -> serde_json::Value {
    let store = w.bot.store().await;
    let events = store.events(key).await.unwrap();
    store.close().await;
    events
        .into_iter()
        .find(|(_, kind, d)| matches(kind, d))
        .map(|(_, _, d)| d)
        .expect("the event")
}

/// The `baseline` event of ticket `key`.
async fn baseline_event(w: &World, key: vibeloop::ids::TicketKey) -> serde_json::Value {
    first_event(w, key, |kind, _| kind == "baseline").await
}

/// What the red proof's `stage_exit` of ticket `key` says.
async fn red_proof_exit(w: &World, key: vibeloop::ids::TicketKey) -> serde_json::Value {
    first_event(w, key, |kind, d| {
        kind == "stage_exit" && d["stage"] == "red_proof"
    })
    .await
}

/// The conclusions of the `hive/red-proof` check runs.
fn red_proofs(w: &World) -> Vec<String> {
    w.gh.check_runs(REPO)
        .into_iter()
        .filter(|c| c.name == "hive/red-proof")
        .map(|c| c.conclusion.unwrap_or_default())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_second_ticket_on_the_same_base_takes_the_first_ones_baseline() {
    let (script, files) = mul_world(HIVE_YML);
    let w = World::start(script, &files).await;
    w.label().await;
    let first = w.waiting_for_approval().await;
    let second = w.gh.add_issue(REPO, MUL_ISSUE.0, MUL_ISSUE.1);
    let labelled = w.gh.label_issue(REPO, second, "hive").await;
    assert_eq!(labelled.status, 202);
    let store = w.bot.store().await;
    let t2 = w
        .bot
        .wait_until("the second ticket's pull request", WAIT, || async {
            let all = store.tickets().await.ok()?;
            all.into_iter()
                .find(|t| t.key != first.key && t.state == TaskState::AwaitingVerification)
        })
        .await;
    store.close().await;
    // Both on the unchanged main: the first ran the baseline, the second took it.
    let (a, b) = (
        baseline_event(&w, first.key).await,
        baseline_event(&w, t2.key).await,
    );
    assert_eq!(a.get("kept"), None, "{a}");
    assert_eq!(b["kept"], true, "{b}");
    // The first proved its tests red where its baseline ran; the second had no baseline's
    // sandbox to take, and started one.
    let (a, b) = (
        red_proof_exit(&w, first.key).await,
        red_proof_exit(&w, t2.key).await,
    );
    assert_eq!(
        (&a["in_baseline"], &b["in_baseline"]),
        (&true.into(), &false.into()),
        "{a} {b}"
    );
    assert_eq!(red_proofs(&w), ["success", "success"]);
    for field in ["counts", "failing", "passing", "known_findings"] {
        assert_eq!(a[field], b[field], "{field}: {a} vs {b}");
    }
    // The verdicts stand: the second change is proved red and then green as the first was.
    let passed: Vec<_> = w
        .gh
        .check_runs(REPO)
        .into_iter()
        .filter(|c| c.name == "hive/test" && Some(c.head_sha.as_str()) == t2.head_sha.as_deref())
        .map(|c| c.conclusion.unwrap_or_default())
        .collect();
    assert_eq!(passed, ["success"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_baseline_that_took_over_half_its_disk_leaves_the_red_proof_a_fresh_one() {
    // Each run of the tests writes 40 MiB of the 64 the disk has room for, then tests: two
    // runs on one disk would fill it, and the red proof would fail for want of space.
    let test = "dd if=/dev/zero of=$(mktemp -p .) bs=1M count=40 && python3 -m unittest -v";
    let yml = format!("gates: {{ test: \"{test}\" }}\nlimits: {{ disk_mb: 64 }}\n");
    let w = World::start(happy_script(), &calc(&yml)).await;
    w.label().await;
    let first = w
        .bot
        .wait_until("the first red proof", WAIT, || async {
            red_proofs(&w).into_iter().find(|c| !c.is_empty())
        })
        .await;
    assert_eq!(first, "success");
    let t = w.waiting_for_approval().await;
    let exit = red_proof_exit(&w, t.key).await;
    assert_eq!(exit["in_baseline"], false, "{exit}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_ticket_fetches_its_base_once_and_each_git_request_carries_the_token() {
    let w = World::start(happy_script(), &calc(HIVE_YML)).await;
    w.label().await;
    w.first_pull().await;
    // The fetches before the pull request was asked for: one fixes the base; the baseline,
    // the Architect's checkout, the red proof and the pull request take it from the mirror;
    // the Builder's start and the Encounter fetch again for commits people pushed.
    let requests = w.gh.requests();
    let opened = requests
        .iter()
        .position(|r| r.method == "POST" && r.path == format!("/repos/{REPO}/pulls"))
        .expect("the pull request was asked for");
    let fetches = requests[..opened]
        .iter()
        .filter(|r| r.path.ends_with("/info/refs") && r.query == "service=git-upload-pack")
        .filter(|r| r.status == 200)
        .count();
    assert_eq!(fetches, 3, "{:#?}", &requests[..opened]);
    // Each fetch and push gives the token with its first request: none is refused and
    // asked again, a round trip to GitHub each.
    let git: Vec<_> = requests
        .iter()
        .filter(|r| r.path.contains(".git/"))
        .collect();
    assert!(git.len() >= 6, "{git:#?}");
    assert!(git.iter().all(|r| r.status == 200), "{git:#?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_that_stops_before_its_red_proof_keeps_no_baseline_sandbox() {
    let w = World::start(happy_script(), &calc(PLAN_APPROVAL_YML)).await;
    w.label().await;
    // The baseline ran, then the run stopped for the plan's approval: what it kept goes.
    w.wait_state(TaskState::Blocked).await;
    let docker = w.docker().await;
    let kept = w
        .env
        .data_dir
        .join("worktrees/acme/widgets/vibeloop-baseline-T-1");
    w.bot
        .wait_until(
            "the baseline's container and worktree to go",
            WAIT,
            || async {
                let none = docker.containers().await.unwrap().is_empty();
                (none && !kept.exists()).then_some(())
            },
        )
        .await;
    // The next run starts its red proof in a sandbox of its own, and the change goes on.
    let id = w.say("/hive approve").await;
    assert!(w.reply_to(id).await.contains("approved"));
    let t = w.waiting_for_approval().await;
    assert_eq!(red_proof_exit(&w, t.key).await["in_baseline"], false);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_base_that_stops_the_ticket_at_its_baseline_leaves_no_architect_worktree() {
    // The Architect's worktree is checked out while the baseline runs. A base whose test
    // command fails stops the ticket before any model is asked, and that worktree goes too.
    let yml = "gates: { test: \"python3 -c 'import nosuchmodule'\" }\n";
    let w = World::start(happy_script(), &calc(yml)).await;
    w.label().await;
    w.wait_state(TaskState::HumanNeeded).await;
    let scratch = w
        .env
        .data_dir
        .join("worktrees/acme/widgets/vibeloop-plan-T-1");
    w.bot
        .wait_until("the Architect's worktree to go", WAIT, || async {
            (!scratch.exists()).then_some(())
        })
        .await;
    assert!(
        w.llm.requests("architect").is_empty(),
        "the Architect was asked"
    );
}
