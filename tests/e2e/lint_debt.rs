//! Lint findings the base already has are the repository's, not the change's: a change that
//! adds none passes the lint gate (saying how many it set aside), and one that adds a finding
//! fails it, naming that one. Real projects carry such debt (a newer linter than the one their
//! code was written against), and without this no change to them could ever pass.

use crate::ecosystems::project;
use crate::ecosystems_run::{plan, run};
use crate::support::fake_llm::{Script, Step};
use crate::support::hive::{approve_json, writes};

/// flake8 (the image's) on the package only; one retry, so a failed gate ends the run.
const HIVE: &str = "retry: { max_retries: 0 }\ngates:\n  lint: flake8 --select=F calc\n";
const OPS: &str = "def add(a, b):\n    return a - b\n";
/// Unused imports: what flake8 reports on the base (F401), twice.
const LEGACY: &str = "import os\nimport sys\n\n\ndef old():\n    return 1\n";
const TEST: &str = "from calc.ops import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n";

fn package() -> (tempfile::TempDir, std::path::PathBuf) {
    project(&[
        ("requirements.txt", "pytest\n"),
        ("calc/__init__.py", ""),
        ("calc/ops.py", OPS),
        ("calc/legacy.py", LEGACY),
        (".github/hive.yml", HIVE),
    ])
}

fn script(goal: &str, change: &str) -> Script {
    Script::from([
        (
            "architect".to_owned(),
            vec![Step::say(&plan(goal, "calc/ops.py"))],
        ),
        (
            "breaker".to_owned(),
            writes("tests/test_add.py", TEST, "A test."),
        ),
        (
            "builder".to_owned(),
            writes("calc/ops.py", change, "Fixed."),
        ),
        ("critic".to_owned(), vec![Step::say(&approve_json())]),
    ])
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn findings_the_base_has_are_set_aside_and_a_new_one_fails_the_gate() {
    let goal = "add() adds";
    let (_d, repo) = package();
    let clean = "def add(a, b):\n    return a + b\n";
    let (code, stdout, stderr, _) = run(script(goal, clean), &repo, goal).await;
    assert_eq!(code, Some(0), "{stdout}\n{stderr}");
    for line in ["gate lint: passed", "T-1 completed"] {
        assert!(stdout.contains(line), "no {line:?} in:\n{stdout}\n{stderr}");
    }

    let (_d, repo) = package();
    let adds_one = "import json\n\n\ndef add(a, b):\n    return a + b\n";
    let (code, stdout, stderr, _) = run(script(goal, adds_one), &repo, goal).await;
    assert_ne!(code, Some(0), "{stdout}\n{stderr}");
    assert!(stdout.contains("gate lint: failed"), "{stdout}\n{stderr}");
    assert!(
        stdout.contains("'json' imported but unused"),
        "the new finding is named:\n{stdout}\n{stderr}"
    );
}
