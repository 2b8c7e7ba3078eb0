//! Real repositories through `vibeloop gates`, without `.github/hive.yml`: a Python package
//! with real third-party dependencies fetched at test time (PyPI), Go and Node projects (no
//! dependencies: their registries are out of reach here; npm workspaces' links), a polyglot
//! repository, a devcontainer, the security gate's parsers for Rust, TypeScript and Go, and
//! environments tied to one build of their image. The ecosystem is detected, setup runs once
//! with network (through the host's CA bundle, as a company network that re-signs TLS needs),
//! the gates run offline, and a second run reuses the environment. `ecosystems_run.rs` drives
//! the same projects through `vibeloop run`.

use std::path::{Path, PathBuf};

use serde_json::Value;

pub(crate) const MODEL: &str = "fake-model";
/// The host's CA bundle: the test machines' network re-signs TLS.
pub(crate) const CA_BUNDLE: &str = "/etc/ssl/certs/ca-certificates.crt";

pub(crate) fn git(dir: &Path, args: &[&str]) {
    let out = std::process::Command::new("git")
        .args(["-c", "user.name=Me", "-c", "user.email=me@example.com"])
        .args(args)
        .current_dir(dir)
        .output()
        .expect("git runs");
    assert!(out.status.success(), "git {args:?}: {out:?}");
}

/// A repository with `files` committed on `main`.
pub(crate) fn project(files: &[(&str, &str)]) -> (tempfile::TempDir, PathBuf) {
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

/// A change on a new branch `branch` of `repo`: `files` written (over what is there) and
/// committed, the branch left checked out.
pub(crate) fn change(repo: &Path, branch: &str, files: &[(&str, &str)]) {
    git(repo, &["checkout", "-q", "-b", branch]);
    for (name, text) in files {
        let p = repo.join(name);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    }
    git(repo, &["add", "-A"]);
    git(repo, &["commit", "-qm", "a change"]);
}

/// `vibeloop gates` on `repo` with environments kept in `envs`: exit code and stdout+stderr.
pub(crate) fn gates(repo: &Path, envs: &Path, extra: &[&str]) -> (i32, String) {
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
pub(crate) fn gates_json(repo: &Path, envs: &Path) -> (i32, Value, String) {
    gates_json_with(repo, envs, &[])
}

/// [`gates_json`] with `extra` arguments (`--gate test`).
pub(crate) fn gates_json_with(repo: &Path, envs: &Path, extra: &[&str]) -> (i32, Value, String) {
    let mut args = vec!["--json"];
    args.extend_from_slice(extra);
    let (code, out) = gates(repo, envs, &args);
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

pub(crate) fn gate<'a>(all: &'a Value, name: &str) -> &'a Value {
    all.as_array()
        .unwrap()
        .iter()
        .find(|g| g["gate"] == name)
        .unwrap_or_else(|| panic!("no gate {name} in {all}"))
}

/// A Node project's `package.json` whose tests run with Node's own runner.
pub(crate) fn npm_package(name: &str) -> String {
    format!(r#"{{"name": "{name}", "version": "1.0.0", "scripts": {{"test": "node --test"}}}}"#)
}

/// The npm lockfile of a project without dependencies.
pub(crate) fn npm_lock(name: &str) -> String {
    format!(
        r#"{{"name": "{name}", "version": "1.0.0", "lockfileVersion": 3, "requires": true, "packages": {{"": {{"name": "{name}", "version": "1.0.0"}}}}}}"#
    )
}

pub(crate) const CRATE_TOML: &str = "[package]\nname = \"fmtnum\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n[dependencies]\nitoa = \"1\"\n";
pub(crate) const CRATE_BUGGY: &str = "/// `n` in decimal.\npub fn show(n: u64) -> String {\n    itoa::Buffer::new().format(n + 1).to_owned()\n}\n\n#[cfg(test)]\nmod tests {\n    #[test]\n    fn shows_digits() {\n        assert!(super::show(7).chars().all(|c| c.is_ascii_digit()));\n    }\n}\n";
pub(crate) const CRATE_FIXED: &str = "/// `n` in decimal.\npub fn show(n: u64) -> String {\n    itoa::Buffer::new().format(n).to_owned()\n}\n\n#[cfg(test)]\nmod tests {\n    #[test]\n    fn shows_digits() {\n        assert!(super::show(7).chars().all(|c| c.is_ascii_digit()));\n    }\n}\n";
pub(crate) const CRATE_TEST: &str =
    "#[test]\nfn shows_the_number_itself() {\n    assert_eq!(fmtnum::show(42), \"42\");\n}\n";

pub(crate) const PYPROJECT: &str = "[build-system]\nrequires = [\"setuptools>=61\"]\nbuild-backend = \"setuptools.build_meta\"\n\n[project]\nname = \"widthy\"\nversion = \"0.1.0\"\ndependencies = [\"wcwidth>=0.2\"]\n\n[project.optional-dependencies]\ntests = [\"pytest\"]\n";
pub(crate) const WIDTHY: &str =
    "from wcwidth import wcswidth\n\n\ndef width(s):\n    return wcswidth(s)\n";
pub(crate) const WIDTHY_TESTS: &str = "from widthy import width\n\n\ndef test_ascii():\n    assert width(\"abc\") == 3\n\n\ndef test_wide():\n    assert width(\"\u{30b3}\") == 2\n";

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
        ("package.json", &npm_package("adder")),
        ("package-lock.json", &npm_lock("adder")),
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

/// `acceptance:` in a Go module: `go test -coverprofile` measures the lines a branch adds (its
/// import paths read against go.mod's module), and its new exported function has no comment.
#[test]
fn go_coverage_and_docs_are_measured_on_the_lines_a_change_adds() {
    let (_d, go) = project(&[
        ("go.mod", "module example.com/half\n\ngo 1.21\n"),
        (
            "half.go",
            "package half\n\n// Half halves n.\nfunc Half(n int) int { return n / 2 }\n",
        ),
        (
            "half_test.go",
            "package half\n\nimport \"testing\"\n\nfunc TestHalf(t *testing.T) {\n\tif Half(4) != 2 {\n\t\tt.Fatal(Half(4))\n\t}\n}\n",
        ),
        (
            ".github/hive.yml",
            "acceptance:\n  coverage: { changed_lines: 0.8, project: 0.1 }\n  docs: true\n",
        ),
    ]);
    change(
        &go,
        "double",
        &[(
            "half.go",
            "package half\n\n// Half halves n.\nfunc Half(n int) int { return n / 2 }\n\nfunc Double(n int) int {\n\treturn n * 2\n}\n",
        )],
    );
    let envs = tempfile::tempdir().unwrap();
    let (code, all, err) = gates_json(&go, envs.path());
    assert_ne!(code, 0, "an unmet criterion fails the run: {all}\n{err}");
    assert_eq!(gate(&all, "test")["status"], "passed", "{all}");
    let acceptance = gate(&all, "acceptance");
    assert_eq!(acceptance["status"], "failed", "{acceptance}");
    let notes = acceptance["notes"].to_string();
    for want in [
        "Coverage of the changed lines: 0 % (0 of 3 lines); threshold 80 %: unmet.",
        "Coverage of the project: 25 % (1 of 4 lines); threshold 10 %: met.",
        "Documentation of new public items: 0 of 1 documented; threshold all: unmet.",
    ] {
        assert!(notes.contains(want), "no {want:?} in {notes}");
    }
    let places: Vec<String> = acceptance["annotations"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| format!("{}:{}", a["path"].as_str().unwrap(), a["start_line"]))
        .collect();
    assert_eq!(places, ["half.go:6", "half.go:6"], "{acceptance}");
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
        ("package.json", &npm_package("both")),
        ("package-lock.json", &npm_lock("both")),
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
    change(
        &repo,
        "change",
        &[
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
        ],
    );
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

pub(crate) fn docker(args: &[&str]) {
    let out = std::process::Command::new("docker")
        .args(args)
        .output()
        .unwrap();
    assert!(out.status.success(), "docker {args:?}: {out:?}");
}

/// Removes a Docker tag when dropped.
pub(crate) struct Tag(pub(crate) String);

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

/// A Rust workspace's member manifests are inputs of its environment. The base's copies were
/// not read, so an unchanged checkout looked like a change to `crates/a/Cargo.toml`: every
/// ticket set up an environment of its own, in two phases. Now the base's is made and kept.
#[test]
fn an_unchanged_rust_workspace_is_set_up_as_the_bases() {
    let (_d, repo) = project(&[
        (
            "Cargo.toml",
            "[workspace]\nmembers = [\"crates/a\"]\nresolver = \"2\"\n",
        ),
        (
            "crates/a/Cargo.toml",
            "[package]\nname = \"a\"\nversion = \"0.1.0\"\nedition = \"2021\"\n",
        ),
        (
            "crates/a/src/lib.rs",
            "pub fn one() -> u8 {\n    1\n}\n\n#[test]\nfn is_one() {\n    assert_eq!(one(), 1);\n}\n",
        ),
    ]);
    let envs = tempfile::tempdir().unwrap();
    let (code, out) = gates(&repo, envs.path(), &["--gate", "test"]);
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("made in"), "{out}");
    assert!(!out.contains("the change edits"), "{out}");
}
