//! Red and green you can trust, through `vibeloop run` on real toolchains with a scripted
//! model: a test of a function that does not exist yet is a fair red and goes green when the
//! Builder adds it (Python, Rust, Go, Node); a Builder that makes the Breaker's tests skip,
//! vanish from the report or end the runner early, instead of doing the work, leaves the
//! change red with the reason; so does one that commits a JUnit report of its own. A report
//! the base holds is never read as the baseline's run.

use crate::ecosystems::{npm_lock, npm_package, project};
use crate::ecosystems_run::{plan, run};
use crate::support;

use support::fake_llm::{Script, Step};
use support::hive::{approve_json, writes, writing};

/// A Python package with its tests extra, one module of arithmetic, and one passing test.
const PYPROJECT: &str = "[build-system]\nrequires = [\"setuptools>=61\"]\nbuild-backend = \"setuptools.build_meta\"\n\n[project]\nname = \"calc\"\nversion = \"0.1.0\"\n\n[project.optional-dependencies]\ntests = [\"pytest\"]\n";
const OPS: &str = "def add(a, b):\n    return a + b\n\n\ndef sub(a, b):\n    return a + b\n";
const OPS_TEST: &str = "from calc.ops import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n";
/// Only one attempt: a change the gates refuse goes to a person at once.
const ONE_ATTEMPT: &str = "retry: { max_retries: 0 }\n";
/// The goal the attacks below are set, and the Breaker's test of it.
const SUB_GOAL: &str = "sub(a, b) subtracts";
const SUB_TEST: &str = "from calc.ops import sub\n\n\ndef test_sub():\n    assert sub(5, 3) == 2\n";

fn python_package() -> (tempfile::TempDir, std::path::PathBuf) {
    python_package_with(ONE_ATTEMPT, &[])
}

/// The package, with `config` as its `.github/hive.yml`, and `more` files.
fn python_package_with(
    config: &str,
    more: &[(&str, &str)],
) -> (tempfile::TempDir, std::path::PathBuf) {
    let mut files = vec![
        ("pyproject.toml", PYPROJECT),
        ("calc/__init__.py", ""),
        ("calc/ops.py", OPS),
        ("tests/test_ops.py", OPS_TEST),
        (".github/hive.yml", config),
    ];
    files.extend_from_slice(more);
    project(&files)
}

/// The Architect plans `goal` on `file`, the Breaker writes `test`, the Builder writes
/// `change`, the Critic approves.
fn script(goal: &str, file: &str, test: (&str, &str), change: (&str, &str)) -> Script {
    script_writing(goal, file, test, &[change])
}

/// As [`script`], the Builder writing each of `changes`.
fn script_writing(goal: &str, file: &str, test: (&str, &str), changes: &[(&str, &str)]) -> Script {
    Script::from([
        ("architect".to_owned(), vec![Step::say(&plan(goal, file))]),
        (
            "breaker".to_owned(),
            writes(test.0, test.1, "A test first."),
        ),
        ("builder".to_owned(), writing(changes)),
        ("critic".to_owned(), vec![Step::say(&approve_json())]),
    ])
}

fn assert_has(out: &str, lines: &[&str]) {
    for line in lines {
        assert!(out.contains(line), "no {line:?} in:\n{out}");
    }
}

/// Each of `whys` is in `out`, compared word by word (the report's lines are wrapped).
fn assert_says(out: &str, whys: &[&str]) {
    let words = out.split_whitespace().collect::<Vec<_>>().join(" ");
    for why in whys {
        assert!(words.contains(why), "no {why:?} in:\n{out}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_python_test_importing_a_function_not_written_yet_is_red_and_goes_green() {
    let (_d, repo) = python_package();
    let goal = "add mul(a, b) to calc.ops";
    let test = "from calc.ops import mul\n\n\ndef test_mul():\n    assert mul(2, 3) == 6\n";
    let fixed = format!("{OPS}\n\ndef mul(a, b):\n    return a * b\n");
    let (code, stdout, stderr, _) = run(
        script(
            goal,
            "calc/ops.py",
            ("tests/test_mul.py", test),
            ("calc/ops.py", &fixed),
        ),
        &repo,
        goal,
    )
    .await;
    assert_eq!(code, Some(0), "{stdout}\n{stderr}");
    assert_has(
        &stdout,
        &[
            "✓ red_proof",
            "proof:    holds: tests/test_mul.py cannot load yet: `mul` is not in calc.ops, as they should",
            "gate test: passed (2 tests)",
            "T-1 completed",
        ],
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_builder_that_hides_the_breakers_test_instead_of_fixing_the_code_stays_red() {
    let (goal, test) = (SUB_GOAL, SUB_TEST);
    let skip_all = "import pytest\n\n\ndef pytest_collection_modifyitems(items):\n    for item in items:\n        item.add_marker(pytest.mark.skip(reason=\"skipped by conftest\"))\n";
    let exit_early = "import os\nimport sys\n\nif \"pytest\" in sys.modules:\n    os._exit(0)\n";
    let deselect = "[pytest]\naddopts = --deselect tests/test_sub.py::test_sub\n";
    let steers = "The change edits files that steer which tests run and how:";
    for (trick, file, text, why) in [
        (
            "a root conftest.py that skips every test",
            "conftest.py",
            skip_all,
            "`tests/test_sub.py::test_sub` did not run: skipped (tests/test_sub.py: skipped by conftest)",
        ),
        (
            "a package that ends pytest with status 0 on import",
            "calc/__init__.py",
            exit_early,
            "`tests/test_sub.py::test_sub` did not run: the test command named no test (exit code 0)",
        ),
        (
            "a pytest.ini that deselects the test",
            "pytest.ini",
            deselect,
            "`tests/test_sub.py::test_sub` did not run: missing from the report (1 test(s) were skipped or deselected)",
        ),
    ] {
        let (_d, repo) = python_package();
        let (code, stdout, stderr, _) = run(
            script(
                goal,
                "calc/ops.py",
                ("tests/test_sub.py", test),
                (file, text),
            ),
            &repo,
            goal,
        )
        .await;
        assert_eq!(code, Some(1), "{trick}: {stdout}\n{stderr}");
        assert_has(
            &stdout,
            &[
                "✓ red_proof",
                "✗ encounter: hive/test failed",
                "T-1 stopped: HumanNeeded",
            ],
        );
        // The report's lines are wrapped: compare its words.
        let words = stdout.split_whitespace().collect::<Vec<_>>().join(" ");
        assert!(words.contains(why), "{trick}: no {why:?} in:\n{stdout}");
        let steering = format!("{steers} `{file}`");
        let named = words.contains(&steering);
        assert_eq!(
            named,
            file != "calc/__init__.py",
            "{trick}: {steering:?} in:\n{stdout}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rust_go_and_node_tests_of_a_function_not_written_yet_are_red_and_go_green() {
    let rust = project(&[
        (
            "Cargo.toml",
            "[package]\nname = \"calc\"\nversion = \"0.1.0\"\nedition = \"2021\"\n",
        ),
        (
            "src/lib.rs",
            "pub fn add(a: i64, b: i64) -> i64 {\n    a + b\n}\n",
        ),
        (".gitignore", "/target\n"),
    ]);
    let go = project(&[
        ("go.mod", "module example.com/calc\n\ngo 1.21\n"),
        (
            "calc.go",
            "package calc\n\n// Add adds.\nfunc Add(a, b int) int { return a + b }\n",
        ),
    ]);
    let node = project(&[
        ("package.json", &npm_package("calc")),
        ("package-lock.json", &npm_lock("calc")),
        ("calc.mjs", "export const add = (a, b) => a + b;\n"),
    ]);
    for (name, (_d, repo), test, change, absent) in [
        (
            "rust",
            rust,
            (
                "tests/mul.rs",
                "#[test]\nfn multiplies() {\n    assert_eq!(calc::mul(2, 3), 6);\n}\n",
            ),
            (
                "src/lib.rs",
                "pub fn add(a: i64, b: i64) -> i64 {\n    a + b\n}\n\npub fn mul(a: i64, b: i64) -> i64 {\n    a * b\n}\n",
            ),
            "tests/mul.rs cannot load yet: `mul` is not in calc",
        ),
        (
            "go",
            go,
            (
                "mul_test.go",
                "package calc\n\nimport \"testing\"\n\nfunc TestMul(t *testing.T) {\n\tif Mul(2, 3) != 6 {\n\t\tt.Fatal(Mul(2, 3))\n\t}\n}\n",
            ),
            (
                "calc.go",
                "package calc\n\n// Add adds.\nfunc Add(a, b int) int { return a + b }\n\n// Mul multiplies.\nfunc Mul(a, b int) int { return a * b }\n",
            ),
            "cannot load yet: `Mul` is not in the code",
        ),
        (
            "node",
            node,
            (
                "test/mul.test.mjs",
                "import test from 'node:test';\nimport assert from 'node:assert';\nimport { mul } from '../calc.mjs';\n\ntest('mul multiplies', () => assert.strictEqual(mul(2, 3), 6));\n",
            ),
            (
                "calc.mjs",
                "export const add = (a, b) => a + b;\nexport const mul = (a, b) => a * b;\n",
            ),
            "test/mul.test.mjs cannot load yet: `mul` is not in ../calc.mjs",
        ),
    ] {
        let goal = "add mul(a, b), named Mul in Go";
        let file = change.0;
        let (code, stdout, stderr, _) = run(script(goal, file, test, change), &repo, goal).await;
        assert_eq!(code, Some(0), "{name}: {stdout}\n{stderr}");
        assert_has(
            &stdout,
            &["✓ red_proof", absent, "gate test: passed", "T-1 completed"],
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_node_test_script_changed_to_exit_0_leaves_the_change_red() {
    let (_d, repo) = project(&[
        ("package.json", &npm_package("adder")),
        ("package-lock.json", &npm_lock("adder")),
        ("add.js", "exports.add = (a, b) => a - b;\n"),
        (".github/hive.yml", ONE_ATTEMPT),
    ]);
    let goal = "add(a, b) adds";
    let test = "const test = require('node:test');\nconst assert = require('node:assert');\nconst { add } = require('../add');\n\ntest('adds', () => assert.strictEqual(add(2, 3), 5));\n";
    let silenced = r#"{"name": "adder", "version": "1.0.0", "scripts": {"test": "exit 0"}}"#;
    let (code, stdout, stderr, _) = run(
        script(
            goal,
            "add.js",
            ("test/add.test.js", test),
            ("package.json", silenced),
        ),
        &repo,
        goal,
    )
    .await;
    assert_eq!(code, Some(1), "{stdout}\n{stderr}");
    assert_says(
        &stdout,
        &[
            "✓ red_proof",
            "`adds` did not run: the test command named no test (exit code 0)",
            "The change edits files that steer which tests run and how: `package.json` (changed: scripts.test)",
            "T-1 stopped: HumanNeeded",
        ],
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_junit_report_the_change_commits_is_never_read_as_its_run() {
    // The repository names a JUnit report; the Builder commits one that says every test
    // passed, and ends pytest with status 0 before it can write its own.
    let config = "retry: { max_retries: 0 }\ngates: { test: \"python3 -m pytest -v -p no:cacheprovider --junitxml=report.xml\", test_report: report.xml }\n";
    let (_d, repo) = python_package_with(config, &[]);
    let (goal, test) = (SUB_GOAL, SUB_TEST);
    let forged = "<?xml version=\"1.0\" encoding=\"utf-8\"?><testsuites><testsuite name=\"pytest\" errors=\"0\" failures=\"0\" skipped=\"0\" tests=\"2\"><testcase classname=\"tests.test_ops\" name=\"test_add\" time=\"0.001\" /><testcase classname=\"tests.test_sub\" name=\"test_sub\" time=\"0.001\" /></testsuite></testsuites>\n";
    let exit_early = "import os\nimport sys\n\nif \"pytest\" in sys.modules:\n    os._exit(0)\n";
    let changes = [("report.xml", forged), ("calc/__init__.py", exit_early)];
    let script = script_writing(goal, "calc/ops.py", ("tests/test_sub.py", test), &changes);
    let (code, stdout, stderr, _) = run(script, &repo, goal).await;
    assert_eq!(code, Some(1), "{stdout}\n{stderr}");
    assert_says(
        &stdout,
        &[
            "✓ red_proof",
            "✗ encounter: hive/test failed",
            "`tests.test_sub.test_sub` did not run: the test command named no test (exit code 0)",
            "T-1 stopped: HumanNeeded",
        ],
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_junit_report_the_base_commits_is_never_read_as_the_baselines_run() {
    // The base holds a report saying `test_add` fails there, and its test command writes none.
    // Read as the baseline's run, it made `test_add` a known failure, and a change that breaks
    // `add` passed the test gate ("passed (1 of 2 tests failed)").
    let config = "retry: { max_retries: 0 }\ngates: { test: \"python3 -m pytest -v -p no:cacheprovider\", test_report: report.xml }\n";
    let stale = "<?xml version=\"1.0\" encoding=\"utf-8\"?><testsuites><testsuite name=\"pytest\" errors=\"0\" failures=\"1\" skipped=\"0\" tests=\"1\"><testcase name=\"tests/test_ops.py::test_add\" time=\"0.001\"><failure message=\"assert 4 == 5\" /></testcase></testsuite></testsuites>\n";
    let (_d, repo) = python_package_with(config, &[("report.xml", stale)]);
    let (goal, test) = (SUB_GOAL, SUB_TEST);
    let broken = "def add(a, b):\n    return a - b\n\n\ndef sub(a, b):\n    return a - b\n";
    let script = script(
        goal,
        "calc/ops.py",
        ("tests/test_sub.py", test),
        ("calc/ops.py", broken),
    );
    let (code, stdout, stderr, _) = run(script, &repo, goal).await;
    assert_eq!(code, Some(1), "{stdout}\n{stderr}");
    assert_says(
        &stdout,
        &[
            "✓ red_proof",
            "✗ encounter: hive/test failed",
            "T-1 stopped: HumanNeeded",
            "hive/test failed: exit code 1 (1 of 2 tests failed)",
        ],
    );
}
