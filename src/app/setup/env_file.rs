//! The env file `vibeloop setup` leaves behind: the App's credentials as `KEY=value` lines that
//! both `set -a; . ./.env` and dotenv loaders read, created with mode 0600 and never over an
//! existing file.

use std::io::Write as _;
use std::os::unix::fs::OpenOptionsExt as _;
use std::path::Path;

use anyhow::{Context as _, bail};

use super::conversion::Conversion;

/// The file's text. The PEM spans lines, so it is double-quoted; every value is checked to hold
/// nothing a shell or a dotenv loader would expand or end the quotes at.
///
/// `serve` takes the OAuth client only with the logins that may sign in to the dashboard: the
/// App's owner when that is a person; for an organisation's App the lines stay commented out
/// until someone lists the logins.
pub fn render(app: &Conversion, api_url: &str) -> anyhow::Result<String> {
    let mut text = format!(
        "# The GitHub App {slug} (id {id}, {url}), registered by `vibeloop setup`.\n\
         # It holds secrets: keep it private. Load it with `set -a; . FILE; set +a`, then run `vibeloop serve`.\n",
        slug = app.slug,
        id = app.id,
        url = app.html_url,
    );
    let lines = [
        ("GITHUB_APP_ID", app.id.to_string()),
        ("GITHUB_API_URL", api_url.to_owned()),
        ("GITHUB_WEBHOOK_SECRET", app.webhook_secret.clone()),
        ("GITHUB_PRIVATE_KEY", app.pem.trim_end().to_owned()),
    ];
    for (key, value) in lines {
        text.push_str(&line(key, &value)?);
    }
    let oauth = line("VIBELOOP_GITHUB_CLIENT_ID", &app.client_id)?
        + &line("VIBELOOP_GITHUB_CLIENT_SECRET", &app.client_secret)?;
    match app.owner_user() {
        Some(login) => {
            text.push_str("# Signing in to the dashboard with GitHub: who may, comma-separated.\n");
            text.push_str(&oauth);
            text.push_str(&line("VIBELOOP_DASHBOARD_USERS", login)?);
        }
        None => {
            text.push_str(
                "# Signing in to the dashboard with GitHub: uncomment these three lines and list \
                 the logins that may, comma-separated.\n",
            );
            for l in oauth
                .lines()
                .chain(["VIBELOOP_DASHBOARD_USERS=login1,login2"])
            {
                text.push_str(&format!("# {l}\n"));
            }
        }
    }
    Ok(text)
}

fn line(key: &str, value: &str) -> anyhow::Result<String> {
    let plain = |c: char| c.is_ascii_alphanumeric() || "._-:/@+,".contains(c);
    if !value.is_empty() && value.chars().all(plain) {
        Ok(format!("{key}={value}\n"))
    } else if value.chars().any(|c| "\"\\$`".contains(c)) {
        // The value is not shown: it may be a secret.
        bail!("{key} holds a character (\" \\ $ `) an env file cannot carry safely")
    } else {
        Ok(format!("{key}=\"{value}\"\n"))
    }
}

/// Creates `path` with mode 0600 and writes `text`; an existing file is left alone.
pub fn write_new(path: &Path, text: &str) -> anyhow::Result<()> {
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)
        .map_err(|e| match e.kind() {
            std::io::ErrorKind::AlreadyExists => anyhow::anyhow!(
                "{} already exists and `vibeloop setup` never overwrites it",
                path.display()
            ),
            _ => anyhow::Error::new(e).context(format!("cannot create {}", path.display())),
        })?;
    let written = file
        .write_all(text.as_bytes())
        .and_then(|()| file.sync_all());
    if let Err(e) = written {
        let _ = std::fs::remove_file(path);
        return Err(e).with_context(|| format!("cannot write {}", path.display()));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::app::setup::conversion::Owner;

    fn app(login: &str, kind: &str) -> Conversion {
        Conversion {
            id: 7,
            slug: "bot".into(),
            html_url: "https://github.com/apps/bot".into(),
            client_id: "Iv1.abc".into(),
            client_secret: "c5".into(),
            webhook_secret: "w5".into(),
            pem: "-----BEGIN RSA PRIVATE KEY-----\nMIIE\n-----END RSA PRIVATE KEY-----\n".into(),
            owner: Some(Owner {
                login: Some(login.into()),
                kind: Some(kind.into()),
            }),
        }
    }

    #[test]
    fn a_persons_app_lets_its_owner_sign_in() {
        let text = render(&app("octocat", "User"), "https://api.github.com").unwrap();
        for l in [
            "GITHUB_APP_ID=7\n",
            "GITHUB_API_URL=https://api.github.com\n",
            "GITHUB_WEBHOOK_SECRET=w5\n",
            "GITHUB_PRIVATE_KEY=\"-----BEGIN RSA PRIVATE KEY-----\nMIIE\n-----END RSA PRIVATE KEY-----\"\n",
            "\nVIBELOOP_GITHUB_CLIENT_ID=Iv1.abc\n",
            "\nVIBELOOP_GITHUB_CLIENT_SECRET=c5\n",
            "\nVIBELOOP_DASHBOARD_USERS=octocat\n",
        ] {
            assert!(text.contains(l), "{l:?} missing from:\n{text}");
        }
    }

    #[test]
    fn an_organisations_app_leaves_sign_in_commented_out() {
        let text = render(&app("acme", "Organization"), "https://api.github.com").unwrap();
        assert!(
            text.contains("\n# VIBELOOP_GITHUB_CLIENT_ID=Iv1.abc\n"),
            "{text}"
        );
        assert!(
            text.contains("\n# VIBELOOP_GITHUB_CLIENT_SECRET=c5\n"),
            "{text}"
        );
        assert!(
            text.contains("\n# VIBELOOP_DASHBOARD_USERS=login1,login2\n"),
            "{text}"
        );
        assert!(!text.contains("\nVIBELOOP_"), "{text}");
    }

    #[test]
    fn plain_values_stay_bare_and_others_are_quoted_or_refused() {
        assert_eq!(line("A", "Iv1.8a61f9").unwrap(), "A=Iv1.8a61f9\n");
        assert_eq!(line("A", "x y\nz").unwrap(), "A=\"x y\nz\"\n");
        assert_eq!(line("A", "").unwrap(), "A=\"\"\n");
        let err = line("GITHUB_WEBHOOK_SECRET", "s3cr$t")
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("GITHUB_WEBHOOK_SECRET") && !err.contains("s3cr"),
            "{err}"
        );
    }

    #[test]
    fn an_existing_file_is_not_overwritten() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(".env");
        std::fs::write(&path, "KEEP=1\n").unwrap();
        let err = write_new(&path, "NEW=1\n").unwrap_err().to_string();
        assert!(err.contains("already exists"), "{err}");
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "KEEP=1\n");
    }
}
