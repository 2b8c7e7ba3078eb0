//! What people do on GitHub behind the bot's back: close an issue, merge or close a pull
//! request by hand — with the webhook GitHub sends, or without it (a delivery the bot missed).

use super::{FakeGitHub, gitops};
use crate::support::payloads::{self, Sent};

impl FakeGitHub {
    /// Closes issue `n`; sends `issues.closed` when `notify`.
    pub async fn close_issue(&self, repo: &str, n: u64, notify: bool) -> Option<Sent> {
        let (installation, labels) = {
            let mut st = self.state();
            let r = st.repos.get_mut(repo).expect("repo added");
            r.issues.get_mut(&n).expect("issue exists").closed = true;
            (
                r.installation,
                r.labels.get(&n).cloned().unwrap_or_default(),
            )
        };
        if !notify {
            return None;
        }
        let body = payloads::issues_closed(repo, installation, n, &labels);
        Some(self.send_webhook("issues", &body).await)
    }

    /// Takes `label` off issue `n`; sends `issues.unlabeled` when `notify`.
    pub async fn unlabel_issue(
        &self,
        repo: &str,
        n: u64,
        label: &str,
        notify: bool,
    ) -> Option<Sent> {
        let installation = {
            let mut st = self.state();
            let r = st.repos.get_mut(repo).expect("repo added");
            r.labels.entry(n).or_default().retain(|l| l != label);
            r.installation
        };
        if !notify {
            return None;
        }
        let body = payloads::issues_unlabeled(repo, installation, n, label);
        Some(self.send_webhook("issues", &body).await)
    }

    /// A maintainer merges pull request `pr` by hand with GitHub's "Create a merge commit"
    /// (protection aside, as an admin may); `pull_request.closed` is sent when `notify`.
    /// Returns the merge commit.
    pub async fn merge_by_hand(&self, repo: &str, pr: u64, notify: bool) -> String {
        self.merge_by_hand_as(repo, pr, "maintainer", notify).await
    }

    /// [`Self::merge_by_hand`] by `user`.
    pub async fn merge_by_hand_as(&self, repo: &str, pr: u64, user: &str, notify: bool) -> String {
        let (installation, sha) = {
            let bare = self.bare_path(repo);
            let mut st = self.state();
            let git = gitops::open(&bare).expect("bare repository");
            let r = st.repos.get_mut(repo).expect("repo added");
            vibeloop::forge::rest::refresh_heads(r, &bare);
            let p = r
                .pulls
                .iter()
                .find(|p| p.number == pr)
                .expect("pull request")
                .clone();
            let head = git2::Oid::from_str(&p.head_sha).unwrap();
            let base = gitops::resolve_commit(&git, &p.base).unwrap();
            let who =
                git2::Signature::now(user, &format!("{user}@users.noreply.github.com")).unwrap();
            let web = git2::Signature::now("GitHub", "noreply@github.com").unwrap();
            let message = format!("Merge pull request #{pr} from {}\n\n{}", p.head, p.title);
            let merged = gitops::land(
                &git,
                base,
                head,
                gitops::LandMethod::Merge,
                &message,
                &who,
                &web,
            )
            .unwrap()
            .expect("the pull request merges cleanly");
            gitops::set_ref(
                &git,
                &format!("refs/heads/{}", p.base),
                merged,
                "merged by hand",
            )
            .unwrap();
            vibeloop::forge::rest::git::close_as_merged(r, pr, &merged.to_string(), Some(user));
            (r.installation, merged.to_string())
        };
        if notify {
            let body = payloads::pull_request_closed(repo, installation, pr, Some((&sha, user)));
            self.send_webhook("pull_request", &body).await;
        }
        sha
    }

    /// Closes pull request `pr` unmerged; `pull_request.closed` is sent when `notify`.
    pub async fn close_pull(&self, repo: &str, pr: u64, notify: bool) -> Option<Sent> {
        let installation = {
            let mut st = self.state();
            let r = st.repos.get_mut(repo).expect("repo added");
            let p = r
                .pulls
                .iter_mut()
                .find(|p| p.number == pr)
                .expect("pull request");
            p.state = "closed".into();
            r.installation
        };
        if !notify {
            return None;
        }
        let body = payloads::pull_request_closed(repo, installation, pr, None);
        Some(self.send_webhook("pull_request", &body).await)
    }
}
