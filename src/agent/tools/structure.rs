//! `get_project_structure`: an indented tree of the worktree (`.gitignore` respected, `.git`
//! hidden, links shown but not followed), directories first. Entries are chosen breadth-first
//! so a cap keeps the upper levels whole; a directory cut by the depth or the cap shows how many
//! files it holds, and a partly shown one ends with `… N more`.

use std::collections::BTreeMap;

use serde::Deserialize;

use super::Ctx;
use super::filter::Globs;
use super::read::walker;
use crate::agent::ToolError;
use crate::agent::paths::{self, Kind, display};

const DEFAULT_DEPTH: usize = 3;
const MAX_DEPTH: usize = 5;
const DEFAULT_ENTRIES: usize = 500;
const MAX_ENTRIES: usize = 5000;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StructureArgs {
    path: Option<String>,
    max_depth: Option<usize>,
    #[serde(default)]
    include: Vec<String>,
    #[serde(default)]
    exclude: Vec<String>,
    max_files: Option<usize>,
}

#[derive(Default)]
struct Node {
    dirs: BTreeMap<String, Node>,
    files: Vec<String>,
    /// Files in this directory and below.
    total: usize,
    expanded: bool,
    shown_dirs: usize,
    shown_files: usize,
}

impl Node {
    fn sort(&mut self) {
        self.files.sort_unstable();
        self.dirs.values_mut().for_each(Node::sort);
    }

    fn insert(&mut self, parts: &[&str], is_dir: bool) {
        match parts {
            [] => {}
            [name] if is_dir => {
                self.dirs.entry((*name).to_owned()).or_default();
            }
            [name] => {
                self.files.push((*name).to_owned());
                self.total += 1;
            }
            [dir, rest @ ..] => {
                if !is_dir {
                    self.total += 1;
                }
                self.dirs
                    .entry((*dir).to_owned())
                    .or_default()
                    .insert(rest, is_dir);
            }
        }
    }
}

pub fn structure(ctx: &Ctx, args: StructureArgs) -> Result<String, ToolError> {
    let include = Globs::new(&args.include, "include")?;
    let exclude = Globs::new(&args.exclude, "exclude")?;
    let depth = args.max_depth.unwrap_or(DEFAULT_DEPTH).clamp(1, MAX_DEPTH);
    let budget = args
        .max_files
        .unwrap_or(DEFAULT_ENTRIES)
        .clamp(1, MAX_ENTRIES);
    let given = args.path.as_deref().unwrap_or("");
    let base = paths::resolve(ctx.root(), given)?;
    let base_rel = display(ctx.root(), &base);
    if !base_rel.is_empty() && paths::kind(ctx.root(), given)? != Some(Kind::Dir) {
        return Err(ToolError::new(
            "not_found",
            format!("{base_rel} is not a directory"),
        ));
    }
    let mut root = Node::default();
    let mut dirs = 0usize;
    let root_path = ctx.root().to_owned();
    let mut walk = walker(&base);
    let prune = exclude.clone();
    walk.filter_entry(move |e| {
        e.file_name() != ".git"
            && !(e.depth() > 0
                && e.file_type().is_some_and(|t| t.is_dir())
                && prune.matches_dir(&display(&root_path, e.path())))
    });
    for entry in walk.build().flatten() {
        if entry.depth() == 0 {
            continue;
        }
        let Ok(inner) = entry.path().strip_prefix(&base) else {
            continue;
        };
        let inner = inner.to_string_lossy().replace('\\', "/");
        let parts: Vec<&str> = inner.split('/').collect();
        let rel = display(ctx.root(), entry.path());
        let ft = entry.file_type();
        if ft.is_some_and(|t| t.is_dir()) {
            dirs += 1;
            if include.is_empty() {
                root.insert(&parts, true);
            }
            continue;
        }
        if exclude.matches_file(&rel) || (!include.is_empty() && !include.matches_file(&rel)) {
            continue;
        }
        if ft.is_some_and(|t| t.is_symlink()) {
            let mut parts = parts.clone();
            let shown = format!(
                "{} -> (link, not followed)",
                parts.pop().unwrap_or_default()
            );
            parts.push(&shown);
            root.insert(&parts, false);
        } else {
            root.insert(&parts, false);
        }
    }
    root.sort();
    let cut_by_cap = choose(&mut root, depth, budget);
    let title = if base_rel.is_empty() { "." } else { &base_rel };
    let dirs = match dirs {
        1 => "1 directory".to_owned(),
        n => format!("{n} directories"),
    };
    let mut out = format!("{title}/ ({}, {dirs}; depth {depth})\n", files(root.total));
    render(&root, "", &mut out);
    if cut_by_cap {
        out.push_str(&format!(
            "[stopped at {budget} entries: ask for a subdirectory, filter with include/exclude, or raise max_files (at most {MAX_ENTRIES})]\n"
        ));
    }
    if args.max_depth.is_some_and(|d| d > MAX_DEPTH) {
        out.push_str(&format!("[max_depth is at most {MAX_DEPTH}]\n"));
    }
    Ok(out)
}

/// Marks the entries to show, level by level, until `budget` entries; true when the budget cut
/// something.
fn choose(root: &mut Node, depth: usize, mut budget: usize) -> bool {
    let mut level: Vec<&mut Node> = vec![root];
    let mut cut = false;
    for _ in 0..depth {
        let mut next = Vec::new();
        for node in level {
            let room = budget;
            node.shown_dirs = node.dirs.len().min(budget);
            budget -= node.shown_dirs;
            node.shown_files = node.files.len().min(budget);
            budget -= node.shown_files;
            node.expanded = true;
            cut |= node.shown_dirs + node.shown_files < node.dirs.len() + node.files.len();
            if room == 0 {
                node.expanded = false;
            }
            let shown = node.shown_dirs;
            next.extend(node.dirs.values_mut().take(shown));
        }
        level = next;
    }
    cut
}

fn render(node: &Node, indent: &str, out: &mut String) {
    let deeper = format!("{indent}  ");
    for (name, child) in node.dirs.iter().take(node.shown_dirs) {
        if child.expanded {
            out.push_str(&format!("{indent}{name}/\n"));
            render(child, &deeper, out);
        } else {
            out.push_str(&format!("{indent}{name}/ ({})\n", files(child.total)));
        }
    }
    for name in node.files.iter().take(node.shown_files) {
        out.push_str(&format!("{indent}{name}\n"));
    }
    let hidden_dirs = node.dirs.len() - node.shown_dirs;
    let hidden_files = node.files.len() - node.shown_files;
    if hidden_dirs + hidden_files > 0 {
        let under: usize = node
            .dirs
            .values()
            .skip(node.shown_dirs)
            .map(|d| d.total)
            .sum();
        out.push_str(&format!(
            "{indent}… {} more ({})\n",
            hidden_dirs + hidden_files,
            files(under + hidden_files)
        ));
    }
}

fn files(n: usize) -> String {
    match n {
        0 => "no files".into(),
        1 => "1 file".into(),
        n => format!("{n} files"),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::super::WriteScope;
    use super::super::testutil::*;

    async fn tree(args: serde_json::Value) -> String {
        let (_dir, mut tb) = repo(WriteScope::None);
        ok(&mut tb, "get_project_structure", args).await
    }

    #[tokio::test]
    async fn an_indented_tree_directories_first() {
        assert_eq!(
            tree(json!({})).await,
            "./ (7 files, 5 directories; depth 3)\n.github/\n  hive.yml\ndocs/\n  spec/\n    api.md\nsrc/\n  calc.py\n  util.py\ntests/\n  test_calc.py\n.gitignore\nREADME.md\n"
        );
        assert_eq!(
            tree(json!({"path": "src"})).await,
            "src/ (2 files, 0 directories; depth 3)\ncalc.py\nutil.py\n"
        );
    }

    #[tokio::test]
    async fn depth_and_cap_cut_with_counts() {
        assert_eq!(
            tree(json!({"max_depth": 1})).await,
            "./ (7 files, 5 directories; depth 1)\n.github/ (1 file)\ndocs/ (1 file)\nsrc/ (2 files)\ntests/ (1 file)\n.gitignore\nREADME.md\n"
        );
        let capped = tree(json!({"max_files": 5})).await;
        assert!(capped.ends_with("src/ (2 files)\ntests/ (1 file)\n.gitignore\n… 1 more (1 file)\n[stopped at 5 entries: ask for a subdirectory, filter with include/exclude, or raise max_files (at most 5000)]\n"), "{capped}");
        // Breadth first: the top level is whole before anything deeper is shown.
        assert_eq!(
            tree(json!({"max_files": 7, "max_depth": 9})).await,
            "./ (7 files, 5 directories; depth 5)\n.github/\n  hive.yml\ndocs/ (1 file)\nsrc/ (2 files)\ntests/ (1 file)\n.gitignore\nREADME.md\n[stopped at 7 entries: ask for a subdirectory, filter with include/exclude, or raise max_files (at most 5000)]\n[max_depth is at most 5]\n"
        );
    }

    #[tokio::test]
    async fn include_and_exclude() {
        assert_eq!(
            tree(json!({"include": ["*.py"]})).await,
            "./ (3 files, 5 directories; depth 3)\nsrc/\n  calc.py\n  util.py\ntests/\n  test_calc.py\n"
        );
        assert_eq!(
            tree(json!({"exclude": ["tests/", "*.md", "/.github"]})).await,
            "./ (3 files, 3 directories; depth 3)\ndocs/\n  spec/\nsrc/\n  calc.py\n  util.py\n.gitignore\n"
        );
    }

    #[tokio::test]
    async fn errors() {
        let (_dir, mut tb) = repo(WriteScope::None);
        for (args, want) in [
            (json!({"include": ["["]}), "bad_arguments"),
            (json!({"exclude": "tests"}), "bad_arguments"),
            (json!({"depth": 2}), "bad_arguments"),
            (json!({"path": "nope"}), "not_found"),
            (json!({"path": "README.md"}), "not_found"),
            (json!({"path": "../"}), "bad_path"),
        ] {
            assert_eq!(
                fails(&mut tb, "get_project_structure", args.clone())
                    .await
                    .kind,
                want,
                "{args}"
            );
        }
    }
}
