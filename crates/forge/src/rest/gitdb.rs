//! The git database's writes, as GitHub makes them: blobs, trees (over a base tree, entries
//! added, replaced or removed) and commits. A commit made with no `author` or `committer` is
//! the App's, signed by GitHub: here a `gpgsig` header of the forge's own, which
//! [`verification`] (and so every commit's JSON) reports as verified.

use axum::http::StatusCode;
use base64::Engine as _;
use git2::{FileMode, Oid, Repository};
use serde_json::{Value, json};

use super::json::{git_user_json, parents_json, user_id};
use super::{Answer, Cx, unprocessable, validation_failed};
use crate::BOT_LOGIN;

const API: &str = "https://api.github.com";
const WEB: &str = "https://github.com";

/// The signature the forge puts on the commits it makes for an App.
const SIGNATURE: &str =
    "-----BEGIN PGP SIGNATURE-----\n\nwsBcBAABCAAQBQJforge\n-----END PGP SIGNATURE-----";

pub fn route(cx: &mut Cx<'_>, rest: &[&str]) -> Option<Answer> {
    Some(match (cx.method, rest) {
        ("POST", ["git", "blobs"]) => create_blob(cx),
        ("POST", ["git", "trees"]) => create_tree(cx),
        ("POST", ["git", "commits"]) => create_commit(cx),
        ("GET", ["git", "commits", sha]) => {
            let git = tri!(cx.git());
            match Oid::from_str(sha)
                .ok()
                .filter(|o| git.find_commit(*o).is_ok())
            {
                Some(oid) => (StatusCode::OK, git_commit_json(cx.repo, &git, oid)),
                None => super::not_found(),
            }
        }
        _ => return None,
    })
}

/// `verification` of commit `oid`: verified when it carries the forge's signature.
pub fn verification(git: &Repository, oid: Oid) -> Value {
    match git.extract_signature(&oid, None) {
        Ok((signature, payload)) if signature.as_str() == Some(SIGNATURE) => json!({
            "verified": true, "reason": "valid", "signature": SIGNATURE,
            "payload": payload.as_str().unwrap_or_default(),
            "verified_at": super::now(),
        }),
        Ok(_) => {
            json!({ "verified": false, "reason": "unknown_key", "signature": null, "payload": null, "verified_at": null })
        }
        Err(_) => {
            json!({ "verified": false, "reason": "unsigned", "signature": null, "payload": null, "verified_at": null })
        }
    }
}

fn create_blob(cx: &mut Cx<'_>) -> Answer {
    let Some(content) = cx.field("content") else {
        return validation_failed("Blob", "content", "missing_field", None);
    };
    let bytes = match cx.field("encoding").as_deref() {
        None | Some("utf-8") => content.into_bytes(),
        Some("base64") => match base64::engine::general_purpose::STANDARD.decode(&content) {
            Ok(b) => b,
            Err(_) => return validation_failed("Blob", "content", "invalid", None),
        },
        Some(_) => return validation_failed("Blob", "encoding", "invalid", None),
    };
    let git = match cx.git() {
        Ok(g) => g,
        Err(e) => return e,
    };
    match git.blob(&bytes) {
        Ok(oid) => (
            StatusCode::CREATED,
            json!({ "sha": oid.to_string(), "url": format!("{API}/repos/{}/git/blobs/{oid}", cx.repo) }),
        ),
        Err(e) => unprocessable(&e.to_string()),
    }
}

/// A tree entry's mode as the API writes it.
fn mode_of(mode: &str) -> Option<FileMode> {
    Some(match mode {
        "100644" => FileMode::Blob,
        "100755" => FileMode::BlobExecutable,
        "040000" => FileMode::Tree,
        "160000" => FileMode::Commit,
        "120000" => FileMode::Link,
        _ => return None,
    })
}

fn create_tree(cx: &mut Cx<'_>) -> Answer {
    let Some(entries) = cx.body.and_then(|b| b["tree"].as_array()).cloned() else {
        return validation_failed("Tree", "tree", "missing_field", None);
    };
    let git = match cx.git() {
        Ok(g) => g,
        Err(e) => return e,
    };
    let base = match cx.field("base_tree") {
        Some(sha) => match Oid::from_str(&sha).ok().and_then(|o| git.find_tree(o).ok()) {
            Some(t) => t,
            None => return unprocessable("base_tree is not a valid tree oid"),
        },
        None => match git.treebuilder(None).and_then(|b| b.write()) {
            Ok(empty) => git.find_tree(empty).expect("the empty tree was written"),
            Err(e) => return unprocessable(&e.to_string()),
        },
    };
    let mut update = git2::build::TreeUpdateBuilder::new();
    for e in &entries {
        let (Some(path), Some(mode)) = (e["path"].as_str(), e["mode"].as_str().and_then(mode_of))
        else {
            return validation_failed("Tree", "tree", "invalid", None);
        };
        if e["sha"].is_null() && e.get("content").is_none() {
            update.remove(path);
            continue;
        }
        let oid = match (e["sha"].as_str(), e["content"].as_str()) {
            (Some(sha), _) => match Oid::from_str(sha)
                .ok()
                .filter(|o| git.find_object(*o, None).is_ok())
            {
                Some(o) => o,
                None => return unprocessable(&format!("tree.sha {sha} is not a valid blob")),
            },
            (None, Some(text)) => match git.blob(text.as_bytes()) {
                Ok(o) => o,
                Err(e) => return unprocessable(&e.to_string()),
            },
            _ => return validation_failed("Tree", "tree", "invalid", None),
        };
        update.upsert(path, oid, mode);
    }
    let oid = match update.create_updated(&git, &base) {
        Ok(o) => o,
        Err(e) => return unprocessable(&e.to_string()),
    };
    let tree = git.find_tree(oid).expect("the tree was written");
    let repo = cx.repo;
    let listed: Vec<Value> = tree
        .iter()
        .map(|e| {
            let kind = e.kind().map(crate::gitops::kind_name).unwrap_or("blob");
            json!({
                "path": e.name().unwrap_or_default(), "mode": format!("{:06o}", e.filemode()),
                "type": kind, "sha": e.id().to_string(),
                "url": format!("{API}/repos/{repo}/git/{kind}s/{}", e.id()),
            })
        })
        .collect();
    (
        StatusCode::CREATED,
        json!({ "sha": oid.to_string(), "url": format!("{API}/repos/{repo}/git/trees/{oid}"), "tree": listed, "truncated": false }),
    )
}

fn create_commit(cx: &mut Cx<'_>) -> Answer {
    let (Some(message), Some(tree)) = (cx.field("message"), cx.field("tree")) else {
        return validation_failed("Commit", "message, tree", "missing_field", None);
    };
    let git = match cx.git() {
        Ok(g) => g,
        Err(e) => return e,
    };
    let Some(tree) = Oid::from_str(&tree)
        .ok()
        .and_then(|o| git.find_tree(o).ok())
    else {
        return unprocessable("Tree SHA does not exist");
    };
    let parents: Vec<String> = cx
        .body
        .and_then(|b| b["parents"].as_array())
        .map(|a| {
            a.iter()
                .filter_map(|p| p.as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default();
    let mut commits = Vec::new();
    for p in &parents {
        match Oid::from_str(p).ok().and_then(|o| git.find_commit(o).ok()) {
            Some(c) => commits.push(c),
            None => return unprocessable("Parent SHA does not exist or is not a commit object"),
        }
    }
    let person = |key: &str| cx.body.and_then(|b| b.get(key)).filter(|v| !v.is_null());
    let (author, committer) = (person("author"), person("committer"));
    // GitHub signs what an App commits as itself, not a commit it is told someone else made.
    let signed = author.is_none() && committer.is_none();
    let now = git2::Time::new(chrono::Utc::now().timestamp(), 0);
    let bot_email = format!(
        "{}+{BOT_LOGIN}@users.noreply.github.com",
        user_id(BOT_LOGIN)
    );
    let sig = |v: Option<&Value>| -> Result<git2::Signature<'static>, git2::Error> {
        match v {
            Some(p) => git2::Signature::new(
                p["name"].as_str().unwrap_or(BOT_LOGIN),
                p["email"].as_str().unwrap_or(&bot_email),
                &now,
            ),
            None => git2::Signature::new(BOT_LOGIN, &bot_email, &now),
        }
    };
    let (Ok(a), Ok(c)) = (sig(author), sig(committer.or(author))) else {
        return validation_failed("Commit", "author", "invalid", None);
    };
    let refs: Vec<&git2::Commit<'_>> = commits.iter().collect();
    let made = git
        .commit_create_buffer(&a, &c, &message, &tree, &refs)
        .and_then(|buf| {
            let text = buf.as_str().unwrap_or_default().to_owned();
            if signed {
                git.commit_signed(&text, SIGNATURE, Some("gpgsig"))
            } else {
                git.odb()?.write(git2::ObjectType::Commit, text.as_bytes())
            }
        });
    match made {
        Ok(oid) => (StatusCode::CREATED, git_commit_json(cx.repo, &git, oid)),
        Err(e) => unprocessable(&e.to_string()),
    }
}

/// GitHub's `git-commit` for `oid`.
fn git_commit_json(repo: &str, git: &Repository, oid: Oid) -> Value {
    let Ok(c) = git.find_commit(oid) else {
        return Value::Null;
    };
    let (person, parents) = (git_user_json, parents_json(repo, &c, "git/commits"));
    json!({
        "sha": oid.to_string(), "node_id": format!("C_{oid}"),
        "url": format!("{API}/repos/{repo}/git/commits/{oid}"),
        "html_url": format!("{WEB}/{repo}/commit/{oid}"),
        "author": person(c.author()), "committer": person(c.committer()),
        "message": c.message().unwrap_or(""),
        "tree": { "sha": c.tree_id().to_string(), "url": format!("{API}/repos/{repo}/git/trees/{}", c.tree_id()) },
        "parents": parents,
        "verification": verification(git, oid),
    })
}
