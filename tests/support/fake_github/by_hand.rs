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

    /// A maintainer merges pull request `pr` by hand (its base fast-forwarded to its head, as
    /// GitHub's "Rebase and merge" of an up-to-date branch does); `pull_request.closed` is sent
    /// when `notify`.
    pub async fn merge_by_hand(&self, repo: &str, pr: u64, notify: bool) -> Option<Sent> {
        let installation = {
            let mut st = self.state();
            let git = gitops::open(&self.bare_path(repo)).expect("bare repository");
            let r = st.repos.get_mut(repo).expect("repo added");
            let p = r
                .pulls
                .iter()
                .find(|p| p.number == pr)
                .expect("pull request")
                .clone();
            let head = git2::Oid::from_str(&p.head_sha).unwrap();
            gitops::set_ref(
                &git,
                &format!("refs/heads/{}", p.base),
                head,
                "merged by hand",
            )
            .unwrap();
            vibeloop::forge::rest::git::merged_by_push(r, &git, &p.base, head);
            r.installation
        };
        if !notify {
            return None;
        }
        let body = payloads::pull_request_closed(repo, installation, pr, true);
        Some(self.send_webhook("pull_request", &body).await)
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
        let body = payloads::pull_request_closed(repo, installation, pr, false);
        Some(self.send_webhook("pull_request", &body).await)
    }
}
