//! The engineering constraints of the Architect's ticket act on the run: its read-only paths
//! are added to the repository's, and its complexity limit is measured on the functions the
//! Builder changes (the lint gate's findings, back to the Builder like any failed gate).

use serde_json::json;

use crate::support;

use support::fake_llm::Step;
use support::hive::*;
use vibeloop::ticket::TaskState;

/// `add` with four decision points: a cyclomatic complexity of 5.
const CALC_BRANCHY: &str = "def add(a, b):\n    if a > 0 and b > 0:\n        return a + b\n    if a < 0 or b < 0:\n        return a + b\n    return a + b\n";

fn plan_with_constraints() -> String {
    let mut plan: serde_json::Value = serde_json::from_str(&plan_json()).unwrap();
    plan["ticket"]["constraints"] = json!({ "read_only_paths": ["docs/"], "timeout_seconds": 300 });
    plan["ticket"]["vibe_config"] = json!({ "complexity_limit": 2, "linter": "rm -rf /" });
    plan.to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_tickets_read_only_paths_and_complexity_limit_bind_the_builder() {
    let script = script_with(vec![
        ("architect", vec![Step::say(&plan_with_constraints())]),
        (
            "builder",
            vec![
                Step::tool(
                    "write_file",
                    json!({ "path": "docs/NOTES.md", "content": "notes\n" }),
                ),
                Step::tool(
                    "write_file",
                    json!({ "path": "calc.py", "content": CALC_BRANCHY }),
                ),
                Step::say("add() handles every sign."),
            ],
        ),
        (
            "builder|attempt 2 of",
            writes("calc.py", CALC_FIXED, "add() is one expression now."),
        ),
    ]);
    let w = World::start(script, &calc(AUTO_YML)).await;
    w.label().await;
    w.wait_state(TaskState::Completed).await;

    // The ticket's read-only path refused the Builder's write.
    let first = &w.llm.requests("builder")[1];
    let refused = first["messages"]
        .as_array()
        .unwrap()
        .iter()
        .rev()
        .find(|m| m["role"] == "tool")
        .unwrap()["content"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(
        refused.contains("docs/NOTES.md") && refused.contains("error"),
        "{refused}"
    );
    assert_eq!(w.gh.file_on_branch(REPO, "main", "docs/NOTES.md"), None);

    // Attempt 1's branchy `add` failed the lint gate on complexity; attempt 2 passed.
    let lint: Vec<_> =
        w.gh.check_runs(REPO)
            .into_iter()
            .filter(|c| c.name == "hive/lint")
            .collect();
    assert_eq!(lint[0].conclusion.as_deref(), Some("failure"), "{lint:?}");
    assert!(
        lint[0].annotations.iter().any(|a| a["message"]
            .as_str()
            .unwrap_or_default()
            .contains("`add` has a cyclomatic complexity of 5, above the limit of 2")),
        "{:?}",
        lint[0].annotations
    );
    assert!(
        lint[1..]
            .iter()
            .all(|c| c.conclusion.as_deref() != Some("failure")),
        "{lint:?}"
    );
    let tasks = tasks_of(&w.llm, "builder");
    assert!(
        tasks[0].contains("cyclomatic complexity of at most 2"),
        "{}",
        tasks[0]
    );
    assert!(
        tasks[1].contains("cyclomatic complexity of 5"),
        "{}",
        tasks[1]
    );
    assert_eq!(
        w.gh.file_on_branch(REPO, "main", "calc.py").as_deref(),
        Some(CALC_FIXED)
    );

    // The unknown linter was not run, and the timeline says what the ticket changed.
    let t = w.ticket().await.unwrap();
    let store = w.bot.store().await;
    let events = store.events(t.key).await.unwrap();
    store.close().await;
    let (_, _, notes) = events
        .iter()
        .find(|(_, k, _)| k == "ticket_constraints")
        .expect("a ticket_constraints event");
    let notes = notes.to_string();
    assert!(
        notes.contains("read-only for this ticket too: `docs/`")
            && notes.contains("gate commands stop after 300 s")
            && notes.contains("is not one of"),
        "{notes}"
    );
}

/// `plan.min_steps` and `plan.decomposition_retries` from `.github/hive.yml`: a one-step plan
/// below the repository's minimum is not sent back for correction when no correction is
/// allowed; the ticket is Blocked with the finding as its question after one Architect call.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_plan_settings_bound_the_architect() {
    let yml = format!("{AUTO_YML}plan: {{ min_steps: 2, decomposition_retries: 0 }}\n");
    let w = World::start(happy_script(), &calc(&yml)).await;
    w.label().await;
    w.wait_state(TaskState::Blocked).await;
    assert_eq!(
        w.llm.requests("architect").len(),
        1,
        "no correction was asked"
    );
    let question =
        w.gh.comments(REPO, w.issue)
            .into_iter()
            .find(|c| c.body.contains("<!-- vibeloop:questions"))
            .expect("the question on the issue")
            .body;
    assert!(
        question.contains("1 step(s); break the work into at least 2 (plan.min_steps)"),
        "{question}"
    );
    assert!(w.llm.requests("builder").is_empty());
}
