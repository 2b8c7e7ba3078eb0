//! Python's unittest (`python -m unittest`). Each failure or error is a block between rules:
//!
//! ```text
//! ======================================================================
//! FAIL: test_adds (test_unit.AddTest.test_adds)
//! ----------------------------------------------------------------------
//! Traceback (most recent call last):
//!   File "/work/test_unit.py", line 8, in test_adds
//!     self.assertEqual(add(1, 2), 3)
//! AssertionError: -1 != 3
//! ```
//!
//! It is put on the innermost frame in the repository, with the exception line as message and
//! the test id (`test_unit.AddTest.test_adds`) as title; level Failure.

use super::paths::Roots;
use super::{Found, traceback};
use crate::annotation::{Annotation, Level};

pub fn parse(lines: &[&str], roots: &Roots) -> Vec<Found> {
    let mut out = Vec::new();
    for (at, line) in lines.iter().enumerate() {
        let Some(name) = line
            .strip_prefix("FAIL: ")
            .or_else(|| line.strip_prefix("ERROR: "))
        else {
            continue;
        };
        if !at
            .checked_sub(1)
            .and_then(|i| lines.get(i))
            .is_some_and(|l| is_rule(l, '='))
        {
            continue;
        }
        let mut start = at + 1;
        if lines.get(start).is_some_and(|l| is_rule(l, '-')) {
            start += 1;
        }
        let body = lines.get(start..).unwrap_or_default();
        let end = body
            .iter()
            .position(|l| is_rule(l, '=') || is_rule(l, '-'))
            .unwrap_or(body.len());
        let crashes = traceback::crashes(body.get(..end).unwrap_or_default());
        let Some(crash) = crashes.last() else {
            continue;
        };
        let Some(frame) = crash.last_in_repo(roots) else {
            continue;
        };
        let annotation = Annotation::new(frame.path, frame.line, Level::Failure, crash.exception)
            .with_title(test_id(name.trim()));
        out.push(Found::new(at, annotation));
    }
    out
}

/// `test_unit.AddTest.test_adds` of `test_adds (test_unit.AddTest.test_adds)` (Python 3.11+)
/// or of `test_adds (test_unit.AddTest)` (older); a sub-test's `(i=1)` is kept.
fn test_id(name: &str) -> String {
    let Some((method, rest)) = name.split_once(" (") else {
        return name.to_owned();
    };
    let (class, extra) = rest.split_once(')').unwrap_or((rest, ""));
    let id = if class.ends_with(&format!(".{method}")) {
        class.to_owned()
    } else {
        format!("{class}.{method}")
    };
    format!("{id}{extra}")
}

/// A line of at least 20 `c`s, as unittest draws between blocks.
fn is_rule(line: &str, c: char) -> bool {
    let line = line.trim_end();
    line.len() >= 20 && line.chars().all(|x| x == c)
}

#[cfg(test)]
mod tests {
    use super::super::{parse, tests::show};
    use super::test_id;

    #[test]
    fn failures_and_errors_on_the_innermost_repository_frame() {
        let out = include_str!("../../../tests/fixtures/tool-output/unittest-failure.txt");
        let want = [
            "test_unit.py:11 failure [test_unit.AddTest.test_error] ValueError: bad value",
            "test_unit.py:8 failure [test_unit.AddTest.test_adds] AssertionError: -1 != 3",
        ];
        // Run on the host: absolute paths under the worktree.
        assert_eq!(show(&parse("test", out, &["/tmp/work/"])), want);
        assert_eq!(parse("test", out, &["/elsewhere/"]), vec![]);
    }

    #[test]
    fn test_ids() {
        assert_eq!(
            test_id("test_adds (test_calc.AddTest.test_adds)"),
            "test_calc.AddTest.test_adds"
        );
        assert_eq!(
            test_id("test_adds (test_calc.AddTest)"),
            "test_calc.AddTest.test_adds"
        );
        assert_eq!(test_id("test_x (m.C.test_x) (i=1)"), "m.C.test_x (i=1)");
        assert_eq!(test_id("setUpClass (m.C)"), "m.C.setUpClass");
        assert_eq!(test_id("odd"), "odd");
    }

    #[test]
    fn a_frame_in_a_library_is_skipped() {
        let rule = |c: &str| c.repeat(70);
        let out = format!(
            "{}\nERROR: test_a (t.T.test_a)\n{}\nTraceback (most recent call last):\n  File \"/work/t.py\", line 4, in test_a\n    \
             json.loads('')\n  File \"/usr/lib/python3.12/json/__init__.py\", line 346, in loads\n    return x\n\
             json.decoder.JSONDecodeError: Expecting value\n\n{}\nRan 1 test in 0.001s\n",
            rule("="),
            rule("-"),
            rule("-")
        );
        let want = ["t.py:4 failure [t.T.test_a] json.decoder.JSONDecodeError: Expecting value"];
        assert_eq!(show(&parse("test", &out, &["/work/"])), want);
    }
}
