//! Pushes from a mirror to the forge: a bot branch replaced, a branch moved only under a
//! lease, a fast-forward of a branch people own; the remote's refusal kept in its words.

use git2::{BranchType, PushOptions, Repository};
use secrecy::SecretString;

use super::{Workspace, WorkspaceError, callbacks};
use crate::ids::RepoName;

impl Workspace {
    /// Pushes `branch` to the remote, replacing what is there (the bot owns its branches).
    pub fn push(
        &self,
        repo: &RepoName,
        branch: &str,
        token: &SecretString,
    ) -> Result<(), WorkspaceError> {
        let git = Repository::open_bare(self.mirror_path(repo))?;
        let local = git.find_branch(branch, BranchType::Local)?;
        let refname = local.get().name().unwrap_or_default().to_owned();
        self.push_refspec(repo, &format!("+{refname}:{refname}"), token)
    }

    /// Moves the remote's `branch` to the mirror's branch of that name only if the remote is
    /// still at `expected` (`None`: the branch must not exist there): git's force-with-lease,
    /// checked against what the remote advertises during the push itself. Anything else is
    /// [`WorkspaceError::LeaseBroken`] and the remote is left as it is.
    pub fn push_with_lease(
        &self,
        repo: &RepoName,
        branch: &str,
        expected: Option<git2::Oid>,
        token: &SecretString,
    ) -> Result<(), WorkspaceError> {
        let refname = format!("refs/heads/{branch}");
        self.mirror_lock(repo).hold(|| {
            self.push_locked(
                repo,
                &format!("+{refname}:{refname}"),
                Some((&refname, expected)),
                token,
            )
        })
    }

    /// Pushes `commit` to branch `branch` of the remote as a fast-forward only (the remote
    /// refuses anything else, as it should for a branch people own).
    pub fn push_fast_forward(
        &self,
        repo: &RepoName,
        commit: git2::Oid,
        branch: &str,
        token: &SecretString,
    ) -> Result<(), WorkspaceError> {
        let git = Repository::open_bare(self.mirror_path(repo))?;
        let scratch = format!("refs/vibeloop/push-{commit}");
        git.reference(&scratch, commit, true, "push")?;
        let result = self.push_refspec(repo, &format!("{scratch}:refs/heads/{branch}"), token);
        if let Ok(mut r) = git.find_reference(&scratch) {
            let _ = r.delete();
        }
        result
    }

    fn push_refspec(
        &self,
        repo: &RepoName,
        refspec: &str,
        token: &SecretString,
    ) -> Result<(), WorkspaceError> {
        self.mirror_lock(repo)
            .hold(|| self.push_locked(repo, refspec, None, token))
    }

    /// One push; with `lease` = `(remote ref, expected)`, refused unless the remote ref is at
    /// `expected` as the remote advertises it.
    fn push_locked(
        &self,
        repo: &RepoName,
        refspec: &str,
        lease: Option<(&str, Option<git2::Oid>)>,
        token: &SecretString,
    ) -> Result<(), WorkspaceError> {
        let git = Repository::open_bare(self.mirror_path(repo))?;
        let mut remote = git.find_remote("origin")?;
        let rejected = std::cell::RefCell::new(None);
        let broken = std::cell::RefCell::new(None);
        let pushed = {
            let mut cb = callbacks(Some(token));
            cb.push_update_reference(|reference, status| {
                if let Some(message) = status {
                    *rejected.borrow_mut() = Some((reference.to_owned(), message.to_owned()));
                }
                Ok(())
            });
            if let Some((name, expected)) = lease {
                let broken = &broken;
                cb.push_negotiation(move |updates| {
                    let want = expected.unwrap_or_else(git2::Oid::zero);
                    for u in updates.iter().filter(|u| u.dst_refname() == Some(name)) {
                        if u.src() != want {
                            *broken.borrow_mut() = Some(u.src());
                            return Err(git2::Error::from_str("the lease is broken"));
                        }
                    }
                    Ok(())
                });
            }
            let mut opts = PushOptions::new();
            opts.remote_callbacks(cb);
            remote.push(&[refspec], Some(&mut opts))
        };
        if let (Some(found), Some((name, expected))) = (broken.into_inner(), lease) {
            let sha = |o: git2::Oid| {
                if o.is_zero() {
                    "nothing".to_owned()
                } else {
                    o.to_string()
                }
            };
            return Err(WorkspaceError::LeaseBroken {
                branch: name.trim_start_matches("refs/heads/").to_owned(),
                expected: sha(expected.unwrap_or_else(git2::Oid::zero)),
                found: sha(found),
            });
        }
        pushed?;
        if let Some((reference, message)) = rejected.into_inner() {
            return Err(WorkspaceError::PushRejected { reference, message });
        }
        Ok(())
    }
}
