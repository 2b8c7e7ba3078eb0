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
use super::test_results::{Case, Outcome, TestRun, Unloaded};
use crate::sandbox::{CommandOutput, Sandbox};
use crate::untrusted::files as untrusted;

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
    // The proof may run where the baseline ran and wrote its report: only this run's counts.
    if let Some(rel) = p.report {
        TestRun::clear_report(p.root, rel).map_err(crate::sandbox::SandboxError::Io)?;
    }
    let output = sandbox
        .exec_keeping(test_command, timeout, super::test_results::keeps)
        .await?;
    let seen = TestRun::observe(output.for_results(), p.root, p.report);
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
mod tests;
