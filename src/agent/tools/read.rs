//! `list_files` (recursive, `.gitignore`-aware) and `read_file`, which always numbers lines
//! (`  12| code`) under a header `path (lines a-b of N)`, so `edit_file`'s line ranges and
//! `search_files`' hits refer to the same numbers. A read stops at 2,000 lines or 100 KiB and
//! says where to go on.

use serde::Deserialize;

use super::Ctx;
use super::text::{self, width};
use crate::agent::ToolError;
use crate::agent::paths::{self, display};

const MAX_LISTED: usize = 2000;
const MAX_LINES_OUT: usize = 2000;
const MAX_BYTES_OUT: usize = 100 * 1024;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ListArgs {
    path: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReadArgs {
    path: String,
    start_line: Option<usize>,
    end_line: Option<usize>,
}

/// A `.gitignore`-aware walker that never follows links and never enters `.git`.
pub fn walker(dir: &std::path::Path) -> ignore::WalkBuilder {
    let mut b = ignore::WalkBuilder::new(dir);
    b.hidden(false)
        .require_git(false)
        .follow_links(false)
        .filter_entry(|e| e.file_name() != ".git");
    b
}

pub fn list_files(ctx: &Ctx, args: ListArgs) -> Result<String, ToolError> {
    let given = args.path.as_deref().unwrap_or("");
    let dir = paths::resolve(ctx.root(), given)?;
    if !dir.is_dir() {
        return Err(ToolError::new(
            "not_found",
            format!("{} is not a directory", display(ctx.root(), &dir)),
        ));
    }
    let mut files = Vec::new();
    for entry in walker(&dir).build().flatten() {
        if entry.file_type().is_some_and(|t| t.is_file()) {
            files.push(display(ctx.root(), entry.path()));
        }
        if files.len() > MAX_LISTED {
            break;
        }
    }
    files.sort();
    let more = files.len() > MAX_LISTED;
    files.truncate(MAX_LISTED);
    let mut out = files.join("\n");
    if more {
        out.push_str(&format!(
            "\n[listing stopped at {MAX_LISTED} files; list a subdirectory or use get_project_structure]"
        ));
    }
    if out.is_empty() {
        out = "[no files]".into();
    }
    Ok(out)
}

pub fn read_file(ctx: &Ctx, args: ReadArgs) -> Result<String, ToolError> {
    let file = text::load(ctx, &args.path, false)?;
    let lines = text::lines(&file.text);
    let total = lines.len();
    let start = args.start_line.unwrap_or(1);
    if start == 0 || args.end_line == Some(0) {
        return Err(ToolError::new("bad_arguments", "line numbers start at 1"));
    }
    if total == 0 {
        return Ok(format!("{} (empty file)", file.rel));
    }
    if start > total {
        return Err(ToolError::new(
            "bad_arguments",
            format!(
                "start_line {start} is past the end: {} has {total} lines",
                file.rel
            ),
        ));
    }
    let end = args.end_line.unwrap_or(total).min(total);
    if end < start {
        return Err(ToolError::new(
            "bad_arguments",
            format!("end_line {end} is before start_line {start}"),
        ));
    }
    // Cut at the line or byte limit, whichever comes first.
    let mut last = start - 1;
    let mut bytes = 0;
    while last < end && last - (start - 1) < MAX_LINES_OUT {
        bytes += lines[last].len() + 8;
        if bytes > MAX_BYTES_OUT && last >= start {
            break;
        }
        last += 1;
    }
    let mut out = format!("{} (lines {start}-{last} of {total})\n", file.rel);
    out.push_str(&text::numbered(&lines[start - 1..last], start, width(last)));
    if last < end {
        out.push_str(&format!(
            "[lines {}-{end} not shown: read on with start_line={}]\n",
            last + 1,
            last + 1
        ));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::super::WriteScope;
    use super::super::testutil::*;

    #[tokio::test]
    async fn list_files_respects_gitignore_and_hides_git() {
        let (dir, mut tb) = repo(WriteScope::None);
        let listing = ok(&mut tb, "list_files", json!({})).await;
        assert_eq!(
            listing,
            ".github/hive.yml\n.gitignore\nREADME.md\ndocs/spec/api.md\nsrc/calc.py\nsrc/util.py\ntests/test_calc.py"
        );
        assert_eq!(
            ok(&mut tb, "list_files", json!({"path": "src"})).await,
            "src/calc.py\nsrc/util.py"
        );
        std::fs::create_dir(dir.path().join("empty")).unwrap();
        assert_eq!(
            ok(&mut tb, "list_files", json!({"path": "empty"})).await,
            "[no files]"
        );
        assert_eq!(
            fails(&mut tb, "list_files", json!({"path": "nope"}))
                .await
                .kind,
            "not_found"
        );
        assert_eq!(
            fails(&mut tb, "list_files", json!({"path": 3})).await.kind,
            "bad_arguments"
        );
    }

    #[tokio::test]
    async fn read_file_numbers_lines_and_takes_ranges() {
        let (dir, mut tb) = repo(WriteScope::None);
        let body: String = (1..=12).map(|i| format!("line {i}\n")).collect();
        std::fs::write(dir.path().join("src/long.py"), &body).unwrap();
        assert_eq!(
            ok(&mut tb, "read_file", json!({"path": "src/calc.py"})).await,
            "src/calc.py (lines 1-2 of 2)\n1| def f():\n2|     return 1\n"
        );
        assert_eq!(
            ok(
                &mut tb,
                "read_file",
                json!({"path": "./src/long.py", "start_line": 9, "end_line": 10})
            )
            .await,
            "src/long.py (lines 9-10 of 12)\n 9| line 9\n10| line 10\n"
        );
        let tail = ok(
            &mut tb,
            "read_file",
            json!({"path": "src/long.py", "start_line": 11, "end_line": 99}),
        )
        .await;
        assert!(
            tail.starts_with("src/long.py (lines 11-12 of 12)"),
            "{tail}"
        );
        std::fs::write(dir.path().join("empty.txt"), "").unwrap();
        assert_eq!(
            ok(&mut tb, "read_file", json!({"path": "empty.txt"})).await,
            "empty.txt (empty file)"
        );
    }

    #[tokio::test]
    async fn read_file_cuts_long_files_and_says_where_to_go_on() {
        let (dir, mut tb) = repo(WriteScope::None);
        let body: String = (1..=2500).map(|i| format!("{i}\n")).collect();
        std::fs::write(dir.path().join("big.txt"), body).unwrap();
        let out = ok(&mut tb, "read_file", json!({"path": "big.txt"})).await;
        assert!(
            out.starts_with("big.txt (lines 1-2000 of 2500)"),
            "{}",
            &out[..40]
        );
        assert!(out.ends_with("[lines 2001-2500 not shown: read on with start_line=2001]\n"));
    }

    #[tokio::test]
    async fn read_file_errors() {
        let (dir, mut tb) = repo(WriteScope::None);
        std::fs::write(dir.path().join("bin.dat"), b"a\0b").unwrap();
        let huge = std::fs::File::create(dir.path().join("huge.txt")).unwrap();
        huge.set_len(super::text::MAX_FILE_BYTES + 1).unwrap();
        for (args, want) in [
            (json!({"path": "nope.py"}), "not_found"),
            (json!({"path": "src"}), "not_a_file"),
            (json!({"path": "bin.dat"}), "binary"),
            (json!({"path": "huge.txt"}), "too_large"),
            (
                json!({"path": "src/calc.py", "start_line": 0}),
                "bad_arguments",
            ),
            (
                json!({"path": "src/calc.py", "start_line": 5}),
                "bad_arguments",
            ),
            (
                json!({"path": "src/calc.py", "start_line": 2, "end_line": 1}),
                "bad_arguments",
            ),
            (
                json!({"path": "src/calc.py", "start_line": -1}),
                "bad_arguments",
            ),
            (
                json!({"path": "src/calc.py", "lines": "1-2"}),
                "bad_arguments",
            ),
            (json!({"path": "../x"}), "bad_path"),
        ] {
            assert_eq!(
                fails(&mut tb, "read_file", args.clone()).await.kind,
                want,
                "{args}"
            );
        }
    }
}
