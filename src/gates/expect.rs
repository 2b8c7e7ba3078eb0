//! The tests a change is judged by, by name. The red proof names the Breaker's tests (each test
//! it saw failing, and each test file it saw run or fail to load, whose every test must then
//! pass); the baseline names the tests that passed on the base. The test gate passes only when
//! each of them is seen passing in that run's own results: a test that is skipped, deselected,
//! expected to fail, missing from the report, or hidden by a runner that ended before
//! reporting is a failure that says which test and why ([`Expect::check`]).

use std::collections::HashMap;

use serde::{Deserialize, Serialize};

use super::steering::Steer;
use super::test_results::{Case, Outcome, TestRun};

/// A test, or every test of a file, that must be seen passing.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct Wanted {
    /// The runner's name for it; none when the whole file (`unit`) is wanted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// Its file or target (`tests/test_new.py`, `tests/new.rs`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unit: Option<String>,
    /// How it went on the base, as the red proof saw it ("failed", "could not load: …").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub base: Option<String>,
}

impl Wanted {
    pub fn test(name: &str, unit: Option<&str>) -> Self {
        Self {
            name: Some(name.to_owned()),
            unit: unit.map(str::to_owned),
            base: None,
        }
    }

    /// Every test of `unit`: at least one, each passing.
    pub fn every_test_of(unit: &str) -> Self {
        Self {
            name: None,
            unit: Some(unit.to_owned()),
            base: None,
        }
    }

    /// With how it went on the base.
    pub fn at_base(mut self, base: &str) -> Self {
        self.base = Some(base.to_owned());
        self
    }

    /// The case as people read it: its name, or "the tests of `unit`".
    pub fn label(&self) -> String {
        match (&self.name, &self.unit) {
            (Some(n), _) => n.clone(),
            (None, Some(u)) => format!("the tests of {u}"),
            (None, None) => "a test".into(),
        }
    }

    /// Whether `case` is this test (or one of this file's tests). A name matches itself, or a
    /// suite's test of that title (`math > adds` for `adds`); units are compared when both are
    /// known.
    pub fn matches(&self, case: &Case) -> bool {
        match (&self.name, &self.unit) {
            (Some(n), unit) => {
                let named = case.name == *n || case.name.ends_with(&format!(" > {n}"));
                named && (unit.is_none() || case.unit.is_none() || case.unit == *unit)
            }
            (None, Some(u)) => case.unit.as_deref() == Some(u.as_str()),
            (None, None) => false,
        }
    }
}

/// A run's cases by name — and by each title a suite's test ends with (`adds` for
/// `math > adds`) — and by unit: a run of 50,000 tests judged against 50,000 wanted ones is
/// looked up, not scanned for each.
struct Index<'a> {
    by_name: HashMap<&'a str, Vec<&'a Case>>,
    by_unit: HashMap<&'a str, Vec<&'a Case>>,
}

impl<'a> Index<'a> {
    fn new(run: &'a TestRun) -> Self {
        let mut by_name: HashMap<&str, Vec<&Case>> = HashMap::new();
        let mut by_unit: HashMap<&str, Vec<&Case>> = HashMap::new();
        for c in &run.cases {
            by_name.entry(&c.name).or_default().push(c);
            for (at, sep) in c.name.match_indices(" > ") {
                by_name
                    .entry(&c.name[at + sep.len()..])
                    .or_default()
                    .push(c);
            }
            if let Some(u) = &c.unit {
                by_unit.entry(u).or_default().push(c);
            }
        }
        Self { by_name, by_unit }
    }

    /// The cases of the run `w` [matches](Wanted::matches), in the run's order.
    fn cases(&self, w: &Wanted) -> Vec<&'a Case> {
        let bucket = match (&w.name, &w.unit) {
            (Some(n), _) => self.by_name.get(n.as_str()),
            (None, Some(u)) => self.by_unit.get(u.as_str()),
            (None, None) => None,
        };
        bucket
            .map(|cs| cs.iter().copied().filter(|c| w.matches(c)).collect())
            .unwrap_or_default()
    }
}

/// One wanted test that was not seen passing, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unmet {
    pub test: String,
    /// "did not run: skipped (tests/test_x.py: skipped by conftest)", "failed: assert 2 == 3".
    pub why: String,
    /// One of the Breaker's tests (else a test that passed on the base).
    pub breaker: bool,
}

impl Unmet {
    /// "`tests/test_x.py::test_y` did not run: skipped (…)".
    pub fn describe(&self) -> String {
        format!("`{}` {}", self.test.replace('`', "'"), self.why)
    }
}

/// One of the Breaker's tests and how it went, on the base and on the change.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TestVerdict {
    pub test: String,
    pub base: String,
    pub head: String,
}

/// What the test gate must see passing.
#[derive(Debug, Clone, Default)]
pub struct Expect {
    /// The Breaker's tests.
    pub breaker: Vec<Wanted>,
    /// Tests that passed on the base.
    pub baseline: Vec<Wanted>,
    /// Files whose tests may be gone: changed on the base since the baseline (a rebase).
    pub excused: Vec<String>,
    /// Files the change edits that steer the tests: named as the likely cause of a miss, and
    /// they hold a passing run for a person.
    pub steering: Vec<Steer>,
    /// The person who approved the change with those files (`/hive approve`): their run counts.
    pub steering_approved_by: Option<String>,
    /// What lint and typecheck already report on the base: set aside, not the change's
    /// ([`super::debt`]).
    pub known_findings: Vec<super::debt::Known>,
}

impl Expect {
    pub fn is_empty(&self) -> bool {
        self.breaker.is_empty() && self.baseline.is_empty()
    }

    /// The wanted tests not seen passing in `run` (`None`: the output named no test at all),
    /// the Breaker's first. `ended` says how the command ended ("exit code 0").
    pub fn check(&self, run: Option<&TestRun>, ended: &str) -> Vec<Unmet> {
        let empty = TestRun::default();
        let run = run.unwrap_or(&empty);
        let excused = |w: &Wanted| {
            w.unit
                .as_ref()
                .is_some_and(|u| self.excused.iter().any(|e| e == u))
        };
        let index = Index::new(run);
        let breaker = self.breaker.iter().map(|w| (w, true));
        let baseline = self
            .baseline
            .iter()
            .filter(|w| !excused(w))
            .map(|w| (w, false));
        breaker
            .chain(baseline)
            .filter_map(|(w, breaker)| {
                let why = unmet(w, &index, run, ended)?;
                Some(Unmet {
                    test: w.label(),
                    why,
                    breaker,
                })
            })
            .collect()
    }

    /// The Breaker's tests with their verdicts on the base (what the red proof saw) and in
    /// `run`.
    pub fn verdicts(&self, run: Option<&TestRun>, ended: &str) -> Vec<TestVerdict> {
        let empty = TestRun::default();
        let run = run.unwrap_or(&empty);
        let index = Index::new(run);
        self.breaker
            .iter()
            .map(|w| {
                let head =
                    unmet(w, &index, run, ended).unwrap_or_else(|| match index.cases(w).len() {
                        1 => "passed".to_owned(),
                        n => format!("passed ({n} tests)"),
                    });
                TestVerdict {
                    test: w.label(),
                    base: w.base.clone().unwrap_or_else(|| "failed".into()),
                    head,
                }
            })
            .collect()
    }

    /// The lines a failing test gate adds for `unmet`: the first few, the count of the rest,
    /// and the steering files the change edits.
    pub fn report(&self, unmet: &[Unmet]) -> Vec<String> {
        const SHOWN: usize = 10;
        let mut lines: Vec<String> = unmet.iter().take(SHOWN).map(Unmet::describe).collect();
        if unmet.len() > SHOWN {
            lines.push(format!(
                "… and {} more not seen passing.",
                unmet.len() - SHOWN
            ));
        }
        if !self.steering.is_empty() {
            let files: Vec<String> = self.steering.iter().map(Steer::describe).collect();
            lines.push(format!(
                "The change edits files that steer which tests run and how: {}.",
                files.join(", ")
            ));
        }
        lines
    }
}

/// Why `w` was not seen passing in `run`; `None` when it was.
fn unmet(w: &Wanted, index: &Index<'_>, run: &TestRun, ended: &str) -> Option<String> {
    let seen = index.cases(w);
    if let Some(bad) = seen.iter().find(|c| c.outcome != Outcome::Passed) {
        let because = bad
            .why
            .as_deref()
            .map(|w| format!(": {w}"))
            .unwrap_or_default();
        return Some(match bad.outcome {
            Outcome::Skipped => format!(
                "did not run: skipped{}",
                bad.why
                    .as_deref()
                    .map(|w| format!(" ({w})"))
                    .unwrap_or_default()
            ),
            Outcome::Error => format!("errored{because}"),
            _ => format!("failed{because}"),
        });
    }
    if !seen.is_empty() {
        return None;
    }
    let unit = w.unit.as_deref();
    if let Some(u) = unit.and_then(|u| run.unloaded.iter().find(|l| l.unit == u)) {
        let why = u
            .why
            .first()
            .map(String::as_str)
            .unwrap_or("no reason printed");
        return Some(format!("did not run: {} could not load ({why})", u.unit));
    }
    let skip = unit.and_then(|u| {
        run.skips
            .iter()
            .find(|s| s.place.split(':').next() == Some(u))
    });
    if let Some(s) = skip {
        return Some(format!("did not run: skipped ({}: {})", s.place, s.why));
    }
    Some(
        if run.cases.is_empty() && run.unloaded.is_empty() && run.counts.total() == 0 {
            format!("did not run: the test command named no test ({ended})")
        } else if run.counts.skipped > 0 {
            format!(
                "did not run: missing from the report ({} test(s) were skipped or deselected)",
                run.counts.skipped
            )
        } else {
            "did not run: missing from the report".to_owned()
        },
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(text: &str) -> TestRun {
        TestRun::read(text).unwrap()
    }

    fn why(unmet: &[Unmet]) -> Vec<String> {
        unmet.iter().map(Unmet::describe).collect()
    }

    #[test]
    fn the_breakers_tests_pass_by_name_or_say_why_not() {
        let expect = Expect {
            breaker: vec![
                Wanted::test("tests/test_new.py::test_new", Some("tests/test_new.py")),
                Wanted::every_test_of("tests/test_new.py"),
            ],
            baseline: vec![Wanted::test(
                "tests/test_calc.py::test_add",
                Some("tests/test_calc.py"),
            )],
            ..Expect::default()
        };
        let green = run(
            "PASSED tests/test_calc.py::test_add\nPASSED tests/test_new.py::test_new\n2 passed in 0.1s",
        );
        assert_eq!(expect.check(Some(&green), "exit code 0"), []);

        let skipped = run("SKIPPED [2] tests/test_new.py: skipped by conftest\n2 skipped in 0.02s");
        assert_eq!(
            why(&expect.check(Some(&skipped), "exit code 0")),
            [
                "`tests/test_new.py::test_new` did not run: skipped (tests/test_new.py: skipped by conftest)",
                "`the tests of tests/test_new.py` did not run: skipped (tests/test_new.py: skipped by conftest)",
                "`tests/test_calc.py::test_add` did not run: missing from the report (2 test(s) were skipped or deselected)",
            ]
        );
        let exited = expect.check(None, "exit code 0");
        assert_eq!(exited.len(), 3);
        assert_eq!(
            exited[0].describe(),
            "`tests/test_new.py::test_new` did not run: the test command named no test (exit code 0)"
        );
        let deselected =
            run("PASSED tests/test_calc.py::test_add\n1 passed, 1 deselected in 0.02s");
        let unmet = expect.check(Some(&deselected), "exit code 0");
        assert_eq!(unmet.len(), 2);
        assert!(unmet.iter().all(|u| u.breaker));
        let xfail = run(
            "PASSED tests/test_calc.py::test_add\nXFAIL tests/test_new.py::test_new - conftest\n1 passed, 1 xfailed in 0.1s",
        );
        assert_eq!(
            why(&expect.check(Some(&xfail), "exit code 0"))[0],
            "`tests/test_new.py::test_new` did not run: skipped (conftest)"
        );
    }

    #[test]
    fn a_file_wanted_whole_needs_each_of_its_tests_and_at_least_one() {
        let expect = Expect {
            breaker: vec![Wanted::every_test_of("tests/new.rs")],
            ..Expect::default()
        };
        let some = run(
            "     Running tests/new.rs (x)\ntest adds ... ok\ntest subs ... FAILED\ntest result: FAILED. 1 passed; 1 failed;",
        );
        assert_eq!(
            why(&expect.check(Some(&some), "exit code 101")),
            ["`the tests of tests/new.rs` failed"]
        );
        let other =
            run("     Running tests/old.rs (x)\ntest adds ... ok\ntest result: ok. 1 passed;");
        assert_eq!(
            why(&expect.check(Some(&other), "exit code 0")),
            ["`the tests of tests/new.rs` did not run: missing from the report"]
        );
    }

    #[test]
    fn tests_of_files_the_base_changed_since_are_excused_and_suites_match_titles() {
        let expect = Expect {
            baseline: vec![Wanted::test("test_gone", Some("tests/gone.rs"))],
            breaker: vec![Wanted::test("mul", None)],
            excused: vec!["tests/gone.rs".into()],
            ..Expect::default()
        };
        let tap = run(
            "TAP version 13\n# Subtest: math\n    # Subtest: mul\n    ok 1 - mul\n    1..1\nok 1 - math\n# tests 1\n# pass 1",
        );
        assert_eq!(expect.check(Some(&tap), "exit code 0"), []);
    }

    #[test]
    fn the_report_is_short_and_names_the_steering_files() {
        let expect = Expect {
            steering: vec![Steer {
                path: "conftest.py".into(),
                how: "added".into(),
            }],
            ..Expect::default()
        };
        let many: Vec<Unmet> = (0..12)
            .map(|i| Unmet {
                test: format!("t{i}"),
                why: "did not run".into(),
                breaker: false,
            })
            .collect();
        let lines = expect.report(&many);
        assert_eq!(lines.len(), 12);
        assert_eq!(lines[10], "… and 2 more not seen passing.");
        assert_eq!(
            lines[11],
            "The change edits files that steer which tests run and how: `conftest.py` (added)."
        );
    }
}
