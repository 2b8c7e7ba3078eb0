//! Tests of `apply_patch`: several files at once, all or nothing, and its errors.

use serde_json::json;

use super::testutil::*;

const CALC: &str =
    "import math\n\n\ndef add(a, b):\n    return a - b\n\n\ndef mul(a, b):\n    return a + b\n";

fn setup() -> (tempfile::TempDir, super::Toolbox) {
    let (dir, tb) = repo(anything());
    std::fs::write(dir.path().join("src/calc.py"), CALC).unwrap();
    (dir, tb)
}

#[tokio::test]
async fn applies_changes_creations_deletions_and_renames_together() {
    let (dir, mut tb) = setup();
    // The second hunk's line numbers are off by two, as models often write them.
    let patch = "diff --git a/src/calc.py b/src/calc.py\n--- a/src/calc.py\n+++ b/src/calc.py\n@@ -4,2 +4,2 @@\n def add(a, b):\n-    return a - b\n+    return a + b\n@@ -10,2 +10,2 @@\n def mul(a, b):\n-    return a + b\n+    return a * b\n--- /dev/null\n+++ b/src/new.py\n@@ -0,0 +1,2 @@\n+X = 1\n+Y = 2\n--- a/src/util.py\n+++ /dev/null\n@@ -1,2 +0,0 @@\n-def f():\n-    return 1\n--- a/README.md\n+++ b/docs/README.md\n@@ -1 +1 @@\n-# Calc\n+# Calculator\n";
    let out = ok(&mut tb, "apply_patch", json!({ "patch": patch })).await;
    assert_eq!(
        out,
        "applied the patch: changed src/calc.py (2 hunks), created src/new.py, deleted src/util.py, moved README.md to docs/README.md"
    );
    let root = dir.path();
    assert_eq!(
        read(root, "src/calc.py"),
        "import math\n\n\ndef add(a, b):\n    return a + b\n\n\ndef mul(a, b):\n    return a * b\n"
    );
    assert_eq!(read(root, "src/new.py"), "X = 1\nY = 2\n");
    assert!(!root.join("src/util.py").exists() && !root.join("README.md").exists());
    assert_eq!(
        read(root, "docs/README.md"),
        "# Calculator\n\nAdds numbers.\n"
    );
    let written: Vec<_> = tb.written().iter().cloned().collect();
    assert_eq!(
        written,
        [
            "README.md",
            "docs/README.md",
            "src/calc.py",
            "src/new.py",
            "src/util.py"
        ]
    );
}

#[tokio::test]
async fn a_failing_hunk_leaves_the_tree_untouched() {
    let (dir, mut tb) = setup();
    let before = snapshot(dir.path());
    let patch = "--- /dev/null\n+++ b/src/new.py\n@@ -0,0 +1 @@\n+X = 1\n--- a/src/util.py\n+++ /dev/null\n@@ -1,2 +0,0 @@\n-def f():\n-    return 1\n--- a/src/calc.py\n+++ b/src/calc.py\n@@ -4,2 +4,2 @@\n def add(a, b):\n-    return a - b\n+    return a + b\n@@ -8,2 +8,2 @@\n def mul(x, y):\n-    return x + y\n+    return x * y\n";
    let e = fails(&mut tb, "apply_patch", json!({ "patch": patch })).await;
    assert_eq!(e.kind, "patch_failed");
    assert!(e.message.starts_with("src/calc.py: hunk 2 of 2 (@@ -8,2 +8,2 @@) does not match the file: at line 8 the patch expects \"def mul(x, y):\" but the file has \"def mul(a, b):\""), "{}", e.message);
    assert_eq!(snapshot(dir.path()), before);
    assert!(tb.written().is_empty());
}

#[tokio::test]
async fn newlines_whitespace_and_crlf() {
    let (dir, mut tb) = setup();
    std::fs::write(dir.path().join("a.txt"), "one\ntwo").unwrap();
    let patch =
        "--- a/a.txt\n+++ b/a.txt\n@@ -1,2 +1,2 @@\n one\n-two\n\\ No newline at end of file\n+2\n";
    ok(&mut tb, "apply_patch", json!({ "patch": patch })).await;
    assert_eq!(read(dir.path(), "a.txt"), "one\n2\n");
    std::fs::write(dir.path().join("w.txt"), "a  \r\nb\r\n").unwrap();
    let patch = "--- w.txt\n+++ w.txt\n@@ -1,2 +1,2 @@\n a\n-b\n+c\n";
    ok(&mut tb, "apply_patch", json!({ "patch": patch })).await;
    assert_eq!(read(dir.path(), "w.txt"), "a  \r\nc\r\n");
}

#[tokio::test]
async fn errors() {
    let (dir, mut tb) = setup();
    let before = snapshot(dir.path());
    for (patch, want) in [
        ("not a diff", "bad_arguments"),
        (
            "--- /dev/null\n+++ b/src/calc.py\n@@ -0,0 +1 @@\n+x\n",
            "patch_failed",
        ),
        (
            "--- a/src/util.py\n+++ /dev/null\n@@ -1 +0,0 @@\n-def f():\n",
            "patch_failed",
        ),
        (
            "--- a/nope.py\n+++ b/nope.py\n@@ -1 +1 @@\n-a\n+b\n",
            "not_found",
        ),
        (
            "--- a/src/calc.py\n+++ b/src/calc.py\n@@ -1 +1 @@\n-import math\n+import os\n--- a/src/calc.py\n+++ b/src/calc.py\n@@ -2 +2 @@\n-\n+x\n",
            "bad_arguments",
        ),
        ("--- a/../x\n+++ b/../x\n@@ -1 +1 @@\n-a\n+b\n", "bad_path"),
        (
            "--- /dev/null\n+++ /dev/null\n@@ -0,0 +1 @@\n+a\n",
            "bad_arguments",
        ),
    ] {
        assert_eq!(
            fails(&mut tb, "apply_patch", json!({ "patch": patch }))
                .await
                .kind,
            want,
            "{patch}"
        );
    }
    assert_eq!(
        fails(&mut tb, "apply_patch", json!({ "diff": "x" }))
            .await
            .kind,
        "bad_arguments"
    );
    assert_eq!(snapshot(dir.path()), before);
}
