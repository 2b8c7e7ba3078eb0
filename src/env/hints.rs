//! What a failed setup's output says to do, in one line: a TLS certificate nobody in the
//! sandbox trusts (a network that re-signs TLS: name `VIBELOOP_SANDBOX_CA_BUNDLE`), or a
//! toolchain the project or a dependency cannot use (name the versions and `image:`).

use super::setup::Network;

/// What TLS clients print when a certificate is not one they trust (pip, cargo, npm, go, curl).
const CERTIFICATE_ERRORS: [&str; 9] = [
    "CERTIFICATE_VERIFY_FAILED",
    "certificate verify failed",
    "SSL certificate problem",
    "unable to get local issuer certificate",
    "self-signed certificate in certificate chain",
    "self signed certificate in certificate chain",
    "x509: certificate signed by unknown authority",
    "UNABLE_TO_GET_ISSUER_CERT_LOCALLY",
    "SELF_SIGNED_CERT_IN_CHAIN",
];

/// What `output` says of a TLS certificate nobody trusts: its line from the error's name on
/// (`[SSL: CERTIFICATE_VERIFY_FAILED] certificate verify failed: …`), up to 160 characters.
pub fn certificate_line(output: &str) -> Option<String> {
    let (line, at) = output.lines().find_map(|l| {
        let at = CERTIFICATE_ERRORS.iter().filter_map(|m| l.find(m)).min()?;
        Some((l, at))
    })?;
    // From the bracket that opens the error's name (`[SSL: …]`), when there is one just before.
    let start = line[..at].rfind('[').filter(|b| at - b <= 8).unwrap_or(at);
    let rest = &line[start..];
    // A quoted error (Python's repr of it) ends at its quote.
    let rest = &rest[..rest.find(['\'', '"']).unwrap_or(rest.len())];
    let mut said: String = rest.chars().take(160).collect();
    // Closing brackets of what it was quoted in, not its own.
    while said.ends_with(')') && said.matches(')').count() > said.matches('(').count() {
        said.pop();
    }
    Some(said.trim_end().to_owned())
}

/// When setup's `output` shows a certificate nobody trusts (a network that re-signs TLS), what
/// to do: give the sandbox the host's CA bundle, or, when one is given, check it is the one
/// the network needs.
pub fn certificate_hint(output: &str, network: &Network) -> Option<String> {
    let line = certificate_line(output)?;
    Some(match &network.ca_bundle {
        None => format!(
            "Setup could not verify a registry's TLS certificate (`{line}`): this network re-signs TLS. Give the sandbox the host's CA bundle: VIBELOOP_SANDBOX_CA_BUNDLE=/etc/ssl/certs/ca-certificates.crt (`vibeloop doctor` checks it)."
        ),
        Some(ca) => format!(
            "Setup could not verify a registry's TLS certificate (`{line}`) though VIBELOOP_SANDBOX_CA_BUNDLE={} is given: check that bundle holds the certificate this network signs with.",
            ca.display()
        ),
    })
}

/// When setup's `output` shows a toolchain older (or newer) than the project or a dependency
/// needs, which versions, and what to change.
pub fn toolchain_hint(output: &str) -> Option<String> {
    const SAYS: [(&str, &str); 4] = [
        // cargo: `rustc 1.85.1 is not supported by the following package: x@1 requires rustc 1.88`
        ("is not supported by the following package", "Rust"),
        // pip: `Package 'x' requires a different Python: 3.13.5 not in '<3.12'`
        ("requires a different Python", "Python"),
        // go: `go.mod requires go >= 1.25 (running go 1.24.4; GOTOOLCHAIN=local)`
        ("(running go ", "Go"),
        // npm: `npm WARN EBADENGINE Unsupported engine`, `engine "node" is incompatible`
        ("is incompatible with this module", "Node"),
    ];
    let lines: Vec<&str> = output.lines().collect();
    let (at, what) = lines.iter().enumerate().find_map(|(i, l)| {
        SAYS.iter()
            .find(|(m, _)| l.contains(m))
            .map(|(_, w)| (i, *w))
    })?;
    let said: Vec<&str> = lines[at..]
        .iter()
        .take(2)
        .map(|l| l.trim())
        .filter(|l| !l.is_empty())
        .collect();
    let said: String = said.join(" ").chars().take(240).collect();
    Some(format!(
        "The project (or a dependency it resolves to) needs another {what} than the image has (`{said}`): \
         set `image:` in .github/hive.yml to one with that {what}, or pin the dependency to a version the image's {what} supports (a lockfile does)."
    ))
}

/// What to do about a failed setup, when its output says: a certificate nobody trusts, or a
/// toolchain the project cannot use.
pub fn setup_hint(output: &str, network: &Network) -> Option<String> {
    certificate_hint(output, network).or_else(|| toolchain_hint(output))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_certificate_nobody_trusts_names_the_setting_that_fixes_it() {
        let pip = "WARNING: Retrying ... SSLError(SSLCertVerificationError(1, '[SSL: CERTIFICATE_VERIFY_FAILED] certificate verify failed: self-signed certificate in certificate chain (_ssl.c:1000)'))\nERROR: Could not find a version that satisfies the requirement pytest";
        let none = Network::default();
        let hint = certificate_hint(pip, &none).unwrap();
        assert!(
            hint.contains("VIBELOOP_SANDBOX_CA_BUNDLE=/etc/ssl/certs/ca-certificates.crt"),
            "{hint}"
        );
        let pip = "WARNING: Retrying (Retry(total=0)) after connection broken by 'SSLError(SSLCertVerificationError(1, '[SSL: CERTIFICATE_VERIFY_FAILED] certificate verify failed: self-signed certificate in certificate chain (_ssl.c:1000)')))': /simple/pip/";
        assert_eq!(
            certificate_line(pip).as_deref(),
            Some(
                "[SSL: CERTIFICATE_VERIFY_FAILED] certificate verify failed: self-signed certificate in certificate chain (_ssl.c:1000)"
            )
        );
        let cargo = "error: failed to download from `https://x/y`\nCaused by:\n  [60] SSL peer certificate or SSH remote key was not OK (SSL certificate problem: unable to get local issuer certificate)";
        let given = Network {
            ca_bundle: Some("/etc/my-ca.pem".into()),
            ..Network::default()
        };
        let hint = certificate_hint(cargo, &given).unwrap();
        assert!(
            hint.contains("though VIBELOOP_SANDBOX_CA_BUNDLE=/etc/my-ca.pem is given"),
            "{hint}"
        );
        assert_eq!(certificate_hint("npm ERR! 404 Not Found", &none), None);
    }

    #[test]
    fn a_toolchain_the_project_cannot_use_is_named() {
        let cargo = "error: rustc 1.85.1 is not supported by the following package:\n  bitflags@2.9.0 requires rustc 1.88\nEither upgrade rustc or select compatible dependency versions with";
        let hint = toolchain_hint(cargo).unwrap();
        assert!(
            hint.contains("needs another Rust than the image has"),
            "{hint}"
        );
        assert!(
            hint.contains("bitflags@2.9.0 requires rustc 1.88"),
            "{hint}"
        );
        let go = "go: go.mod requires go >= 1.25 (running go 1.24.4; GOTOOLCHAIN=local)";
        assert!(toolchain_hint(go).unwrap().contains("another Go"));
        let pip = "ERROR: Package 'calc' requires a different Python: 3.13.5 not in '<3.12'";
        assert!(toolchain_hint(pip).unwrap().contains("another Python"));
        assert_eq!(toolchain_hint("error: could not compile `x`"), None);
    }
}
