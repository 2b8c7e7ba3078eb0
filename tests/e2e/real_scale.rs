//! Real projects at real scale, zero-config: thousands of tests whose `-rA` output is far past
//! what people are shown, the test tools named only where the project's own tools read them
//! (tox's `deps`). Releases fetched at test time, pinned by version and checksum.

use crate::ecosystems_run::{change_script, plan, run};
use crate::support::fake_llm::{Script, Step};
use crate::support::hive::writes;
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
    let script = change_script(
        goal,
        "pygments/util.py",
        ("tests/test_clamp.py", CLAMP_TEST),
        ("pygments/util.py", &format!("{util}{CLAMP}")),
    );
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
    let script = change_script(
        goal,
        "calc.py",
        ("tests/test_add.py", test),
        ("calc.py", "def add(a, b):\n    return a + b\n"),
    );
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

const BOLTONS: [Sdist; 4] = [
    Sdist {
        name: "boltons",
        version: "25.0.0",
        sha256: "e110fbdc30b7b9868cb604e3f71d4722dd8f4dcb4a5ddd06028ba8f1ab0b5ace",
    },
    Sdist {
        name: "boltons",
        version: "26.0.0",
        sha256: "5566d6cfd5a1e873d8e8476496287a9f92979964611ad9a9cecb6b0ef29b1edd",
    },
    Sdist {
        name: "boltons",
        version: "26.1.0",
        sha256: "5764468aba493b15995ed17f46a16789023f123ca2a62d491a9ce825c1cbe26c",
    },
    Sdist {
        name: "boltons",
        version: "26.2.0",
        sha256: "d39cfd15c1a1c3bd4d705c82252fa9edb8e4f5e8cc039f8e39afac7b1b47e92c",
    },
];

/// A real project's history, one commit a release (boltons 25.0.0 to 26.2.0, each adding
/// functions and fixing bugs with their tests): every release is a task whose tests fail
/// before it and pass after, verified in the sandbox. On 26.1.0, 26.2.0's tests import a
/// module that is not there yet, and one of them eats the memory until the run is killed:
/// the tests it finished are still read.
#[test]
fn each_release_of_a_real_projects_history_is_a_verified_task() {
    let (_d, repo) = crate::support::registry::history(&BOLTONS, &["PKG-INFO"]);
    let tmp = tempfile::tempdir().unwrap();
    let tasks = tmp.path().join("tasks.jsonl");
    let envs = tmp.path().join("envs");
    let set = crate::eval::mine(
        &repo,
        &tasks,
        envs.to_str().unwrap(),
        &["--name", "mahmoud/boltons"],
        "3 task(s) verified of 3 candidate(s)",
    );
    assert_eq!(set.len(), 3);
    for task in &set {
        let statement = task["problem_statement"].as_str().unwrap();
        assert!(statement.starts_with("26."), "{statement}");
        let fail_to_pass = task["FAIL_TO_PASS"].as_array().unwrap();
        let pass_to_pass = task["PASS_TO_PASS"].as_array().unwrap();
        assert!(!fail_to_pass.is_empty(), "{task}");
        assert!(
            pass_to_pass.len() >= 100,
            "{statement}: {} passing before and after",
            pass_to_pass.len()
        );
    }
}

/// Poetry: its test tools only in `[tool.poetry.group.dev.dependencies]` (pytest-mock's
/// `mocker` fixture, which its tests use), with Poetry's constraints (`^7.1.2`, one for each
/// Python), mypy's files in its own `[tool.mypy] files`.
const CLEO: Sdist = Sdist {
    name: "cleo",
    version: "2.1.0",
    sha256: "0b2c880b5d13660a7ea651001fb4acb527696c01f15c9ee650f377aa543fd523",
};

#[test]
fn a_poetry_projects_dev_dependencies_are_its_test_tools() {
    let (_d, repo) = CLEO.repository(&["PKG-INFO"], &[]);
    let envs = tempfile::tempdir().unwrap();
    let (_, explained) = crate::ecosystems::gates(&repo, envs.path(), &["--explain"]);
    assert!(
        explained.contains("the test tools Poetry's dev dependencies name"),
        "{explained}"
    );
    // At the versions the group allows: its `^7.1.2`, and mypy's `^1.5` from Python 3.8.
    for pinned in [
        "'pytest>=7.1.2,<8'",
        "'mypy>=1.5,<2; python_full_version >= \"3.8\"'",
    ] {
        assert!(explained.contains(pinned), "{pinned}: {explained}");
    }
    assert!(
        explained.contains("the command from mypy's own `files` setting"),
        "{explained}"
    );
    let (out_code, all, out) =
        crate::ecosystems::gates_json_with(&repo, envs.path(), &["--gate", "test"]);
    let test = crate::ecosystems::gate(&all, "test");
    assert_eq!(test["status"], "passed", "{test}\n{out}");
    assert_eq!(out_code, 0, "{out}");
    // Every one of its 253 tests named, parametrized ids with spaces among them.
    let passed = test["counts"]["passed"].as_u64().unwrap_or(0);
    assert!(passed >= 250, "{test}");
}

/// The download phase over real projects' dependency files as their releases ship them
/// (Pygments: hatchling and tox's `deps`; cleo: Poetry; boltons: flit): every requirement
/// reads as PEP 508, none is refused, and pip gets requirement lines only.
#[test]
fn real_projects_dependency_files_download_without_a_refusal() {
    for sdist in [&PYGMENTS, &CLEO, &BOLTONS[3]] {
        let (_d, root) = crate::support::registry::unpack(&sdist.archive(), &["PKG-INFO"]);
        let mut paths = Vec::new();
        for e in ignore::WalkBuilder::new(&root)
            .hidden(false)
            .build()
            .flatten()
        {
            if e.file_type().is_some_and(|t| t.is_file()) {
                let rel = e.path().strip_prefix(&root).unwrap();
                paths.push(rel.to_string_lossy().into_owned());
            }
        }
        struct Files(Vec<String>, std::path::PathBuf);
        impl vibeloop::env::detect::Files for Files {
            fn paths(&self) -> &[String] {
                &self.0
            }
            fn read(&self, path: &str) -> Option<String> {
                std::fs::read_to_string(self.1.join(path)).ok()
            }
        }
        let files = Files(paths, root.clone());
        let found = vibeloop::env::detect::detect(&files);
        let inputs: Vec<(String, Option<Vec<u8>>)> = found
            .iter()
            .flat_map(|f| f.inputs.iter())
            .map(|p| (p.clone(), std::fs::read(root.join(p)).ok()))
            .collect();
        let plan = vibeloop::env::fetch::plan(&found, &inputs).expect("a download plan");
        assert_eq!(plan.refused, Vec::<String>::new(), "{}", sdist.name);
        let (_, wanted) = plan
            .files
            .iter()
            .find(|(p, _)| p.ends_with("requirements.txt"))
            .unwrap();
        let lines: Vec<&str> = wanted.lines().collect();
        assert!(lines.len() > 4, "{}: {wanted}", sdist.name);
        assert!(
            lines
                .iter()
                .all(|l| l.starts_with(|c: char| c.is_ascii_alphanumeric())),
            "{}: {wanted}",
            sdist.name
        );
    }
}
