//! Real repositories through `vibeloop run` with a scripted model: a tested change end to end in
//! each ecosystem (a Rust crate and a Python package with dependencies from crates.io and PyPI,
//! Go, Node), a base whose environment is broken stopping before any model call, a dependency
//! change that breaks setup going back to the Builder, and Breaker tests that need what the
//! environment lacks told apart from tests that prove nothing.

use crate::ecosystems::{
    CA_BUNDLE, CRATE_BUGGY, CRATE_FIXED, CRATE_TEST, CRATE_TOML, MODEL, PYPROJECT, WIDTHY,
    WIDTHY_TESTS, npm_lock, npm_package, project,
};
use crate::support;

use std::path::Path;
use std::time::Duration;

use serde_json::json;
use support::fake_llm::{FakeLlm, Script, Step};
use support::hive::{approve_json, writes};

/// `vibeloop run` on `repo` towards `goal`, approved, with the model scripted by `script`: the
/// exit code, stdout and stderr, and the model server (to see what was asked of it).
pub(crate) async fn run(
    script: Script,
    repo: &Path,
    goal: &str,
) -> (Option<i32>, String, String, FakeLlm) {
    let llm = FakeLlm::start(script).await;
    llm.set_models(&[MODEL]);
    let data = tempfile::tempdir().unwrap();
    let mut cmd = tokio::process::Command::new(env!("CARGO_BIN_EXE_vibeloop"));
    cmd.arg("run")
        .args(["--sandbox", "docker", "--approve", "--goal", goal, "--repo"])
        .arg(repo)
        .arg("--data-dir")
        .arg(data.path().join("run"))
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("VIBELOOP_LLM_BASE_URL", &llm.url)
        .env("VIBELOOP_LLM_MODEL", MODEL)
        .env("VIBELOOP_SANDBOX_CA_BUNDLE", CA_BUNDLE)
        .kill_on_drop(true);
    let out = tokio::time::timeout(Duration::from_secs(600), cmd.output())
        .await
        .expect("vibeloop run ends within 10 minutes")
        .expect("vibeloop runs");
    let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
    (out.status.code(), text(&out.stdout), text(&out.stderr), llm)
}

/// The script of a change that goes right: the Architect plans `goal` about `file`, the
/// Breaker writes `test` (a path and its text), the Builder writes `code`, the Critic approves.
pub(crate) fn change_script(
    goal: &str,
    file: &str,
    test: (&str, &str),
    code: (&str, &str),
) -> Script {
    Script::from([
        ("architect".to_owned(), vec![Step::say(&plan(goal, file))]),
        (
            "breaker".to_owned(),
            writes(test.0, test.1, "The test of the goal."),
        ),
        ("builder".to_owned(), writes(code.0, code.1, "Done.")),
        ("critic".to_owned(), vec![Step::say(&approve_json())]),
    ])
}

pub(crate) fn plan(goal: &str, file: &str) -> String {
    json!({
        "ticket": { "type": "bugfix", "goal": goal, "context_refs": [file] },
        "plan": {
            "title": goal,
            "description": goal,
            "steps": [{ "input": file, "output": goal, "validation_criteria": "the new test passes" }],
            "dependencies": [],
        },
        "open_questions": [],
    })
    .to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rust_crate_with_a_crates_io_dependency_gets_a_tested_change_end_to_end() {
    let (_d, repo) = project(&[
        ("Cargo.toml", CRATE_TOML),
        ("src/lib.rs", CRATE_BUGGY),
        (".gitignore", "/target\n"),
    ]);
    let goal = "show(n) prints n itself";
    let (code, stdout, stderr, _) = run(
        Script::from([
            (
                "architect".to_owned(),
                vec![Step::say(&plan(goal, "src/lib.rs"))],
            ),
            (
                "breaker".to_owned(),
                writes("tests/show.rs", CRATE_TEST, "A test of show(42)."),
            ),
            (
                "builder".to_owned(),
                writes("src/lib.rs", CRATE_FIXED, "show() no longer adds one."),
            ),
            ("critic".to_owned(), vec![Step::say(&approve_json())]),
        ]),
        &repo,
        goal,
    )
    .await;
    assert_eq!(code, Some(0), "{stdout}\n{stderr}");
    for line in [
        "✓ red_proof",
        "proof:    holds: 1 of 2 tests fail on the base",
        "gate test: passed (2 tests)",
        "gate lint: passed",
        "gate build: passed",
        "T-1 completed",
    ] {
        assert!(stdout.contains(line), "no {line:?} in:\n{stdout}\n{stderr}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_base_whose_tests_cannot_import_stops_at_the_baseline_before_any_model_call() {
    // The code imports wcwidth, but the package does not declare it.
    let pyproject = PYPROJECT.replace("dependencies = [\"wcwidth>=0.2\"]\n", "");
    let (_d, repo) = project(&[
        ("pyproject.toml", &pyproject),
        ("src/widthy/__init__.py", WIDTHY),
        ("tests/test_width.py", WIDTHY_TESTS),
    ]);
    let report = stopped_at_the_baseline(&repo).await;
    for words in [
        "The test command fails on `main` before any change, so no model was asked",
        "ModuleNotFoundError: No module named 'wcwidth'",
        "add a `setup:`",
    ] {
        assert!(
            report.to_lowercase().contains(&words.to_lowercase()),
            "no {words:?} in:\n{report}"
        );
    }
}

/// `vibeloop run` on widthy's `repo`, which must stop as HumanNeeded before any model is asked:
/// the report from the stop on.
async fn stopped_at_the_baseline(repo: &Path) -> String {
    let (code, stdout, stderr, llm) = run(
        Script::from([(
            "architect".to_owned(),
            vec![Step::say(&plan("widths", "src/widthy/__init__.py"))],
        )]),
        repo,
        "Count emoji as two columns",
    )
    .await;
    assert_eq!(code, Some(1), "{stdout}\n{stderr}");
    for role in ["architect", "breaker", "builder", "critic"] {
        assert!(llm.requests(role).is_empty(), "the {role} asked the model");
    }
    let at = stdout.find("T-1 stopped: HumanNeeded").expect(&stdout);
    stdout[at..].to_owned()
}

/// tomlkit's shape: its tests read cases from `tests/toml-test`, a git submodule, which the bot
/// does not check out. The stop names the submodule rather than asking for a `setup:`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_base_whose_tests_read_a_submodule_stops_naming_the_submodule() {
    let cases = "import pathlib\n\nCASES = pathlib.Path(__file__).parent / \"toml-test\" / \"files\"\n\
                 NAMES = CASES.read_text().split()\n\n\ndef test_cases():\n    assert NAMES\n";
    let (_d, repo) = project(&[
        ("pyproject.toml", PYPROJECT),
        ("src/widthy/__init__.py", WIDTHY),
        ("tests/test_width.py", WIDTHY_TESTS),
        ("tests/test_cases.py", cases),
        (
            ".gitmodules",
            "[submodule \"tests/toml-test\"]\n\tpath = tests/toml-test\n\turl = https://github.com/toml-lang/toml-test.git\n",
        ),
    ]);
    let sha = "0123456789abcdef0123456789abcdef01234567";
    let gitlink = format!("160000,{sha},tests/toml-test");
    crate::ecosystems::git(&repo, &["update-index", "--add", "--cacheinfo", &gitlink]);
    crate::ecosystems::git(&repo, &["commit", "-qm", "the submodule"]);
    let report = stopped_at_the_baseline(&repo).await;
    for words in [
        "The test command fails on `main` before any change",
        "`tests/toml-test` is a git submodule, and the bot does not check submodules out",
        "Commit the files the tests read",
    ] {
        assert!(report.contains(words), "no {words:?} in:\n{report}");
    }
    assert!(!report.contains("Add a `setup:`"), "{report}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dependency_the_builder_breaks_setup_with_goes_back_to_the_builder() {
    const GO_MOD: &str = "module example.com/half\n\ngo 1.21\n";
    let (_d, repo) = project(&[
        ("go.mod", GO_MOD),
        (
            "half.go",
            "package half\n\n// Half halves n.\nfunc Half(n int) int { return n / 3 }\n",
        ),
        (
            "half_test.go",
            "package half\n\nimport \"testing\"\n\nfunc TestZero(t *testing.T) {\n\tif Half(0) != 0 {\n\t\tt.Fatal(Half(0))\n\t}\n}\n",
        ),
    ]);
    let goal = "Half(4) is 2";
    let first_attempt = writes(
        "go.mod",
        &format!("{GO_MOD}\nrequire example.com/nope v1.0.0\n"),
        "Added a helper module.",
    );
    let second_attempt = [
        vec![Step::tool(
            "write_file",
            json!({ "path": "go.mod", "content": GO_MOD }),
        )],
        writes(
            "half.go",
            "package half\n\n// Half halves n.\nfunc Half(n int) int { return n / 2 }\n",
            "Half divides by two.",
        ),
    ]
    .concat();
    let (code, stdout, stderr, llm) = run(Script::from([
        ("architect".to_owned(), vec![Step::say(&plan(goal, "half.go"))]),
        (
            "breaker".to_owned(),
            writes(
                "half_four_test.go",
                "package half\n\nimport \"testing\"\n\nfunc TestFour(t *testing.T) {\n\tif Half(4) != 2 {\n\t\tt.Fatal(Half(4))\n\t}\n}\n",
                "A test of Half(4).",
            ),
        ),
        ("builder".to_owned(), first_attempt),
        ("builder|attempt 2 of".to_owned(), second_attempt),
        ("critic".to_owned(), vec![Step::say(&approve_json())]),
    ]), &repo, goal).await;
    assert_eq!(code, Some(0), "{stdout}\n{stderr}");
    assert!(stdout.contains("T-1 completed"), "{stdout}");
    let told = llm
        .requests("builder")
        .iter()
        .any(|r| r.to_string().contains("[vibeloop] Setup (`go mod download"));
    assert!(told, "the Builder never read why setup failed:\n{stdout}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tests_that_need_a_missing_dependency_stop_without_blaming_the_breaker() {
    let go = project(&[
        ("go.mod", "module example.com/half\n\ngo 1.21\n"),
        (
            "half.go",
            "package half\n\n// Half halves n.\nfunc Half(n int) int { return n / 3 }\n",
        ),
        (
            "half_test.go",
            "package half\n\nimport \"testing\"\n\nfunc TestZero(t *testing.T) {\n\tif Half(0) != 0 {\n\t\tt.Fatal(Half(0))\n\t}\n}\n",
        ),
    ]);
    let go_test = "package half\n\nimport (\n\t\"testing\"\n\n\t\"github.com/stretchr/testify/assert\"\n)\n\nfunc TestFour(t *testing.T) {\n\tassert.Equal(t, 2, Half(4))\n}\n";
    // Node's runner counts a test file that cannot load as a failed test: a "Red" that
    // proves nothing.
    let node = project(&[
        ("package.json", &npm_package("adder")),
        ("package-lock.json", &npm_lock("adder")),
        ("add.js", "exports.add = (a, b) => a - b;\n"),
        (
            "test/zero.test.js",
            "require('node:test')('zero', () => {});\n",
        ),
    ]);
    let node_test = "const test = require('node:test');\nconst { expect } = require('chai');\nconst { add } = require('../add');\n\ntest('adds', () => expect(add(2, 3)).to.equal(5));\n";
    for (name, (_d, repo), file, test, code, needs, line) in [
        (
            "go",
            go,
            "half_four_test.go",
            go_test,
            "half.go",
            "github.com/stretchr/testify/assert",
            "no required module provides package github.com/stretchr/testify/assert",
        ),
        (
            "node",
            node,
            "test/add.test.js",
            node_test,
            "add.js",
            "chai",
            "Cannot find module 'chai'",
        ),
    ] {
        let (code, stdout, stderr, llm) = run(
            Script::from([
                (
                    "architect".to_owned(),
                    vec![Step::say(&plan("fix it", code))],
                ),
                ("breaker".to_owned(), writes(file, test, "A test.")),
                ("builder".to_owned(), writes(code, "// fixed\n", "Fixed.")),
            ]),
            &repo,
            "fix it",
        )
        .await;
        assert_eq!(code, Some(1), "{name}: {stdout}\n{stderr}");
        let report = &stdout[stdout
            .find("T-1 stopped: HumanNeeded")
            .unwrap_or_else(|| panic!("{name}: {stdout}"))..];
        for words in [
            &format!("The Breaker's tests need `{needs}`"),
            line,
            "The Breaker was not sent back",
        ] {
            assert!(report.contains(words), "{name}: no {words:?} in:\n{report}");
        }
        assert_eq!(
            llm.requests("breaker").len(),
            2,
            "{name}: one Breaker conversation (a write, then done): {stdout}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_broken_environment_stops_at_the_baseline_in_rust_go_and_node_too() {
    let rust = project(&[
        (
            "Cargo.toml",
            "[package]\nname = \"fmtnum\"\nversion = \"0.1.0\"\nedition = \"2021\"\n",
        ),
        ("src/lib.rs", CRATE_BUGGY), // uses itoa, which Cargo.toml does not declare
    ]);
    let go = project(&[
        ("go.mod", "module example.com/half\n\ngo 1.21\n"),
        (
            "half.go",
            "package half\n\nimport \"github.com/example/undeclared\"\n\nfunc Half(n int) int { return undeclared.Div(n, 2) }\n",
        ),
    ]);
    let node = project(&[
        ("package.json", &npm_package("pad")),
        ("package-lock.json", &npm_lock("pad")),
        ("pad.js", "module.exports = require('left-pad');\n"),
        (
            "test/pad.test.js",
            "require('node:test')('pads', () => require('../pad'));\n",
        ),
    ]);
    for (name, (_d, repo), why) in [
        ("rust", rust, "`itoa`"),
        (
            "go",
            go,
            "no required module provides package github.com/example/undeclared",
        ),
        ("node", node, "Cannot find module 'left-pad'"),
    ] {
        let (code, stdout, stderr, llm) = run(Script::new(), &repo, "Make it better").await;
        assert_eq!(code, Some(1), "{name}: {stdout}\n{stderr}");
        let report = &stdout[stdout
            .find("T-1 stopped: HumanNeeded")
            .unwrap_or_else(|| panic!("{name}: {stdout}"))..];
        assert!(report.contains("so no model was asked"), "{name}: {report}");
        assert!(report.contains(why), "{name}: no {why:?} in:\n{report}");
        for role in ["architect", "breaker", "builder", "critic"] {
            assert!(
                llm.requests(role).is_empty(),
                "{name}: the {role} asked the model"
            );
        }
    }
}

const WIDTHY_PAD: &str = "from wcwidth import wcswidth\n\n\ndef width(s):\n    return wcswidth(s)\n\n\ndef pad(s, n):\n    \"\"\"`s` padded with spaces to `n` columns.\"\"\"\n    return s + \" \" * n\n";

const WIDTHY_PAD_FIXED: &str = "from wcwidth import wcswidth\n\n\ndef width(s):\n    return wcswidth(s)\n\n\ndef pad(s, n):\n    \"\"\"`s` padded with spaces to `n` columns.\"\"\"\n    return s + \" \" * max(0, n - width(s))\n";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn python_with_pypi_dependencies_and_node_get_a_tested_change_end_to_end() {
    let python = project(&[
        ("pyproject.toml", PYPROJECT),
        ("src/widthy/__init__.py", WIDTHY_PAD),
        ("tests/test_width.py", WIDTHY_TESTS),
    ]);
    let python_script = {
        let goal = "pad() pads to n columns, wide characters counted twice";
        Script::from([
            (
                "architect".to_owned(),
                vec![Step::say(&plan(goal, "src/widthy/__init__.py"))],
            ),
            (
                "breaker".to_owned(),
                writes(
                    "tests/test_pad.py",
                    "from widthy import pad\n\n\ndef test_wide_pad():\n    assert pad(\"\u{30b3}\", 4) == \"\u{30b3}  \"\n",
                    "A test of pad() with a wide character.",
                ),
            ),
            (
                "builder".to_owned(),
                writes(
                    "src/widthy/__init__.py",
                    WIDTHY_PAD_FIXED,
                    "pad() counts columns.",
                ),
            ),
            ("critic".to_owned(), vec![Step::say(&approve_json())]),
        ])
    };
    let node = project(&[
        ("package.json", &npm_package("adder")),
        ("package-lock.json", &npm_lock("adder")),
        ("add.js", "exports.add = (a, b) => a - b;\n"),
        (
            "test/zero.test.js",
            "const test = require('node:test');\nconst assert = require('node:assert');\nconst { add } = require('../add');\n\ntest('adds zero', () => assert.strictEqual(add(2, 0), 2));\n",
        ),
    ]);
    let node_script = Script::from([
        (
            "architect".to_owned(),
            vec![Step::say(&plan("add() adds", "add.js"))],
        ),
        (
            "breaker".to_owned(),
            writes(
                "test/add.test.js",
                "const test = require('node:test');\nconst assert = require('node:assert');\nconst { add } = require('../add');\n\ntest('adds', () => assert.strictEqual(add(2, 3), 5));\n",
                "A test of add(2, 3).",
            ),
        ),
        (
            "builder".to_owned(),
            writes("add.js", "exports.add = (a, b) => a + b;\n", "add() adds."),
        ),
        ("critic".to_owned(), vec![Step::say(&approve_json())]),
    ]);
    for (name, (_d, repo), script, tests) in [
        (
            "python",
            python,
            python_script,
            "gate test: passed (3 tests)",
        ),
        ("node", node, node_script, "gate test: passed (2 tests)"),
    ] {
        let (code, stdout, stderr, _) = run(script, &repo, "a small change").await;
        assert_eq!(code, Some(0), "{name}: {stdout}\n{stderr}");
        for line in [
            "✓ red_proof",
            "proof:    holds: 1 of",
            tests,
            "T-1 completed",
        ] {
            assert!(
                stdout.contains(line),
                "{name}: no {line:?} in:\n{stdout}\n{stderr}"
            );
        }
    }
}
