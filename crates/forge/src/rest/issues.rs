//! Issues, issue comments, labels, reactions (to issues, issue comments and review comments)
//! and collaborator permissions.

use axum::http::StatusCode;
use serde_json::{Value, json};

use super::json::{association, bot, comment_json, label_json, user_json};
use super::{Answer, Cx, not_found, num, pct_decode, unprocessable, validation_failed};
use crate::{BOT_LOGIN, Comment, Repo};

/// The reaction types GitHub accepts.
const REACTIONS: &[&str] = &[
    "+1", "-1", "laugh", "confused", "heart", "hooray", "rocket", "eyes",
];

/// Issue or pull request `n` exists (every pull request is an issue).
fn exists(r: &Repo, n: u64) -> bool {
    r.issues.contains_key(&n) || r.pulls.iter().any(|p| p.number == n)
}

fn labels_json(repo: &str, r: &Repo, n: u64) -> Value {
    let names = r.labels.get(&n).cloned().unwrap_or_default();
    names.iter().map(|l| label_json(repo, l)).collect()
}

pub fn route(cx: &mut Cx<'_>, rest: &[&str]) -> Option<Answer> {
    let repo = cx.repo.to_owned();
    Some(match (cx.method, rest) {
        ("POST", ["issues"]) => {
            let (Some(title), body) = (cx.field("title"), cx.field("body")) else {
                return Some(unprocessable("title is missing"));
            };
            let labels: Vec<String> = cx
                .body
                .and_then(|b| b["labels"].as_array().cloned())
                .unwrap_or_default()
                .iter()
                .filter_map(|l| l.as_str().map(str::to_owned))
                .collect();
            let r = cx.r();
            let number = r.next_number();
            r.issues.insert(
                number,
                crate::Issue {
                    closed: false,
                    number,
                    title: title.clone(),
                    body: body.clone().unwrap_or_default(),
                    author: BOT_LOGIN.into(),
                },
            );
            for l in &labels {
                r.add_label(number, l);
            }
            let labels = labels_json(&repo, r, number);
            (
                StatusCode::CREATED,
                json!({
                    "number": number, "title": title, "body": body, "labels": labels, "state": "open",
                    "html_url": format!("https://github.com/{repo}/issues/{number}"),
                    "user": user_json(BOT_LOGIN),
                }),
            )
        }
        // Issues only (GitHub lists pull requests too); `state` open (the default), closed or all.
        ("GET", ["issues"]) => {
            let state = cx
                .query()
                .get("state")
                .cloned()
                .unwrap_or_else(|| "open".into());
            let r = cx.r();
            let list: Vec<Value> = r
                .issues
                .values()
                .filter(|i| state == "all" || (state == "closed") == i.closed)
                .map(|i| {
                    json!({
                        "number": i.number, "title": i.title, "body": i.body,
                        "labels": labels_json(&repo, r, i.number),
                        "state": if i.closed { "closed" } else { "open" },
                        "user": user_json(&i.author),
                    })
                })
                .collect();
            (StatusCode::OK, Value::Array(list))
        }
        ("GET", ["issues", n]) => {
            let n = tri!(num(n));
            let r = cx.r();
            let labels = labels_json(&repo, r, n);
            if let Some(i) = r.issues.get(&n) {
                (
                    StatusCode::OK,
                    json!({
                        "number": i.number, "title": i.title, "body": i.body, "labels": labels,
                        "state": if i.closed { "closed" } else { "open" },
                        "user": user_json(&i.author),
                    }),
                )
            } else if let Some(p) = r.pulls.iter().find(|p| p.number == n) {
                (
                    StatusCode::OK,
                    json!({
                        "number": p.number, "title": p.title, "body": p.body, "state": p.state, "labels": labels,
                        "pull_request": { "url": format!("https://api.github.com/repos/{repo}/pulls/{n}") },
                    }),
                )
            } else {
                not_found()
            }
        }
        ("POST", ["issues", n, "reactions"]) => {
            let n = tri!(num(n));
            let id = cx.id();
            let Some(content) = cx.field("content") else {
                return Some(unprocessable("content is missing"));
            };
            let r = cx.r();
            react(&mut r.reactions, n, content, id)
        }
        ("POST", ["issues", "comments", cid, "reactions"]) => {
            let cid = tri!(num(cid));
            let id = cx.id();
            let content = cx.field("content").unwrap_or_default();
            let r = cx.r();
            if !r.comments.iter().any(|c| c.id == cid) {
                return Some(not_found());
            }
            if !REACTIONS.contains(&content.as_str()) {
                return Some(validation_failed("Reaction", "content", "invalid", None));
            }
            react(&mut r.comment_reactions, cid, content, id)
        }
        ("POST", ["pulls", "comments", cid, "reactions"]) => {
            let cid = tri!(num(cid));
            let id = cx.id();
            let content = cx.field("content").unwrap_or_default();
            let r = cx.r();
            if !r.review_comments.iter().any(|c| c.id == cid) {
                return Some(not_found());
            }
            if !REACTIONS.contains(&content.as_str()) {
                return Some(validation_failed("Reaction", "content", "invalid", None));
            }
            react(&mut r.review_comment_reactions, cid, content, id)
        }
        ("GET", ["issues", n, "comments"]) => {
            let n = tri!(num(n));
            let q = cx.query();
            let per_page: usize = q.get("per_page").and_then(|v| v.parse().ok()).unwrap_or(30);
            let page: usize = q
                .get("page")
                .and_then(|v| v.parse().ok())
                .unwrap_or(1)
                .max(1);
            let r = cx.r();
            let all: Vec<Value> = r
                .comments
                .iter()
                .filter(|c| c.issue == n)
                .map(|c| comment_json(&repo, c, association(r, &repo, &c.user)))
                .skip((page - 1) * per_page)
                .take(per_page)
                .collect();
            (StatusCode::OK, Value::Array(all))
        }
        ("POST", ["issues", n, "comments"]) => {
            let n = tri!(num(n));
            let id = cx.id();
            let text = cx.field("body");
            let r = cx.r();
            if !exists(r, n) {
                return Some(not_found());
            }
            let Some(text) = text else {
                return Some(unprocessable("body is missing"));
            };
            let c = Comment {
                id,
                issue: n,
                body: text,
                user: BOT_LOGIN.into(),
            };
            let v = comment_json(&repo, &c, "NONE");
            r.comments.push(c);
            (StatusCode::CREATED, v)
        }
        ("PATCH", ["issues", "comments", cid]) => {
            let cid = tri!(num(cid));
            let text = cx.field("body");
            let r = cx.r();
            let Some(i) = r.comments.iter().position(|c| c.id == cid) else {
                return Some(not_found());
            };
            let Some(text) = text else {
                return Some(unprocessable("body is missing"));
            };
            // The App edits what its bot user wrote; a person's comment is theirs.
            if r.comments[i].user != BOT_LOGIN {
                return Some(super::err(
                    StatusCode::FORBIDDEN,
                    "Resource not accessible by integration",
                ));
            }
            r.comments[i].body = text;
            let c = r.comments[i].clone();
            (
                StatusCode::OK,
                comment_json(&repo, &c, association(r, &repo, &c.user)),
            )
        }
        ("POST", ["issues", n, "labels"]) => {
            let n = tri!(num(n));
            let wanted = label_names(cx.body);
            let r = cx.r();
            if !exists(r, n) {
                return Some(not_found());
            }
            let Some(wanted) = wanted.filter(|w| !w.is_empty()) else {
                return Some(validation_failed("Label", "labels", "missing_field", None));
            };
            for l in wanted {
                r.add_label(n, &l);
            }
            (StatusCode::OK, labels_json(&repo, r, n))
        }
        ("DELETE", ["issues", n, "labels", name]) => {
            let n = tri!(num(n));
            let name = pct_decode(name);
            let r = cx.r();
            if !exists(r, n) {
                return Some(not_found());
            }
            let have = r.labels.entry(n).or_default();
            let Some(i) = have.iter().position(|l| *l == name) else {
                return Some(super::err(StatusCode::NOT_FOUND, "Label does not exist"));
            };
            have.remove(i);
            (StatusCode::OK, labels_json(&repo, r, n))
        }
        ("GET", ["collaborators", user, "permission"]) => {
            let user = pct_decode(user);
            let known = cx.st.users.contains(&user);
            let r = cx.r();
            let role = r.permissions.get(&user).cloned();
            permission(&user, role, known)
        }
        _ => return None,
    })
}

/// `labels` of `{"labels": [..]}` or of a bare array; items are names or `{"name": ..}`.
fn label_names(body: Option<&Value>) -> Option<Vec<String>> {
    let list = match body? {
        Value::Array(a) => a,
        Value::Object(o) => o.get("labels")?.as_array()?,
        _ => return None,
    };
    list.iter()
        .map(|v| {
            v.as_str()
                .or_else(|| v.get("name").and_then(Value::as_str))
                .map(str::to_owned)
        })
        .collect()
}

/// Adds reaction `content` to `target` once; GitHub answers 200 when it already existed.
fn react(list: &mut Vec<(u64, String)>, target: u64, content: String, id: u64) -> Answer {
    let exists = list.iter().any(|(t, c)| *t == target && *c == content);
    if !exists {
        list.push((target, content.clone()));
    }
    let status = if exists {
        StatusCode::OK
    } else {
        StatusCode::CREATED
    };
    (
        status,
        json!({ "id": id, "node_id": format!("REA_{id}"), "user": bot(), "content": content, "created_at": super::now() }),
    )
}

/// `GET …/collaborators/{user}/permission`. A role given with `set_permission` answers with
/// its legacy base role (`maintain` → `write`, `triage` → `read`) and its `role_name`; a user
/// who exists but holds no role is documented base role `none`; a login that is no GitHub user
/// is a 404.
fn permission(user: &str, role: Option<String>, known: bool) -> Answer {
    let role = match role {
        Some(r) => r,
        None if known => "none".to_owned(),
        None => {
            return super::err(StatusCode::NOT_FOUND, &format!("{user} is not a user"));
        }
    };
    let base = match role.as_str() {
        "admin" => "admin",
        "maintain" | "write" => "write",
        "triage" | "read" => "read",
        _ => "none",
    };
    let mut u = user_json(user);
    u["role_name"] = json!(role);
    u["permissions"] = json!({
        "admin": base == "admin", "maintain": role == "maintain" || base == "admin",
        "push": base == "admin" || base == "write",
        "triage": matches!(role.as_str(), "admin" | "maintain" | "write" | "triage"),
        "pull": base != "none",
    });
    (
        StatusCode::OK,
        json!({ "permission": base, "role_name": role, "user": u }),
    )
}
