//! A forge that redirects git elsewhere never gets the installation token sent there: neither
//! in the first request's header nor to the credential callback's ask.

use std::sync::{Arc, Mutex};

use axum::Router;
use axum::extract::{Request, State};
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use secrecy::SecretString;
use vibeloop::ids::RepoName;
use vibeloop::workspace::{Author, Workspace};

/// The `Authorization` headers another host was sent (one entry per request, `None` without).
type Seen = Arc<Mutex<Vec<Option<String>>>>;

/// Serves `app` on 127.0.0.1; its port.
async fn serve(app: Router) -> u16 {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    port
}

/// Another host: records what it is sent and asks for credentials, as a forge would.
async fn elsewhere(State(seen): State<Seen>, req: Request) -> Response {
    let auth = req.headers().get(header::AUTHORIZATION);
    let auth = auth.map(|v| v.to_str().unwrap_or_default().to_owned());
    seen.lock().unwrap().push(auth);
    let ask = [(header::WWW_AUTHENTICATE, "Basic realm=\"elsewhere\"")];
    (StatusCode::UNAUTHORIZED, ask).into_response()
}

/// A forge that sends every request on to the same path on another host, and what that host
/// was sent.
async fn redirecting() -> (u16, Seen) {
    let seen: Seen = Arc::default();
    let other = serve(Router::new().fallback(elsewhere).with_state(seen.clone())).await;
    let forge = serve(Router::new().fallback(move |req: Request| async move {
        let to = match req.uri().path_and_query() {
            Some(pq) => format!("http://localhost:{other}{pq}"),
            None => format!("http://localhost:{other}/"),
        };
        (StatusCode::FOUND, [(header::LOCATION, to)]).into_response()
    }))
    .await;
    (forge, seen)
}

fn assert_no_credentials(seen: &Seen) {
    let seen = seen.lock().unwrap().clone();
    assert!(
        seen.iter().all(Option::is_none),
        "the other host was sent credentials: {seen:?}"
    );
}

#[tokio::test]
async fn a_fetch_redirected_to_another_host_sends_it_no_token() {
    let (forge, seen) = redirecting().await;
    let dir = tempfile::tempdir().unwrap();
    let base = url::Url::parse(&format!("http://127.0.0.1:{forge}/")).unwrap();
    let ws = Workspace::new(&dir.path().join("data"), &base);
    let repo = RepoName::parse("acme/widgets").unwrap();
    let token = SecretString::from("ghs_redirected_token".to_owned());
    let err = tokio::task::spawn_blocking(move || ws.sync_mirror(&repo, &token).err())
        .await
        .unwrap();
    let err = err.expect("a fetch redirected elsewhere fails");
    assert!(err.to_string().contains("cannot redirect"), "{err}");
    assert_no_credentials(&seen);
}

#[tokio::test]
async fn a_push_redirected_to_another_host_sends_it_no_token() {
    let (_dir, gh, ws, repo) = crate::workspace::setup().await;
    let token = SecretString::from(gh.mint_token(7));
    let (forge, seen) = redirecting().await;
    let pushed = tokio::task::spawn_blocking(move || {
        let git = ws.sync_mirror(&repo, &token).unwrap();
        let wt = ws
            .fresh_worktree(&repo, &git, "feat/T-1", ("main", 64))
            .unwrap();
        std::fs::write(wt.path.join("a.txt"), "a").unwrap();
        ws.commit_all(&wt, "a", &Author::default())
            .unwrap()
            .unwrap();
        // The forge moved the repository behind a redirect to another host.
        let url = format!("http://127.0.0.1:{forge}/acme/widgets.git");
        git.remote_set_url("origin", &url).unwrap();
        ws.push(&repo, "feat/T-1", &token).err()
    })
    .await
    .unwrap();
    let err = pushed.expect("a push redirected elsewhere fails");
    assert!(err.to_string().contains("cannot redirect"), "{err}");
    assert_no_credentials(&seen);
}
