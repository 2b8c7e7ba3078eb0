//! Secrets: credentials in the lines a change adds. Only added lines of the diff `base..head`
//! are scanned (renames are followed, so a moved file is not new), with plain byte scanning for
//! the shapes of well-known credentials (see [`SecretKind`]).
//!
//! A token must start at a word boundary (not after a letter, digit, `_` or `-`, unless that
//! is the `n` of a `\n`-style escape) and have its issuer's length and alphabet. Generic `sk-`
//! keys also need a digit, so that long kebab-case names do not match; AWS ids containing
//! `EXAMPLE` (AWS's documented sample keys) are let through. JWTs are not looked for: sample
//! tokens are common in tests and cannot be told apart from live ones.
//!
//! Binary files (a NUL byte in the first 8000 bytes, git's own test) are skipped. The test is
//! made here on the blob rather than by libgit2, so a `.gitattributes` marking files binary
//! cannot hide them. Messages never echo a secret: at most its first 4 characters.

use std::collections::HashMap;

use git2::{DiffFindOptions, DiffOptions, Oid, Repository};

use crate::annotation::{Annotation, Level};
use SecretKind::*;

/// Title of secret findings.
pub const TITLE: &str = "secret";

/// What a token-shaped string looks like.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SecretKind {
    /// `-----BEGIN … PRIVATE KEY-----` (RSA, EC, DSA, OPENSSH, PGP, encrypted, PKCS#8).
    PrivateKey,
    /// `ghp_`, `gho_`, `ghu_`, `ghs_`, `ghr_` + 36 base62, or `github_pat_…`.
    GitHubToken,
    /// `AKIA` or `ASIA` + 16 uppercase letters or digits.
    AwsAccessKeyId,
    /// `xoxa-`, `xoxb-`, `xoxp-`, `xoxr-`, `xoxs-` + 20 or more.
    SlackToken,
    /// `sk-` + 32 or more, with a digit.
    OpenAiKey,
    /// `sk-ant-` + 32 or more.
    AnthropicKey,
    /// `AIza` + 35.
    GoogleApiKey,
    /// `sk_live_` or `rk_live_` + 16 or more.
    StripeLiveKey,
}

impl SecretKind {
    pub fn describe(self) -> &'static str {
        match self {
            Self::PrivateKey => "private key",
            Self::GitHubToken => "GitHub token",
            Self::AwsAccessKeyId => "AWS access key id",
            Self::SlackToken => "Slack token",
            Self::OpenAiKey => "OpenAI-style API key",
            Self::AnthropicKey => "Anthropic API key",
            Self::GoogleApiKey => "Google API key",
            Self::StripeLiveKey => "Stripe live key",
        }
    }
}

/// One token-shaped string on a line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Hit {
    pub kind: SecretKind,
    /// Byte offset of its first character, from 0.
    pub column: usize,
    /// Its first (at most) 4 characters, for messages.
    pub start: String,
}

fn base62(b: u8) -> bool {
    b.is_ascii_alphanumeric()
}
fn word(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_'
}
fn dashed(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_' || b == b'-'
}
fn upper(b: u8) -> bool {
    b.is_ascii_uppercase() || b.is_ascii_digit()
}
fn slack(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'-'
}

/// One token shape: one of `prefixes`, then `min` or more bytes of `body`.
struct Rule {
    prefixes: &'static [&'static [u8]],
    kind: SecretKind,
    body: fn(u8) -> bool,
    min: usize,
    /// Exactly `min` bytes, and no letter or digit right after them.
    exact: bool,
    needs_digit: bool,
}

impl Rule {
    const fn new(
        prefixes: &'static [&'static [u8]],
        kind: SecretKind,
        body: fn(u8) -> bool,
        min: usize,
    ) -> Self {
        Self {
            prefixes,
            kind,
            body,
            min,
            exact: false,
            needs_digit: false,
        }
    }

    const fn exact(self) -> Self {
        Self {
            exact: true,
            ..self
        }
    }

    const fn with_digit(self) -> Self {
        Self {
            needs_digit: true,
            ..self
        }
    }
}

/// In order: at one position the first matching rule wins (`sk-ant-` before `sk-`).
const RULES: &[Rule] = &[
    Rule::new(
        &[b"ghp_", b"gho_", b"ghu_", b"ghs_", b"ghr_"],
        GitHubToken,
        base62,
        36,
    ),
    Rule::new(&[b"github_pat_"], GitHubToken, word, 50),
    Rule::new(&[b"AKIA", b"ASIA"], AwsAccessKeyId, upper, 16).exact(),
    Rule::new(
        &[b"xoxa-", b"xoxb-", b"xoxp-", b"xoxr-", b"xoxs-"],
        SlackToken,
        slack,
        20,
    )
    .with_digit(),
    Rule::new(&[b"sk-ant-"], AnthropicKey, dashed, 32),
    Rule::new(&[b"sk-"], OpenAiKey, dashed, 32).with_digit(),
    Rule::new(&[b"AIza"], GoogleApiKey, dashed, 35).exact(),
    Rule::new(&[b"sk_live_", b"rk_live_"], StripeLiveKey, base62, 16),
];

/// Every credential-shaped string on one line.
pub fn scan_line(line: &[u8]) -> Vec<Hit> {
    let mut hits = Vec::new();
    for at in 0..line.len() {
        let rest = &line[at..];
        // After `\n` or `\t` in a string literal counts as a boundary.
        let boundary = at == 0 || !dashed(line[at - 1]) || (at >= 2 && line[at - 2] == b'\\');
        if let Some(kind) = RULES
            .iter()
            .find_map(|r| matches(r, rest))
            .filter(|_| boundary)
        {
            hits.push(Hit {
                kind,
                column: at,
                start: String::from_utf8_lossy(rest.get(..4).unwrap_or(rest)).into_owned(),
            });
        } else if private_key_header(rest) {
            hits.push(Hit {
                kind: PrivateKey,
                column: at,
                start: String::new(),
            });
        }
    }
    hits
}

fn matches(rule: &Rule, text: &[u8]) -> Option<SecretKind> {
    let body = rule.prefixes.iter().find_map(|p| text.strip_prefix(*p))?;
    let len = body.iter().take_while(|b| (rule.body)(**b)).count();
    let fits = if rule.exact {
        len == rule.min && !body.get(len).is_some_and(u8::is_ascii_alphanumeric)
    } else {
        len >= rule.min
    };
    let body = &body[..len];
    let digit_ok = !rule.needs_digit || body.iter().any(u8::is_ascii_digit);
    let sample = rule.kind == AwsAccessKeyId && body.windows(7).any(|w| w == b"EXAMPLE");
    (fits && digit_ok && !sample).then_some(rule.kind)
}

/// `-----BEGIN <LABEL>-----` where the label ends in `PRIVATE KEY` (or `PRIVATE KEY BLOCK`).
fn private_key_header(text: &[u8]) -> bool {
    const DASHES: &[u8] = b"-----";
    let Some(label) = text
        .strip_prefix(DASHES)
        .and_then(|t| t.strip_prefix(b"BEGIN "))
    else {
        return false;
    };
    let len = label
        .iter()
        .take_while(|b| b.is_ascii_uppercase() || b.is_ascii_digit() || **b == b' ')
        .count();
    let (name, after) = label.split_at(len);
    after.starts_with(DASHES)
        && (name.ends_with(b"PRIVATE KEY") || name.ends_with(b"PRIVATE KEY BLOCK"))
}

/// Git's binary test: a NUL byte in the first 8000 bytes.
fn looks_binary(content: &[u8]) -> bool {
    content.iter().take(8000).any(|b| *b == 0)
}

/// Scans the lines `head` adds to `base` (commit or tree ids); one Failure annotation per hit.
pub fn scan_diff(repo: &Repository, base: Oid, head: Oid) -> Result<Vec<Annotation>, git2::Error> {
    let old = repo.find_object(base, None)?.peel_to_tree()?;
    let new = repo.find_object(head, None)?.peel_to_tree()?;
    let mut opts = DiffOptions::new();
    opts.context_lines(0)
        .force_text(true)
        .ignore_submodules(true);
    let mut diff = repo.diff_tree_to_tree(Some(&old), Some(&new), Some(&mut opts))?;
    diff.find_similar(Some(DiffFindOptions::new().renames(true)))?;
    let mut binary: HashMap<Oid, bool> = HashMap::new();
    let mut found = Vec::new();
    diff.foreach(
        &mut |_, _| true,
        None,
        None,
        Some(&mut |delta, _, line| {
            if line.origin() != '+' {
                return true;
            }
            let id = delta.new_file().id();
            let skip = *binary.entry(id).or_insert_with(|| {
                // A blob that cannot be read is scanned as text (its lines came from it).
                repo.find_blob(id).is_ok_and(|b| looks_binary(b.content()))
            });
            if skip {
                return true;
            }
            let path = delta
                .new_file()
                .path_bytes()
                .map(|p| String::from_utf8_lossy(p).into_owned())
                .unwrap_or_default();
            let number = line.new_lineno().unwrap_or(1);
            for hit in scan_line(line.content()) {
                found.push(annotation(&path, number, &hit));
            }
            true
        }),
    )?;
    Ok(found)
}

fn annotation(path: &str, line: u32, hit: &Hit) -> Annotation {
    let what = hit.kind.describe();
    let message = if hit.kind == PrivateKey {
        format!(
            "This line adds a {what}. Remove it from the change, treat the key as leaked and \
             replace it; load keys from a file or the environment outside the repository."
        )
    } else {
        format!(
            "This line adds what looks like a secret: {what} ({}…). Remove it and revoke it if \
             it is real; read secrets from the environment. A test fake must not have a real \
             token's shape: build it at run time.",
            hit.start
        )
    };
    let column = u32::try_from(hit.column + 1).unwrap_or(0);
    Annotation::new(path, line, Level::Failure, message)
        .with_column(column)
        .with_title(TITLE)
}

#[cfg(test)]
mod tests;
