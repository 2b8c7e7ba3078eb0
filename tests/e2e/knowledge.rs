//! The knowledge check of Preparing, both ways: a plan that needs a library the project does not
//! declare is Blocked with the question on the issue (no Builder is asked), and goes on once the
//! library is added; one the project declares goes on at once; `knowledge.missing: ignore` lets
//! a plan go on and notes what was missing; `dependency_ticket` opens an issue for it that runs
//! first, and the waiting ticket lands after it.

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

/// `knowledge.missing: dependency_ticket`: the bot opens an issue for the missing library with
/// the hive's label, that issue runs as a ticket of its own and lands first, and the ticket
/// that waited plans again and lands after it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dependency_ticket_runs_first_and_the_waiting_ticket_goes_on_after_it() {
    // The dependency's ticket: a test that the library is declared, and the declaration.
    let declared_test = "import os\nimport unittest\n\n\nclass Deps(unittest.TestCase):\n    def test_bcrypt_is_declared(self):\n        text = open(\"requirements.txt\").read() if os.path.exists(\"requirements.txt\") else \"\"\n        self.assertIn(\"bcrypt\", text)\n";
    let script = script_with(vec![
        ("architect", vec![Step::say(&plan_needing_bcrypt())]),
        ("architect|plans to use", vec![Step::say(&plan_json())]),
        (
            "breaker|plans to use",
            writes(
                "test_deps.py",
                declared_test,
                "A test that bcrypt is declared.",
            ),
        ),
        (
            "builder|plans to use",
            writes("requirements.txt", "bcrypt>=4\n", "bcrypt is declared."),
        ),
    ]);
    let yml = format!(
        "{YML}knowledge: {{ missing: dependency_ticket }}\nreview: {{ require_human_approval: false }}\n"
    );
    let w = World::start(script, &calc(&yml)).await;
    w.label().await;

    // T-1 waits for the issue the bot opened; that issue, labelled, became T-2 and lands.
    let t1 = w.wait_state(TaskState::Blocked).await;
    let (number, labels, body) = {
        let st = w.gh.state();
        let (n, i) = st.repos[REPO]
            .issues
            .iter()
            .find(|(_, i)| i.body.contains("<!-- vibeloop:dependency-of T-1 -->"))
            .expect("the dependency's issue");
        (
            *n,
            st.repos[REPO].labels.get(n).cloned().unwrap_or_default(),
            i.body.clone(),
        )
    };
    assert_eq!(
        t1.detail.as_deref(),
        Some(format!("Waits for #{number}, which adds `bcrypt` (library) to the project; this ticket plans again once it lands.").as_str())
    );
    assert_eq!(labels, ["hive"]);
    assert!(
        body.contains(&format!(
            "#{} (T-1) plans to use `bcrypt` (library)",
            w.issue
        )),
        "{body}"
    );
    let store = w.bot.store().await;
    let repo = vibeloop::ids::RepoName::parse(REPO).unwrap();
    let t2 = w
        .bot
        .wait_until("the dependency's ticket to land", WAIT, || async {
            store
                .ticket_for_issue(&repo, number)
                .await
                .unwrap()
                .filter(|t| t.state == TaskState::Completed)
        })
        .await;
    store.close().await;
    assert_eq!(t2.id.to_string(), "T-2");

    // Then T-1 plans again, finds bcrypt on main, and lands too.
    w.wait_state(TaskState::Completed).await;
    assert_eq!(
        w.gh.file_on_branch(REPO, "main", "requirements.txt")
            .as_deref(),
        Some("bcrypt>=4\n")
    );
    assert_eq!(
        w.gh.file_on_branch(REPO, "main", "calc.py").as_deref(),
        Some(CALC_FIXED)
    );
    // One dependency issue, however often T-1 was checked.
    let opened = w.gh.state().repos[REPO]
        .issues
        .values()
        .filter(|i| i.body.contains("vibeloop:dependency-of"))
        .count();
    assert_eq!(opened, 1);
}
