//! Where untrusted commands run: one sandbox per worktree (Worktree N ↔ Branch N ↔ Container N).
//!
//! Two backends: [`docker`] (a container per worktree, via bollard: the worktree bind-mounted at
//! `/work`, read-only paths mounted over it, no network unless opted in, CPU, memory and pids
//! limits, a non-root user, nothing of the bot's environment) and [`local`] (a process group
//! with rlimits, for machines without Docker). Both cap output, kill at the timeout, cap the
//! size of a file, and kill a command whose writes take too much of the disk ([`guard`]).

mod deferred;
pub mod disk;
pub mod docker;
pub mod egress;
pub mod guard;
pub mod local;
pub mod lock;
mod output;
mod reuse;

use std::path::{Path, PathBuf};
use std::time::Duration;

pub use deferred::Deferred;
pub use output::{CappedBuffer, CommandOutput, DEFAULT_OUTPUT_CAP, Keep, output_bytes};
pub use reuse::same_container;

/// Which backend runs commands (chosen in the process config).
pub use crate::config::SandboxKind as Kind;

/// What a sandbox is for and what it may do.
#[derive(Debug, Clone)]
pub struct SandboxSpec {
    /// `owner/name`, ticket id and role: they name and label the container.
    pub repo: String,
    pub ticket: String,
    pub role: String,
    /// The worktree on the host, seen as `/work` inside.
    pub worktree: PathBuf,
    /// Paths (relative, files or directories) mounted read-only over the worktree.
    pub read_only: Vec<String>,
    /// Paths (relative, files or directories) no command may change: watched, not mounted, so
    /// tools that write in place or beside them work; what a command did to them is undone
    /// after it and said ([`CommandOutput::put_back`], [`lock`]). The test lock.
    pub locked: Vec<String>,
    pub image: String,
    pub network: bool,
    pub cpus: f64,
    pub memory_mb: u64,
    pub pids: u64,
    /// What one command may write to disk (MiB): the largest file, and the worktree's disk
    /// space a command may take before it is killed.
    pub disk_mb: u64,
    /// A directory on the host seen as [`CACHE_MOUNT`] inside: the repository's set-up
    /// environment (packages, build caches), shared by its sandboxes.
    pub cache: Option<PathBuf>,
    /// Setup, making the environment: `cache` is its own, written in place. Every other
    /// sandbox sees `cache` read-only under a writable layer of its own that goes with it
    /// (Docker: overlayfs), so no ticket's commands change what the next ticket runs with.
    pub cache_writable: bool,
    /// A CA bundle on the host seen as [`CA_MOUNT`] inside (read-only), for setup's downloads
    /// through a network that re-signs TLS.
    pub ca_bundle: Option<PathBuf>,
    /// Environment of every command, on top of the minimal one. A value that starts with
    /// [`CACHE_MOUNT`] or is [`CA_MOUNT`] names those mounts; the local backend, which has no
    /// mounts, points it at the host's path instead.
    pub env: Vec<(String, String)>,
    /// Run once when the sandbox starts, offline, after the environment: builds the project
    /// itself in this worktree (what an install writes into the source tree: a version file,
    /// a compiled extension), so that every sandbox sees the project as the baseline did.
    pub prepare: Option<String>,
}

impl SandboxSpec {
    /// The sandbox of `worktree` as the repository's `config` sets it (image, limits, network,
    /// its read-only paths), with `locked` (patterns) locked, named by `repo`, `ticket` and
    /// `role`; without an environment until one is applied.
    pub fn from_config(
        config: &crate::config::repo::HiveConfig,
        worktree: &Path,
        (repo, ticket, role): (&str, &str, &str),
        locked: &[String],
    ) -> Self {
        let patterns = &config.policy.read_only_paths;
        Self {
            repo: repo.to_owned(),
            ticket: ticket.to_owned(),
            role: role.to_owned(),
            worktree: worktree.to_owned(),
            read_only: read_only_mounts(worktree, patterns),
            locked: read_only_mounts(worktree, locked),
            image: config.image.clone(),
            network: config.limits.network,
            cpus: config.limits.cpu,
            memory_mb: config.limits.memory_mb,
            pids: config.limits.pids,
            disk_mb: config.limits.disk_mb,
            cache: None,
            cache_writable: false,
            ca_bundle: None,
            env: vec![(NAMING_TESTS.0.into(), NAMING_TESTS.1.into())],
            prepare: None,
        }
    }
}

/// Every sandbox starts with pytest's `-rA` summary on, which names every test it ran with
/// its outcome, whatever runs pytest (a pinned command, a Makefile, tox): the gates judge tests
/// by name. The environment's own `PYTEST_ADDOPTS` keeps it (`env::resolve`).
pub const NAMING_TESTS: (&str, &str) = ("PYTEST_ADDOPTS", "-rA");

/// `s` as one POSIX shell word: in single quotes, each `'` written as `'\''`. Nothing inside
/// single quotes is special to `sh` (`$`, backticks, newlines...), so this is safe for any
/// string without NUL.
pub fn quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', r"'\''"))
}

/// How long a sandbox's [`SandboxSpec::prepare`] may take.
pub const PREPARE_TIMEOUT: Duration = Duration::from_secs(600);

/// Where [`SandboxSpec::cache`] is seen inside a sandbox.
pub const CACHE_MOUNT: &str = "/cache";
/// Where a container sees the worktree.
pub const WORK_MOUNT: &str = "/work";
/// Where [`SandboxSpec::ca_bundle`] is seen inside a sandbox.
pub const CA_MOUNT: &str = "/etc/vibeloop/ca-certificates.crt";

impl SandboxSpec {
    /// A sandbox of `image` over the empty directory `dir`, for a look at the image itself
    /// (its toolchains' versions, whether it reaches a package index): no environment, no
    /// network unless `network`, small limits.
    pub fn probe(image: &str, dir: &Path, what: &str, network: bool) -> Self {
        // Each its own container: two probes at once never replace each other's.
        static N: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let n = N.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        Self {
            repo: "vibeloop/probe".into(),
            ticket: "probe".into(),
            role: format!("{what}-{}-{n}", std::process::id()),
            worktree: dir.to_owned(),
            read_only: vec![],
            locked: vec![],
            image: image.into(),
            network,
            cpus: 1.0,
            memory_mb: 1024,
            pids: 256,
            disk_mb: 512,
            cache: None,
            cache_writable: false,
            ca_bundle: None,
            env: vec![],
            prepare: None,
        }
    }

    /// The spec's environment as the local backend needs it: the mounts' paths replaced by
    /// the host's.
    pub(crate) fn host_env(&self) -> Vec<(String, String)> {
        self.env
            .iter()
            .map(|(k, v)| {
                let mut v = v.clone();
                if let Some(ca) = &self.ca_bundle {
                    v = v.replace(CA_MOUNT, &ca.to_string_lossy());
                }
                if let Some(cache) = &self.cache {
                    v = v.replace(CACHE_MOUNT, &cache.to_string_lossy());
                }
                (k.clone(), v)
            })
            .collect()
    }
}

/// Errors callers branch on.
#[derive(Debug, thiserror::Error)]
pub enum SandboxError {
    #[error(
        "the sandbox image {0} is missing: build it with docker/build-runner-image.sh, or set `image:` in .github/hive.yml"
    )]
    ImageMissing(String),
    #[error("read-only path {path:?} cannot be mounted: {why}")]
    BadMount { path: String, why: String },
    /// The engine refused a bind mount: a bot's setting, not the change, is at fault.
    #[error("Docker cannot mount {source_path} into the sandbox ({reason}): {fix}")]
    MountRefused {
        source_path: String,
        reason: String,
        fix: &'static str,
    },
    #[error("Docker: {0}")]
    Docker(String),
    #[error("cannot run the command: {0}")]
    Io(#[from] std::io::Error),
}

/// A started sandbox, and how its [`SandboxSpec::prepare`] went.
pub struct Sandbox {
    runs: Runs,
    prepared: Option<Prepared>,
    lock: Option<std::sync::Arc<lock::Lock>>,
}

/// What runs a sandbox's commands.
enum Runs {
    Docker(docker::DockerSandbox),
    Local(local::LocalSandbox),
}

/// A sandbox's [`SandboxSpec::prepare`] that failed: the command and what it printed.
#[derive(Debug, Clone)]
pub struct Prepared {
    pub command: String,
    pub output: CommandOutput,
}

impl Prepared {
    /// For a report: the project's own build failed in this sandbox, and its last lines.
    pub fn note(&self) -> String {
        format!(
            "The project's own build in this sandbox (`{}`) failed ({}), so its tests may not import it: {}",
            self.command,
            self.output.describe(),
            self.output.tail(3).replace('\n', " ⏎ ")
        )
    }
}

impl Sandbox {
    /// The Docker container, when Docker runs it.
    pub fn docker(&self) -> Option<&docker::DockerSandbox> {
        match &self.runs {
            Runs::Docker(d) => Some(d),
            Runs::Local(_) => None,
        }
    }

    /// The sandbox's [`SandboxSpec::prepare`], when it ran and failed.
    pub fn prepare_failed(&self) -> Option<&Prepared> {
        self.prepared.as_ref()
    }

    /// Runs `script` with `sh -c` in the worktree's root, killed at `timeout`.
    pub async fn exec(
        &self,
        script: &str,
        timeout: Duration,
    ) -> Result<CommandOutput, SandboxError> {
        self.exec_capped(script, timeout, DEFAULT_OUTPUT_CAP).await
    }

    /// Runs `script` as [`Sandbox::exec`] does, and keeps every line of its whole output that
    /// `keep` chooses ([`CommandOutput::for_results`]): a test run's results are read from all
    /// of it, however long, while people see its head and tail.
    pub async fn exec_keeping(
        &self,
        script: &str,
        timeout: Duration,
        keep: Keep,
    ) -> Result<CommandOutput, SandboxError> {
        self.exec_with(script, timeout, (DEFAULT_OUTPUT_CAP, Some(keep)), true)
            .await
    }

    /// Runs `scripts` at once, each as [`Sandbox::exec`] does (keeping the lines of a
    /// [`Keep`] as [`Sandbox::exec_keeping`]), and settles the test lock once, after the last:
    /// no one of them can be told from another, so what any did to a locked file is in the
    /// `put_back` of every output. Outputs in the order of `scripts`.
    pub async fn exec_beside(
        &self,
        scripts: &[(&str, Option<Keep>)],
        timeout: Duration,
    ) -> Result<Vec<CommandOutput>, SandboxError> {
        let runs = scripts.iter().map(|&(script, keep)| {
            self.exec_with(script, timeout, (DEFAULT_OUTPUT_CAP, keep), false)
        });
        let mut outs = futures_util::future::join_all(runs)
            .await
            .into_iter()
            .collect::<Result<Vec<_>, _>>()?;
        let put_back = self.settle().await;
        for out in &mut outs {
            out.put_back.clone_from(&put_back);
        }
        Ok(outs)
    }

    pub async fn exec_capped(
        &self,
        script: &str,
        timeout: Duration,
        cap: usize,
    ) -> Result<CommandOutput, SandboxError> {
        self.exec_with(script, timeout, (cap, None), true).await
    }

    async fn exec_with(
        &self,
        script: &str,
        timeout: Duration,
        capture: (usize, Option<Keep>),
        settle: bool,
    ) -> Result<CommandOutput, SandboxError> {
        let (writable, disk_mb, worktree) = match &self.runs {
            Runs::Docker(s) => (s.writable(), s.disk_mb(), s.worktree().to_owned()),
            Runs::Local(s) => (s.writable(), s.disk_mb(), s.worktree().to_owned()),
        };
        let guard = guard::DiskGuard::new(writable, disk_mb);
        let tripped = async move {
            match guard {
                Some(g) => g.tripped().await,
                None => std::future::pending().await,
            }
        };
        let mut out = match &self.runs {
            Runs::Docker(s) => s.exec(script, timeout, capture, tripped).await,
            Runs::Local(s) => s.exec(script, timeout, capture, tripped).await,
        }?;
        // A process killed by SIGXFSZ wrote a file past the size limit; the shell reports it
        // as 128 + the signal.
        if out.killed.is_none() && !out.timed_out && out.exit_code == Some(128 + libc::SIGXFSZ) {
            out.killed = Some(format!("a file grew past {disk_mb} MiB (limits.disk_mb)"));
        }
        // A command that met the end of its worktree's disk failed with "No space left on
        // device" somewhere in its output: the limit says so first.
        if out.killed.is_none() && !out.timed_out && out.exit_code != Some(0) {
            out.killed = disk::filled(&worktree, disk_mb);
        }
        if settle {
            out.put_back = self.settle().await;
        }
        Ok(out)
    }

    /// Puts back what the commands did to the locked files, and says what that was.
    async fn settle(&self) -> Vec<String> {
        let Some(lock) = self.lock.clone() else {
            return vec![];
        };
        tokio::task::spawn_blocking(move || lock.settle())
            .await
            .unwrap_or_else(|e| vec![format!("(the locked files could not be checked: {e})")])
    }

    /// The worktree's root as commands inside see it (paths in their output start with it).
    pub fn root(&self) -> String {
        match &self.runs {
            Runs::Docker(_) => format!("{WORK_MOUNT}/"),
            Runs::Local(s) => format!("{}/", s.worktree().display()),
        }
    }

    pub fn kind(&self) -> Kind {
        match &self.runs {
            Runs::Docker(_) => Kind::Docker,
            Runs::Local(_) => Kind::Local,
        }
    }

    /// Stops and removes the sandbox.
    pub async fn stop(self) {
        if let Runs::Docker(s) = self.runs {
            s.remove().await;
        }
    }
}

/// A sandbox as the dashboard lists it.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct SandboxInfo {
    /// The container's short id.
    pub id: String,
    pub repo: String,
    pub ticket: String,
    pub role: String,
    /// `running`, `exited`…
    pub state: String,
}

/// The backend chosen for this process.
#[derive(Clone)]
pub enum Backend {
    Docker(docker::DockerBackend),
    Local,
}

impl Backend {
    /// `docker` or `local`, for logs and reports.
    pub fn name(&self) -> &'static str {
        match self {
            Backend::Docker(_) => "docker",
            Backend::Local => "local",
        }
    }

    /// Docker when an engine answers (`DOCKER_HOST` or the local socket), else local processes.
    /// `force` pins one; the reason for a fallback is returned for the log.
    pub async fn detect(
        data_dir: &Path,
        force: Option<Kind>,
    ) -> Result<(Self, Option<String>), SandboxError> {
        match force {
            Some(Kind::Local) => Ok((Backend::Local, None)),
            Some(Kind::Docker) => Ok((
                Backend::Docker(docker::DockerBackend::connect(data_dir).await?),
                None,
            )),
            None => match docker::DockerBackend::connect(data_dir).await {
                Ok(d) => Ok((Backend::Docker(d), None)),
                Err(e) => Ok((Backend::Local, Some(e.to_string()))),
            },
        }
    }

    pub fn kind(&self) -> Kind {
        match self {
            Backend::Docker(_) => Kind::Docker,
            Backend::Local => Kind::Local,
        }
    }

    /// What identifies the content of `image` (Docker's image id), so that what was made with
    /// one build of an image is not taken for another's; `None` for local processes or an
    /// image the engine does not have.
    pub async fn image_id(&self, image: &str) -> Option<String> {
        match self {
            Backend::Docker(d) => d.image_id(image).await,
            Backend::Local => None,
        }
    }

    /// Pulls `image` from its registry (Docker only), with `credentials` when given.
    pub async fn pull(
        &self,
        image: &str,
        credentials: Option<bollard::auth::DockerCredentials>,
        progress: &mut (dyn FnMut(&str) + Send),
    ) -> Result<(), SandboxError> {
        match self {
            Backend::Docker(d) => d.pull(image, credentials, progress).await,
            Backend::Local => Err(SandboxError::Docker("local processes use no images".into())),
        }
    }

    /// Builds the image `tag` from `context` (a tar archive) with its `dockerfile` and build
    /// `args` (Docker only), each line of the build's output told to `progress`.
    pub async fn build(
        &self,
        tag: &str,
        context: Vec<u8>,
        dockerfile: &str,
        args: &[(String, String)],
        progress: &mut (dyn FnMut(&str) + Send),
    ) -> Result<(), SandboxError> {
        match self {
            Backend::Docker(d) => d.build(tag, context, dockerfile, args, progress).await,
            Backend::Local => Err(SandboxError::Docker("local processes use no images".into())),
        }
    }

    /// Starts the sandbox of `spec` and runs its [`SandboxSpec::prepare`]; a failed prepare
    /// is kept on the sandbox for the reports ([`Sandbox::prepare_failed`]), not an error: the
    /// change may be what broke the build, and its tests say how.
    pub async fn start(&self, spec: &SandboxSpec) -> Result<Sandbox, SandboxError> {
        let runs = match self {
            Backend::Docker(d) => d.start(spec).await.map(Runs::Docker),
            Backend::Local => Ok(Runs::Local(local::LocalSandbox::new(spec))),
        };
        crate::metrics::sandbox_started(self.name(), runs.is_ok());
        let runs = runs?;
        let lock = reuse::take_lock(spec).await?;
        let mut sandbox = Sandbox {
            runs,
            prepared: None,
            lock,
        };
        if let Some(command) = &spec.prepare {
            let output = sandbox.exec(command, PREPARE_TIMEOUT).await?;
            if !output.success() {
                tracing::warn!(command = %command, "the project's build in a sandbox failed");
                sandbox.prepared = Some(Prepared {
                    command: command.clone(),
                    output,
                });
            }
        }
        Ok(sandbox)
    }

    /// The sandboxes that exist now (none for local processes, which live only while a
    /// command runs).
    pub async fn sandboxes(&self) -> Result<Vec<SandboxInfo>, SandboxError> {
        match self {
            Backend::Docker(d) => d.sandboxes().await,
            Backend::Local => Ok(Vec::new()),
        }
    }

    /// Removes the sandboxes of one ticket (its work ended, was aborted or reset).
    pub async fn remove_ticket(&self, repo: &str, ticket: &str) -> Result<usize, SandboxError> {
        match self {
            Backend::Docker(d) => d.remove_ticket(repo, ticket).await,
            Backend::Local => Ok(0),
        }
    }

    /// Removes sandboxes a crashed run left behind (Docker: containers with this instance's label).
    pub async fn remove_leftovers(&self) -> Result<usize, SandboxError> {
        match self {
            Backend::Docker(d) => d.remove_leftovers().await,
            Backend::Local => Ok(0),
        }
    }
}

/// Checks that `rel` names an existing path inside `root` reached without symbolic links, so a
/// mount cannot expose anything outside the worktree.
pub fn contained_path(root: &Path, rel: &str) -> Result<Option<PathBuf>, SandboxError> {
    let bad = |why: &str| SandboxError::BadMount {
        path: rel.to_owned(),
        why: why.to_owned(),
    };
    let rel = rel.trim_end_matches('/');
    if rel.is_empty()
        || rel.starts_with('/')
        || rel
            .split('/')
            .any(|c| c == ".." || c == "." || c.is_empty())
    {
        return Err(bad("it must be a plain relative path"));
    }
    let mut path = root.to_path_buf();
    for comp in rel.split('/') {
        path.push(comp);
        match std::fs::symlink_metadata(&path) {
            Ok(m) if m.file_type().is_symlink() => {
                return Err(bad("it passes through a symbolic link"));
            }
            Ok(_) => {}
            Err(_) => return Ok(None),
        }
    }
    Ok(Some(path))
}

/// The paths to mount read-only for `patterns` (`.github/hive.yml` syntax): a plain path or a
/// directory (`docs/spec/`) is mounted as one; a glob is expanded to the files it matches now
/// (at most 256).
pub fn read_only_mounts(worktree: &Path, patterns: &[String]) -> Vec<String> {
    let mut out = Vec::new();
    let globs: Vec<&String> = patterns
        .iter()
        .filter(|p| p.contains(['*', '?', '[', '{']))
        .collect();
    for p in patterns
        .iter()
        .filter(|p| !p.contains(['*', '?', '[', '{']))
    {
        let p = p.trim_end_matches('/');
        if !p.is_empty() && worktree.join(p).exists() {
            out.push(p.to_owned());
        }
    }
    if !globs.is_empty() {
        let set = crate::pathset::PathSet::new(&globs.into_iter().cloned().collect::<Vec<_>>());
        let walker = ignore::WalkBuilder::new(worktree)
            .hidden(false)
            .git_ignore(false)
            .filter_entry(|e| e.file_name() != ".git")
            .build();
        for entry in walker.flatten() {
            let Ok(rel) = entry.path().strip_prefix(worktree) else {
                continue;
            };
            let rel = rel.to_string_lossy().replace('\\', "/");
            if entry.file_type().is_some_and(|t| t.is_file())
                && set.contains(&rel)
                && !out.iter().any(|o| rel.starts_with(&format!("{o}/")))
            {
                out.push(rel);
                if out.len() >= 256 {
                    break;
                }
            }
        }
    }
    out
}
