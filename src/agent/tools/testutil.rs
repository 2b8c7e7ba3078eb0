//! A small repository and scopes shared by the tool tests.

use std::collections::BTreeMap;
use std::path::Path;

use super::{Toolbox, WriteScope};
use crate::agent::ToolError;
use crate::pathset::PathSet;

/// The body of every `.py` file of the test repository.
pub const FILE_BODY: &str = "def f():\n    return 1\n";

/// A repository: sources, tests, a read-only spec, `.github/`, and ignored files.
pub fn repo(scope: WriteScope) -> (tempfile::TempDir, Toolbox) {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    for (path, body) in [
        (".github/hive.yml", "gates: {}\n"),
        (".gitignore", "build/\n*.log\n"),
        ("build/out.txt", "x\n"),
        ("debug.log", "x\n"),
        ("README.md", "# Calc\n\nAdds numbers.\n"),
        ("src/calc.py", FILE_BODY),
        ("src/util.py", FILE_BODY),
        ("tests/test_calc.py", FILE_BODY),
        ("docs/spec/api.md", "# API\n"),
    ] {
        std::fs::create_dir_all(root.join(path).parent().unwrap()).unwrap();
        std::fs::write(root.join(path), body).unwrap();
    }
    std::fs::write(root.join(".git"), "gitdir: /elsewhere\n").unwrap();
    let tb = Toolbox::new(root.to_owned(), scope);
    (dir, tb)
}

pub fn set(patterns: &[&str]) -> PathSet {
    PathSet::new(&patterns.iter().map(|p| p.to_string()).collect::<Vec<_>>())
}

/// The Breaker's scope.
pub fn only_tests() -> WriteScope {
    WriteScope::Only(set(&["tests/"]))
}

/// The Builder's scope: not the tests, not the read-only paths.
pub fn builder_scope() -> WriteScope {
    WriteScope::Except(vec![set(&["tests/"]), set(&[".github/", "docs/spec/"])])
}

/// A scope that may write everything.
pub fn anything() -> WriteScope {
    WriteScope::Except(vec![])
}

pub fn kind(r: Result<String, ToolError>) -> &'static str {
    match r {
        Ok(text) => panic!("expected an error, got {text:?}"),
        Err(e) => e.kind,
    }
}

/// Calls a tool that must succeed.
pub async fn ok(tb: &mut Toolbox, name: &str, args: serde_json::Value) -> String {
    tb.call(name, &args.to_string())
        .await
        .unwrap_or_else(|e| panic!("{name} {args}: {e}"))
}

/// Calls a tool that must fail; returns the error.
pub async fn fails(tb: &mut Toolbox, name: &str, args: serde_json::Value) -> ToolError {
    match tb.call(name, &args.to_string()).await {
        Ok(text) => panic!("{name} {args} succeeded: {text}"),
        Err(e) => e,
    }
}

/// Every file under `root` (links as their target text) with its content.
pub fn snapshot(root: &Path) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    let mut stack = vec![root.to_owned()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap().flatten() {
            let path = entry.path();
            let rel = path
                .strip_prefix(root)
                .unwrap()
                .to_string_lossy()
                .into_owned();
            let ft = entry.file_type().unwrap();
            if ft.is_symlink() {
                let target = std::fs::read_link(&path).unwrap();
                out.insert(rel, format!("-> {}", target.display()));
            } else if ft.is_dir() {
                out.insert(format!("{rel}/"), String::new());
                stack.push(path);
            } else {
                out.insert(rel, std::fs::read_to_string(&path).unwrap_or_default());
            }
        }
    }
    out
}

pub fn read(root: &Path, rel: &str) -> String {
    std::fs::read_to_string(root.join(rel)).unwrap()
}
