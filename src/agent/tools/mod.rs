//! The agent's tools over one worktree. Reading: `list_files`, `read_file`, `search_files`,
//! `get_project_structure`. Writing, within a [`WriteScope`]: `write_file`, `edit_file`,
//! `apply_patch`, `delete_file`, `move_file`. With a [`CommandRunner`]: `run_command`, which runs
//! one of a fixed list of named commands in the sandbox, and `shell`, a command line of the
//! model's in that sandbox. The repository's instructions for agents come with the answers of
//! tools that open files in directories they govern ([`Guide`]).
//!
//! Every path goes through [`super::paths`]. Arguments are strict JSON (unknown fields refused);
//! failures are [`ToolError`]s with a kind the model can act on. The file tools run on the
//! blocking pool so a large search does not stall the runtime.

mod command;
mod edit;
mod filter;
mod guide;
mod patch;
mod patch_parse;
mod read;
mod scope;
mod search;
mod shell;
mod specs;
mod structure;
mod text;
mod write;

#[cfg(test)]
mod confinement_tests;
#[cfg(test)]
mod patch_tests;
#[cfg(test)]
mod testutil;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::json;

use super::ToolError;
use crate::llm::ToolSpec;
pub use command::CommandRunner;
pub use guide::Guide;
pub use scope::WriteScope;

/// `apply_patch`'s parser and applier on text alone, without a worktree (fuzzing): the text
/// `before` patched by each file of the unified diff `patch`, or the first error.
#[doc(hidden)]
pub fn patch_text(before: &str, patch: &str) -> Result<Vec<String>, ToolError> {
    patch_parse::parse(patch)?
        .iter()
        .map(|fp| patch::apply_hunks("file", before, fp))
        .collect()
}

const READ_TOOLS: [&str; 4] = [
    "list_files",
    "read_file",
    "search_files",
    "get_project_structure",
];
const WRITE_TOOLS: [&str; 5] = [
    "write_file",
    "edit_file",
    "apply_patch",
    "delete_file",
    "move_file",
];

/// The tools of one agent run, over one worktree.
pub struct Toolbox {
    ctx: Arc<Ctx>,
    runner: Option<Arc<CommandRunner>>,
    written: BTreeSet<String>,
    guide: Guide,
}

/// What the file tools work on.
struct Ctx {
    root: PathBuf,
    scope: WriteScope,
}

/// A file tool's answer and the paths it changed.
struct Done {
    text: String,
    changed: Vec<String>,
}

impl Done {
    fn read(text: String) -> Self {
        Self {
            text,
            changed: Vec::new(),
        }
    }
}

impl Toolbox {
    pub fn new(root: PathBuf, scope: WriteScope) -> Self {
        Self {
            ctx: Arc::new(Ctx { root, scope }),
            runner: None,
            written: BTreeSet::new(),
            guide: Guide::default(),
        }
    }

    /// Shows the repository's instructions for coding agents as tools open files in the
    /// directories they govern (those in `guide` were shown already).
    pub fn with_guide(mut self, guide: Guide) -> Self {
        self.guide = guide;
        self
    }

    /// The instruction files the role has been shown, up front or since.
    pub fn instructions_shown(&self) -> &BTreeSet<String> {
        self.guide.shown()
    }

    /// Enables `run_command` with the runner's named commands.
    pub fn with_commands(mut self, runner: CommandRunner) -> Self {
        self.runner = Some(Arc::new(runner));
        self
    }

    /// Files created, changed, deleted or moved (both ends) so far, relative to the root.
    pub fn written(&self) -> &BTreeSet<String> {
        &self.written
    }

    /// The tools this toolbox offers: no write tools without a write scope, `run_command` only
    /// with a runner.
    pub fn specs(&self) -> Vec<ToolSpec> {
        let names = self.names();
        specs::all(self.runner.as_deref())
            .into_iter()
            .filter(|s| names.contains(&s.name))
            .collect()
    }

    fn names(&self) -> Vec<&'static str> {
        let mut names = READ_TOOLS.to_vec();
        if self.ctx.scope.allows_writes() {
            names.extend(WRITE_TOOLS);
        }
        if let Some(r) = &self.runner {
            names.push("run_command");
            if r.shell {
                names.push("shell");
            }
        }
        names
    }

    /// Runs one tool call; `arguments` is the model's JSON text.
    pub async fn call(&mut self, name: &str, arguments: &str) -> Result<String, ToolError> {
        let args: serde_json::Value = if arguments.trim().is_empty() {
            json!({})
        } else {
            serde_json::from_str(arguments).map_err(|e| {
                ToolError::new(
                    "bad_arguments",
                    format!("arguments are not valid JSON: {e}"),
                )
            })?
        };
        let names = self.names();
        if !names.contains(&name) {
            return Err(self.unavailable(name, &names));
        }
        if let (Some(r), "run_command" | "shell") = (self.runner.clone(), name) {
            if name == "run_command" {
                return command::run(&r, parse(args)?).await;
            }
            let (text, changed) =
                shell::run(&r, &self.ctx.root, &self.ctx.scope, parse(args)?).await?;
            self.written.extend(changed);
            return Ok(text);
        }
        let ctx = Arc::clone(&self.ctx);
        let owned = name.to_owned();
        let mut opened: Vec<String> = ["path", "from", "to"]
            .iter()
            .filter_map(|k| args.get(*k).and_then(|v| v.as_str()).map(str::to_owned))
            .collect();
        let done = tokio::task::spawn_blocking(move || ctx.call(&owned, args))
            .await
            .map_err(|e| ToolError::new("io", format!("the tool stopped unexpectedly: {e}")))??;
        opened.extend(done.changed.iter().cloned());
        self.written.extend(done.changed);
        let mut text = done.text;
        if let Some(more) = self.guide.more(&opened) {
            text.push_str(&format!("\n\n{more}"));
        }
        Ok(text)
    }

    fn unavailable(&self, name: &str, names: &[&str]) -> ToolError {
        let list = names.join(", ");
        if WRITE_TOOLS.contains(&name) {
            ToolError::new(
                "read_only",
                format!("this role may not change files; its tools are: {list}"),
            )
        } else if name == "run_command" || name == "shell" {
            ToolError::new(
                "not_allowed",
                format!("this role cannot run commands; its tools are: {list}"),
            )
        } else {
            let mut shown = name.to_owned();
            shown.truncate(100);
            ToolError::new(
                "unknown_tool",
                format!("there is no tool {shown:?}; the tools are: {list}"),
            )
        }
    }
}

impl Ctx {
    fn call(&self, name: &str, args: serde_json::Value) -> Result<Done, ToolError> {
        match name {
            "list_files" => read::list_files(self, parse(args)?).map(Done::read),
            "read_file" => read::read_file(self, parse(args)?).map(Done::read),
            "search_files" => search::search_files(self, parse(args)?).map(Done::read),
            "get_project_structure" => structure::structure(self, parse(args)?).map(Done::read),
            "write_file" => write::write_file(self, parse(args)?),
            "edit_file" => edit::edit_file(self, parse(args)?),
            "apply_patch" => patch::apply_patch(self, parse(args)?),
            "delete_file" => write::delete_file(self, parse(args)?),
            "move_file" => write::move_file(self, parse(args)?),
            other => Err(ToolError::new(
                "unknown_tool",
                format!("there is no tool {other:?}"),
            )),
        }
    }

    fn root(&self) -> &Path {
        &self.root
    }
}

fn parse<T: serde::de::DeserializeOwned>(args: serde_json::Value) -> Result<T, ToolError> {
    serde_json::from_value(args).map_err(|e| ToolError::new("bad_arguments", e.to_string()))
}

#[cfg(test)]
mod tests {
    use super::testutil::*;
    use super::*;

    #[tokio::test]
    async fn specs_follow_scope_and_runner() {
        let (_d, tb) = repo(WriteScope::None);
        let names: Vec<_> = tb.specs().iter().map(|s| s.name).collect();
        assert_eq!(names, READ_TOOLS);
        let (_d, tb) = repo(only_tests());
        let names: Vec<_> = tb.specs().iter().map(|s| s.name).collect();
        assert_eq!(names.len(), 9);
        assert!(!names.contains(&"run_command"));
        for s in tb.specs() {
            assert_eq!(s.parameters["type"], "object", "{}", s.name);
            assert_eq!(s.parameters["additionalProperties"], false, "{}", s.name);
        }
    }

    #[test]
    fn the_toolbox_and_its_calls_can_move_between_threads() {
        fn send<T: Send>(_: &T) {}
        let (_d, mut tb) = repo(anything());
        send(&tb);
        send(&tb.call("list_files", "{}"));
    }

    #[tokio::test]
    async fn dispatch_errors_are_structured() {
        let (_d, mut tb) = repo(WriteScope::None);
        assert_eq!(
            kind(tb.call("read_file", "{not json").await),
            "bad_arguments"
        );
        assert_eq!(
            kind(tb.call("read_file", r#"{"file":"a.py"}"#).await),
            "bad_arguments"
        );
        assert_eq!(
            kind(tb.call("delete_everything", "{}").await),
            "unknown_tool"
        );
        assert_eq!(
            kind(tb.call("run_command", r#"{"name":"test"}"#).await),
            "not_allowed"
        );
        let err = tb
            .call("write_file", r#"{"path":"src/x.py","content":""}"#)
            .await
            .unwrap_err();
        assert_eq!(err.kind, "read_only");
        assert!(err.message.contains("list_files"), "{}", err.message);
    }

    /// The first toolbox's tests, on the new API: `.github/` read-only, nothing else.
    fn old_toolbox() -> (tempfile::TempDir, Toolbox) {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join(".github")).unwrap();
        std::fs::write(dir.path().join(".github/hive.yml"), "gates: {}\n").unwrap();
        std::fs::write(dir.path().join("a.py"), "print(1)\n").unwrap();
        std::fs::write(dir.path().join(".gitignore"), "build/\n").unwrap();
        std::fs::create_dir(dir.path().join("build")).unwrap();
        std::fs::write(dir.path().join("build/out.txt"), "x").unwrap();
        let scope = WriteScope::Except(vec![set(&[".github/"])]);
        let tb = Toolbox::new(dir.path().to_owned(), scope);
        (dir, tb)
    }

    #[tokio::test]
    async fn list_read_write() {
        let (dir, mut tb) = old_toolbox();
        let listing = tb.call("list_files", "{}").await.unwrap();
        assert_eq!(listing, ".github/hive.yml\n.gitignore\na.py");
        assert_eq!(
            tb.call("read_file", r#"{"path":"a.py"}"#).await.unwrap(),
            "a.py (lines 1-1 of 1)\n1| print(1)\n"
        );
        tb.call("write_file", r#"{"path":"pkg/b.py","content":"x = 2\n"}"#)
            .await
            .unwrap();
        assert_eq!(read(dir.path(), "pkg/b.py"), "x = 2\n");
        assert!(tb.written().contains("pkg/b.py"));
    }

    #[tokio::test]
    async fn errors_are_structured() {
        let (_dir, mut tb) = old_toolbox();
        assert_eq!(
            kind(tb.call("read_file", "{not json").await),
            "bad_arguments"
        );
        assert_eq!(
            kind(tb.call("read_file", r#"{"file":"a.py"}"#).await),
            "bad_arguments"
        );
        assert_eq!(
            kind(tb.call("read_file", r#"{"path":"nope.py"}"#).await),
            "not_found"
        );
        let ro = r#"{"path":".github/hive.yml","content":""}"#;
        assert_eq!(kind(tb.call("write_file", ro).await), "read_only");
        assert_eq!(
            kind(
                tb.call("write_file", r#"{"path":"../x","content":""}"#)
                    .await
            ),
            "bad_path"
        );
        assert_eq!(
            kind(tb.call("delete_everything", "{}").await),
            "unknown_tool"
        );
    }
}
