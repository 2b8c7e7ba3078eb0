//! The fuzz targets' bodies (`fuzz/bodies.rs`) in every test run: each target's seeds, the
//! local corpus if a fuzzing run left one, and a few thousand deterministic mutations of them.
//! Not coverage-guided (that is `fuzz/run.sh`): a check that what the seeds reach still holds,
//! and that a parser change does not panic on their near neighbours.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::Path;

use fastrand::Rng;

#[path = "../../fuzz/bodies.rs"]
mod bodies;

/// Mutations tried per target.
const MUTATIONS: usize = 3000;

/// Fragments worth putting into inputs: line breaks, separators and the words parsers look for.
const TOKENS: [&[u8]; 14] = [
    b"\n",
    b"\r\n",
    b"\0",
    b"/hive ",
    b": ",
    b"- ",
    b"```",
    b"{",
    b"}",
    b"[",
    b"]",
    b"\"",
    b"@@ -1,2 +1,3 @@\n",
    b"FAILED ",
];

/// `input` changed once: a byte flipped, bytes inserted or removed, a range repeated, a token
/// put in, or spliced with `other`.
fn mutate(rng: &mut Rng, input: &[u8], other: &[u8]) -> Vec<u8> {
    let mut v = input.to_vec();
    let at = rng.usize(..v.len() + 1);
    match rng.usize(..6) {
        0 if !v.is_empty() => {
            let i = rng.usize(..v.len());
            v[i] ^= 1 << rng.u32(..8);
        }
        1 => v.insert(at, rng.u8(..)),
        2 if at < v.len() => {
            let end = (at + 1 + rng.usize(..16)).min(v.len());
            v.drain(at..end);
        }
        3 if at < v.len() => {
            let end = (at + 1 + rng.usize(..64)).min(v.len());
            let piece = v[at..end].to_vec();
            v.splice(at..at, piece);
        }
        4 => {
            let token = TOKENS[rng.usize(..TOKENS.len())];
            v.splice(at..at, token.iter().copied());
        }
        _ => {
            let from = rng.usize(..other.len() + 1);
            v.truncate(at);
            v.extend_from_slice(&other[from..]);
        }
    }
    v
}

/// The files of `dir` (none if it is missing), in name order.
fn files(dir: &Path) -> Vec<Vec<u8>> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return vec![];
    };
    let mut paths: Vec<_> = entries.flatten().map(|e| e.path()).collect();
    paths.sort();
    paths
        .into_iter()
        .filter(|p| p.is_file())
        .filter_map(|p| std::fs::read(p).ok())
        .collect()
}

/// Runs `body` on `input`; a panic fails the test with the target and the input shown.
fn run(name: &str, body: fn(&[u8]), input: &[u8]) {
    if catch_unwind(AssertUnwindSafe(|| body(input))).is_err() {
        panic!(
            "fuzz target {name} panicked on {:?} (save it under fuzz/seeds/{name}/ to keep it)",
            String::from_utf8_lossy(input)
        );
    }
}

#[test]
fn every_fuzz_target_holds_on_its_seeds_and_their_mutations() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz");
    for (name, body) in bodies::TARGETS {
        let mut inputs = files(&root.join("seeds").join(name));
        inputs.extend(files(&root.join("corpus").join(name)));
        if inputs.is_empty() {
            inputs.push(Vec::new());
        }
        for input in &inputs {
            run(name, body, input);
        }
        // Seeded: the same inputs every run.
        let mut rng = Rng::with_seed(0x9E37_79B9_7F4A_7C15 ^ name.len() as u64);
        for _ in 0..MUTATIONS {
            let a = &inputs[rng.usize(..inputs.len())];
            let b = &inputs[rng.usize(..inputs.len())];
            let mut input = mutate(&mut rng, a, b);
            for _ in 0..rng.usize(..4) {
                input = mutate(&mut rng, &input, b);
            }
            run(name, body, &input);
        }
    }
}
