//! The mounts of a container: binds of host paths, a sandbox's writable overlay layer over
//! the environment, the worktree handed to the runner user, and the engine's refusal of a
//! mount told in words a person can act on.

use std::collections::HashMap;
use std::path::Path;

use bollard::models::{Mount, MountType, MountVolumeOptions, MountVolumeOptionsDriverConfig};

use crate::sandbox::SandboxError;

/// The engine's refusal of one of `mounts` ("invalid mount config for type \"bind\": …"), in
/// words that say which path and what to change; `None` for any other 400.
pub(super) fn mount_refused(message: &str, mounts: &[Mount]) -> Option<SandboxError> {
    if !message.contains("mount") {
        return None;
    }
    let source_path = mounts
        .iter()
        .filter_map(|m| m.source.as_deref())
        .find(|s| message.contains(s))
        .unwrap_or("a path")
        .to_owned();
    let (reason, fix) = if message.contains("must be absolute") {
        (
            "the path is relative".to_owned(),
            "give vibeloop an absolute data directory (--data-dir or VIBELOOP_DATA_DIR)",
        )
    } else if message.contains("does not exist") {
        (
            "it does not exist on the engine's host".to_owned(),
            "when the bot runs in a container, mount its data directory at the same path on the host (docker/compose.yml does)",
        )
    } else {
        (
            message
                .rsplit(": ")
                .next()
                .unwrap_or(message)
                .trim()
                .to_owned(),
            "check that the data directory is on a file system the Docker engine can bind-mount",
        )
    };
    Some(SandboxError::MountRefused {
        source_path,
        reason,
        fix,
    })
}

/// A sandbox's own writable layer over the environment: the environment is overlayfs's lower
/// layer, never written; what the sandbox writes to [`crate::sandbox::CACHE_MOUNT`] lands in `upper`
/// and goes away with the sandbox. The engine mounts it (a `local` volume of type `overlay`),
/// so the bot needs no privilege for it.
pub(super) struct Layer {
    pub(super) dir: std::path::PathBuf,
}

impl Layer {
    pub(super) fn new(parent: &Path, owner: Option<u32>) -> std::io::Result<Self> {
        std::fs::create_dir_all(parent)?;
        let dir = tempfile::Builder::new()
            .prefix("layer-")
            .tempdir_in(parent)?
            .keep();
        let layer = Self { dir };
        for d in [layer.upper(), layer.work()] {
            std::fs::create_dir(&d)?;
            if let Some(uid) = owner {
                std::os::unix::fs::chown(&d, Some(uid), Some(uid))?;
            }
        }
        Ok(layer)
    }

    pub(super) fn upper(&self) -> std::path::PathBuf {
        self.dir.join("upper")
    }

    fn work(&self) -> std::path::PathBuf {
        self.dir.join("work")
    }

    /// The mount of `lower` (the environment) at `/cache` with this layer over it.
    pub(super) fn mount(&self, lower: &Path) -> Result<Mount, SandboxError> {
        let paths = [lower.to_path_buf(), self.upper(), self.work()];
        if let Some(bad) = paths
            .iter()
            .find(|p| p.to_string_lossy().contains([',', ':']))
        {
            return Err(SandboxError::BadMount {
                path: bad.display().to_string(),
                why: "overlayfs cannot take a path with ',' or ':': move the data directory".into(),
            });
        }
        let options = HashMap::from([
            ("type".to_owned(), "overlay".to_owned()),
            ("device".to_owned(), "overlay".to_owned()),
            (
                "o".to_owned(),
                format!(
                    "lowerdir={},upperdir={},workdir={}",
                    paths[0].display(),
                    paths[1].display(),
                    paths[2].display()
                ),
            ),
        ]);
        Ok(Mount {
            target: Some(crate::sandbox::CACHE_MOUNT.to_owned()),
            typ: Some(MountType::VOLUME),
            volume_options: Some(MountVolumeOptions {
                no_copy: Some(true),
                driver_config: Some(MountVolumeOptionsDriverConfig {
                    name: Some("local".into()),
                    options: Some(options),
                }),
                ..Default::default()
            }),
            ..Default::default()
        })
    }
}

impl Drop for Layer {
    fn drop(&mut self) {
        // overlayfs leaves `work/work` empty, owned by root and closed to others: removed by
        // name first, which needs only the right to write in `work`.
        let _ = std::fs::remove_dir(self.work().join("work"));
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

pub(super) fn bind(source: &Path, target: &str, read_only: bool) -> Mount {
    Mount {
        target: Some(target.to_owned()),
        source: Some(source.display().to_string()),
        typ: Some(MountType::BIND),
        read_only: Some(read_only),
        ..Default::default()
    }
}

/// Hands a worktree to the runner user (the bot runs as root; the container does not).
pub(super) fn chown_tree(root: &Path, uid: u32) -> std::io::Result<()> {
    std::os::unix::fs::lchown(root, Some(uid), Some(uid))?;
    for entry in std::fs::read_dir(root)? {
        let entry = entry?;
        let path = entry.path();
        if entry.file_type()?.is_dir() {
            chown_tree(&path, uid)?;
        } else {
            std::os::unix::fs::lchown(&path, Some(uid), Some(uid))?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    #[test]
    fn a_refused_mount_names_the_path_and_the_fix() {
        let mounts = vec![
            bind(
                Path::new("./.vibeloop/worktrees/acme/demo/wt"),
                "/work",
                false,
            ),
            bind(Path::new("/etc/ssl/ca.pem"), "/ca.pem", true),
        ];
        let engine = "invalid mount config for type \"bind\": invalid mount path: './.vibeloop/worktrees/acme/demo/wt' mount path must be absolute";
        let said = mount_refused(engine, &mounts).unwrap().to_string();
        assert_eq!(
            said,
            "Docker cannot mount ./.vibeloop/worktrees/acme/demo/wt into the sandbox (the path is relative): give vibeloop an absolute data directory (--data-dir or VIBELOOP_DATA_DIR)"
        );
        let missing = "invalid mount config for type \"bind\": bind source path does not exist: /etc/ssl/ca.pem";
        let said = mount_refused(missing, &mounts).unwrap().to_string();
        assert!(said.starts_with("Docker cannot mount /etc/ssl/ca.pem into the sandbox (it does not exist on the engine's host)"), "{said}");
        assert!(mount_refused("invalid reference format", &mounts).is_none());
    }
}
