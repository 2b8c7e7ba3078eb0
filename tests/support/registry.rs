//! Real projects as test fixtures: source distributions from the Python package index and
//! crates from the crate registry, fetched at test time (never copied into this repository) by
//! this machine's own pip and cargo, pinned by version and SHA-256, kept in the test target's
//! scratch directory between runs, and unpacked into a git repository as a maintainer's
//! checkout would look (files only a release has, like `PKG-INFO`, a generated version file or
//! a crate's `Cargo.toml.orig`, left out).

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

/// Asserts that the fetch of `name` `version` succeeded, with its error output if not.
fn fetched(out: &std::process::Output, name: &str, version: &str) {
    assert!(
        out.status.success(),
        "fetching {name} {version} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
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
        fetched(&out, self.name, self.version);
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
        checkout(&self.archive(), self.version, drop, add)
    }
}

/// A pinned release of a crate on the crate registry.
pub struct Crate {
    pub name: &'static str,
    pub version: &'static str,
    /// The `.crate` file's SHA-256, as the registry's index lists it.
    pub sha256: &'static str,
}

impl Crate {
    /// The `.crate` file: from the cache when its checksum matches, else fetched by cargo
    /// (through whatever registry or mirror this machine's cargo is configured with: a
    /// throwaway package depending on exactly this version) and checked.
    pub fn archive(&self) -> PathBuf {
        let file = format!("{}-{}.crate", self.name, self.version);
        let kept = cache().join(&file);
        if kept.exists() && sha256(&kept) == self.sha256 {
            return kept;
        }
        let fetch = tempfile::tempdir_in(cache()).unwrap();
        std::fs::create_dir_all(fetch.path().join("src")).unwrap();
        std::fs::write(fetch.path().join("src/lib.rs"), "").unwrap();
        std::fs::write(
            fetch.path().join("Cargo.toml"),
            format!(
                "[package]\nname = \"fetch\"\nversion = \"0.0.0\"\nedition = \"2021\"\n\n[workspace]\n\n[dependencies]\n{} = \"={}\"\n",
                self.name, self.version
            ),
        )
        .unwrap();
        let out = Command::new("cargo")
            .args(["fetch", "--quiet"])
            .current_dir(fetch.path())
            .output()
            .expect("cargo runs");
        fetched(&out, self.name, self.version);
        let home = std::env::var_os("CARGO_HOME")
            .map(PathBuf::from)
            .unwrap_or_else(|| PathBuf::from(std::env::var_os("HOME").unwrap()).join(".cargo"));
        let got = std::fs::read_dir(home.join("registry/cache"))
            .unwrap()
            .flatten()
            .map(|registry| registry.path().join(&file))
            .find(|p| p.exists() && sha256(p) == self.sha256)
            .unwrap_or_else(|| {
                panic!("{file}: cargo fetched it, but no copy in its cache has the pinned checksum")
            });
        let partial = fetch.path().join(&file);
        std::fs::copy(&got, &partial).unwrap();
        // A rename is atomic: a test fetching the same archive at once finds it whole.
        std::fs::rename(&partial, &kept).unwrap();
        kept
    }

    /// The crate as a git repository on `main` in a new directory, as [`Sdist::repository`]
    /// makes one; `Cargo.toml.orig` and `.cargo_vcs_info.json` (what `cargo package` adds) are
    /// always left out.
    pub fn repository(&self, drop: &[&str], add: &[(&str, &str)]) -> (tempfile::TempDir, PathBuf) {
        checkout(&self.archive(), self.version, &self.packaged(drop), add)
    }

    /// The crate unpacked into `<dir>/proj`, without what `cargo package` adds and `drop`.
    pub fn unpacked(&self, drop: &[&str]) -> (tempfile::TempDir, PathBuf) {
        unpack(&self.archive(), &self.packaged(drop))
    }

    fn packaged<'a>(&self, drop: &[&'a str]) -> Vec<&'a str> {
        let mut all = vec!["Cargo.toml.orig", ".cargo_vcs_info.json"];
        all.extend(drop);
        all
    }
}

/// `archive` (a `.tar.gz` holding one directory) unpacked into `<dir>/proj` without `drop`.
pub fn unpack(archive: &Path, drop: &[&str]) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    // Owned by whoever runs the tests, not by the archive's uid (git refuses a repository
    // owned by someone else).
    let out = Command::new("tar")
        .args(["--no-same-owner", "-xzf"])
        .arg(archive)
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
        } else if p.exists() {
            std::fs::remove_file(p).unwrap();
        }
    }
    (dir, repo)
}

/// Copies the directory `from` (files and directories, recursively) to `to`.
pub fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap().flatten() {
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), target).unwrap();
        }
    }
}

/// Writes `text` to `name` under `repo`, making its directory.
pub fn write(repo: &Path, name: &str, text: &str) {
    let p = repo.join(name);
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(p, text).unwrap();
}

/// Makes `repo` a git repository on `main` with everything committed and tagged `v<version>`.
pub fn commit_and_tag(repo: &Path, version: &str) {
    for args in [
        &["init", "-q", "-b", "main"][..],
        &["add", "-A"],
        &["commit", "-qm", "the release"],
        &["tag", &format!("v{version}")],
    ] {
        git(repo, args);
    }
}

fn checkout(
    archive: &Path,
    version: &str,
    drop: &[&str],
    add: &[(&str, &str)],
) -> (tempfile::TempDir, PathBuf) {
    let (dir, repo) = unpack(archive, drop);
    for (name, text) in add {
        write(&repo, name, text);
    }
    commit_and_tag(&repo, version);
    (dir, repo)
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

/// A git history made of consecutive releases, oldest first: the first committed on `main` and
/// tagged, then each later one replacing the whole tree in a commit of its own, its message
/// the release's section of `CHANGELOG.md` when there is one (what changed, as a problem
/// statement says it), tagged `v<version>`. `drop` is left out of every release.
pub fn history(releases: &[Sdist], drop: &[&str]) -> (tempfile::TempDir, PathBuf) {
    let (first, rest) = releases.split_first().expect("a release");
    let (dir, repo) = unpack(&first.archive(), drop);
    commit_and_tag(&repo, first.version);
    for release in rest {
        for entry in std::fs::read_dir(&repo).unwrap().flatten() {
            if entry.file_name() == ".git" {
                continue;
            }
            let p = entry.path();
            if p.is_dir() {
                std::fs::remove_dir_all(p).unwrap();
            } else {
                std::fs::remove_file(p).unwrap();
            }
        }
        let (_unpacked_in, unpacked) = unpack(&release.archive(), drop);
        copy_dir(&unpacked, &repo);
        let changelog = std::fs::read_to_string(repo.join("CHANGELOG.md")).unwrap_or_default();
        let message = release_notes(&changelog, release.version)
            .unwrap_or_else(|| format!("{} {}", release.name, release.version));
        git(&repo, &["add", "-A"]);
        git(&repo, &["commit", "-qm", &message]);
        git(&repo, &["tag", &format!("v{}", release.version)]);
    }
    (dir, repo)
}

/// The section of a changelog under the heading that names `version` (`## 26.1.0`), up to the
/// next heading of that level.
fn release_notes(changelog: &str, version: &str) -> Option<String> {
    let mut lines = changelog.lines().skip_while(|l| {
        !(l.starts_with("## ") && l.trim_start_matches('#').trim().starts_with(version))
    });
    let heading = lines.next()?;
    let body: Vec<&str> = lines.take_while(|l| !l.starts_with("## ")).collect();
    Some(format!(
        "{}\n\n{}",
        heading.trim_start_matches('#').trim(),
        body.join("\n").trim()
    ))
}

/// The host of the Python package index pip uses by default, read from pip itself (no
/// registry's name is written in this repository): a host of the package network to probe.
pub fn pypi_host() -> String {
    let out = Command::new("python3")
        .args([
            "-c",
            "from pip._internal.models.index import PyPI; print(PyPI.netloc)",
        ])
        .output()
        .expect("python3 runs");
    let host = String::from_utf8_lossy(&out.stdout).trim().to_owned();
    assert!(!host.is_empty(), "pip names no registry: {out:?}");
    host
}
