//! Directory flags made absolute once, at start-up, before anything uses them.
//!
//! Docker takes only absolute bind-mount sources, and a process that changes its working
//! directory (git, a child) reads a relative path against the wrong one. So every directory the
//! command line names — `--data-dir`, `--env-dir`, `vibeloop run --data-dir`, the eval's
//! `--out` and `--repos-dir` — is resolved against the working directory here, and the data
//! directory of `serve` and `migrate` is created and resolved through its links. A directory
//! that cannot be created or resolved stops start-up with one line naming its setting.

use std::path::{Component, Path, PathBuf};

use super::{Cli, Command, ConfigError, bad};
use crate::config::tools::EvalCommand;

/// `path` against the working directory, with `.` and `..` folded away (no file is read).
pub fn absolute(setting: &'static str, path: &Path) -> Result<PathBuf, ConfigError> {
    if path.as_os_str().is_empty() {
        return Err(bad(setting, "is empty: name a directory"));
    }
    let joined = std::path::absolute(path).map_err(|e| {
        bad(
            setting,
            format!(
                "cannot resolve {} against the working directory ({e})",
                path.display()
            ),
        )
    })?;
    Ok(fold(&joined))
}

/// `path` made absolute, created when it is missing, and resolved through its links: what a
/// process keeps its state in.
pub fn created(setting: &'static str, path: &Path) -> Result<PathBuf, ConfigError> {
    let path = absolute(setting, path)?;
    std::fs::create_dir_all(&path)
        .map_err(|e| bad(setting, format!("cannot create {} ({e})", path.display())))?;
    std::fs::canonicalize(&path)
        .map_err(|e| bad(setting, format!("cannot resolve {} ({e})", path.display())))
}

/// `a/./b/../c` as `a/c`: `std::path::absolute` keeps `..` on Unix.
fn fold(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for part in path.components() {
        match part {
            Component::CurDir => {}
            Component::ParentDir => {
                out.pop();
            }
            other => out.push(other),
        }
    }
    out
}

fn optional(setting: &'static str, path: &mut Option<PathBuf>) -> Result<(), ConfigError> {
    if let Some(p) = path.as_mut() {
        *p = absolute(setting, p)?;
    }
    Ok(())
}

impl Cli {
    /// Every directory flag of the command made absolute (and the state directory of `serve`
    /// and `migrate` created); see the module's doc.
    pub fn resolve_paths(&mut self) -> Result<(), ConfigError> {
        match &mut self.command {
            Command::Serve(args) => {
                args.store.data_dir = created("VIBELOOP_DATA_DIR", &args.store.data_dir)?;
            }
            Command::Migrate(args) => {
                args.data_dir = created("VIBELOOP_DATA_DIR", &args.data_dir)?;
            }
            // `doctor` reports a data directory it cannot use; it does not make one.
            Command::Doctor(args) => {
                args.store.data_dir = absolute("VIBELOOP_DATA_DIR", &args.store.data_dir)?;
            }
            Command::Gates(args) => optional("VIBELOOP_ENV_DIR", &mut args.env_dir)?,
            Command::Run(args) => optional("VIBELOOP_RUN_DIR", &mut args.data_dir)?,
            Command::Eval(args) => match &mut args.command {
                EvalCommand::Mine(mine) => {
                    optional("--out", &mut mine.out)?;
                    optional("--env-dir", &mut mine.testbed.env_dir)?;
                }
                EvalCommand::Run(run) => {
                    run.out = absolute("--out", &run.out)?;
                    run.repos_dir = absolute("--repos-dir", &run.repos_dir)?;
                    optional("--env-dir", &mut run.testbed.env_dir)?;
                }
                EvalCommand::Compare(_) => {}
            },
            Command::Setup(_) => {}
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use clap::Parser as _;

    use super::*;

    fn parsed(argv: &[&str]) -> Cli {
        let mut cli = Cli::try_parse_from(argv).unwrap();
        cli.resolve_paths().unwrap();
        cli
    }

    #[test]
    fn relative_directories_become_absolute_and_folded() {
        let cwd = std::env::current_dir().unwrap();
        let cli = parsed(&[
            "vibeloop",
            "eval",
            "run",
            "tasks.jsonl",
            "--out",
            "./runs/../out",
            "--repos-dir",
            "repos",
            "--env-dir",
            "envs/./x",
        ]);
        let Command::Eval(eval) = cli.command else {
            panic!("not eval")
        };
        let EvalCommand::Run(run) = eval.command else {
            panic!("not eval run")
        };
        assert_eq!(run.out, cwd.join("out"));
        assert_eq!(run.repos_dir, cwd.join("repos"));
        assert_eq!(run.testbed.env_dir, Some(cwd.join("envs/x")));
        // The task set is a file, read at once: it stays as given.
        assert_eq!(run.tasks, PathBuf::from("tasks.jsonl"));
    }

    #[test]
    fn the_serve_data_directory_is_created_and_resolved() {
        let tmp = tempfile::tempdir().unwrap();
        let wanted = tmp.path().join("a/b/.vibeloop");
        let cli = parsed(&["vibeloop", "serve", "--data-dir", wanted.to_str().unwrap()]);
        let Command::Serve(serve) = cli.command else {
            panic!("not serve")
        };
        assert!(serve.store.data_dir.is_absolute());
        assert!(serve.store.data_dir.is_dir());
        assert_eq!(
            serve.store.data_dir,
            std::fs::canonicalize(&wanted).unwrap()
        );
    }

    #[test]
    fn a_data_directory_that_cannot_be_created_names_its_setting() {
        let tmp = tempfile::tempdir().unwrap();
        let file = tmp.path().join("a-file");
        std::fs::write(&file, "not a directory").unwrap();
        let blocked = file.join("data");
        let mut cli = Cli::try_parse_from([
            "vibeloop",
            "migrate",
            "--data-dir",
            blocked.to_str().unwrap(),
        ])
        .unwrap();
        let err = cli.resolve_paths().unwrap_err().to_string();
        assert!(
            err.starts_with("VIBELOOP_DATA_DIR: cannot create "),
            "{err}"
        );
        assert!(err.contains("a-file/data"), "{err}");
        assert!(!err.contains('\n'), "one line: {err}");
    }

    #[test]
    fn doctor_makes_the_data_directory_absolute_without_creating_it() {
        let cli = parsed(&["vibeloop", "doctor", "--data-dir", "no-such-dir-here"]);
        let Command::Doctor(args) = cli.command else {
            panic!("not doctor")
        };
        assert!(args.store.data_dir.is_absolute());
        assert!(!args.store.data_dir.exists());
    }
}
