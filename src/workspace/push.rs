//! Pushes from a mirror to the forge: a bot branch replaced, a branch moved only under a
//! lease; the remote's refusal kept in its words.

use git2::{BranchType, PushOptions, Repository};
use secrecy::{ExposeSecret as _, SecretString};

use super::{Workspace, WorkspaceError, auth_header, callbacks};
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
        // What the remote says on the side (its hooks' and rules' words, `remote: …` to git).
        let said = std::cell::RefCell::new(Vec::<u8>::new());
        let pushed = {
            let mut cb = callbacks(Some(token));
            cb.sideband_progress(|text| {
                let mut said = said.borrow_mut();
                if said.len() < SAID_CAP {
                    said.extend_from_slice(text);
                }
                true
            });
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
            // The token goes to the forge only, never to another host a redirect names.
            opts.follow_redirects(git2::RemoteRedirect::None);
            let header = auth_header(token);
            opts.custom_headers(&[header.expose_secret()]);
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
            let said = String::from_utf8_lossy(&said.into_inner()).into_owned();
            return Err(match rules_broken(&said) {
                Some((code, rules)) => WorkspaceError::RuleViolation {
                    reference,
                    code,
                    rules,
                },
                None => WorkspaceError::PushRejected { reference, message },
            });
        }
        Ok(())
    }
}

/// How much of what the remote says beside a push is kept.
const SAID_CAP: usize = 16 << 10;

/// The rules GitHub says a refused push broke, from its words beside the push: the code
/// (`GH013`, `GH006`) and each rule's sentence ("Commits must have verified signatures.").
fn rules_broken(said: &str) -> Option<(String, Vec<String>)> {
    let lines: Vec<&str> = said
        .lines()
        .map(|l| l.trim_start_matches("remote:").trim())
        .collect();
    let at = lines
        .iter()
        .position(|l| l.contains("GH013:") || l.contains("GH006:"))?;
    let code = if lines[at].contains("GH013:") {
        "GH013"
    } else {
        "GH006"
    };
    let rules: Vec<String> = lines[at + 1..]
        .iter()
        .filter_map(|l| {
            let l = l.strip_prefix("error:").unwrap_or(l).trim();
            let rule = l.strip_prefix("- ").unwrap_or(l).trim();
            let noise = rule.is_empty()
                || rule.starts_with("Review all repository rules")
                || rule.starts_with("Found ")
                || rule.chars().all(|c| c.is_ascii_hexdigit());
            (!noise).then(|| rule.chars().take(200).collect())
        })
        .take(5)
        .collect();
    let rules = if rules.is_empty() {
        vec![lines[at].trim_start_matches("error:").trim().to_owned()]
    } else {
        rules
    };
    Some((code.to_owned(), rules))
}

#[cfg(test)]
mod tests {
    use super::rules_broken;

    #[test]
    fn githubs_rule_violations_are_read_from_its_words() {
        // As git shows a push a ruleset refused (vercel/sandbox#169, two rules from
        // anchorageoss/visualsign-parser#46).
        let said = "error: GH013: Repository rule violations found for refs/heads/main.\n\
            Review all repository rules at https://github.com/o/r/rules?ref=refs%2Fheads%2Fmain\n\n\
            - Changes must be made through a pull request.\n\n\
            - Commits must have verified signatures.\n  Found 1 violation:\n\n  \
            5cbd07211cca9d7c959f48cd0b10e6b6366c619e\n\n";
        let (code, rules) = rules_broken(said).unwrap();
        assert_eq!(code, "GH013");
        assert_eq!(
            rules,
            [
                "Changes must be made through a pull request.",
                "Commits must have verified signatures."
            ]
        );
        let said = "error: GH006: Protected branch update failed for refs/heads/main.\n\
            error: Cannot force-push to this protected branch\n";
        let (code, rules) = rules_broken(said).unwrap();
        assert_eq!(code, "GH006");
        assert_eq!(rules, ["Cannot force-push to this protected branch"]);
        assert_eq!(rules_broken("Counting objects: 3, done.\n"), None);
    }
}
