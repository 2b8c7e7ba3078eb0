//! `edit_file`, in two modes: `{path, search, replace, replace_all?}` replaces text that must
//! occur exactly once (unless `replace_all`), and `{path, start_line, end_line, content}`
//! replaces a line range (`end_line = start_line - 1` inserts before `start_line`). A search that
//! finds nothing answers `no_match` with the closest lines; one that finds several answers
//! `ambiguous` with their line numbers. The answer shows the edited lines.

use serde::Deserialize;

use super::text::{self, TextFile};
use super::write::{check_size, writable};
use super::{Ctx, Done};
use crate::agent::ToolError;
use crate::agent::paths;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EditArgs {
    path: String,
    search: Option<String>,
    replace: Option<String>,
    #[serde(default)]
    replace_all: bool,
    start_line: Option<usize>,
    end_line: Option<usize>,
    content: Option<String>,
}

pub fn edit_file(ctx: &Ctx, args: EditArgs) -> Result<Done, ToolError> {
    let rel = writable(ctx, &args.path)?;
    let file = text::load(ctx, &rel, true)?;
    let (new, summary, first, last) = match args {
        EditArgs {
            search: Some(search),
            replace: Some(replace),
            start_line: None,
            end_line: None,
            content: None,
            replace_all,
            ..
        } => by_search(&file, &search, &replace, replace_all)?,
        EditArgs {
            search: None,
            replace: None,
            replace_all: false,
            start_line: Some(start),
            end_line: Some(end),
            content: Some(content),
            ..
        } => by_lines(&file, start, end, &content)?,
        _ => {
            return Err(ToolError::new(
                "bad_arguments",
                "give either search and replace (optionally replace_all), or start_line, end_line and content",
            ));
        }
    };
    check_size(new.len())?;
    paths::write(ctx.root(), &rel, new.as_bytes())?;
    let shown = text::excerpt(&new, first, last, 2);
    Ok(Done {
        text: format!("edited {rel}: {summary}\n{shown}"),
        changed: vec![rel],
    })
}

/// The new text, a summary, and the first and last lines of the replacement.
type Edited = (String, String, usize, usize);

fn by_search(file: &TextFile, search: &str, replace: &str, all: bool) -> Result<Edited, ToolError> {
    if search.is_empty() {
        return Err(ToolError::new(
            "bad_arguments",
            "search is empty; to add text, search for the lines next to where it goes",
        ));
    }
    let at: Vec<usize> = file.text.match_indices(search).map(|(i, _)| i).collect();
    let line_of = |i: usize| file.text[..i].matches('\n').count() + 1;
    match at.len() {
        0 => return Err(no_match(file, search)),
        1 => {}
        n if !all => {
            let lines: Vec<String> = at
                .iter()
                .take(20)
                .map(|&i| line_of(i).to_string())
                .collect();
            return Err(ToolError::new(
                "ambiguous",
                format!(
                    "the search text occurs {n} times in {} (lines {}); include more surrounding lines to pick one, or set replace_all",
                    file.rel,
                    lines.join(", ")
                ),
            ));
        }
        _ => {}
    }
    let new = if all {
        file.text.replace(search, replace)
    } else {
        file.text.replacen(search, replace, 1)
    };
    let first = line_of(at[0]);
    let span = replace.matches('\n').count();
    let summary = match at.len() {
        1 => format!("replaced 1 occurrence at line {first}"),
        n => format!("replaced {n} occurrences (first at line {first})"),
    };
    Ok((new, summary, first, first + span))
}

fn by_lines(file: &TextFile, start: usize, end: usize, content: &str) -> Result<Edited, ToolError> {
    let lines = text::lines(&file.text);
    let total = lines.len();
    let bad = |m: String| Err(ToolError::new("bad_arguments", m));
    if start == 0 {
        return bad("line numbers start at 1".into());
    }
    if start > total + 1 || end > total {
        return bad(format!(
            "{} has {total} lines; to append, use start_line={} and end_line={total}",
            file.rel,
            total + 1
        ));
    }
    if end + 1 < start {
        return bad(format!(
            "end_line {end} is before start_line {start}; use end_line={} to insert before line {start}",
            start - 1
        ));
    }
    let mut new: String = lines[..start - 1].concat();
    if start == total + 1 && !new.is_empty() && !new.ends_with('\n') {
        new.push('\n');
    }
    new.push_str(content);
    let keeps_no_newline = end == total && lines.last().is_some_and(|l| !l.ends_with('\n'));
    if !content.is_empty() && !content.ends_with('\n') && !keeps_no_newline {
        new.push('\n');
    }
    new.push_str(&lines[end..].concat());
    let added = text::lines(content).len();
    let summary = if end < start {
        format!("inserted {added} lines before line {start}")
    } else {
        format!("replaced lines {start}-{end} with {added} lines")
    };
    Ok((
        new,
        summary,
        start,
        (start + added).saturating_sub(1).max(start),
    ))
}

/// `no_match`, with the most useful hint found.
fn no_match(file: &TextFile, search: &str) -> ToolError {
    let head = format!("the search text is not in {}", file.rel);
    let numbered = search.lines().filter(|l| !l.trim().is_empty()).all(|l| {
        let t = l.trim_start();
        let digits = t.len() - t.trim_start_matches(|c: char| c.is_ascii_digit()).len();
        digits > 0 && t[digits..].starts_with('|')
    });
    if numbered {
        return ToolError::new(
            "no_match",
            format!("{head}: drop the `N| ` line-number prefixes that read_file adds"),
        );
    }
    let hint = match text::closest(&file.text, search) {
        Some((line, score)) if score > 0.5 => {
            let n = search.lines().count().max(1);
            let near = text::excerpt(&file.text, line, line + n - 1, 0);
            let what = if score > 0.999 {
                "the same text with different indentation or spacing"
            } else {
                "the closest lines"
            };
            format!(
                "; {what}, from line {line}:\n{near}Copy the exact text (read_file shows it) and try again"
            )
        }
        _ => "; read the file again and copy the exact text".to_owned(),
    };
    ToolError::new("no_match", format!("{head}{hint}"))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::super::testutil::*;

    const CODE: &str = "def add(a, b):\n    return a - b\n\n\ndef sub(a, b):\n    return a - b\n";

    fn setup() -> (tempfile::TempDir, super::super::Toolbox) {
        let (dir, tb) = repo(anything());
        std::fs::write(dir.path().join("src/calc.py"), CODE).unwrap();
        (dir, tb)
    }

    #[tokio::test]
    async fn search_and_replace() {
        let (dir, mut tb) = setup();
        let out = ok(&mut tb, "edit_file", json!({"path": "src/calc.py", "search": "def add(a, b):\n    return a - b", "replace": "def add(a, b):\n    return a + b"})).await;
        assert!(out.starts_with("edited src/calc.py: replaced 1 occurrence at line 1\n1| def add(a, b):\n2|     return a + b\n"), "{out}");
        assert!(
            read(dir.path(), "src/calc.py").starts_with("def add(a, b):\n    return a + b\n\n")
        );
        let out = ok(&mut tb, "edit_file", json!({"path": "src/calc.py", "search": "(a, b)", "replace": "(x, y)", "replace_all": true})).await;
        assert!(
            out.contains("replaced 2 occurrences (first at line 1)"),
            "{out}"
        );
        assert!(tb.written().contains("src/calc.py"));
    }

    #[tokio::test]
    async fn search_errors_say_what_to_do() {
        let (dir, mut tb) = setup();
        let e = fails(
            &mut tb,
            "edit_file",
            json!({"path": "src/calc.py", "search": "return a - b", "replace": "x"}),
        )
        .await;
        assert_eq!(e.kind, "ambiguous");
        assert!(
            e.message
                .contains("occurs 2 times in src/calc.py (lines 2, 6)"),
            "{}",
            e.message
        );
        let e = fails(&mut tb, "edit_file", json!({"path": "src/calc.py", "search": "def sub(a,b):\n  return a - b", "replace": "x"})).await;
        assert_eq!(e.kind, "no_match");
        assert!(
            e.message
                .contains("closest lines, from line 5:\n5| def sub(a, b):\n6|     return a - b\n"),
            "{}",
            e.message
        );
        let e = fails(
            &mut tb,
            "edit_file",
            json!({"path": "src/calc.py", "search": "def  sub(a, b):", "replace": "x"}),
        )
        .await;
        assert!(
            e.message.contains("closest lines, from line 5"),
            "{}",
            e.message
        );
        let e = fails(
            &mut tb,
            "edit_file",
            json!({"path": "src/calc.py", "search": "  def sub(a, b):", "replace": "x"}),
        )
        .await;
        assert!(e.message.contains("different indentation"), "{}", e.message);
        let e = fails(
            &mut tb,
            "edit_file",
            json!({"path": "src/calc.py", "search": "5| def sub(a, b):", "replace": "x"}),
        )
        .await;
        assert!(e.message.contains("line-number prefixes"), "{}", e.message);
        assert_eq!(read(dir.path(), "src/calc.py"), CODE);
        for (args, want) in [
            (
                json!({"path": "src/calc.py", "search": "", "replace": "x"}),
                "bad_arguments",
            ),
            (
                json!({"path": "src/calc.py", "search": "def"}),
                "bad_arguments",
            ),
            (
                json!({"path": "src/calc.py", "search": "x", "replace": "y", "start_line": 1}),
                "bad_arguments",
            ),
            (
                json!({"path": "nope.py", "search": "x", "replace": "y"}),
                "not_found",
            ),
        ] {
            assert_eq!(
                fails(&mut tb, "edit_file", args.clone()).await.kind,
                want,
                "{args}"
            );
        }
        assert!(tb.written().is_empty());
    }

    #[tokio::test]
    async fn line_ranges_replace_insert_and_append() {
        let (dir, mut tb) = setup();
        let out = ok(&mut tb, "edit_file", json!({"path": "src/calc.py", "start_line": 2, "end_line": 2, "content": "    return a + b"})).await;
        assert!(
            out.starts_with("edited src/calc.py: replaced lines 2-2 with 1 lines"),
            "{out}"
        );
        assert!(
            read(dir.path(), "src/calc.py").starts_with("def add(a, b):\n    return a + b\n\n")
        );
        ok(&mut tb, "edit_file", json!({"path": "src/calc.py", "start_line": 1, "end_line": 0, "content": "import os\n"})).await;
        ok(
            &mut tb,
            "edit_file",
            json!({"path": "src/calc.py", "start_line": 8, "end_line": 7, "content": "# end"}),
        )
        .await;
        let now = read(dir.path(), "src/calc.py");
        assert!(now.starts_with("import os\ndef add"), "{now}");
        assert!(now.ends_with("    return a - b\n# end\n"), "{now}");
        ok(
            &mut tb,
            "edit_file",
            json!({"path": "src/calc.py", "start_line": 3, "end_line": 8, "content": ""}),
        )
        .await;
        assert_eq!(
            read(dir.path(), "src/calc.py"),
            "import os\ndef add(a, b):\n"
        );
        for args in [
            json!({"path": "src/calc.py", "start_line": 0, "end_line": 1, "content": ""}),
            json!({"path": "src/calc.py", "start_line": 1, "end_line": 9, "content": ""}),
            json!({"path": "src/calc.py", "start_line": 2, "end_line": 0, "content": ""}),
            json!({"path": "src/calc.py", "start_line": 1, "content": ""}),
        ] {
            assert_eq!(
                fails(&mut tb, "edit_file", args.clone()).await.kind,
                "bad_arguments",
                "{args}"
            );
        }
    }
}
