//! Where tasks' tests run outside the hive: a commit of a repository (with a patch applied,
//! the hidden tests say) checked out into a scratch directory, in a sandbox with the
//! repository's environment (set up once per environment, like the gates'), running its whole
//! test suite and reading each test's outcome ([`super::outcomes`]). Mining verifies its
//! candidates here; a run grades the hive's final tree here.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use git2::{Diff, Oid, Repository, build::CheckoutBuilder};

use super::outcomes::{self, Outcome};
use crate::config::repo::{HiveConfig, PATH as CONFIG_PATH};
use crate::env::{Resolved, SetupError};
use crate::sandbox::{Backend, CommandOutput, SandboxSpec};

/// Why the tests could not run (their failures are outcomes, not errors).
#[derive(Debug, thiserror::Error)]
pub enum TestbedError {
    #[error("git: {0}")]
    Git(#[from] git2::Error),
    #[error("the patch does not apply to {commit}: {why}")]
    Patch { commit: String, why: String },
    #[error("{CONFIG_PATH} at {commit}: {why}")]
    Config { commit: String, why: String },
    #[error("setup failed ({why}): `{command}`\n{tail}")]
    Setup {
        command: String,
        why: String,
        tail: String,
    },
    #[error("no test command: no ecosystem detected and no `gates.test` in {CONFIG_PATH}")]
    NoTestCommand,
    #[error("the sandbox: {0}")]
    Sandbox(#[from] crate::sandbox::SandboxError),
    #[error("{0}")]
    Io(#[from] std::io::Error),
}

/// A test run: the command, its output, and each named test's outcome.
#[derive(Debug, Clone)]
pub struct TestRun {
    pub command: String,
    pub output: CommandOutput,
    pub tests: BTreeMap<String, Outcome>,
}

impl TestRun {
    /// Whether `name` ran and passed.
    pub fn passed(&self, name: &str) -> bool {
        self.tests.get(name) == Some(&Outcome::Passed)
    }
}

/// Runs repositories' tests in sandboxes, keeping their environments in one directory.
pub struct Testbed {
    backend: Backend,
    envs: PathBuf,
    scratch: tempfile::TempDir,
}

impl Testbed {
    /// A testbed on `backend`, with environments kept under `envs`.
    pub fn new(backend: Backend, envs: &Path) -> std::io::Result<Self> {
        Ok(Self {
            backend,
            envs: envs.to_owned(),
            scratch: tempfile::tempdir()?,
        })
    }

    /// Runs every test of `repo` at `commit`, with `patch` (a unified diff) applied first when
    /// given (with `reset`, onto `config_at`'s version of the files it touches); the
    /// environment and the config are those of `config_at` (the task's base).
    pub async fn run(
        &self,
        repo: &Path,
        commit: Oid,
        patch: Option<&str>,
        config_at: Oid,
        reset: bool,
        timeout: Duration,
    ) -> Result<TestRun, TestbedError> {
        let dir = tempfile::tempdir_in(self.scratch.path())?;
        let worktree = dir.path().join("work");
        let (env, version) = {
            let git = Repository::open(repo)?;
            checkout(&git, commit, patch, reset.then_some(config_at), &worktree)?;
            (
                resolve_at(&git, config_at)?,
                crate::workspace::version_at(&git, commit),
            )
        };
        let command = test_command(&env).ok_or(TestbedError::NoTestCommand)?;
        // Containers are named by repository, ticket and role, and a start removes one of the
        // same name: each run (its setup too) gets a name of its own, so runs side by side
        // (`--jobs`) never stop each other's.
        static RUNS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let n = RUNS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let ticket = format!("eval-{}-{n}", std::process::id());
        let mut spec =
            SandboxSpec::from_config(&env.config, &worktree, ("eval/task", &ticket, "eval"), &[]);
        spec.env.extend(crate::env::version_env(&version));
        let settings = crate::env::Settings {
            envs: crate::env::Envs::new(self.envs.clone()),
            ..crate::env::Settings::new(self.scratch.path())
        };
        match settings.maker(&self.backend).prepare(&env, &spec).await {
            Ok(Some(ready)) => ready.apply(&mut spec),
            Ok(None) => {}
            Err(SetupError::Failed { command, output }) => {
                return Err(TestbedError::Setup {
                    command,
                    why: output.describe(),
                    tail: output.tail(20),
                });
            }
            Err(SetupError::Sandbox(e)) => return Err(e.into()),
            Err(SetupError::Io(e)) => return Err(e.into()),
        }
        let sandbox = self.backend.start(&spec).await?;
        let keep = crate::gates::test_results::keeps;
        let output = sandbox.exec_keeping(&command, timeout, keep).await;
        sandbox.stop().await;
        let output = output?;
        let tests = outcomes::read(output.for_results());
        Ok(TestRun {
            command,
            output,
            tests,
        })
    }
}

/// The command that runs every test and names each one's outcome: pytest with its `-rA`
/// summary and `-v` lines, `cargo test` without stopping at the first failing binary, `go test -v`; else the
/// repository's test gate as it is.
fn test_command(env: &Resolved) -> Option<String> {
    use crate::env::detect::Ecosystem;
    let pinned = env.config.is_set("gates.test");
    let mut commands = Vec::new();
    for found in env.found.iter().filter(|_| !pinned) {
        commands.push(match found.ecosystem {
            // A module that cannot be imported (a test of a name not written yet) must not
            // stop the others, and a run killed on the way (a new test that eats the memory
            // of the old code) still names each test it finished (`-v`, as they end): each
            // test's outcome is what a task is made of.
            Ecosystem::Python => {
                "python -m pytest -rA -v -p no:cacheprovider --continue-on-collection-errors"
                    .to_owned()
            }
            Ecosystem::Rust => "cargo test --offline --no-fail-fast".to_owned(),
            Ecosystem::Go => "go test -v ./...".to_owned(),
            Ecosystem::Node => found.test.clone()?,
        });
    }
    if commands.is_empty() {
        return env.config.gates.test.clone();
    }
    // Every suite runs even when one fails: each prints its tests' outcomes.
    Some(
        commands
            .iter()
            .map(|c| format!("({c})"))
            .collect::<Vec<_>>()
            .join("; "),
    )
}

/// The repository's config and detected environment at `commit`.
fn resolve_at(git: &Repository, commit: Oid) -> Result<Resolved, TestbedError> {
    let tree = git.find_commit(commit)?.tree()?;
    let yaml = match tree.get_path(Path::new(CONFIG_PATH)) {
        Ok(entry) => {
            let blob = git.find_blob(entry.id())?;
            let text = String::from_utf8_lossy(blob.content());
            HiveConfig::parse(&text).map_err(|e| TestbedError::Config {
                commit: commit.to_string(),
                why: e.to_string(),
            })?
        }
        Err(_) => HiveConfig::default(),
    };
    let files = crate::env::tree::Tree::of_commit(git, commit)?;
    Ok(crate::env::resolve(yaml, &files))
}

/// `commit`'s tree, with `patch` applied, written into `dir`.
fn checkout(
    git: &Repository,
    commit: Oid,
    patch: Option<&str>,
    reset: Option<Oid>,
    dir: &Path,
) -> Result<(), TestbedError> {
    std::fs::create_dir_all(dir)?;
    let mut tree = git.find_commit(commit)?.tree()?;
    if let Some(patch) = patch.filter(|p| !p.trim().is_empty()) {
        tree = git.find_tree(patched(git, commit, patch, reset)?)?;
    }
    let mut co = CheckoutBuilder::new();
    co.target_dir(dir).force().recreate_missing(true);
    git.checkout_tree(tree.as_object(), Some(&mut co))?;
    Ok(())
}

/// The tree of `commit` with `patch` applied. With `reset`, the files the patch touches are
/// first taken back to that commit's version (the hidden tests replace whatever tests the hive
/// wrote at the same paths, as SWE-bench's harness does).
pub fn patched(
    git: &Repository,
    commit: Oid,
    patch: &str,
    reset: Option<Oid>,
) -> Result<Oid, TestbedError> {
    let bad = |why: &str| TestbedError::Patch {
        commit: commit.to_string(),
        why: why.to_owned(),
    };
    let diff = Diff::from_buffer(patch.as_bytes()).map_err(|e| bad(e.message()))?;
    let mut tree = git.find_commit(commit)?.tree()?;
    if let Some(reset) = reset {
        let mut index = git2::Index::new()?;
        index.read_tree(&tree)?;
        let mut before = git2::Index::new()?;
        before.read_tree(&git.find_commit(reset)?.tree()?)?;
        for delta in diff.deltas() {
            for path in [delta.old_file().path(), delta.new_file().path()]
                .into_iter()
                .flatten()
            {
                match before.get_path(path, 0) {
                    Some(entry) => index.add(&entry)?,
                    None => {
                        let _ = index.remove_path(path);
                    }
                }
            }
        }
        tree = git.find_tree(index.write_tree_to(git)?)?;
    }
    let mut index = git
        .apply_to_tree(&tree, &diff, None)
        .map_err(|e| bad(e.message()))?;
    Ok(index.write_tree_to(git)?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_patch_is_applied_to_the_commit_s_tree_before_checkout() {
        let dir = tempfile::tempdir().unwrap();
        let git = Repository::init(dir.path().join("r")).unwrap();
        let sig = git2::Signature::now("t", "t@example.com").unwrap();
        let mut index = git.index().unwrap();
        std::fs::write(dir.path().join("r/a.txt"), "one\n").unwrap();
        index.add_path(Path::new("a.txt")).unwrap();
        let tree = git.find_tree(index.write_tree().unwrap()).unwrap();
        let c = git
            .commit(Some("HEAD"), &sig, &sig, "init", &tree, &[])
            .unwrap();
        let patch = "diff --git a/b.txt b/b.txt\nnew file mode 100644\n--- /dev/null\n+++ b/b.txt\n@@ -0,0 +1 @@\n+two\n";
        let out = dir.path().join("out");
        checkout(&git, c, Some(patch), None, &out).unwrap();
        assert_eq!(std::fs::read_to_string(out.join("a.txt")).unwrap(), "one\n");
        assert_eq!(std::fs::read_to_string(out.join("b.txt")).unwrap(), "two\n");
        let bad = "diff --git a/a.txt b/a.txt\n--- a/a.txt\n+++ b/a.txt\n@@ -1 +1 @@\n-nope\n+x\n";
        let e = checkout(&git, c, Some(bad), None, &dir.path().join("out2")).unwrap_err();
        assert!(e.to_string().contains("the patch does not apply"), "{e}");
    }
}
