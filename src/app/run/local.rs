//! The local side of `vibeloop run`: the person's repository is read (its base branch copied
//! into a scratch bare repository), and an in-process [`Forge`] serves that copy on 127.0.0.1
//! with a throwaway App key, the goal filed as issue #1 labelled for the hive. The person's
//! repository is never written: no ref of theirs moves and nothing is pushed.

use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{Context as _, bail};
use rsa::pkcs1::{EncodeRsaPrivateKey as _, EncodeRsaPublicKey as _};
use secrecy::SecretString;

use crate::config::AppCredentials;
use crate::forge::{self, Forge};
use crate::ids::{CommitSha, InstallationId, RepoName};

/// The owner of the scratch copy on the forge.
pub const OWNER: &str = "local";
/// The forge's one installation.
pub const INSTALLATION: InstallationId = InstallationId(1);
const APP_ID: u64 = 1;

/// The repository to work on, as found.
#[derive(Debug, Clone)]
pub struct Source {
    /// Its directory (or the bare repository), absolute.
    pub path: PathBuf,
    pub base: String,
    pub base_sha: CommitSha,
    /// The working tree has uncommitted changes (they are not part of the run).
    pub dirty: bool,
    /// Its name on the forge.
    pub repo: RepoName,
}

/// Opens the repository at `dir` and finds the branch to start from: `base`, or the one
/// checked out. Errors say what to do.
pub fn inspect(dir: &Path, base: Option<&str>) -> anyhow::Result<Source> {
    let git = git2::Repository::open(dir).map_err(|e| {
        anyhow::anyhow!(
            "{} is not a git repository ({}); pass --repo with the repository to work on",
            dir.display(),
            e.message()
        )
    })?;
    let path = match git.workdir() {
        Some(w) => w.to_owned(),
        None => git.path().to_owned(),
    };
    let path = path.canonicalize().unwrap_or(path);
    let base = match base {
        Some(b) => b.trim().to_owned(),
        None => {
            let head = git
                .find_reference("HEAD")
                .context("the repository has no HEAD")?;
            match head.symbolic_target() {
                Some(t) => t.strip_prefix("refs/heads/").unwrap_or(t).to_owned(),
                None => bail!(
                    "{} has no branch checked out (detached HEAD); pass --base with the branch to start from",
                    path.display()
                ),
            }
        }
    };
    let reference = format!("refs/heads/{base}");
    if !git2::Reference::is_valid_name(&reference) {
        bail!("--base {base:?} is not a branch name");
    }
    let commit = git
        .find_reference(&reference)
        .and_then(|r| r.peel_to_commit())
        .map_err(|_| {
            anyhow::anyhow!(
                "branch {base} has no commit in {}; commit something first, or pass --base with a local branch",
                path.display()
            )
        })?;
    let base_sha = CommitSha::parse(&commit.id().to_string()).map_err(|e| anyhow::anyhow!(e))?;
    let dirty = !git.is_bare() && {
        let mut opts = git2::StatusOptions::new();
        opts.include_untracked(false).include_ignored(false);
        git.statuses(Some(&mut opts))
            .map(|s| !s.is_empty())
            .unwrap_or(false)
    };
    Ok(Source {
        repo: repo_name(&path),
        path,
        base,
        base_sha,
        dirty,
    })
}

/// `local/<directory name>`, with what GitHub would not accept in a name replaced by `-`.
fn repo_name(path: &Path) -> RepoName {
    let raw = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let raw = raw.strip_suffix(".git").unwrap_or(&raw);
    let mut name: String = raw
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.') {
                c
            } else {
                '-'
            }
        })
        .take(100)
        .collect();
    if name.trim_matches('.').is_empty() {
        name = "repo".into();
    }
    RepoName::parse(&format!("{OWNER}/{name}")).unwrap_or_else(|_| {
        RepoName::parse(&format!("{OWNER}/repo")).expect("a valid repository name")
    })
}

/// The forge of one run, serving the scratch copy.
pub struct Local {
    pub forge: Forge,
    /// The forge's REST API.
    pub api_url: url::Url,
    /// Where git reaches the forge's bare repositories (`file://…`).
    pub git_url: url::Url,
    pub repo: RepoName,
    /// The issue holding the goal.
    pub issue: u64,
    /// The App credentials the forge accepts.
    pub creds: AppCredentials,
    server: tokio::task::JoinHandle<()>,
}

impl Drop for Local {
    fn drop(&mut self) {
        self.server.abort();
    }
}

impl Local {
    /// The scratch copy's bare repository.
    pub fn bare_path(&self) -> PathBuf {
        self.forge.bare_path(self.repo.as_str())
    }
}

/// Copies `src`'s base branch under `<data_dir>/forge`, starts the forge on it and files the
/// goal as an issue labelled `label`.
pub async fn start(
    src: &Source,
    data_dir: &Path,
    title: &str,
    body: &str,
    label: &str,
) -> anyhow::Result<Local> {
    let git_root = data_dir.join("forge");
    let bare = forge::repo_dir(&git_root, src.repo.as_str());
    let (from, base, into) = (src.path.clone(), src.base.clone(), bare.clone());
    tokio::task::spawn_blocking(move || copy_branch(&from, &base, &into))
        .await
        .context("copying the repository stopped")??;
    let (private_pem, public_pem) = tokio::task::spawn_blocking(app_keys)
        .await
        .context("making the App key stopped")??;
    let forge = Forge::new(forge::Options {
        app_id: APP_ID,
        public_key_pem: public_pem,
        git_root: git_root.clone(),
        token_ttl: Duration::from_secs(3600),
    })?;
    forge.add_installation(INSTALLATION.0, OWNER);
    forge.register_repo(INSTALLATION.0, src.repo.as_str())?;
    let issue = forge
        .add_issue(src.repo.as_str(), title, body)
        .context("the scratch repository is not on the forge")?;
    if let Some(r) = forge.state().repos.get_mut(src.repo.as_str()) {
        r.add_label(issue, label);
    }
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .context("cannot listen on 127.0.0.1 for the local forge")?;
    let api_url = url::Url::parse(&format!("http://{}", listener.local_addr()?))?;
    let server = forge.serve(listener);
    let git_url = url::Url::from_directory_path(&git_root)
        .map_err(|()| anyhow::anyhow!("{} is not an absolute path", git_root.display()))?;
    Ok(Local {
        forge,
        api_url,
        git_url,
        repo: src.repo.clone(),
        issue,
        creds: AppCredentials {
            app_id: APP_ID,
            private_key_pem: SecretString::from(private_pem),
        },
        server,
    })
}

/// Makes the new bare repository `into` the scratch copy of `from`'s branch `base` and its
/// tags (a project's version may come from them), whose HEAD then names `base`. It borrows
/// `from`'s objects (git's alternates) instead of copying them: a repository with a long
/// history is copied in milliseconds, not packed object by object. Nothing is written to
/// `from`; what the run commits goes to the copy's own objects.
fn copy_branch(from: &Path, base: &str, into: &Path) -> anyhow::Result<()> {
    let src = git2::Repository::open(from)
        .with_context(|| format!("cannot open {} as a git repository", from.display()))?;
    let head = src
        .find_reference(&format!("refs/heads/{base}"))
        .and_then(|r| r.peel_to_commit())
        .with_context(|| format!("no branch {base} in {}", from.display()))?;
    let objects = src.commondir().join("objects");
    let objects = objects
        .canonicalize()
        .with_context(|| format!("cannot read {}", objects.display()))?;
    git2::Repository::init_bare(into)
        .with_context(|| format!("cannot create {}", into.display()))?;
    let alternates = into.join("objects/info/alternates");
    std::fs::write(&alternates, format!("{}\n", objects.display()))
        .with_context(|| format!("cannot write {}", alternates.display()))?;
    // Opened again, so that its object database reads the alternates.
    let git = git2::Repository::open_bare(into)?;
    git.reference(
        &format!("refs/heads/{base}"),
        head.id(),
        true,
        "vibeloop run",
    )?;
    for tag in src.references_glob("refs/tags/*")? {
        let tag = tag?;
        if let (Some(name), Some(target)) = (tag.name(), tag.target()) {
            git.reference(name, target, true, "vibeloop run")?;
        }
    }
    git.set_head(&format!("refs/heads/{base}"))?;
    Ok(())
}

/// A fresh RSA key pair for the run's App: `(private PEM, public PEM)`. It lives as long as
/// the run and signs only requests to the run's own forge.
fn app_keys() -> anyhow::Result<(String, String)> {
    let key = rsa::RsaPrivateKey::new(&mut rsa::rand_core::OsRng, 2048)?;
    let private = key.to_pkcs1_pem(rsa::pkcs8::LineEnding::LF)?.to_string();
    let public = key
        .to_public_key()
        .to_pkcs1_pem(rsa::pkcs8::LineEnding::LF)?;
    Ok((private, public))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_scratch_copy_borrows_the_objects_and_has_the_branch_and_tags() {
        let dir = tempfile::tempdir().unwrap();
        let src = git2::Repository::init(dir.path().join("src")).unwrap();
        let sig = git2::Signature::now("t", "t@example.com").unwrap();
        let tree = src.treebuilder(None).unwrap().write().unwrap();
        let tree = src.find_tree(tree).unwrap();
        let c = src
            .commit(Some("refs/heads/trunk"), &sig, &sig, "one", &tree, &[])
            .unwrap();
        let obj = src.find_object(c, None).unwrap();
        src.tag("v1.2.3", &obj, &sig, "release", false).unwrap();
        src.commit(Some("refs/heads/other"), &sig, &sig, "two", &tree, &[])
            .unwrap();
        let into = dir.path().join("copy.git");
        copy_branch(&dir.path().join("src"), "trunk", &into).unwrap();
        let copy = git2::Repository::open_bare(&into).unwrap();
        assert_eq!(copy.head().unwrap().name(), Some("refs/heads/trunk"));
        assert_eq!(copy.head().unwrap().target(), Some(c));
        let tag = copy.find_reference("refs/tags/v1.2.3").unwrap();
        assert_eq!(tag.peel_to_commit().unwrap().id(), c);
        assert!(copy.find_reference("refs/heads/other").is_err());
        // No object was copied: the copy reads the source's.
        let own: Vec<_> = std::fs::read_dir(into.join("objects"))
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .filter(|n| n != "info" && n != "pack")
            .collect();
        assert!(own.is_empty(), "{own:?}");
        let alternates = std::fs::read_to_string(into.join("objects/info/alternates")).unwrap();
        assert!(
            alternates.trim_end().ends_with("src/.git/objects"),
            "{alternates}"
        );
        // Writing to the copy leaves the source alone.
        copy.blob(b"the run's own").unwrap();
        let written = git2::Oid::hash_object(git2::ObjectType::Blob, b"the run's own").unwrap();
        assert!(src.find_blob(written).is_err());
    }

    #[test]
    fn repository_names_are_made_valid() {
        let name = |p: &str| repo_name(Path::new(p)).to_string();
        assert_eq!(name("/home/me/calc"), "local/calc");
        assert_eq!(name("/srv/git/widgets.git"), "local/widgets");
        assert_eq!(name("/tmp/my project (copy)"), "local/my-project--copy-");
        assert_eq!(name("/"), "local/repo");
        assert_eq!(name("/tmp/.."), "local/repo");
    }
}
