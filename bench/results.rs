//! Results benchmark: a generated pytest run of `--tests` tests (each passing but one) with
//! `--mb` MB of output in all — captured output between the results, as `-rA` prints it — is
//! streamed in 16 KiB chunks through the sandbox's buffer as a test gate runs it (head and tail
//! for people, the result lines of all of it kept), then read and judged against every test
//! wanted by name. Prints the time of each step (the generator's own time left out) and the
//! most memory held above the start.
//!
//! `cargo bench --bench results [-- --tests 50000 --mb 100 --runs 3]` (see bench/README.md)

#[path = "args.rs"]
mod args;
use args::arg;

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Instant;

use vibeloop::gates::expect::{Expect, Wanted};
use vibeloop::gates::test_results::{self as results, TestRun};
use vibeloop::sandbox::{CappedBuffer, DEFAULT_OUTPUT_CAP};

/// Counts the bytes held and the most held at once.
struct Counting;

static HELD: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: as System's.
        let p = unsafe { System.alloc(layout) };
        if !p.is_null() {
            let now = HELD.fetch_add(layout.size(), Ordering::Relaxed) + layout.size();
            PEAK.fetch_max(now, Ordering::Relaxed);
        }
        p
    }
    unsafe fn dealloc(&self, p: *mut u8, layout: Layout) {
        // SAFETY: as System's.
        unsafe { System.dealloc(p, layout) };
        HELD.fetch_sub(layout.size(), Ordering::Relaxed);
    }
}

#[global_allocator]
static ALLOC: Counting = Counting;

fn name(i: usize) -> String {
    format!(
        "tests/test_mod{}.py::TestCase{}::test_case_{i}",
        i % 97,
        i % 13
    )
}

/// The run's output, chunk by chunk, as a runner prints it: each test's `-v` line, then the
/// `-rA` sections with what each test printed, the summary, the counts.
fn output(tests: usize, mb: usize, mut chunk: impl FnMut(&[u8])) -> usize {
    let mut written = 0;
    let mut out = String::with_capacity(32 << 10);
    let mut flush = |out: &mut String, force: bool| {
        if force || out.len() >= 16 << 10 {
            chunk(out.as_bytes());
            written += out.len();
            out.clear();
        }
    };
    for i in 0..tests {
        let word = if i == tests / 2 { "FAILED" } else { "PASSED" };
        out.push_str(&format!("{} {word} [{:3}%]\n", name(i), i * 100 / tests));
        flush(&mut out, false);
    }
    let noise = (mb << 20) / tests;
    out.push_str("==================== PASSES ====================\n");
    for i in 0..tests {
        out.push_str(&format!("_____ TestCase{}.test_case_{i} _____\n", i % 13));
        out.push_str("----- Captured stdout call -----\n");
        let mut left = noise;
        while left > 80 {
            out.push_str("some words the test printed while it ran, as tests do, 0123456789\n");
            left = left.saturating_sub(66);
        }
        flush(&mut out, false);
    }
    out.push_str("=========== short test summary info ============\n");
    for i in 0..tests {
        let word = if i == tests / 2 { "FAILED" } else { "PASSED" };
        out.push_str(&format!("{word} {}\n", name(i)));
        flush(&mut out, false);
    }
    out.push_str(&format!(
        "======= 1 failed, {} passed in 812.00s =======\n",
        tests - 1
    ));
    flush(&mut out, true);
    written
}

fn main() {
    let tests: usize = arg("--tests", 50_000);
    let mb: usize = arg("--mb", 100);
    let runs: usize = arg("--runs", 3);
    let expect = Expect {
        baseline: (0..tests).map(|i| Wanted::test(&name(i), None)).collect(),
        ..Expect::default()
    };
    println!("results: {tests} tests, {mb} MB of output, {runs} run(s)");
    for run in 1..=runs {
        // The generator's own time, measured apart and left out of the figures.
        let making = Instant::now();
        output(tests, mb, |c| {
            std::hint::black_box(c);
        });
        let making = making.elapsed();
        let start_held = HELD.load(Ordering::Relaxed);
        PEAK.store(start_held, Ordering::Relaxed);
        let started = Instant::now();
        let mut buf = CappedBuffer::keeping(DEFAULT_OUTPUT_CAP, Some(results::keeps));
        let written = output(tests, mb, |c| buf.push(c));
        let (_text, kept) = buf.finish_kept();
        let kept = kept.expect("the output was cut");
        let streamed = started.elapsed().saturating_sub(making);
        let seen = TestRun::read(&kept).expect("a pytest run");
        let read = started.elapsed() - making - streamed;
        let unmet = expect.check(Some(&seen), "exit code 1");
        let judged = started.elapsed() - making - streamed - read;
        assert_eq!(seen.cases.len(), tests, "every test read");
        assert_eq!(unmet.len(), 1, "one test failed");
        assert_eq!(unmet[0].test, name(tests / 2));
        let peak = PEAK.load(Ordering::Relaxed) - start_held;
        println!(
            "run {run}: {:.1} MB streamed in {:.2} s (kept {:.1} MB), read in {:.2} s, judged in {:.2} s; total {:.2} s, peak {:.1} MB above the start",
            written as f64 / 1e6,
            streamed.as_secs_f64(),
            kept.len() as f64 / 1e6,
            read.as_secs_f64(),
            judged.as_secs_f64(),
            (streamed + read + judged).as_secs_f64(),
            peak as f64 / 1e6,
        );
    }
}
