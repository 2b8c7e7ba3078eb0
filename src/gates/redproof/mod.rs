//! Red proof: the Breaker's tests, run against the base commit, must fail for the change's
//! reason — as test failures, or because a test uses a name of the repository's own code that
//! does not exist yet and the plan says it will be added ([`absent`]) — and not because they
//! are broken (a syntax error, a missing dependency, a fixture that errors, a name the plan
//! never mentions). The hive reports it as check run `hive/red-proof`, and what it saw failing
//! is what the Encounter must see passing, by name ([`Verdict::wanted`]).

pub mod absent;
pub mod declared;

use std::path::Path;
use std::time::Duration;

use serde::Serialize;

use super::GateError;
use super::expect::Wanted;
use super::report::code_block;
use super::results::{Case, Outcome, TestRun, Unloaded};
use crate::sandbox::{CommandOutput, Sandbox, untrusted};

/// What running the new tests on the base showed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(tag = "verdict", rename_all = "snake_case")]
pub enum Verdict {
    /// Tests failed as tests, or could not load for a name the plan adds: the proof holds.
    Red {
        failed: u64,
        total: u64,
        /// Files that cannot load on the base for a name not written yet, as people read it.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        absent: Vec<String>,
        /// What the Encounter must see passing.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        tests: Vec<Wanted>,
    },
    /// The tests pass on the base: they do not capture the issue.
    Green,
    /// The tests did not run properly; `reason` says how.
    Broken { reason: String },
}

impl Verdict {
    pub fn holds(&self) -> bool {
        matches!(self, Verdict::Red { .. })
    }

    /// The Breaker's tests the Encounter must see passing (none unless the proof holds).
    pub fn wanted(&self) -> &[Wanted] {
        match self {
            Verdict::Red { tests, .. } => tests,
            _ => &[],
        }
    }

    pub fn describe(&self) -> String {
        match self {
            Verdict::Red {
                failed,
                total,
                absent,
                ..
            } => {
                let tests = *failed as usize - absent.len().min(*failed as usize);
                let mut parts = Vec::new();
                if tests > 0 || absent.is_empty() {
                    parts.push(format!("{tests} of {total} tests fail on the base"));
                }
                parts.extend(absent.iter().cloned());
                format!("holds: {}, as they should", parts.join("; "))
            }
            Verdict::Green => {
                "fails: the tests pass on the base, so they do not capture the issue".into()
            }
            Verdict::Broken { reason } => {
                format!("fails: the tests did not run properly ({reason})")
            }
        }
    }
}

/// What the red proof knows beside the output.
#[derive(Debug, Clone, Copy)]
pub struct Proving<'a> {
    /// Tests that failed on the base before any change (the baseline): failing only there
    /// proves nothing.
    pub known: &'a [String],
    /// The test files the Breaker changed.
    pub files: &'a [String],
    /// The plan as text: a name it mentions may be missing from the base.
    pub plan: &'a str,
    /// The checkout the tests ran in (the base with the Breaker's tests): what is the
    /// repository's own code.
    pub root: &'a Path,
    /// The JUnit report the test command writes (`gates.test_report`), in `root`.
    pub report: Option<&'a str>,
}

impl Proving<'_> {
    /// Whether the unit that could not load is (or holds) one of the Breaker's files.
    fn touches(&self, u: &Unloaded) -> bool {
        self.files
            .iter()
            .any(|f| *f == u.unit || u.why.iter().any(|line| names_file(line, f)))
    }
}

/// Whether `line` names the file `path` (`./calc_test.go:6:8: …` names `calc_test.go`).
fn names_file(line: &str, path: &str) -> bool {
    line.match_indices(path).any(|(at, _)| {
        let before = line[..at].chars().next_back();
        !before.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == '-')
    })
}

/// Classifies a test run of the Breaker's tests on the base, read as `run` (its output, or
/// its JUnit report).
pub fn classify(output: &CommandOutput, run: Option<TestRun>, p: &Proving<'_>) -> Verdict {
    let broken = |reason: String| Verdict::Broken { reason };
    if output.oom_killed || output.timed_out || output.killed.is_some() {
        return broken(output.describe());
    }
    let Some(run) = run else {
        return broken(if output.success() {
            format!("{}, and the test command named no test", output.describe())
        } else {
            format!("{} and no test summary was printed", output.describe())
        });
    };
    // Files that could not load: red only for a name the plan adds.
    let mut absent = Vec::new();
    for u in &run.unloaded {
        if p.known.contains(&u.unit) {
            continue;
        }
        match absent_names(u, p) {
            Ok(said) if p.touches(u) => absent.push((u, said)),
            Ok(_) => {}
            Err(line) => return broken(format!("{} could not load: {line}", u.unit)),
        }
    }
    let new = |c: &&Case| !p.known.contains(&c.name);
    if let Some(c) = run
        .cases
        .iter()
        .filter(new)
        .find(|c| c.outcome == Outcome::Error)
    {
        let why = c.why.as_deref().unwrap_or("no reason printed");
        return broken(format!(
            "`{}` errored before its assertions ({why})",
            c.name
        ));
    }
    let failing: Vec<&Case> = run
        .cases
        .iter()
        .filter(new)
        .filter(|c| c.outcome == Outcome::Failed)
        .collect();
    if failing.is_empty() && absent.is_empty() {
        return if output.success() || run.only_known(p.known) || !run.failing.is_empty() {
            Verdict::Green
        } else {
            broken(format!("{} but no test failed", output.describe()))
        };
    }
    let tests = wanted(&run, &failing, &absent, p);
    Verdict::Red {
        failed: (failing.len() + absent.len()) as u64,
        total: run
            .counts
            .total()
            .max((failing.len() + absent.len()) as u64),
        absent: absent
            .iter()
            .map(|(u, said)| format!("{} cannot load yet: {said}", u.unit))
            .collect(),
        tests,
    }
}

/// Why `u` could not load, when every reason is a name of the repository's own code that the
/// plan mentions (`new_function` is not in pkg.calc yet); else the first line that says
/// otherwise, and why it is no proof.
fn absent_names(u: &Unloaded, p: &Proving<'_>) -> Result<String, String> {
    if u.why.is_empty() {
        return Err("no reason was printed".into());
    }
    let mut said = Vec::new();
    for line in &u.why {
        let Some(a) = absent::parse(line) else {
            return Err(line.clone());
        };
        let owner = a.owner.as_deref().unwrap_or("the code");
        if !absent::is_own(p.root, &a) {
            return Err(line.clone());
        }
        if !absent::mentioned(p.plan, &a.name) {
            return Err(format!(
                "{line} — `{}` is not in {owner}, and the plan does not say it will be added",
                a.name
            ));
        }
        let s = format!("`{}` is not in {owner}", a.name);
        if !said.contains(&s) {
            said.push(s);
        }
    }
    Ok(said.join(", "))
}

/// The Breaker's tests as the Encounter must see them: each failing test by name; each of the
/// Breaker's files that ran (or could not load) whole, where the runner says which file a test
/// is in; and, where it cannot say (Go's packages, Node's titles), the tests the files that
/// could not load declare.
fn wanted(
    run: &TestRun,
    failing: &[&Case],
    absent: &[(&Unloaded, String)],
    p: &Proving<'_>,
) -> Vec<Wanted> {
    let failed = |c: &Case| match &c.why {
        Some(w) => format!("failed: {w}"),
        None => "failed".to_owned(),
    };
    let mut out: Vec<Wanted> = failing
        .iter()
        .map(|c| Wanted::test(&c.name, c.unit.as_deref()).at_base(&failed(c)))
        .collect();
    let could_not_load = |u: &Unloaded| {
        absent
            .iter()
            .find(|(a, _)| a.unit == u.unit)
            .map(|(_, said)| format!("could not load: {said}"))
            .unwrap_or_else(|| "could not load".into())
    };
    // Each of the Breaker's files that ran, or could not load, is wanted whole where the runner
    // names every test's file (pytest, unittest, libtest). pytest stops the whole session when
    // a module cannot be collected: the Breaker's other test modules did not run, and are
    // wanted whole too.
    let interrupted = run.cases.is_empty() && !run.unloaded.is_empty();
    for f in p.files {
        let ran: Vec<&Case> = run
            .cases
            .iter()
            .filter(|c| c.unit.as_deref() == Some(f.as_str()))
            .collect();
        if is_titled(f) {
            continue;
        }
        let unloaded = absent.iter().find(|(u, _)| u.unit == *f);
        if let Some((u, _)) = unloaded {
            out.push(Wanted::every_test_of(f).at_base(&could_not_load(u)));
        } else if !ran.is_empty() {
            let bad = ran.iter().filter(|c| c.outcome != Outcome::Passed).count();
            let base = format!("{bad} of {} failed", ran.len());
            out.push(Wanted::every_test_of(f).at_base(&base));
        } else if interrupted && is_python_test(f) {
            out.push(Wanted::every_test_of(f).at_base("did not run (collection stopped)"));
        }
    }
    for (u, _) in absent {
        // Where the runner cannot say which file a passing test is in (Go's packages, Node's
        // titles), the tests the Breaker's files that could not load declare, by name.
        let files = p
            .files
            .iter()
            .filter(|f| **f == u.unit || u.why.iter().any(|l| names_file(l, f)));
        for f in files {
            let text = untrusted::read_text(p.root, f, untrusted::DEFAULT_CAP)
                .ok()
                .flatten()
                .unwrap_or_default();
            for name in declared::tests(f, &text) {
                out.push(Wanted::test(&name, None).at_base(&could_not_load(u)));
            }
        }
    }
    out.sort();
    out.dedup();
    out
}

/// A file whose runner names passing tests without their file (Go by package, Node by
/// title): its tests are wanted by the names it declares, not as a whole file.
fn is_titled(path: &str) -> bool {
    path.ends_with(".go") || declared::is_script(path)
}

/// pytest's default test files: `test_*.py` and `*_test.py`.
fn is_python_test(path: &str) -> bool {
    let name = path.rsplit('/').next().unwrap_or(path);
    name.ends_with(".py") && (name.starts_with("test_") || name.ends_with("_test.py"))
}

/// Runs `test_command` in `sandbox` (a worktree of the base with the new tests in it).
pub async fn run(
    sandbox: &Sandbox,
    test_command: &str,
    timeout: Duration,
    p: &Proving<'_>,
) -> Result<(Verdict, CommandOutput), GateError> {
    let output = sandbox.exec(test_command, timeout).await?;
    let seen = TestRun::observe(&output.output, p.root, p.report);
    Ok((classify(&output, seen.run, p), output))
}

/// The red proof as a report: whether it holds, a title and a Markdown summary with the tail of
/// the output (the hive posts it as check run `hive/red-proof` on the Breaker's commit).
pub fn report(verdict: &Verdict, output: &CommandOutput) -> (bool, String, String) {
    let summary = format!(
        "The new tests ran against the base branch: red proof **{}**.\n\n{}Last 40 lines of output:\n\n{}\n",
        verdict.describe(),
        wanted_list(verdict.wanted()),
        code_block(&output.tail(40))
    );
    (
        verdict.holds(),
        format!("hive/red-proof {}", verdict.describe()),
        summary,
    )
}

/// "The change must make these pass: …" (at most 20), or nothing.
fn wanted_list(wanted: &[Wanted]) -> String {
    if wanted.is_empty() {
        return String::new();
    }
    let mut s = "The change must make these pass, by name:\n\n".to_owned();
    for w in wanted.iter().take(20) {
        s.push_str(&format!("- `{}`\n", w.label().replace('`', "'")));
    }
    if wanted.len() > 20 {
        s.push_str(&format!("- … and {} more\n", wanted.len() - 20));
    }
    s.push('\n');
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn out(code: i32, text: &str) -> CommandOutput {
        CommandOutput::exited(code, text)
    }

    /// A checkout with a Python package, a Rust crate, a Go package and a Node module.
    fn checkout() -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        for (file, text) in [
            ("pkg/calc.py", "def add(a, b):\n    return a + b\n"),
            ("Cargo.toml", "[package]\nname = \"calc\"\n"),
            ("go.mod", "module example.com/calc\n"),
            (
                "calc_test.go",
                "package calc\n\nfunc TestNewThing(t *testing.T) {}\n",
            ),
            ("calc.mjs", "export const add = (a, b) => a + b;\n"),
            (
                "test/new.test.mjs",
                "import { mul } from '../calc.mjs';\ntest('mul multiplies', () => {});\n",
            ),
        ] {
            std::fs::create_dir_all(dir.path().join(file).parent().unwrap()).unwrap();
            std::fs::write(dir.path().join(file), text).unwrap();
        }
        git2::Repository::init(dir.path()).unwrap();
        dir
    }

    const PLAN: &str = "Add new_function to pkg/calc.py; calc::new_function in Rust; NewThing in Go; mul in calc.mjs.";

    fn proving<'a>(
        root: &'a Path,
        files: &'a [String],
        known: &'a [String],
        plan: &'a str,
    ) -> Proving<'a> {
        Proving {
            known,
            files,
            plan,
            root,
            report: None,
        }
    }

    fn classify(o: &CommandOutput, p: &Proving<'_>) -> Verdict {
        super::classify(o, TestRun::read(&o.output), p)
    }

    /// The wanted tests without how they went on the base.
    fn bare(v: &Verdict) -> Vec<Wanted> {
        v.wanted()
            .iter()
            .map(|w| Wanted {
                base: None,
                ..w.clone()
            })
            .collect()
    }

    fn verdict(text: &str, code: i32, files: &[&str], plan: &str) -> Verdict {
        let dir = checkout();
        let files: Vec<String> = files.iter().map(|f| (*f).to_owned()).collect();
        classify(&out(code, text), &proving(dir.path(), &files, &[], plan))
    }

    #[test]
    fn failures_only_where_the_base_already_failed_prove_nothing() {
        let dir = checkout();
        let o = out(
            1,
            "FAILED tests/test_a.py::test_old - x\n== 1 failed, 1 passed in 0.1s ==",
        );
        let files = ["tests/test_a.py".to_owned()];
        let known = ["tests/test_a.py::test_old".to_owned()];
        assert_eq!(
            classify(&o, &proving(dir.path(), &files, &known, "")),
            Verdict::Green
        );
        let v = classify(&o, &proving(dir.path(), &files, &[], ""));
        assert!(v.holds());
        assert_eq!(
            bare(&v),
            [
                Wanted::every_test_of("tests/test_a.py"),
                Wanted::test("tests/test_a.py::test_old", Some("tests/test_a.py")),
            ]
        );
        let bases: Vec<_> = v.wanted().iter().map(|w| w.base.as_deref()).collect();
        assert_eq!(bases, [Some("1 of 1 failed"), Some("failed: x")]);
    }

    #[test]
    fn failures_as_tests_hold_and_are_wanted_by_name() {
        let v = verdict(
            runner_output!("pytest-attribute-new-name"),
            1,
            &["tests/test_new.py"],
            "",
        );
        let Verdict::Red { failed, total, .. } = &v else {
            panic!("{v:?}")
        };
        assert_eq!((*failed, *total), (1, 2));
        assert_eq!(
            v.describe(),
            "holds: 1 of 2 tests fail on the base, as they should"
        );
        let unittest = "test_add (tests.test_calc.CalcTest.test_add) ... ok\ntest_add_fails (tests.test_calc.CalcTest.test_add_fails) ... FAIL\n\nRan 2 tests in 0.001s\n\nFAILED (failures=1)\n";
        let v = verdict(unittest, 1, &["tests/test_calc.py"], "");
        assert_eq!(
            bare(&v),
            [
                Wanted::every_test_of("tests/test_calc.py"),
                Wanted::test(
                    "tests.test_calc.CalcTest.test_add_fails",
                    Some("tests/test_calc.py")
                ),
            ]
        );
        // Node names a passing test by its title alone: its file is never wanted whole.
        let node = verdict(
            runner_output!("node-mixed-tap"),
            1,
            &["test/calc.test.js"],
            "",
        );
        assert_eq!(
            bare(&node),
            [
                Wanted::test("math > nested > mul fails", Some("test/calc.test.js")),
                Wanted::test("splits", Some("test/calc.test.js")),
            ]
        );
        // A test that errors (not fails) proves nothing.
        let v = verdict(
            runner_output!("unittest-mixed-v"),
            1,
            &["tests/test_calc.py"],
            "",
        );
        assert!(matches!(v, Verdict::Broken { .. }), "{v:?}");
    }

    #[test]
    fn a_test_of_a_name_the_plan_adds_is_red_in_every_language() {
        let py = verdict(
            runner_output!("pytest-import-new-name"),
            2,
            &["tests/test_new.py"],
            PLAN,
        );
        assert_eq!(
            py.describe(),
            "holds: tests/test_new.py cannot load yet: `new_function` is not in pkg.calc, as they should"
        );
        assert_eq!(bare(&py), [Wanted::every_test_of("tests/test_new.py")]);
        assert_eq!(
            py.wanted()[0].base.as_deref(),
            Some("could not load: `new_function` is not in pkg.calc")
        );
        let unittest = verdict(
            runner_output!("unittest-import-error-v"),
            1,
            &["tests/test_new.py"],
            PLAN,
        );
        assert_eq!(
            bare(&unittest),
            [Wanted::every_test_of("tests/test_new.py")]
        );
        let rust = verdict(
            runner_output!("cargo-compile-e0425"),
            101,
            &["tests/new.rs"],
            PLAN,
        );
        assert_eq!(bare(&rust), [Wanted::every_test_of("tests/new.rs")]);
        // Go and Node cannot say which file a passing test is in: the file's tests by name.
        let go = verdict(runner_output!("go-undefined"), 1, &["calc_test.go"], PLAN);
        assert_eq!(bare(&go), [Wanted::test("TestNewThing", None)], "{go:?}");
        let node = verdict(
            runner_output!("node-missing-export-esm"),
            1,
            &["test/new.test.mjs"],
            PLAN,
        );
        assert!(node.holds(), "{node:?}");
        assert!(
            bare(&node).contains(&Wanted::test("mul multiplies", None)),
            "{node:?}"
        );
        // The other package's and file's passing tests are not the Breaker's.
        assert!(
            !go.wanted()
                .iter()
                .any(|w| w.name.as_deref() == Some("TestMul"))
        );
    }

    #[test]
    fn a_name_the_plan_never_mentions_or_a_broken_test_proves_nothing() {
        let v = verdict(
            runner_output!("pytest-import-new-name"),
            2,
            &["tests/test_new.py"],
            "Fix add.",
        );
        let Verdict::Broken { reason } = &v else {
            panic!("{v:?}")
        };
        assert!(
            reason.contains(
                "`new_function` is not in pkg.calc, and the plan does not say it will be added"
            ),
            "{reason}"
        );
        for (text, code, file) in [
            (
                runner_output!("pytest-syntax-error"),
                2,
                "tests/test_broken.py",
            ),
            (
                runner_output!("pytest-missing-third-party"),
                2,
                "tests/test_props.py",
            ),
            (
                runner_output!("pytest-fixture-error"),
                1,
                "tests/test_fix.py",
            ),
            (runner_output!("pytest-os-exit"), 0, "tests/test_new.py"),
            ("sh: 1: pytest: not found", 127, "tests/test_new.py"),
        ] {
            let v = verdict(text, code, &[file], PLAN);
            assert!(matches!(v, Verdict::Broken { .. }), "{file}: {v:?}");
        }
        let fixture = verdict(
            runner_output!("pytest-fixture-error"),
            1,
            &["tests/test_fix.py"],
            PLAN,
        );
        assert!(fixture.describe().contains("`tests/test_fix.py::test_uses_db` errored before its assertions (RuntimeError: database unavailable)"), "{}", fixture.describe());
    }

    #[test]
    fn passing_or_killed_tests_do_not_hold() {
        assert_eq!(
            verdict("PASSED t.py::test_a\n1 passed in 0.1s", 0, &["t.py"], ""),
            Verdict::Green
        );
        let mut t = out(0, "");
        t.timed_out = true;
        let dir = checkout();
        assert!(matches!(
            classify(&t, &proving(dir.path(), &[], &[], "")),
            Verdict::Broken { .. }
        ));
    }
}
