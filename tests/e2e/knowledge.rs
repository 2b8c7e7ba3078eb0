//! The knowledge check of Preparing, both ways: a plan that needs a library the project does not
//! declare is Blocked with the question on the issue (no Builder is asked), and goes on once the
//! library is added; one the project declares goes on at once; `knowledge.missing: ignore` lets
//! a plan go on and notes what was missing.

use serde_json::json;

use crate::support;

use support::fake_llm::Step;
use support::hive::*;
use vibeloop::ticket::TaskState;

/// The usual plan, needing the `bcrypt` library.
fn plan_needing_bcrypt() -> String {
    let mut plan: serde_json::Value = serde_json::from_str(&plan_json()).unwrap();
    plan["plan"]["requires"] = json!([{ "name": "bcrypt", "kind": "library" }]);
    plan.to_string()
}

fn script() -> support::fake_llm::Script {
    script_with(vec![("architect", vec![Step::say(&plan_needing_bcrypt())])])
}

/// No setup: the test needs no installed package.
const YML: &str = "gates: { test: \"python3 -m unittest -v\" }\nsetup: \"true\"\n";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_missing_library_blocks_the_plan_until_the_project_has_it() {
    let w = World::start(script(), &calc(YML)).await;
    w.label().await;
    let t = w.wait_state(TaskState::Blocked).await;
    assert_eq!(
        t.detail.as_deref(),
        Some("1 open question(s) on the issue.")
    );
    let question =
        w.gh.comments(REPO, w.issue)
            .into_iter()
            .find(|c| c.body.contains("<!-- vibeloop:questions"))
            .expect("the question on the issue")
            .body;
    assert!(
        question.contains("The plan needs the library `bcrypt`, which the project does not depend on (no manifest or lockfile at the repository's root)"),
        "{question}"
    );
    assert!(w.llm.requests("builder").is_empty(), "no Builder was asked");

    // The maintainer adds it on main and asks for the plan again: it goes on.
    w.gh.push_commit(
        REPO,
        "main",
        &[("requirements.txt", "bcrypt>=4\n")],
        "Add bcrypt",
    );
    w.say("/hive plan").await;
    w.waiting_for_approval().await;
    assert!(!w.llm.requests("builder").is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_library_the_project_declares_passes_the_check() {
    let mut files = calc(YML);
    files.push(("requirements.txt", "# hashing\nBCrypt==4.1.2\n".into()));
    let w = World::start(script(), &files).await;
    w.label().await;
    w.waiting_for_approval().await;
    assert!(
        !w.gh
            .comments(REPO, w.issue)
            .iter()
            .any(|c| c.body.contains("<!-- vibeloop:questions")),
        "no question was asked"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ignore_lets_the_plan_go_on_and_notes_what_was_missing() {
    let yml = format!("{YML}knowledge: {{ missing: ignore }}\n");
    let w = World::start(script(), &calc(&yml)).await;
    w.label().await;
    w.waiting_for_approval().await;
    let t = w.ticket().await.unwrap();
    let store = w.bot.store().await;
    let events = store.events(t.key).await.unwrap();
    store.close().await;
    let noted = events
        .iter()
        .find(|(_, k, _)| k == "knowledge_missing")
        .map(|(_, _, v)| v.to_string())
        .expect("a knowledge_missing event");
    assert!(noted.contains("bcrypt"), "{noted}");
}
