//! Setup with network, gates without: [`prepare`] finds the repository's environment for a
//! worktree (by its key, [`super::cache`]) or makes it — the setup command in a sandbox of its
//! own *with* network, the host's proxy settings and the CA bundle the operator names
//! (`VIBELOOP_SANDBOX_CA_BUNDLE`), nothing else of the bot's — and [`Ready::apply`] gives every
//! later sandbox the environment mounted, its variables, and the package managers told to stay
//! offline.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use super::cache::{EnvKey, Envs, Record, Retention, now};
pub use super::how::How;
use super::resolve::Resolved;
use crate::sandbox::{
    Backend, CA_MOUNT, CACHE_MOUNT, CommandOutput, Kind, SandboxError, SandboxSpec, WORK_MOUNT,
};
use crate::untrusted::files as untrusted;

/// What setup may use of the host's network settings.
#[derive(Debug, Clone, Default)]
pub struct Network {
    /// `HTTP_PROXY`, `HTTPS_PROXY`, `NO_PROXY` (either case), as the bot has them.
    pub proxy: Vec<(String, String)>,
    /// A CA bundle for networks that re-sign TLS.
    pub ca_bundle: Option<PathBuf>,
}

/// The variables that make package managers trust [`CA_MOUNT`].
const CA_VARS: [&str; 8] = [
    "SSL_CERT_FILE",
    "REQUESTS_CA_BUNDLE",
    "PIP_CERT",
    "CARGO_HTTP_CAINFO",
    "NODE_EXTRA_CA_CERTS",
    "npm_config_cafile",
    "GIT_SSL_CAINFO",
    "CURL_CA_BUNDLE",
];

/// What tells package managers to stay offline in the gates (they have no network there).
const OFFLINE: [(&str, &str); 4] = [
    ("CARGO_NET_OFFLINE", "true"),
    ("PIP_NO_INDEX", "1"),
    ("GOPROXY", "off"),
    ("npm_config_offline", "true"),
];

impl Network {
    /// The bot's proxy variables (without the credentials a proxy URL may carry: those never
    /// enter a container) and `VIBELOOP_SANDBOX_CA_BUNDLE`.
    pub fn from_env() -> Self {
        let proxy = [
            "HTTP_PROXY",
            "HTTPS_PROXY",
            "NO_PROXY",
            "http_proxy",
            "https_proxy",
            "no_proxy",
        ]
        .iter()
        .filter_map(|k| Some(((*k).to_owned(), std::env::var(k).ok()?)))
        .filter(|(_, v)| !v.is_empty())
        .filter_map(|(k, v)| Some((k.clone(), without_credentials(&k, &v)?)))
        .collect();
        let ca_bundle = std::env::var_os("VIBELOOP_SANDBOX_CA_BUNDLE")
            .filter(|v| !v.is_empty())
            .map(PathBuf::from);
        Self { proxy, ca_bundle }
    }

    /// Gives `spec` the proxies and the CA bundle.
    pub fn give(&self, spec: &mut crate::sandbox::SandboxSpec) {
        spec.ca_bundle = self.ca_bundle.clone();
        spec.env.extend(self.env());
    }

    fn env(&self) -> Vec<(String, String)> {
        let mut env = self.proxy.clone();
        if self.ca_bundle.is_some() {
            env.extend(
                CA_VARS
                    .iter()
                    .map(|k| ((*k).to_owned(), CA_MOUNT.to_owned())),
            );
        }
        env
    }
}

/// A proxy URL without its user and password; `NO_PROXY` as it is; `None` for a proxy
/// variable that is not a URL (it might be credentials in another form).
fn without_credentials(key: &str, value: &str) -> Option<String> {
    if key.eq_ignore_ascii_case("no_proxy") {
        return Some(value.to_owned());
    }
    let with_scheme = if value.contains("://") {
        value.to_owned()
    } else {
        format!("http://{value}")
    };
    let mut url = url::Url::parse(&with_scheme).ok()?;
    if url.username().is_empty() && url.password().is_none() {
        return Some(value.to_owned());
    }
    url.set_username("").ok()?;
    url.set_password(None).ok()?;
    Some(url.to_string())
}

/// Why an environment could not be made.
#[derive(Debug, thiserror::Error)]
pub enum SetupError {
    /// The setup command failed: the repository's problem, to be said to people.
    #[error("setup failed: {}", .output.describe())]
    Failed {
        command: String,
        output: Box<CommandOutput>,
    },
    #[error(transparent)]
    Sandbox(#[from] SandboxError),
    #[error("the environment's directory: {0}")]
    Io(#[from] std::io::Error),
}

/// A set-up environment, ready for a worktree's sandboxes.
#[derive(Debug, Clone)]
pub struct Ready {
    pub key: EnvKey,
    pub dir: PathBuf,
    /// It was there already: setup did not run.
    pub reused: bool,
    /// Setup's output, when it ran now.
    pub output: Option<CommandOutput>,
    pub setup_seconds: f64,
    /// Which of the change's files made it and how it was set up; `None` for the base's.
    pub how: Option<String>,
    env: Vec<(String, String)>,
    links: Vec<String>,
    prepare: Option<String>,
}

/// What a worktree's environment needs ([`Maker::lookup`]).
#[derive(Debug)]
pub enum Lookup {
    /// The repository has no setup.
    Nothing,
    /// It is kept already, and linked into the worktree.
    Kept(Ready),
    /// It must be set up ([`Maker::make`]).
    Make(Pending),
}

/// An environment to set up: its key, how, from which dependency files, with which command.
#[derive(Debug)]
pub struct Pending {
    key: EnvKey,
    how: How,
    inputs: Vec<Input>,
    setup: String,
}

impl Pending {
    /// The worktree's dependency files are the base's: setup runs with network, so it must
    /// run over a clean checkout of the base commit, never over a branch's worktree.
    pub fn is_base(&self) -> bool {
        self.how == How::Base
    }
}

impl Ready {
    fn of(
        r: &Resolved,
        key: EnvKey,
        dir: PathBuf,
        reused: bool,
        output: Option<CommandOutput>,
        setup_seconds: f64,
        how: Option<String>,
    ) -> Self {
        Ready {
            key,
            dir,
            reused,
            output,
            setup_seconds,
            how,
            env: r.env.clone(),
            links: r.links.clone(),
            prepare: r.config.prepare.clone(),
        }
    }

    /// Gives `spec` the environment: mounted at `/cache`, its variables, offline settings,
    /// and the project's own build at start (`prepare`).
    pub fn apply(&self, spec: &mut SandboxSpec) {
        spec.cache = Some(self.dir.clone());
        spec.prepare = self.prepare.clone();
        spec.env.extend(self.env.iter().cloned());
        spec.env.extend(offline_env());
    }

    /// Links the environment's directories (`node_modules`) into `worktree`, where the
    /// worktree has none of its own.
    pub fn link(&self, worktree: &Path, backend: Kind) -> std::io::Result<()> {
        for l in &self.links {
            let at = worktree.join(l);
            if std::fs::symlink_metadata(&at).is_ok() || !self.dir.join(l).exists() {
                continue;
            }
            let target = match backend {
                Kind::Docker => PathBuf::from(format!("{CACHE_MOUNT}/{l}")),
                Kind::Local => self.dir.join(l),
            };
            std::os::unix::fs::symlink(target, at)?;
        }
        Ok(())
    }
}

/// Re-points the relative links under `kept` (a directory setup made at `at` in the worktree,
/// now kept in the environment) that lead out of it into the worktree, such as npm workspaces'
/// `node_modules/pkg -> ../packages/pkg`: kept in `/cache`, such a link would lead nowhere, so
/// it is made absolute to where every container sees the worktree (`work`). Links inside
/// `kept` (`.bin/x -> ../x/cli.js`) stay as they are; packages are looked at two levels deep
/// (`pkg`, `@scope/pkg`).
fn anchor_links(kept: &Path, at: &Path, work: &Path) -> std::io::Result<()> {
    let walk = ignore::WalkBuilder::new(kept)
        .standard_filters(false)
        .follow_links(false)
        .max_depth(Some(2))
        .build();
    for entry in walk.flatten() {
        if !entry.path_is_symlink() {
            continue;
        }
        let link = entry.path();
        let target = std::fs::read_link(link)?;
        if target.is_absolute() {
            continue;
        }
        let Ok(rel) = link.strip_prefix(kept) else {
            continue;
        };
        // Where the link sat in the worktree, and where its target is from the worktree's root.
        let mut resolved = at.join(rel);
        resolved.pop();
        for part in target.components() {
            match part {
                std::path::Component::ParentDir if !resolved.pop() => {
                    resolved = PathBuf::from("..");
                    break;
                }
                std::path::Component::Normal(p) => resolved.push(p),
                _ => {}
            }
        }
        if resolved.starts_with(at) || resolved.starts_with("..") {
            continue;
        }
        std::fs::remove_file(link)?;
        std::os::unix::fs::symlink(work.join(resolved), link)?;
    }
    Ok(())
}

/// A dependency file's path and content (`None`: absent).
type Input = (String, Option<Vec<u8>>);

/// The dependency files of the worktree (absent ones as `None`), read as files a sandbox may
/// have written are ([`untrusted`]): a link, a FIFO or a huge file is refused with its path,
/// as a failed setup of this worktree's dependency files.
fn read_inputs(worktree: &Path, inputs: &[String]) -> Result<Vec<Input>, SetupError> {
    inputs
        .iter()
        .map(
            |p| match untrusted::read(worktree, p, untrusted::DEFAULT_CAP) {
                Ok(bytes) => Ok((p.clone(), Some(bytes))),
                Err(e) if e.is_missing() => Ok((p.clone(), None)),
                Err(e) => Err(SetupError::Failed {
                    command: format!("read {p}"),
                    output: Box::new(CommandOutput::exited(
                        1,
                        &format!("[vibeloop] {e}: not read\n"),
                    )),
                }),
            },
        )
        .collect()
}

/// Where and how environments are made.
pub struct Maker<'a> {
    pub backend: &'a Backend,
    pub envs: &'a Envs,
    pub network: &'a Network,
    pub retention: Retention,
}

impl Maker<'_> {
    /// The environment for the worktree of `spec` (a sandbox of it, without network): found by
    /// its key, or set up now in that worktree ([`Maker::lookup`], then [`Maker::make`]).
    /// `None` when the repository has no setup. Only for a worktree the bot may run the base's
    /// setup over (a person's checkout, a fresh checkout of the base): the hive sets the base's
    /// environment up over a clean checkout of the base commit instead (`hive::verify`).
    pub async fn prepare(
        &self,
        r: &Resolved,
        spec: &SandboxSpec,
    ) -> Result<Option<Ready>, SetupError> {
        match self.lookup(r, spec).await? {
            Lookup::Nothing => Ok(None),
            Lookup::Kept(ready) => Ok(Some(ready)),
            Lookup::Make(pending) => {
                let at = spec.worktree.clone();
                self.make(r, spec, pending, &at).await.map(Some)
            }
        }
    }

    /// The environment the worktree of `spec` needs: none, one kept (linked into the worktree
    /// already), or one to make. Found by its inputs — and, when they are a change's rather
    /// than the base's, by the ticket too: an environment a change made is never anyone
    /// else's.
    pub async fn lookup(&self, r: &Resolved, spec: &SandboxSpec) -> Result<Lookup, SetupError> {
        let Some(setup) = r.config.setup.clone() else {
            return Ok(Lookup::Nothing);
        };
        let inputs = read_inputs(&spec.worktree, &r.inputs)?;
        // The image's build, not only its name: a rebuilt image (a new Python, say) must not
        // inherit a virtual environment made with the old one.
        let image = match self.backend.image_id(&r.config.image).await {
            Some(id) => format!("{}@{id}", r.config.image),
            None => r.config.image.clone(),
        };
        let how = How::of(r, &inputs);
        let key = EnvKey::new(&image, &setup, &r.env, &inputs);
        let key = match how {
            How::Base => key,
            _ => key.owned_by(&format!("{}#{}", spec.repo, spec.ticket)),
        };
        if let Some((dir, record)) = self.envs.find(&spec.repo, &key) {
            let ready = Ready::of(r, key, dir, true, None, record.setup_seconds, record.how);
            ready.link(&spec.worktree, self.backend.kind())?;
            return Ok(Lookup::Kept(ready));
        }
        Ok(Lookup::Make(Pending {
            key,
            how,
            inputs,
            setup,
        }))
    }

    /// Sets `pending` up with setup running over `at` — the worktree of `spec`, or for the
    /// base's environment a clean checkout of the base commit — keeps it, and links it into
    /// the worktree of `spec`.
    pub async fn make(
        &self,
        r: &Resolved,
        spec: &SandboxSpec,
        pending: Pending,
        at: &Path,
    ) -> Result<Ready, SetupError> {
        let Pending {
            key,
            how,
            inputs,
            setup,
        } = pending;
        let scratch = self.envs.scratch(&spec.repo)?;
        let started = Instant::now();
        let mut over = spec.clone();
        over.worktree = at.to_owned();
        let output = self
            .run_setup(r, &over, &setup, scratch.path(), &how, &inputs)
            .await?;
        // What setup made in the worktree that belongs to the environment moves into it.
        for l in &r.links {
            let made = at.join(l);
            if made.is_dir() && !made.is_symlink() {
                let kept = scratch.path().join(l);
                std::fs::rename(&made, &kept)?;
                if self.backend.kind() == Kind::Docker {
                    anchor_links(&kept, Path::new(l), Path::new(WORK_MOUNT))?;
                }
            }
        }
        let seconds = started.elapsed().as_secs_f64();
        let record = Record {
            key: key.clone(),
            repo: spec.repo.clone(),
            image: r.config.image.clone(),
            setup,
            inputs: r.inputs.clone(),
            created: now(),
            used: now(),
            setup_seconds: seconds,
            tree: String::new(),
            how: how.describe(),
        };
        let dir = self.envs.keep(scratch, &record)?;
        for gone in self.envs.evict(self.retention, Some(&key)) {
            tracing::info!(env = %gone.record.key, repo = %gone.record.repo, bytes = gone.bytes, "old environment removed");
        }
        let ready = Ready::of(r, key, dir, false, Some(output), seconds, how.describe());
        ready.link(&spec.worktree, self.backend.kind())?;
        Ok(ready)
    }

    /// Runs setup into `cache` for the worktree of `spec`, as `how` says.
    async fn run_setup(
        &self,
        r: &Resolved,
        spec: &SandboxSpec,
        setup: &str,
        cache: &Path,
        how: &How,
        inputs: &[Input],
    ) -> Result<CommandOutput, SetupError> {
        let mut s = spec.clone();
        s.role = "setup".into();
        s.network = true;
        s.cache = Some(cache.to_owned());
        s.cache_writable = true;
        s.ca_bundle = self.network.ca_bundle.clone();
        s.env.extend(r.env.iter().cloned());
        let online_env = s.env.clone();
        s.env.extend(self.network.env());
        let timeout = Duration::from_secs(r.config.limits.setup_timeout_seconds);
        let offline = |mut s: SandboxSpec, more: &[(String, String)]| {
            s.network = false;
            s.env = online_env.clone();
            s.env.extend(offline_env());
            s.env.extend(more.iter().cloned());
            s
        };
        match how {
            How::Base | How::Network(_) => self.run(&s, setup, timeout).await,
            How::Offline(_) => self.run(&offline(s, &[]), setup, timeout).await,
            How::Fetch(plan, _) if !plan.refused.is_empty() => {
                let said = format!(
                    "[vibeloop] The download phase did not run: these dependencies would leave the registry or run code with the network open, so they are refused:\n{}\nUse packages from the registry: in Python a PEP 508 requirement (a name, extras, versions, markers), in Node a version range the lockfile pins with an `integrity`.\n",
                    plan.refused
                        .iter()
                        .map(|r| format!("  - {r}"))
                        .collect::<Vec<_>>()
                        .join("\n")
                );
                Err(SetupError::Failed {
                    command: plan.command.clone(),
                    output: Box::new(CommandOutput::exited(1, &said)),
                })
            }
            How::Fetch(plan, _) => {
                let dir = self.envs.scratch(&spec.repo)?;
                write_fetch_dir(dir.path(), inputs, &plan.files)?;
                let mut f = s.clone();
                f.role = "fetch".into();
                f.worktree = dir.path().to_owned();
                f.read_only = vec![];
                self.run(&f, &plan.command, timeout).await?;
                self.run(&offline(s, &plan.env), setup, timeout).await
            }
        }
    }

    /// `command` in a sandbox of `spec`; a failure is [`SetupError::Failed`].
    async fn run(
        &self,
        spec: &SandboxSpec,
        command: &str,
        timeout: Duration,
    ) -> Result<CommandOutput, SetupError> {
        let sandbox = self.backend.start(spec).await?;
        let output = sandbox.exec(command, timeout).await;
        sandbox.stop().await;
        let output = output?;
        if !output.success() {
            return Err(SetupError::Failed {
                command: command.to_owned(),
                output: Box::new(output),
            });
        }
        Ok(output)
    }
}

/// Package managers told to stay offline, and no proxy.
fn offline_env() -> Vec<(String, String)> {
    OFFLINE
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect()
}

/// The dependency files (`inputs`) and the plan's own files, written into `dir`: all the
/// download phase sees of the repository.
fn write_fetch_dir(
    dir: &Path,
    inputs: &[Input],
    extra: &[(String, String)],
) -> std::io::Result<()> {
    let files = inputs
        .iter()
        .filter_map(|(p, c)| Some((p.as_str(), c.as_deref()?)))
        .chain(extra.iter().map(|(p, t)| (p.as_str(), t.as_bytes())));
    for (rel, content) in files {
        let plain = Path::new(rel)
            .components()
            .all(|c| matches!(c, std::path::Component::Normal(_)));
        if !plain {
            continue;
        }
        let at = dir.join(rel);
        if let Some(parent) = at.parent() {
            std::fs::create_dir_all(parent)?;
        }
        if !at.exists() {
            std::fs::write(&at, content)?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_proxys_credentials_never_reach_a_container() {
        assert_eq!(
            without_credentials("HTTPS_PROXY", "http://me:s3cret@proxy.corp:3128").as_deref(),
            Some("http://proxy.corp:3128/")
        );
        assert_eq!(
            without_credentials("http_proxy", "me:s3cret@proxy.corp:3128").as_deref(),
            Some("http://proxy.corp:3128/")
        );
        assert_eq!(
            without_credentials("HTTP_PROXY", "http://proxy.corp:3128").as_deref(),
            Some("http://proxy.corp:3128")
        );
        assert_eq!(
            without_credentials("NO_PROXY", "localhost,.corp").as_deref(),
            Some("localhost,.corp")
        );
    }

    #[test]
    fn links_out_of_a_kept_directory_lead_to_the_worktree_in_the_container() {
        let dir = tempfile::tempdir().unwrap();
        let kept = dir.path().join("node_modules");
        std::fs::create_dir_all(kept.join(".bin")).unwrap();
        std::fs::create_dir_all(kept.join("@me")).unwrap();
        let link =
            |target: &str, at: &str| std::os::unix::fs::symlink(target, kept.join(at)).unwrap();
        link("../packages/shout", "shout");
        link("../../packages/util", "@me/util");
        link("../shout/cli.js", ".bin/shout");
        link("../../../outside", "@me/escape");
        link("/usr/lib/node_modules/npm", "npm");
        anchor_links(&kept, Path::new("node_modules"), Path::new("/work")).unwrap();
        let read = |at: &str| std::fs::read_link(kept.join(at)).unwrap();
        assert_eq!(read("shout"), Path::new("/work/packages/shout"));
        assert_eq!(read("@me/util"), Path::new("/work/packages/util"));
        assert_eq!(
            read(".bin/shout"),
            Path::new("../shout/cli.js"),
            "inside: as it was"
        );
        assert_eq!(
            read("@me/escape"),
            Path::new("../../../outside"),
            "out of the worktree: as it was"
        );
        assert_eq!(read("npm"), Path::new("/usr/lib/node_modules/npm"));
    }
}
