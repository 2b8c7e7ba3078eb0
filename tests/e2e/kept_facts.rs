//! Facts of a base kept for every ticket on it (issue 43): the baseline — the tests, lint and
//! typecheck on the unchanged base — is computed once per base commit and config, and a
//! second ticket on that base takes it, with the same verdicts, and runs nothing for it.

use crate::support;

use support::fake_llm::Step;
use support::hive::*;
use vibeloop::ticket::TaskState;

const MUL_BUGGY: &str = "def mul(a, b):\n    return a + b\n";
const MUL_FIXED: &str = "def mul(a, b):\n    return a * b\n";
const MUL_TESTS: &str = "import unittest\n\nfrom mul import mul\n\n\nclass MulTest(unittest.TestCase):\n    def test_mul(self):\n        self.assertEqual(mul(3, 4), 12)\n";

/// The `baseline` event of ticket `key`.
async fn baseline_event(w: &World, key: vibeloop::ids::TicketKey) -> serde_json::Value {
    let store = w.bot.store().await;
    let events = store.events(key).await.unwrap();
    store.close().await;
    events
        .into_iter()
        .find(|(_, kind, _)| kind == "baseline")
        .map(|(_, _, d)| d)
        .expect("a baseline event")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_second_ticket_on_the_same_base_takes_the_first_ones_baseline() {
    let mut plan: serde_json::Value = serde_json::from_str(&plan_json()).unwrap();
    plan["ticket"]["context_refs"] = serde_json::json!(["mul.py"]);
    plan["plan"]["title"] = "Make mul() multiply".into();
    let script = script_with(vec![
        ("architect|mul()", vec![Step::say(&plan.to_string())]),
        (
            "breaker|mul()",
            writes("test_mul.py", MUL_TESTS, "A test for mul()."),
        ),
        (
            "builder|mul()",
            writes("mul.py", MUL_FIXED, "mul() multiplies."),
        ),
    ]);
    let mut files: Vec<_> = calc(HIVE_YML)
        .into_iter()
        .filter(|(p, _)| *p != "test_calc.py")
        .collect();
    files.push(("mul.py", MUL_BUGGY.into()));
    let w = World::start(script, &files).await;
    w.label().await;
    let first = w.waiting_for_approval().await;
    let second = w.gh.add_issue(
        REPO,
        "mul() adds",
        "`mul(3, 4)` returns 7; it should return 12.",
    );
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
