//! Real projects, zero-config: releases fetched from the package index at test time (pinned by
//! version and checksum, never copied into this repository), made a git repository as their
//! maintainers' checkout looks, and driven through `vibeloop gates` and `vibeloop run`. Each
//! has a shape that well-known projects share and that broke setup before: a version from git
//! tags, a version file the install generates, a compiled extension, test extras as dotted keys
//! and dependency groups, requirements files that include others, a requirements file only tox
//! names, tox's configuration inside `pyproject.toml`. And the programs real projects' tests call
//! (make, a C compiler, pkg-config, less, git) are in the images, a missing one named.

use crate::ecosystems::{gate, gates_json, gates_json_with};
use crate::ecosystems_run::{plan, run};
use crate::support::fake_llm::{Script, Step};
use crate::support::hive::{approve_json, writes};
use crate::support::registry::Sdist;

/// hatchling with hatch-vcs: the version comes from git tags and is written by the build into
/// `src/apipkg/_version.py` (git-ignored), which `apipkg/__init__.py` imports.
const APIPKG: Sdist = Sdist {
    name: "apipkg",
    version: "3.0.2",
    sha256: "c7aa61a4f82697fdaa667e70af1505acf1f7428b1c27b891d204ba7a8a3c5e0d",
};

/// The release ships no tests: one of ours, on the version the build took from the tag.
const VERSION_TEST: &str = "import apipkg\n\n\ndef test_the_version_is_the_tags():\n    assert apipkg.__version__.startswith(\"3.0.2\")\n";

fn apipkg() -> (tempfile::TempDir, std::path::PathBuf) {
    APIPKG.repository(
        &["PKG-INFO", "src/apipkg/_version.py"],
        &[("tests/test_version.py", VERSION_TEST)],
    )
}

#[test]
fn a_project_whose_version_comes_from_git_tags_installs_and_tests_zero_config() {
    let (_d, repo) = apipkg();
    let envs = tempfile::tempdir().unwrap();
    let (code, all, err) = gates_json(&repo, envs.path());
    assert_eq!(code, 0, "{all}\n{err}");
    let test = gate(&all, "test");
    assert_eq!(test["counts"]["passed"], 1, "{test}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_version_file_the_install_generates_is_in_every_worktree() {
    let (_d, repo) = apipkg();
    let init = std::fs::read_to_string(repo.join("src/apipkg/__init__.py")).unwrap();
    let goal = "apipkg.version_info: the version's numbers as a tuple";
    let script = Script::from([
        (
            "architect".to_owned(),
            vec![Step::say(&plan(goal, "src/apipkg/__init__.py"))],
        ),
        (
            // Written in the Breaker's own worktree, where setup never ran: the version file
            // is there only if the project is built again in each sandbox.
            "breaker".to_owned(),
            writes(
                "tests/test_version_info.py",
                "from apipkg import version_info\n\n\ndef test_version_info_is_the_numbers():\n    assert version_info[:3] == (3, 0, 2)\n",
                "A test of version_info.",
            ),
        ),
        (
            "builder".to_owned(),
            writes(
                "src/apipkg/__init__.py",
                &format!(
                    "{init}\n\nversion_info = tuple(int(p) for p in __version__.split(\".\")[:3])\n"
                ),
                "version_info added.",
            ),
        ),
        ("critic".to_owned(), vec![Step::say(&approve_json())]),
    ]);
    let (code, stdout, stderr, _) = run(script, &repo, goal).await;
    assert_eq!(code, Some(0), "{stdout}\n{stderr}");
    for line in [
        "✓ red_proof",
        "gate test: passed (2 tests)",
        "T-1 completed",
    ] {
        assert!(stdout.contains(line), "no {line:?} in:\n{stdout}\n{stderr}");
    }
}

const TOOLS_TEST: &str = "import subprocess\n\n\ndef test_the_programs_real_tests_call_are_there():\n    for argv in ([\"make\", \"--version\"], [\"cc\", \"--version\"], [\"pkg-config\", \"--version\"], [\"less\", \"--version\"], [\"git\", \"--version\"]):\n        subprocess.run(argv, check=True, capture_output=True)\n\n\ndef test_a_program_nobody_has():\n    subprocess.run([\"frobnicate-widgets\", \"--all\"], check=True)\n";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tests_find_the_programs_they_call_and_a_missing_one_is_named_at_the_baseline() {
    let (_d, repo) = crate::ecosystems::project(&[
        ("requirements.txt", "pytest\n"),
        ("calc.py", "def add(a, b):\n    return a - b\n"),
        ("tests/test_tools.py", TOOLS_TEST),
    ]);
    let goal = "add() adds";
    let script = Script::from([
        (
            "architect".to_owned(),
            vec![Step::say(&plan(goal, "calc.py"))],
        ),
        (
            "breaker".to_owned(),
            writes(
                "tests/test_calc.py",
                "from calc import add\n\n\ndef test_adds():\n    assert add(2, 3) == 5\n",
                "A test of add().",
            ),
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
        "baseline: 1 test(s) already fail on the base. They call programs the sandbox image does not have (frobnicate-widgets)",
        // make, cc, pkg-config, less and git are there: that test passes on the base and after.
        "gate test: passed",
        "T-1 completed",
    ] {
        assert!(stdout.contains(line), "no {line:?} in:\n{stdout}\n{stderr}");
    }
}

/// hatchling and hatch-vcs, its test extra written as a dotted key in `[project]`
/// (`optional-dependencies.test = [...]`), tests that import `appdirs` and use pytest-mock's
/// `mocker` (both only in that extra), and `[tool.ruff]` without ruff anywhere it installs from.
const PLATFORMDIRS_EXTRA: Sdist = Sdist {
    name: "platformdirs",
    version: "4.4.0",
    sha256: "ca753cf4d81dc309bc67b0ea38fd15dc97bc30ce419a7f58d13eb3bf14c4febf",
};

/// The same tests' dependencies as a PEP 735 group (`[dependency-groups] test`), beside a `dev`
/// group that includes the docs, release and type-checking groups.
const PLATFORMDIRS_GROUPS: Sdist = Sdist {
    name: "platformdirs",
    version: "4.9.6",
    sha256: "3bfa75b0ad0db84096ae777218481852c0ebc6c727b3168c1b9e0118e458cf0a",
};

#[test]
fn test_extras_written_as_dotted_keys_are_installed_and_an_undeclared_linter_is_skipped() {
    let (_d, repo) = PLATFORMDIRS_EXTRA.repository(&["PKG-INFO"], &[]);
    let envs = tempfile::tempdir().unwrap();
    let (code, all, err) = gates_json(&repo, envs.path());
    assert_eq!(code, 0, "{all}\n{err}");
    let test = gate(&all, "test");
    let passed = test["counts"]["passed"].as_u64().unwrap_or(0);
    assert!(passed >= 400, "{test}");
    let lint = gate(&all, "lint");
    assert_eq!(lint["status"], "skipped", "{lint}");
    assert!(
        lint["notes"][0]
            .as_str()
            .unwrap_or_default()
            .contains("configures ruff but neither depends on it nor pins it"),
        "{lint}"
    );
    // mypy is only in the `type` extra, which setup does not install.
    assert_eq!(gate(&all, "typecheck")["status"], "skipped", "{all}");
    // Its skipped tests say why, as notices on a passing gate.
    let levels: Vec<&str> = test["annotations"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|a| a["annotation_level"].as_str())
        .collect();
    assert!(levels.iter().all(|l| *l == "notice"), "{test}");
}

#[test]
fn a_test_dependency_group_is_installed_and_a_dev_group_beside_it_is_not() {
    let (_d, repo) = PLATFORMDIRS_GROUPS.repository(&["PKG-INFO"], &[]);
    let envs = tempfile::tempdir().unwrap();
    let (code, all, err) = gates_json(&repo, envs.path());
    assert_eq!(code, 0, "{all}\n{err}");
    let test = gate(&all, "test");
    let passed = test["counts"]["passed"].as_u64().unwrap_or(0);
    assert!(passed >= 700, "{test}");
    let (_, explained) = crate::ecosystems::gates(&repo, envs.path(), &["--explain"]);
    assert!(explained.contains("--group test"), "{explained}");
    assert!(!explained.contains("--group dev"), "{explained}");
}

/// setuptools with a C extension (`markupsafe._speedups`, built from `_speedups.c` by
/// `setup.py` into the source tree): present only where the project was built.
const MARKUPSAFE: Sdist = Sdist {
    name: "markupsafe",
    version: "3.0.2",
    sha256: "ee55d3edf80167e48ea11a923c7386f4669df67d7994554387f84e7d8b0a2bf0",
};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_compiled_extension_is_built_in_every_worktree() {
    let (_d, repo) = MARKUPSAFE.repository(&["PKG-INFO", "src/MarkupSafe.egg-info"], &[]);
    let init = std::fs::read_to_string(repo.join("src/markupsafe/__init__.py")).unwrap();
    let goal = "markupsafe.speedups_enabled(): whether the C speedups escape";
    let script = Script::from([
        (
            "architect".to_owned(),
            vec![Step::say(&plan(goal, "src/markupsafe/__init__.py"))],
        ),
        (
            // The Breaker's and the Builder's worktrees never ran setup: the extension is
            // there only if each sandbox builds the project again. Typed: the project's mypy
            // (strict, over `tests` too; `requirements/dev.txt` installs it) is the typecheck.
            "breaker".to_owned(),
            writes(
                "tests/test_speedups_enabled.py",
                "from markupsafe import speedups_enabled\n\n\ndef test_the_c_speedups_escape() -> None:\n    assert speedups_enabled()\n",
                "A test of speedups_enabled.",
            ),
        ),
        (
            "builder".to_owned(),
            writes(
                "src/markupsafe/__init__.py",
                &format!(
                    "{init}\n\ndef speedups_enabled() -> bool:\n    from . import _speedups\n\n    return _speedups._escape_inner(\"<\") == \"&lt;\"\n"
                ),
                "speedups_enabled added.",
            ),
        ),
        ("critic".to_owned(), vec![Step::say(&approve_json())]),
    ]);
    let (code, stdout, stderr, _) = run(script, &repo, goal).await;
    assert_eq!(code, Some(0), "{stdout}\n{stderr}");
    for line in [
        "✓ red_proof",
        "gate test: passed",
        "gate typecheck: passed",
        "T-1 completed",
    ] {
        assert!(stdout.contains(line), "no {line:?} in:\n{stdout}\n{stderr}");
    }
}

/// `requirements/development.txt` pulls in `testing.txt`, `typechecks.txt`,
/// `../docs/requirements.txt` and `packaging.txt` with `--requirement`.
const MORE_ITERTOOLS: Sdist = Sdist {
    name: "more-itertools",
    version: "11.2.1",
    sha256: "cbf08fd0af284dc69718b9b76a8e6203df624d70209ea511e4219d350c856f63",
};

/// The base's requirements files under `requirements/` were not read, so an unchanged checkout
/// looked like a change to them and set up in two phases, whose download skipped what they
/// include: "No matching distribution found for mypy". Now the base's setup runs, and the
/// project's 765 tests pass.
#[test]
fn requirements_files_that_include_others_set_up_as_the_bases() {
    let err = test_gate_passes(&MORE_ITERTOOLS, 700);
    assert!(!err.contains("the change edits"), "{err}");
}

/// `vibeloop gates --gate test` on the release `sdist` (without its `PKG-INFO`): it passes, with
/// at least `at_least` tests passed; what it printed besides the JSON.
fn test_gate_passes(sdist: &Sdist, at_least: u64) -> String {
    let (_d, repo) = sdist.repository(&["PKG-INFO"], &[]);
    let envs = tempfile::tempdir().unwrap();
    let (code, all, err) = gates_json_with(&repo, envs.path(), &["--gate", "test"]);
    assert_eq!(code, 0, "{all}\n{err}");
    let passed = gate(&all, "test")["counts"]["passed"].as_u64().unwrap_or(0);
    assert!(passed >= at_least, "{all}");
    err
}

/// pytest.ini adds `--cov`; pytest-cov comes only from `tox.ini`'s
/// `deps = -rtests/requirements.txt`.
const TABLIB: Sdist = Sdist {
    name: "tablib",
    version: "3.10.0",
    sha256: "781cfa9a42de8f33c52aff857fd0a04e483de4fd1c53eaaa9a6aeac62bad11de",
};

/// Before, nothing installed the file tox names, and pytest stopped at `--cov` (exit code 4).
#[test]
fn the_requirements_file_tox_installs_brings_the_test_tools() {
    test_gate_passes(&TABLIB, 150);
}

/// tox's configuration in `pyproject.toml` (`legacy_tox_ini`), whose `[testenv] deps` pull in
/// `{[core]deps}`: pytest-asyncio and pytest-timeout, which tqdm's pytest options need.
const TQDM: Sdist = Sdist {
    name: "tqdm",
    version: "4.70.1",
    sha256: "cefd0eca11b2a37a3aee776544d4f4ae913f02688135b5556b8788dfa474afc4",
};

/// What setup installs is read from the release's own manifests (`--explain`: nothing runs).
#[test]
fn tox_in_pyproject_names_the_test_tools_setup_installs() {
    let (_d, repo) = TQDM.repository(&["PKG-INFO", "tqdm.egg-info"], &[]);
    let envs = tempfile::tempdir().unwrap();
    let (code, explained) = crate::ecosystems::gates(&repo, envs.path(), &["--explain"]);
    assert_eq!(code, 0, "{explained}");
    // The setup command runs over several lines, up to the next setting's.
    let setup = explained
        .split_once("\nsetup ")
        .and_then(|(_, rest)| rest.split_once("\nprepare "))
        .map(|(setup, _)| setup)
        .unwrap_or_else(|| panic!("no setup in:\n{explained}"));
    for tool in ["'pytest-asyncio'", "'pytest-timeout'", "'pytest-cov'"] {
        assert!(setup.contains(tool), "no {tool} in:\n{setup}");
    }
    assert!(
        explained.contains("the test tools tox's deps name"),
        "{explained}"
    );
}

/// tox runs pyjwt's tests with `extras = tests, crypto: crypto`: without cryptography, which
/// only the `crypto` extra names, every test of its RSA, EC and OKP code is skipped.
const PYJWT: Sdist = Sdist {
    name: "pyjwt",
    version: "2.10.1",
    sha256: "3cc5772eb20009233caf06e9d8a0577824723b44e6648ee0a2aedb6cf9381953",
};

/// Before, setup installed the `tests` extra alone. (This release's mypy hook also lists
/// cryptography among its `additional_dependencies`, which setup installs too: the extras are
/// asserted on the setup itself.)
#[test]
fn the_extras_tox_runs_the_tests_with_are_installed() {
    let (_d, repo) = PYJWT.repository(&["PKG-INFO"], &[]);
    let envs = tempfile::tempdir().unwrap();
    let (code, explained) = crate::ecosystems::gates(&repo, envs.path(), &["--explain"]);
    assert_eq!(code, 0, "{explained}");
    assert!(explained.contains("-e '.[tests,crypto]'"), "{explained}");
    let (_, all, err) = gates_json_with(&repo, envs.path(), &["--gate", "test"]);
    let counts = &gate(&all, "test")["counts"];
    // One test fetches a URL, which no sandbox reaches; the rest pass.
    let (passed, skipped) = (counts["passed"].as_u64(), counts["skipped"].as_u64());
    assert!(passed.unwrap_or(0) >= 280, "{all}\n{err}");
    assert!(skipped.unwrap_or(u64::MAX) <= 10, "{all}\n{err}");
}
