//! Real projects as test fixtures: source distributions fetched from the package index at test
//! time (never copied into this repository), pinned by version and SHA-256, kept in the test
//! target's scratch directory between runs, and unpacked into a git repository as a
//! maintainer's checkout would look (files only a release has, like `PKG-INFO` or a generated
//! version file, left out).

use std::path::{Path, PathBuf};
use std::process::Command;

use sha2::{Digest, Sha256};

/// A pinned release of a project on the Python package index.
pub struct Sdist {
    pub name: &'static str,
    pub version: &'static str,
    /// The archive's SHA-256, as the index lists it.
    pub sha256: &'static str,
}

/// Where fetched archives are kept between runs.
fn cache() -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("registry");
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn sha256(path: &Path) -> String {
    hex::encode(Sha256::digest(std::fs::read(path).unwrap()))
}

impl Sdist {
    fn file(&self) -> String {
        format!("{}-{}.tar.gz", self.name.replace('-', "_"), self.version)
    }

    /// The archive: from the cache when its checksum matches, else fetched by pip (whatever
    /// index this machine's pip is configured with) and checked.
    pub fn archive(&self) -> PathBuf {
        let cache = cache();
        for name in [
            self.file(),
            format!("{}-{}.tar.gz", self.name, self.version),
        ] {
            let kept = cache.join(&name);
            if kept.exists() && sha256(&kept) == self.sha256 {
                return kept;
            }
        }
        let fetch = tempfile::tempdir_in(&cache).unwrap();
        let out = Command::new("python3")
            .args(["-m", "pip", "download", "--quiet", "--no-deps"])
            .args(["--no-binary", ":all:", "--dest"])
            .arg(fetch.path())
            .arg(format!("{}=={}", self.name, self.version))
            .output()
            .expect("python3 -m pip runs");
        assert!(
            out.status.success(),
            "fetching {} {} failed: {}",
            self.name,
            self.version,
            String::from_utf8_lossy(&out.stderr)
        );
        let got = std::fs::read_dir(fetch.path())
            .unwrap()
            .flatten()
            .find(|e| e.file_name().to_string_lossy().ends_with(".tar.gz"))
            .unwrap_or_else(|| panic!("pip fetched no source archive of {}", self.name))
            .path();
        let digest = sha256(&got);
        assert_eq!(
            digest, self.sha256,
            "{} {}: the archive's checksum is not the pinned one",
            self.name, self.version
        );
        let kept = cache.join(got.file_name().unwrap());
        // A rename is atomic: a test fetching the same archive at once finds it whole.
        std::fs::rename(&got, &kept).unwrap();
        kept
    }

    /// The project as a git repository on `main` in a new directory: the archive unpacked,
    /// `drop` (files a release adds) removed, `add` written, committed and tagged `v<version>`.
    pub fn repository(&self, drop: &[&str], add: &[(&str, &str)]) -> (tempfile::TempDir, PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let out = Command::new("tar")
            .arg("xzf")
            .arg(self.archive())
            .arg("-C")
            .arg(dir.path())
            .output()
            .unwrap();
        assert!(out.status.success(), "tar: {out:?}");
        let unpacked = std::fs::read_dir(dir.path())
            .unwrap()
            .flatten()
            .next()
            .unwrap()
            .path();
        let repo = dir.path().join("proj");
        std::fs::rename(unpacked, &repo).unwrap();
        for f in drop {
            let p = repo.join(f);
            if p.is_dir() {
                std::fs::remove_dir_all(p).unwrap();
            } else {
                std::fs::remove_file(p).unwrap();
            }
        }
        for (name, text) in add {
            let p = repo.join(name);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, text).unwrap();
        }
        for args in [
            &["init", "-q", "-b", "main"][..],
            &["add", "-A"],
            &["commit", "-qm", "the release"],
            &["tag", &format!("v{}", self.version)],
        ] {
            git(&repo, args);
        }
        (dir, repo)
    }
}

fn git(dir: &Path, args: &[&str]) {
    let out = Command::new("git")
        .args(["-c", "user.name=Me", "-c", "user.email=me@example.com"])
        .args(args)
        .current_dir(dir)
        .output()
        .expect("git runs");
    assert!(out.status.success(), "git {args:?}: {out:?}");
}
