//! What an agent may write. The agent layer knows nothing of roles: the hive gives each role a
//! [`WriteScope`] (nothing, only some paths, or everything but some paths), and every write tool
//! checks every path it would change, both ends of a move included, before changing any.

use crate::agent::ToolError;
use crate::pathset::PathSet;

/// The paths a toolbox may create, change, delete or move.
#[derive(Debug, Clone)]
pub enum WriteScope {
    /// Nothing: the write tools are not offered at all.
    None,
    /// Only paths in this set.
    Only(PathSet),
    /// Every path but those in any of these sets.
    Except(Vec<PathSet>),
}

impl WriteScope {
    /// False for [`WriteScope::None`].
    pub fn allows_writes(&self) -> bool {
        !matches!(self, WriteScope::None)
    }

    /// Refuses `rel` (relative, `/`-separated) with a `read_only` error naming the rule.
    pub fn check(&self, rel: &str) -> Result<(), ToolError> {
        match self {
            WriteScope::None => Err(ToolError::new(
                "read_only",
                format!("{rel} cannot be changed: this role may not write files"),
            )),
            WriteScope::Only(set) if !set.contains(rel) => Err(ToolError::new(
                "read_only",
                format!(
                    "{rel} is outside what this role may write (only: {})",
                    shown(set.patterns())
                ),
            )),
            WriteScope::Only(_) => Ok(()),
            WriteScope::Except(sets) => match sets.iter().find(|s| s.contains(rel)) {
                Some(set) => {
                    let rule = set
                        .patterns()
                        .iter()
                        .find(|p| PathSet::new(std::slice::from_ref(*p)).contains(rel))
                        .map_or_else(|| shown(set.patterns()), |p| shown(std::slice::from_ref(p)));
                    Err(ToolError::new(
                        "read_only",
                        format!("{rel} is read-only for this role (it matches {rule})"),
                    ))
                }
                None => Ok(()),
            },
        }
    }
}

/// Patterns as globs: `tests/` is shown as `tests/**`.
fn shown(patterns: &[String]) -> String {
    if patterns.is_empty() {
        return "no paths".into();
    }
    patterns
        .iter()
        .map(|p| match p.strip_suffix('/') {
            Some(dir) => format!("{dir}/**"),
            None => p.clone(),
        })
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::super::testutil::*;
    use super::*;

    #[test]
    fn messages_name_the_rule() {
        let only = only_tests();
        assert!(only.check("tests/test_x.py").is_ok());
        let e = only.check("src/calc.py").unwrap_err();
        assert_eq!(e.kind, "read_only");
        assert_eq!(
            e.message,
            "src/calc.py is outside what this role may write (only: tests/**)"
        );
        let except = builder_scope();
        assert!(except.check("src/calc.py").is_ok());
        let e = except.check("docs/spec/api.md").unwrap_err();
        assert_eq!(
            e.message,
            "docs/spec/api.md is read-only for this role (it matches docs/spec/**)"
        );
        assert!(except.check("tests/test_calc.py").is_err());
        assert!(WriteScope::None.check("a").is_err());
        assert!(!WriteScope::None.allows_writes());
    }

    /// Every write tool, under every scope: what the scope refuses is refused, the tree is left
    /// as it was, and what it allows goes through.
    #[tokio::test]
    async fn every_write_tool_honours_every_scope() {
        // (scope, a path it allows, a path it refuses)
        let cases = [
            (only_tests(), "tests/test_calc.py", "src/calc.py"),
            (builder_scope(), "src/calc.py", "tests/test_calc.py"),
            (builder_scope(), "src/calc.py", "docs/spec/api.md"),
        ];
        for (scope, allowed, refused) in cases {
            for (tool, args) in write_calls(allowed, refused) {
                let (dir, mut tb) = repo(scope.clone());
                let before = snapshot(dir.path());
                let err = tb.call(tool, &args).await.unwrap_err();
                assert_eq!(err.kind, "read_only", "{tool} {args}: {err}");
                assert!(err.message.contains(refused), "{}", err.message);
                assert_eq!(snapshot(dir.path()), before, "{tool} changed the tree");
                assert!(tb.written().is_empty());
            }
            for (tool, args) in write_calls(allowed, allowed) {
                let (_dir, mut tb) = repo(scope.clone());
                tb.call(tool, &args)
                    .await
                    .unwrap_or_else(|e| panic!("{tool} {args}: {e}"));
                assert!(
                    tb.written().iter().any(|w| w.starts_with(allowed)),
                    "{tool}"
                );
            }
        }
    }

    /// A call of each write tool that would change `target` (a move goes both ways; the
    /// patch also changes `ok`, which must not happen when `target` is refused).
    fn write_calls(ok: &str, target: &str) -> Vec<(&'static str, String)> {
        let hunk = |p: &str| {
            format!(
                "--- a/{p}\n+++ b/{p}\n@@ -1 +1 @@\n-{}\n+changed\n",
                first(p)
            )
        };
        let patch = if ok == target {
            hunk(target)
        } else {
            hunk(ok) + &hunk(target)
        };
        let calls = [
            ("write_file", json!({"path": target, "content": "x\n"})),
            (
                "edit_file",
                json!({"path": target, "search": first(target), "replace": "changed"}),
            ),
            (
                "edit_file",
                json!({"path": target, "start_line": 1, "end_line": 1, "content": "changed"}),
            ),
            ("apply_patch", json!({ "patch": patch })),
            (
                "apply_patch",
                json!({"patch": format!("--- /dev/null\n+++ b/{target}.new\n@@ -0,0 +1 @@\n+new\n")}),
            ),
            ("delete_file", json!({ "path": target })),
            (
                "move_file",
                json!({"from": target, "to": format!("{ok}.moved")}),
            ),
            (
                "move_file",
                json!({"from": ok, "to": format!("{target}.copy")}),
            ),
        ];
        calls.into_iter().map(|(t, v)| (t, v.to_string())).collect()
    }

    /// The first line of a file of the test repository.
    fn first(path: &str) -> &'static str {
        if path.ends_with(".md") {
            "# API"
        } else {
            "def f():"
        }
    }
}
