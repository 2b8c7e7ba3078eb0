//! The tests' side of the fake: people (users, permissions, comments, reviews, buttons pressed),
//! branch protection, and repository state (a maintainer's pushes, tags). The `async` ones also
//! deliver the signed webhook GitHub would send.

use serde_json::json;
use vibeloop::forge::json::{association, user_json};

use super::{Comment, CommitStatus, FakeGitHub, Protection, Pull, Review, ReviewComment, gitops};
use crate::support::payloads::{self, Sent};

/// Roles GitHub knows (`maintain` and `triage` map to `write` and `read` as base permission).
const ROLES: &[&str] = &["admin", "maintain", "write", "triage", "read", "none"];

impl FakeGitHub {
    /// `login` exists on GitHub (holding no role on any repository unless given one).
    pub fn add_user(&self, login: &str) {
        self.state().users.insert(login.to_owned());
    }

    /// Gives `user` role `role` (`admin`, `maintain`, `write`, `triage`, `read`, `none`) on
    /// `repo`, as `GET …/collaborators/{user}/permission` then reports it.
    pub fn set_permission(&self, repo: &str, user: &str, role: &str) {
        assert!(ROLES.contains(&role), "unknown role {role}");
        let mut st = self.state();
        st.users.insert(user.to_owned());
        let r = st.repos.get_mut(repo).expect("repo added");
        r.permissions.insert(user.to_owned(), role.to_owned());
    }

    /// The labels on issue or pull request `issue`, in the order they were added.
    pub fn labels(&self, repo: &str, issue: u64) -> Vec<String> {
        self.state().repos[repo]
            .labels
            .get(&issue)
            .cloned()
            .unwrap_or_default()
    }

    /// Stores a comment by `user` on issue (or pull request) `issue`; no webhook.
    pub fn user_comment(&self, repo: &str, issue: u64, user: &str, body: &str) -> u64 {
        let mut st = self.state();
        st.users.insert(user.to_owned());
        let id = st.next_id();
        st.repos
            .get_mut(repo)
            .expect("repo added")
            .comments
            .push(Comment {
                id,
                issue,
                body: body.into(),
                user: user.into(),
            });
        id
    }

    /// Replaces the body of comment `id` (in any repository); returns the old body.
    pub fn edit_user_comment(&self, id: u64, body: &str) -> String {
        let mut st = self.state();
        let c = st
            .repos
            .values_mut()
            .flat_map(|r| r.comments.iter_mut())
            .find(|c| c.id == id)
            .unwrap_or_else(|| panic!("no comment {id}"));
        std::mem::replace(&mut c.body, body.into())
    }

    /// The reactions (`+1`, `eyes`, …) on issue comment `comment_id`.
    pub fn comment_reactions(&self, repo: &str, comment_id: u64) -> Vec<String> {
        on(&self.state().repos[repo].comment_reactions, comment_id)
    }

    pub fn pull(&self, repo: &str, number: u64) -> Option<Pull> {
        self.pulls(repo).into_iter().find(|p| p.number == number)
    }

    /// A pull request opened by `user` (not the bot) from `head` into `base`.
    pub fn open_pull(&self, repo: &str, user: &str, head: &str, base: &str, title: &str) -> u64 {
        let head_sha = self.branch_sha(repo, head).expect("head branch exists");
        let mut st = self.state();
        st.users.insert(user.to_owned());
        let r = st.repos.get_mut(repo).expect("repo added");
        let number = r.next_number();
        r.pulls.push(Pull {
            merged: false,
            merge_commit_sha: None,
            merged_by: None,
            number,
            title: title.into(),
            body: String::new(),
            head: head.into(),
            head_sha,
            base: base.into(),
            state: "open".into(),
            draft: false,
            user: user.into(),
        });
        number
    }

    /// Reviews of pull request `pr`, oldest first.
    pub fn reviews(&self, repo: &str, pr: u64) -> Vec<Review> {
        let st = self.state();
        st.repos[repo]
            .reviews
            .iter()
            .filter(|r| r.pull == pr)
            .cloned()
            .collect()
    }

    /// Review comments on pull request `pr` (of reviews and single comments alike).
    pub fn review_comments(&self, repo: &str, pr: u64) -> Vec<ReviewComment> {
        let st = self.state();
        st.repos[repo]
            .review_comments
            .iter()
            .filter(|c| c.pull == pr)
            .cloned()
            .collect()
    }

    /// Protects `branch` with `rule` (replacing any rule it had).
    pub fn protect(&self, repo: &str, branch: &str, rule: Protection) {
        self.extras()
            .rules
            .branches
            .insert((repo.to_owned(), branch.to_owned()), rule);
    }

    /// Adds an active ruleset to `repo`.
    pub fn add_ruleset(&self, repo: &str, set: super::Ruleset) {
        self.extras().rules.rulesets.push((repo.to_owned(), set));
    }

    pub fn unprotect(&self, repo: &str, branch: &str) {
        self.extras()
            .rules
            .branches
            .remove(&(repo.to_owned(), branch.to_owned()));
    }

    /// The repository's settings turn merge method `method` off (`merge`, `squash`, `rebase`).
    pub fn forbid_merge_method(&self, repo: &str, method: &str) {
        self.extras()
            .rules
            .forbidden_methods
            .entry(repo.to_owned())
            .or_default()
            .insert(method.to_owned());
    }

    /// The repository allows every merge method again.
    pub fn allow_merge_methods(&self, repo: &str) {
        self.extras().rules.forbidden_methods.remove(repo);
    }

    /// A commit status `context` = `state` (`success`, `failure`, `pending`, `error`) on `sha`,
    /// as another CI would set it.
    pub fn set_status(&self, repo: &str, sha: &str, context: &str, state: &str) {
        let mut st = self.state();
        st.repos
            .get_mut(repo)
            .expect("repo added")
            .statuses
            .push(CommitStatus {
                sha: sha.into(),
                context: context.into(),
                state: state.into(),
                description: None,
                target_url: None,
            });
    }

    /// A maintainer commits `files` (added or replaced) on `branch` of the real bare repository
    /// and pushes (no webhook); a new branch starts at `main`. Returns the new commit's SHA.
    pub fn push_commit(
        &self,
        repo: &str,
        branch: &str,
        files: &[(&str, &str)],
        message: &str,
    ) -> String {
        let git = gitops::open(&self.bare_path(repo)).expect("bare repository");
        let refname = format!("refs/heads/{branch}");
        if git.find_reference(&refname).is_err() {
            let main = gitops::resolve_commit(&git, "main").expect("main exists");
            gitops::set_ref(&git, &refname, main, "branch").unwrap();
        }
        crate::support::repos::commit_files(&git, branch, files, message).to_string()
    }

    /// `user` pushes a commit of `files` to `branch` ([`Self::push_commit`]), and the `push`
    /// GitHub sends is delivered. Returns the commit's SHA.
    pub async fn push_as(
        &self,
        repo: &str,
        branch: &str,
        files: &[(&str, &str)],
        message: &str,
        user: &str,
    ) -> (String, Sent) {
        let before = self
            .branch_sha(repo, branch)
            .unwrap_or_else(|| "0".repeat(40));
        let after = self.push_commit(repo, branch, files, message);
        let payload = payloads::push(
            repo,
            self.installation_of(repo),
            branch,
            &before,
            &after,
            user,
        );
        let sent = self.send_webhook("push", &payload).await;
        (after, sent)
    }

    /// `user` comments `body` on line `line` of `path` in pull request `pr`'s head, in the
    /// thread of `reply_to` or starting one: stored as GitHub stores it (a comment of its own
    /// one-comment review), and `pull_request_review_comment.created` delivered. Returns the
    /// comment's id.
    #[allow(clippy::too_many_arguments)]
    pub async fn comment_on_line(
        &self,
        repo: &str,
        pr: u64,
        user: &str,
        path: &str,
        line: u64,
        body: &str,
        reply_to: Option<u64>,
    ) -> (u64, Sent) {
        let p = self.pull(repo, pr).expect("pull request");
        let id = {
            let mut st = self.state();
            st.users.insert(user.to_owned());
            let id = st.next_id();
            st.repos
                .get_mut(repo)
                .unwrap()
                .review_comments
                .push(ReviewComment {
                    id,
                    pull: pr,
                    review_id: id,
                    user: user.into(),
                    path: path.into(),
                    line: Some(line),
                    start_line: None,
                    side: "RIGHT".into(),
                    body: body.into(),
                    commit_id: p.head_sha.clone(),
                    in_reply_to: reply_to,
                });
            id
        };
        let payload = payloads::review_comment_created(
            repo,
            self.installation_of(repo),
            pr,
            (&p.head, &p.head_sha),
            (id, reply_to),
            user,
            (path, line),
            body,
        );
        (
            id,
            self.send_webhook("pull_request_review_comment", &payload)
                .await,
        )
    }

    /// The reactions on review comment `comment_id`.
    pub fn review_comment_reactions(&self, repo: &str, comment_id: u64) -> Vec<String> {
        on(
            &self.state().repos[repo].review_comment_reactions,
            comment_id,
        )
    }

    /// `(tag, commit SHA)` of every tag in the bare repository (annotated tags peeled).
    pub fn tags(&self, repo: &str) -> Vec<(String, String)> {
        gitops::open(&self.bare_path(repo))
            .map(|g| gitops::tags(&g))
            .unwrap_or_default()
    }

    fn installation_of(&self, repo: &str) -> u64 {
        self.state().repos[repo].installation
    }

    /// Title, body, labels, pull-request-ness and `user`'s association, of issue `n`.
    fn issue_facts(
        &self,
        repo: &str,
        n: u64,
        user: &str,
    ) -> (String, String, Vec<String>, bool, String) {
        let st = self.state();
        let r = &st.repos[repo];
        let labels = r.labels.get(&n).cloned().unwrap_or_default();
        let assoc = association(r, repo, user).to_owned();
        if let Some(i) = r.issues.get(&n) {
            (i.title.clone(), i.body.clone(), labels, false, assoc)
        } else {
            let p = r
                .pulls
                .iter()
                .find(|p| p.number == n)
                .expect("issue or pull request");
            (p.title.clone(), p.body.clone(), labels, true, assoc)
        }
    }

    /// `user` comments `body` on issue (or pull request) `issue`: stored, and
    /// `issue_comment.created` delivered. Returns the comment id.
    pub async fn comment_on(&self, repo: &str, issue: u64, user: &str, body: &str) -> (u64, Sent) {
        let id = self.user_comment(repo, issue, user, body);
        let (title, text, labels, is_pr, assoc) = self.issue_facts(repo, issue, user);
        let payload = payloads::issue_comment_created(
            repo,
            self.installation_of(repo),
            issue,
            user,
            id,
            body,
            is_pr,
        );
        let payload = payloads::edit(&payload, |v| {
            payloads::describe_issue(v, repo, &title, &text, &labels);
            v["comment"]["author_association"] = json!(assoc);
        });
        (id, self.send_webhook("issue_comment", &payload).await)
    }

    /// Comment `id`'s author edits it to `body`: stored, and `issue_comment.edited` delivered.
    pub async fn edit_comment(&self, repo: &str, id: u64, body: &str) -> Sent {
        let old = self.edit_user_comment(id, body);
        let c = self.state().repos[repo]
            .comments
            .iter()
            .find(|c| c.id == id)
            .cloned()
            .expect("comment of this repo");
        let (title, text, labels, is_pr, assoc) = self.issue_facts(repo, c.issue, &c.user);
        let payload = payloads::issue_comment_edited(
            repo,
            self.installation_of(repo),
            c.issue,
            &c.user,
            id,
            body,
            is_pr,
            &old,
        );
        let payload = payloads::edit(&payload, |v| {
            payloads::describe_issue(v, repo, &title, &text, &labels);
            v["comment"]["author_association"] = json!(assoc);
        });
        self.send_webhook("issue_comment", &payload).await
    }

    /// A maintainer edits issue `n`'s title and body: stored, and `issues.edited` delivered with
    /// `changes` holding what changed.
    pub async fn edit_issue(&self, repo: &str, n: u64, title: &str, body: &str) -> Sent {
        super::ensure_role(&mut self.state(), repo, super::LABELLER, "maintain");
        self.edit_issue_as(repo, n, title, body, super::LABELLER)
            .await
    }

    /// [`Self::edit_issue`] by `sender`, whatever their permission.
    pub async fn edit_issue_as(
        &self,
        repo: &str,
        n: u64,
        title: &str,
        body: &str,
        sender: &str,
    ) -> Sent {
        self.state().users.insert(sender.to_owned());
        let old = {
            let mut st = self.state();
            let i = st
                .repos
                .get_mut(repo)
                .and_then(|r| r.issues.get_mut(&n))
                .expect("issue");
            let old = (i.title.clone(), i.body.clone());
            i.title = title.into();
            i.body = body.into();
            old
        };
        let labels = self.labels(repo, n);
        let payload = payloads::issues_edited(repo, self.installation_of(repo), n, title, body);
        let payload = payloads::edit(&payload, |v| {
            payloads::describe_issue(v, repo, title, body, &labels);
            if old.0 != title {
                v["changes"]["title"] = json!({ "from": old.0 });
            }
            if old.1 != body {
                v["changes"]["body"] = json!({ "from": old.1 });
            }
            v["sender"]["login"] = json!(sender);
        });
        self.send_webhook("issues", &payload).await
    }

    /// `user` submits a review of pull request `pr` (`state`: `approved`, `commented`,
    /// `changes_requested`): stored, and `pull_request_review.submitted` delivered.
    pub async fn review_pull(
        &self,
        repo: &str,
        pr: u64,
        user: &str,
        state: &str,
        body: &str,
    ) -> (u64, Sent) {
        self.review_pull_on_lines(repo, pr, user, state, body, &[])
            .await
    }

    /// [`Self::review_pull`] with comments on lines of the head's diff: `(path, line, text)`,
    /// on the new side, stored as GitHub stores a review's comments.
    pub async fn review_pull_on_lines(
        &self,
        repo: &str,
        pr: u64,
        user: &str,
        state: &str,
        body: &str,
        lines: &[(&str, u64, &str)],
    ) -> (u64, Sent) {
        let p = self.pull(repo, pr).expect("pull request");
        assert_ne!(
            p.user, user,
            "GitHub refuses reviews of one's own pull request"
        );
        let rest_state = match state {
            "approved" => "APPROVED",
            "changes_requested" => "CHANGES_REQUESTED",
            "commented" => "COMMENTED",
            other => panic!("unknown review state {other}"),
        };
        let (id, assoc) = {
            let mut st = self.state();
            st.users.insert(user.to_owned());
            let id = st.next_id();
            let r = st.repos.get_mut(repo).unwrap();
            r.reviews.push(Review {
                id,
                pull: pr,
                user: user.into(),
                state: rest_state.into(),
                body: body.into(),
                commit_id: p.head_sha.clone(),
                submitted_at: Some(chrono::Utc::now().to_rfc3339()),
            });
            for (path, line, text) in lines {
                let comment = st.next_id();
                st.repos
                    .get_mut(repo)
                    .unwrap()
                    .review_comments
                    .push(ReviewComment {
                        id: comment,
                        pull: pr,
                        review_id: id,
                        user: user.into(),
                        path: (*path).into(),
                        line: Some(*line),
                        start_line: None,
                        side: "RIGHT".into(),
                        body: (*text).into(),
                        commit_id: p.head_sha.clone(),
                        in_reply_to: None,
                    });
            }
            let r = st.repos.get_mut(repo).unwrap();
            (id, association(r, repo, user).to_owned())
        };
        let payload = payloads::pull_request_review_submitted(
            repo,
            self.installation_of(repo),
            pr,
            user,
            state,
            &p.head_sha,
        );
        let labels = self.labels(repo, pr);
        let payload = payloads::edit(&payload, |v| {
            v["review"]["id"] = json!(id);
            v["review"]["body"] = if body.is_empty() {
                json!(null)
            } else {
                json!(body)
            };
            v["review"]["author_association"] = json!(assoc);
            let pr_v = &mut v["pull_request"];
            pr_v["title"] = json!(p.title);
            pr_v["body"] = json!(p.body);
            pr_v["state"] = json!(p.state);
            pr_v["draft"] = json!(p.draft);
            pr_v["user"] = user_json(&p.user);
            pr_v["head"]["ref"] = json!(p.head);
            pr_v["base"]["ref"] = json!(p.base);
            pr_v["labels"] = json!(
                labels
                    .iter()
                    .map(|l| json!({ "name": l }))
                    .collect::<Vec<_>>()
            );
        });
        (id, self.send_webhook("pull_request_review", &payload).await)
    }

    /// `user` presses button `identifier` of check run `check_run_id` (the run must offer it
    /// in its `actions`): `check_run.requested_action` delivered.
    pub async fn press_button(
        &self,
        repo: &str,
        check_run_id: u64,
        identifier: &str,
        user: &str,
    ) -> Sent {
        let (run, app_id, pulls) = {
            let st = self.state();
            let r = &st.repos[repo];
            let run = r
                .check_runs
                .iter()
                .find(|c| c.id == check_run_id)
                .cloned()
                .unwrap_or_else(|| panic!("no check run {check_run_id}"));
            let pulls: Vec<(u64, String, String)> = r
                .pulls
                .iter()
                .filter(|p| p.state == "open" && p.head_sha == run.head_sha)
                .map(|p| (p.number, p.head.clone(), p.base.clone()))
                .collect();
            (run, st.app_id, pulls)
        };
        assert!(
            run.actions.iter().any(|a| a["identifier"] == identifier),
            "check run {check_run_id} offers no button {identifier}: {:?}",
            run.actions
        );
        let payload = payloads::check_run_requested_action(
            repo,
            self.installation_of(repo),
            &run.name,
            run.external_id.as_deref().unwrap_or(""),
            &run.head_sha,
            identifier,
        );
        let payload = payloads::edit(&payload, |v| {
            v["sender"] = super::user_json(user);
            let c = &mut v["check_run"];
            c["id"] = json!(run.id);
            c["status"] = json!(run.status);
            c["conclusion"] = json!(run.conclusion);
            c["app"]["id"] = json!(app_id);
            c["app"]["slug"] = json!("vibeloop");
            c["pull_requests"] = pulls
                .iter()
                .map(|(n, head, base)| {
                    json!({
                        "url": format!("https://api.github.com/repos/{repo}/pulls/{n}"), "id": n + 500_000,
                        "number": n, "head": { "ref": head, "sha": run.head_sha }, "base": { "ref": base },
                    })
                })
                .collect();
        });
        self.send_webhook("check_run", &payload).await
    }
}

/// The reactions of `list` (`(comment id, content)`) on comment `id`, in the order given.
fn on(list: &[(u64, String)], id: u64) -> Vec<String> {
    list.iter()
        .filter(|(c, _)| *c == id)
        .map(|(_, r)| r.clone())
        .collect()
}
