//! A started sandbox given a second piece of work: the same container, when a fresh one for the
//! new work would be made alike (only its role and its test lock differ), so that a ticket
//! starts one container fewer. The caller decides when that is sound; here only that the two
//! would be the same container, and what a fresh start does beyond the container: the
//! worktree's files handed to the commands' user, and the test lock taken over what the
//! worktree holds now.

use std::sync::Arc;

use super::{Backend, Sandbox, SandboxError, SandboxSpec, lock};

impl Backend {
    /// `sandbox`, started for `was`, made the sandbox of `now`; `None` (it stopped) when a
    /// fresh sandbox for `now` would differ in anything but its role and its test lock.
    pub async fn reuse(
        &self,
        mut sandbox: Sandbox,
        was: &SandboxSpec,
        now: &SandboxSpec,
    ) -> Result<Option<Sandbox>, SandboxError> {
        if !same_container(was, now) {
            sandbox.stop().await;
            return Ok(None);
        }
        let taken = match self {
            Backend::Docker(d) => d.hand_over(now),
            Backend::Local => Ok(()),
        };
        let taken = match taken {
            Ok(()) => take_lock(now).await,
            Err(e) => Err(e),
        };
        match taken {
            Ok(lock) => {
                sandbox.lock = lock;
                crate::metrics::sandbox_reused(self.name());
                Ok(Some(sandbox))
            }
            Err(e) => {
                sandbox.stop().await;
                Err(e)
            }
        }
    }
}

/// The test lock of `spec`, taken over its worktree as it is now (`None`: nothing is locked).
pub(super) async fn take_lock(spec: &SandboxSpec) -> Result<Option<Arc<lock::Lock>>, SandboxError> {
    if spec.locked.is_empty() {
        return Ok(None);
    }
    let (root, paths) = (spec.worktree.clone(), spec.locked.clone());
    let taken = tokio::task::spawn_blocking(move || lock::Lock::take(&root, &paths))
        .await
        .map_err(|e| SandboxError::Io(std::io::Error::other(e.to_string())))?;
    Ok(Some(Arc::new(taken?)))
}

/// Whether sandboxes of `a` and `b` are the same container: all but the role (a label) and
/// the test lock (taken apart from the container) alike. Every field is named, so a new one
/// is weighed here.
pub fn same_container(a: &SandboxSpec, b: &SandboxSpec) -> bool {
    let SandboxSpec {
        repo,
        ticket,
        role: _,
        worktree,
        read_only,
        locked: _,
        image,
        network,
        cpus,
        memory_mb,
        pids,
        disk_mb,
        cache,
        cache_writable,
        ca_bundle,
        env,
        prepare,
    } = a;
    *repo == b.repo
        && *ticket == b.ticket
        && *worktree == b.worktree
        && *read_only == b.read_only
        && *image == b.image
        && *network == b.network
        && cpus.to_bits() == b.cpus.to_bits()
        && *memory_mb == b.memory_mb
        && *pids == b.pids
        && *disk_mb == b.disk_mb
        && *cache == b.cache
        && *cache_writable == b.cache_writable
        && *ca_bundle == b.ca_bundle
        && *env == b.env
        && *prepare == b.prepare
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(role: &str) -> SandboxSpec {
        let config = crate::config::repo::HiveConfig::default();
        let dir = std::path::Path::new("/nonexistent/worktree");
        SandboxSpec::from_config(&config, dir, ("acme/widgets", "T-1", role), &[])
    }

    #[test]
    fn specs_alike_but_for_role_and_lock_are_one_container() {
        let was = spec("baseline");
        let mut now = spec("redproof");
        now.locked = vec!["tests/test_calc.py".into()];
        assert!(same_container(&was, &now));
    }

    /// A change to a spec, and what it changes.
    type Change = (&'static str, fn(&mut SandboxSpec));

    #[test]
    fn any_other_difference_is_another_container() {
        let was = spec("baseline");
        let changes: [Change; 8] = [
            ("read-only paths", |s| s.read_only.push("docs".into())),
            ("network", |s| s.network = !s.network),
            ("image", |s| s.image.push_str("-other")),
            ("memory", |s| s.memory_mb += 1),
            ("worktree", |s| s.worktree.push("sub")),
            ("environment", |s| s.cache = Some("/env".into())),
            ("variables", |s| s.env.push(("A".into(), "1".into()))),
            ("prepare", |s| s.prepare = Some("make".into())),
        ];
        for (what, change) in changes {
            let mut now = spec("redproof");
            change(&mut now);
            assert!(!same_container(&was, &now), "{what} differs");
        }
    }
}
