//! `.github/hive.yml`, written by anyone who can push to the repository.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let _ = vibeloop::config::repo::HiveConfig::parse(&text);
});
