//! `write_file`, `delete_file` and `move_file`. Every path is confined ([`crate::agent::paths`])
//! and checked against the toolbox's [`super::WriteScope`] — a move at both ends — before
//! anything changes; a move never replaces a file unless asked to.

use serde::Deserialize;

use super::text::MAX_WRITE_BYTES;
use super::{Ctx, Done};
use crate::agent::ToolError;
use crate::agent::paths::{self, Kind, display};

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WriteArgs {
    path: String,
    content: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DeleteArgs {
    path: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MoveArgs {
    from: String,
    to: String,
    #[serde(default)]
    overwrite: bool,
}

/// Confines `rel` and checks it against the write scope; returns it normalized.
pub fn writable(ctx: &Ctx, rel: &str) -> Result<String, ToolError> {
    let shown = display(ctx.root(), &paths::resolve(ctx.root(), rel)?);
    if shown.is_empty() {
        return Err(ToolError::path(
            rel,
            "is the repository root; give a file path",
        ));
    }
    ctx.scope.check(&shown)?;
    Ok(shown)
}

pub fn check_size(len: usize) -> Result<(), ToolError> {
    if len > MAX_WRITE_BYTES {
        return Err(ToolError::new(
            "too_large",
            format!("the new content is {len} bytes; the limit is {MAX_WRITE_BYTES}"),
        ));
    }
    Ok(())
}

pub fn write_file(ctx: &Ctx, args: WriteArgs) -> Result<Done, ToolError> {
    let rel = writable(ctx, &args.path)?;
    check_size(args.content.len())?;
    let created = paths::write(ctx.root(), &rel, args.content.as_bytes())?;
    let verb = if created { "created" } else { "replaced" };
    Ok(Done {
        text: format!("{verb} {rel} ({} bytes)", args.content.len()),
        changed: vec![rel],
    })
}

pub fn delete_file(ctx: &Ctx, args: DeleteArgs) -> Result<Done, ToolError> {
    let rel = writable(ctx, &args.path)?;
    if paths::kind(ctx.root(), &rel)? == Some(Kind::Dir) {
        return Err(ToolError::new(
            "not_a_file",
            format!("{rel} is a directory; delete its files one by one"),
        ));
    }
    paths::remove(ctx.root(), &rel)?;
    Ok(Done {
        text: format!("deleted {rel}"),
        changed: vec![rel],
    })
}

pub fn move_file(ctx: &Ctx, args: MoveArgs) -> Result<Done, ToolError> {
    let from = writable(ctx, &args.from)?;
    let to = writable(ctx, &args.to)?;
    if from == to {
        return Err(ToolError::new(
            "bad_arguments",
            format!("from and to are both {from}"),
        ));
    }
    match paths::kind(ctx.root(), &from)? {
        None => {
            return Err(ToolError::new(
                "not_found",
                format!("{from} does not exist"),
            ));
        }
        Some(Kind::Dir) => {
            return Err(ToolError::new(
                "not_a_file",
                format!("{from} is a directory; move its files one by one"),
            ));
        }
        Some(_) => {}
    }
    match paths::kind(ctx.root(), &to)? {
        Some(Kind::File) if !args.overwrite => {
            return Err(ToolError::new(
                "already_exists",
                format!("{to} exists; set overwrite to true to replace it"),
            ));
        }
        Some(Kind::Dir) => {
            return Err(ToolError::new(
                "already_exists",
                format!("{to} is a directory; give the new file's full path"),
            ));
        }
        _ => {}
    }
    paths::rename(ctx.root(), &from, &to)?;
    Ok(Done {
        text: format!("moved {from} to {to}"),
        changed: vec![from, to],
    })
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::super::testutil::*;

    #[tokio::test]
    async fn write_file_creates_and_replaces() {
        let (dir, mut tb) = repo(anything());
        let out = ok(
            &mut tb,
            "write_file",
            json!({"path": "pkg/new/b.py", "content": "x = 2\n"}),
        )
        .await;
        assert_eq!(out, "created pkg/new/b.py (6 bytes)");
        assert_eq!(read(dir.path(), "pkg/new/b.py"), "x = 2\n");
        let out = ok(
            &mut tb,
            "write_file",
            json!({"path": "./src/calc.py", "content": ""}),
        )
        .await;
        assert_eq!(out, "replaced src/calc.py (0 bytes)");
        assert_eq!(
            tb.written().iter().collect::<Vec<_>>(),
            ["pkg/new/b.py", "src/calc.py"]
        );
    }

    #[tokio::test]
    async fn write_file_errors() {
        let (_dir, mut tb) = repo(builder_scope());
        let big = "x".repeat(super::MAX_WRITE_BYTES + 1);
        for (args, want) in [
            (json!({"path": "src", "content": "x"}), "not_a_file"),
            (json!({"path": "", "content": "x"}), "bad_path"),
            (json!({"path": ".git/config", "content": "x"}), "bad_path"),
            (json!({"path": "src/a.py", "content": big}), "too_large"),
            (json!({"path": "src/a.py"}), "bad_arguments"),
            (
                json!({"path": "src/a.py", "content": "x", "mode": "append"}),
                "bad_arguments",
            ),
            (
                json!({"path": ".github/hive.yml", "content": "x"}),
                "read_only",
            ),
        ] {
            assert_eq!(
                fails(&mut tb, "write_file", args.clone()).await.kind,
                want,
                "{args}"
            );
        }
        assert!(tb.written().is_empty());
    }

    #[tokio::test]
    async fn delete_file_removes_files_only() {
        let (dir, mut tb) = repo(anything());
        assert_eq!(
            ok(&mut tb, "delete_file", json!({"path": "src/util.py"})).await,
            "deleted src/util.py"
        );
        assert!(!dir.path().join("src/util.py").exists());
        assert!(tb.written().contains("src/util.py"));
        assert_eq!(
            fails(&mut tb, "delete_file", json!({"path": "src/util.py"}))
                .await
                .kind,
            "not_found"
        );
        assert_eq!(
            fails(&mut tb, "delete_file", json!({"path": "src"}))
                .await
                .kind,
            "not_a_file"
        );
        assert_eq!(
            fails(&mut tb, "delete_file", json!({"path": ""}))
                .await
                .kind,
            "bad_path"
        );
        assert_eq!(
            fails(&mut tb, "delete_file", json!({})).await.kind,
            "bad_arguments"
        );
    }

    #[tokio::test]
    async fn move_file_moves_and_does_not_overwrite_unless_asked() {
        let (dir, mut tb) = repo(anything());
        let out = ok(
            &mut tb,
            "move_file",
            json!({"from": "src/util.py", "to": "lib/helpers.py"}),
        )
        .await;
        assert_eq!(out, "moved src/util.py to lib/helpers.py");
        assert!(!dir.path().join("src/util.py").exists());
        assert_eq!(
            read(dir.path(), "lib/helpers.py"),
            super::super::testutil::FILE_BODY
        );
        assert_eq!(
            tb.written().iter().collect::<Vec<_>>(),
            ["lib/helpers.py", "src/util.py"]
        );
        let e = fails(
            &mut tb,
            "move_file",
            json!({"from": "README.md", "to": "src/calc.py"}),
        )
        .await;
        assert_eq!(e.kind, "already_exists");
        assert_eq!(
            read(dir.path(), "src/calc.py"),
            super::super::testutil::FILE_BODY
        );
        ok(
            &mut tb,
            "move_file",
            json!({"from": "README.md", "to": "src/calc.py", "overwrite": true}),
        )
        .await;
        assert!(read(dir.path(), "src/calc.py").starts_with("# Calc"));
        for (args, want) in [
            (json!({"from": "nope.py", "to": "x.py"}), "not_found"),
            (json!({"from": "src", "to": "x"}), "not_a_file"),
            (
                json!({"from": "src/calc.py", "to": "docs"}),
                "already_exists",
            ),
            (
                json!({"from": "src/calc.py", "to": "./src/calc.py"}),
                "bad_arguments",
            ),
            (json!({"from": "src/calc.py"}), "bad_arguments"),
        ] {
            assert_eq!(
                fails(&mut tb, "move_file", args.clone()).await.kind,
                want,
                "{args}"
            );
        }
    }
}
