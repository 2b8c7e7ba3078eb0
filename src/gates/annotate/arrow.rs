//! Diagnostics whose location is on the line after their header, ` --> path:line:col`: rustc's
//! human output (`cargo build`, `cargo test` failing to compile, clippy) and ruff's default
//! (full) output.
//!
//! ```text
//! error[E0308]: mismatched types
//!  --> src/main.rs:9:18
//!
//! F401 [*] `os` imported but unused
//!  --> pkg/calc.py:1:8
//! ```
//!
//! rustc: `error` is a Failure, `warning` a Warning, and `note:` / `help:` sub-diagnostics are
//! skipped; the title is the error code, or the lint named in the `#[warn(…)]` note. ruff: the
//! rule code (`F401`, `invalid-syntax`) is the title, the level as for the concise output.

use crate::annotation::{Annotation, Level};

use super::paths::Roots;
use super::{Found, level_of, lint, text};

pub fn parse(lines: &[&str], _roots: &Roots) -> Vec<Found> {
    let mut out = Vec::new();
    for (at, pair) in lines.windows(2).enumerate() {
        let &[head, next] = pair else {
            continue;
        };
        let Some(place) = next.trim_start().strip_prefix("--> ") else {
            continue;
        };
        let Some((level, title, message)) = header(head) else {
            continue;
        };
        let Some((path, line, column)) = text::trailing_location(place.trim()) else {
            continue;
        };
        let mut annotation = Annotation::new(path, line, level, message);
        if let Some(c) = column {
            annotation = annotation.with_column(c);
        }
        let lint = || lint_name(lines.get(at + 2..).unwrap_or_default());
        if let Some(t) = title.or_else(lint) {
            annotation = annotation.with_title(t);
        }
        out.push(Found::new(at, annotation));
    }
    out
}

/// Level, title and message of a header line.
fn header(line: &str) -> Option<(Level, Option<&str>, &str)> {
    if line.starts_with(char::is_whitespace) {
        return None;
    }
    if let Some((word, message)) = line.split_once(": ") {
        let (word, code) = match word.split_once('[') {
            Some((w, c)) => (w, Some(c.strip_suffix(']')?)),
            None => (word, None),
        };
        match word {
            "error" | "warning" => return Some((level_of(word)?, code, message)),
            "note" | "help" => return None,
            _ => {}
        }
    }
    let (code, message) = lint::coded(line)?;
    Some((lint::code_level(code), Some(code), message))
}

/// `unused_variables` of the note `` = note: `#[warn(unused_variables)]` (part of …) on by
/// default `` within the diagnostic (up to its blank line).
fn lint_name<'a>(rest: &[&'a str]) -> Option<&'a str> {
    let body = rest.iter().take_while(|l| !l.trim().is_empty());
    body.filter_map(|l| {
        let (_, after) = l
            .split_once("#[warn(")
            .or_else(|| l.split_once("#[deny("))?;
        after.split_once(")]").map(|(name, _)| name)
    })
    .next()
}

#[cfg(test)]
mod tests {
    use super::super::{parse, tests::show};

    #[test]
    fn rustc_human_output() {
        let out = include_str!("../../../tests/fixtures/tool-output/cargo-human.txt");
        let want = [
            "src/main.rs:9:18 failure [E0308] mismatched types",
            "src/main.rs:12:9 failure [E0308] mismatched types",
            "warnlib/src/lib.rs:2:9 warning [unused_variables] unused variable: `unused`",
            "warnlib/src/lib.rs:6:4 warning [dead_code] function `never_called` is never used",
            "warnlib/src/lib.rs:13:5 warning [unused_must_use] unused `Result` that must be used",
            "src/main.rs:1:5 warning [unused_imports] unused import: `std::collections::HashMap`",
        ];
        assert_eq!(show(&parse("build", out, &["/tmp/brokencrate/"])), want);
    }

    #[test]
    fn ruff_full_output() {
        let out = include_str!("../../../tests/fixtures/tool-output/ruff-full.txt");
        let want = [
            "pkg/calc.py:1:8 failure [F401] `os` imported but unused",
            "pkg/calc.py:2:8 failure [F401] `sys` imported but unused",
            "pkg/calc.py:10:5 failure [F841] Local variable `unused` is assigned to but never used",
            "pkg/typed.py:13:1 failure [F821] Undefined name `reveal_type`",
            "pkg/typed.py:14:5 failure [F821] Undefined name `undefined_name`",
            "tests/test_broken.py:1:13 failure [invalid-syntax] Expected a parameter or the end of the parameter list",
            "tests/test_broken.py:1:14 failure [invalid-syntax] Expected `)`, found newline",
            "tests/test_imports.py:1:8 failure [F401] `not_a_module` imported but unused",
        ];
        assert_eq!(show(&parse("lint", out, &[])), want);
    }

    #[test]
    fn notes_and_headers_without_a_location_are_skipped() {
        let out = "note: function defined here\n  --> src/main.rs:3:4\nerror: could not compile `x`\n\n\
                   warning: w\n --> src/a.rs:1\n   = note: `#[deny(x)]` on by default\n";
        assert_eq!(
            show(&parse("build", out, &[])),
            ["src/a.rs:1 warning [x] w"]
        );
    }
}
