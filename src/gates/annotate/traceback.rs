//! Python tracebacks, shared by the [`super::unittest`] parser and the [`super::generic`]
//! fallback. A traceback is a run of frame lines, each followed by indented source and caret
//! lines, ended by the exception at column 0:
//!
//! ```text
//! Traceback (most recent call last):
//!   File "/work/test_unit.py", line 8, in test_adds
//!     self.assertEqual(add(1, 2), 3)
//! AssertionError: -1 != 3
//! ```
//!
//! A `SyntaxError` has a frame without `, in …` and no `Traceback` line; it reads the same.

use super::paths::Roots;
use super::text;

/// One `File "…", line N` frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Frame<'a> {
    pub path: &'a str,
    pub line: u32,
}

/// The frame on `line`, if it is one (leading whitespace allowed).
pub fn frame(line: &str) -> Option<Frame<'_>> {
    let rest = line.trim_start().strip_prefix("File \"")?;
    let (path, rest) = rest.split_once('"')?;
    let (line, _) = text::number(rest.strip_prefix(", line ")?)?;
    Some(Frame { path, line })
}

/// One traceback: its frames, outermost first, and the exception line at index `at`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Crash<'a> {
    pub frames: Vec<Frame<'a>>,
    pub exception: &'a str,
    pub at: usize,
}

impl<'a> Crash<'a> {
    /// The innermost frame in the repository.
    pub fn last_in_repo(&self, roots: &Roots) -> Option<Frame<'a>> {
        self.frames
            .iter()
            .rev()
            .find(|f| roots.contains(f.path))
            .copied()
    }

    /// The exception's type: `json.decoder.JSONDecodeError` of
    /// `json.decoder.JSONDecodeError: Expecting value: line 1 column 1 (char 0)`.
    pub fn exception_type(&self) -> Option<&'a str> {
        let name = self.exception.split(':').next()?.trim();
        let ok = !name.is_empty()
            && name
                .chars()
                .all(|c| c.is_alphanumeric() || c == '_' || c == '.');
        ok.then_some(name)
    }
}

/// Every traceback in `lines`.
pub fn crashes<'a>(lines: &[&'a str]) -> Vec<Crash<'a>> {
    let mut out = Vec::new();
    let mut frames = Vec::new();
    for (at, line) in lines.iter().enumerate() {
        if let Some(f) = frame(line) {
            frames.push(f);
        } else if !frames.is_empty()
            && !line.trim().is_empty()
            && !line.starts_with(char::is_whitespace)
        {
            out.push(Crash {
                frames: std::mem::take(&mut frames),
                exception: line.trim(),
                at,
            });
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_and_crashes() {
        assert_eq!(
            frame(r#"  File "/work/a.py", line 9, in test_adds"#),
            Some(Frame {
                path: "/work/a.py",
                line: 9
            })
        );
        assert_eq!(frame(r#"File "x.py", line 1"#).map(|f| f.line), Some(1));
        assert_eq!(frame(r#"  File "x.py", line x"#), None);
        assert_eq!(frame(r#"  File "x.py"#), None);
        let lines = [
            "Traceback (most recent call last):",
            r#"  File "/usr/lib/a.py", line 3, in f"#,
            "    g()",
            r#"  File "b.py", line 7, in g"#,
            "    ^^^",
            "ValueError: bad",
            "During handling of the above exception, another exception occurred:",
            r#"  File "c.py", line 1"#,
            "SyntaxError: invalid syntax",
        ];
        let all = crashes(&lines);
        assert_eq!(all.len(), 2);
        assert_eq!(
            (all[0].exception, all[0].at, all[0].frames.len()),
            ("ValueError: bad", 5, 2)
        );
        assert_eq!(all[0].exception_type(), Some("ValueError"));
        let roots = Roots::new(&[]);
        assert_eq!(all[0].last_in_repo(&roots).map(|f| f.path), Some("b.py"));
        assert_eq!(
            all[1].last_in_repo(&roots).map(|f| (f.path, f.line)),
            Some(("c.py", 1))
        );
        let odd = Crash {
            frames: vec![],
            exception: "oops, no type",
            at: 0,
        };
        assert_eq!(odd.exception_type(), None);
    }
}
