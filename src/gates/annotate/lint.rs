//! One finding a line, `path:line[:col]: …`, as flake8, ruff, mypy, eslint and compilers print:
//!
//! ```text
//! ./pkg/calc.py:1:1: F401 'os' imported but unused                         (flake8)
//! pkg/calc.py:1:8: F401 [*] `os` imported but unused                       (ruff --output-format=concise)
//! tests/test_broken.py:1:13: invalid-syntax: Expected a parameter …        (ruff, a syntax error)
//! pkg/typed.py:5:16: error: Argument 1 to "add" has incompatible type …  [arg-type]   (mypy)
//! /work/web/src/app.js:1:10: 'addOne' is defined but never used. [Error/no-unused-vars]   (eslint -f unix)
//! src/main.rs:9:18: error[E0308]: mismatched types                         (rustc --error-format=short)
//! ```
//!
//! A severity word (`error`, `warning`, `note`; eslint's `[Error/…]`, `[Warning/…]`) gives the
//! level. A rule code (`F401`, `invalid-syntax`) gives the title; such findings make the tool fail
//! and are Failures, except pycodestyle's `W…` codes, which are Warnings. mypy's `[arg-type]`,
//! rustc's `[E0308]` and eslint's rule id are the title too. Lines with neither a severity nor a
//! column and a code (pytest's `tests/test_calc.py:7: AssertionError`) are not lint findings.
//!
//! The eslint fixture (`eslint-unix.txt`) was written by hand: npm's registry is unreachable
//! where these tests were made. It follows the unix formatter's documented format,
//! `${filePath}:${line}:${column}: ${message} [${Error|Warning}${ruleId ? "/" + ruleId : ""}]`.

use super::paths::Roots;
use super::{Found, level_of, text};
use crate::annotation::{Annotation, Level};

pub fn parse(lines: &[&str], _roots: &Roots) -> Vec<Found> {
    let mut found: Vec<Found> = Vec::new();
    // The output line the last finding ended on: a note folds only into the line just above.
    let mut last_at = usize::MAX;
    for (at, line) in lines.iter().enumerate() {
        let Some(annotation) = finding(line) else {
            continue;
        };
        match found.last_mut() {
            Some(prev)
                if last_at.wrapping_add(1) == at && explains(&prev.annotation, &annotation) =>
            {
                prev.annotation.message.push_str("; ");
                prev.annotation.message.push_str(&annotation.message);
            }
            _ => found.push(Found::new(at, annotation)),
        }
        last_at = at;
    }
    found
}

/// Whether `note` is mypy's continuation of `finding` (`a.py:9: error: …` then `a.py:9: note:
/// Hint: …` on the next line): one finding, not two.
fn explains(finding: &Annotation, note: &Annotation) -> bool {
    note.level == Level::Notice
        && finding.level != Level::Notice
        && note.path == finding.path
        && note.start_line == finding.start_line
}

fn finding(line: &str) -> Option<Annotation> {
    let loc = text::location(line)?;
    let rest = loc.rest.strip_prefix(' ')?.trim();
    let (level, title, message) = match eslint(rest) {
        // eslint's paths may hold spaces (`/var/lib/jenkins/workspace/eslint Release/…`).
        Some(found) if loc.column.is_some() => found,
        _ if loc.path.contains(char::is_whitespace) => return None,
        _ => match severity(rest) {
            Some(found) => found,
            None => {
                loc.column?;
                let (code, message) = coded(rest)?;
                (code_level(code), Some(code), message)
            }
        },
    };
    let mut annotation = Annotation::new(loc.path, loc.line, level, message);
    if let Some(c) = loc.column {
        annotation = annotation.with_column(c);
    }
    if let Some(t) = title {
        annotation = annotation.with_title(t);
    }
    Some(annotation)
}

type Parts<'a> = (Level, Option<&'a str>, &'a str);

/// `message [Error/rule]`, `message [Warning]`.
fn eslint(rest: &str) -> Option<Parts<'_>> {
    let (message, tag) = rest.strip_suffix(']')?.rsplit_once(" [")?;
    let (word, rule) = match tag.split_once('/') {
        Some((w, r)) => (w, Some(r)),
        None => (tag, None),
    };
    if !matches!(word, "Error" | "Warning") {
        return None;
    }
    Some((level_of(word)?, rule, message))
}

/// `error: message  [code]` (mypy), `error[E0308]: message` (rustc, gcc's `fatal error:`).
fn severity(rest: &str) -> Option<Parts<'_>> {
    let (word, message) = rest.split_once(": ")?;
    let (word, code) = match word.split_once('[') {
        Some((w, c)) => (w, Some(c.strip_suffix(']')?)),
        None => (word, None),
    };
    let level = level_of(word)?;
    if code.is_some() {
        return Some((level, code, message));
    }
    match message.strip_suffix(']').and_then(|m| m.rsplit_once("  [")) {
        Some((message, code)) => Some((level, Some(code), message)),
        None => Some((level, None, message)),
    }
}

/// `F401 [*] message` or `invalid-syntax: message`: the code and the message.
pub(super) fn coded(rest: &str) -> Option<(&str, &str)> {
    let (first, message) = rest.split_once(' ').unwrap_or((rest, ""));
    let message = message.trim_start();
    let message = message.strip_prefix("[*]").unwrap_or(message);
    if is_rule_code(first) {
        return Some((first, message));
    }
    let name = first.strip_suffix(':')?;
    let kebab = name.contains('-')
        && name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-');
    kebab.then_some((name, message))
}

/// `F401`, `E999`, `SIM102`, `PLR0913`: 1–7 capital letters, then 1–6 digits.
fn is_rule_code(s: &str) -> bool {
    let letters = s.chars().take_while(char::is_ascii_uppercase).count();
    let digits = s.len() - letters;
    (1..=7).contains(&letters)
        && (1..=6).contains(&digits)
        && s.chars().skip(letters).all(|c| c.is_ascii_digit())
}

/// The level of a finding with rule `code`: pycodestyle's `W…` warnings are Warnings, the rest
/// Failures.
pub(super) fn code_level(code: &str) -> Level {
    if code.starts_with('W') && is_rule_code(code) {
        Level::Warning
    } else {
        Level::Failure
    }
}

#[cfg(test)]
mod tests {
    use super::super::{parse, tests::show};

    const FLAKE8: &str = include_str!("../../../tests/fixtures/tool-output/flake8.txt");
    const RUFF: &str = include_str!("../../../tests/fixtures/tool-output/ruff-concise.txt");
    const RUFF_COLOUR: &str = include_str!("../../../tests/fixtures/tool-output/ruff-color.txt");
    const MYPY: &str = include_str!("../../../tests/fixtures/tool-output/mypy.txt");
    const MYPY_COLUMNS: &str = include_str!("../../../tests/fixtures/tool-output/mypy-columns.txt");
    const MYPY_NOTES: &str = include_str!("../../../tests/fixtures/tool-output/mypy-notes.txt");
    const ESLINT: &str = include_str!("../../../tests/fixtures/tool-output/eslint-unix.txt");

    #[test]
    fn flake8() {
        let want = [
            "pkg/calc.py:1:1 failure [F401] 'os' imported but unused",
            "pkg/calc.py:2:1 failure [F401] 'sys' imported but unused",
            "pkg/calc.py:10:5 failure [F841] local variable 'unused' is assigned to but never used",
            "pkg/typed.py:13:1 failure [F821] undefined name 'reveal_type'",
            "pkg/typed.py:14:5 failure [F821] undefined name 'undefined_name'",
            "tests/test_broken.py:1:14 failure [E999] SyntaxError: invalid syntax",
            "tests/test_imports.py:1:1 failure [F401] 'not_a_module' imported but unused",
        ];
        assert_eq!(show(&parse("lint", FLAKE8, &[])), want);
    }

    #[test]
    fn ruff_concise_plain_and_coloured() {
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
        assert_eq!(show(&parse("lint", RUFF, &[])), want);
        assert_eq!(show(&parse("lint", RUFF_COLOUR, &[])), want[..5]);
    }

    #[test]
    fn mypy_with_and_without_columns() {
        let want = [
            "pkg/typed.py:5:16 failure [arg-type] Argument 1 to \"add\" has incompatible type \"list[int]\"; expected \"int\"",
            "pkg/typed.py:9:12 failure [return-value] Incompatible return value type (got \"int\", expected \"str\")",
            "pkg/typed.py:12:10 failure [assignment] Incompatible types in assignment (expression has type \"str\", variable has type \"int\")",
            "pkg/typed.py:14:5 failure [name-defined] Name \"undefined_name\" is not defined",
            "pkg/typed.py:13:13 notice [] Revealed type is \"int\"",
        ];
        assert_eq!(show(&parse("typecheck", MYPY_COLUMNS, &[])), want);
        let no_column = |w: &&str| match w
            .split_once(' ')
            .and_then(|(h, t)| Some((h.rsplit_once(':')?.0, t)))
        {
            Some((head, tail)) => format!("{head} {tail}"),
            None => w.to_string(),
        };
        let without: Vec<String> = want.iter().map(no_column).collect();
        assert_eq!(show(&parse("typecheck", MYPY, &[])), without);
    }

    /// mypy 1.11 on marshmallow 3.23 without its stubs: an error's notes are one finding with it.
    #[test]
    fn mypys_notes_under_an_error_are_part_of_it() {
        let hint = "Library stubs not installed for \"simplejson\"; Hint: \"python3 -m pip install \
                    types-simplejson\"; (or run \"mypy --install-types\" to install all missing \
                    stub packages); See https://mypy.readthedocs.io/en/stable/running_mypy.html\
                    #missing-imports";
        let want = [
            format!("tests/base.py:9 failure [import-untyped] {hint}"),
            "tests/test_schema.py:8 failure [import-untyped] Library stubs not installed for \
             \"simplejson\""
                .to_string(),
            "tests/test_schema.py:12 notice [] Revealed type is \"int\"".to_string(),
        ];
        assert_eq!(show(&parse("typecheck", MYPY_NOTES, &[])), want);
    }

    #[test]
    fn eslint_unix() {
        let want = [
            "web/src/app.js:1:10 failure [no-unused-vars] 'addOne' is defined but never used.",
            "web/src/app.js:2:9 failure [use-isnan] Use the isNaN function to compare with NaN.",
            "web/src/broken.js:7:3 failure [] Parsing error: Unexpected token }",
            "web/src/app.js:3:20 warning [semi] Missing semicolon.",
            "web/src/app.js:4:12 warning [no-else-return] Unnecessary 'else' after 'return'.",
            "web/old code/legacy.js:12:1 warning [no-console] Unexpected console statement.",
        ];
        assert_eq!(show(&parse("lint", ESLINT, &["/work/"])), want);
    }

    #[test]
    fn compilers_and_non_findings() {
        let out = "src/main.rs:9:18: error[E0308]: mismatched types\nx.c:3:1: fatal error: no.h: No such file\n\
                   tests/test_calc.py:7: AssertionError\na b.py:1:1: F401 x\nc.py:1:1: just words\nd.py:2:1: W605 bad escape\n";
        let want = [
            "src/main.rs:9:18 failure [E0308] mismatched types",
            "x.c:3:1 failure [] no.h: No such file",
            "d.py:2:1 warning [W605] bad escape",
        ];
        assert_eq!(show(&parse("lint", out, &[])), want);
    }
}
