//! Git's smart-HTTP protocol for the fake GitHub, served by git's own CGI program
//! `git http-backend` over the bare repositories under one root, with protected branches
//! refusing pushes as GitHub does (a `pre-receive` hook).

use std::path::{Path, PathBuf};
use std::process::Stdio;

use axum::body::Body;
use axum::http::{HeaderMap, HeaderValue, Response, StatusCode};
use tokio::io::AsyncWriteExt as _;

/// Finds `git http-backend` (`git --exec-path` holds it), once.
fn http_backend() -> &'static Path {
    static FOUND: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    FOUND.get_or_init(|| {
        let out = std::process::Command::new("git")
            .arg("--exec-path")
            .output()
            .expect("git is installed");
        PathBuf::from(String::from_utf8_lossy(&out.stdout).trim()).join("git-http-backend")
    })
}

/// How a protected branch refuses pushes, as GitHub's `GH006` does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PushRule {
    /// "Changes must be made through a pull request."
    PullRequestsOnly,
    /// "Cannot change this locked branch"
    Locked,
    /// "Cannot force-push to this protected branch"
    NoForce,
}

/// What rulesets ask of pushes: the branches (shell patterns) under `required_signatures`, and
/// each `commit_message_pattern` as `branches<TAB>what GitHub says<TAB>regex`.
#[derive(Debug, Clone, Default)]
pub struct RulesetPushes {
    pub signed: Vec<String>,
    pub messages: Vec<String>,
}

/// The `pre-receive` hook that enforces [`PushRule`]s, given as `FAKE_PROTECTED` =
/// `branch=pr|locked|noforce …`, and rulesets' `required_signatures` over the branches
/// `FAKE_SIGNED` matches (shell patterns) and their `commit_message_pattern`s (`FAKE_MESSAGES`),
/// with GitHub's words (`GH006`, `GH013`).
const PRE_RECEIVE: &str = r#"#!/bin/sh
set -f
status=0
zero=0000000000000000000000000000000000000000
while read old new ref; do
    branch=${ref#refs/heads/}
    [ "$branch" = "$ref" ] && continue
    for pattern in $FAKE_SIGNED; do
        case "$branch" in $pattern) ;; *) continue ;; esac
        [ "$new" = "$zero" ] && break
        unsigned=""
        for c in $(git rev-list "$new" --not --all); do
            git cat-file commit "$c" | sed '/^$/q' | grep -q '^gpgsig ' || unsigned="$unsigned $c"
        done
        [ -z "$unsigned" ] && break
        set -- $unsigned
        echo "error: GH013: Repository rule violations found for $ref." >&2
        echo "Review all repository rules at $FAKE_RULES_URL?ref=$(echo "$ref" | sed 's|/|%2F|g')" >&2
        echo "" >&2
        echo "- Commits must have verified signatures." >&2
        echo "  Found $# violation$([ $# -gt 1 ] && echo s):" >&2
        echo "" >&2
        for c in $unsigned; do echo "  $c" >&2; done
        echo "" >&2
        status=1
        break
    done
    # FAKE_MESSAGES: one rule a line, `pattern<TAB>what it says<TAB>regex`.
    printf '%s\n' "$FAKE_MESSAGES" | while IFS='	' read -r pattern said regex; do
        [ -n "$pattern" ] || continue
        case "$branch" in $pattern) ;; *) continue ;; esac
        [ "$new" = "$zero" ] && continue
        bad=""
        for c in $(git rev-list "$new" --not --all); do
            git log -1 --format=%B "$c" | grep -qE -- "$regex" || bad="$bad $c"
        done
        [ -z "$bad" ] && continue
        set -- $bad
        echo "error: GH013: Repository rule violations found for $ref." >&2
        echo "" >&2
        echo "- $said" >&2
        echo "  Found $# violation$([ $# -gt 1 ] && echo s):" >&2
        echo "" >&2
        for c in $bad; do echo "  $c" >&2; done
        echo "" >&2
        exit 1
    done || status=1
    for rule in $FAKE_PROTECTED; do
        [ "${rule%%=*}" = "$branch" ] || continue
        why=""
        case "${rule#*=}" in
            pr) why="Changes must be made through a pull request." ;;
            locked) why="Cannot change this locked branch" ;;
            noforce)
                if [ "$new" = "$zero" ]; then why="Cannot delete this protected branch"
                elif [ "$old" != "$zero" ] && ! git merge-base --is-ancestor "$old" "$new"; then
                    why="Cannot force-push to this protected branch"
                fi ;;
        esac
        if [ -n "$why" ]; then
            echo "error: GH006: Protected branch update failed for $ref." >&2
            echo "error: $why" >&2
            status=1
        fi
    done
done
exit $status
"#;

/// A directory holding the protection hook (written once per process).
fn hooks_dir() -> &'static Path {
    static DIR: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    DIR.get_or_init(|| {
        use std::os::unix::fs::PermissionsExt as _;
        let dir = std::env::temp_dir().join(format!("vibeloop-fake-hooks-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("hooks dir");
        let hook = dir.join("pre-receive");
        std::fs::write(&hook, PRE_RECEIVE).expect("hook written");
        std::fs::set_permissions(&hook, std::fs::Permissions::from_mode(0o755)).expect("chmod");
        dir
    })
}

/// Runs one smart-HTTP request through `git http-backend`; pushes to the branches in
/// `protected` are refused as their rule says.
#[allow(clippy::too_many_arguments)]
pub async fn serve(
    root: &Path,
    method: &str,
    path: &str,
    query: &str,
    headers: &HeaderMap,
    body: bytes::Bytes,
    user: &str,
    protected: &[(String, PushRule)],
    rules: &RulesetPushes,
) -> Response<Body> {
    let header = |name: &str| {
        headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
            .to_owned()
    };
    let mut cmd = tokio::process::Command::new(http_backend());
    cmd.env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("GIT_PROJECT_ROOT", root)
        .env("GIT_HTTP_EXPORT_ALL", "1")
        .env("PATH_INFO", path)
        .env("QUERY_STRING", query)
        .env("REQUEST_METHOD", method)
        .env("CONTENT_TYPE", header("content-type"))
        .env("CONTENT_LENGTH", body.len().to_string())
        .env("HTTP_CONTENT_ENCODING", header("content-encoding"))
        .env("GIT_PROTOCOL", header("git-protocol"))
        .env("REMOTE_USER", user)
        .env("REMOTE_ADDR", "127.0.0.1")
        // Pushes over HTTP are off unless enabled; the fake checks tokens itself. No
        // housekeeping after a push: it is GitHub's cost, not the client's.
        .env("GIT_CONFIG_COUNT", "3")
        .env("GIT_CONFIG_KEY_0", "http.receivepack")
        .env("GIT_CONFIG_VALUE_0", "true")
        .env("GIT_CONFIG_KEY_1", "core.hooksPath")
        .env("GIT_CONFIG_VALUE_1", hooks_dir())
        .env("GIT_CONFIG_KEY_2", "receive.autogc")
        .env("GIT_CONFIG_VALUE_2", "false")
        .env(
            "FAKE_PROTECTED",
            protected
                .iter()
                .map(|(b, r)| {
                    let how = match r {
                        PushRule::PullRequestsOnly => "pr",
                        PushRule::Locked => "locked",
                        PushRule::NoForce => "noforce",
                    };
                    format!("{b}={how}")
                })
                .collect::<Vec<_>>()
                .join(" "),
        )
        .env("FAKE_SIGNED", rules.signed.join(" "))
        .env("FAKE_MESSAGES", rules.messages.join("\n"))
        .env(
            "FAKE_RULES_URL",
            format!(
                "https://github.com/{}/rules",
                path.trim_start_matches('/')
                    .split('/')
                    .take(2)
                    .collect::<Vec<_>>()
                    .join("/")
                    .trim_end_matches(".git")
            ),
        )
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = match cmd.spawn() {
        Ok(c) => c,
        Err(e) => {
            return plain(
                StatusCode::INTERNAL_SERVER_ERROR,
                format!("cannot run git http-backend: {e}"),
            );
        }
    };
    let mut stdin = child.stdin.take().expect("piped");
    let writer = tokio::spawn(async move {
        let _ = stdin.write_all(&body).await;
    });
    let out = match child.wait_with_output().await {
        Ok(o) => o,
        Err(e) => return plain(StatusCode::INTERNAL_SERVER_ERROR, e.to_string()),
    };
    let _ = writer.await;
    parse_cgi(&out.stdout).unwrap_or_else(|| {
        plain(
            StatusCode::INTERNAL_SERVER_ERROR,
            format!("bad CGI output: {}", String::from_utf8_lossy(&out.stderr)),
        )
    })
}

/// Splits CGI output into status, headers and body.
fn parse_cgi(out: &[u8]) -> Option<Response<Body>> {
    let split = out
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .map(|p| (p, 4))
        .or_else(|| out.windows(2).position(|w| w == b"\n\n").map(|p| (p, 2)))?;
    let (head, body) = (&out[..split.0], &out[split.0 + split.1..]);
    let mut status = StatusCode::OK;
    let mut builder = Response::builder();
    for line in String::from_utf8_lossy(head).lines() {
        let Some((k, v)) = line.split_once(':') else {
            continue;
        };
        let v = v.trim();
        if k.eq_ignore_ascii_case("status") {
            status = v
                .split_whitespace()
                .next()?
                .parse::<u16>()
                .ok()
                .and_then(|s| StatusCode::from_u16(s).ok())?;
        } else {
            builder = builder.header(k.trim(), HeaderValue::from_str(v).ok()?);
        }
    }
    builder.status(status).body(Body::from(body.to_vec())).ok()
}

pub fn plain(status: StatusCode, text: impl Into<String>) -> Response<Body> {
    Response::builder()
        .status(status)
        .header("content-type", "text/plain")
        .body(Body::from(text.into()))
        .expect("valid response")
}

/// 401 asking for basic credentials, as GitHub answers git without a token.
pub fn unauthorized() -> Response<Body> {
    Response::builder()
        .status(StatusCode::UNAUTHORIZED)
        .header("www-authenticate", "Basic realm=\"GitHub\"")
        .body(Body::from("Invalid username or token."))
        .expect("valid response")
}
