//! Each test's outcome by name, as the gates read it ([`crate::gates::test_results`]): pytest's
//! `-rA` summary, libtest's lines, `go test -v` and the other runners the gates know. A name
//! seen several times (the same libtest name in two test binaries) passed only if it passed
//! every time.

use std::collections::BTreeMap;

use crate::gates::test_results::{Outcome as Seen, TestRun};

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
    for case in TestRun::read(output).map(|r| r.cases).unwrap_or_default() {
        let o = match case.outcome {
            Seen::Passed => Outcome::Passed,
            Seen::Failed | Seen::Error => Outcome::Failed,
            Seen::Skipped => Outcome::Skipped,
        };
        let slot = out.entry(case.name).or_insert(o);
        if o == Outcome::Failed || (*slot == Outcome::Skipped && o == Outcome::Passed) {
            *slot = o;
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
