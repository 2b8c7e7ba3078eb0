//! The memory lifecycle end to end: what a merged ticket established (its Canonical memory: the
//! gate command that passed, the tests its Breaker added, the files it changed) is in the next
//! ticket's first prompt; what a failed run produced is demoted and never told, even when its
//! ticket runs again and lands.

use serde_json::json;

use crate::support;

use support::fake_llm::Step;
use support::hive::*;
use vibeloop::ids::RepoName;
use vibeloop::store::tickets::Ticket;
use vibeloop::ticket::{MemoryStability, TaskState};

const CALC_V0: &str = "def add(a, b):\n    return a - b\n\n\ndef mul(a, b):\n    return a + b\n";
const CALC_V1: &str = "def add(a, b):\n    return a + b\n\n\ndef mul(a, b):\n    return a + b\n";
const CALC_V2: &str = "def add(a, b):\n    return a + b\n\n\ndef mul(a, b):\n    return a * b\n";

/// A Breaker's test of mul(), in a class and method named after `name`.
fn mul_tests(name: &str) -> String {
    format!(
        "import unittest\n\nfrom calc import mul\n\n\nclass Mul(unittest.TestCase):\n    def {name}(self):\n        self.assertEqual(mul(3, 4), 12)\n"
    )
}

/// The Architect's plan for the mul() issue, its title marked with `run`.
fn mul_plan(run: &str) -> String {
    json!({
        "ticket": { "type": "bugfix", "goal": "mul(a, b) returns the product a * b", "context_refs": ["calc.py"] },
        "plan": {
            "title": format!("Make mul() multiply ({run})"),
            "description": "mul() adds its arguments; it must return their product.",
            "steps": [{ "input": "calc.py", "output": "mul returns a * b", "validation_criteria": "the mul tests pass" }],
            "dependencies": [],
        },
        "open_questions": [],
    })
    .to_string()
}

/// The scripts of the mul() issue's run marked `run` (in the issue's body): its plan, its
/// Breaker's test `test_file` with test `test`, its Builder's fix.
fn mul_run(run: &'static str, test_file: &str, test: &str) -> Vec<(String, Vec<Step>)> {
    vec![
        (format!("architect|{run}"), vec![Step::say(&mul_plan(run))]),
        (
            format!("breaker|{run}"),
            writes(test_file, &mul_tests(test), "A test for mul()."),
        ),
        (
            format!("builder|{run}"),
            writes("calc.py", CALC_V2, "mul() multiplies."),
        ),
    ]
}

async fn ticket_of(w: &World, issue: u64) -> Option<Ticket> {
    let store = w.bot.store().await;
    let repo = RepoName::parse(REPO).unwrap();
    let t = store.ticket_for_issue(&repo, issue).await.unwrap();
    store.close().await;
    t
}

/// Waits until issue `issue`'s ticket is in `state`, with `detail` in its detail.
async fn wait_for(w: &World, issue: u64, state: TaskState, detail: &str) -> Ticket {
    w.bot
        .wait_until(&format!("#{issue} to be {state}"), WAIT, || async {
            ticket_of(w, issue)
                .await
                .filter(|t| t.state == state && t.detail.as_deref().unwrap_or("").contains(detail))
        })
        .await
}

/// A maintainer comments `body` on issue `issue`.
async fn say_on(w: &World, issue: u64, body: &str) {
    let (_, sent) = w.gh.comment_on(REPO, issue, MAINTAINER, body).await;
    assert_eq!(sent.status, 202, "{}", sent.text);
}

/// The first user message of the Architect's conversation whose issue says `marker`.
async fn architect_task(w: &World, marker: &str) -> String {
    w.bot
        .wait_until(
            &format!("the Architect's task on {marker:?}"),
            WAIT,
            || async {
                tasks_of(&w.llm, "architect")
                    .into_iter()
                    .find(|t| t.contains(marker))
            },
        )
        .await
}

/// The part of a prompt that tells earlier tickets' memory.
fn told(task: &str) -> &str {
    task.split_once("## What earlier tickets established")
        .map(|(_, m)| m)
        .unwrap_or("")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_next_ticket_is_told_what_a_merged_one_established_and_not_what_a_failed_run_made() {
    let mut changes: Vec<(String, Vec<Step>)> = vec![(
        "builder".into(),
        writes("calc.py", CALC_V1, "add() adds now."),
    )];
    changes.extend(mul_run("first try", "test_mul_first.py", "test_first_mul"));
    changes.extend(mul_run("second try", "test_mul.py", "test_mul_twelve"));
    let mut script = happy_script();
    script.extend(changes);
    let mut files = calc(HIVE_YML);
    files[0].1 = CALC_V0.into();
    let w = World::start(script, &files).await;

    // Ticket 1 lands: add() is fixed, with the Breaker's test_negative.
    w.label().await;
    w.waiting_for_approval().await;
    w.say("/hive approve").await;
    w.wait_state(TaskState::Completed).await;

    // Ticket 2's first run goes as far as the approval, and is aborted.
    let mul = w.gh.add_issue(
        REPO,
        "mul() adds",
        "`mul(3, 4)` in calc.py returns 7; it should return 12 (first try).",
    );
    assert_eq!(w.gh.label_issue(REPO, mul, "hive").await.status, 202);
    wait_for(
        &w,
        mul,
        TaskState::AwaitingVerification,
        "The Critic approves.",
    )
    .await;
    // Ticket 2's first prompt has what ticket 1 made Canonical.
    let first = architect_task(&w, "(first try)").await;
    let memory = told(&first);
    for fact in [
        "- T-1 (Make add() add): add(a, b) returns the sum a + b\n",
        "- T-1 added the tests test_add_more.AddMore.test_negative in `test_add_more.py`\n",
        "- `calc.py` is source (T-1 changed it)\n",
        "- `python3 -m unittest -v` is this repository's test command\n",
    ] {
        assert!(memory.contains(fact), "{fact:?} not in:\n{first}");
    }
    say_on(&w, mul, "/hive abort").await;
    let failed = wait_for(&w, mul, TaskState::Failed, "Aborted").await;
    let store = w.bot.store().await;
    let demoted = store.ticket_memory(failed.key).await.unwrap();
    store.close().await;
    assert!(
        demoted.len() >= 4
            && demoted
                .iter()
                .all(|m| m.stability == MemoryStability::Ephemeral),
        "the failed run's memory is demoted: {demoted:#?}"
    );

    // Run again (the issue edited, the label put back), ticket 2 lands.
    w.gh.edit_issue(
        REPO,
        mul,
        "mul() adds",
        "`mul(3, 4)` in calc.py returns 7; it should return 12 (second try).",
    )
    .await;
    w.gh.unlabel_issue(REPO, mul, "hive", true).await;
    assert_eq!(w.gh.label_issue(REPO, mul, "hive").await.status, 202);
    wait_for(
        &w,
        mul,
        TaskState::AwaitingVerification,
        "The Critic approves.",
    )
    .await;
    say_on(&w, mul, "/hive approve").await;
    wait_for(&w, mul, TaskState::Completed, "").await;
    assert_eq!(
        w.gh.file_on_branch(REPO, "main", "calc.py").as_deref(),
        Some(CALC_V2)
    );

    // Ticket 3 is told what both merged runs established, and nothing of the failed run.
    let docs = w.gh.add_issue(
        REPO,
        "Document calc.py",
        "add() and mul() in calc.py need docstrings (third ticket).",
    );
    assert_eq!(w.gh.label_issue(REPO, docs, "hive").await.status, 202);
    let third = architect_task(&w, "(third ticket)").await;
    let memory = told(&third);
    for fact in [
        "- T-1 added the tests test_add_more.AddMore.test_negative in `test_add_more.py`\n",
        "- T-2 (Make mul() multiply (second try)): mul(a, b) returns the product a * b\n",
        "- T-2 added the tests test_mul.Mul.test_mul_twelve in `test_mul.py`\n",
        "- `calc.py` is source (T-2 changed it)\n",
        "- `python3 -m unittest -v` is this repository's test command\n",
    ] {
        assert!(memory.contains(fact), "{fact:?} not in:\n{third}");
    }
    for failed in ["first try", "test_first_mul", "test_mul_first.py"] {
        assert!(!third.contains(failed), "{failed:?} in:\n{third}");
    }
    // The repository-wide fact is told once, not once per ticket.
    assert_eq!(
        memory.matches("is this repository's test command").count(),
        1
    );
}
