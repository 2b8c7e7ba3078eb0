//! Set-up environments kept on the host, so a second ticket (and every Builder attempt) on the
//! same lockfile starts with everything installed and a warm build cache.
//!
//! An environment is a directory `<data>/envs/<repo>/<key>/`, mounted at `/cache` in the
//! repository's sandboxes, with its record `<key>.json` beside it (outside the mount, so no
//! command can forge it). The key hashes the image, the setup command, the environment variables
//! and the content of the files that decide what setup installs (manifests and lockfiles). Setup
//! writes into a scratch directory that becomes the environment only when it succeeded (a rename:
//! two workers setting up the same key never see a half-made one). Old environments go by age and
//! by total size.

use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};
use sha2::{Digest as _, Sha256};

/// What identifies an environment.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct EnvKey(String);

impl EnvKey {
    /// Hashes what decides the environment; `inputs` are the files' paths and contents (`None`
    /// when a file is absent).
    pub fn new(
        image: &str,
        setup: &str,
        env: &[(String, String)],
        inputs: &[(String, Option<Vec<u8>>)],
    ) -> Self {
        let mut h = Sha256::new();
        let mut field = |b: &[u8]| {
            h.update((b.len() as u64).to_le_bytes());
            h.update(b);
        };
        field(b"vibeloop-env-1");
        field(image.as_bytes());
        field(setup.as_bytes());
        for (k, v) in env {
            field(k.as_bytes());
            field(v.as_bytes());
        }
        for (path, content) in inputs {
            field(path.as_bytes());
            match content {
                Some(c) => field(c),
                None => field(b"\0absent"),
            }
        }
        EnvKey(hex::encode(&h.finalize()[..8]))
    }

    /// This key, owned by one ticket: the environment a change's dependency files made is
    /// that ticket's alone, never found by the base or another ticket with the same files.
    pub fn owned_by(&self, ticket: &str) -> Self {
        let mut h = Sha256::new();
        for b in [
            b"vibeloop-env-owned".as_slice(),
            self.0.as_bytes(),
            ticket.as_bytes(),
        ] {
            h.update((b.len() as u64).to_le_bytes());
            h.update(b);
        }
        EnvKey(hex::encode(&h.finalize()[..8]))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Display for EnvKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// The record kept beside an environment.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Record {
    pub key: EnvKey,
    pub repo: String,
    pub image: String,
    pub setup: String,
    pub inputs: Vec<String>,
    /// Unix seconds.
    pub created: u64,
    pub used: u64,
    /// How long setup took.
    pub setup_seconds: f64,
    /// A hash of the environment's tree as it was kept ([`tree_hash`]): a reuse checks the
    /// environment is still exactly that (empty in records older than the check: such an
    /// environment is set up again).
    #[serde(default)]
    pub tree: String,
    /// Which of a change's files made it and how it was set up; `None` for the base's.
    #[serde(default)]
    pub how: Option<String>,
}

/// An environment as `vibeloop doctor` lists it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct EnvInfo {
    pub record: Record,
    pub dir: PathBuf,
    pub bytes: u64,
}

/// How many environments are kept.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Retention {
    /// Unused for longer than this: removed.
    pub max_age: Duration,
    /// Together larger than this: the least recently used go first.
    pub max_bytes: u64,
}

impl Default for Retention {
    fn default() -> Self {
        Self {
            max_age: Duration::from_secs(14 * 86_400),
            max_bytes: 20_000_000_000,
        }
    }
}

/// The environments of one bot, under `<data>/envs`.
#[derive(Debug, Clone)]
pub struct Envs {
    root: PathBuf,
}

pub fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

/// `owner/name` as one directory name.
fn slug(repo: &str) -> String {
    repo.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' || c == '.' {
                c
            } else {
                '~'
            }
        })
        .collect::<String>()
        .trim_start_matches('.')
        .to_owned()
}

impl Envs {
    /// Environments under `root`, made absolute (they are mounted into containers, and the
    /// engine takes absolute paths only; `--env-dir envs` is relative to where the bot starts).
    pub fn new(root: impl Into<PathBuf>) -> Self {
        let root = root.into();
        Self {
            root: std::path::absolute(&root).unwrap_or(root),
        }
    }

    /// `<data>/envs` of a data directory.
    pub fn in_data_dir(data_dir: &Path) -> Self {
        Self::new(data_dir.join("envs"))
    }

    fn dir(&self, repo: &str, key: &EnvKey) -> PathBuf {
        self.root.join(slug(repo)).join(key.as_str())
    }

    fn record_path(&self, repo: &str, key: &EnvKey) -> PathBuf {
        self.root.join(slug(repo)).join(format!("{key}.json"))
    }

    /// The environment of `key`, when it was set up and is still as it was kept (its
    /// [`tree_hash`]); marks it used. One that changed since is removed: it is set up again.
    pub fn find(&self, repo: &str, key: &EnvKey) -> Option<(PathBuf, Record)> {
        let dir = self.dir(repo, key);
        let path = self.record_path(repo, key);
        let mut record: Record = serde_json::from_slice(&std::fs::read(&path).ok()?).ok()?;
        if !dir.is_dir() || &record.key != key {
            return None;
        }
        let now_tree = tree_hash(&dir);
        if record.tree != now_tree {
            tracing::warn!(env = %key, repo, kept = %record.tree, now = %now_tree, "an environment changed since it was kept: removed, to be set up again");
            let _ = std::fs::remove_file(&path);
            remove_tree(&dir);
            return None;
        }
        record.used = now();
        let _ = write_record(&path, &record);
        Some((dir, record))
    }

    /// A new, empty directory for setup to write into (see [`Envs::keep`]).
    pub fn scratch(&self, repo: &str) -> std::io::Result<tempfile::TempDir> {
        let parent = self.root.join(slug(repo));
        std::fs::create_dir_all(&parent)?;
        tempfile::Builder::new()
            .prefix(".setup-")
            .tempdir_in(parent)
    }

    /// Makes a scratch directory setup succeeded in the environment of `record.key`. Another
    /// worker may have made it first: then theirs is kept and this one removed.
    pub fn keep(&self, scratch: tempfile::TempDir, record: &Record) -> std::io::Result<PathBuf> {
        let dir = self.dir(&record.repo, &record.key);
        let path = scratch.keep();
        match std::fs::rename(&path, &dir) {
            Ok(()) => {}
            // Another worker made it first: keep theirs.
            Err(_) if dir.is_dir() => {
                remove_tree(&path);
                return Ok(dir);
            }
            Err(e) => {
                remove_tree(&path);
                return Err(e);
            }
        }
        let record = Record {
            tree: tree_hash(&dir),
            ..record.clone()
        };
        write_record(&self.record_path(&record.repo, &record.key), &record)?;
        Ok(dir)
    }

    /// Every environment kept, most recently used first.
    pub fn list(&self) -> Vec<EnvInfo> {
        let mut out = Vec::new();
        let Ok(repos) = std::fs::read_dir(&self.root) else {
            return out;
        };
        for repo in repos.flatten() {
            let Ok(files) = std::fs::read_dir(repo.path()) else {
                continue;
            };
            for f in files.flatten() {
                let p = f.path();
                if p.extension().is_none_or(|e| e != "json") {
                    continue;
                }
                let Some(record) = std::fs::read(&p)
                    .ok()
                    .and_then(|b| serde_json::from_slice::<Record>(&b).ok())
                else {
                    continue;
                };
                let dir = p.with_extension("");
                if dir.is_dir() {
                    out.push(EnvInfo {
                        bytes: tree_size(&dir),
                        dir,
                        record,
                    });
                }
            }
        }
        out.sort_by_key(|e| std::cmp::Reverse(e.record.used));
        out
    }

    /// Removes every environment kept for `repo`: another repository holds its name now
    /// (`Store::repository_seen`), and nothing set up for the one before is to reach it. How
    /// many were removed.
    pub fn forget(&self, repo: &str) -> usize {
        // Each environment of `repo` and its record live in its directory.
        let mine = self.list().iter().filter(|e| e.record.repo == repo).count();
        remove_tree(&self.root.join(slug(repo)));
        mine
    }

    /// Removes environments unused for longer than `r.max_age`, then the least recently used
    /// until the rest fit in `r.max_bytes`; never `keep`. Returns what was removed.
    pub fn evict(&self, r: Retention, keep: Option<&EnvKey>) -> Vec<EnvInfo> {
        let now = now();
        let mut total: u64 = 0;
        let mut removed = Vec::new();
        for e in self.list() {
            let old = now.saturating_sub(e.record.used) > r.max_age.as_secs();
            let kept = keep == Some(&e.record.key);
            if !kept && (old || total + e.bytes > r.max_bytes) {
                let _ = std::fs::remove_file(e.dir.with_extension("json"));
                remove_tree(&e.dir);
                removed.push(e);
            } else {
                total += e.bytes;
            }
        }
        removed
    }
}

fn write_record(path: &Path, record: &Record) -> std::io::Result<()> {
    let tmp = path.with_extension("json.tmp");
    std::fs::write(&tmp, serde_json::to_vec_pretty(record)?)?;
    std::fs::rename(tmp, path)
}

/// Removes a directory tree that commands wrote (its directories may have lost their write bit).
fn remove_tree(dir: &Path) {
    if std::fs::remove_dir_all(dir).is_ok() {
        return;
    }
    use std::os::unix::fs::PermissionsExt as _;
    for entry in walk(dir) {
        if entry.is_dir() && !entry.is_symlink() {
            let _ = std::fs::set_permissions(&entry, std::fs::Permissions::from_mode(0o755));
        }
    }
    let _ = std::fs::remove_dir_all(dir);
}

/// Every path below `dir`, symbolic links not followed.
fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_owned()];
    while let Some(d) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&d) else {
            continue;
        };
        for e in entries.flatten() {
            let p = e.path();
            if e.file_type().is_ok_and(|t| t.is_dir()) {
                stack.push(p.clone());
            }
            out.push(p);
        }
    }
    out
}

/// A hash of what is below `dir`: every entry's path, type, mode, size, modification and
/// change times, and a link's target. A change time cannot be set back by a process, so a
/// file written, replaced, planted or removed since changes the hash, whatever its content.
/// `dir` itself is left out (its owner is set at each start).
pub fn tree_hash(dir: &Path) -> String {
    use std::os::unix::fs::MetadataExt as _;
    let mut paths = walk(dir);
    paths.sort();
    let mut h = Sha256::new();
    for p in paths {
        let Ok(m) = std::fs::symlink_metadata(&p) else {
            continue;
        };
        let rel = p.strip_prefix(dir).unwrap_or(&p);
        h.update(rel.as_os_str().as_encoded_bytes());
        h.update([0]);
        for n in [
            m.mode() as i64,
            m.size() as i64,
            m.mtime(),
            m.mtime_nsec(),
            m.ctime(),
            m.ctime_nsec(),
        ] {
            h.update(n.to_le_bytes());
        }
        if m.file_type().is_symlink()
            && let Ok(to) = std::fs::read_link(&p)
        {
            h.update(to.as_os_str().as_encoded_bytes());
        }
        h.update([0]);
    }
    hex::encode(&h.finalize()[..12])
}

/// Bytes the files below `dir` take.
fn tree_size(dir: &Path) -> u64 {
    use std::os::unix::fs::MetadataExt as _;
    walk(dir)
        .iter()
        .filter_map(|p| std::fs::symlink_metadata(p).ok())
        .map(|m| m.blocks() * 512)
        .sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(key: &EnvKey, used: u64) -> Record {
        Record {
            key: key.clone(),
            repo: "acme/app".into(),
            image: "vibeloop-runner:rust".into(),
            setup: "cargo fetch".into(),
            inputs: vec!["Cargo.lock".into()],
            created: used,
            used,
            setup_seconds: 1.0,
            tree: String::new(),
            how: None,
        }
    }

    #[test]
    fn a_relative_root_is_made_absolute() {
        let envs = Envs::new("envs");
        assert!(envs.root.is_absolute(), "{}", envs.root.display());
        assert!(envs.root.ends_with("envs"));
    }

    #[test]
    fn the_key_changes_with_any_input() {
        let lock = |s: &str| vec![("Cargo.lock".to_owned(), Some(s.as_bytes().to_vec()))];
        let k = EnvKey::new("img", "cargo fetch", &[], &lock("a"));
        assert_eq!(k, EnvKey::new("img", "cargo fetch", &[], &lock("a")));
        assert_ne!(k, EnvKey::new("img", "cargo fetch", &[], &lock("b")));
        assert_ne!(k, EnvKey::new("img2", "cargo fetch", &[], &lock("a")));
        assert_ne!(k, EnvKey::new("img", "cargo fetch -q", &[], &lock("a")));
        let absent = vec![("Cargo.lock".to_owned(), None)];
        assert_ne!(k, EnvKey::new("img", "cargo fetch", &[], &absent));
        // A change's environment is its ticket's: same files, another key for each.
        assert_ne!(k.owned_by("T-1"), k);
        assert_ne!(k.owned_by("T-1"), k.owned_by("T-2"));
        assert_eq!(k.owned_by("T-1"), k.owned_by("T-1"));
    }

    #[test]
    fn kept_environments_are_found_listed_and_evicted() {
        let root = tempfile::tempdir().unwrap();
        let envs = Envs::new(root.path());
        let (a, b) = (EnvKey("a".repeat(16)), EnvKey("b".repeat(16)));
        assert!(envs.find("acme/app", &a).is_none());
        let s = envs.scratch("acme/app").unwrap();
        std::fs::write(s.path().join("blob"), vec![7u8; 64 << 10]).unwrap();
        let dir = envs.keep(s, &record(&a, now())).unwrap();
        assert!(dir.join("blob").is_file());
        assert_eq!(envs.find("acme/app", &a).unwrap().0, dir);
        // A second worker that set up the same key meanwhile: the first one stays.
        let s = envs.scratch("acme/app").unwrap();
        assert_eq!(envs.keep(s, &record(&a, now())).unwrap(), dir);
        assert!(dir.join("blob").is_file());

        let s = envs.scratch("acme/app").unwrap();
        envs.keep(s, &record(&b, now() - 30 * 86_400)).unwrap();
        let listed: Vec<String> = envs.list().iter().map(|e| e.record.key.0.clone()).collect();
        assert_eq!(listed, [a.0.clone(), b.0.clone()]);
        assert!(envs.list()[0].bytes >= 64 << 10);

        let gone = envs.evict(Retention::default(), None);
        assert_eq!(gone.len(), 1);
        assert_eq!(gone[0].record.key, b);
        // Over the size limit: everything but the one in use goes.
        let tight = Retention {
            max_bytes: 1,
            ..Retention::default()
        };
        assert!(envs.evict(tight, Some(&a)).is_empty());
        assert_eq!(envs.evict(tight, None).len(), 1);
        assert!(envs.list().is_empty());
        assert!(!dir.exists());
    }

    #[test]
    fn an_environment_changed_since_it_was_kept_is_not_reused() {
        let root = tempfile::tempdir().unwrap();
        let envs = Envs::new(root.path());
        let key = EnvKey("c".repeat(16));
        let s = envs.scratch("acme/app").unwrap();
        std::fs::create_dir_all(s.path().join("venv/lib/site-packages")).unwrap();
        std::fs::write(s.path().join("venv/lib/site-packages/ok.py"), "x = 1\n").unwrap();
        let dir = envs.keep(s, &record(&key, now())).unwrap();
        assert!(envs.find("acme/app", &key).is_some(), "as kept");
        assert!(envs.find("acme/app", &key).is_some(), "and again");
        // A ticket's code plants a .pth file: the environment is gone, to be set up anew.
        std::fs::write(dir.join("venv/lib/site-packages/evil.pth"), "import os\n").unwrap();
        assert!(envs.find("acme/app", &key).is_none());
        assert!(!dir.exists());
        assert!(envs.list().is_empty());
    }
}
