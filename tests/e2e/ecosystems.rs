//! Real repositories, without `.github/hive.yml`: a Rust crate and a Python package with real
//! third-party dependencies fetched at test time (crates.io, PyPI), a Go module and a Node
//! project (no dependencies: their registries are out of reach here), and a repository that
//! names a devcontainer. The ecosystem is detected, setup runs once with network (through the
//! host's CA bundle, as a company network that re-signs TLS needs), the gates run offline, a
//! second run reuses the environment, and a base whose tests cannot run stops before any model
//! is asked.

use crate::support;

use std::path::{Path, PathBuf};
use std::process::Output;
use std::time::Duration;

use serde_json::{Value, json};
use support::fake_llm::{FakeLlm, Script, Step};
use support::hive::{approve_json, writes};

const MODEL: &str = "fake-model";
/// The host's CA bundle: the test machines' network re-signs TLS.
const CA_BUNDLE: &str = "/etc/ssl/certs/ca-certificates.crt";

fn git(dir: &Path, args: &[&str]) {
    let out = std::process::Command::new("git")
        .args(["-c", "user.name=Me", "-c", "user.email=me@example.com"])
        .args(args)
        .current_dir(dir)
        .output()
        .expect("git runs");
    assert!(out.status.success(), "git {args:?}: {out:?}");
}

/// A repository with `files` committed on `main`.
fn project(files: &[(&str, &str)]) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("proj");
    std::fs::create_dir_all(&path).unwrap();
    git(&path, &["init", "-q", "-b", "main"]);
    for (name, text) in files {
        let p = path.join(name);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    }
    git(&path, &["add", "-A"]);
    git(&path, &["commit", "-qm", "init"]);
    (dir, path)
}

/// `vibeloop gates` on `repo` with environments kept in `envs`: exit code and stdout+stderr.
fn gates(repo: &Path, envs: &Path, extra: &[&str]) -> (i32, String) {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_vibeloop"))
        .args(["gates", "--sandbox", "docker", "--base", "main", "--repo"])
        .arg(repo)
        .arg("--env-dir")
        .arg(envs)
        .args(extra)
        .env("VIBELOOP_SANDBOX_CA_BUNDLE", CA_BUNDLE)
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        ),
    )
}

/// The JSON results of `vibeloop gates --json`, and stderr.
fn gates_json(repo: &Path, envs: &Path) -> (i32, Value, String) {
    let (code, out) = gates(repo, envs, &["--json"]);
    let start = out
        .find("[\n")
        .unwrap_or_else(|| panic!("no JSON in:\n{out}"));
    let end = out
        .rfind("\n]")
        .unwrap_or_else(|| panic!("no JSON in:\n{out}"))
        + 2;
    let json = serde_json::from_str(&out[start..end]).unwrap_or_else(|e| panic!("{e}: {out}"));
    (code, json, format!("{}{}", &out[..start], &out[end..]))
}

fn gate<'a>(all: &'a Value, name: &str) -> &'a Value {
    all.as_array()
        .unwrap()
        .iter()
        .find(|g| g["gate"] == name)
        .unwrap_or_else(|| panic!("no gate {name} in {all}"))
}

const CRATE_TOML: &str = "[package]\nname = \"fmtnum\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n[dependencies]\nitoa = \"1\"\n";
const CRATE_BUGGY: &str = "/// `n` in decimal.\npub fn show(n: u64) -> String {\n    itoa::Buffer::new().format(n + 1).to_owned()\n}\n\n#[cfg(test)]\nmod tests {\n    #[test]\n    fn shows_digits() {\n        assert!(super::show(7).chars().all(|c| c.is_ascii_digit()));\n    }\n}\n";
const CRATE_FIXED: &str = "/// `n` in decimal.\npub fn show(n: u64) -> String {\n    itoa::Buffer::new().format(n).to_owned()\n}\n\n#[cfg(test)]\nmod tests {\n    #[test]\n    fn shows_digits() {\n        assert!(super::show(7).chars().all(|c| c.is_ascii_digit()));\n    }\n}\n";
const CRATE_TEST: &str =
    "#[test]\nfn shows_the_number_itself() {\n    assert_eq!(fmtnum::show(42), \"42\");\n}\n";

const PYPROJECT: &str = "[build-system]\nrequires = [\"setuptools>=61\"]\nbuild-backend = \"setuptools.build_meta\"\n\n[project]\nname = \"widthy\"\nversion = \"0.1.0\"\ndependencies = [\"wcwidth>=0.2\"]\n\n[project.optional-dependencies]\ntests = [\"pytest\"]\n";
const WIDTHY: &str = "from wcwidth import wcswidth\n\n\ndef width(s):\n    return wcswidth(s)\n";
const WIDTHY_TESTS: &str = "from widthy import width\n\n\ndef test_ascii():\n    assert width(\"abc\") == 3\n\n\ndef test_wide():\n    assert width(\"\u{30b3}\") == 2\n";

#[test]
fn a_python_package_with_pypi_dependencies_is_set_up_once_and_tested() {
    let (_d, repo) = project(&[
        ("pyproject.toml", PYPROJECT),
        ("src/widthy/__init__.py", WIDTHY),
        ("tests/test_width.py", WIDTHY_TESTS),
    ]);
    let envs = tempfile::tempdir().unwrap();
    let (code, all, err) = gates_json(&repo, envs.path());
    assert_eq!(code, 0, "{all}\n{err}");
    assert!(
        err.contains("setup: environment") && err.contains("made in"),
        "{err}"
    );
    let test = gate(&all, "test");
    assert_eq!(test["command"], "python -m pytest -q");
    assert_eq!(test["counts"]["passed"], 2, "{test}");
    // The same lockfile again: setup is skipped.
    let (code, all, err) = gates_json(&repo, envs.path());
    assert_eq!(code, 0, "{all}\n{err}");
    assert!(err.contains("reused (setup skipped)"), "{err}");
}

#[test]
fn go_and_node_projects_are_detected_and_counted() {
    let (_d, go) = project(&[
        ("go.mod", "module example.com/half\n\ngo 1.21\n"),
        (
            "half.go",
            "package half\n\n// Half halves n.\nfunc Half(n int) int { return n / 2 }\n",
        ),
        (
            "half_test.go",
            "package half\n\nimport \"testing\"\n\nfunc TestHalf(t *testing.T) {\n\tif Half(4) != 2 {\n\t\tt.Fatal(Half(4))\n\t}\n}\n\nfunc TestHalfOdd(t *testing.T) {\n\tif Half(5) != 2 {\n\t\tt.Fatal(Half(5))\n\t}\n}\n",
        ),
    ]);
    let envs = tempfile::tempdir().unwrap();
    let (code, all, err) = gates_json(&go, envs.path());
    assert_eq!(code, 0, "{all}\n{err}");
    assert_eq!(gate(&all, "test")["counts"]["passed"], 2, "{all}");
    assert_eq!(gate(&all, "build")["status"], "passed");

    let (_d, node) = project(&[
        (
            "package.json",
            r#"{"name": "adder", "version": "1.0.0", "scripts": {"test": "node --test"}}"#,
        ),
        (
            "package-lock.json",
            r#"{"name": "adder", "version": "1.0.0", "lockfileVersion": 3, "requires": true, "packages": {"": {"name": "adder", "version": "1.0.0"}}}"#,
        ),
        ("add.js", "exports.add = (a, b) => a + b;\n"),
        (
            "test/add.test.js",
            "const test = require('node:test');\nconst assert = require('node:assert');\nconst { add } = require('../add');\n\ntest('adds', () => assert.strictEqual(add(2, 3), 5));\n",
        ),
    ]);
    let (code, all, err) = gates_json(&node, envs.path());
    assert_eq!(code, 0, "{all}\n{err}");
    let test = gate(&all, "test");
    assert_eq!(test["command"], "npm run test");
    assert_eq!(test["counts"]["passed"], 1, "{test}");
}

#[test]
fn node_modules_is_kept_with_the_environment_and_its_workspace_links_still_resolve() {
    // npm workspaces: `npm ci` links the repository's own package into node_modules
    // (`node_modules/shout -> ../packages/shout`), no registry needed. node_modules is kept in
    // the environment, where that link must still lead to the worktree's package.
    let lock = r#"{"name": "greeter", "version": "1.0.0", "lockfileVersion": 3, "requires": true, "packages": {"": {"name": "greeter", "version": "1.0.0", "workspaces": ["packages/*"]}, "node_modules/shout": {"resolved": "packages/shout", "link": true}, "packages/shout": {"version": "1.0.0"}}}"#;
    let (_d, repo) = project(&[
        (
            "package.json",
            r#"{"name": "greeter", "version": "1.0.0", "private": true, "workspaces": ["packages/*"], "scripts": {"test": "node --test"}}"#,
        ),
        ("package-lock.json", lock),
        (
            "packages/shout/package.json",
            r#"{"name": "shout", "version": "1.0.0", "main": "index.js"}"#,
        ),
        (
            "packages/shout/index.js",
            "module.exports = (s) => s.toUpperCase() + '!';\n",
        ),
        (
            "test/greet.test.js",
            "const test = require('node:test');\nconst assert = require('node:assert');\nconst shout = require('shout');\n\ntest('shouts', () => assert.strictEqual(shout('hi'), 'HI!'));\n",
        ),
    ]);
    let envs = tempfile::tempdir().unwrap();
    for (run, setup) in [(1, "made in"), (2, "reused (setup skipped)")] {
        let (code, all, err) = gates_json(&repo, envs.path());
        assert_eq!(code, 0, "run {run}: {all}\n{err}");
        assert!(err.contains(setup), "run {run}: {err}");
        assert_eq!(
            gate(&all, "test")["counts"]["passed"],
            1,
            "run {run}: {all}"
        );
    }
}

#[test]
fn a_polyglot_repository_runs_each_ecosystem_in_the_image_with_all_of_them() {
    let (_d, repo) = project(&[
        ("go.mod", "module example.com/both\n\ngo 1.21\n"),
        (
            "both_test.go",
            "package both\n\nimport \"testing\"\n\nfunc TestGo(t *testing.T) {}\n",
        ),
        (
            "package.json",
            r#"{"name": "both", "version": "1.0.0", "scripts": {"test": "node --test"}}"#,
        ),
        (
            "package-lock.json",
            r#"{"name": "both", "version": "1.0.0", "lockfileVersion": 3, "requires": true, "packages": {"": {"name": "both", "version": "1.0.0"}}}"#,
        ),
        ("test/js.test.js", "require('node:test')('js', () => {});\n"),
    ]);
    let envs = tempfile::tempdir().unwrap();
    let (code, out) = gates(&repo, envs.path(), &["--explain"]);
    assert!(code == 0 && out.contains("vibeloop-runner:all"), "{out}");
    let (code, all, err) = gates_json(&repo, envs.path());
    assert_eq!(code, 0, "{all}\n{err}");
    // Both runners' results, counted together.
    assert_eq!(gate(&all, "test")["counts"]["passed"], 2, "{all}");
}

#[test]
fn a_devcontainer_gives_the_image_the_setup_and_the_environment() {
    let devcontainer = r#"{
  // what the team develops in
  "image": "vibeloop-runner:go",
  "postCreateCommand": "go mod download && touch /cache/made-by-devcontainer",
  "containerEnv": { "GREETING": "hello" },
}"#;
    let (_d, repo) = project(&[
        (".devcontainer/devcontainer.json", devcontainer),
        ("go.mod", "module example.com/greet\n\ngo 1.21\n"),
        (
            "greet_test.go",
            "package greet\n\nimport (\n\t\"os\"\n\t\"testing\"\n)\n\nfunc TestEnvironment(t *testing.T) {\n\tif os.Getenv(\"GREETING\") != \"hello\" {\n\t\tt.Fatal(\"no containerEnv\")\n\t}\n\tif _, err := os.Stat(\"/cache/made-by-devcontainer\"); err != nil {\n\t\tt.Fatal(err)\n\t}\n}\n",
        ),
    ]);
    let envs = tempfile::tempdir().unwrap();
    let (code, out) = gates(&repo, envs.path(), &["--explain"]);
    assert_eq!(code, 0, "{out}");
    assert!(
        out.contains("Devcontainer: .devcontainer/devcontainer.json")
            && out.contains("from .devcontainer/devcontainer.json"),
        "{out}"
    );
    let (code, all, err) = gates_json(&repo, envs.path());
    assert_eq!(code, 0, "{all}\n{err}");
    assert_eq!(gate(&all, "test")["counts"]["passed"], 1, "{all}");
}

#[test]
fn the_security_gate_reads_rust_typescript_and_go_with_their_own_parsers() {
    let (_d, repo) = project(&[("README.md", "a library\n")]);
    git(&repo, &["checkout", "-q", "-b", "change"]);
    for (name, text) in [
        (
            "src/lib.rs",
            "use std::process::Command as Cmd;\n\npub fn run() {\n    Cmd::new(\"sh\");\n}\n",
        ),
        (
            "src/main.rs",
            "fn main() {\n    std::process::Command::new(\"sh\");\n}\n",
        ),
        (
            "web/app.ts",
            "import { exec } from \"node:child_process\";\nexport const go = (s: string) => exec(s);\n",
        ),
        (
            "pkg/run/run.go",
            "package run\n\nimport x \"os/exec\"\n\nfunc Run() { x.Command(\"sh\") }\n",
        ),
        (
            "pkg/run/ok.go",
            "package run\n\n// \"os/exec\" in a comment is not code.\nvar s = \"os/exec\"\n",
        ),
    ] {
        let p = repo.join(name);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    }
    git(&repo, &["add", "-A"]);
    git(&repo, &["commit", "-qm", "a change"]);
    let envs = tempfile::tempdir().unwrap();
    let (code, all, err) = gates_json(&repo, envs.path());
    assert_ne!(code, 0, "{all}\n{err}");
    let security = gate(&all, "security");
    assert_eq!(security["status"], "failed", "{security}");
    let mut found: Vec<(String, u64)> = security["annotations"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| {
            (
                a["path"].as_str().unwrap().to_owned(),
                a["start_line"].as_u64().unwrap(),
            )
        })
        .collect();
    found.sort();
    assert_eq!(
        found,
        [
            ("pkg/run/run.go".to_owned(), 3),
            ("src/lib.rs".to_owned(), 1),
            ("src/lib.rs".to_owned(), 4),
            ("web/app.ts".to_owned(), 1),
        ],
        "src/main.rs is a binary (allowed); ok.go names os/exec only in text: {security}"
    );
    let notes = security["notes"].to_string();
    assert!(
        notes.contains("(1 more under policy.<language>.allow_in), 4 finding(s)"),
        "{notes}"
    );
}

fn docker(args: &[&str]) {
    let out = std::process::Command::new("docker")
        .args(args)
        .output()
        .unwrap();
    assert!(out.status.success(), "docker {args:?}: {out:?}");
}

/// Removes a Docker tag when dropped.
struct Tag(String);

impl Drop for Tag {
    fn drop(&mut self) {
        let _ = std::process::Command::new("docker")
            .args(["rmi", &self.0])
            .output();
    }
}

#[test]
fn an_environment_belongs_to_one_build_of_its_image() {
    let tag = Tag(format!("vibeloop-test-rebuilt:{}", std::process::id()));
    docker(&["tag", "vibeloop-runner:go", &tag.0]);
    let hive = format!(
        "image: {}\nsetup: echo set up\ngates:\n  test: \"true\"\n",
        tag.0
    );
    let (_d, repo) = project(&[(".github/hive.yml", &hive)]);
    let envs = tempfile::tempdir().unwrap();
    let made = |out: &str| out.contains("made in");
    let (code, out) = gates(&repo, envs.path(), &["--gate", "test"]);
    assert!(code == 0 && made(&out), "{out}");
    let (code, out) = gates(&repo, envs.path(), &["--gate", "test"]);
    assert!(code == 0 && out.contains("reused (setup skipped)"), "{out}");
    // The same name, another build: set up again.
    docker(&["tag", "vibeloop-runner:node", &tag.0]);
    let (code, out) = gates(&repo, envs.path(), &["--gate", "test"]);
    assert!(code == 0 && made(&out), "{out}");
}

/// `vibeloop run` on `repo` towards `goal`, approved, with the model at `llm`.
async fn run(llm: &str, repo: &Path, goal: &str) -> (Output, tempfile::TempDir) {
    let data = tempfile::tempdir().unwrap();
    let mut cmd = tokio::process::Command::new(env!("CARGO_BIN_EXE_vibeloop"));
    cmd.arg("run")
        .args(["--sandbox", "docker", "--approve", "--goal", goal, "--repo"])
        .arg(repo)
        .arg("--data-dir")
        .arg(data.path().join("run"))
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("VIBELOOP_LLM_BASE_URL", llm)
        .env("VIBELOOP_LLM_MODEL", MODEL)
        .env("VIBELOOP_SANDBOX_CA_BUNDLE", CA_BUNDLE)
        .kill_on_drop(true);
    let out = tokio::time::timeout(Duration::from_secs(600), cmd.output())
        .await
        .expect("vibeloop run ends within 10 minutes")
        .expect("vibeloop runs");
    (out, data)
}

fn plan(goal: &str, file: &str) -> String {
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
    let llm = FakeLlm::start(Script::from([
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
    ]))
    .await;
    llm.set_models(&[MODEL]);
    let (out, _data) = run(&llm.url, &repo, goal).await;
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stdout}\n{stderr}");
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
    let llm = FakeLlm::start(Script::from([(
        "architect".to_owned(),
        vec![Step::say(&plan("widths", "src/widthy/__init__.py"))],
    )]))
    .await;
    llm.set_models(&[MODEL]);
    let (out, _data) = run(&llm.url, &repo, "Count emoji as two columns").await;
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stdout}\n{stderr}");
    assert!(stdout.contains("T-1 stopped: HumanNeeded"), "{stdout}");
    let report = &stdout[stdout.find("T-1 stopped").unwrap()..];
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
    for role in ["architect", "breaker", "builder", "critic"] {
        assert!(llm.requests(role).is_empty(), "the {role} asked the model");
    }
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
    let llm = FakeLlm::start(Script::from([
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
    ]))
    .await;
    llm.set_models(&[MODEL]);
    let (out, _data) = run(&llm.url, &repo, goal).await;
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stdout}\n{stderr}");
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
        (
            "package.json",
            r#"{"name": "adder", "version": "1.0.0", "scripts": {"test": "node --test"}}"#,
        ),
        (
            "package-lock.json",
            r#"{"name": "adder", "version": "1.0.0", "lockfileVersion": 3, "requires": true, "packages": {"": {"name": "adder", "version": "1.0.0"}}}"#,
        ),
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
        let llm = FakeLlm::start(Script::from([
            (
                "architect".to_owned(),
                vec![Step::say(&plan("fix it", code))],
            ),
            ("breaker".to_owned(), writes(file, test, "A test.")),
            ("builder".to_owned(), writes(code, "// fixed\n", "Fixed.")),
        ]))
        .await;
        llm.set_models(&[MODEL]);
        let (out, _data) = run(&llm.url, &repo, "fix it").await;
        let stdout = String::from_utf8_lossy(&out.stdout);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{name}: {stdout}\n{stderr}");
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
        (
            "package.json",
            r#"{"name": "pad", "version": "1.0.0", "scripts": {"test": "node --test"}}"#,
        ),
        (
            "package-lock.json",
            r#"{"name": "pad", "version": "1.0.0", "lockfileVersion": 3, "requires": true, "packages": {"": {"name": "pad", "version": "1.0.0"}}}"#,
        ),
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
        let llm = FakeLlm::start(Script::new()).await;
        llm.set_models(&[MODEL]);
        let (out, _data) = run(&llm.url, &repo, "Make it better").await;
        let stdout = String::from_utf8_lossy(&out.stdout);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{name}: {stdout}\n{stderr}");
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
        (
            "package.json",
            r#"{"name": "adder", "version": "1.0.0", "scripts": {"test": "node --test"}}"#,
        ),
        (
            "package-lock.json",
            r#"{"name": "adder", "version": "1.0.0", "lockfileVersion": 3, "requires": true, "packages": {"": {"name": "adder", "version": "1.0.0"}}}"#,
        ),
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
        let llm = FakeLlm::start(script).await;
        llm.set_models(&[MODEL]);
        let (out, _data) = run(&llm.url, &repo, "a small change").await;
        let stdout = String::from_utf8_lossy(&out.stdout);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(0), "{name}: {stdout}\n{stderr}");
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
