//! What a command in a sandbox produced: [`CommandOutput`], and the [`CappedBuffer`] that
//! keeps the head and tail of long output for people and, when asked, every line a reader
//! needs ([`Keep`]) from the whole stream.

use std::time::Duration;

/// Output kept by default: the head and the tail, 64 KiB in all.
pub const DEFAULT_OUTPUT_CAP: usize = 64 * 1024;

/// How a command ended.
#[derive(Debug, Clone)]
pub struct CommandOutput {
    /// The exit code, when the command exited by itself.
    pub exit_code: Option<i32>,
    /// Killed because it ran past its timeout.
    pub timed_out: bool,
    /// Killed by the kernel for using more memory than the sandbox allows.
    pub oom_killed: bool,
    /// Killed by the sandbox for another reason (its disk limit), in words for people.
    pub killed: Option<String>,
    /// stdout and stderr interleaved, cut in the middle when over the cap (with a note).
    pub output: String,
    /// When `output` was cut and the command was run with a [`Keep`]: every line of the whole
    /// output it kept, in order (see [`CommandOutput::for_results`]).
    pub kept: Option<String>,
    /// Locked files the command changed, put back after it ([`super::lock`]): one line each.
    pub put_back: Vec<String>,
    pub duration: Duration,
}

impl CommandOutput {
    /// A command that exited by itself with `code` after printing `text`: what the bot says
    /// in a command's place when it refused to run one, and what tests make.
    pub fn exited(code: i32, text: &str) -> Self {
        Self {
            exit_code: Some(code),
            timed_out: false,
            oom_killed: false,
            killed: None,
            output: text.into(),
            kept: None,
            put_back: vec![],
            duration: Duration::from_secs(1),
        }
    }

    /// The text to read results from: the whole output when it was kept whole, else the
    /// lines a [`Keep`] kept of all of it.
    pub fn for_results(&self) -> &str {
        self.kept.as_deref().unwrap_or(&self.output)
    }
}

impl CommandOutput {
    pub fn success(&self) -> bool {
        self.exit_code == Some(0) && !self.timed_out && !self.oom_killed && self.killed.is_none()
    }

    /// Why it was killed, in a word, when it was: out of memory, past its timeout, by the
    /// sandbox (its disk), or by a SIGKILL (exit code 137) from something else.
    pub fn killed_by(&self) -> Option<&'static str> {
        if self.oom_killed {
            Some("ran out of memory")
        } else if self.timed_out {
            Some("timed out")
        } else if self.killed.is_some() || self.exit_code == Some(137) {
            Some("was killed")
        } else {
            None
        }
    }

    /// Of commands run side by side under one `timeout`, why each was killed where the others
    /// may have caused it: out of memory (one cgroup), by the disk (the guard counts every
    /// writer), by a SIGKILL, or timed out while the others ran for more than a tenth of the
    /// limit. One that timed out after the others were done had its time to itself: its
    /// verdict stands.
    pub fn starved(outs: &[CommandOutput], timeout: Duration) -> Vec<Option<&'static str>> {
        outs.iter()
            .enumerate()
            .map(|(i, out)| {
                let why = out.killed_by()?;
                let beside = outs
                    .iter()
                    .enumerate()
                    .filter(|&(j, _)| j != i)
                    .map(|(_, o)| o.duration)
                    .max()
                    .unwrap_or_default();
                (!out.timed_out || beside > timeout / 10).then_some(why)
            })
            .collect()
    }

    /// One short phrase for people: "exit code 1", "timed out after 10 s"...
    pub fn describe(&self) -> String {
        if self.oom_killed {
            return "killed: out of memory".into();
        }
        if let Some(why) = &self.killed {
            return format!("killed: {why}");
        }
        match (self.timed_out, self.exit_code) {
            (true, _) => format!("timed out after {} s", self.duration.as_secs()),
            (false, Some(code)) => format!("exit code {code}"),
            (false, None) => "killed by a signal".into(),
        }
    }

    /// The last `lines` lines of the output.
    pub fn tail(&self, lines: usize) -> String {
        let all: Vec<&str> = self.output.lines().collect();
        all[all.len().saturating_sub(lines)..].join("\n")
    }
}

/// Which lines of a command's whole output to keep beside the capped text: a reader's
/// predicate over one line (without its newline). The lines it keeps are bounded by
/// [`KEPT_CAP`] (head and tail past that); a line longer than [`LONGEST_LINE`] is never kept.
pub type Keep = fn(&str) -> bool;

/// The most a [`Keep`] keeps of one command's output.
pub const KEPT_CAP: usize = 32 << 20;
/// Lines longer than this are nobody's result line.
pub const LONGEST_LINE: usize = 16 << 10;

/// Keeps the first and last `cap / 2` bytes of a stream and counts what falls between; with a
/// [`Keep`], also every line of the whole stream it keeps.
#[derive(Debug)]
pub struct CappedBuffer {
    head: Vec<u8>,
    tail: std::collections::VecDeque<u8>,
    half: usize,
    dropped: u64,
    lines: Option<Box<KeptLines>>,
}

/// The lines a [`Keep`] chose, and the line being read.
#[derive(Debug)]
struct KeptLines {
    keep: Keep,
    /// The line so far (`None` once it grew past [`LONGEST_LINE`]: it is skipped to its end).
    partial: Option<Vec<u8>>,
    kept: CappedBuffer,
}

impl KeptLines {
    fn push(&mut self, mut bytes: &[u8]) {
        while !bytes.is_empty() {
            let (part, ended) = match memchr::memchr(b'\n', bytes) {
                Some(at) => (&bytes[..at], Some(at + 1)),
                None => (bytes, None),
            };
            if let Some(line) = self.partial.as_mut() {
                if line.len() + part.len() > LONGEST_LINE {
                    self.partial = None;
                } else {
                    line.extend_from_slice(part);
                }
            }
            let Some(next) = ended else { break };
            self.end_line();
            bytes = &bytes[next..];
        }
    }

    fn end_line(&mut self) {
        if let Some(line) = self.partial.replace(Vec::new()) {
            let text = String::from_utf8_lossy(&line);
            if (self.keep)(text.trim_end_matches('\r')) {
                self.kept.push(&line);
                self.kept.push(b"\n");
            }
        }
    }
}

impl CappedBuffer {
    pub fn new(cap: usize) -> Self {
        Self {
            head: Vec::new(),
            tail: std::collections::VecDeque::new(),
            half: (cap / 2).max(1),
            dropped: 0,
            lines: None,
        }
    }

    /// Also keeps every line `keep` chooses from the whole stream.
    pub fn keeping(cap: usize, keep: Option<Keep>) -> Self {
        let mut buf = Self::new(cap);
        buf.lines = keep.map(|keep| {
            Box::new(KeptLines {
                keep,
                partial: Some(Vec::new()),
                kept: CappedBuffer::new(KEPT_CAP),
            })
        });
        buf
    }

    pub fn push(&mut self, mut bytes: &[u8]) {
        if let Some(lines) = self.lines.as_mut() {
            lines.push(bytes);
        }
        if self.head.len() < self.half {
            let n = bytes.len().min(self.half - self.head.len());
            self.head.extend_from_slice(&bytes[..n]);
            bytes = &bytes[n..];
        }
        self.tail.extend(bytes);
        let over = self.tail.len().saturating_sub(self.half);
        if over > 0 {
            self.tail.drain(..over);
            self.dropped += over as u64;
        }
    }

    /// The capped text and, when it was cut, the lines a [`Keep`] kept of the whole stream.
    pub fn finish_kept(mut self) -> (String, Option<String>) {
        let lines = self.lines.take();
        let cut = self.dropped > 0;
        let text = self.finish();
        let kept = lines.filter(|_| cut).map(|mut l| {
            l.end_line();
            l.kept.finish()
        });
        (text, kept)
    }

    /// The kept text, with a note where bytes were cut.
    pub fn finish(self) -> String {
        let mut out = String::from_utf8_lossy(&self.head).into_owned();
        if self.dropped > 0 {
            out.push_str(&format!("\n[… {} bytes of output cut …]\n", self.dropped));
        }
        let tail: Vec<u8> = self.tail.into_iter().collect();
        out.push_str(&String::from_utf8_lossy(&tail));
        out
    }
}

/// How many bytes a command wrote in all, from the output a [`CappedBuffer`] kept of it (its
/// note of what it cut counted back in).
pub fn output_bytes(output: &str) -> usize {
    let cut = output.find("\n[… ").and_then(|at| {
        let rest = &output[at + "\n[… ".len()..];
        let (n, _) = rest.split_once(" bytes of output cut …]\n")?;
        let marker = "\n[… ".len() + n.len() + " bytes of output cut …]\n".len();
        Some((n.parse::<usize>().ok()?, marker))
    });
    match cut {
        Some((dropped, marker)) => output.len() - marker + dropped,
        None => output.len(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_kill_the_others_may_have_caused_is_in_doubt() {
        let secs = |code: i32, s: u64| CommandOutput {
            duration: Duration::from_secs(s),
            ..CommandOutput::exited(code, "")
        };
        let timed_out = |s: u64| CommandOutput {
            exit_code: None,
            timed_out: true,
            ..secs(0, s)
        };
        let limit = Duration::from_secs(100);
        // Timed out after the others were done in 5 s: it had its time to itself.
        let alone = CommandOutput::starved(&[timed_out(100), secs(0, 5)], limit);
        assert_eq!(alone, [None, None]);
        // Timed out while another ran 30 s of it; the other's exit code 137 is a kill too.
        let shared = CommandOutput::starved(&[timed_out(100), secs(137, 30)], limit);
        assert_eq!(shared, [Some("timed out"), Some("was killed")]);
        let oom = CommandOutput {
            oom_killed: true,
            exit_code: None,
            ..secs(0, 1)
        };
        let shared = CommandOutput::starved(&[oom, secs(1, 1)], limit);
        assert_eq!(shared, [Some("ran out of memory"), None]);
    }

    #[test]
    fn capped_buffer_keeps_head_and_tail() {
        let mut b = CappedBuffer::new(10);
        b.push(b"abc");
        b.push(b"defghijklmnopqrstuvwxyz");
        let s = b.finish();
        assert!(
            s.starts_with("abcde\n[… 16 bytes of output cut …]\nvwxyz"),
            "{s}"
        );
        assert_eq!(output_bytes(&s), 26);
        assert_eq!(output_bytes("hello"), 5);
    }

    #[test]
    fn a_keep_keeps_its_lines_of_the_whole_stream_when_the_text_is_cut() {
        let keep: Keep = |l| l.starts_with("PASSED ");
        let mut b = CappedBuffer::keeping(64, Some(keep));
        for i in 0..1000 {
            // Lines split across pushes, and noise between them.
            b.push(format!("noise {i}\nPASS").as_bytes());
            b.push(format!("ED t::test_{i}\r\n").as_bytes());
        }
        b.push(&vec![b'x'; LONGEST_LINE + 10]);
        b.push(b"\nPASSED last");
        let (text, kept) = b.finish_kept();
        assert!(text.contains("bytes of output cut"));
        let kept = kept.expect("the text was cut");
        let lines: Vec<&str> = kept.lines().collect();
        assert_eq!(lines.len(), 1001);
        assert_eq!(lines[0], "PASSED t::test_0");
        assert_eq!(lines[999], "PASSED t::test_999");
        assert_eq!(lines[1000], "PASSED last");
        let mut small = CappedBuffer::keeping(1024, Some(keep));
        small.push(b"PASSED a\n");
        assert_eq!(small.finish_kept(), ("PASSED a\n".to_owned(), None));
    }

    #[test]
    fn small_output_is_untouched() {
        let mut b = CappedBuffer::new(100);
        b.push(b"hello");
        assert_eq!(b.finish(), "hello");
    }
}
