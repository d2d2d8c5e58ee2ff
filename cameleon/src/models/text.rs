//! Text normalisation shared by the offline algorithms: words, stop words and sentences.
//!
//! - **Words**: maximal runs of alphanumeric characters (Unicode `Alphabetic` or `Numeric`, as
//!   [`char::is_alphanumeric`] says), lowercased (Unicode lowercase mapping, as
//!   [`char::to_lowercase`]). Everything else — spaces, punctuation, symbols, apostrophes — separates
//!   words: `Don't stop!` is `don`, `t`, `stop`. No stemming, no accent folding, no Unicode
//!   normalisation (give NFC text: `é` as one character and `e` + a combining accent are
//!   different words).
//! - **Sentences**: a sentence ends after `.`, `!` or `?` (and any closing quotes or brackets
//!   right after it) followed by whitespace, at a blank line, or at the end of the text. A single
//!   line break inside a paragraph is a space, so hard-wrapped text reads as whole sentences;
//!   `e.g. this` splits after `e.g.` (no abbreviation list).

/// Calls `f` with each word of `text`, normalised (see the [module docs](self)), in order.
///
/// ```
/// let mut words = Vec::new();
/// cameleon::models::text::for_each_word("Chameleons CHANGE colour, don't they?", |w| {
///     words.push(w.to_owned())
/// });
/// assert_eq!(words, ["chameleons", "change", "colour", "don", "t", "they"]);
/// ```
pub fn for_each_word(text: &str, mut f: impl FnMut(&str)) {
    // `word` holds a word being built when it has non-ASCII characters or capitals; an ASCII
    // word already in lowercase is passed as a slice of `text`, without a copy.
    let mut word = String::with_capacity(32);
    let bytes = text.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        let b = bytes[i];
        if b.is_ascii_alphanumeric() {
            let start = i;
            let mut upper = false;
            while i < bytes.len() && bytes[i].is_ascii_alphanumeric() {
                upper |= bytes[i].is_ascii_uppercase();
                i += 1;
            }
            let run = &text[start..i];
            let continues = i < bytes.len() && !bytes[i].is_ascii();
            if word.is_empty() && !upper && !continues {
                f(run);
            } else {
                word.extend(run.bytes().map(|c| c.to_ascii_lowercase() as char));
                if !continues {
                    f(&word);
                    word.clear();
                }
            }
            continue;
        }
        if b.is_ascii() {
            if !word.is_empty() {
                f(&word);
                word.clear();
            }
            i += 1;
            continue;
        }
        // A multi-byte character: `i` is on a character boundary (ASCII bytes never occur
        // inside one), so this slice starts with it.
        let Some(c) = text[i..].chars().next() else {
            break;
        };
        if c.is_alphanumeric() {
            word.extend(c.to_lowercase());
        } else if !word.is_empty() {
            f(&word);
            word.clear();
        }
        i += c.len_utf8();
    }
    if !word.is_empty() {
        f(&word);
    }
}

/// The words of `text`, normalised (see [`for_each_word`]).
pub fn words(text: &str) -> Vec<String> {
    let mut v = Vec::new();
    for_each_word(text, |w| v.push(w.to_owned()));
    v
}

/// English words too common to tell sentences apart. The `extractive` model ignores them in the
/// question (not in the context), so "What is the capital of France?" looks for `capital` and
/// `france`.
pub const STOP_WORDS: &[&str] = &[
    "a", "about", "after", "all", "also", "am", "an", "and", "any", "are", "as", "at", "be",
    "been", "before", "being", "but", "by", "can", "could", "did", "do", "does", "doing", "for",
    "from", "had", "has", "have", "having", "he", "her", "here", "hers", "him", "his", "how", "i",
    "if", "in", "into", "is", "it", "its", "just", "me", "more", "most", "my", "no", "nor", "not",
    "of", "on", "or", "other", "our", "ours", "out", "over", "own", "please", "same", "she",
    "should", "so", "some", "such", "tell", "than", "that", "the", "their", "theirs", "them",
    "then", "there", "these", "they", "this", "those", "through", "to", "too", "under", "until",
    "up", "very", "was", "we", "were", "what", "when", "where", "which", "while", "who", "whom",
    "why", "will", "with", "would", "you", "your", "yours",
];

/// Whether `word` (normalised) is in [`STOP_WORDS`].
pub fn is_stop_word(word: &str) -> bool {
    STOP_WORDS.binary_search(&word).is_ok()
}

/// The sentences of `text` (see the [module docs](self)), trimmed, whitespace runs collapsed to
/// one space; empty ones dropped.
///
/// ```
/// let s = cameleon::models::text::sentences("One. Two, wrapped\nat a line break! \"Three.\"\n\nFour");
/// assert_eq!(s, ["One.", "Two, wrapped at a line break!", "\"Three.\"", "Four"]);
/// ```
pub fn sentences(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    for para in paragraphs(text) {
        let chars: Vec<char> = para.chars().collect();
        let mut start = 0;
        let mut i = 0;
        while i < chars.len() {
            if matches!(chars[i], '.' | '!' | '?') {
                let mut end = i + 1;
                while end < chars.len() && is_closer(chars[end]) {
                    end += 1;
                }
                if end == chars.len() || chars[end].is_whitespace() {
                    push_sentence(&mut out, &chars[start..end]);
                    start = end;
                    i = end;
                    continue;
                }
            }
            i += 1;
        }
        push_sentence(&mut out, &chars[start..]);
    }
    out
}

/// The paragraphs of `text`: pieces separated by a line holding nothing but whitespace.
pub fn paragraphs(text: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut start: Option<usize> = None;
    let mut end = 0;
    let mut pos = 0;
    for line in text.split_inclusive('\n') {
        if line.trim().is_empty() {
            if let Some(s) = start.take() {
                out.push(&text[s..end]);
            }
        } else {
            start.get_or_insert(pos);
            end = pos + line.len();
        }
        pos += line.len();
    }
    if let Some(s) = start {
        out.push(&text[s..end]);
    }
    out
}

fn is_closer(c: char) -> bool {
    matches!(c, '"' | '\'' | ')' | ']' | '»' | '”' | '’')
}

fn push_sentence(out: &mut Vec<String>, chars: &[char]) {
    let mut s = String::with_capacity(chars.len());
    let mut space = false;
    for &c in chars {
        if c.is_whitespace() {
            space = !s.is_empty();
        } else {
            if space {
                s.push(' ');
                space = false;
            }
            s.push(c);
        }
    }
    if !s.is_empty() {
        out.push(s);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stop_words_are_sorted_for_binary_search() {
        assert!(STOP_WORDS.windows(2).all(|w| w[0] < w[1]));
        assert!(is_stop_word("the") && is_stop_word("why") && !is_stop_word("colour"));
    }

    #[test]
    fn words_are_lowercased_alphanumeric_runs_in_any_script() {
        assert_eq!(words("Élan, ÉCOLE & 42ème"), ["élan", "école", "42ème"]);
        assert_eq!(words("caféS naïve x"), ["cafés", "naïve", "x"]);
        assert_eq!(words("plain Words, dé-jà"), ["plain", "words", "dé", "jà"]);
        assert_eq!(words("ΣΟΦΙΑ straße"), ["σοφια", "straße"]);
        assert_eq!(words("--- !!"), Vec::<String>::new());
    }

    #[test]
    fn paragraphs_split_at_blank_lines_only() {
        assert_eq!(
            paragraphs("a\nb\n\n  \nc\n"),
            ["a\nb\n", "c\n"],
            "a single line break stays inside a paragraph"
        );
    }

    #[test]
    fn a_full_stop_inside_a_word_or_number_does_not_end_a_sentence() {
        assert_eq!(
            sentences("Version 1.5 of example.com works. Yes."),
            ["Version 1.5 of example.com works.", "Yes."]
        );
    }
}
