//! The test lock inside a sandbox: files no command may change, watched rather than mounted
//! read-only, so the project's own tools work as they do anywhere — a linter that fixes in
//! place, a formatter, caches written beside the tests (`__pycache__`) — while what they did to
//! a locked file is undone and reported after every command ([`Lock::settle`]).
//!
//! At the start the locked files are copied aside (regular files only, never through a link).
//! After a command each is compared: one changed, replaced or removed is put back as it was —
//! written in place when it is still the same plain file, else made anew — and a new file in a
//! locked directory is removed, unless it is a cache (`__pycache__`, `.pytest_cache`…). The
//! caller decides what a change means: the test gate fails on it, other gates note it.

use std::collections::BTreeMap;
use std::io::Write as _;
use std::os::unix::fs::{MetadataExt as _, OpenOptionsExt as _, PermissionsExt as _};
use std::path::{Path, PathBuf};

use crate::untrusted::files as untrusted;

/// Most files a lock watches; past that the rest are left to the security gate's test lock.
const MOST_FILES: usize = 20_000;
/// Most names a lock knows in its directories: past that it cannot tell a new file from an old
/// one, and removes none.
const MOST_NAMES: usize = 200_000;
/// Largest locked file copied aside (a larger one that changes cannot be put back, and says so).
const LARGEST: u64 = 16 << 20;
/// Largest locked file read at all: past that a file is not a test, and is not watched.
const WATCHED: u64 = 256 << 20;
/// Most bytes copied aside for one sandbox: files past it are watched by their hash alone.
const COPIED: u64 = 512 << 20;

/// Directories tools write caches into: new files there are not changes to the tests.
const CACHES: &[&str] = &[
    "__pycache__",
    ".pytest_cache",
    ".mypy_cache",
    ".ruff_cache",
    ".hypothesis",
    ".cache",
    "target",
    "node_modules",
];

/// One locked file as it was.
struct Kept {
    /// Its copy, or `None` when it was too large to copy.
    copy: Option<PathBuf>,
    digest: [u8; 32],
    mode: u32,
    owner: (u32, u32),
}

/// The locked files of one worktree and their copies.
pub struct Lock {
    root: PathBuf,
    files: BTreeMap<String, Kept>,
    dirs: Vec<String>,
    /// Every entry the directories held at the start (`None`: too many to know them all).
    known: Option<std::collections::BTreeSet<String>>,
    copies: tempfile::TempDir,
    copied: u64,
}

impl Lock {
    /// Locks `paths` of `root` (files, or directories whose every file is locked), as they
    /// are now.
    pub fn take(root: &Path, paths: &[String]) -> std::io::Result<Self> {
        let copies = tempfile::Builder::new()
            .prefix("vibeloop-lock-")
            .tempdir()?;
        let mut lock = Self {
            root: root.to_owned(),
            files: BTreeMap::new(),
            dirs: Vec::new(),
            known: Some(Default::default()),
            copies,
            copied: 0,
        };
        for rel in paths {
            match untrusted::resolve(root, rel) {
                Ok(Some(p)) if p.is_dir() => {
                    lock.dirs.push(rel.trim_end_matches('/').to_owned());
                    let entries = entries_under(root, rel);
                    for file in entries.iter().take(MOST_FILES) {
                        lock.keep(file)?;
                    }
                    match lock.known.as_mut() {
                        Some(known) if entries.len() < MOST_NAMES => known.extend(entries),
                        _ => lock.known = None,
                    }
                }
                Ok(Some(_)) => lock.keep(rel)?,
                _ => {}
            }
        }
        Ok(lock)
    }

    /// How many files it watches.
    pub fn len(&self) -> usize {
        self.files.len()
    }

    pub fn is_empty(&self) -> bool {
        self.files.is_empty()
    }

    fn keep(&mut self, rel: &str) -> std::io::Result<()> {
        if self.files.len() >= MOST_FILES || self.files.contains_key(rel) {
            return Ok(());
        }
        let Ok(bytes) = untrusted::read(&self.root, rel, WATCHED) else {
            return Ok(()); // not a plain file: nothing a tool would open
        };
        let meta = std::fs::symlink_metadata(self.root.join(rel))?;
        let size = bytes.len() as u64;
        let copy = if size <= LARGEST && self.copied + size <= COPIED {
            self.copied += size;
            let at = self.copies.path().join(self.files.len().to_string());
            std::fs::write(&at, &bytes)?;
            Some(at)
        } else {
            None
        };
        self.files.insert(
            rel.to_owned(),
            Kept {
                copy,
                digest: digest(&bytes),
                mode: meta.permissions().mode() & 0o7777,
                owner: (meta.uid(), meta.gid()),
            },
        );
        Ok(())
    }

    /// After a command: every locked file it changed, replaced or removed is put back, and
    /// every new file it left in a locked directory (caches aside) removed. Returns what it
    /// undid, one line each (`tests/test_x.py`, or with why it could not be undone).
    pub fn settle(&self) -> Vec<String> {
        let mut undone = Vec::new();
        for (rel, kept) in &self.files {
            let now = untrusted::read(&self.root, rel, WATCHED);
            if now.as_ref().is_ok_and(|b| digest(b) == kept.digest) {
                continue;
            }
            undone.push(match self.put_back(rel, kept) {
                Ok(()) => rel.clone(),
                Err(why) => format!("{rel} (not put back: {why})"),
            });
        }
        let Some(known) = &self.known else {
            return undone;
        };
        for dir in &self.dirs {
            for file in entries_under(&self.root, dir) {
                if known.contains(&file) || is_cache(&file) {
                    continue;
                }
                let gone = std::fs::remove_file(self.root.join(&file));
                undone.push(match gone {
                    Ok(()) => format!("{file} (new, removed)"),
                    Err(e) => format!("{file} (new, not removed: {e})"),
                });
            }
        }
        undone
    }

    /// Writes `rel` back as it was: in place when it is still the same plain file with one
    /// name (so its owner and mode stay), else removed and made anew.
    fn put_back(&self, rel: &str, kept: &Kept) -> Result<(), String> {
        let copy = kept.copy.as_ref().ok_or("too large to keep a copy")?;
        let bytes = std::fs::read(copy).map_err(|e| e.to_string())?;
        let path = untrusted::resolve(&self.root, parent_of(rel))
            .map_err(|e| e.to_string())?
            .map(|p| p.join(file_name(rel)))
            .ok_or("its directory is gone")?;
        let plain = std::fs::symlink_metadata(&path)
            .is_ok_and(|m| m.file_type().is_file() && m.nlink() == 1);
        if !plain {
            match std::fs::symlink_metadata(&path) {
                Ok(m) if m.is_dir() => std::fs::remove_dir_all(&path),
                Ok(_) => std::fs::remove_file(&path),
                Err(_) => Ok(()),
            }
            .map_err(|e| e.to_string())?;
        }
        let mut file = std::fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .custom_flags(libc::O_NOFOLLOW)
            .mode(kept.mode & 0o777)
            .open(&path)
            .map_err(|e| e.to_string())?;
        file.write_all(&bytes).map_err(|e| e.to_string())?;
        let _ = std::os::unix::fs::fchown(&file, Some(kept.owner.0), Some(kept.owner.1));
        let _ = file.set_permissions(std::fs::Permissions::from_mode(kept.mode & 0o777));
        Ok(())
    }
}

fn digest(bytes: &[u8]) -> [u8; 32] {
    use sha2::Digest as _;
    sha2::Sha256::digest(bytes).into()
}

fn parent_of(rel: &str) -> &str {
    rel.rsplit_once('/').map_or("", |(p, _)| p)
}

fn file_name(rel: &str) -> &str {
    rel.rsplit_once('/').map_or(rel, |(_, f)| f)
}

fn is_cache(rel: &str) -> bool {
    rel.split('/').any(|part| CACHES.contains(&part)) || rel.ends_with(".pyc")
}

/// Every entry but a directory under the directory `rel` of `root` (files, links, special
/// files), relative to `root`, sorted, never through a link, at most [`MOST_NAMES`].
fn entries_under(root: &Path, rel: &str) -> Vec<String> {
    let walker = ignore::WalkBuilder::new(root.join(rel))
        .standard_filters(false)
        .follow_links(false)
        .build();
    let mut names = walker
        .flatten()
        .filter(|e| e.file_type().is_some_and(|t| !t.is_dir()))
        .filter_map(|e| {
            let r = e.path().strip_prefix(root).ok()?;
            Some(r.to_string_lossy().into_owned())
        })
        .take(MOST_NAMES)
        .collect::<Vec<_>>();
    names.sort();
    names
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tree() -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("tests")).unwrap();
        std::fs::write(
            dir.path().join("tests/test_a.py"),
            "def test_a():\n    assert 1\n",
        )
        .unwrap();
        std::fs::write(dir.path().join("tests/data.txt"), "golden\n").unwrap();
        std::fs::write(dir.path().join("calc.py"), "x = 1\n").unwrap();
        dir
    }

    #[test]
    fn what_a_command_did_to_locked_files_is_undone_and_said() {
        let dir = tree();
        let root = dir.path();
        let lock = Lock::take(root, &["tests/".into()]).unwrap();
        assert_eq!(lock.len(), 2);
        assert!(lock.settle().is_empty(), "nothing changed yet");
        // Rewritten, replaced by a link, a new test file, a cache, and a file outside the lock.
        std::fs::write(root.join("tests/test_a.py"), "def test_a():\n    pass\n").unwrap();
        std::fs::remove_file(root.join("tests/data.txt")).unwrap();
        std::os::unix::fs::symlink("/etc/passwd", root.join("tests/data.txt")).unwrap();
        std::fs::write(root.join("tests/conftest.py"), "# forged\n").unwrap();
        std::os::unix::fs::symlink("../calc.py", root.join("tests/test_linked.py")).unwrap();
        std::fs::create_dir_all(root.join("tests/__pycache__")).unwrap();
        std::fs::write(root.join("tests/__pycache__/test_a.cpython-311.pyc"), "x").unwrap();
        std::fs::write(root.join("calc.py"), "x = 2\n").unwrap();
        let undone = lock.settle();
        assert_eq!(
            undone,
            [
                "tests/data.txt",
                "tests/test_a.py",
                "tests/conftest.py (new, removed)",
                "tests/test_linked.py (new, removed)"
            ]
        );
        let read = |p: &str| std::fs::read_to_string(root.join(p)).unwrap();
        assert_eq!(read("tests/test_a.py"), "def test_a():\n    assert 1\n");
        assert_eq!(read("tests/data.txt"), "golden\n");
        assert!(
            !std::fs::symlink_metadata(root.join("tests/data.txt"))
                .unwrap()
                .is_symlink()
        );
        assert!(!root.join("tests/conftest.py").exists());
        assert!(std::fs::symlink_metadata(root.join("tests/test_linked.py")).is_err());
        assert!(
            root.join("tests/__pycache__/test_a.cpython-311.pyc")
                .exists()
        );
        assert_eq!(read("calc.py"), "x = 2\n", "not locked");
        assert!(lock.settle().is_empty(), "all undone");
    }

    #[test]
    fn a_locked_file_keeps_its_mode_and_a_hard_link_is_not_written_through() {
        let dir = tree();
        let root = dir.path();
        let test = root.join("tests/test_a.py");
        std::fs::set_permissions(&test, std::fs::Permissions::from_mode(0o664)).unwrap();
        let lock = Lock::take(root, &["tests/test_a.py".into()]).unwrap();
        // The test file made a second name of calc.py: writing it in place would write calc.py.
        std::fs::remove_file(&test).unwrap();
        std::fs::hard_link(root.join("calc.py"), &test).unwrap();
        assert_eq!(lock.settle(), ["tests/test_a.py"]);
        assert_eq!(
            std::fs::read_to_string(root.join("calc.py")).unwrap(),
            "x = 1\n"
        );
        let meta = std::fs::metadata(&test).unwrap();
        assert_eq!(meta.permissions().mode() & 0o777, 0o664);
        assert_eq!(meta.nlink(), 1);
    }
}
