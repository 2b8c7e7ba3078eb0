//! Checks requests recorded by the fake GitHub against GitHub's own OpenAPI description
//! (`tests/fixtures/github/openapi-subset.json`), with GitHub's validator script.

use std::io::Write as _;

use super::fake_github::Recorded;
use super::payloads::fixtures;

/// Operations GitHub documents that the subset file leaves out; checked by hand instead.
fn outside_subset(r: &Recorded) -> bool {
    let segs: Vec<&str> = r.path.trim_matches('/').split('/').collect();
    matches!(
        (r.method.as_str(), segs.as_slice()),
        // reactions/create-for-issue
        ("POST", ["repos", _, _, "issues", _, "reactions"])
            // issues/create and issues/list-for-repo (the knowledge check's dependency
            // issue): title, body and labels, and the list's `state` and `per_page`.
            | ("POST" | "GET", ["repos", _, _, "issues"])
            // GraphQL: ready-for-review has no REST operation.
            | ("POST", ["graphql"])
            // apps/list-webhook-deliveries and apps/redeliver-webhook-delivery (the sweep):
            // query and path parameters only, no request body.
            | ("GET", ["app", "hook", "deliveries"])
            | ("POST", ["app", "hook", "deliveries", _, "attempts"])
    )
}

/// Fails the test when any recorded REST request does not fit GitHub's description.
pub fn assert_requests_valid(requests: &[Recorded]) {
    let mut file = tempfile::NamedTempFile::new().unwrap();
    let mut n = 0;
    for r in requests
        .iter()
        .filter(|r| !r.path.contains(".git/") && !outside_subset(r))
    {
        let path = if r.query.is_empty() {
            r.path.clone()
        } else {
            format!("{}?{}", r.path, r.query)
        };
        let line = serde_json::json!({ "method": r.method, "path": path, "body": r.body });
        writeln!(file, "{line}").unwrap();
        n += 1;
    }
    assert!(n > 0, "no REST request was recorded");
    let out = std::process::Command::new("python3")
        .arg(fixtures().join("validate_request.py"))
        .arg(file.path())
        .arg("--spec")
        .arg(fixtures().join("openapi-subset.json"))
        .output()
        .expect("python3 runs");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        out.status.success(),
        "requests do not fit GitHub's OpenAPI description (needs python3 with jsonschema and referencing):\n{text}"
    );
}
