//! A CI beside the bot, as branch protection sees one: another App's check run completing on a
//! commit, or a commit status set on it — each stored and delivered as the webhook GitHub sends.

use super::{CheckRun, CommitStatus, FakeGitHub};
use crate::support::payloads::{self, Sent};

impl FakeGitHub {
    /// Branches of `repo` whose head is `sha`.
    fn branches_at(&self, repo: &str, sha: &str) -> Vec<String> {
        let git = super::gitops::open(&self.bare_path(repo)).expect("bare repository");
        let Ok(refs) = git.references_glob("refs/heads/*") else {
            return Vec::new();
        };
        refs.filter_map(Result::ok)
            .filter(|r| r.peel_to_commit().is_ok_and(|c| c.id().to_string() == sha))
            .filter_map(|r| r.shorthand().map(str::to_owned))
            .collect()
    }

    /// Another App's check run `name` completes with `conclusion` on `sha`:
    /// `check_run.completed` delivered.
    pub async fn complete_check(
        &self,
        repo: &str,
        sha: &str,
        name: &str,
        conclusion: &str,
    ) -> Sent {
        let branch = self
            .branches_at(repo, sha)
            .into_iter()
            .next()
            .unwrap_or_default();
        let installation = {
            let mut st = self.state();
            let id = st.next_id();
            let r = st.repos.get_mut(repo).expect("repo added");
            r.check_runs.push(CheckRun {
                id,
                name: name.into(),
                head_sha: sha.into(),
                external_id: None,
                status: "completed".into(),
                conclusion: Some(conclusion.into()),
                title: None,
                summary: None,
                started_at: None,
                completed_at: Some(chrono::Utc::now().to_rfc3339()),
                statuses: vec!["completed".into()],
                annotations: vec![],
                actions: vec![],
            });
            r.installation
        };
        let body =
            payloads::check_run_completed(repo, installation, name, sha, &branch, conclusion);
        self.send_webhook("check_run", &body).await
    }

    /// Another CI sets commit status `context` = `state` on `sha`: `status` delivered.
    pub async fn post_status(&self, repo: &str, sha: &str, context: &str, state: &str) -> Sent {
        let installation = {
            let mut st = self.state();
            let r = st.repos.get_mut(repo).expect("repo added");
            r.statuses.push(CommitStatus {
                sha: sha.into(),
                context: context.into(),
                state: state.into(),
                description: None,
            });
            r.installation
        };
        let branches = self.branches_at(repo, sha);
        let body = payloads::status(repo, installation, sha, context, state, &branches);
        self.send_webhook("status", &body).await
    }
}
