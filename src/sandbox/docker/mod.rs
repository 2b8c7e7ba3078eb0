//! The Docker backend (bollard): one container per worktree, started once and reused for every
//! command of that worktree (`docker exec`), removed when its ticket ends. At start-up,
//! containers a crashed run left behind are found by this instance's label and removed.
//!
//! Isolation: the worktree is bind-mounted at `/work`, each read-only path is mounted read-only
//! over it; no network unless the repository opts in; CPU, memory (no swap) and pids limits; all
//! capabilities dropped and no privilege escalation; a non-root user; an init that reaps
//! zombies; and an environment that holds nothing of the bot's.

use std::collections::HashMap;
use std::path::Path;
use std::time::Duration;

use bollard::Docker;
use bollard::models::{ContainerCreateBody, HostConfig, Mount, ResourcesUlimits};
use bollard::query_parameters::{
    CreateContainerOptionsBuilder, ListContainersOptionsBuilder, RemoveContainerOptionsBuilder,
};
use tokio::sync::Mutex;

use super::{SandboxError, SandboxSpec, contained_path};

mod exec;
mod images;
mod mounts;
mod network;
use mounts::{Layer, bind, chown_tree, mount_refused};
pub use network::Egress;
use network::start_egress;

const LABEL_MANAGED: &str = "vibeloop.managed";
const LABEL_INSTANCE: &str = "vibeloop.instance";
/// The runner image's non-root user, used when the bot itself runs as root.
const RUNNER_UID: u32 = 1000;
/// The image's own programs the bot runs, by absolute path (Debian's coreutils, dash, procps).
const SH: &str = "/bin/sh";
const TIMEOUT: &str = "/usr/bin/timeout";
/// Who a container's init and sleeper run as: nobody, or root for a bot that runs as nobody.
fn keeper(user: &str) -> &'static str {
    if user.split(':').next() == Some("65534") {
        "0:0"
    } else {
        "65534:65534"
    }
}
/// Time given to a command past its timeout before the sandbox kills everything in it.
const GRACE: Duration = Duration::from_secs(5);

fn docker_err(e: bollard::errors::Error) -> SandboxError {
    SandboxError::Docker(e.to_string())
}

/// A connected Docker engine, and how this process labels its containers.
#[derive(Clone)]
pub struct DockerBackend {
    docker: Docker,
    /// Identifies this bot's containers (a hash of its data directory).
    instance: String,
    /// `uid:gid` the commands run as.
    user: String,
    /// Where sandboxes' writable layers over the environment live (`<data>/layers`).
    layers: std::path::PathBuf,
    /// Set when the worktree must be handed to the runner user first (the bot runs as root).
    chown_to: Option<u32>,
    version: String,
    /// The only way out of a networked sandbox, when the operator allows registries
    /// (`VIBELOOP_EGRESS_ALLOW`); `None`: Docker's default bridge.
    egress: Option<std::sync::Arc<Egress>>,
}

impl DockerBackend {
    /// Connects through `DOCKER_HOST` or the local socket and checks the engine answers.
    pub async fn connect(data_dir: &Path) -> Result<Self, SandboxError> {
        let docker = Docker::connect_with_defaults().map_err(docker_err)?;
        let docker = tokio::time::timeout(Duration::from_secs(5), docker.negotiate_version())
            .await
            .map_err(|_| SandboxError::Docker("the engine did not answer within 5 s".into()))?
            .map_err(docker_err)?;
        let version = docker
            .version()
            .await
            .map_err(docker_err)?
            .version
            .unwrap_or_default();
        // One instance per host and data directory: several workers may share an engine (and,
        // in containers, the same data path), and each removes only its own leftovers.
        let instance = crate::ids::Instance::of(data_dir).tag().to_owned();
        // SAFETY: getuid and getgid have no preconditions.
        let (uid, gid) = unsafe { (libc::geteuid(), libc::getegid()) };
        let (user, chown_to) = if uid == 0 {
            (format!("{RUNNER_UID}:{RUNNER_UID}"), Some(RUNNER_UID))
        } else {
            (format!("{uid}:{gid}"), None)
        };
        let egress = match super::egress::AllowList::from_env() {
            Some(allow) => Some(std::sync::Arc::new(start_egress(&docker, allow).await?)),
            None => None,
        };
        Ok(Self {
            docker,
            instance,
            user,
            chown_to,
            version,
            layers: data_dir.join("layers"),
            egress,
        })
    }

    /// The egress network and proxy, when networked sandboxes reach only allowed hosts.
    pub fn egress(&self) -> Option<&Egress> {
        self.egress.as_deref()
    }

    /// The engine's storage driver (`overlay2`, `fuse-overlayfs`…), if it says.
    pub async fn storage_driver(&self) -> Option<String> {
        self.docker.info().await.ok()?.driver
    }

    /// The engine's version, for the start-up log.
    pub fn version(&self) -> &str {
        &self.version
    }

    fn container_name(&self, spec: &SandboxSpec) -> String {
        let raw = format!(
            "vibeloop-{}-{}-{}-{}",
            self.instance, spec.repo, spec.ticket, spec.role
        );
        let mut name: String = raw
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || c == '_' || c == '.' || c == '-' {
                    c
                } else {
                    '-'
                }
            })
            .collect();
        name.truncate(120);
        name
    }

    /// Creates and starts the container of `spec`, replacing one of the same name.
    pub async fn start(&self, spec: &SandboxSpec) -> Result<DockerSandbox, SandboxError> {
        let name = self.container_name(spec);
        self.remove(&name).await;
        self.hand_over(spec)?;
        let (mounts, layer) = self.mounts_of(spec)?;
        let labels = HashMap::from([
            (LABEL_MANAGED.to_owned(), "true".to_owned()),
            (LABEL_INSTANCE.to_owned(), self.instance.clone()),
            ("vibeloop.repo".to_owned(), spec.repo.clone()),
            ("vibeloop.ticket".to_owned(), spec.ticket.clone()),
            ("vibeloop.role".to_owned(), spec.role.clone()),
        ]);
        let body = ContainerCreateBody {
            image: Some(spec.image.clone()),
            cmd: Some(vec!["sleep".into(), "infinity".into()]),
            // The container's init and its sleeper run as another user than the commands, so
            // that a kill of every process the commands' user may signal leaves it standing.
            user: Some(keeper(&self.user).to_owned()),
            working_dir: Some(super::WORK_MOUNT.into()),
            env: Some(
                [
                    "HOME=/tmp".to_owned(),
                    "LANG=C.UTF-8".to_owned(),
                    "PYTHONDONTWRITEBYTECODE=1".to_owned(),
                ]
                .into_iter()
                .chain(self.env_of(spec).iter().map(|(k, v)| format!("{k}={v}")))
                .collect(),
            ),
            labels: Some(labels),
            network_disabled: Some(!spec.network),
            host_config: Some(self.host_config(spec, mounts.clone())),
            ..Default::default()
        };
        let options = CreateContainerOptionsBuilder::default().name(&name).build();
        let created = self
            .docker
            .create_container(Some(options), body)
            .await
            .map_err(|e| match &e {
                bollard::errors::Error::DockerResponseServerError {
                    status_code: 404, ..
                } => SandboxError::ImageMissing(spec.image.clone()),
                bollard::errors::Error::DockerResponseServerError {
                    status_code: 400,
                    message,
                } => mount_refused(message, &mounts).unwrap_or_else(|| docker_err(e)),
                _ => docker_err(e),
            })?;
        let sandbox = DockerSandbox {
            docker: self.docker.clone(),
            id: created.id,
            name,
            oom_kills: Mutex::new(0),
            user: self.user.clone(),
            worktree: spec.worktree.clone(),
            writable_cache: match &layer {
                Some(l) => Some(l.upper()),
                None => spec.cache.clone(),
            },
            _layer: layer,
            disk_mb: spec.disk_mb,
        };
        if let Err(e) = self.docker.start_container(&sandbox.id, None).await {
            sandbox.remove().await;
            return Err(docker_err(e));
        }
        // A new container's cgroup has killed nothing yet: `oom_kills` starts at 0, with no
        // command run to read it.
        Ok(sandbox)
    }

    /// The worktree, checked to be a directory, given to the commands' user.
    pub(in crate::sandbox) fn hand_over(&self, spec: &SandboxSpec) -> Result<(), SandboxError> {
        let meta = std::fs::symlink_metadata(&spec.worktree)?;
        if !meta.is_dir() {
            return Err(SandboxError::BadMount {
                path: spec.worktree.display().to_string(),
                why: "not a directory".into(),
            });
        }
        if let Some(uid) = self.chown_to {
            chown_tree(&spec.worktree, uid)?;
            // The worktree's link to the bot's mirror stays the bot's: git's owner check
            // refuses a repository whose `.git` someone else owns.
            let dot_git = spec.worktree.join(".git");
            if std::fs::symlink_metadata(&dot_git).is_ok_and(|m| m.is_file()) {
                // SAFETY: geteuid has no preconditions.
                let me = unsafe { libc::geteuid() };
                std::os::unix::fs::lchown(&dot_git, Some(me), Some(me))?;
            }
        }
        Ok(())
    }

    /// What the container mounts — the worktree, its `.git` link read-only, the environment
    /// (writable, or under a layer of the sandbox's own), the CA bundle, the read-only paths —
    /// and the layer, kept while the sandbox lives.
    fn mounts_of(&self, spec: &SandboxSpec) -> Result<(Vec<Mount>, Option<Layer>), SandboxError> {
        let mut mounts = vec![bind(&spec.worktree, super::WORK_MOUNT, false)];
        // git's link from the worktree to the bot's mirror: read-only, so nothing in the
        // container can point the bot's git elsewhere (the bot checks it too, for the local
        // backend).
        let dot_git = spec.worktree.join(".git");
        if std::fs::symlink_metadata(&dot_git).is_ok_and(|m| m.is_file()) {
            mounts.push(bind(&dot_git, &format!("{}/.git", super::WORK_MOUNT), true));
        }
        let mut layer = None;
        if let Some(cache) = &spec.cache {
            if spec.cache_writable {
                if let Some(uid) = self.chown_to {
                    std::os::unix::fs::chown(cache, Some(uid), Some(uid))?;
                }
                mounts.push(bind(cache, super::CACHE_MOUNT, false));
            } else {
                // On the worktree's own disk when it has one: what the sandbox writes over
                // the environment counts against the same room.
                let parent =
                    super::disk::layers_of(&spec.worktree).unwrap_or_else(|| self.layers.clone());
                let l = Layer::new(&parent, self.chown_to)?;
                mounts.push(l.mount(cache)?);
                layer = Some(l);
            }
        }
        if let Some(ca) = &spec.ca_bundle {
            mounts.push(bind(ca, super::CA_MOUNT, true));
        }
        for rel in &spec.read_only {
            if let Some(path) = contained_path(&spec.worktree, rel)? {
                mounts.push(bind(
                    &path,
                    &format!("{}/{}", super::WORK_MOUNT, rel.trim_end_matches('/')),
                    true,
                ));
            }
        }
        Ok((mounts, layer))
    }

    /// The container's limits and isolation: memory without swap, CPUs, processes, a
    /// read-only root with `/tmp` in memory, no file past the disk limit, no capability.
    fn host_config(&self, spec: &SandboxSpec, mounts: Vec<Mount>) -> HostConfig {
        let memory = (spec.memory_mb * 1024 * 1024) as i64;
        let file_limit = spec.disk_mb.saturating_mul(1 << 20).min(i64::MAX as u64) as i64;
        HostConfig {
            mounts: Some(mounts),
            network_mode: Some(self.network_of(spec)),
            memory: Some(memory),
            memory_swap: Some(memory),
            nano_cpus: Some((spec.cpus * 1e9) as i64),
            pids_limit: Some(spec.pids as i64),
            // Only the worktree (and the environment) and a /tmp in memory can be written
            // (exec allowed: test runners such as `go test` run binaries they build there),
            // and no file can grow
            // past the disk limit; the disk guard watches what the worktree takes.
            readonly_rootfs: Some(true),
            tmpfs: Some(HashMap::from([(
                "/tmp".to_owned(),
                format!("rw,exec,nosuid,nodev,size={}m,mode=1777", spec.memory_mb),
            )])),
            ulimits: Some(vec![ResourcesUlimits {
                name: Some("fsize".into()),
                soft: Some(file_limit),
                hard: Some(file_limit),
            }]),
            cap_drop: Some(vec!["ALL".into()]),
            security_opt: Some(vec!["no-new-privileges".into()]),
            init: Some(true),
            ..Default::default()
        }
    }

    async fn remove(&self, name: &str) {
        let options = RemoveContainerOptionsBuilder::default()
            .force(true)
            .v(true)
            .build();
        let _ = self.docker.remove_container(name, Some(options)).await;
    }

    /// Removes every container of this instance (left by a crash), then their writable
    /// layers; returns how many containers.
    pub async fn remove_leftovers(&self) -> Result<usize, SandboxError> {
        let list = self.containers().await?;
        for (id, _) in &list {
            self.remove(id).await;
        }
        for entry in std::fs::read_dir(&self.layers)
            .into_iter()
            .flatten()
            .flatten()
        {
            drop(Layer { dir: entry.path() });
        }
        Ok(list.len())
    }

    /// Removes the containers of `ticket` of `repo`; returns how many.
    pub async fn remove_ticket(&self, repo: &str, ticket: &str) -> Result<usize, SandboxError> {
        let list = self
            .mine(&[
                format!("vibeloop.repo={repo}"),
                format!("vibeloop.ticket={ticket}"),
            ])
            .await?;
        for c in &list {
            if let Some(id) = &c.id {
                self.remove(id).await;
            }
        }
        Ok(list.len())
    }

    /// This instance's containers (that also carry every label `k=v` of `also`), running or not.
    async fn mine(
        &self,
        also: &[String],
    ) -> Result<Vec<bollard::models::ContainerSummary>, SandboxError> {
        let mut labels = vec![format!("{LABEL_INSTANCE}={}", self.instance)];
        labels.extend_from_slice(also);
        let filters = HashMap::from([("label".to_owned(), labels)]);
        let options = ListContainersOptionsBuilder::default()
            .all(true)
            .filters(&filters)
            .build();
        self.docker
            .list_containers(Some(options))
            .await
            .map_err(docker_err)
    }

    /// This instance's containers with what they belong to, running or not.
    pub async fn sandboxes(&self) -> Result<Vec<super::SandboxInfo>, SandboxError> {
        let list = self.mine(&[]).await?;
        Ok(list
            .into_iter()
            .map(|c| {
                let labels = c.labels.unwrap_or_default();
                let label = |k: &str| labels.get(k).cloned().unwrap_or_default();
                super::SandboxInfo {
                    id: c.id.unwrap_or_default().chars().take(12).collect(),
                    repo: label("vibeloop.repo"),
                    ticket: label("vibeloop.ticket"),
                    role: label("vibeloop.role"),
                    state: c.state.map(|s| s.to_string()).unwrap_or_default(),
                }
            })
            .collect())
    }

    /// `(id, name)` of this instance's containers, running or not.
    pub async fn containers(&self) -> Result<Vec<(String, String)>, SandboxError> {
        let list = self.mine(&[]).await?;
        Ok(list
            .into_iter()
            .map(|c| {
                let name = c
                    .names
                    .unwrap_or_default()
                    .first()
                    .map(|n| n.trim_start_matches('/').to_owned())
                    .unwrap_or_default();
                (c.id.unwrap_or_default(), name)
            })
            .collect())
    }
}

/// A running container of one worktree.
pub struct DockerSandbox {
    docker: Docker,
    id: String,
    name: String,
    /// The cgroup's OOM-kill count after the last command: a rise means the kernel killed one.
    oom_kills: Mutex<u64>,
    /// Who its commands run as (`uid:gid`).
    user: String,
    /// The worktree and where the environment's cache is written on the host (setup's own,
    /// or this sandbox's layer over it), and what one command may write there (MiB).
    worktree: std::path::PathBuf,
    writable_cache: Option<std::path::PathBuf>,
    disk_mb: u64,
    /// This sandbox's writable layer over the environment: dropped with the sandbox, after
    /// its container (and the overlay the engine mounted) is gone.
    _layer: Option<Layer>,
}

impl DockerSandbox {
    pub fn name(&self) -> &str {
        &self.name
    }

    pub fn worktree(&self) -> &Path {
        &self.worktree
    }

    pub fn disk_mb(&self) -> u64 {
        self.disk_mb
    }

    /// Where on the host's disk its commands can write (`/tmp` is in memory).
    pub fn writable(&self) -> Vec<std::path::PathBuf> {
        std::iter::once(self.worktree.clone())
            .chain(self.writable_cache.clone())
            .collect()
    }

    /// Stops and removes the container.
    pub async fn remove(self) {
        let options = RemoveContainerOptionsBuilder::default()
            .force(true)
            .v(true)
            .build();
        let _ = self.docker.remove_container(&self.id, Some(options)).await;
    }
}
