//! [`Preview`]: the start of a value's JSON text, serialised no further than it shows.

use std::io;

use serde::Serialize;

/// The start of a value's JSON text ([`Value::preview`](crate::Value::preview)).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Preview {
    /// The text, at most the bound long.
    pub text: String,
    /// Whether the value's JSON text goes on past `text`.
    pub truncated: bool,
}

impl Preview {
    /// The start of the JSON text of any serde value (a `serde_json::Value`, a record), as
    /// [`Value::preview`](crate::Value::preview) does for a token's value.
    ///
    /// ```
    /// use cameleon::types::Preview;
    ///
    /// let p = Preview::of(&serde_json::json!({"answer": "a long story"}), 13, false);
    /// assert_eq!((p.text.as_str(), p.truncated), ("{\"answer\":\"a ", true));
    /// ```
    pub fn of<T: Serialize + ?Sized>(v: &T, max_bytes: usize, pretty: bool) -> Preview {
        Preview::write(max_bytes, |out| {
            if pretty {
                serde_json::to_writer_pretty(out, v)
            } else {
                serde_json::to_writer(out, v)
            }
        })
    }

    /// What `write` writes, kept to `max` bytes (cut at a character boundary). A serialiser
    /// that fails for another reason than the bound gives `null`, as traces show it.
    pub(super) fn write(
        max: usize,
        write: impl FnOnce(&mut dyn io::Write) -> Result<(), serde_json::Error>,
    ) -> Preview {
        let mut out = CappedWriter {
            buf: Vec::with_capacity(max.min(4096)),
            max,
            full: false,
        };
        if write(&mut out).is_err() && !out.full {
            return Preview {
                text: "null".to_owned(),
                truncated: false,
            };
        }
        let mut buf = out.buf;
        if let Err(e) = std::str::from_utf8(&buf) {
            buf.truncate(e.valid_up_to()); // a character cut by the bound
        }
        Preview {
            text: String::from_utf8(buf).unwrap_or_default(),
            truncated: out.full,
        }
    }
}

/// A writer that keeps its first `max` bytes and then refuses, so a serialiser stops.
struct CappedWriter {
    buf: Vec<u8>,
    max: usize,
    full: bool,
}

impl io::Write for CappedWriter {
    fn write(&mut self, data: &[u8]) -> io::Result<usize> {
        let room = self.max - self.buf.len();
        if data.len() > room {
            self.buf.extend_from_slice(&data[..room]);
            self.full = true;
            return Err(io::Error::other("preview bound reached"));
        }
        self.buf.extend_from_slice(data);
        Ok(data.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}
