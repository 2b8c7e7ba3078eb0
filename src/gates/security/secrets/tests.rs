//! Tests of the secret scan. Every token here is built at run time, so the repository itself
//! holds nothing token-shaped.

use super::*;
use crate::gates::security::testing::{Change, TestRepo};

/// `n` characters of a fixed base62 mix (letters of both cases and digits).
fn mix(n: usize) -> String {
    let alphabet: Vec<char> = ('a'..='z').chain('A'..='Z').chain('0'..='9').collect();
    (0..n).map(|i| alphabet[(i * 17 + 5) % 62]).collect()
}

fn upper_mix(n: usize) -> String {
    mix(n * 3)
        .chars()
        .filter(|c| c.is_ascii_uppercase() || c.is_ascii_digit())
        .take(n)
        .collect()
}

/// One fake of every kind, with the kind it must be found as.
fn fakes() -> Vec<(String, SecretKind)> {
    let begin = "-----BEGIN";
    let end = "PRIVATE KEY-----";
    let mut all = vec![
        (format!("{begin} RSA {end}"), SecretKind::PrivateKey),
        (format!("{begin} EC {end}"), SecretKind::PrivateKey),
        (format!("{begin} DSA {end}"), SecretKind::PrivateKey),
        (format!("{begin} OPENSSH {end}"), SecretKind::PrivateKey),
        (format!("{begin} ENCRYPTED {end}"), SecretKind::PrivateKey),
        (format!("{begin} {end}"), SecretKind::PrivateKey),
        (
            format!("{begin} PGP PRIVATE KEY BLOCK-----"),
            SecretKind::PrivateKey,
        ),
        (
            format!("github_pat_{}_{}", mix(22), mix(59)),
            SecretKind::GitHubToken,
        ),
        (format!("AKIA{}", upper_mix(16)), SecretKind::AwsAccessKeyId),
        (format!("ASIA{}", upper_mix(16)), SecretKind::AwsAccessKeyId),
        (format!("sk-proj-{}", mix(48)), SecretKind::OpenAiKey),
        (format!("sk-{}", mix(48)), SecretKind::OpenAiKey),
        (
            format!("sk-ant-api03-{}", mix(80)),
            SecretKind::AnthropicKey,
        ),
        (format!("AIza{}", mix(35)), SecretKind::GoogleApiKey),
        (format!("sk_live_{}", mix(24)), SecretKind::StripeLiveKey),
        (format!("rk_live_{}", mix(24)), SecretKind::StripeLiveKey),
    ];
    for p in ["ghp", "gho", "ghu", "ghs", "ghr"] {
        all.push((format!("{p}_{}", mix(36)), SecretKind::GitHubToken));
    }
    all.push((format!("ghp_{}", "a".repeat(36)), SecretKind::GitHubToken));
    for p in ["xoxa", "xoxb", "xoxp", "xoxr", "xoxs"] {
        let token = format!("{p}-1234567890-1234567890123-{}", mix(24));
        all.push((token, SecretKind::SlackToken));
    }
    all
}

#[test]
fn every_kind_is_found_in_common_settings() {
    for (token, kind) in fakes() {
        for line in [
            token.clone(),
            format!("TOKEN = \"{token}\""),
            format!("    headers = {{'Authorization': 'Bearer {token}'}}"),
            format!("export KEY={token} # set"),
            format!("x = \"header\\n{token}\""),
        ] {
            let hits = scan_line(line.as_bytes());
            assert_eq!(hits.len(), 1, "{line}: {hits:?}");
            assert_eq!(hits[0].kind, kind, "{line}");
            assert_eq!(line[hits[0].column..].get(..4), Some(&token[..4]), "{line}");
        }
    }
}

#[test]
fn ordinary_code_and_data_are_not_secrets() {
    use base64::Engine as _;
    let data: Vec<u8> = (0..48u8)
        .map(|i| i.wrapping_mul(37).wrapping_add(11))
        .collect();
    let b64 = base64::engine::general_purpose::STANDARD.encode(&data);
    let sha = "3f786850e387550fdab836ed7e6dc881de23001b";
    let begin = "-----BEGIN";
    let lines = [
        format!("commit = \"{sha}\"  # {}", sha.to_uppercase()),
        "id = uuid.UUID('123e4567-e89b-12d3-a456-426614174000')".to_owned(),
        format!("BLOB = base64.b64decode(\"{b64}\")"),
        format!("{begin} CERTIFICATE-----"),
        format!("{begin} PUBLIC KEY-----"),
        format!("{begin} RSA PRIVATE KEY"),
        "def task_runner(ghp_token, sk_test_key): return desk-top".to_owned(),
        format!("name = \"ghp_{}\"", mix(20)),
        format!("mask-{}", mix(40)),
        format!("sk-{}", "very-long-kebab-case-css-class-name-here"),
        format!("AKIA{}", upper_mix(15)),
        format!("AKIA{}", upper_mix(17)),
        format!("AKIA{}EXAMPLE", upper_mix(9)),
        format!("AKIA{}abc", upper_mix(16)),
        format!("AIza{}", mix(36)),
        format!("xoxb-{}", "not-a-token-at-all-really"),
        format!("my_github_pat_{}", mix(60)),
        "h = hashlib.sha256(b'data').hexdigest()  # sk-".to_owned(),
    ];
    for line in &lines {
        assert_eq!(scan_line(line.as_bytes()), [], "{line}");
    }
}

#[test]
fn added_lines_are_scanned_and_messages_do_not_echo_secrets() {
    let t = TestRepo::new();
    let old_token = format!("ghp_{}", mix(36));
    let base_file = format!("a = 1\nOLD = '{old_token}'\n");
    let base = t.commit(
        None,
        &[
            ("app.py", Change::Write(base_file.as_bytes())),
            ("moved.py", Change::Write(base_file.as_bytes())),
            ("gone.py", Change::Write(base_file.as_bytes())),
        ],
    );
    let new_token = format!("AKIA{}", upper_mix(16));
    let edited = format!("a = 1\nOLD = '{old_token}'\nb = 2\nKEY = \"{new_token}\"\n");
    let fresh = format!(
        "# config\n\n\nSLACK = 'xoxb-{}-{}'\n",
        "1234567890",
        mix(30)
    );
    let mut binary = b"\x00\x01".to_vec();
    binary.extend_from_slice(new_token.as_bytes());
    let head = t.commit(
        Some(base),
        &[
            ("app.py", Change::Write(edited.as_bytes())),
            ("moved.py", Change::Delete),
            ("pkg/moved.py", Change::Write(base_file.as_bytes())),
            ("gone.py", Change::Write(b"a = 1\n")),
            ("new/settings.py", Change::Write(fresh.as_bytes())),
            ("blob.bin", Change::Write(&binary)),
        ],
    );
    let found = scan_diff(&t.repo, base, head).unwrap();
    let places: Vec<_> = found
        .iter()
        .map(|a| (a.path.as_str(), a.start_line, a.start_column))
        .collect();
    assert_eq!(
        places,
        [("app.py", 4, Some(8)), ("new/settings.py", 4, Some(10))]
    );
    for a in &found {
        assert_eq!(a.title.as_deref(), Some(TITLE));
        assert_eq!(a.level, Level::Failure);
        assert!(!a.message.contains(&new_token[..5]), "{}", a.message);
        assert!(!a.message.contains("xoxb-1"), "{}", a.message);
    }
    assert!(found[0].message.contains("AWS access key id (AKIA…)"));
    assert!(found[1].message.contains("Slack token (xoxb…)"));
}

#[test]
fn gitattributes_cannot_mark_a_file_binary_to_hide_it() {
    let t = TestRepo::new();
    // A committed .gitattributes, and one libgit2 certainly reads in a bare repository.
    let info = t.repo.path().join("info");
    std::fs::create_dir_all(&info).unwrap();
    std::fs::write(info.join("attributes"), "*.py binary\n").unwrap();
    let base = t.commit(None, &[(".gitattributes", Change::Write(b"*.py binary\n"))]);
    let text = format!("KEY = 'sk-ant-api03-{}'\n", mix(40));
    let head = t.commit(Some(base), &[("k.py", Change::Write(text.as_bytes()))]);
    let found = scan_diff(&t.repo, base, head).unwrap();
    assert_eq!(found.len(), 1, "{found:?}");
    assert!(found[0].message.contains("Anthropic API key (sk-a…)"));
}

#[test]
fn private_key_blocks_are_found_without_echo() {
    let t = TestRepo::new();
    let base = t.commit(None, &[("README.md", Change::Write(b"# x\n"))]);
    let label = format!("OPENSSH {}", "PRIVATE KEY");
    let key = format!(
        "-----BEGIN {label}-----\n{}\n-----END {label}-----\n",
        mix(70)
    );
    let head = t.commit(
        Some(base),
        &[("deploy/id_ed25519", Change::Write(key.as_bytes()))],
    );
    let found = scan_diff(&t.repo, base, head).unwrap();
    assert_eq!(found.len(), 1, "{found:?}");
    assert_eq!(
        (found[0].path.as_str(), found[0].start_line),
        ("deploy/id_ed25519", 1)
    );
    assert!(
        found[0].message.contains("adds a private key"),
        "{}",
        found[0].message
    );
    assert!(!found[0].message.contains(&mix(70)[..8]));
}
