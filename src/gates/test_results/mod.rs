//! What a test run printed, test by test: each test's name, the file or target it is in, and
//! how it went; the files, packages or targets that could not load (so none of their tests
//! ran) and why; and the runner's own counts. Read in every ecosystem from the runner's output
//! as it prints it — pytest (`-rA` summary and `-v` lines) and unittest (`-v`) in [`python`],
//! libtest and rustc's errors (`cargo test`) in [`rust`], `go test -v` in [`go`], Node's test
//! runner, Jest and Vitest in [`node`] — or from a JUnit XML report ([`junit`],
//! `gates.test_report`). Several runners in one output (a polyglot repository's
//! `(pytest) && (go test)`) are summed.
//!
//! A long run's output reaches people as its head and tail; its results are read from every
//! line of it that [`keeps`] chooses (`Sandbox::exec_keeping`), so a test printed in the middle
//! of 100 MB is read as surely as in a short run. Each reader says which lines it reads; a test
//! checks that reading only those lines reads the same tests as reading them all.
//!
//! Names are the runner's own (`tests/test_a.py::test_x`, `tests.test_a.T.test_x`,
//! `tests::adds`, `TestParse/empty`, `math > adds`): a test is judged by the same runner on
//! the base and on the change, so the names compare.

mod go;
mod junit;
mod node;
mod python;
mod rust;

use std::path::Path;

use serde::{Deserialize, Serialize};

/// Counts a test runner printed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TestCounts {
    pub passed: u64,
    pub failed: u64,
    pub errors: u64,
    pub skipped: u64,
}

impl TestCounts {
    pub fn total(&self) -> u64 {
        self.passed + self.failed + self.errors + self.skipped
    }

    /// "3 tests" when none failed, else "1 of 3 tests failed".
    pub fn describe(&self) -> String {
        let bad = self.failed + self.errors;
        let tests = |n: u64| {
            if n == 1 {
                "1 test".to_owned()
            } else {
                format!("{n} tests")
            }
        };
        if bad == 0 {
            tests(self.passed)
        } else {
            format!("{bad} of {} failed", tests(self.total()))
        }
    }

    /// Adds `n` to the count a runner's word names (`passed`, `fail`, `errors`, `ignored`…);
    /// other words (`total`, `measured`) count nothing.
    fn bump(&mut self, word: &str, n: u64) {
        match word {
            "passed" | "pass" => self.passed += n,
            "failed" | "fail" => self.failed += n,
            "error" | "errors" | "cancelled" => self.errors += n,
            "skipped" | "xfailed" | "deselected" | "ignored" | "todo" => self.skipped += n,
            _ => {}
        }
    }

    /// Counts from `parts` such as `3 passed` (a number, then the word that names it).
    fn from_parts<'a>(parts: impl Iterator<Item = &'a str>) -> Self {
        let mut counts = Self::default();
        for part in parts {
            let mut w = part.split_whitespace();
            if let (Some(n), Some(word)) = (number(w.next()), w.next()) {
                counts.bump(word, n);
            }
        }
        counts
    }

    fn add(&mut self, o: &TestCounts) {
        self.passed += o.passed;
        self.failed += o.failed;
        self.errors += o.errors;
        self.skipped += o.skipped;
    }
}

/// How one test went.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    Passed,
    /// Its assertions failed.
    Failed,
    /// It could not run to its assertions (a fixture or set-up failed).
    Error,
    /// Skipped, ignored, deselected, expected to fail, or left to do: it proved nothing.
    Skipped,
}

impl Outcome {
    pub fn as_str(self) -> &'static str {
        match self {
            Outcome::Passed => "passed",
            Outcome::Failed => "failed",
            Outcome::Error => "error",
            Outcome::Skipped => "skipped",
        }
    }
}

/// One test the runner named.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Case {
    pub name: String,
    /// The file, target or package it belongs to, when the runner says (`tests/test_a.py`,
    /// `tests/show.rs`, `example.com/calc/sub`, `test/a.test.js`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unit: Option<String>,
    pub outcome: Outcome,
    /// Why it was skipped, or the first line of its failure, when the runner says.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub why: Option<String>,
}

impl Case {
    fn new(name: &str, unit: Option<&str>, outcome: Outcome) -> Self {
        Self {
            name: name.trim().to_owned(),
            unit: unit.map(str::to_owned),
            outcome,
            why: None,
        }
    }

    fn because(mut self, why: &str) -> Self {
        let why = why.trim();
        if !why.is_empty() {
            self.why = Some(why.chars().take(300).collect());
        }
        self
    }
}

/// A test file, target or package that could not load, so none of its tests ran.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Unloaded {
    /// As the runner names it: `tests/test_new.py`, `tests/new.rs`, `example.com/calc`.
    pub unit: String,
    /// The lines of the output that say why (`ImportError: cannot import name …`,
    /// `error[E0425]: cannot find function …`, `./calc_test.go:6:8: undefined: NewThing`).
    pub why: Vec<String>,
}

/// Tests the runner reports skipped by place rather than by name (pytest's
/// `SKIPPED [2] tests/test_calc.py:14: later`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Skip {
    /// `tests/test_calc.py:14`, or a file alone.
    pub place: String,
    pub why: String,
}

/// Whether a reader reads `line` (a line of a runner's output, without its newline): the lines
/// to keep of a run too long to keep whole ([`crate::sandbox::Keep`]).
pub fn keeps(line: &str) -> bool {
    python::keeps(line) || rust::keeps(line) || go::keeps(line) || node::keeps(line)
}

/// What a test run showed.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TestRun {
    pub counts: TestCounts,
    /// The tests that failed or errored, by name (and the units that could not load).
    pub failing: Vec<String>,
    /// Every test named, in the order the runner printed them.
    #[serde(default)]
    pub cases: Vec<Case>,
    #[serde(default)]
    pub unloaded: Vec<Unloaded>,
    #[serde(default)]
    pub skips: Vec<Skip>,
}

type Reader = fn(&[&str]) -> Option<TestRun>;

impl TestRun {
    /// Every runner's report found in `output`, summed; `None` when no runner printed one.
    pub fn read(output: &str) -> Option<Self> {
        let lines: Vec<&str> = output.lines().collect();
        let readers: [Reader; 7] = [
            |l| python::pytest(l).or_else(|| python::unittest(l)),
            rust::libtest,
            rust::compile_errors,
            go::go_test,
            node::jest,
            node::vitest,
            node::node_test,
        ];
        let mut found = None::<TestRun>;
        for r in readers {
            if let Some(run) = r(&lines) {
                found.get_or_insert_with(TestRun::default).absorb(run);
            }
        }
        found
    }

    /// A JUnit XML report (`<testsuites>` or one `<testsuite>`); `None` when it is not one.
    pub fn read_junit(xml: &str) -> Option<Self> {
        junit::read(xml)
    }

    /// Removes the JUnit report `rel` from `worktree` before a run, so that what is read after
    /// it is what that run wrote, never one an earlier run in the same worktree left (or one
    /// committed there). Reached without links; a link at `rel` is removed, not followed.
    pub fn clear_report(worktree: &Path, rel: &str) -> std::io::Result<()> {
        let rel_path = Path::new(rel);
        let (Some(parent), Some(name)) = (rel_path.parent(), rel_path.file_name()) else {
            return Ok(());
        };
        let dir = match parent.to_str() {
            Some("") => Some(worktree.to_path_buf()),
            Some(p) => crate::untrusted::files::resolve(worktree, p)
                .map_err(|e| std::io::Error::other(e.to_string()))?,
            None => return Ok(()),
        };
        match dir.map(|d| std::fs::remove_file(d.join(name))) {
            Some(Err(e)) if e.kind() != std::io::ErrorKind::NotFound => Err(e),
            _ => Ok(()),
        }
    }

    /// What a test command showed: its JUnit report when the repository names one
    /// (`gates.test_report`, read from `worktree`), else its output. A report that cannot be
    /// read falls back on the output, with a note saying why.
    pub fn observe(output: &str, worktree: &Path, report: Option<&str>) -> Observed {
        let mut notes = Vec::new();
        if let Some(rel) = report {
            match junit::read_file(worktree, rel) {
                Ok(run) => {
                    return Observed {
                        run: Some(run),
                        notes,
                    };
                }
                Err(why) => notes.push(format!("gates.test_report: {why}")),
            }
        }
        Observed {
            run: Self::read(output),
            notes,
        }
    }

    /// Whether the run names its tests: it ran some (or could not load some) and said which,
    /// or it ran none. A runner that prints only counts (`3 passed`) cannot be judged by name.
    pub fn names_its_tests(&self) -> bool {
        !self.cases.is_empty() || !self.unloaded.is_empty() || self.counts.total() == 0
    }

    /// A run made of `cases` alone: counts and failing names from them.
    fn of_cases(cases: Vec<Case>) -> Self {
        let mut run = TestRun {
            cases,
            ..Self::default()
        };
        run.count_cases();
        run
    }

    /// What a reader found: `None` when it found nothing of its runner (no counts, no case,
    /// nothing unloaded); else counted from the cases, with the runner's own `counts` where
    /// it printed them.
    fn found(mut self, counts: Option<TestCounts>) -> Option<Self> {
        if counts.is_none() && self.cases.is_empty() && self.unloaded.is_empty() {
            return None;
        }
        self.count_cases();
        if let Some(c) = counts {
            self.counts = c;
        }
        Some(self)
    }

    /// Counts and failing names from the cases (for runners that print no summary).
    fn count_cases(&mut self) {
        let mut counts = TestCounts::default();
        for c in &self.cases {
            match c.outcome {
                Outcome::Passed => counts.passed += 1,
                Outcome::Failed => counts.failed += 1,
                Outcome::Error => counts.errors += 1,
                Outcome::Skipped => counts.skipped += 1,
            }
        }
        counts.errors += self.unloaded.len() as u64;
        self.counts = counts;
        self.failing = self.failing_names();
    }

    /// The names of failed and errored cases, then the units that could not load.
    fn failing_names(&self) -> Vec<String> {
        let mut names: Vec<String> = self
            .cases
            .iter()
            .filter(|c| matches!(c.outcome, Outcome::Failed | Outcome::Error))
            .map(|c| c.name.clone())
            .collect();
        names.extend(self.unloaded.iter().map(|u| u.unit.clone()));
        names.dedup();
        names
    }

    fn absorb(&mut self, o: TestRun) {
        self.counts.add(&o.counts);
        self.failing.extend(o.failing);
        self.cases.extend(o.cases);
        self.unloaded.extend(o.unloaded);
        self.skips.extend(o.skips);
    }

    /// Every test that failed already failed on the base (`known`), and none could not run:
    /// the run shows nothing the change broke.
    pub fn only_known(&self, known: &[String]) -> bool {
        self.counts.errors == 0
            && !self.failing.is_empty()
            && self.failing.iter().all(|f| known.contains(f))
    }

    /// The cases named `name` (a test can appear once per binary or package).
    pub fn named<'a>(&'a self, name: &'a str) -> impl Iterator<Item = &'a Case> + 'a {
        self.cases.iter().filter(move |c| c.name == name)
    }
}

/// A test run as observed, with notes on how it was read.
#[derive(Debug, Clone, Default)]
pub struct Observed {
    /// `None` when neither a report nor the output named any test.
    pub run: Option<TestRun>,
    pub notes: Vec<String>,
}

fn number(word: Option<&str>) -> Option<u64> {
    word?.trim().parse().ok()
}

#[cfg(test)]
mod tests;
