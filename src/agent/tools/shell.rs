//! `shell`: runs a command line the model writes in the role's own sandbox — the container the
//! gates run in, with no network, the role's limits, and the paths the role may not change
//! mounted read-only where the hive locks them. It is bounded like every tool: a time limit per
//! call that the model may lower and never raise (a command still running then is killed, and
//! the answer says so), and an answer of the output's head and tail with its whole size said.
//!
//! What a command changes outside the role's write scope is put back right after it (tracked
//! files restored from the branch's head, through the file tools' confinement), and the commit
//! takes only what the scope allows whatever changed it; files a command creates are not part
//! of the change (the file tools write those). The bot judges the work only by the gates it
//! runs itself.

use std::path::Path;
use std::time::Duration;

use serde::Deserialize;

use super::{CommandRunner, WriteScope};
use crate::agent::ToolError;
use crate::agent::paths;
use crate::sandbox::CommandOutput;

/// Lines and bytes of the output's beginning shown.
const HEAD_LINES: usize = 60;
const HEAD_BYTES: usize = 6 * 1024;
/// Lines and bytes of its end shown.
const TAIL_LINES: usize = 150;
const TAIL_BYTES: usize = 12 * 1024;
/// The longest command line taken.
const MAX_COMMAND: usize = 8 * 1024;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ShellArgs {
    command: String,
    #[serde(default)]
    timeout_seconds: Option<u64>,
}

/// Runs `args.command` in the runner's sandbox; the answer, which starts with the command's
/// status line, and the tracked files it changed within `scope` (part of the change). `root`
/// and `scope` are the toolbox's.
pub async fn run(
    runner: &CommandRunner,
    root: &Path,
    scope: &WriteScope,
    args: ShellArgs,
) -> Result<(String, Vec<String>), ToolError> {
    let command = args.command.trim();
    if command.is_empty() || command.contains('\0') || command.len() > MAX_COMMAND {
        return Err(ToolError::new(
            "bad_arguments",
            format!("give one command line of 1 to {MAX_COMMAND} bytes, without NUL"),
        ));
    }
    let limit = runner.timeout;
    let timeout = match args.timeout_seconds {
        Some(0) => {
            return Err(ToolError::new(
                "bad_arguments",
                "timeout_seconds must be at least 1",
            ));
        }
        Some(s) => Duration::from_secs(s).min(limit),
        None => limit,
    };
    let snapshot = match runner.worktree.clone() {
        Some(wt) => {
            let (root, scope) = (root.to_owned(), scope.clone());
            tokio::task::spawn_blocking(move || before(&wt, &root, &scope))
                .await
                .unwrap_or_default()
        }
        None => Before::new(),
    };
    let failed = |e| ToolError::new("command_failed", format!("could not run it: {e}"));
    let out = runner
        .sandbox
        .get()
        .await
        .map_err(failed)?
        .exec(command, timeout)
        .await
        .map_err(failed)?;
    let mut text = status_line(&out, timeout);
    if args.timeout_seconds.is_some_and(|s| s > limit.as_secs()) {
        text.push_str(&format!(
            " (asked for {} s; a command may run {} s at most)",
            args.timeout_seconds.unwrap_or_default(),
            limit.as_secs()
        ));
    }
    text.push('\n');
    text.push_str(&head_and_tail(&out.output));
    let mut kept = Vec::new();
    // The sandbox put back the locked tests; the role's scope is settled here.
    let mut put_back = out.put_back.clone();
    if let Some(wt) = runner.worktree.clone() {
        let (root, scope) = (root.to_owned(), scope.clone());
        let settled = move || settle(&wt, &root, &scope, &snapshot);
        let (more, changed) = tokio::task::spawn_blocking(settled)
            .await
            .unwrap_or_else(|e| (vec![format!("(cannot check what it changed: {e})")], vec![]));
        kept = changed;
        put_back.extend(more);
    }
    if !put_back.is_empty() {
        text.push_str(&format!(
            "\n[it changed files this role may not change; they were put back and are not \
             part of the change: {}]\n",
            put_back.join(", ")
        ));
    }
    Ok((text, kept))
}

/// "exit code 1 after 0.4 s", or how it was stopped.
fn status_line(out: &CommandOutput, timeout: Duration) -> String {
    let secs = out.duration.as_secs_f64();
    if out.timed_out {
        return format!(
            "killed at its time limit of {} s: it was still running (a narrower command, or a \
             timeout_seconds that fits it, answers sooner)",
            timeout.as_secs()
        );
    }
    format!("{} after {secs:.1} s", out.describe())
}

/// The output for the model: whole when short, else its first and last lines with what was
/// left out and the whole size said.
fn head_and_tail(output: &str) -> String {
    let total = crate::sandbox::output_bytes(output);
    if output.trim().is_empty() {
        return "(no output)\n".into();
    }
    let lines: Vec<&str> = output.lines().collect();
    let fits = output.len() <= HEAD_BYTES + TAIL_BYTES && lines.len() <= HEAD_LINES + TAIL_LINES;
    if fits && total == output.len() {
        let mut s = output.to_owned();
        if !s.ends_with('\n') {
            s.push('\n');
        }
        return s;
    }
    let head = take(&lines, HEAD_LINES, HEAD_BYTES, false);
    let tail = take(&lines[head.len()..], TAIL_LINES, TAIL_BYTES, true);
    let hidden = lines.len() - head.len() - tail.len();
    let more = if total > output.len() { " or more" } else { "" };
    format!(
        "[{total} bytes, {} lines{more} in all: the first {} and the last {} lines shown]\n{}\n[… {hidden} lines{more} not shown …]\n{}\n",
        lines.len(),
        head.len(),
        tail.len(),
        head.join("\n"),
        tail.join("\n"),
    )
}

/// Up to `max_lines` lines and about `max_bytes` from the start of `lines` (or its end), each
/// line cut at 500 characters.
fn take<'a>(lines: &[&'a str], max_lines: usize, max_bytes: usize, from_end: bool) -> Vec<String> {
    let mut out = Vec::new();
    let mut bytes = 0;
    let mut pick = |line: &&'a str| {
        let shown: String = match line.char_indices().nth(500) {
            Some((i, _)) => format!("{}… (line cut)", &line[..i]),
            None => (*line).to_owned(),
        };
        bytes += shown.len() + 1;
        (out.len() < max_lines && bytes <= max_bytes).then(|| out.push(shown))
    };
    if from_end {
        for l in lines.iter().rev() {
            if pick(l).is_none() {
                break;
            }
        }
        out.reverse();
    } else {
        for l in lines {
            if pick(l).is_none() {
                break;
            }
        }
    }
    out
}

/// The tracked files of `wt` that already differ from the branch's head outside `scope` before
/// a command (the bot's own doing: the Breaker's tests copied in for the Builder), with their
/// content then (`None`: absent).
type Before = std::collections::BTreeMap<String, Option<Vec<u8>>>;

/// Largest file whose content is kept to put back.
const KEEP_BYTES: u64 = 4 << 20;

fn outside(
    wt: &crate::workspace::Worktree,
    scope: &WriteScope,
) -> Result<(Vec<String>, Vec<String>), String> {
    let changes = wt.changes().map_err(|e| e.to_string())?;
    Ok(changes
        .into_iter()
        .filter(|(_, tracked)| *tracked)
        .map(|(path, _)| path)
        .partition(|path| scope.check(path).is_err()))
}

fn content(root: &Path, path: &str) -> Option<Vec<u8>> {
    crate::untrusted::files::read(root, path, KEEP_BYTES).ok()
}

/// What [`settle`] compares with, taken before a command runs.
fn before(wt: &crate::workspace::Worktree, root: &Path, scope: &WriteScope) -> Before {
    let Ok((out, _)) = outside(wt, scope) else {
        return Before::new();
    };
    out.into_iter()
        .map(|p| {
            let c = content(root, &p);
            (p, c)
        })
        .collect()
}

/// Puts back each tracked file of `wt` a command changed outside `scope` (as it was before the
/// command, written through the file tools' confinement): the paths put back (with why where
/// one could not be), and the tracked files changed within `scope`.
fn settle(
    wt: &crate::workspace::Worktree,
    root: &Path,
    scope: &WriteScope,
    before: &Before,
) -> (Vec<String>, Vec<String>) {
    let (out, inside) = match outside(wt, scope) {
        Ok(split) => split,
        Err(e) => return (vec![format!("(cannot check what it changed: {e})")], vec![]),
    };
    let mut paths_now: std::collections::BTreeSet<String> = out.into_iter().collect();
    paths_now.extend(before.keys().cloned());
    let mut put_back = Vec::new();
    for path in paths_now {
        let wanted = match before.get(&path) {
            Some(was) => was.clone(),
            None => match wt.head_blob(&path) {
                Ok(blob) => blob,
                Err(e) => {
                    put_back.push(format!("{path} (not put back: {e}; not committed)"));
                    continue;
                }
            },
        };
        if content(root, &path) == wanted {
            continue;
        }
        let done = match &wanted {
            Some(bytes) => paths::write(root, &path, bytes).map(|_| ()),
            None => paths::remove(root, &path),
        };
        put_back.push(match done {
            Ok(()) => path,
            Err(e) => format!("{path} (not put back: {}; not committed)", e.message),
        });
    }
    (put_back, inside)
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use serde_json::json;

    use super::super::testutil::*;
    use super::*;
    use crate::sandbox::{Backend, Deferred, SandboxSpec};

    async fn runner(root: &Path, timeout: u64) -> CommandRunner {
        let mut spec = SandboxSpec::probe("unused", root, "shell-test", false);
        spec.repo = "acme/calc".into();
        CommandRunner {
            sandbox: Arc::new(Deferred::new(Backend::Local, spec)),
            commands: vec![],
            timeout: Duration::from_secs(timeout),
            shell: true,
            worktree: None,
        }
    }

    #[tokio::test]
    async fn a_command_line_runs_at_the_root_within_its_time_limit() {
        let (dir, tb) = repo(anything());
        let mut tb = tb.with_commands(runner(dir.path(), 3).await);
        assert!(tb.specs().iter().any(|s| s.name == "shell"));
        let out = ok(
            &mut tb,
            "shell",
            json!({"command": "cat src/calc.py; exit 4"}),
        )
        .await;
        assert!(
            out.starts_with("exit code 4 after ") && out.ends_with(FILE_BODY),
            "{out}"
        );
        // The model may lower the limit…
        let out = ok(
            &mut tb,
            "shell",
            json!({"command": "sleep 30", "timeout_seconds": 1}),
        )
        .await;
        assert!(out.starts_with("killed at its time limit of 1 s"), "{out}");
        // …never raise it.
        let out = ok(
            &mut tb,
            "shell",
            json!({"command": "sleep 30", "timeout_seconds": 3600}),
        )
        .await;
        assert!(
            out.starts_with("killed at its time limit of 3 s")
                && out.contains("(asked for 3600 s; a command may run 3 s at most)"),
            "{out}"
        );
        let out = ok(&mut tb, "shell", json!({"command": "seq 1 200000"})).await;
        assert!(
            out.contains("lines or more in all") && out.ends_with("200000\n"),
            "{out}"
        );
        assert!(out.len() < 20_000, "{}", out.len());
        for bad in [
            json!({"command": "  "}),
            json!({"command": "ls", "timeout_seconds": 0}),
        ] {
            assert_eq!(
                kind(tb.call("shell", &bad.to_string()).await),
                "bad_arguments"
            );
        }
    }

    #[tokio::test]
    async fn roles_without_the_shell_do_not_get_it() {
        let (dir, tb) = repo(anything());
        let mut r = runner(dir.path(), 3).await;
        r.shell = false;
        let mut tb = tb.with_commands(r);
        assert!(!tb.specs().iter().any(|s| s.name == "shell"));
        assert_eq!(
            kind(tb.call("shell", r#"{"command":"ls"}"#).await),
            "not_allowed"
        );
    }

    #[test]
    fn long_output_is_its_head_and_tail_with_its_size() {
        let out: String = (0..100_000).map(|i| format!("line {i}\n")).collect();
        let shown = head_and_tail(&out);
        assert!(
            shown.starts_with(&format!(
                "[{} bytes, 100000 lines in all: the first 60 and the last 150 lines shown]\nline 0\n",
                out.len()
            )),
            "{}",
            &shown[..200]
        );
        assert!(shown.contains("line 59\n[… 99790 lines not shown …]\nline 99850\n"));
        assert!(shown.ends_with("line 99999\n"));
        assert!(
            shown.len() < HEAD_BYTES + TAIL_BYTES + 500,
            "{}",
            shown.len()
        );
        // One huge line is cut, not passed on.
        let wide = format!("{}\nend\n", "x".repeat(1 << 20));
        let shown = head_and_tail(&wide);
        assert!(
            shown.contains("… (line cut)") && shown.len() < 2_000,
            "{shown}"
        );
        assert_eq!(head_and_tail("ok\n"), "ok\n");
        assert_eq!(head_and_tail(""), "(no output)\n");
    }

    #[test]
    fn output_the_sandbox_cut_says_its_whole_size() {
        let mut buf = crate::sandbox::CappedBuffer::new(1024);
        for i in 0..10_000 {
            buf.push(format!("row {i}\n").as_bytes());
        }
        let out = buf.finish();
        let shown = head_and_tail(&out);
        let total: usize = (0..10_000).map(|i| format!("row {i}\n").len()).sum();
        assert!(
            shown.starts_with(&format!("[{total} bytes, ")) && shown.contains("lines or more"),
            "{shown}"
        );
        assert!(shown.ends_with("row 9999\n"), "{shown}");
    }
}
