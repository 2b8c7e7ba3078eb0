//! GitHub's merge queue, as the bot meets it: GraphQL's `enqueuePullRequest` (refused where no
//! ruleset over the base requires a queue, or when the head is not `expectedHeadOid`),
//! `dequeuePullRequest` and `isInMergeQueue`; a merge group per entry — a
//! `gh-readonly-queue/<base>/pr-<n>-<base sha>` branch holding the squash of the pull request
//! on the base's tip — announced by `merge_group.checks_requested`; merged (the base moved to
//! the group, `merge_group.destroyed` and `pull_request.closed`) once every check the base
//! requires succeeded on the group's head, and taken out (`pull_request.dequeued` with
//! `CI_FAILURE`) when one fails. A test may hold a repository's queue: its groups are made
//! when the test lets go, on the base as it is then.

use std::collections::BTreeSet;

use axum::http::{HeaderMap, StatusCode};
use serde_json::{Value, json};
use vibeloop::forge::rest::{Answer, bearer, check_token, refresh_heads};
use vibeloop::forge::{BOT_LOGIN, State, gitops};

use super::FakeGitHub;
use super::layer::Shared;
use super::rulesets::Rule;
use crate::support::payloads;

/// The queues of every repository.
#[derive(Debug, Default)]
pub struct Queue {
    entries: Vec<Entry>,
    held: BTreeSet<String>,
}

#[derive(Debug, Clone)]
struct Entry {
    repo: String,
    pr: u64,
    /// The merge group: its head and the base commit it was made on.
    group: Option<(String, String)>,
}

/// What the queue sends once the locks are let go.
struct Hook {
    event: &'static str,
    body: Vec<u8>,
}

fn errors(message: &str) -> Answer {
    (
        StatusCode::OK,
        json!({ "errors": [{ "type": "UNPROCESSABLE", "message": message }] }),
    )
}

/// `POST /graphql` for the queue's three operations; `None` for any other query (the forge's).
pub(super) fn graphql(
    s: &Shared,
    path: &str,
    headers: &HeaderMap,
    body: Option<&Value>,
) -> Option<Answer> {
    let query = body.and_then(|b| b["query"].as_str())?;
    let op = ["enqueuePullRequest", "dequeuePullRequest", "isInMergeQueue"]
        .into_iter()
        .find(|op| query.contains(op))?;
    if path != "/graphql" {
        return None;
    }
    let token = bearer(headers);
    let id = body
        .and_then(|b| b["variables"]["id"].as_str())
        .unwrap_or_default();
    let number: Option<u64> = id.strip_prefix("PR_").and_then(|n| n.parse().ok());
    let mut st = s.state();
    let repo = st
        .repos
        .iter()
        .filter(|(name, _)| check_token(&st, token.as_deref(), name).is_ok())
        .find(|(_, r)| r.pulls.iter().any(|p| Some(p.number) == number))
        .map(|(name, _)| name.clone());
    let (Some(repo), Some(n)) = (repo, number) else {
        let said = format!("Could not resolve to a node with the global id of '{id}'");
        return Some((
            StatusCode::OK,
            json!({ "errors": [{ "type": "NOT_FOUND", "message": said }] }),
        ));
    };
    let bare = super::repo_dir(s.root(), &repo);
    let r = st.repos.get_mut(&repo).expect("found above");
    refresh_heads(r, &bare);
    let pull = r
        .pulls
        .iter()
        .find(|p| p.number == n)
        .cloned()
        .expect("found above");
    let mut x = s.extras();
    let queued = x.queue.entries.iter().any(|e| e.repo == repo && e.pr == n);
    Some(match op {
        "isInMergeQueue" => (
            StatusCode::OK,
            json!({ "data": { "node": { "isInMergeQueue": queued, "headRefOid": pull.head_sha } } }),
        ),
        "dequeuePullRequest" => {
            if !queued {
                return Some(errors("Pull request is not in the merge queue"));
            }
            drop((st, x));
            let s = s.clone();
            tokio::spawn(async move {
                let hooks = take_out(&s, &repo, n, "MANUAL", BOT_LOGIN);
                send(&s, hooks).await;
            });
            (
                StatusCode::OK,
                json!({ "data": { "dequeuePullRequest": { "mergeQueueEntry": { "id": format!("MQE_{n}") } } } }),
            )
        }
        _ => {
            let wanted = body.and_then(|b| b["variables"]["head"].as_str());
            let requires = x.rules.rulesets.iter().any(|(r, set)| {
                *r == repo
                    && set.covers(&pull.base)
                    && set.rules.iter().any(|r| matches!(r, Rule::MergeQueue))
            });
            if !requires {
                return Some(errors("Merge queue is not enabled for the base branch"));
            }
            if pull.state != "open" {
                return Some(errors("Pull request is closed"));
            }
            if wanted.is_some_and(|w| w != pull.head_sha) {
                return Some(errors("Head sha does not match expectedHeadOid"));
            }
            if queued {
                return Some(errors("Pull request is already queued"));
            }
            x.queue.entries.push(Entry {
                repo: repo.clone(),
                pr: n,
                group: None,
            });
            let position = x.queue.entries.iter().filter(|e| e.repo == repo).count();
            let held = x.queue.held.contains(&repo);
            drop((st, x));
            if !held {
                let s = s.clone();
                tokio::spawn(async move { make_groups(&s, &repo).await });
            }
            (
                StatusCode::OK,
                json!({ "data": { "enqueuePullRequest": { "mergeQueueEntry": { "id": format!("MQE_{n}"), "position": position } } } }),
            )
        }
    })
}

/// Makes a group for each entry of `repo` without one, and asks for its checks.
async fn make_groups(s: &Shared, repo: &str) {
    let hooks = {
        let mut st = s.state();
        let mut x = s.extras();
        let mut hooks = vec![];
        let waiting: Vec<u64> = x
            .queue
            .entries
            .iter()
            .filter(|e| e.repo == repo && e.group.is_none())
            .map(|e| e.pr)
            .collect();
        for n in waiting {
            match group_of(s, &mut st, repo, n) {
                Some((head, base, hook)) => {
                    if let Some(e) = x
                        .queue
                        .entries
                        .iter_mut()
                        .find(|e| e.repo == repo && e.pr == n)
                    {
                        e.group = Some((head, base));
                    }
                    hooks.push(hook);
                }
                None => {
                    x.queue.entries.retain(|e| !(e.repo == repo && e.pr == n));
                    hooks.extend(out_hooks(&st, repo, n, None, "MERGE_CONFLICT", BOT_LOGIN));
                }
            }
        }
        hooks
    };
    send(s, hooks).await;
}

/// The group of pull request `n` on its base's tip: its head, that tip, and the delivery
/// asking for its checks; `None` when the pull request does not apply there.
fn group_of(s: &Shared, st: &mut State, repo: &str, n: u64) -> Option<(String, String, Hook)> {
    let bare = super::repo_dir(s.root(), repo);
    let git = gitops::open(&bare)?;
    let r = st.repos.get_mut(repo)?;
    refresh_heads(r, &bare);
    let p = r.pulls.iter().find(|p| p.number == n)?.clone();
    let base = gitops::resolve_commit(&git, &p.base)?;
    let head = git2::Oid::from_str(&p.head_sha).ok()?;
    let by = git2::Signature::now(BOT_LOGIN, "bot@users.noreply.github.com").ok()?;
    let web = git2::Signature::now("GitHub", "noreply@github.com").ok()?;
    let message = format!("{} (#{n})", p.title);
    let group = gitops::land(
        &git,
        base,
        head,
        gitops::LandMethod::Squash,
        &message,
        &by,
        &web,
    )
    .ok()??;
    let head_ref = format!("refs/heads/gh-readonly-queue/{}/pr-{n}-{base}", p.base);
    gitops::set_ref(&git, &head_ref, group, "merge group").ok()?;
    let mut v: Value = serde_json::from_slice(&payloads::documented(
        "merge_group/checks_requested.payload.json",
    ))
    .ok()?;
    payloads::retarget(&mut v, repo, Some(r.installation));
    let g = &mut v["merge_group"];
    g["head_sha"] = json!(group.to_string());
    g["head_ref"] = json!(head_ref);
    g["base_sha"] = json!(base.to_string());
    g["base_ref"] = json!(format!("refs/heads/{}", p.base));
    g["head_commit"]["id"] = json!(group.to_string());
    g["head_commit"]["message"] = json!(message);
    let hook = Hook {
        event: "merge_group",
        body: serde_json::to_vec(&v).ok()?,
    };
    Some((group.to_string(), base.to_string(), hook))
}

/// Takes pull request `n` of `repo` out of the queue for `reason` (`by` did it): its group's
/// branch deleted; the deliveries to send.
fn take_out(s: &Shared, repo: &str, n: u64, reason: &str, by: &str) -> Vec<Hook> {
    let st = s.state();
    let mut x = s.extras();
    let Some(i) = x
        .queue
        .entries
        .iter()
        .position(|e| e.repo == repo && e.pr == n)
    else {
        return vec![];
    };
    let entry = x.queue.entries.remove(i);
    drop(x);
    if let Some(git) = gitops::open(&super::repo_dir(s.root(), repo)) {
        delete_group_refs(&git, n);
    }
    out_hooks(&st, repo, n, entry.group.as_ref(), reason, by)
}

fn delete_group_refs(git: &git2::Repository, n: u64) {
    let names: Vec<String> = git
        .references_glob("refs/heads/gh-readonly-queue/*")
        .map(|mut refs| {
            refs.names()
                .filter_map(Result::ok)
                .map(str::to_owned)
                .collect()
        })
        .unwrap_or_default();
    for name in names.iter().filter(|r| r.contains(&format!("/pr-{n}-"))) {
        let _ = gitops::delete_ref(git, name);
    }
}

/// `merge_group.destroyed` (when it had a group) and `pull_request.dequeued` for `reason`.
fn out_hooks(
    st: &State,
    repo: &str,
    n: u64,
    group: Option<&(String, String)>,
    reason: &str,
    by: &str,
) -> Vec<Hook> {
    let Some(r) = st.repos.get(repo) else {
        return vec![];
    };
    let mut hooks = vec![];
    if let Some(g) = group {
        hooks.push(destroyed(repo, r.installation, g, "dequeued"));
    }
    let mut v: Value = serde_json::from_slice(&payloads::pull_request_closed(
        repo,
        r.installation,
        n,
        None,
    ))
    .unwrap();
    v["action"] = json!("dequeued");
    v["reason"] = json!(reason);
    v["pull_request"]["state"] = json!("open");
    if let Some(p) = r.pulls.iter().find(|p| p.number == n) {
        v["pull_request"]["head"]["sha"] = json!(p.head_sha);
    }
    v["sender"] = super::user_json(by);
    hooks.push(Hook {
        event: "pull_request",
        body: serde_json::to_vec(&v).unwrap(),
    });
    hooks
}

fn destroyed(repo: &str, installation: u64, group: &(String, String), reason: &str) -> Hook {
    let mut v: Value =
        serde_json::from_slice(&payloads::documented("merge_group/destroyed.payload.json"))
            .unwrap();
    payloads::retarget(&mut v, repo, Some(installation));
    v["reason"] = json!(reason);
    v["merge_group"]["head_sha"] = json!(group.0);
    v["merge_group"]["base_sha"] = json!(group.1);
    Hook {
        event: "merge_group",
        body: serde_json::to_vec(&v).unwrap(),
    }
}

async fn send(s: &Shared, hooks: Vec<Hook>) {
    for h in hooks {
        super::hooks::deliver(s, h.event, &h.body, None).await;
    }
}

/// How a required check stands on a commit: `Some(true)` succeeded, `Some(false)` failed,
/// `None` not reported or not done.
fn check_on(r: &vibeloop::forge::Repo, sha: &str, name: &str) -> Option<bool> {
    let run = r
        .check_runs
        .iter()
        .filter(|c| c.head_sha == sha && c.name == name && c.status == "completed")
        .max_by_key(|c| c.id);
    if let Some(run) = run {
        return Some(matches!(
            run.conclusion.as_deref(),
            Some("success" | "neutral" | "skipped")
        ));
    }
    let status = r
        .statuses
        .iter()
        .rev()
        .find(|st| st.sha == sha && st.context == name)?;
    match status.state.as_str() {
        "success" => Some(true),
        "failure" | "error" => Some(false),
        _ => None,
    }
}

/// After a check or status changed: merge each group whose required checks all succeeded,
/// and take out each whose required check failed.
pub(super) async fn advance(s: &Shared) {
    let hooks = {
        let mut st = s.state();
        let mut x = s.extras();
        let mut hooks = vec![];
        for e in x.queue.entries.clone() {
            let (Some(group), Some(r)) = (e.group.clone(), st.repos.get(&e.repo)) else {
                continue;
            };
            let Some(base) = r
                .pulls
                .iter()
                .find(|p| p.number == e.pr)
                .map(|p| p.base.clone())
            else {
                continue;
            };
            let required = x
                .rules
                .enforced(&e.repo, &base)
                .map(|p| p.required_checks)
                .unwrap_or_default();
            let verdicts: Vec<Option<bool>> =
                required.iter().map(|c| check_on(r, &group.0, c)).collect();
            let failed = verdicts.contains(&Some(false));
            if !failed && verdicts.contains(&None) {
                continue;
            }
            x.queue
                .entries
                .retain(|q| !(q.repo == e.repo && q.pr == e.pr));
            let installation = r.installation;
            let git = gitops::open(&super::repo_dir(s.root(), &e.repo)).expect("bare repository");
            delete_group_refs(&git, e.pr);
            if failed {
                let by = "github-merge-queue[bot]";
                hooks.extend(out_hooks(
                    &st,
                    &e.repo,
                    e.pr,
                    Some(&group),
                    "CI_FAILURE",
                    by,
                ));
                continue;
            }
            let head = git2::Oid::from_str(&group.0).expect("a commit");
            gitops::set_ref(
                &git,
                &format!("refs/heads/{base}"),
                head,
                "merged by the queue",
            )
            .expect("the base moves");
            let r = st.repos.get_mut(&e.repo).expect("found above");
            vibeloop::forge::rest::git::close_as_merged(r, e.pr, &group.0, Some(BOT_LOGIN));
            hooks.push(destroyed(&e.repo, installation, &group, "merged"));
            let merged = Some((group.0.as_str(), BOT_LOGIN));
            let closed = payloads::pull_request_closed(&e.repo, installation, e.pr, merged);
            hooks.push(Hook {
                event: "pull_request",
                body: closed,
            });
        }
        hooks
    };
    send(s, hooks).await;
}

impl FakeGitHub {
    /// Holds `repo`'s merge queue: pull requests join it, and no group is made for them until
    /// [`Self::release_queue`].
    pub fn hold_queue(&self, repo: &str) {
        self.extras().queue.held.insert(repo.to_owned());
    }

    /// Lets `repo`'s merge queue go on: a group is made for each waiting pull request, on the
    /// base as it is now.
    pub async fn release_queue(&self, repo: &str) {
        self.extras().queue.held.remove(repo);
        make_groups(&self.shared(), repo).await;
    }

    /// `user` removes pull request `pr` from `repo`'s merge queue on its page.
    pub async fn dequeue_by_hand(&self, repo: &str, pr: u64, user: &str) {
        let s = self.shared();
        let hooks = take_out(&s, repo, pr, "MANUAL", user);
        send(&s, hooks).await;
    }

    /// The pull requests in `repo`'s merge queue, first first.
    pub fn queued(&self, repo: &str) -> Vec<u64> {
        self.extras()
            .queue
            .entries
            .iter()
            .filter(|e| e.repo == repo)
            .map(|e| e.pr)
            .collect()
    }
}
