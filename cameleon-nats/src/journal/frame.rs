//! What a run's messages on JetStream hold (docs/journal.md "The JetStream store"): each
//! message is a *frame* of lines — the run's header, entries (a line of placement, then the
//! entry's body: the step's record in its one serde form, as the SQLite store's `body`), and
//! the run's progress last. A frame larger than the server's `max_payload` goes in chunks.
//!
//! Frames come from the bus: every line is parsed, nothing is trusted (`rebuild` checks the
//! rest, as for a journal file from elsewhere).

use cameleon::journal::{EncodedStep, RunHeader, StoredProgress};
use serde::{Deserialize, Serialize};

/// The header naming a chunk of a frame: `I/N` (1-based).
pub(crate) const CHUNK_HEADER: &str = "Cameleon-Chunk";

/// An entry's line before its body.
#[derive(Serialize, Deserialize)]
struct Place {
    node: u32,
    #[serde(default)]
    parent: Option<u32>,
    step: u32,
    branch: u32,
    ops: Vec<String>,
    /// The entry's reuse keys, in hex (`EncodedStep::keys`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    keys: Option<String>,
}

/// One line of a frame (an entry's body follows its `entry` line).
#[derive(Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
enum Line {
    Run(RunHeader),
    Entry(Place),
    Progress(StoredProgress),
}

/// Appends the header line of a run to `out`.
pub(crate) fn header(out: &mut Vec<u8>, h: &RunHeader) {
    push_line(out, &Line::Run(h.clone()));
}

/// Appends an entry (two lines) to `out`.
pub(crate) fn entry(out: &mut Vec<u8>, s: &EncodedStep) -> Result<(), String> {
    let ops: Vec<String> = serde_json::from_str(&s.ops).map_err(|e| e.to_string())?;
    push_line(
        out,
        &Line::Entry(Place {
            node: s.node,
            parent: s.parent,
            step: s.step,
            branch: s.branch,
            ops,
            keys: s.keys.as_deref().map(hex),
        }),
    );
    out.extend_from_slice(s.body.as_bytes());
    out.push(b'\n');
    Ok(())
}

/// Appends the progress line to `out`.
pub(crate) fn progress(out: &mut Vec<u8>, p: &StoredProgress) {
    push_line(out, &Line::Progress(p.clone()));
}

fn push_line(out: &mut Vec<u8>, line: &Line) {
    // Serialising these plain structs cannot fail.
    if serde_json::to_writer(&mut *out, line).is_ok() {
        out.push(b'\n');
    }
}

/// `bytes` in lowercase hexadecimal.
fn hex(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut s = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        s.push(char::from(DIGITS[usize::from(b >> 4)]));
        s.push(char::from(DIGITS[usize::from(b & 15)]));
    }
    s
}

/// The bytes of hexadecimal `s`; `None`: not hexadecimal.
fn unhex(s: &str) -> Option<Vec<u8>> {
    if !s.len().is_multiple_of(2) {
        return None;
    }
    s.as_bytes()
        .chunks_exact(2)
        .map(|p| {
            let d = |c: u8| char::from(c).to_digit(16);
            u8::try_from(d(p[0])? * 16 + d(p[1])?).ok()
        })
        .collect()
}

/// A run as read back from its frames.
#[derive(Debug, Default)]
pub(crate) struct Folded {
    pub(crate) header: Option<RunHeader>,
    pub(crate) entries: Vec<EncodedStep>,
    pub(crate) progress: StoredProgress,
}

impl Folded {
    /// Reads one complete frame into the run. `Err`: what is malformed.
    pub(crate) fn frame(&mut self, bytes: &[u8]) -> Result<(), String> {
        let text = std::str::from_utf8(bytes).map_err(|_| "a frame is not UTF-8".to_owned())?;
        let mut lines = text.split_terminator('\n');
        while let Some(line) = lines.next() {
            let parsed: Line =
                serde_json::from_str(line).map_err(|e| format!("an unreadable line: {e}"))?;
            match parsed {
                Line::Run(h) => {
                    if self.header.is_some() {
                        return Err("a second header".into());
                    }
                    self.header = Some(h);
                }
                Line::Entry(p) => {
                    let body = lines
                        .next()
                        .ok_or_else(|| format!("entry #{} without its body", p.node))?;
                    self.entries.push(EncodedStep {
                        node: p.node,
                        parent: p.parent,
                        step: p.step,
                        branch: p.branch,
                        ops: serde_json::to_string(&p.ops).map_err(|e| e.to_string())?,
                        body: body.to_owned(),
                        keys: match p.keys.as_deref() {
                            Some(h) => Some(unhex(h).ok_or_else(|| {
                                format!("entry #{}: its keys are not hexadecimal", p.node)
                            })?),
                            None => None,
                        },
                    });
                    // A step's frame ends with the progress; until then, the step is the tip.
                    self.progress.tip = Some(p.node);
                    self.progress.redo_tip = None;
                    self.progress.steps = p.step;
                }
                Line::Progress(p) => self.progress = p,
            }
        }
        Ok(())
    }
}

/// Joins chunks (`Cameleon-Chunk: I/N`) into frames. A frame whose chunks stop before the
/// last one was never committed: it is dropped when the next frame starts.
#[derive(Default)]
pub(crate) struct Chunks {
    buf: Vec<u8>,
}

impl Chunks {
    /// The complete frame this message ends, if any. `chunk`: its `I/N` header.
    pub(crate) fn push<'a>(
        &'a mut self,
        chunk: Option<&str>,
        payload: &'a [u8],
    ) -> Option<&'a [u8]> {
        let Some((i, n)) = chunk.and_then(|c| c.split_once('/')) else {
            self.buf.clear();
            return Some(payload);
        };
        let (Ok(i), Ok(n)) = (i.trim().parse::<u32>(), n.trim().parse::<u32>()) else {
            self.buf.clear();
            return None;
        };
        if i == 1 {
            self.buf.clear();
        }
        self.buf.extend_from_slice(payload);
        (i == n).then_some(self.buf.as_slice())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_frame_reads_back_its_entries_and_progress() {
        let s = EncodedStep {
            node: 0,
            parent: None,
            step: 1,
            branch: 1,
            ops: r#"["a"]"#.into(),
            body: r#"{"parent":null,"firings":[{"op":0}]}"#.into(),
            keys: Some(vec![0, 1, 0xab, 0xff]),
        };
        let mut out = Vec::new();
        entry(&mut out, &s).unwrap();
        let p = StoredProgress {
            status: "RUNNING".into(),
            steps: 1,
            tip: Some(0),
            ..StoredProgress::default()
        };
        progress(&mut out, &p);
        let mut f = Folded::default();
        f.frame(&out).unwrap();
        assert_eq!(f.entries, vec![s]);
        assert_eq!(f.progress, p);
        assert!(
            f.frame(b"{\"entry\":{\"node\":1,\"step\":2,\"branch\":1,\"ops\":[]}}\n")
                .is_err()
        );
        let bad =
            b"{\"entry\":{\"node\":1,\"step\":2,\"branch\":1,\"ops\":[],\"keys\":\"0g\"}}\n{}\n";
        assert!(Folded::default().frame(bad).is_err());
    }

    #[test]
    fn an_unfinished_chunked_frame_is_dropped() {
        let mut c = Chunks::default();
        assert!(c.push(Some("1/2"), b"ab").is_none());
        assert_eq!(c.push(None, b"xy"), Some(&b"xy"[..]));
        assert!(c.push(Some("1/2"), b"ab").is_none());
        assert_eq!(c.push(Some("2/2"), b"cd"), Some(&b"abcd"[..]));
    }
}
