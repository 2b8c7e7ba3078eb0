//! The fallback, used only when no specific parser found anything: Python tracebacks, put on
//! their innermost frame in the repository
//!
//! ```text
//!   File "/work/build.py", line 7, in load_config
//! json.decoder.JSONDecodeError: Expecting value: line 1 column 1 (char 0)
//! ```
//!
//! and the first `path:line:` of a line whose path looks like a repository file (a name with an
//! extension, under the repository): `src/x.c:3: bad` and `      at ./src/lib.rs:15:9` (a Rust
//! backtrace) are, `make: *** [Makefile:12: all] Error 1` (no extension) and
//! `/usr/include/stdio.h:4:` (outside) are not. Tracebacks are Failures titled by the exception
//! type; other mentions are Failures, or Warnings when the line says "warning".

use crate::annotation::{Annotation, Level};

use super::paths::Roots;
use super::{Found, text, traceback};

pub fn parse(lines: &[&str], roots: &Roots) -> Vec<Found> {
    let mut out = Vec::new();
    for crash in traceback::crashes(lines) {
        if let Some(frame) = crash.last_in_repo(roots) {
            let mut annotation =
                Annotation::new(frame.path, frame.line, Level::Failure, crash.exception);
            if let Some(t) = crash.exception_type() {
                annotation = annotation.with_title(t);
            }
            out.push(Found::new(crash.at, annotation));
        }
    }
    for (at, line) in lines.iter().enumerate() {
        if traceback::frame(line).is_none()
            && let Some(annotation) = mention(line, roots)
        {
            out.push(Found::new(at, annotation));
        }
    }
    out
}

/// The first `path:line:` of `line` whose path is a repository file.
fn mention(line: &str, roots: &Roots) -> Option<Annotation> {
    let bytes = line.as_bytes();
    for (i, _) in line.match_indices(':') {
        let Some((number, after)) = line.get(i + 1..).and_then(text::number) else {
            continue;
        };
        let Some(after) = after.strip_prefix(':') else {
            continue;
        };
        let start = bytes
            .get(..i)
            .unwrap_or_default()
            .iter()
            .rposition(|b| !is_path_byte(*b))
            .map_or(0, |p| p + 1);
        let Some(path) = line.get(start..i) else {
            continue;
        };
        if !has_extension(path) || !roots.contains(path) {
            continue;
        }
        // `path:line:col:` → what follows the column.
        let rest = match text::number(after) {
            Some((_, r)) if r.is_empty() || r.starts_with(':') => r.trim_start_matches(':'),
            _ => after,
        }
        .trim();
        let message = if rest.is_empty() { line.trim() } else { rest };
        let lower = line.trim_start().to_ascii_lowercase();
        // pytest's `SKIPPED [1] tests/t.py:7: why` and `XFAIL …` say why a test did not run
        // or was expected to fail: news, not a failure.
        let level = if ["skipped", "xfail"].iter().any(|w| lower.starts_with(w)) {
            Level::Notice
        } else if lower.contains("warning") {
            Level::Warning
        } else {
            Level::Failure
        };
        return Some(Annotation::new(path, number, level, message));
    }
    None
}

fn is_path_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b'-' | b'/' | b'+' | b'@')
}

/// Whether the last component is `name.ext`, the extension 1–10 characters, one a letter.
fn has_extension(path: &str) -> bool {
    let name = path.rsplit('/').next().unwrap_or(path);
    match name.rsplit_once('.') {
        Some((stem, ext)) => {
            !stem.is_empty()
                && (1..=10).contains(&ext.len())
                && ext.bytes().all(|b| b.is_ascii_alphanumeric())
                && ext.bytes().any(|b| b.is_ascii_alphabetic())
        }
        None => false,
    }
}

#[cfg(test)]
mod tests {
    use super::super::{parse, tests::show};

    #[test]
    fn mentions_of_repository_files() {
        let out = "In file included from src/a.c:1:\nsrc/b.h:3:2: warning\n  at ./src/lib.rs:15:9\n\
                   make: *** [Makefile:12: all] Error 1\nv1.2:3: x\nhttp://host:8080: down\n/usr/include/c.h:4: y\n\
                   ../up.py:5: z\n12:30:45 ready\nsee tests/t.py:7:bad\n\
                   SKIPPED [2] tests/t.py:9: needs Windows\n";
        // `at ./src/lib.rs:15:9` has nothing after its column: the whole line is the message.
        let want = [
            "src/a.c:1 failure [] In file included from src/a.c:1:",
            "src/lib.rs:15 failure [] at ./src/lib.rs:15:9",
            "tests/t.py:7 failure [] bad",
            "src/b.h:3 warning [] warning",
            "tests/t.py:9 notice [] needs Windows",
        ];
        assert_eq!(show(&parse("build", out, &[])), want);
    }

    #[test]
    fn a_traceback_only_in_libraries_gives_nothing() {
        let out = "Traceback (most recent call last):\n  File \"/usr/lib/python3.12/runpy.py\", line 1, in f\nKeyError: 1\n";
        assert_eq!(parse("build", out, &["/work/"]), vec![]);
    }
}
