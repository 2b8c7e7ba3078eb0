//! Parsing of unified diffs for `apply_patch`. Files start with `--- a/path` / `+++ b/path`
//! (`/dev/null` for a created or deleted file; the `a/` and `b/` prefixes are optional; `diff
//! --git`, `index` and mode lines are skipped). A hunk's body is read by its content, not by the
//! counts of its `@@ -a,b +c,d @@` header, which models often get wrong: it runs until the next
//! hunk or file header or a line that is not ` `, `+`, `-`, `\` or empty (an empty line is blank
//! context). The start line is only a hint for where to look; a bare `@@` is accepted.

use crate::agent::ToolError;

/// One file of a patch.
#[derive(Debug)]
pub struct FilePatch {
    /// `None` for `/dev/null`.
    pub old: Option<String>,
    pub new: Option<String>,
    pub hunks: Vec<Hunk>,
}

#[derive(Debug)]
pub struct Hunk {
    /// The `@@ … @@` line, for messages.
    pub header: String,
    /// 1-based start in the old file, when the header gives it.
    pub old_start: Option<usize>,
    pub lines: Vec<Line>,
    /// `\ No newline at end of file` after an old-side or a new-side line.
    pub old_no_newline: bool,
    pub new_no_newline: bool,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Line {
    Context(String),
    Remove(String),
    Add(String),
}

impl Hunk {
    /// The lines the hunk expects in the file.
    pub fn old_side(&self) -> Vec<&str> {
        self.lines
            .iter()
            .filter_map(|l| match l {
                Line::Context(s) | Line::Remove(s) => Some(s.as_str()),
                Line::Add(_) => None,
            })
            .collect()
    }
}

fn bad(message: String) -> ToolError {
    ToolError::new("bad_arguments", message)
}

/// Splits a patch into files and hunks.
pub fn parse(patch: &str) -> Result<Vec<FilePatch>, ToolError> {
    let lines: Vec<&str> = patch.lines().collect();
    let is_file_header = |i: usize| {
        lines[i].starts_with("--- ") && lines.get(i + 1).is_some_and(|l| l.starts_with("+++ "))
    };
    let mut files = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        if lines[i].starts_with("@@") {
            return Err(bad(format!(
                "line {}: a hunk before any file header; start each file with `--- a/path` and `+++ b/path`",
                i + 1
            )));
        }
        if !is_file_header(i) {
            i += 1;
            continue;
        }
        let old = path_of(&lines[i][4..], "a/");
        let new = path_of(&lines[i + 1][4..], "b/");
        let shown = new.clone().or_else(|| old.clone()).unwrap_or_default();
        i += 2;
        let mut hunks = Vec::new();
        while i < lines.len() && lines[i].starts_with("@@") {
            let mut hunk = header(lines[i]);
            let old_count = count_of(lines[i]);
            i += 1;
            // Lines that were empty in the patch text (blank context without its space).
            let mut raw_blank_tail = 0;
            while i < lines.len() && !lines[i].starts_with("@@") && !is_file_header(i) {
                let l = lines[i];
                let line = match l.chars().next() {
                    None => Line::Context(String::new()),
                    Some(' ') => Line::Context(l[1..].to_owned()),
                    Some('+') => Line::Add(l[1..].to_owned()),
                    Some('-') => Line::Remove(l[1..].to_owned()),
                    Some('\\') => {
                        match hunk.lines.last() {
                            Some(Line::Remove(_)) => hunk.old_no_newline = true,
                            Some(Line::Add(_)) => hunk.new_no_newline = true,
                            Some(Line::Context(_)) => {
                                hunk.old_no_newline = true;
                                hunk.new_no_newline = true;
                            }
                            None => {}
                        }
                        i += 1;
                        continue;
                    }
                    Some(_) => break,
                };
                raw_blank_tail = if l.is_empty() { raw_blank_tail + 1 } else { 0 };
                hunk.lines.push(line);
                i += 1;
            }
            // Trailing empty lines are separators unless the header's count needs them.
            while raw_blank_tail > 0 && old_count.is_none_or(|n| hunk.old_side().len() > n) {
                hunk.lines.pop();
                raw_blank_tail -= 1;
            }
            if hunk.lines.is_empty() {
                return Err(bad(format!("{shown}: hunk {} is empty", hunks.len() + 1)));
            }
            hunks.push(hunk);
        }
        if hunks.is_empty() {
            return Err(bad(format!(
                "{shown}: no hunk (`@@ -start,count +start,count @@` and its lines) after the file header"
            )));
        }
        files.push(FilePatch { old, new, hunks });
    }
    if files.is_empty() {
        return Err(bad(
            "no file header found; a unified diff starts each file with `--- a/path` and `+++ b/path`".into(),
        ));
    }
    Ok(files)
}

/// A header path: `/dev/null` is `None`; a tab-separated timestamp, quotes and the git prefix
/// are dropped.
fn path_of(raw: &str, prefix: &str) -> Option<String> {
    let p = raw.split('\t').next().unwrap_or(raw).trim();
    let p = p
        .strip_prefix('"')
        .and_then(|q| q.strip_suffix('"'))
        .unwrap_or(p);
    if p == "/dev/null" {
        return None;
    }
    Some(p.strip_prefix(prefix).unwrap_or(p).to_owned())
}

fn header(line: &str) -> Hunk {
    let old_start = line
        .split_whitespace()
        .nth(1)
        .and_then(|r| r.strip_prefix('-'))
        .and_then(|r| r.split(',').next())
        .and_then(|n| n.parse().ok());
    Hunk {
        header: line.chars().take(80).collect(),
        old_start,
        lines: Vec::new(),
        old_no_newline: false,
        new_no_newline: false,
    }
}

/// The old-side count of a hunk header (`-a,b`: b; `-a`: 1).
fn count_of(line: &str) -> Option<usize> {
    let range = line.split_whitespace().nth(1)?.strip_prefix('-')?;
    match range.split_once(',') {
        Some((_, n)) => n.parse().ok(),
        None => range.parse::<usize>().ok().map(|_| 1),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn files_hunks_and_markers() {
        let patch = "diff --git a/x.py b/x.py\nindex 1..2 100644\n--- a/x.py\n+++ b/x.py\n@@ -1,3 +1,3 @@ def f\n a\n-b\n+c\n\n@@ -10 +10 @@\n-y\n\\ No newline at end of file\n+z\n--- /dev/null\n+++ b/new.py\t2024-01-01\n@@ -0,0 +1 @@\n+hi\n--- a/old.py\n+++ /dev/null\n@@\n-bye\n\n";
        let files = parse(patch).unwrap();
        assert_eq!(files.len(), 3);
        assert_eq!(
            (files[0].old.as_deref(), files[0].new.as_deref()),
            (Some("x.py"), Some("x.py"))
        );
        let h = &files[0].hunks;
        assert_eq!(h.len(), 2);
        assert_eq!(h[0].old_start, Some(1));
        assert_eq!(
            h[0].lines,
            [
                Line::Context("a".into()),
                Line::Remove("b".into()),
                Line::Add("c".into()),
                Line::Context(String::new())
            ]
        );
        assert!(h[1].old_no_newline && !h[1].new_no_newline);
        assert_eq!(
            (files[1].old.as_deref(), files[1].new.as_deref()),
            (None, Some("new.py"))
        );
        assert_eq!(
            (files[2].new.as_deref(), files[2].hunks[0].old_start),
            (None, None)
        );
        assert_eq!(files[2].hunks[0].lines, [Line::Remove("bye".into())]);
    }

    #[test]
    fn malformed_patches_are_bad_arguments() {
        for p in [
            "",
            "just text",
            "@@ -1 +1 @@\n-a\n+b\n",
            "--- a/x\n+++ b/x\n",
            "--- a/x\n+++ b/x\n@@ -1 +1 @@\n",
        ] {
            assert_eq!(parse(p).unwrap_err().kind, "bad_arguments", "{p:?}");
        }
    }
}
