//! The baseline: the test command on the unchanged base, before any model is asked. Either the
//! tests ran (some may already fail: they are recorded, and later judgements leave them out), or
//! they could not run — a command is missing, a module cannot be imported, the project does not
//! compile — and [`judge`] says which line of the output shows why. Later judgements leave the
//! recorded failures out through [`super::test_results::TestRun::only_known`].

use std::path::Path;

use super::test_results::TestRun;
use crate::sandbox::CommandOutput;

/// What the base's tests showed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Judgement {
    /// The tests ran; `run.failing` already fail on the base.
    Ran(TestRun),
    /// The tests could not run: the line that shows why, for people.
    Broken(String),
    /// The tests ran, but the command did not say which (it printed counts, or nothing the
    /// bot reads): no test could be judged by name. What it printed instead.
    Unnamed(String),
}

/// Markers of a line that says why tests could not run, most telling first.
const TELLING: [&str; 16] = [
    "ModuleNotFoundError",
    "ImportError",
    "No module named",
    "error[E",
    "could not compile",
    "command not found",
    ": not found",
    "Cannot find module",
    "cannot find package",
    "no required module provides package",
    "npm ERR!",
    "npm error",
    "No such file or directory",
    "[build failed]",
    "error:",
    "Error:",
];

/// Judges the test command's output on the base, read as `run` (its output, or its JUnit
/// report).
pub fn judge(output: &CommandOutput, run: Option<TestRun>) -> Judgement {
    if output.oom_killed || output.timed_out || output.killed.is_some() {
        return Judgement::Broken(output.describe());
    }
    let unnamed = |run: &Option<TestRun>| {
        Judgement::Unnamed(match run {
            Some(r) => format!("{} and no test's name", r.counts.describe()),
            None => "no test result it could read".into(),
        })
    };
    if output.success() {
        return match run {
            Some(r) if r.names_its_tests() => Judgement::Ran(r),
            other => unnamed(&other),
        };
    }
    let missing = missing_dependency(&output.output);
    match run {
        // Nothing passed and a dependency is missing (Node's runner counts a test file that
        // cannot load as a failed test): the environment, not the tests.
        Some(r) if r.counts.passed == 0 && missing.is_some() => {
            Judgement::Broken(missing.map(|m| m.line).unwrap_or_default())
        }
        // Tests ran and some failed (not only collection or build errors).
        Some(r) if r.counts.passed + r.counts.failed > 0 => {
            if r.cases.is_empty() {
                unnamed(&Some(r))
            } else {
                Judgement::Ran(r)
            }
        }
        // "no tests ran" (exit code 5, pytest and unittest): a repository without tests yet.
        _ if output.exit_code == Some(5)
            && output.output.to_lowercase().contains("no tests ran") =>
        {
            Judgement::Ran(TestRun::default())
        }
        _ => Judgement::Broken(diagnose(&output.output)),
    }
}

/// The line of `output` that best says why the command failed (at most 300 characters).
pub fn diagnose(output: &str) -> String {
    let lines: Vec<&str> = output
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect();
    let line = TELLING
        .iter()
        .find_map(|m| lines.iter().find(|l| l.contains(m)))
        .or(lines.last())
        .copied()
        .unwrap_or("it printed nothing");
    let mut s: String = line.chars().take(300).collect();
    if s.len() < line.len() {
        s.push('…');
    }
    s
}

/// A dependency the tests asked for and the environment does not have.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Missing {
    /// As the language names it: a Python module (`hypothesis`), a Node module (`lodash`),
    /// a Go package path (`github.com/x/y`), a Rust crate (`proptest`).
    pub name: String,
    /// The line of the output that says so.
    pub line: String,
}

/// The first dependency `output` says is missing, when it names one: `No module named 'x'`
/// (Python), ``can't find crate for `x` `` and undeclared crates (Rust), `Cannot find module
/// 'x'` and `Cannot find package 'x'` (Node, not a relative path), `no required module provides package x` and `cannot find
/// package "x"` (Go). Whether the name is the project's own is for the caller to tell.
pub fn missing_dependency(output: &str) -> Option<Missing> {
    // (marker, the quote that ends the name)
    const MARKERS: [(&str, char); 8] = [
        ("No module named '", '\''),
        ("can't find crate for `", '`'),
        ("use of undeclared crate or module `", '`'),
        ("use of unresolved module or unlinked crate `", '`'),
        ("Cannot find module '", '\''),
        ("Cannot find package '", '\''),
        ("no required module provides package ", ';'),
        ("cannot find package \"", '"'),
    ];
    output.lines().find_map(|line| {
        MARKERS.iter().find_map(|(marker, end)| {
            let rest = &line[line.find(marker)? + marker.len()..];
            let name = rest.split([*end, ' ', ':']).next()?.trim();
            let relative = name.starts_with('.') || name.starts_with('/');
            (!name.is_empty() && !relative).then(|| Missing {
                name: name.to_owned(),
                line: line.trim().chars().take(300).collect(),
            })
        })
    })
}

/// The programs `output` says are not there (`sh: 1: less: not found`, `bash: make: command
/// not found`, Python's `FileNotFoundError: … 'less'`, Go's `exec: "less": executable file not
/// found`, Node's `spawn less ENOENT`), each once, in the order first named.
pub fn missing_programs(output: &str) -> Vec<String> {
    let mut found: Vec<String> = Vec::new();
    let plain = |n: &str| {
        !n.is_empty()
            && n.len() <= 64
            && n.chars()
                .all(|c| c.is_ascii_alphanumeric() || "._+-/".contains(c))
            && !n.starts_with(['.', '-'])
    };
    for line in output.lines().map(str::trim) {
        let name = if let Some(rest) = line
            .strip_suffix(": not found")
            .or_else(|| line.strip_suffix(": command not found"))
        {
            // `sh: 1: less`, `/bin/sh: less`, `bash: line 1: make`
            rest.rsplit(": ").next()
        } else if let Some(at) = line.find("No such file or directory: '") {
            let rest = &line[at + "No such file or directory: '".len()..];
            rest.split('\'')
                .next()
                .filter(|_| line.contains("FileNotFoundError"))
        } else if let Some(at) = line.find("exec: \"") {
            let rest = &line[at + "exec: \"".len()..];
            rest.split('"')
                .next()
                .filter(|_| line.contains("executable file not found"))
        } else if let Some(at) = line.find("spawn ") {
            let rest = &line[at + "spawn ".len()..];
            rest.strip_suffix(" ENOENT").or_else(|| {
                rest.split(" ENOENT")
                    .next()
                    .filter(|r| r.len() < rest.len())
            })
        } else {
            None
        };
        // A path is a file the tests wanted (`data/in.txt`), not a program.
        let Some(name) = name.map(str::trim).filter(|n| plain(n) && !n.contains('/')) else {
            continue;
        };
        if !found.iter().any(|f| f == name) {
            found.push(name.to_owned());
        }
    }
    found
}

/// Whether `name` (from [`missing_dependency`]) is the project's own code in the checkout at
/// `root` rather than a dependency: a Go path under `go.mod`'s module, Rust's `crate`/`self`/
/// `super` or the root package's name, or a file or directory of that name anywhere in the
/// checkout (`helpers.py`, `tests/common/`, `src/util.rs`), ignored files left out.
pub fn is_own(root: &Path, name: &str) -> bool {
    let read = |f: &str| {
        crate::untrusted::files::read_text(root, f, crate::untrusted::files::DEFAULT_CAP)
            .ok()
            .flatten()
            .unwrap_or_default()
    };
    let module = read("go.mod");
    if let Some(m) = module
        .lines()
        .find_map(|l| l.trim().strip_prefix("module "))
    {
        let m = m.trim().trim_matches('"');
        if name == m || name.starts_with(&format!("{m}/")) {
            return true;
        }
    }
    let first = name.split(['.', '/']).next().unwrap_or(name);
    if matches!(first, "crate" | "self" | "super") {
        return true;
    }
    let package = read("Cargo.toml");
    let named = package.lines().any(|l| {
        let l = l.replace(' ', "");
        l.strip_prefix("name=\"")
            .and_then(|rest| rest.strip_suffix('"'))
            .is_some_and(|n| n.replace('-', "_") == first)
    });
    named
        || ignore::WalkBuilder::new(root)
            .max_depth(Some(8))
            .build()
            .flatten()
            .any(|e| {
                let file = e.file_name().to_string_lossy();
                let stem = file.split('.').next().unwrap_or_default();
                e.depth() > 0 && stem == first
            })
}

#[cfg(test)]
mod tests {
    #[test]
    fn programs_a_test_calls_that_are_not_there_are_named() {
        let out = "sh: 1: less: not found\nbash: line 1: make: command not found\n\
                   FileNotFoundError: [Errno 2] No such file or directory: 'pkg-config'\n\
                   exec: \"gcc\": executable file not found in $PATH\n\
                   Error: spawn less ENOENT\n\
                   FileNotFoundError: [Errno 2] No such file or directory: 'data/in.txt'\n";
        assert_eq!(
            super::missing_programs(out),
            ["less", "make", "pkg-config", "gcc"]
        );
        assert!(super::missing_programs("AssertionError: 1 != 2").is_empty());
    }

    use super::*;

    fn out(code: i32, text: &str) -> CommandOutput {
        CommandOutput::exited(code, text)
    }

    fn judge_(o: &CommandOutput) -> Judgement {
        judge(o, TestRun::read(o.for_results()))
    }

    #[test]
    fn a_missing_module_is_broken_and_named() {
        let text = "ImportError while importing test module '/work/tests/test_w.py'.\nE   ModuleNotFoundError: No module named 'wcwidth'\n== 1 error in 0.05s ==";
        assert_eq!(
            judge_(&out(2, text)),
            Judgement::Broken("E   ModuleNotFoundError: No module named 'wcwidth'".into())
        );
        let cargo = "   Compiling x v0.1.0\nerror[E0432]: unresolved import `itoa`\nerror: could not compile `x`";
        assert!(matches!(judge_(&out(101, cargo)), Judgement::Broken(l) if l.contains("E0432")));
        assert!(
            matches!(judge_(&out(127, "sh: 1: cargo: not found")), Judgement::Broken(l) if l.contains("cargo: not found"))
        );
    }

    #[test]
    fn a_test_file_that_cannot_load_a_dependency_is_broken_not_failing() {
        let esm = include_str!(
            "../../tests/fixtures/tool-output/runners/node-cannot-find-package-esm.txt"
        );
        assert_eq!(
            judge_(&out(1, esm)),
            Judgement::Broken("# Error [ERR_MODULE_NOT_FOUND]: Cannot find package 'zod' imported from /work/test/dep.test.mjs".into())
        );
        // One test passed: the tests run; the failure is recorded.
        let some = runner_output!("node-cannot-find-module");
        let Judgement::Ran(run) = judge_(&out(1, some)) else {
            panic!("not ran")
        };
        assert_eq!(run.failing, ["test/dep.test.js"]);
    }

    #[test]
    fn failing_tests_on_the_base_are_recorded_not_broken() {
        let text =
            "FAILED tests/test_a.py::test_old - assert 1 == 2\n== 1 failed, 3 passed in 0.1s ==";
        let Judgement::Ran(r) = judge_(&out(1, text)) else {
            panic!("not ran")
        };
        assert_eq!(r.failing, ["tests/test_a.py::test_old"]);
        assert_eq!(
            judge_(&out(5, "no tests ran in 0.01s")),
            Judgement::Ran(TestRun::default())
        );
    }

    #[test]
    fn a_command_that_does_not_name_its_tests_cannot_be_judged_by_name() {
        assert_eq!(
            judge_(&out(0, "...\n3 passed in 0.1s")),
            Judgement::Unnamed("3 tests and no test's name".into())
        );
        assert_eq!(
            judge_(&out(0, "all good")),
            Judgement::Unnamed("no test result it could read".into())
        );
        let jest = "Tests:       1 failed, 2 passed, 3 total";
        assert!(matches!(judge_(&out(1, jest)), Judgement::Unnamed(_)));
        // No test at all is no test to name.
        let empty = "running 0 tests\n\ntest result: ok. 0 passed; 0 failed; 0 ignored; 0 measured; 0 filtered out";
        assert!(matches!(judge_(&out(0, empty)), Judgement::Ran(_)));
    }

    #[test]
    fn a_missing_dependency_is_named_in_each_language() {
        for (output, name) in [
            (
                "E   ModuleNotFoundError: No module named 'hypothesis'",
                "hypothesis",
            ),
            (
                "E   ModuleNotFoundError: No module named 'yaml.constructor'",
                "yaml.constructor",
            ),
            ("error[E0463]: can't find crate for `proptest`", "proptest"),
            (
                "error[E0433]: failed to resolve: use of undeclared crate or module `rand`",
                "rand",
            ),
            (
                "error[E0433]: failed to resolve: use of unresolved module or unlinked crate `rand`",
                "rand",
            ),
            (
                "Error: Cannot find module 'lodash'\nRequire stack:",
                "lodash",
            ),
            (
                "x_test.go:4:2: no required module provides package github.com/a/b; to add it:",
                "github.com/a/b",
            ),
            (
                "x.go:3:8: cannot find package \"github.com/a/b\" in any of:",
                "github.com/a/b",
            ),
        ] {
            let m = missing_dependency(output).unwrap_or_else(|| panic!("nothing in {output}"));
            assert_eq!(m.name, name, "{output}");
            assert!(output.starts_with(&m.line), "{m:?}");
        }
        for output in [
            "Error: Cannot find module './helpers'",
            "ImportError: cannot import name 'mul' from 'calc'",
            "error[E0425]: cannot find function `mul` in crate `calc`",
            "1 failed, 2 passed",
        ] {
            assert_eq!(missing_dependency(output), None, "{output}");
        }
    }

    #[test]
    fn own_code_is_told_from_dependencies() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        for (file, text) in [
            ("go.mod", "module example.com/half\n\ngo 1.21\n"),
            (
                "Cargo.toml",
                "[package]\nname = \"fmt-num\"\n\n[dependencies]\nitoa = \"1\"\n",
            ),
            ("tests/helpers.py", ""),
            ("src/widthy/__init__.py", ""),
            (".gitignore", "venv/\n"),
            ("venv/lib/yaml/__init__.py", ""),
        ] {
            std::fs::create_dir_all(root.join(file).parent().unwrap()).unwrap();
            std::fs::write(root.join(file), text).unwrap();
        }
        git2::Repository::init(root).unwrap();
        for own in [
            "example.com/half/inner",
            "fmt_num",
            "crate",
            "helpers",
            "widthy.core",
        ] {
            assert!(is_own(root, own), "{own}");
        }
        for dependency in ["github.com/a/b", "itoa", "hypothesis", "yaml"] {
            assert!(!is_own(root, dependency), "{dependency}");
        }
    }
}
