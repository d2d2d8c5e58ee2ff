//! Cutting a text into pieces: fixed-size chunks (`chunker`) and passages of whole sentences or
//! paragraphs (`passages`).

use crate::operator;
use crate::operator::ParamError;
use crate::operator::{Firing, In, OpError, Out, Run};
use crate::types::{DataChunk, DataString};

/// Splits the text on `in_data` into chunks of `size` characters overlapping by `overlap` (DataChunk on `out_data`).
#[operator(id = "chunker", label = "Chunker", family = behavioral, exec = inline)]
#[derive(Clone, Debug, PartialEq)]
pub struct Chunker {
    /// characters per chunk (≥ 1)
    #[param(default = 512)]
    pub size: usize,
    /// characters shared with the previous chunk (< size)
    #[param(default = 0)]
    pub overlap: usize,
    /// the text to split
    #[input]
    in_data: In<DataString>,
    /// the chunks, in order
    #[output]
    out_data: Out<DataChunk>,
}

impl Default for Chunker {
    fn default() -> Self {
        Chunker {
            size: 512,
            overlap: 0,
        }
    }
}

/// Splits `text` into chunks of `size` characters overlapping by `overlap`.
pub fn chunk_text(text: &str, size: usize, overlap: usize) -> Result<Vec<String>, String> {
    if size == 0 {
        return Err("size must be at least 1".into());
    }
    if overlap >= size {
        return Err(format!(
            "overlap ({overlap}) must be smaller than size ({size})"
        ));
    }
    let chars: Vec<char> = text.chars().collect();
    let mut out = Vec::new();
    let mut start = 0;
    while start < chars.len() {
        let end = (start + size).min(chars.len());
        out.push(chars[start..end].iter().collect());
        if end == chars.len() {
            break;
        }
        start = end - overlap;
    }
    Ok(out)
}

impl Run for Chunker {
    fn run(&mut self, cx: &mut Firing<'_, Self>) -> Result<(), OpError> {
        let t = &cx.get(Self::in_data)?.0;
        let chunks = chunk_text(t, self.size, self.overlap).map_err(OpError::new)?;
        cx.emit(Self::out_data, DataChunk(chunks));
        Ok(())
    }
    fn validate(&self) -> Result<(), ParamError> {
        chunk_text("", self.size, self.overlap)
            .map(drop)
            .map_err(|e| ParamError::new("overlap".to_owned(), e))
    }
}

/// Splits the text on `in_data` into passages of whole sentences (or paragraphs) of at most
/// `size` characters (DataChunk on `out_data`): what a retriever and the `extractive` model
/// quote best.
///
/// The units — sentences, or with `unit: paragraphs` paragraphs, as
/// [`models::text`](crate::models::text) splits them — are packed in order, as many per passage
/// as fit in `size` characters (sentences joined by a space, paragraphs by a blank line); a
/// unit longer than `size` is a passage of its own, never cut. Unlike `chunker`, no passage
/// starts or ends inside a sentence.
#[operator(id = "passages", label = "Passages", family = behavioral, exec = inline)]
#[derive(Clone, Debug, PartialEq)]
pub struct Passages {
    /// most characters per passage (≥ 1)
    #[param(default = 512)]
    pub size: usize,
    /// what a passage is made of: `sentences` or `paragraphs`
    #[param(default = "sentences")]
    pub unit: String,
    /// the text to split into passages
    #[input]
    in_data: In<DataString>,
    /// the passages, in order; connect it to `embed` or `llm.in_context`
    #[output]
    out_data: Out<DataChunk>,
}

impl Default for Passages {
    fn default() -> Self {
        Passages::new(512)
    }
}

impl Passages {
    /// Passages of whole sentences, at most `size` characters each.
    pub fn new(size: usize) -> Self {
        Passages {
            size,
            unit: "sentences".to_owned(),
        }
    }

    /// Passages of whole paragraphs, at most `size` characters each.
    pub fn paragraphs(size: usize) -> Self {
        Passages {
            size,
            unit: "paragraphs".to_owned(),
        }
    }

    /// The passages of `text`, or why the params do not allow any.
    pub fn split(&self, text: &str) -> Result<Vec<String>, ParamError> {
        if self.size == 0 {
            return Err(ParamError::new(
                "size".to_owned(),
                "size must be at least 1",
            ));
        }
        match self.unit.as_str() {
            "sentences" => Ok(pack(crate::models::text::sentences(text), self.size, " ")),
            "paragraphs" => {
                let paras = crate::models::text::paragraphs(text)
                    .into_iter()
                    .map(|p| p.trim().to_owned())
                    .collect();
                Ok(pack(paras, self.size, "\n\n"))
            }
            other => Err(ParamError::new(
                "unit".to_owned(),
                format!("unknown unit `{other}`: write `sentences` or `paragraphs`"),
            )),
        }
    }
}

/// Packs `units` in order into pieces of at most `size` characters, joined by `sep`.
fn pack(units: Vec<String>, size: usize, sep: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut len = 0;
    let sep_len = sep.chars().count();
    for u in units {
        let ulen = u.chars().count();
        if !cur.is_empty() && len + sep_len + ulen > size {
            out.push(std::mem::take(&mut cur));
            len = 0;
        }
        if !cur.is_empty() {
            cur.push_str(sep);
            len += sep_len;
        }
        cur.push_str(&u);
        len += ulen;
    }
    if !cur.is_empty() {
        out.push(cur);
    }
    out
}

impl Run for Passages {
    fn run(&mut self, cx: &mut Firing<'_, Self>) -> Result<(), OpError> {
        let t = &cx.get(Self::in_data)?.0;
        let passages = self.split(t).map_err(|e| OpError::new(e.to_string()))?;
        cx.emit(Self::out_data, DataChunk(passages));
        Ok(())
    }

    fn validate(&self) -> Result<(), ParamError> {
        self.split("").map(drop)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chunker_overlaps_and_covers_the_text() {
        assert_eq!(chunk_text("abcdefg", 3, 1).unwrap(), ["abc", "cde", "efg"]);
        assert_eq!(chunk_text("abcd", 3, 0).unwrap(), ["abc", "d"]);
        assert_eq!(chunk_text("", 3, 0).unwrap(), Vec::<String>::new());
        assert_eq!(chunk_text("éàü", 2, 0).unwrap(), ["éà", "ü"]);
        assert!(chunk_text("abc", 2, 2).is_err());
    }

    #[test]
    fn passages_pack_whole_sentences_or_paragraphs() {
        let text = "One two. Three four five.\nSix.\n\nSeven eight nine ten eleven.";
        assert_eq!(
            Passages::new(20).split(text).unwrap(),
            [
                "One two.",
                "Three four five.",
                "Six.",
                "Seven eight nine ten eleven."
            ]
        );
        assert_eq!(
            Passages::new(29).split(text).unwrap(),
            [
                "One two. Three four five.",
                "Six.",
                "Seven eight nine ten eleven."
            ],
        );
        assert_eq!(
            Passages::new(30).split(text).unwrap(),
            [
                "One two. Three four five. Six.",
                "Seven eight nine ten eleven."
            ],
        );
        assert_eq!(
            Passages::paragraphs(1000).split(text).unwrap(),
            ["One two. Three four five.\nSix.\n\nSeven eight nine ten eleven."]
        );
        let words = Passages {
            size: 10,
            unit: "words".into(),
        };
        assert!(
            words
                .split(text)
                .unwrap_err()
                .to_string()
                .contains("unknown unit `words`")
        );
        assert!(Passages::new(0).split(text).is_err());
    }
}
