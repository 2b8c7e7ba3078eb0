//! Panics of `cargo test` (and of any Rust program): the thread, the location, then the message
//! on the lines after it (Rust 1.73+), or inline in older releases:
//!
//! ```text
//! thread 'tests::adds' (23995) panicked at src/lib.rs:15:9:
//! assertion `left == right` failed
//!   left: 0
//!  right: 4
//!
//! thread 'tests::adds' panicked at 'assertion failed: false', src/lib.rs:15:9
//! ```
//!
//! Level Failure, title the thread's name (the test), message the panic message, its lines
//! joined with `; ` up to the blank line or rustc's `note:` / `stack backtrace:`.

use crate::annotation::{Annotation, Level};

use super::paths::Roots;
use super::{Found, text};

/// At most this many lines of a panic message are read.
const MAX_MESSAGE_LINES: usize = 20;

pub fn parse(lines: &[&str], _roots: &Roots) -> Vec<Found> {
    let mut out = Vec::new();
    for (at, line) in lines.iter().enumerate() {
        let Some((before, after)) = line.split_once(" panicked at ") else {
            continue;
        };
        let thread = before
            .trim_start()
            .strip_prefix("thread '")
            .and_then(|r| r.split_once('\''))
            .map(|(name, _)| name);
        let after = after.trim_end();
        let (place, message) = match after.strip_suffix(':') {
            Some(place) => (place, following(lines.get(at + 1..).unwrap_or_default())),
            None => match after.rsplit_once(", ") {
                Some((m, place)) => (place, m.trim_matches('\'').to_owned()),
                None => continue,
            },
        };
        let Some((path, line, column)) = text::trailing_location(place) else {
            continue;
        };
        let message = if message.is_empty() {
            "panicked".to_owned()
        } else {
            message
        };
        let mut annotation = Annotation::new(path, line, Level::Failure, message);
        if let Some(c) = column {
            annotation = annotation.with_column(c);
        }
        if let Some(t) = thread {
            annotation = annotation.with_title(t);
        }
        out.push(Found::new(at, annotation));
    }
    out
}

/// The message lines after a panic's location line.
fn following(rest: &[&str]) -> String {
    let lines: Vec<&str> = rest
        .iter()
        .take(MAX_MESSAGE_LINES)
        .take_while(|l| {
            let t = l.trim();
            !t.is_empty() && !t.starts_with("note: ") && t != "stack backtrace:"
        })
        .map(|l| l.trim())
        .collect();
    lines.join("; ")
}

#[cfg(test)]
mod tests {
    use super::super::{parse, tests::show};

    #[test]
    fn cargo_test_panics() {
        let out = include_str!("../../../tests/fixtures/tool-output/cargo-test.txt");
        let want = [
            "src/lib.rs:6:7 failure [tests::present] value must be present",
            "src/lib.rs:15:9 failure [tests::adds] assertion `left == right` failed; left: 0; right: 4",
        ];
        assert_eq!(show(&parse("test", out, &[])), want);
    }

    #[test]
    fn old_style_and_odd_panics() {
        let out = "thread 'main' panicked at 'boom, really', src/main.rs:3:5\n\
                   thread 'x' panicked at /rustc/abc/library/core/src/option.rs:1:2:\nmsg\n\
                   thread 'y' panicked at src/y.rs:4:1:\n\nthread 'z' panicked at nowhere\n";
        let want = [
            "src/main.rs:3:5 failure [main] boom, really",
            "src/y.rs:4:1 failure [y] panicked",
        ];
        assert_eq!(show(&parse("test", out, &[])), want);
    }
}
