//! The `extractive` chat model: answers with the sentences of the context that best match the
//! question, ranked by BM25. Offline and deterministic — and **not generative**: it never writes
//! a word that is not in its context.

use serde::{Deserialize, Serialize};

use super::text::{for_each_word, is_stop_word, sentences, words};
use crate::operator::capability::{
    CapFuture, CapabilityError, ChatModel, ChatReply, ChatRequest, Role, Usage,
};

/// The chat kind `extractive`: answers by quoting the context. It is **not a generative model**:
/// it cannot reason, summarise in its own words, follow instructions or call tools; it is what
/// every example runs with when no model is configured, so a pipeline runs offline and gives
/// the same answer every time.
///
/// How it answers a [`ChatRequest`]:
///
/// 1. **The question** is the last user message; its words (see
///    [`text`](super::text)) minus [stop words](super::text::STOP_WORDS) are the query terms
///    (all its words if every one is a stop word).
/// 2. **The passages** are the request's `context` (what `llm`'s `in_context` carries); without
///    context, the other user, assistant and tool messages; without those, the question itself
///    (the answer is then an extractive summary of the prompt). The system message is
///    instructions, never quoted.
/// 3. The passages are split into [sentences](super::text::sentences); a sentence repeated by
///    overlapping chunks counts once, at its first place.
/// 4. Each sentence `D` gets the BM25 score
///    `Σ_q idf(q) · tf(q,D)·(k1+1) / (tf(q,D) + k1·(1 − b + b·|D|/avgdl))` over the distinct
///    query terms `q`, with `idf(q) = ln(1 + (N − n(q) + 0.5)/(n(q) + 0.5))` (`N` sentences, `n(q)`
///    of them containing `q`, `|D|` the sentence's words, `avgdl` their mean), `k1 = 1.2`,
///    `b = 0.75`.
/// 5. The answer is the `sentences` best-scoring sentences (default 2) with a positive score,
///    best first, joined by a space; equal scores go to the sentence that comes first. With
///    `max_tokens`, sentences are added only while the answer stays within that many words (the
///    first one is cut to fit). When no sentence shares a term with the question, the answer is
///    [`Extractive::NOTHING_FOUND`].
///
/// It never invents: a request with a `response_schema` (structured output, the `llm_json`
/// operator) or with tools (an `agent`) is refused with an error saying that the model is not
/// generative and how to configure one ([`ChatModel::generative`] is `false`), rather than
/// answered with values it would have to make up.
///
/// Token usage counts words: the request's (messages and context) and the answer's.
///
/// ```
/// use cameleon::models::Extractive;
///
/// let model = Extractive::default();
/// let context = ["Chameleons live in Africa and Madagascar. They change colour to signal their \
///                 mood and to regulate their temperature. Their tongues are fast."
///     .to_owned()];
/// let answer = model.answer("Why do chameleons change colour?", &context);
/// assert_eq!(answer, "They change colour to signal their mood and to regulate their temperature. \
///                     Chameleons live in Africa and Madagascar.");
/// ```
#[derive(Clone, Debug, PartialEq)]
pub struct Extractive {
    sentences: usize,
}

/// The settings of an `extractive` chat model (`{kind: extractive, sentences: 2}`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ExtractiveConfig {
    /// Most sentences in an answer (at least 1). Default 2.
    #[serde(default = "default_sentences")]
    pub sentences: usize,
}

fn default_sentences() -> usize {
    Extractive::DEFAULT_SENTENCES
}

impl Default for ExtractiveConfig {
    fn default() -> Self {
        ExtractiveConfig {
            sentences: Extractive::DEFAULT_SENTENCES,
        }
    }
}

impl Default for Extractive {
    fn default() -> Self {
        Extractive::new(Extractive::DEFAULT_SENTENCES)
    }
}

/// BM25's term-frequency saturation.
const K1: f64 = 1.2;
/// BM25's length normalisation.
const B: f64 = 0.75;

/// A sentence of the passages, ready for scoring.
struct Sentence {
    text: String,
    words: Vec<String>,
}

/// The passages of one request, split and indexed once.
struct Corpus {
    sentences: Vec<Sentence>,
    avgdl: f64,
}

impl Corpus {
    fn new(passages: &[String]) -> Self {
        let mut seen = std::collections::HashSet::new();
        let mut out = Vec::new();
        for p in passages {
            for s in sentences(p) {
                if seen.insert(s.clone()) {
                    let words = words(&s);
                    out.push(Sentence { text: s, words });
                }
            }
        }
        let total: usize = out.iter().map(|s| s.words.len()).sum();
        let avgdl = if out.is_empty() {
            1.0
        } else {
            (total as f64 / out.len() as f64).max(1.0)
        };
        Corpus {
            sentences: out,
            avgdl,
        }
    }

    /// Sentence indices with a positive score, best first (ties: earlier first).
    fn rank(&self, question: &str) -> Vec<(usize, f64)> {
        let mut terms: Vec<String> = Vec::new();
        let mut all: Vec<String> = Vec::new();
        for_each_word(question, |w| {
            if !all.iter().any(|t| t == w) {
                all.push(w.to_owned());
            }
            if !is_stop_word(w) && !terms.iter().any(|t| t == w) {
                terms.push(w.to_owned());
            }
        });
        if terms.is_empty() {
            terms = all;
        }
        let n = self.sentences.len() as f64;
        let idf: Vec<f64> = terms
            .iter()
            .map(|t| {
                let df = self
                    .sentences
                    .iter()
                    .filter(|s| s.words.iter().any(|w| w == t))
                    .count() as f64;
                (1.0 + (n - df + 0.5) / (df + 0.5)).ln()
            })
            .collect();
        let mut scored: Vec<(usize, f64)> = self
            .sentences
            .iter()
            .enumerate()
            .filter_map(|(i, s)| {
                let dl = s.words.len() as f64;
                let score: f64 = terms
                    .iter()
                    .zip(&idf)
                    .map(|(t, idf)| {
                        let tf = s.words.iter().filter(|w| *w == t).count() as f64;
                        if tf == 0.0 {
                            0.0
                        } else {
                            idf * tf * (K1 + 1.0) / (tf + K1 * (1.0 - B + B * dl / self.avgdl))
                        }
                    })
                    .sum();
                (score > 0.0).then_some((i, score))
            })
            .collect();
        // Stable sort: equal scores keep document order.
        scored.sort_by(|a, b| b.1.total_cmp(&a.1));
        scored
    }

    /// The answer text for `question`: the best sentences, within `max_words` if given.
    fn answer(&self, question: &str, most: usize, max_words: Option<usize>) -> Option<String> {
        let ranked = self.rank(question);
        let mut out: Vec<&str> = Vec::new();
        let mut used = 0;
        for (i, _) in ranked.iter().take(most.max(1)) {
            let s = &self.sentences[*i];
            if let Some(max) = max_words
                && used + s.words.len() > max
            {
                if out.is_empty() {
                    return Some(first_words(&s.text, max.max(1)));
                }
                break;
            }
            used += s.words.len();
            out.push(&s.text);
        }
        (!out.is_empty()).then(|| out.join(" "))
    }
}

/// The beginning of `text` up to its `n`-th word (inclusive).
fn first_words(text: &str, n: usize) -> String {
    let mut count = 0;
    let mut in_word = false;
    for (i, c) in text.char_indices() {
        if c.is_alphanumeric() {
            in_word = true;
        } else if in_word {
            in_word = false;
            count += 1;
            if count == n {
                return text[..i].to_owned();
            }
        }
    }
    text.to_owned()
}

fn count_words(text: &str) -> u64 {
    let mut n = 0;
    for_each_word(text, |_| n += 1);
    n
}

impl Extractive {
    /// The default number of sentences in an answer.
    pub const DEFAULT_SENTENCES: usize = 2;

    /// The answer when no sentence of the context shares a word with the question.
    pub const NOTHING_FOUND: &'static str = "I found nothing about this in the context.";

    /// A model answering with at most `sentences` sentences (at least 1).
    pub fn new(sentences: usize) -> Self {
        Extractive {
            sentences: sentences.max(1),
        }
    }

    /// The model an [`ExtractiveConfig`] describes.
    pub fn from_config(c: &ExtractiveConfig) -> Self {
        Extractive::new(c.sentences)
    }

    /// The answer to `question` from `passages` (see the type's docs).
    pub fn answer(&self, question: &str, passages: &[String]) -> String {
        Corpus::new(passages)
            .answer(question, self.sentences, None)
            .unwrap_or_else(|| Self::NOTHING_FOUND.to_owned())
    }

    /// The sentences of `passages` that match `question`, with their BM25 scores, best first.
    pub fn rank(&self, question: &str, passages: &[String]) -> Vec<(String, f64)> {
        let corpus = Corpus::new(passages);
        corpus
            .rank(question)
            .into_iter()
            .map(|(i, s)| (corpus.sentences[i].text.clone(), s))
            .collect()
    }

    /// Answers `request` (see the type's docs).
    pub fn reply(&self, request: &ChatRequest) -> ChatReply {
        let last_user = request.messages.iter().rposition(|m| m.role == Role::User);
        let question = last_user.map_or("", |i| request.messages[i].content.as_str());
        let passages: Vec<String> = if !request.context.is_empty() {
            request.context.clone()
        } else {
            let others: Vec<String> = request
                .messages
                .iter()
                .enumerate()
                .filter(|(i, m)| Some(*i) != last_user && m.role != Role::System)
                .map(|(_, m)| m.content.clone())
                .filter(|c| !c.trim().is_empty())
                .collect();
            if others.is_empty() {
                vec![question.to_owned()]
            } else {
                others
            }
        };
        let corpus = Corpus::new(&passages);
        let max_words = request.max_tokens.map(|n| n as usize);
        let text = corpus
            .answer(question, self.sentences, max_words)
            .unwrap_or_else(|| Self::NOTHING_FOUND.to_owned());
        let prompt_tokens = request
            .messages
            .iter()
            .map(|m| count_words(&m.content))
            .chain(request.context.iter().map(|c| count_words(c)))
            .sum();
        ChatReply {
            usage: Some(Usage {
                prompt_tokens,
                completion_tokens: count_words(&text),
            }),
            text,
            tool_calls: Vec::new(),
        }
    }
}

/// How to configure a generative chat model, for the messages of operators and models that
/// refuse a non-generative one: a capabilities file with an OpenAI-compatible endpoint.
pub const CONFIGURE_GENERATIVE: &str = "configure a generative chat model in a capabilities \
    file (`cameleon.yaml` beside the .cm file, or `--capabilities FILE`), e.g. for a local \
    Ollama `chat: {default: {kind: openai, base_url: \"http://127.0.0.1:11434/v1\", model: \
    \"llama3.2\"}}` (any OpenAI-compatible endpoint works; docs/capabilities.md)";

impl Extractive {
    /// Why the model refuses `request`, if it does: a request for structured output (a
    /// `response_schema`) or one offering tools needs a generative model.
    pub fn refusal(&self, request: &ChatRequest) -> Option<CapabilityError> {
        let what = if request.response_schema.is_some() {
            "answer with JSON for a schema"
        } else if !request.tools.is_empty() {
            "decide to call tools"
        } else {
            return None;
        };
        Some(CapabilityError::new(format!(
            "the `extractive` chat model is not generative: it only quotes sentences of its \
             context, so it cannot {what} without inventing; {CONFIGURE_GENERATIVE}"
        )))
    }
}

impl ChatModel for Extractive {
    fn kind(&self) -> &str {
        "extractive"
    }

    fn generative(&self) -> bool {
        false
    }

    fn chat<'a>(
        &'a self,
        request: &'a ChatRequest,
    ) -> CapFuture<'a, Result<ChatReply, CapabilityError>> {
        let answer = match self.refusal(request) {
            Some(e) => Err(e),
            None => Ok(self.reply(request)),
        };
        Box::pin(std::future::ready(answer))
    }

    /// The same answer, shown word by word: each word with the spaces before it is one
    /// piece, and a task switch separates the pieces, as a model writing would.
    fn chat_streamed<'a>(
        &'a self,
        request: &'a ChatRequest,
        delta: &'a (dyn Fn(&str) + Send + Sync),
    ) -> CapFuture<'a, Result<ChatReply, CapabilityError>> {
        Box::pin(async move {
            if let Some(e) = self.refusal(request) {
                return Err(e);
            }
            let reply = self.reply(request);
            for piece in words_with_spaces(&reply.text) {
                delta(piece);
                tokio::task::yield_now().await;
            }
            Ok(reply)
        })
    }
}

/// `text` cut before each word: every piece is the whitespace before a word and the word, so
/// the pieces joined are `text` again.
fn words_with_spaces(text: &str) -> impl Iterator<Item = &str> {
    let mut rest = text;
    std::iter::from_fn(move || {
        if rest.is_empty() {
            return None;
        }
        let word = rest.trim_start();
        let start = rest.len() - word.len();
        let end = start + word.find(char::is_whitespace).unwrap_or(word.len());
        let (piece, after) = rest.split_at(end);
        rest = after;
        Some(piece)
    })
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    #[test]
    fn streamed_pieces_are_the_words_and_join_to_the_answer() {
        use std::sync::Mutex;
        let m = Extractive::default();
        let mut req = ChatRequest::prompt("Why do chameleons change colour?");
        req.context = vec![
            "Chameleons change colour to signal mood. Cats purr.".into(),
            "Chameleons change colour with temperature too.".into(),
        ];
        let pieces = Mutex::new(Vec::<String>::new());
        let push = |d: &str| pieces.lock().unwrap().push(d.to_owned());
        let reply = crate::runtime::block_on(m.chat_streamed(&req, &push)).unwrap();
        let pieces = pieces.into_inner().unwrap();
        assert_eq!(reply, crate::runtime::block_on(m.chat(&req)).unwrap());
        assert_eq!(pieces.concat(), reply.text);
        assert_eq!(
            pieces.len(),
            reply.text.split_whitespace().count(),
            "{pieces:?}"
        );
        assert!(pieces.len() > 3, "{pieces:?}");
    }

    use super::*;
    use crate::operator::capability::ChatMessage;

    fn ctx() -> Vec<String> {
        vec![
            "Paris is the capital of France. It lies on the Seine.".to_owned(),
            "Berlin is the capital of Germany. The Seine does not flow through Berlin.".to_owned(),
        ]
    }

    #[test]
    fn the_best_matching_sentence_comes_first() {
        let m = Extractive::new(1);
        assert_eq!(
            m.answer("What is the capital of France?", &ctx()),
            "Paris is the capital of France."
        );
    }

    #[test]
    fn equal_scores_go_to_the_earlier_sentence() {
        let m = Extractive::new(1);
        let passages = vec!["Cats purr. Dogs purr.".to_owned()];
        assert_eq!(m.answer("purr", &passages), "Cats purr.");
    }

    #[test]
    fn no_shared_word_gives_the_fixed_answer() {
        let m = Extractive::default();
        assert_eq!(
            m.answer("quantum chromodynamics", &ctx()),
            Extractive::NOTHING_FOUND
        );
    }

    #[test]
    fn stop_words_alone_still_make_a_query() {
        let m = Extractive::new(1);
        let passages = vec!["Alpha. It is what it is.".to_owned()];
        assert_eq!(m.answer("what is it", &passages), "It is what it is.");
    }

    #[test]
    fn max_tokens_bounds_the_answer_in_words() {
        let mut r = ChatRequest::prompt("capital of France");
        r.context = ctx();
        r.max_tokens = Some(3);
        assert_eq!(Extractive::default().reply(&r).text, "Paris is the");
    }

    #[test]
    fn without_context_the_other_messages_are_quoted_but_never_the_system() {
        let mut r = ChatRequest::prompt("Where is Paris?");
        r.messages.insert(
            0,
            ChatMessage::new(Role::System, "Paris is a forbidden word."),
        );
        r.messages.insert(
            1,
            ChatMessage::new(Role::User, "Paris is in France. Rome is in Italy."),
        );
        let reply = Extractive::new(1).reply(&r);
        assert_eq!(reply.text, "Paris is in France.");
        assert_eq!(
            reply.usage,
            Some(Usage {
                prompt_tokens: 5 + 8 + 3,
                completion_tokens: 4
            })
        );
    }

    #[test]
    fn structured_output_and_tools_are_refused_not_invented() {
        let m = Extractive::default();
        assert!(!m.generative());
        let mut r = ChatRequest::prompt("Order 42: 3 apples for Alice");
        assert!(
            crate::runtime::block_on(m.chat(&r)).is_ok(),
            "a plain prompt is quoted"
        );
        r.response_schema = Some(json!({"type": "object"}));
        let e = crate::runtime::block_on(m.chat(&r)).unwrap_err();
        assert!(e.message.contains("not generative"), "{e}");
        assert!(
            e.message.contains("kind: openai"),
            "how to configure one: {e}"
        );
        assert!(!e.retryable);
        r.response_schema = None;
        r.tools.push(crate::operator::capability::ToolManifest {
            name: "calc".into(),
            description: "adds".into(),
            effects: crate::operator::capability::Effect::None,
            input_schema: json!({"type": "object"}),
            output_schema: json!(true),
            idempotent: false,
        });
        let e = crate::runtime::block_on(m.chat(&r)).unwrap_err();
        assert!(e.message.contains("cannot decide to call tools"), "{e}");
    }
}
