//! Python requirement strings nobody vouches for (a change's `pyproject.toml`, its
//! requirements files), read as PEP 508 says before any reaches pip: a name with extras,
//! version specifiers and markers passes, written back as the parser understood it; a URL, a
//! path, an option or a control character is refused with the reason. What the download phase
//! writes for pip is therefore one requirement a line and never an option.

use std::str::FromStr;

use pep508_rs::{Requirement, VerbatimUrl, VersionOrUrl};

/// `spec` as pip should read it from an index, written back from its parse ("pytest>=8.2",
/// "rich[jupyter]>=13 ; python_full_version >= '3.9'"), or why it is refused.
pub fn from_index(spec: &str) -> Result<String, String> {
    if let Some(c) = spec.chars().find(|c| breaks_lines(*c)) {
        return Err(format!(
            "it holds a control character or line break (U+{:04X}), which pip would read as a new line",
            c as u32
        ));
    }
    let spec = spec.trim();
    if spec.starts_with('-') {
        return Err("it is an option, not a requirement".into());
    }
    let parsed = Requirement::<VerbatimUrl>::from_str(spec).map_err(|e| {
        format!(
            "it is not a PEP 508 requirement ({})",
            first_line(&e.to_string())
        )
    })?;
    if let Some(VersionOrUrl::Url(_)) = parsed.version_or_url {
        return Err(
            "it names a URL: only packages from the configured index are downloaded".into(),
        );
    }
    let canonical = parsed.to_string();
    // The parser's own output, checked once more: one line, never an option.
    if canonical.starts_with('-') || canonical.chars().any(breaks_lines) {
        return Err("it does not read back as one requirement".into());
    }
    Ok(canonical)
}

/// True for what Python's `str.splitlines()` (which pip reads requirement files with) breaks
/// a line at, and every other control character.
fn breaks_lines(c: char) -> bool {
    c.is_control() || matches!(c, '\u{2028}' | '\u{2029}')
}

fn first_line(s: &str) -> &str {
    s.lines().next().unwrap_or(s)
}

/// What one line of a requirements file is, for the download phase.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Line {
    /// A requirement from the index, as [`from_index`] writes it back (its `--hash` options
    /// left out: the bot adds requirements of its own, which a hash-checking pip would refuse).
    Index(String),
    /// Not the download's: a comment, an option (`-r`, `-e`, `--index-url`…) or a local path,
    /// which setup reads from the worktree without network.
    Skipped,
    /// Refused: the text and why.
    Refused(String, String),
}

/// The logical lines of a requirements file (continuations joined), each read as [`Line`];
/// also what tox's `deps` lines are.
pub fn requirements_file(text: &str) -> Vec<Line> {
    logical_lines(text).iter().map(|l| line(l)).collect()
}

/// The logical lines of a requirements file: a line ending in `\` goes on in the next.
pub fn logical_lines(text: &str) -> Vec<String> {
    let mut logical = Vec::new();
    let mut open = String::new();
    for raw in text.split('\n') {
        let raw = raw.strip_suffix('\r').unwrap_or(raw);
        match raw.strip_suffix('\\') {
            Some(more) => open.push_str(more),
            None => {
                open.push_str(raw);
                logical.push(std::mem::take(&mut open));
            }
        }
    }
    if !open.is_empty() {
        logical.push(open);
    }
    logical
}

/// One logical line of a requirements file (or one of tox's `deps`).
pub fn line(l: &str) -> Line {
    // Before anything is skipped: pip would read a second line after the break.
    if l.chars().any(breaks_lines) {
        let why = from_index(l).expect_err("a line break is refused");
        return Line::Refused(l.trim().to_owned(), why);
    }
    let l = match l.find(" #").or_else(|| l.find("\t#")) {
        Some(i) => &l[..i],
        None => l,
    };
    let trimmed = l.trim_matches([' ', '\t']);
    if trimmed.is_empty() || trimmed.starts_with('#') || trimmed.starts_with('-') {
        return Line::Skipped;
    }
    // A local path, or a tox substitution (`{[base]deps}`).
    if trimmed.starts_with(['.', '/', '~', '{']) || trimmed.starts_with("file:") {
        return Line::Skipped;
    }
    // Per-requirement options (`--hash=…`, `--config-settings …`) follow the requirement.
    let spec = match trimmed.find(" -").or_else(|| trimmed.find("\t-")) {
        Some(i) => &trimmed[..i],
        None => trimmed,
    };
    match from_index(spec) {
        Ok(canonical) => Line::Index(canonical),
        Err(why) => Line::Refused(trimmed.to_owned(), why),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_with_extras_specifiers_and_markers_pass_as_the_parser_read_them() {
        for (spec, read) in [
            ("pytest", "pytest"),
            ("requests==2.32.3", "requests==2.32.3"),
            ("  wcwidth >= 0.2 ", "wcwidth>=0.2"),
            ("rich[jupyter] >= 13, < 14", "rich[jupyter]>=13,<14"),
        ] {
            assert_eq!(from_index(spec).as_deref(), Ok(read), "{spec:?}");
        }
        let marked = from_index("tomli>=1; python_version < \"3.11\"").unwrap();
        assert!(marked.starts_with("tomli>=1 ; python"), "{marked}");
    }

    #[test]
    fn options_urls_paths_and_line_breaks_are_refused_with_the_reason() {
        for (spec, why) in [
            ("pytest\r--no-binary evilpkg", "line break (U+000D)"),
            ("pytest\n--no-binary evilpkg", "line break (U+000A)"),
            ("pytest\u{0b}-e git+x", "U+000B"),
            ("pytest\u{0c}-r /etc/passwd", "U+000C"),
            ("pytest\u{85}-c c.txt", "U+0085"),
            ("pytest\u{2028}--find-links x", "U+2028"),
            ("pytest\u{2029}--trusted-host x", "U+2029"),
            ("--no-binary :all:", "an option"),
            ("-e .", "an option"),
            ("evil @ https://x.example/evil.tar.gz", "names a URL"),
            ("evil@git+https://x.example/e.git", "names a URL"),
            ("./local-pkg", "not a PEP 508 requirement"),
            ("pytest --no-binary evil", "not a PEP 508 requirement"),
            ("pytest; --index-url x", "not a PEP 508 requirement"),
            ("", "not a PEP 508 requirement"),
        ] {
            let e = from_index(spec).unwrap_err();
            assert!(e.contains(why), "{spec:?}: {e}");
        }
    }

    #[test]
    fn a_requirements_file_is_read_by_logical_line() {
        let text = "# pinned\nrequests==2.32.3 \\\n    --hash=sha256:aa \\\n    --hash=sha256:bb\n-e .\n-r other.txt\n./local-pkg\nflask # web\n--index-url https://x.example/simple\nbad\u{0c}--no-binary x\n\n";
        assert_eq!(
            requirements_file(text),
            [
                Line::Skipped,
                Line::Index("requests==2.32.3".into()),
                Line::Skipped,
                Line::Skipped,
                Line::Skipped,
                Line::Index("flask".into()),
                Line::Skipped,
                Line::Refused(
                    "bad\u{0c}--no-binary x".into(),
                    "it holds a control character or line break (U+000C), which pip would read as a new line".into()
                ),
                Line::Skipped,
                Line::Skipped,
            ]
        );
    }
}
