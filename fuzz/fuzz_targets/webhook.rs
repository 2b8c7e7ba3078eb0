//! The webhook's untrusted input: the signature header checked against the raw body, then the
//! event header and body parsed. Input: `event\nsignature\nbody`.
#![no_main]

use libfuzzer_sys::fuzz_target;
use secrecy::SecretString;

fuzz_target!(|data: &[u8]| {
    let mut parts = data.splitn(3, |b| *b == b'\n');
    let event = String::from_utf8_lossy(parts.next().unwrap_or_default()).into_owned();
    let signature = String::from_utf8_lossy(parts.next().unwrap_or_default()).into_owned();
    let body = parts.next().unwrap_or_default();
    let secrets = [SecretString::from("fuzz-secret".to_owned())];
    let _ = vibeloop::webhook::signature::verify(&secrets, &signature, body);
    let _ = vibeloop::webhook::event::parse(&event, body);
});
