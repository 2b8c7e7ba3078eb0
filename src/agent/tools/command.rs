//! `run_command`: runs one command of a fixed list, chosen by name (`test`, `lint`…), in the
//! worktree's sandbox. The model never gives a command line. The answer is the exit status and
//! the tail of the output; a failing command is an answer, not a tool error (tests are expected
//! to fail while the work is in progress). `command_failed` means the sandbox could not run it.

use std::sync::Arc;
use std::time::Duration;

use serde::Deserialize;

use crate::agent::ToolError;
use crate::sandbox::Deferred;

const TAIL_LINES: usize = 200;
const TAIL_BYTES: usize = 16 * 1024;

/// The named commands a toolbox may run, and where; with `shell`, any command line too
/// ([`super::shell`]).
pub struct CommandRunner {
    pub sandbox: Arc<Deferred>,
    /// `(name, shell command)`, e.g. `("test", "python3 -m pytest -q")`.
    pub commands: Vec<(String, String)>,
    /// Wall-clock limit of one command.
    pub timeout: Duration,
    /// The `shell` tool is offered.
    pub shell: bool,
    /// The worktree the sandbox works on, when the bot made it: what a shell command changed
    /// outside the role's scope is put back through it.
    pub worktree: Option<crate::workspace::Worktree>,
}

impl CommandRunner {
    pub fn names(&self) -> Vec<&str> {
        self.commands.iter().map(|(n, _)| n.as_str()).collect()
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CommandArgs {
    name: String,
}

pub async fn run(runner: &CommandRunner, args: CommandArgs) -> Result<String, ToolError> {
    let Some((name, script)) = runner.commands.iter().find(|(n, _)| *n == args.name) else {
        let mut shown = args.name;
        shown.truncate(100);
        let allowed = runner.names();
        let list = if allowed.is_empty() {
            "none are configured".to_owned()
        } else {
            format!("the allowed names are: {}", allowed.join(", "))
        };
        return Err(ToolError::new(
            "not_allowed",
            format!(
                "no command is named {shown:?}; run_command takes a name, not a command line; {list}"
            ),
        ));
    };
    let failed = |e| ToolError::new("command_failed", format!("could not run {name}: {e}"));
    let sandbox = runner.sandbox.get().await.map_err(failed)?;
    let out = sandbox.exec(script, runner.timeout).await.map_err(failed)?;
    let mut text = format!(
        "{name} ({script}): {} after {:.1} s\n",
        out.describe(),
        out.duration.as_secs_f64()
    );
    let tail = tail(&out.output);
    if tail.trim().is_empty() {
        text.push_str("(no output)\n");
    } else {
        let total = out.output.lines().count();
        let shown = tail.lines().count();
        if shown < total {
            text.push_str(&format!("[last {shown} of {total} lines of output]\n"));
        }
        text.push_str(&tail);
        if !tail.ends_with('\n') {
            text.push('\n');
        }
    }
    if !out.put_back.is_empty() {
        text.push_str(&format!(
            "[it changed the locked tests; they were put back: {}]\n",
            out.put_back.join(", ")
        ));
    }
    Ok(text)
}

/// The last lines of `output`, at most [`TAIL_LINES`] and about [`TAIL_BYTES`].
fn tail(output: &str) -> String {
    let lines: Vec<&str> = output.lines().collect();
    let mut start = lines.len();
    let mut bytes = 0;
    while start > 0 && lines.len() - start < TAIL_LINES {
        bytes += lines[start - 1].len() + 1;
        if bytes > TAIL_BYTES && start < lines.len() {
            break;
        }
        start -= 1;
    }
    let mut out = lines[start..].join("\n");
    if out.len() > TAIL_BYTES {
        let mut cut = out.len() - TAIL_BYTES;
        while !out.is_char_boundary(cut) {
            cut += 1;
        }
        out = format!("…{}", &out[cut..]);
    }
    out
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::time::Duration;

    use serde_json::json;

    use super::super::testutil::*;
    use super::*;
    use crate::sandbox::{Backend, Deferred, SandboxSpec};

    async fn runner(root: &std::path::Path) -> CommandRunner {
        let spec = SandboxSpec {
            repo: "acme/calc".into(),
            ticket: "T-1".into(),
            role: "builder".into(),
            worktree: root.to_owned(),
            read_only: vec![],
            locked: vec![],
            image: "unused".into(),
            network: false,
            cpus: 1.0,
            memory_mb: 512,
            pids: 64,
            disk_mb: 256,
            cache: None,
            cache_writable: false,
            ca_bundle: None,
            env: vec![],
            prepare: None,
        };
        CommandRunner {
            sandbox: Arc::new(Deferred::new(Backend::Local, spec)),
            commands: vec![
                (
                    "test".into(),
                    "echo ran in $(basename $PWD); ls src; exit 3".into(),
                ),
                (
                    "noisy".into(),
                    "i=0; while [ $i -lt 500 ]; do echo line $i; i=$((i+1)); done".into(),
                ),
                ("slow".into(), "sleep 5".into()),
            ],
            timeout: Duration::from_secs(2),
            shell: false,
            worktree: None,
        }
    }

    #[tokio::test]
    async fn runs_an_allowed_name_in_the_sandbox() {
        let (dir, tb) = repo(anything());
        let name = dir
            .path()
            .file_name()
            .unwrap()
            .to_string_lossy()
            .into_owned();
        let mut tb = tb.with_commands(runner(dir.path()).await);
        assert!(tb.specs().iter().any(|s| s.name == "run_command"));
        let out = ok(&mut tb, "run_command", json!({"name": "test"})).await;
        assert!(
            out.starts_with(
                "test (echo ran in $(basename $PWD); ls src; exit 3): exit code 3 after"
            ),
            "{out}"
        );
        assert!(
            out.contains(&format!("ran in {name}\ncalc.py\nutil.py\n")),
            "{out}"
        );
        let out = ok(&mut tb, "run_command", json!({"name": "noisy"})).await;
        assert!(
            out.contains("[last 200 of 500 lines of output]\nline 300\n"),
            "{out}"
        );
        assert!(out.ends_with("line 499\n"));
        let out = ok(&mut tb, "run_command", json!({"name": "slow"})).await;
        assert!(out.contains("timed out"), "{out}");
    }

    #[tokio::test]
    async fn only_names_from_the_list_run() {
        let (dir, tb) = repo(anything());
        let mut tb = tb.with_commands(runner(dir.path()).await);
        let e = fails(&mut tb, "run_command", json!({"name": "deploy"})).await;
        assert_eq!(e.kind, "not_allowed");
        assert!(
            e.message
                .ends_with("the allowed names are: test, noisy, slow"),
            "{}",
            e.message
        );
        let e = fails(
            &mut tb,
            "run_command",
            json!({"name": "touch pwned; echo test"}),
        )
        .await;
        assert_eq!(e.kind, "not_allowed");
        assert!(!dir.path().join("pwned").exists());
        let e = fails(
            &mut tb,
            "run_command",
            json!({"name": "test", "command": "rm -rf /"}),
        )
        .await;
        assert_eq!(e.kind, "bad_arguments");
        let e = fails(&mut tb, "run_command", json!({"command": "ls"})).await;
        assert_eq!(e.kind, "bad_arguments");
    }

    #[tokio::test]
    async fn a_sandbox_that_cannot_start_the_command_is_command_failed() {
        let (dir, tb) = repo(anything());
        let mut tb = tb.with_commands(runner(&dir.path().join("gone")).await);
        let e = fails(&mut tb, "run_command", json!({"name": "test"})).await;
        assert_eq!(e.kind, "command_failed");
        assert!(
            e.message.starts_with("could not run test:"),
            "{}",
            e.message
        );
    }

    #[test]
    fn tail_keeps_the_end() {
        let long: String = (0..10).map(|i| format!("{i}\n")).collect();
        assert_eq!(tail(&long), "0\n1\n2\n3\n4\n5\n6\n7\n8\n9");
        let wide = "é".repeat(20_000);
        let t = tail(&wide);
        assert!(t.starts_with('…') && t.len() <= TAIL_BYTES + 4);
    }
}
