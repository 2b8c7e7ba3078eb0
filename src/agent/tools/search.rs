//! `search_files`: a regular-expression search over the worktree with ripgrep's crates —
//! `ignore` walks it (`.gitignore` respected, links not followed, `.git` skipped) and
//! `grep-searcher` with `grep-regex` scans each file (binary files skipped), on the walker's
//! threads. Hits are `path:line: text`, in path order, capped (200 by default) with a note when
//! cut.

use std::io::Read as _;
use std::os::unix::fs::OpenOptionsExt as _;
use std::path::Path;
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

use grep_regex::{RegexMatcher, RegexMatcherBuilder};
use grep_searcher::sinks::Lossy;
use grep_searcher::{BinaryDetection, SearcherBuilder};
use ignore::WalkState;
use serde::Deserialize;

use super::Ctx;
use super::filter::Globs;
use super::read::walker;
use crate::agent::ToolError;
use crate::agent::paths::{self, Kind, display};

const DEFAULT_RESULTS: usize = 200;
const MAX_RESULTS: usize = 1000;
const MAX_LINE_CHARS: usize = 300;
/// Only the first 4 MiB of a file are searched.
const MAX_FILE_BYTES: u64 = 4 * 1024 * 1024;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SearchArgs {
    pattern: String,
    path: Option<String>,
    glob: Option<String>,
    max_results: Option<usize>,
}

pub fn search_files(ctx: &Ctx, args: SearchArgs) -> Result<String, ToolError> {
    if args.pattern.is_empty() {
        return Err(ToolError::new("bad_arguments", "pattern is empty"));
    }
    let matcher = RegexMatcherBuilder::new()
        .line_terminator(Some(b'\n'))
        .size_limit(10 * 1024 * 1024)
        .build(&args.pattern)
        .map_err(|e| {
            ToolError::new(
                "bad_arguments",
                format!("pattern is not a valid regular expression (Rust regex syntax): {e}"),
            )
        })?;
    let globs = match &args.glob {
        Some(g) => Some(Globs::new(std::slice::from_ref(g), "glob")?),
        None => None,
    };
    let max = args
        .max_results
        .unwrap_or(DEFAULT_RESULTS)
        .clamp(1, MAX_RESULTS);
    let base = paths::resolve(ctx.root(), args.path.as_deref().unwrap_or(""))?;
    let base_rel = display(ctx.root(), &base);
    if !base_rel.is_empty()
        && !matches!(
            paths::kind(ctx.root(), &base_rel)?,
            Some(Kind::Dir | Kind::File)
        )
    {
        return Err(ToolError::new(
            "not_found",
            format!("{base_rel} does not exist"),
        ));
    }
    let found = scan(ctx, &base, &matcher, globs.as_ref(), max);
    let files_searched = found.searched;
    let files_hit = found.files.len();
    let mut hits: Vec<String> = found.files.into_iter().flat_map(|(_, h)| h).collect();
    let capped = hits.len() > max;
    hits.truncate(max);
    let where_ = if base_rel.is_empty() {
        "the repository".to_owned()
    } else {
        base_rel
    };
    if hits.is_empty() {
        return Ok(format!(
            "no matches for /{}/ in {where_} ({files_searched} files searched)",
            args.pattern
        ));
    }
    let mut out = hits.join("\n");
    if capped {
        out.push_str(&format!(
            "\n[stopped at {max} matches; narrow the pattern, path or glob, or raise max_results (at most {MAX_RESULTS})]"
        ));
    } else {
        out.push_str(&format!(
            "\n[{} in {}]",
            plural(hits.len(), "match", "matches"),
            plural(files_hit, "file", "files")
        ));
    }
    Ok(out)
}

/// Matching lines per file, in path order.
struct Found {
    files: Vec<(String, Vec<String>)>,
    searched: usize,
}

/// Searches every file under `base` on the walker's threads. Each file keeps at most `max + 1`
/// hits, and the walk stops once more than `max` were found in all: a capped answer is the
/// first hits in path order among the files searched by then.
fn scan(
    ctx: &Ctx,
    base: &Path,
    matcher: &RegexMatcher,
    globs: Option<&Globs>,
    max: usize,
) -> Found {
    let files = Mutex::new(Vec::new());
    let total = AtomicUsize::new(0);
    let searched = AtomicUsize::new(0);
    walker(base).build_parallel().run(|| {
        let mut searcher = SearcherBuilder::new()
            .line_number(true)
            .binary_detection(BinaryDetection::quit(0))
            .bom_sniffing(false)
            .build();
        let (files, total, searched) = (&files, &total, &searched);
        Box::new(move |entry| {
            if total.load(Ordering::Relaxed) > max {
                return WalkState::Quit;
            }
            let Ok(entry) = entry else {
                return WalkState::Continue;
            };
            if !entry.file_type().is_some_and(|t| t.is_file()) {
                return WalkState::Continue;
            }
            let rel = display(ctx.root(), entry.path());
            if globs.is_some_and(|g| !g.matches_file(&rel)) {
                return WalkState::Continue;
            }
            // A link swapped in since the walk saw a file is not followed.
            let Ok(file) = std::fs::OpenOptions::new()
                .read(true)
                .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
                .open(entry.path())
            else {
                return WalkState::Continue;
            };
            searched.fetch_add(1, Ordering::Relaxed);
            let mut hits = Vec::new();
            let sink = Lossy(|line_no, line: &str| {
                hits.push(format!("{rel}:{line_no}: {}", cut(line.trim_end())));
                Ok(hits.len() <= max)
            });
            // An unreadable file is skipped like a binary one.
            let _ = searcher.search_reader(matcher, file.take(MAX_FILE_BYTES), sink);
            if !hits.is_empty() {
                total.fetch_add(hits.len(), Ordering::Relaxed);
                if let Ok(mut f) = files.lock() {
                    f.push((rel, hits));
                }
            }
            WalkState::Continue
        })
    });
    let mut files = files.into_inner().unwrap_or_default();
    files.sort_unstable_by(|a, b| a.0.cmp(&b.0));
    Found {
        files,
        searched: searched.into_inner(),
    }
}

fn plural(n: usize, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

fn cut(line: &str) -> String {
    if line.chars().count() <= MAX_LINE_CHARS {
        return line.to_owned();
    }
    let kept: String = line.chars().take(MAX_LINE_CHARS).collect();
    format!("{kept}…")
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::super::WriteScope;
    use super::super::testutil::*;

    #[tokio::test]
    async fn finds_lines_with_numbers_and_respects_gitignore() {
        let (dir, mut tb) = repo(WriteScope::None);
        std::fs::write(dir.path().join("build/gen.py"), "def f():\n").unwrap();
        let out = ok(&mut tb, "search_files", json!({"pattern": r"def \w+\(\)"})).await;
        assert_eq!(
            out,
            "src/calc.py:1: def f():\nsrc/util.py:1: def f():\ntests/test_calc.py:1: def f():\n[3 matches in 3 files]"
        );
        let out = ok(
            &mut tb,
            "search_files",
            json!({"pattern": "return", "path": "src", "glob": "calc.*"}),
        )
        .await;
        assert_eq!(out, "src/calc.py:2:     return 1\n[1 match in 1 file]");
        let out = ok(
            &mut tb,
            "search_files",
            json!({"pattern": "(?i)adds", "path": "README.md"}),
        )
        .await;
        assert!(out.starts_with("README.md:3: Adds numbers."), "{out}");
        let out = ok(
            &mut tb,
            "search_files",
            json!({"pattern": "gates", "glob": ".github/**"}),
        )
        .await;
        assert_eq!(out, ".github/hive.yml:1: gates: {}\n[1 match in 1 file]");
        let out = ok(
            &mut tb,
            "search_files",
            json!({"pattern": "zzz", "path": "./"}),
        )
        .await;
        assert_eq!(
            out,
            "no matches for /zzz/ in the repository (7 files searched)"
        );
    }

    #[tokio::test]
    async fn results_are_capped_with_a_note() {
        let (dir, mut tb) = repo(WriteScope::None);
        let body: String = (0..300).map(|i| format!("hit {i}\n")).collect();
        std::fs::write(dir.path().join("many.txt"), body).unwrap();
        std::fs::write(dir.path().join("bin.dat"), b"hit\0hit").unwrap();
        let out = ok(&mut tb, "search_files", json!({"pattern": "^hit"})).await;
        assert_eq!(out.lines().count(), 201);
        assert!(out.ends_with("[stopped at 200 matches; narrow the pattern, path or glob, or raise max_results (at most 1000)]"));
        assert!(!out.contains("bin.dat"));
        let out = ok(
            &mut tb,
            "search_files",
            json!({"pattern": "^hit", "max_results": 5}),
        )
        .await;
        assert_eq!(out.lines().count(), 6);
    }

    #[tokio::test]
    async fn errors() {
        let (_dir, mut tb) = repo(WriteScope::None);
        for (args, want) in [
            (json!({"pattern": "("}), "bad_arguments"),
            (json!({"pattern": ""}), "bad_arguments"),
            (json!({"pattern": "x", "glob": "["}), "bad_arguments"),
            (json!({"pattern": "x", "regex": true}), "bad_arguments"),
            (json!({"pattern": "x", "path": "nope"}), "not_found"),
            (json!({"pattern": "x", "path": "/etc"}), "bad_path"),
        ] {
            assert_eq!(
                fails(&mut tb, "search_files", args.clone()).await.kind,
                want,
                "{args}"
            );
        }
    }
}
