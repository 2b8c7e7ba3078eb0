//! Every tool refuses paths that leave the worktree: `..`, absolute paths, `.git`, a link to a
//! directory outside, and a link to a file outside; the walking tools do not follow links.

use serde_json::{Value, json};

use super::testutil::*;

/// The repository, with `out -> <outside dir>` and `link.py -> <outside>/secret.py`.
fn linked() -> (tempfile::TempDir, tempfile::TempDir, super::Toolbox) {
    let (dir, tb) = repo(anything());
    let outside = tempfile::tempdir().unwrap();
    std::fs::write(outside.path().join("secret.py"), "TOKEN = 'hunter2'\n").unwrap();
    std::os::unix::fs::symlink(outside.path(), dir.path().join("out")).unwrap();
    std::os::unix::fs::symlink(outside.path().join("secret.py"), dir.path().join("link.py"))
        .unwrap();
    (dir, outside, tb)
}

const BAD: [&str; 6] = [
    "../secret.py",
    "src/../../secret.py",
    "/etc/passwd",
    ".git/config",
    "out/secret.py",
    "link.py",
];

fn calls(bad: &str) -> Vec<(&'static str, Value)> {
    let patch = |p: &str| {
        format!("--- a/{p}\n+++ b/{p}\n@@ -1 +1 @@\n-TOKEN = 'hunter2'\n+TOKEN = 'mine'\n")
    };
    vec![
        ("read_file", json!({ "path": bad })),
        ("write_file", json!({ "path": bad, "content": "x" })),
        (
            "edit_file",
            json!({ "path": bad, "search": "TOKEN", "replace": "X" }),
        ),
        (
            "edit_file",
            json!({ "path": bad, "start_line": 1, "end_line": 1, "content": "X" }),
        ),
        ("apply_patch", json!({ "patch": patch(bad) })),
        (
            "apply_patch",
            json!({ "patch": format!("--- /dev/null\n+++ b/{bad}\n@@ -0,0 +1 @@\n+x\n") }),
        ),
        ("delete_file", json!({ "path": bad })),
        ("move_file", json!({ "from": bad, "to": "src/stolen.py" })),
        (
            "move_file",
            json!({ "from": "src/util.py", "to": bad, "overwrite": true }),
        ),
        ("search_files", json!({ "pattern": "TOKEN", "path": bad })),
        ("get_project_structure", json!({ "path": bad })),
        ("list_files", json!({ "path": bad })),
    ]
}

#[tokio::test]
async fn every_tool_refuses_paths_that_leave_the_worktree() {
    let (dir, outside, mut tb) = linked();
    let before = (snapshot(dir.path()), snapshot(outside.path()));
    for bad in BAD.into_iter().chain(["out/new.py", "out"]) {
        for (tool, args) in calls(bad) {
            let e = fails(&mut tb, tool, args.clone()).await;
            assert_eq!(e.kind, "bad_path", "{tool} {args}: {e}");
        }
    }
    assert_eq!((snapshot(dir.path()), snapshot(outside.path())), before);
    assert!(tb.written().is_empty());
}

#[tokio::test]
async fn walking_tools_do_not_follow_links() {
    let (_dir, _outside, mut tb) = linked();
    let found = ok(
        &mut tb,
        "search_files",
        json!({ "pattern": "TOKEN|hunter2" }),
    )
    .await;
    assert!(found.starts_with("no matches"), "{found}");
    let tree = ok(&mut tb, "get_project_structure", json!({ "max_depth": 5 })).await;
    assert!(tree.contains("link.py -> (link, not followed)"), "{tree}");
    assert!(tree.contains("out -> (link, not followed)"), "{tree}");
    assert!(!tree.contains("secret"), "{tree}");
    let listing = ok(&mut tb, "list_files", json!({})).await;
    assert!(
        !listing.contains("secret") && !listing.contains("link.py"),
        "{listing}"
    );
}
