//! Text helpers of the parsers: ANSI colour stripping, one-line messages, and the locations
//! tools print, `path:line:` / `path:line:col:` at the start of a line
//! (`pkg/calc.py:1:8: F401 [*] `os` imported but unused`) or `path:line:col` at its end
//! (` --> pkg/calc.py:1:8`).

/// `s` without ANSI escape sequences: CSI (`ESC [ … final`, colours and cursor moves), OSC
/// (`ESC ] … BEL` or `ESC ] … ESC \`, e.g. hyperlinks) and two-character `ESC x` sequences.
pub fn strip_ansi(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars().peekable();
    while let Some(c) = chars.next() {
        if c != '\u{1b}' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('[') => {
                while chars
                    .next_if(|c| ('\u{20}'..='\u{3f}').contains(c))
                    .is_some()
                {}
                chars.next_if(|c| ('\u{40}'..='\u{7e}').contains(c));
            }
            Some(']') => {
                while let Some(c) = chars.next() {
                    if c == '\u{7}' || (c == '\u{1b}' && chars.next_if_eq(&'\\').is_some()) {
                        break;
                    }
                }
            }
            // A lone ESC before a line break must not swallow the break.
            Some('\n') => out.push('\n'),
            _ => {}
        }
    }
    out
}

/// `s` as one line: control characters and runs of whitespace become one space, trimmed, cut
/// to at most `max` characters (the last one then an ellipsis).
pub fn one_line(s: &str, max: usize) -> String {
    let words: Vec<&str> = s
        .split(|c: char| c.is_whitespace() || c.is_control())
        .filter(|w| !w.is_empty())
        .collect();
    let joined = words.join(" ");
    if joined.chars().count() <= max {
        return joined;
    }
    let cut: String = joined.chars().take(max.saturating_sub(1)).collect();
    format!("{}…", cut.trim_end())
}

/// Leading decimal digits of `s` as a number (none, or too large: `None`) and what follows.
pub fn number(s: &str) -> Option<(u32, &str)> {
    let end = s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len());
    let n = s.get(..end)?.parse().ok()?;
    Some((n, s.get(end..)?))
}

/// A `path:line:` or `path:line:col:` prefix; `rest` is what follows its last colon.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Location<'a> {
    pub path: &'a str,
    pub line: u32,
    pub column: Option<u32>,
    pub rest: &'a str,
}

/// The first `path:line:` of `s` (`path` is everything before it, spaces included).
pub fn location(s: &str) -> Option<Location<'_>> {
    for (i, _) in s.match_indices(':') {
        let Some((line, after)) = s.get(i + 1..).and_then(number) else {
            continue;
        };
        let Some(after) = after.strip_prefix(':') else {
            continue;
        };
        let path = s.get(..i)?;
        if path.is_empty() {
            return None;
        }
        let (column, rest) = match number(after).and_then(|(c, r)| Some((c, r.strip_prefix(':')?)))
        {
            Some((c, r)) => (Some(c), r),
            None => (None, after),
        };
        return Some(Location {
            path,
            line,
            column,
            rest,
        });
    }
    None
}

/// `path:line:col` or `path:line` making up all of `s` (rustc's ` --> src/main.rs:9:18`).
pub fn trailing_location(s: &str) -> Option<(&str, u32, Option<u32>)> {
    let (head, last) = s.rsplit_once(':')?;
    let (last, tail) = number(last)?;
    if !tail.is_empty() {
        return None;
    }
    if let Some((path, mid)) = head.rsplit_once(':')
        && let Some((line, "")) = number(mid)
    {
        return (!path.is_empty()).then_some((path, line, Some(last)));
    }
    (!head.is_empty()).then_some((head, last, None))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strips_colours_hyperlinks_and_lone_escapes() {
        assert_eq!(strip_ansi("\u{1b}[1m\u{1b}[31mE  x\u{1b}[0m"), "E  x");
        assert_eq!(
            strip_ansi("a\u{1b}]8;;http://x\u{1b}\\b\u{1b}]8;;\u{7}c"),
            "abc"
        );
        assert_eq!(strip_ansi("a\u{1b}\nb\u{1b}"), "a\nb");
        assert_eq!(strip_ansi("\u{1b}[38;5;9"), "");
    }

    #[test]
    fn one_line_collapses_and_cuts() {
        assert_eq!(one_line("  a\n\tb\r\u{0}c  ", 500), "a b c");
        assert_eq!(one_line("abcdef", 4), "abc…");
        assert_eq!(one_line("abcd", 4), "abcd");
        assert_eq!(one_line("ab cd", 4), "ab…");
        assert_eq!(one_line("ééééé", 3).chars().count(), 3);
    }

    #[test]
    fn locations() {
        let l = location("./pkg/calc.py:10:5: F841 x").unwrap();
        assert_eq!(
            (l.path, l.line, l.column, l.rest),
            ("./pkg/calc.py", 10, Some(5), " F841 x")
        );
        let l = location("tests/test_calc.py:20: ").unwrap();
        assert_eq!(
            (l.path, l.line, l.column, l.rest),
            ("tests/test_calc.py", 20, None, " ")
        );
        assert_eq!(location("no location: here"), None);
        assert_eq!(location(":1: x"), None);
        assert_eq!(location("a.py:99999999999: x"), None);
        assert_eq!(
            trailing_location("src/main.rs:9:18"),
            Some(("src/main.rs", 9, Some(18)))
        );
        assert_eq!(
            trailing_location("src/main.rs:9"),
            Some(("src/main.rs", 9, None))
        );
        assert_eq!(trailing_location("src/main.rs:9x"), None);
        assert_eq!(trailing_location(":9"), None);
    }
}
