//! Models and retrieval: `hash` embedding throughput (bytes of text per second, one core),
//! `flat` retrieval over 100 000 vectors of 384 dimensions (time per query), and the engine's
//! overhead on an `llm` firing against a local OpenAI-compatible server (the firing's time
//! minus a bare HTTP round trip to the same server).
//!
//! `cargo bench -p cameleon --bench models -- --warm-up-time 1 --measurement-time 5`

use std::sync::Arc;

use cameleon::capabilities::{CodeSource, Runtime};
use cameleon::models::{FlatMemory, HashEmbedder, OpenAiChat, OpenAiConfig};
use cameleon::operator::capability::{ChatModel, ChatRequest, Embedder, MemoryItem};
use cameleon::ops::{Llm, Sink, Source};
use cameleon::prelude::*;
use criterion::{BatchSize, Criterion, Throughput, criterion_group, criterion_main};
use test_support::Rng;
use test_support::openai::Server;

/// Uniform in [-1, 1).
fn unit(rng: &mut Rng) -> f32 {
    (rng.next_u64() >> 40) as f32 / (1u64 << 23) as f32 - 1.0
}

/// About `bytes` bytes of English-like text: words of a small vocabulary, sentences of 8 to 20
/// words.
fn text(bytes: usize) -> String {
    const WORDS: &[&str] = &[
        "the",
        "chameleon",
        "changes",
        "colour",
        "to",
        "signal",
        "its",
        "mood",
        "and",
        "regulate",
        "temperature",
        "tongue",
        "shoots",
        "out",
        "faster",
        "than",
        "eye",
        "can",
        "follow",
        "it",
        "lives",
        "in",
        "Madagascar",
        "Africa",
        "eats",
        "insects",
        "such",
        "as",
        "crickets",
        "grasshoppers",
        "flies",
        "pipeline",
        "operator",
        "connection",
        "token",
        "history",
        "replay",
        "model",
        "embedding",
        "retrieval",
        "passage",
        "question",
        "answer",
        "2026",
        "élan",
        "café",
    ];
    let mut rng = Rng::new(0x9E37_79B9_7F4A_7C15);
    let mut s = String::with_capacity(bytes + 64);
    while s.len() < bytes {
        let n = 8 + (rng.next_u64() % 13) as usize;
        for i in 0..n {
            let w = WORDS[(rng.next_u64() % WORDS.len() as u64) as usize];
            if i == 0 {
                let mut c = w.chars();
                if let Some(f) = c.next() {
                    s.extend(f.to_uppercase());
                    s.push_str(c.as_str());
                }
            } else {
                s.push(' ');
                s.push_str(w);
            }
        }
        s.push_str(". ");
    }
    s
}

fn hash_embedding(c: &mut Criterion) {
    let mut g = c.benchmark_group("hash_embedding");
    let e = HashEmbedder::new(384);
    // One 1 MiB document, and the same text as 1 KiB chunks (what an `embed` firing gets).
    let doc = text(1 << 20);
    g.throughput(Throughput::Bytes(doc.len() as u64));
    g.bench_function("1MiB_document", |b| b.iter(|| e.vector(&doc)));
    let chunks: Vec<String> = doc
        .as_bytes()
        .chunks(1024)
        .map(|c| String::from_utf8_lossy(c).into_owned())
        .collect();
    let total: usize = chunks.iter().map(String::len).sum();
    g.throughput(Throughput::Bytes(total as u64));
    g.bench_function("1KiB_chunks", |b| {
        b.iter(|| cameleon::runtime::block_on(e.embed(&chunks)).expect("hash never fails"))
    });
    g.finish();
}

fn flat_retrieval(c: &mut Criterion) {
    const N: usize = 100_000;
    const DIM: usize = 384;
    let mut rng = Rng::new(42);
    let items: Vec<MemoryItem> = (0..N)
        .map(|i| MemoryItem {
            id: format!("c{i}"),
            text: format!("chunk {i}"),
            vector: (0..DIM).map(|_| unit(&mut rng)).collect(),
            meta: serde_json::Value::Null,
        })
        .collect();
    let m = FlatMemory::new();
    m.insert(items).expect("same dimensions");
    let queries: Vec<Vec<f32>> = (0..16)
        .map(|_| (0..DIM).map(|_| unit(&mut rng)).collect())
        .collect();
    let mut g = c.benchmark_group("flat_retrieval");
    g.sample_size(30);
    let mut i = 0;
    g.bench_function("100k_x_384_top4", |b| {
        b.iter(|| {
            i = (i + 1) % queries.len();
            m.nearest(&queries[i], 4).expect("same dimensions")
        })
    });
    g.finish();
}

fn llm_overhead(c: &mut Criterion) {
    let server = Server::start();
    let cfg = OpenAiConfig::new(server.base_url(), "bench-model");
    let model = Arc::new(OpenAiChat::new(&cfg, "chat model `bench`").expect("valid settings"));
    let for_runs = model.clone();
    let caps = Runtime::builder()
        .source(CodeSource::new("bench", move |b| {
            b.chat("bench", for_runs.clone());
            Ok(())
        }))
        .build()
        .expect("capabilities");
    let url = format!("{}/chat/completions", server.base_url());
    let request = ChatRequest::prompt("What is a chameleon?");
    let body = serde_json::json!({"model": "bench-model", "messages": [{"role": "user", "content": "What is a chameleon?"}]});
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime");
    let http = reqwest::Client::new();

    let mut g = c.benchmark_group("llm_firing");
    // The server's own time, seen from a client: a bare POST and reading the answer.
    g.bench_function("bare_http_round_trip", |b| {
        b.iter(|| {
            rt.block_on(async {
                let r = http.post(&url).json(&body).send().await.expect("sent");
                r.bytes().await.expect("read")
            })
        })
    });
    // The provider alone: request body, the same POST (on Caméléon's runtime), parsing.
    g.bench_function("openai_chat_call", |b| {
        b.iter(|| cameleon::runtime::block_on(model.chat(&request)).expect("answered"))
    });
    // A whole firing: source → llm → sink, built and run to the end.
    g.bench_function("net_source_llm_sink", |b| {
        b.iter_batched(
            || {
                let mut n = Net::builder("bench");
                n.add("q", Source::new("What is a chameleon?"));
                n.add("ask", Llm::new().model("bench"));
                n.add("out", Sink::new());
                n.connect("q.out_data", "ask.in_prompt")
                    .connect("ask.out_text", "out.in_data");
                caps.cvm(n.build().expect("valid net"), ".").build()
            },
            |mut cvm| cvm.run().expect("runs"),
            BatchSize::SmallInput,
        )
    });
    g.finish();
}

criterion_group!(benches, hash_embedding, flat_retrieval, llm_overhead);
criterion_main!(benches);
