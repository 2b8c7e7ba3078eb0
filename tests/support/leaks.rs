//! Where secrets must not go, for the hostile-input tests: everything a hive [`World`] sent to
//! the model, to GitHub and to its log; and the secrets it holds (the webhook secret, the App's
//! private key, every installation token minted).

use super::hive::*;

/// Everything the bot sent anywhere a secret must not be, with where it was.
pub fn outputs(w: &World) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for role in [
        "architect",
        "breaker",
        "builder",
        "critic",
        "reflector",
        "chat",
    ] {
        for r in w.llm.requests(role) {
            out.push((format!("a {role} prompt"), r.to_string()));
        }
    }
    for c in w.gh.check_runs(REPO) {
        out.push((
            format!("check run {}", c.name),
            serde_json::to_string(&c).unwrap(),
        ));
    }
    let mut numbers = vec![w.issue];
    numbers.extend(w.gh.pulls(REPO).iter().map(|p| p.number));
    for n in numbers {
        for c in w.gh.comments(REPO, n) {
            out.push((format!("comment on #{n}"), c.body));
        }
    }
    for p in w.gh.pulls(REPO) {
        out.push((format!("pull request #{}", p.number), p.body.clone()));
        for c in w.gh.review_comments(REPO, p.number) {
            out.push(("a review comment".into(), c.body));
        }
    }
    out.push(("the bot's log".into(), w.bot.log()));
    out
}

/// The world's secrets and `more`, each with what it is.
pub fn secrets(w: &World, more: &[(&str, &str)]) -> Vec<(String, String)> {
    let key_pem = std::fs::read_to_string(super::bot::app_key_path()).unwrap();
    let key_line = key_pem.lines().nth(5).unwrap().to_owned();
    let mut secrets = vec![
        ("the webhook secret".to_owned(), SECRET.to_owned()),
        ("the App's private key".to_owned(), key_line),
    ];
    secrets.extend(more.iter().map(|(w, s)| (w.to_string(), s.to_string())));
    let tokens = w.gh.minted_tokens();
    assert!(
        !tokens.is_empty(),
        "the bot never got an installation token"
    );
    secrets.extend(
        tokens
            .into_iter()
            .map(|t| ("an installation token".to_owned(), t)),
    );
    secrets
}

/// Panics naming the first secret found in an output, and where.
pub fn assert_nothing_leaked(w: &World, more: &[(&str, &str)]) {
    let secrets = secrets(w, more);
    for (place, text) in outputs(w) {
        for (what, secret) in &secrets {
            assert!(!text.contains(secret.as_str()), "{what} is in {place}");
        }
    }
}

/// The answers to `role`'s tool calls, in order, from its last request.
pub fn tool_answers(w: &World, role: &str) -> Vec<String> {
    let last = w.llm.requests(role).last().cloned().unwrap_or_default();
    last["messages"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|m| m["role"] == "tool")
        .filter_map(|m| m["content"].as_str().map(str::to_owned))
        .collect()
}

/// The refusals (`error` kind, message) in the tool results of `role`'s last request.
pub fn refusals(w: &World, role: &str) -> Vec<(String, String)> {
    tool_answers(w, role)
        .iter()
        .filter_map(|a| serde_json::from_str::<serde_json::Value>(a).ok())
        .filter_map(|v| {
            Some((
                v["error"].as_str()?.to_owned(),
                v["message"].as_str()?.to_owned(),
            ))
        })
        .collect()
}
