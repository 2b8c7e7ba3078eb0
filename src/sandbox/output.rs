//! What a command in a sandbox produced: [`CommandOutput`], and the [`CappedBuffer`] that
//! keeps the head and tail of long output.

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
            duration: Duration::from_secs(1),
        }
    }
}

impl CommandOutput {
    pub fn success(&self) -> bool {
        self.exit_code == Some(0) && !self.timed_out && !self.oom_killed && self.killed.is_none()
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

/// Keeps the first and last `cap / 2` bytes of a stream and counts what falls between.
#[derive(Debug)]
pub struct CappedBuffer {
    head: Vec<u8>,
    tail: std::collections::VecDeque<u8>,
    half: usize,
    dropped: u64,
}

impl CappedBuffer {
    pub fn new(cap: usize) -> Self {
        Self {
            head: Vec::new(),
            tail: std::collections::VecDeque::new(),
            half: (cap / 2).max(1),
            dropped: 0,
        }
    }

    pub fn push(&mut self, mut bytes: &[u8]) {
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
    fn small_output_is_untouched() {
        let mut b = CappedBuffer::new(100);
        b.push(b"hello");
        assert_eq!(b.finish(), "hello");
    }
}
