//! `X-Hub-Signature-256` verification: HMAC-SHA256 of the raw body, hex, prefixed `sha256=`,
//! compared in constant time against each configured secret (several while rotating).

use hmac::{Hmac, Mac};
use secrecy::{ExposeSecret, SecretString};
use sha2::Sha256;

type HmacSha256 = Hmac<Sha256>;

/// Why a signature was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum SignatureError {
    #[error("X-Hub-Signature-256 must look like sha256=<64 hex digits>")]
    Malformed,
    #[error("X-Hub-Signature-256 does not match the body for any configured secret")]
    Mismatch,
}

/// Checks `header` (`sha256=<hex>`) against `body` for any of `secrets`.
pub fn verify(secrets: &[SecretString], header: &str, body: &[u8]) -> Result<(), SignatureError> {
    let hex_digest = header
        .trim()
        .strip_prefix("sha256=")
        .ok_or(SignatureError::Malformed)?;
    let mut expected = [0u8; 32];
    hex::decode_to_slice(hex_digest, &mut expected).map_err(|_| SignatureError::Malformed)?;
    let mut matched = false;
    for secret in secrets {
        let mut mac = mac_for(secret);
        mac.update(body);
        // `verify_slice` compares in constant time; every secret is tried so the time taken
        // does not tell which one matched.
        matched |= mac.verify_slice(&expected).is_ok();
    }
    if matched {
        Ok(())
    } else {
        Err(SignatureError::Mismatch)
    }
}

/// The header value GitHub would send for `body` signed with `secret`.
pub fn sign(secret: &SecretString, body: &[u8]) -> String {
    let mut mac = mac_for(secret);
    mac.update(body);
    format!("sha256={}", hex::encode(mac.finalize().into_bytes()))
}

fn mac_for(secret: &SecretString) -> HmacSha256 {
    HmacSha256::new_from_slice(secret.expose_secret().as_bytes())
        .expect("HMAC takes keys of any length")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// GitHub's documented test vector, from `tests/fixtures/github/webhook-signature-test-vector.json`.
    #[test]
    fn githubs_test_vector_verifies() {
        let vector: serde_json::Value = serde_json::from_str(include_str!(
            "../../tests/fixtures/github/webhook-signature-test-vector.json"
        ))
        .unwrap();
        let secret = SecretString::from(vector["secret"].as_str().unwrap().to_owned());
        let payload = vector["payload"].as_str().unwrap().as_bytes();
        let header = vector["X-Hub-Signature-256"].as_str().unwrap();
        assert_eq!(sign(&secret, payload), header);
        assert_eq!(
            verify(std::slice::from_ref(&secret), header, payload),
            Ok(())
        );

        // One changed hex digit, a changed body, a wrong secret: all refused.
        let mut tampered = header.to_owned();
        tampered.replace_range(10..11, if &header[10..11] == "0" { "1" } else { "0" });
        assert_eq!(
            verify(std::slice::from_ref(&secret), &tampered, payload),
            Err(SignatureError::Mismatch)
        );
        assert_eq!(
            verify(&[secret], header, b"Hello, World?"),
            Err(SignatureError::Mismatch)
        );
        let other = SecretString::from("It's a secret to nobody".to_owned());
        assert_eq!(
            verify(&[other], header, payload),
            Err(SignatureError::Mismatch)
        );
    }

    #[test]
    fn any_rotated_secret_verifies() {
        let old = SecretString::from("old".to_owned());
        let new = SecretString::from("new".to_owned());
        let header = sign(&old, b"{}");
        assert_eq!(verify(&[new, old], &header, b"{}"), Ok(()));
    }

    #[test]
    fn malformed_headers_are_refused() {
        let s = [SecretString::from("s".to_owned())];
        for h in [
            "",
            "sha1=abc",
            "sha256=",
            "sha256=zz",
            &format!("sha256={}", "a".repeat(63)),
        ] {
            assert_eq!(
                verify(&s, h, b"{}"),
                Err(SignatureError::Malformed),
                "{h:?}"
            );
        }
    }
}
