//! Each test's outcome, read from a test run's output as the runners print them: pytest's
//! `-rA` summary (`PASSED tests/test_x.py::test_a`, `FAILED … - reason`, `ERROR …`), libtest's
//! lines (`test name ... ok`, `... FAILED`, `... ignored`) and `go test -v` (`--- PASS: TestX`,
//! `--- FAIL: TestX`, subtests as `TestX/case`). A name seen several times (the same libtest
//! name in two test binaries) passed only if it passed every time.

use std::collections::BTreeMap;

/// How a named test went.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    Passed,
    Failed,
    Skipped,
}

/// Every test the output names, with its outcome.
pub fn read(output: &str) -> BTreeMap<String, Outcome> {
    let mut out: BTreeMap<String, Outcome> = BTreeMap::new();
    let mut note = |name: &str, o: Outcome| {
        let name = name.trim();
        if name.is_empty() || name.contains(char::is_whitespace) && !name.contains("::") {
            return;
        }
        let slot = out.entry(name.to_owned()).or_insert(o);
        if o == Outcome::Failed || (*slot == Outcome::Skipped && o == Outcome::Passed) {
            *slot = o;
        }
    };
    for line in output.lines() {
        let line = line.trim_end();
        // pytest -rA: `PASSED id`, `FAILED id - message`, `ERROR id - message`, `SKIPPED [1] …`.
        for (word, o) in [
            ("PASSED ", Outcome::Passed),
            ("XPASS ", Outcome::Passed),
            ("FAILED ", Outcome::Failed),
            ("ERROR ", Outcome::Failed),
        ] {
            if let Some(rest) = line.strip_prefix(word)
                && rest.contains("::")
            {
                note(rest.split(" - ").next().unwrap_or(rest), o);
            }
        }
        // libtest: `test tests::adds ... ok`.
        if let Some(rest) = line.strip_prefix("test ")
            && let Some((name, result)) = rest.rsplit_once(" ... ")
        {
            let o = match result.trim() {
                "ok" => Some(Outcome::Passed),
                "FAILED" => Some(Outcome::Failed),
                r if r.starts_with("ignored") => Some(Outcome::Skipped),
                _ => None,
            };
            if let Some(o) = o {
                note(name, o);
            }
        }
        // go test -v: `--- PASS: TestHalf (0.00s)`, indented for subtests.
        let t = line.trim_start();
        for (word, o) in [
            ("--- PASS: ", Outcome::Passed),
            ("--- FAIL: ", Outcome::Failed),
            ("--- SKIP: ", Outcome::Skipped),
        ] {
            if let Some(rest) = t.strip_prefix(word) {
                note(rest.split(" (").next().unwrap_or(rest), o);
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use Outcome::*;

    #[test]
    fn pytest_libtest_and_go_outcomes_are_read_by_name() {
        let out = "\
============ short test summary info ============
PASSED tests/test_calc.py::test_add
PASSED tests/test_calc.py::AddTest::test_adds
FAILED tests/test_calc.py::test_sub - AssertionError: assert -1 == 5
ERROR tests/test_io.py::test_read - FileNotFoundError
test tests::shows_digits ... ok
test shows_the_number_itself ... FAILED
test slow ... ignored, takes a minute
test shows_the_number_itself ... ok
=== RUN   TestHalf
--- PASS: TestHalf (0.00s)
    --- FAIL: TestHalf/odd (0.00s)
--- SKIP: TestNet (0.00s)
test result: FAILED. 1 passed; 1 failed
";
        let got = read(out);
        let want = [
            ("tests/test_calc.py::test_add", Passed),
            ("tests/test_calc.py::AddTest::test_adds", Passed),
            ("tests/test_calc.py::test_sub", Failed),
            ("tests/test_io.py::test_read", Failed),
            ("tests::shows_digits", Passed),
            // Failed in one binary, passed in another: failed.
            ("shows_the_number_itself", Failed),
            ("slow", Skipped),
            ("TestHalf", Passed),
            ("TestHalf/odd", Failed),
            ("TestNet", Skipped),
        ];
        for (name, o) in want {
            assert_eq!(got.get(name), Some(&o), "{name}: {got:?}");
        }
        assert_eq!(got.len(), want.len(), "{got:?}");
    }
}
