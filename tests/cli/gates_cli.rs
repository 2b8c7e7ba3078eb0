//! `vibeloop gates` on a local checkout, in real containers: the gates the bot would run, on
//! the working tree as it is (uncommitted changes included), without touching the checkout.

use std::path::Path;
use std::process::Command;

use serde_json::Value;

const HIVE_YML: &str = "\
gates:
  test: python3 -m unittest -q
  lint: flake8 --max-line-length=100 .
policy:
  banned_calls: [eval]
";

fn checkout() -> tempfile::TempDir {
    checkout_with(HIVE_YML)
}

fn checkout_with(hive_yml: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let repo = git2::Repository::init(dir.path()).unwrap();
    let files = [
        ("calc.py", "def add(a, b):\n    return a + b\n"),
        (
            "test_calc.py",
            "import unittest\n\nfrom calc import add\n\n\nclass T(unittest.TestCase):\n    def test_add(self):\n        self.assertEqual(add(2, 3), 5)\n",
        ),
        (".github/hive.yml", hive_yml),
    ];
    for (path, text) in files {
        std::fs::create_dir_all(dir.path().join(path).parent().unwrap()).unwrap();
        std::fs::write(dir.path().join(path), text).unwrap();
    }
    let mut index = repo.index().unwrap();
    index
        .add_all(["*"], git2::IndexAddOption::DEFAULT, None)
        .unwrap();
    index.write().unwrap();
    let tree = repo.find_tree(index.write_tree().unwrap()).unwrap();
    let sig = git2::Signature::now("Dev", "dev@example.com").unwrap();
    repo.commit(Some("refs/heads/main"), &sig, &sig, "init", &tree, &[])
        .unwrap();
    repo.set_head("refs/heads/main").unwrap();
    dir
}

fn gates(dir: &Path, extra: &[&str]) -> (i32, String) {
    let base: &[&str] = if extra.contains(&"--base") {
        &[]
    } else {
        &["--base", "main"]
    };
    let out = Command::new(env!("CARGO_BIN_EXE_vibeloop"))
        .args(["gates", "--repo", dir.to_str().unwrap()])
        .args(base)
        .args(extra)
        .env_remove("VIBELOOP_SANDBOX")
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    (
        out.status.code().unwrap_or(-1),
        format!("{text}{}", String::from_utf8_lossy(&out.stderr)),
    )
}

fn status_of(all: &Value, gate: &str) -> String {
    all.as_array()
        .unwrap()
        .iter()
        .find(|g| g["gate"] == gate)
        .unwrap()["status"]
        .as_str()
        .unwrap()
        .to_owned()
}

#[test]
fn a_clean_checkout_passes_and_a_bad_change_fails_with_findings() {
    let dir = checkout();
    let (code, out) = gates(dir.path(), &["--sandbox", "docker"]);
    assert_eq!(code, 0, "{out}");
    // Skipped is not passed: typecheck and build have no command here.
    assert!(out.contains("3 passed, 2 skipped, 0 failed"), "{out}");

    // Uncommitted: an unused import (flake8 F401) and an eval call (banned by policy).
    std::fs::write(
        dir.path().join("calc.py"),
        "import os\n\n\ndef add(a, b):\n    return eval('a + b')\n",
    )
    .unwrap();
    let before = std::fs::read(dir.path().join("calc.py")).unwrap();
    let (code, out) = gates(dir.path(), &["--sandbox", "docker", "--json"]);
    assert_eq!(code, 1, "{out}");
    let all: Value = serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}"));
    assert_eq!(status_of(&all, "test"), "passed");
    assert_eq!(status_of(&all, "lint"), "failed");
    assert_eq!(status_of(&all, "typecheck"), "skipped");
    assert_eq!(status_of(&all, "security"), "failed");
    let findings = |gate: &str| -> Vec<Value> {
        all.as_array()
            .unwrap()
            .iter()
            .find(|g| g["gate"] == gate)
            .unwrap()["annotations"]
            .as_array()
            .unwrap()
            .clone()
    };
    let lint = findings("lint");
    assert!(
        lint.iter().any(|a| a["path"] == "calc.py"
            && a["start_line"] == 1
            && a["message"]
                .as_str()
                .unwrap()
                .contains("imported but unused")),
        "{lint:?}"
    );
    let security = findings("security");
    assert!(
        security
            .iter()
            .any(|a| a["path"] == "calc.py" && a["start_line"] == 5 && a["title"] == "policy"),
        "{security:?}"
    );

    // The checkout is left as it was.
    assert_eq!(std::fs::read(dir.path().join("calc.py")).unwrap(), before);
    let repo = git2::Repository::open(dir.path()).unwrap();
    assert_eq!(
        repo.statuses(None).unwrap().len(),
        1,
        "only the user's own edit is pending"
    );
    assert_eq!(repo.head().unwrap().shorthand(), Some("main"));
}

#[test]
fn one_gate_on_local_processes_and_bad_arguments() {
    let dir = checkout();
    let (code, out) = gates(dir.path(), &["--sandbox", "local", "--gate", "test"]);
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("1 passed, 0 skipped, 0 failed"), "{out}");
    let (code, out) = gates(dir.path(), &["--gate", "style"]);
    assert_ne!(code, 0);
    assert!(out.contains("--gate \"style\""), "{out}");
    let (code, out) = gates(dir.path(), &["--base", "no-such-branch"]);
    assert_ne!(code, 0);
    assert!(out.contains("no-such-branch"), "{out}");
}

#[test]
fn without_a_test_command_nothing_was_tested_and_the_exit_code_says_so() {
    let dir = checkout_with("gates:\n  lint: python3 -m py_compile calc.py\n");
    let (code, out) = gates(dir.path(), &["--sandbox", "local"]);
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("2 passed, 3 skipped, 0 failed"), "{out}");
    assert!(
        out.contains("the test gate has no command, so nothing was tested")
            && out.contains("gates.test"),
        "{out}"
    );
    // Asking for another gate alone is not a claim that anything was tested.
    let (code, out) = gates(dir.path(), &["--sandbox", "local", "--gate", "lint"]);
    assert_eq!(code, 0, "{out}");
}

#[test]
fn json_is_printed_in_every_case_a_failed_setup_and_an_error_too() {
    // A setup that fails: the object says so, with the command and the output's tail.
    let dir = checkout_with(
        "setup: \"echo fetching; exit 3\"\ngates: { test: \"python3 -m unittest -v\" }\n",
    );
    let envs = tempfile::tempdir().unwrap();
    let env_dir = envs.path().to_str().unwrap();
    let (code, out) = gates(
        dir.path(),
        &["--sandbox", "local", "--json", "--env-dir", env_dir],
    );
    assert_eq!(code, 1, "{out}");
    let start = out.find('{').unwrap_or_else(|| panic!("no JSON in {out}"));
    let end = out.rfind('}').unwrap() + 1;
    let said: Value = serde_json::from_str(&out[start..end]).unwrap();
    assert_eq!(said["error"], "setup failed", "{said}");
    assert_eq!(said["command"], "echo fetching; exit 3");
    assert_eq!(said["ended"], "exit code 3");
    assert!(
        said["output"].as_str().unwrap().contains("fetching"),
        "{said}"
    );
    // Any other error: an object with it.
    let (code, out) = gates(dir.path(), &["--json", "--base", "no-such-branch"]);
    assert_eq!(code, 1, "{out}");
    let said: Value = serde_json::from_str(out.trim()).unwrap_or_else(|e| panic!("{e}: {out}"));
    assert!(
        said["error"].as_str().unwrap().contains("no-such-branch"),
        "{said}"
    );
}

/// Each of test, lint and typecheck marks that it started and waits for the other two's marks
/// (giving up after 20 s): they pass only when they run at once. One at a time, the test gate
/// waits for a lint that has not started and fails.
#[test]
fn test_lint_and_typecheck_run_side_by_side() {
    const WAIT: &str = "for i in $(seq 200); do [ -f .m-test ] && [ -f .m-lint ] && [ -f .m-type ] && exit 0; sleep 0.1; done; exit 1";
    let dir = checkout_with(&format!(
        "gates:\n  test: \"touch .m-test; ({WAIT}) && python3 -m unittest -v\"\n  lint: \"touch .m-lint; {WAIT}\"\n  typecheck: \"touch .m-type; {WAIT}\"\n"
    ));
    let (code, out) = gates(dir.path(), &["--sandbox", "docker", "--json"]);
    assert_eq!(code, 0, "{out}");
    let all: Value = serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}"));
    for gate in ["test", "lint", "typecheck"] {
        assert_eq!(status_of(&all, gate), "passed", "{gate}: {all:#}");
    }
    // In the order of the pipeline, whatever order they ended in.
    let order: Vec<&str> = all
        .as_array()
        .unwrap()
        .iter()
        .map(|g| g["gate"].as_str().unwrap())
        .collect();
    assert_eq!(order, ["test", "lint", "typecheck", "build", "security"]);
}

fn notes_of(all: &Value, gate: &str) -> String {
    all.as_array()
        .unwrap()
        .iter()
        .find(|g| g["gate"] == gate)
        .unwrap()["notes"]
        .to_string()
}

/// A lint that times out while the tests ran beside it for more than a tenth of the limit may
/// have been starved by them: it runs again alone and says so; the tests' verdict stands.
#[test]
fn a_gate_killed_beside_the_others_runs_again_alone() {
    let dir = checkout_with(
        "gates:\n  test: sleep 1 && python3 -m unittest -v\n  lint: sleep 30\nlimits:\n  timeout_seconds: 2\n",
    );
    let (code, out) = gates(dir.path(), &["--sandbox", "docker", "--json"]);
    assert_eq!(code, 1, "{out}");
    let all: Value = serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}"));
    assert_eq!(status_of(&all, "test"), "passed", "{all:#}");
    assert_eq!(status_of(&all, "lint"), "timed_out", "{all:#}");
    let lint = notes_of(&all, "lint");
    assert!(
        lint.contains("`lint` timed out, so this one ran again on its own"),
        "{lint}"
    );
    let test = notes_of(&all, "test");
    assert!(!test.contains("ran again"), "{test}");
}

/// Tests that hang while the quick gates beside them were done at once had the time limit to
/// themselves: their timeout stands, and they are not run to the limit a second time.
#[test]
fn tests_that_time_out_beside_quick_gates_are_not_run_again() {
    let dir = checkout_with(
        // A limit whose tenth (2 s) is far above what `true` takes, even on a busy machine: a
        // `docker exec` of it took over 1 s while the suite kept both cores busy.
        "gates:\n  test: sleep 60\n  lint: \"true\"\n  typecheck: \"true\"\nlimits:\n  timeout_seconds: 20\n",
    );
    let (code, out) = gates(dir.path(), &["--sandbox", "docker", "--json"]);
    assert_eq!(code, 1, "{out}");
    let all: Value = serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}"));
    assert_eq!(status_of(&all, "test"), "timed_out", "{all:#}");
    assert_eq!(status_of(&all, "lint"), "passed", "{all:#}");
    for gate in ["test", "lint", "typecheck"] {
        let notes = notes_of(&all, gate);
        assert!(!notes.contains("ran again"), "{gate}: {notes}");
    }
}
