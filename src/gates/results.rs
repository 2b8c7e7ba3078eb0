//! What a test run printed: how many tests passed, failed, errored or were skipped, and which
//! failed — read from the runner's own summary, in every ecosystem: pytest and unittest, libtest
//! (`cargo test`, one summary per test binary, summed), `go test -v` (`--- FAIL: TestX`, and a
//! package that did not build), Jest, Vitest, Node's test runner (TAP and spec reporters), and
//! JUnit XML reports (`gates.test_report`) for any other runner. Several runners in one output
//! (a polyglot repository's `(pytest) && (go test)`) are summed.

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

/// A test run's counts and the names of the tests that failed (as the runner names them:
/// `tests/test_a.py::test_x`, `tests::adds`, `TestParse`, `suite › case`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TestRun {
    pub counts: TestCounts,
    pub failing: Vec<String>,
}

type Reader = fn(&[&str]) -> Option<TestRun>;

impl TestRun {
    /// Every runner summary found in `output`, summed; `None` when no runner printed one.
    pub fn read(output: &str) -> Option<Self> {
        let lines: Vec<&str> = output.lines().collect();
        let readers: [Reader; 5] = [
            |l| pytest(l).or_else(|| unittest(l)),
            libtest,
            go_test,
            |l| jest(l).or_else(|| vitest(l)),
            node_test,
        ];
        let mut found = None::<TestRun>;
        for r in readers {
            if let Some(run) = r(&lines) {
                let all = found.get_or_insert_with(TestRun::default);
                all.counts.add(&run.counts);
                all.failing.extend(run.failing);
            }
        }
        found
    }

    /// Every test that failed already failed on the base (`known`), and none could not run:
    /// the run shows nothing the change broke.
    pub fn only_known(&self, known: &[String]) -> bool {
        self.counts.errors == 0
            && !self.failing.is_empty()
            && self.failing.iter().all(|f| known.contains(f))
    }

    /// A JUnit XML report (`<testsuites>` or one `<testsuite>`); `None` when it is not one.
    pub fn read_junit(xml: &str) -> Option<Self> {
        let doc = roxmltree::Document::parse(xml).ok()?;
        let root = doc.root_element();
        if !matches!(root.tag_name().name(), "testsuites" | "testsuite") {
            return None;
        }
        let mut run = TestRun::default();
        for case in root.descendants().filter(|n| n.has_tag_name("testcase")) {
            let child = |name: &str| case.children().any(|c| c.has_tag_name(name));
            let name = match case.attribute("classname") {
                Some(c) if !c.is_empty() => {
                    format!("{c}.{}", case.attribute("name").unwrap_or_default())
                }
                _ => case.attribute("name").unwrap_or_default().to_owned(),
            };
            if child("failure") {
                run.counts.failed += 1;
                run.failing.push(name);
            } else if child("error") {
                run.counts.errors += 1;
                run.failing.push(name);
            } else if child("skipped") {
                run.counts.skipped += 1;
            } else {
                run.counts.passed += 1;
            }
        }
        Some(run)
    }
}

fn number(word: Option<&str>) -> Option<u64> {
    word?.trim().parse().ok()
}

/// `== 2 passed, 1 failed in 0.1s ==` and `FAILED tests/test_a.py::test_x - assert …`.
fn pytest(lines: &[&str]) -> Option<TestRun> {
    let line = lines.iter().rev().find(|l| {
        let l = l.trim().trim_matches('=').trim();
        (l.contains(" passed") || l.contains(" failed") || l.contains(" error"))
            && l.contains(" in ")
    })?;
    let body = line.trim().trim_matches('=').trim();
    let body = body.rsplit_once(" in ").map(|(b, _)| b).unwrap_or(body);
    let counts = TestCounts::from_parts(body.split(','));
    let failing = lines
        .iter()
        .filter_map(|l| {
            let rest = l
                .strip_prefix("FAILED ")
                .or_else(|| l.strip_prefix("ERROR "))?;
            Some(rest.split(" - ").next()?.trim().to_owned())
        })
        .collect();
    (counts.total() > 0).then_some(TestRun { counts, failing })
}

/// `Ran 3 tests` … `FAILED (failures=1, errors=1)` / `OK`, and `FAIL: test_x (mod.Case.test_x)`.
fn unittest(lines: &[&str]) -> Option<TestRun> {
    let ran = lines.iter().rev().find_map(|l| {
        let rest = l.trim().strip_prefix("Ran ")?;
        number(rest.split_whitespace().next())
    })?;
    let verdict = lines
        .iter()
        .rev()
        .find(|l| l.starts_with("OK") || l.starts_with("FAILED"))?;
    let mut counts = TestCounts::default();
    let inside = verdict
        .split_once('(')
        .map(|(_, r)| r.trim_end_matches(')'))
        .unwrap_or("");
    for part in inside.split(',') {
        let Some((k, v)) = part.trim().split_once('=') else {
            continue;
        };
        let Some(v) = number(Some(v)) else { continue };
        match k {
            "failures" => counts.failed += v,
            "expected failures" => counts.skipped += v,
            other => counts.bump(other, v),
        }
    }
    counts.passed = ran.saturating_sub(counts.failed + counts.errors + counts.skipped);
    let failing = lines
        .iter()
        .filter_map(|l| {
            let rest = l
                .strip_prefix("FAIL: ")
                .or_else(|| l.strip_prefix("ERROR: "))?;
            Some(rest.split(' ').next()?.to_owned())
        })
        .collect();
    Some(TestRun { counts, failing })
}

/// `test result: FAILED. 1 passed; 1 failed; 2 ignored; …` (every test binary's, summed) and
/// `test tests::adds ... FAILED`.
fn libtest(lines: &[&str]) -> Option<TestRun> {
    let mut run = TestRun::default();
    let mut seen = false;
    for l in lines {
        let l = l.trim();
        if let Some(rest) = l.strip_prefix("test result: ") {
            seen = true;
            let body = rest.split_once(". ").map(|(_, b)| b).unwrap_or(rest);
            run.counts.add(&TestCounts::from_parts(body.split(';')));
        } else if let Some(name) = l
            .strip_prefix("test ")
            .and_then(|r| r.strip_suffix(" ... FAILED"))
        {
            run.failing.push(name.to_owned());
        }
    }
    seen.then_some(run)
}

/// `go test -v`: `--- PASS: TestX (0.00s)`, `--- FAIL: …`, `--- SKIP: …` (subtests too), and
/// `FAIL pkg [build failed]` / `[setup failed]` for a package that did not build (an error).
fn go_test(lines: &[&str]) -> Option<TestRun> {
    let mut run = TestRun::default();
    let mut seen = false;
    for l in lines {
        let t = l.trim_start();
        let verdict = |prefix: &str| {
            t.strip_prefix(prefix)
                .and_then(|r| r.split_whitespace().next())
                .map(str::to_owned)
        };
        if verdict("--- PASS: ").is_some() {
            run.counts.passed += 1;
            seen = true;
        } else if let Some(name) = verdict("--- FAIL: ") {
            run.counts.failed += 1;
            run.failing.push(name);
            seen = true;
        } else if verdict("--- SKIP: ").is_some() {
            run.counts.skipped += 1;
            seen = true;
        } else if t.starts_with("FAIL")
            && (t.ends_with("[build failed]") || t.ends_with("[setup failed]"))
        {
            run.counts.errors += 1;
            run.failing
                .push(t.split_whitespace().nth(1).unwrap_or_default().to_owned());
            seen = true;
        }
    }
    seen.then_some(run)
}

/// Jest: `Tests:       1 failed, 3 passed, 4 total` and `  ● Suite › case`.
fn jest(lines: &[&str]) -> Option<TestRun> {
    let line = lines.iter().rev().find_map(|l| {
        let rest = l.trim().strip_prefix("Tests:")?;
        rest.contains(" total").then_some(rest)
    })?;
    let counts = TestCounts::from_parts(line.split(','));
    let mut failing: Vec<String> = lines
        .iter()
        .filter_map(|l| Some(l.trim().strip_prefix("● ")?.trim().to_owned()))
        .filter(|n| !n.starts_with("Test suite failed to run"))
        .collect();
    failing.dedup();
    Some(TestRun { counts, failing })
}

/// Vitest: ` Tests  1 failed | 3 passed (4)` and ` FAIL  src/a.test.ts > suite > case`.
fn vitest(lines: &[&str]) -> Option<TestRun> {
    let line = lines.iter().rev().find_map(|l| {
        let rest = l.trim().strip_prefix("Tests ")?;
        rest.trim_end().ends_with(')').then_some(rest)
    })?;
    let body = line.rsplit_once('(').map(|(b, _)| b).unwrap_or(line);
    let counts = TestCounts::from_parts(body.split('|'));
    let failing = lines
        .iter()
        .filter_map(|l| {
            let rest = l.trim().strip_prefix("FAIL ")?.trim();
            rest.contains(" > ").then(|| rest.to_owned())
        })
        .collect();
    (counts.total() > 0).then_some(TestRun { counts, failing })
}

/// Node's test runner: `# pass 3` / `# fail 1` (TAP) or `ℹ pass 3` (spec), and `not ok 2 - name`.
fn node_test(lines: &[&str]) -> Option<TestRun> {
    let mut counts = TestCounts::default();
    let mut seen = false;
    for l in lines {
        let t = l.trim();
        let Some(rest) = t.strip_prefix("# ").or_else(|| t.strip_prefix("ℹ ")) else {
            continue;
        };
        let mut w = rest.split_whitespace();
        let (Some(what), Some(n), None) = (w.next(), number(w.next()), w.next()) else {
            continue;
        };
        seen |= what == "tests";
        counts.bump(what, n);
    }
    let failing = lines
        .iter()
        .filter_map(|l| {
            let rest = l.trim().strip_prefix("not ok ")?;
            Some(rest.split_once(" - ")?.1.trim().to_owned())
        })
        .collect();
    seen.then_some(TestRun { counts, failing })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn counts(passed: u64, failed: u64, errors: u64, skipped: u64) -> TestCounts {
        TestCounts {
            passed,
            failed,
            errors,
            skipped,
        }
    }

    #[test]
    fn pytest_and_unittest() {
        let out = "FAILED tests/test_a.py::test_x - assert 1 == 2\n== 1 failed, 2 passed, 1 skipped in 0.12s ==";
        let r = TestRun::read(out).unwrap();
        assert_eq!(r.counts, counts(2, 1, 0, 1));
        assert_eq!(r.failing, ["tests/test_a.py::test_x"]);
        let out = "FAIL: test_add (test_calc.CalcTest.test_add)\n----\nRan 3 tests in 0.001s\n\nFAILED (failures=1)";
        let r = TestRun::read(out).unwrap();
        assert_eq!(r.counts, counts(2, 1, 0, 0));
        assert_eq!(r.failing, ["test_add"]);
        assert_eq!(TestRun::read("no tests here"), None);
    }

    #[test]
    fn libtest_sums_every_binary() {
        let out = "running 2 tests\ntest tests::adds ... FAILED\ntest tests::subs ... ok\n\ntest result: FAILED. 1 passed; 1 failed; 1 ignored; 0 measured; 0 filtered out; finished in 0.00s\n\n   Doc-tests x\n\nrunning 1 test\ntest src/lib.rs - f (line 3) ... ok\n\ntest result: ok. 1 passed; 0 failed; 0 ignored; 0 measured; 0 filtered out; finished in 0.01s";
        let r = TestRun::read(out).unwrap();
        assert_eq!(r.counts, counts(2, 1, 0, 1));
        assert_eq!(r.failing, ["tests::adds"]);
        // A crate that does not compile printed no summary.
        assert_eq!(
            TestRun::read("error[E0425]: cannot find value `x`\nerror: could not compile `x`"),
            None
        );
    }

    #[test]
    fn go_test_verbose_and_packages_that_do_not_build() {
        let out = "=== RUN   TestParse\n--- FAIL: TestParse (0.00s)\n    parse_test.go:9: got 1\n=== RUN   TestSplit\n=== RUN   TestSplit/empty\n--- PASS: TestSplit (0.00s)\n    --- PASS: TestSplit/empty (0.00s)\nFAIL\nFAIL\texample.com/x\t0.002s\nFAIL\texample.com/y [build failed]\nok  \texample.com/z\t0.001s";
        let r = TestRun::read(out).unwrap();
        assert_eq!(r.counts, counts(2, 1, 1, 0));
        assert_eq!(r.failing, ["TestParse", "example.com/y"]);
    }

    #[test]
    fn jest_vitest_and_node() {
        let jest = "  ● math › adds\n\n    expect(received).toBe(expected)\n\nTests:       1 failed, 3 passed, 4 total\nSnapshots:   0 total";
        let r = TestRun::read(jest).unwrap();
        assert_eq!(r.counts, counts(3, 1, 0, 0));
        assert_eq!(r.failing, ["math › adds"]);
        let vitest = " FAIL  src/a.test.ts > math > adds\n\n Test Files  1 failed (1)\n      Tests  1 failed | 3 passed (4)";
        let r = TestRun::read(vitest).unwrap();
        assert_eq!(r.counts, counts(3, 1, 0, 0));
        assert_eq!(r.failing, ["src/a.test.ts > math > adds"]);
        let tap = "TAP version 13\nok 1 - adds\nnot ok 2 - splits\n1..2\n# tests 2\n# suites 0\n# pass 1\n# fail 1\n# cancelled 0\n# skipped 0\n# todo 0\n# duration_ms 40";
        let r = TestRun::read(tap).unwrap();
        assert_eq!(r.counts, counts(1, 1, 0, 0));
        assert_eq!(r.failing, ["splits"]);
        let spec = "✔ adds (0.5ms)\nℹ tests 1\nℹ pass 1\nℹ fail 0";
        assert_eq!(TestRun::read(spec).unwrap().counts, counts(1, 0, 0, 0));
    }

    #[test]
    fn several_runners_are_summed() {
        let out = "== 2 passed in 0.1s ==\n--- PASS: TestA (0.00s)\nok  \tx\t0.1s";
        assert_eq!(TestRun::read(out).unwrap().counts, counts(3, 0, 0, 0));
    }

    #[test]
    fn a_run_that_fails_only_where_the_base_did_shows_nothing_new() {
        let known = vec!["tests::old".to_owned()];
        let run = |failing: &[&str], errors| TestRun {
            counts: counts(1, failing.len() as u64, errors, 0),
            failing: failing.iter().map(|f| (*f).to_owned()).collect(),
        };
        assert!(run(&["tests::old"], 0).only_known(&known));
        assert!(!run(&["tests::old", "tests::new"], 0).only_known(&known));
        // A test that could not run, or a failure without names, is never excused.
        assert!(!run(&["tests::old"], 1).only_known(&known));
        assert!(!run(&[], 0).only_known(&known));
    }

    #[test]
    fn junit_reports() {
        let xml = r#"<?xml version="1.0"?>
<testsuites><testsuite name="s" tests="4">
  <testcase classname="calc" name="adds"/>
  <testcase classname="calc" name="subs"><failure message="no">x</failure></testcase>
  <testcase name="boom"><error/></testcase>
  <testcase name="later"><skipped/></testcase>
</testsuite></testsuites>"#;
        let r = TestRun::read_junit(xml).unwrap();
        assert_eq!(r.counts, counts(1, 1, 1, 1));
        assert_eq!(r.failing, ["calc.subs", "boom"]);
        assert_eq!(TestRun::read_junit("<html/>"), None);
        assert_eq!(TestRun::read_junit("not xml"), None);
    }
}
