//! Real projects at real scale, zero-config: thousands of tests whose `-rA` output is far past
//! what people are shown, the test tools named only where the project's own tools read them
//! (tox's `deps`). Releases fetched at test time, pinned by version and checksum.

use crate::ecosystems_run::{plan, run};
use crate::support::fake_llm::{Script, Step};
use crate::support::hive::{approve_json, writes};
use crate::support::registry::Sdist;

/// Pygments: 5,300 tests (~500 kB under `-rA`, in an order pytest-randomly shuffles on every
/// run), its test tools named only in `tox.ini`'s `deps` (pytest-randomly, and
/// wcag-contrast-ratio, without which `tests/contrast` cannot be collected and no test runs).
const PYGMENTS: Sdist = Sdist {
    name: "pygments",
    version: "2.21.0",
    sha256: "610ca751c9bc2492b38eb9a38a7fbc93edbbb2d7182edaf34e66ae493dee5c8c",
};

const CLAMP_TEST: &str = "from pygments.util import clamp\n\n\ndef test_clamp_holds_a_value_within_its_bounds():\n    assert clamp(5, 0, 3) == 3\n    assert clamp(-1, 0, 3) == 0\n    assert clamp(2, 0, 3) == 2\n";

const CLAMP: &str = "\n\ndef clamp(value, low, high):\n    \"\"\"`value` held within `low` and `high`.\"\"\"\n    return max(low, min(value, high))\n";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_change_to_a_project_of_thousands_of_tests_is_judged_by_every_one_and_reaches_ready() {
    let (_d, repo) = PYGMENTS.repository(&["PKG-INFO"], &[]);
    let util = std::fs::read_to_string(repo.join("pygments/util.py")).unwrap();
    let goal = "pygments.util.clamp(value, low, high): a value held within bounds";
    let script = Script::from([
        (
            "architect".to_owned(),
            vec![Step::say(&plan(goal, "pygments/util.py"))],
        ),
        (
            "breaker".to_owned(),
            writes("tests/test_clamp.py", CLAMP_TEST, "A test of clamp()."),
        ),
        (
            "builder".to_owned(),
            writes(
                "pygments/util.py",
                &format!("{util}{CLAMP}"),
                "clamp() added.",
            ),
        ),
        ("critic".to_owned(), vec![Step::say(&approve_json())]),
    ]);
    let (code, stdout, stderr, _) = run(script, &repo, goal).await;
    assert_eq!(code, Some(0), "{stdout}\n{stderr}");
    for line in ["✓ red_proof", "gate test: passed (", "T-1 completed"] {
        assert!(stdout.contains(line), "no {line:?} in:\n{stdout}\n{stderr}");
    }
    // Every test ran and was read: thousands, not the few in the output's head and tail.
    let passed: u64 = stdout
        .split("gate test: passed (")
        .nth(1)
        .and_then(|r| r.split_whitespace().next())
        .and_then(|n| n.parse().ok())
        .unwrap_or(0);
    assert!(passed >= 5000, "{passed} tests passed:\n{stdout}");
}

const FIXING_RUFF: &str = "[build-system]\nrequires = [\"setuptools\"]\nbuild-backend = \"setuptools.build_meta\"\n\n[project]\nname = \"calc\"\nversion = \"0.1.0\"\n\n[tool.setuptools]\npy-modules = [\"calc\"]\n\n[tool.ruff]\nfix = true\n\n[tool.ruff.lint]\nselect = [\"F\"]\n";

const RUFF_PINNED: &str = "repos:\n  - repo: https://github.com/astral-sh/ruff-pre-commit\n    rev: v0.6.9\n    hooks:\n      - id: ruff\n";

/// The Breaker's test imports what it does not use: ruff, pinned by pre-commit and set to fix
/// in place, rewrites it in the sandbox. The lock puts it back as written, and lint is green.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_linter_that_fixes_in_place_works_under_the_test_lock() {
    let (_d, repo) = crate::ecosystems::project(&[
        ("pyproject.toml", FIXING_RUFF),
        (".pre-commit-config.yaml", RUFF_PINNED),
        ("calc.py", "def add(a, b):\n    return a - b\n"),
        (
            "tests/test_sub.py",
            "from calc import add\n\n\ndef test_add_zero():\n    assert add(1, 0) == 1\n",
        ),
    ]);
    let goal = "add() adds";
    let test =
        "import os\n\nfrom calc import add\n\n\ndef test_adds():\n    assert add(2, 3) == 5\n";
    let script = Script::from([
        (
            "architect".to_owned(),
            vec![Step::say(&plan(goal, "calc.py"))],
        ),
        (
            "breaker".to_owned(),
            writes("tests/test_add.py", test, "A test of add()."),
        ),
        (
            "builder".to_owned(),
            writes(
                "calc.py",
                "def add(a, b):\n    return a + b\n",
                "add() adds.",
            ),
        ),
        ("critic".to_owned(), vec![Step::say(&approve_json())]),
    ]);
    let (code, stdout, stderr, _) = run(script, &repo, goal).await;
    assert_eq!(code, Some(0), "{stdout}\n{stderr}");
    for line in [
        "✓ red_proof",
        "gate lint: passed",
        "gate test: passed",
        "T-1 completed",
    ] {
        assert!(stdout.contains(line), "no {line:?} in:\n{stdout}\n{stderr}");
    }
}

/// A root `conftest.py` that rewrites the Breaker's test before pytest collects it, so that a
/// wrong `add()` passes: the run's results are refused (it changed the locked tests) and the
/// test is put back. The lock that used to be a read-only mount holds as a watch.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_that_rewrites_the_locked_tests_is_refused_and_they_are_put_back() {
    let (_d, repo) = crate::ecosystems::project(&[
        ("requirements.txt", "pytest\n"),
        ("calc.py", "def add(a, b):\n    return a - b\n"),
    ]);
    let goal = "add() adds";
    let test = "from calc import add\n\n\ndef test_adds():\n    assert add(2, 3) == 5\n";
    let forger = "import pathlib\n\ntry:\n    (pathlib.Path(__file__).parent / \"tests\" / \"test_add.py\").write_text(\n        \"def test_adds():\\n    pass\\n\"\n    )\nexcept OSError:\n    pass\n";
    let mut builder = vec![Step::tool(
        "write_file",
        serde_json::json!({ "path": "conftest.py", "content": forger }),
    )];
    builder.extend(writes(
        "calc.py",
        "def add(a, b):\n    return a - b + 0\n",
        "Done.",
    ));
    let script = Script::from([
        (
            "architect".to_owned(),
            vec![Step::say(&plan(goal, "calc.py"))],
        ),
        (
            "breaker".to_owned(),
            writes("tests/test_add.py", test, "A test of add()."),
        ),
        ("builder".to_owned(), builder),
    ]);
    let (code, stdout, stderr, _) = run(script, &repo, goal).await;
    assert_ne!(code, Some(0), "{stdout}\n{stderr}");
    assert!(stdout.contains("gate test: failed"), "{stdout}\n{stderr}");
    assert!(
        stdout.contains("changed the locked tests") && stdout.contains("tests/test_add.py"),
        "the rewrite is named:\n{stdout}\n{stderr}"
    );
    assert!(!stdout.contains("T-1 completed"), "{stdout}");
}
