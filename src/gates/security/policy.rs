//! Policy: banned calls and banned imports in Python, found with Python's own parser. The
//! checker is `policy.py` (embedded here; its docstring states what it resolves), run by the
//! gate pipeline in a fresh sandbox over the changed files as `head` has them in git (written
//! out of the commit's blobs, not read from a worktree the change's own code ran in), as
//! `<the image's python3> -I -S -c '<script>' '<json>'`: the interpreter by its path in the
//! image, never through a `PATH` an environment sets; `-I` keeps the repository's directory
//! (and `PYTHON*` variables, user site-packages) off `sys.path`, so a planted `ast.py` or
//! `json.py` cannot replace the standard library; `-S` skips `site`, so no `.pth` file or
//! `sitecustomize` runs before the check.
//!
//! Flow: [`changed_python_files`] → [`policy_commands`] (or [`policy_command`]) → run each
//! in the sandbox → [`policy_result`] on each output (or [`parse_policy_output`] for the bare
//! findings). Only [`policy_result`] tells a clean run from a run that never finished.

use git2::{Delta, DiffOptions, Oid, Repository};
use serde::Deserialize;

use crate::annotation::{Annotation, Level};
use crate::sandbox::CommandOutput;

/// Title of policy findings.
pub const TITLE: &str = "policy";

/// The checker, run with `python3 -I -S -c`.
pub const SCRIPT: &str = include_str!("policy.py");

/// Most bytes in one command. `sh -c <command>` passes the command as one argument, and
/// Linux refuses a single argument over 128 KiB (`MAX_ARG_STRLEN`); this leaves a margin.
pub const MAX_COMMAND_BYTES: usize = 120 * 1024;

pub use crate::sandbox::quote;

/// Where images keep their own Python (Debian's, the official images'), looked for in order.
const PYTHONS: [&str; 2] = ["/usr/bin/python3", "/usr/local/bin/python3"];

fn prefix() -> String {
    let tries: Vec<String> = PYTHONS
        .iter()
        .map(|p| format!("[ -x {p} ] && exec {p} -I -S -c {} \"$@\"", quote(SCRIPT)))
        .collect();
    format!(
        "{}; echo 'vibeloop: the image has no python3 at {}' >&2; exit 127",
        tries.join("; "),
        PYTHONS.join(" or ")
    )
}

/// The shell command that runs the policy check over `files` (relative .py paths) in the
/// worktree's root. Names with a NUL byte (impossible in git) are left out. The command may
/// exceed [`MAX_COMMAND_BYTES`] for thousands of files: [`policy_commands`] splits them.
pub fn policy_command(
    files: &[String],
    banned_calls: &[String],
    banned_imports: &[String],
) -> String {
    let files: Vec<&String> = files.iter().filter(|f| !f.contains('\0')).collect();
    let arg = serde_json::json!({
        "files": files,
        "banned_calls": banned_calls,
        "banned_imports": banned_imports,
    });
    // The JSON argument as "$1" of the script around the tries (`sh -c 'script' sh '<json>'`).
    format!(
        "/bin/sh -c {} sh {}",
        quote(&prefix()),
        quote(&arg.to_string())
    )
}

/// [`policy_command`] over `files` in as many commands as needed to keep each below
/// [`MAX_COMMAND_BYTES`] (an empty list when there are no files).
pub fn policy_commands(
    files: &[String],
    banned_calls: &[String],
    banned_imports: &[String],
) -> Vec<String> {
    let fixed = policy_command(&[], banned_calls, banned_imports).len();
    let mut commands = Vec::new();
    let (mut chunk, mut size): (Vec<String>, usize) = (Vec::new(), fixed);
    for file in files.iter().filter(|f| !f.contains('\0')) {
        // The file's share of the quoted JSON: its JSON string, quoted, and a comma.
        let json = serde_json::Value::from(file.as_str()).to_string();
        let cost = quote(&json).len() - 2 + 1;
        if !chunk.is_empty() && size + cost > MAX_COMMAND_BYTES {
            commands.push(policy_command(&chunk, banned_calls, banned_imports));
            (chunk, size) = (Vec::new(), fixed);
        }
        chunk.push(file.clone());
        size += cost;
    }
    if !chunk.is_empty() {
        commands.push(policy_command(&chunk, banned_calls, banned_imports));
    }
    commands
}

/// Writes `files` as commit `commit` has them into `dir` (directories made; a path that is
/// not plain, or not a file in the commit, is left out).
pub fn write_blobs(
    repo: &Repository,
    commit: Oid,
    files: &[String],
    dir: &std::path::Path,
) -> Result<(), git2::Error> {
    let tree = repo.find_commit(commit)?.tree()?;
    for f in files {
        let path = std::path::Path::new(f);
        let plain = path
            .components()
            .all(|c| matches!(c, std::path::Component::Normal(_)));
        let Ok(entry) = tree.get_path(path) else {
            continue;
        };
        if !plain || entry.kind() != Some(git2::ObjectType::Blob) || entry.filemode() == 0o120000 {
            continue;
        }
        let blob = repo.find_blob(entry.id())?;
        let at = dir.join(path);
        let io = |e: std::io::Error| git2::Error::from_str(&format!("{f}: {e}"));
        if let Some(parent) = at.parent() {
            std::fs::create_dir_all(parent).map_err(io)?;
        }
        std::fs::write(&at, blob.content()).map_err(io)?;
    }
    Ok(())
}

/// One finding of the script.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct PolicyFinding {
    pub path: String,
    pub line: u32,
    pub col: u32,
    /// `import`, `call`, `reference`, `syntax` or `error`.
    pub kind: String,
    /// The dotted name found (`os.system`, `xml.etree`); empty for `syntax` and `error`.
    pub name: String,
    pub message: String,
}

impl PolicyFinding {
    pub fn annotation(&self) -> Annotation {
        Annotation::new(&self.path, self.line, Level::Failure, &self.message)
            .with_column(self.col)
            .with_title(TITLE)
    }
}

/// The findings in the script's output (one JSON object per line); other lines are ignored.
pub fn parse_findings(output: &str) -> Vec<PolicyFinding> {
    output
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect()
}

/// Reads the script's output (one JSON object per line: {"path","line","col","kind","name",
/// "message"}) into annotations; malformed lines are ignored.
pub fn parse_policy_output(output: &str) -> Vec<Annotation> {
    parse_findings(output)
        .iter()
        .map(PolicyFinding::annotation)
        .collect()
}

/// One completed run of the script.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PolicyRun {
    pub findings: Vec<PolicyFinding>,
    /// Files that existed and were checked.
    pub files_checked: usize,
}

impl PolicyRun {
    pub fn annotations(&self) -> Vec<Annotation> {
        self.findings
            .iter()
            .map(PolicyFinding::annotation)
            .collect()
    }
}

/// Why a run says nothing about the files.
#[derive(Debug, thiserror::Error)]
pub enum PolicyError {
    #[error("the policy check did not finish ({0}), so the Python files were not checked")]
    Incomplete(String),
    #[error(
        "the changed Python files were not checked: the image has no python3; use an image \
         with python3, or turn the Python check off with `policy.banned_calls: []` and \
         `policy.banned_imports: []`"
    )]
    NoPython,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Done {
    done: usize,
}

/// Reads a finished run: an error unless the script exited 0 and printed its end line, so a
/// missing `python3`, a crash or a timeout never passes for "no findings".
pub fn policy_result(out: &CommandOutput) -> Result<PolicyRun, PolicyError> {
    if out.exit_code == Some(127) {
        return Err(PolicyError::NoPython);
    }
    if !out.success() {
        return Err(PolicyError::Incomplete(format!(
            "{}: {}",
            out.describe(),
            out.tail(3)
        )));
    }
    let done = out
        .output
        .lines()
        .rev()
        .find_map(|l| serde_json::from_str::<Done>(l).ok())
        .ok_or_else(|| PolicyError::Incomplete("no end line in its output".into()))?;
    Ok(PolicyRun {
        findings: parse_findings(&out.output),
        files_checked: done.done,
    })
}

/// Python files that `head` adds or changes relative to `base`.
#[derive(Debug, Clone, Default)]
pub struct PythonFiles {
    /// Paths to hand to [`policy_commands`].
    pub files: Vec<String>,
    /// Files that cannot be named to the script (a path that is not UTF-8): findings.
    pub unnamed: Vec<Annotation>,
}

/// The `.py` files `head` adds, changes, renames or turns into a file, relative to `base`
/// (commit or tree ids). Deleted files are left out.
pub fn changed_python_files(
    repo: &Repository,
    base: Oid,
    head: Oid,
) -> Result<PythonFiles, git2::Error> {
    let old = repo.find_object(base, None)?.peel_to_tree()?;
    let new = repo.find_object(head, None)?.peel_to_tree()?;
    let mut opts = DiffOptions::new();
    opts.ignore_submodules(true);
    let diff = repo.diff_tree_to_tree(Some(&old), Some(&new), Some(&mut opts))?;
    let mut out = PythonFiles::default();
    for delta in diff.deltas() {
        if matches!(delta.status(), Delta::Deleted | Delta::Unmodified) {
            continue;
        }
        let Some(path) = delta.new_file().path_bytes() else {
            continue;
        };
        if !path.ends_with(b".py") {
            continue;
        }
        match std::str::from_utf8(path) {
            Ok(p) => out.files.push(p.to_owned()),
            Err(_) => out.unnamed.push(
                Annotation::new(
                    String::from_utf8_lossy(path),
                    1,
                    Level::Failure,
                    "cannot check: the file name is not UTF-8; rename the file",
                )
                .with_title(TITLE),
            ),
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests;
