//! Rendering Claude Code's stream-json into output.log, against copying the same bytes line by
//! line as a plain agent's output is copied: what the readable log costs the supervisor per
//! megabyte of stream. The stream is the demo's Claude session (the shapes of the real CLI's
//! lines: init, text, tool calls, tool results, the result), repeated to 8 MiB, plus one long
//! tool result per session, as a test runner's output would be.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // benches may panic: that is how they fail

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use luzia::commands::demo_claude::{Stream, session, session_id};
use luzia::jobs::run::stream::render::Renderer;
use serde_json::json;

/// The demo's session once, then a tool result of 400 test-runner lines.
fn one_session() -> Vec<u8> {
    let mut stream = Stream::new(
        Vec::new(),
        0.0,
        session_id(),
        "/srv/app".into(),
        |_: &luzia::jobs::hitl::agent::GateSpec| Ok(None),
    );
    session(&mut stream).unwrap();
    let mut out = stream.into_output();
    let long: String = (0..400)
        .map(|i| format!("test suite::case_{i} ... ok\n"))
        .collect();
    let line = json!({"type": "user", "message": {"role": "user", "content": [
        {"type": "tool_result", "tool_use_id": "toolu_1", "content": long, "is_error": false}]}});
    out.extend_from_slice(line.to_string().as_bytes());
    out.push(b'\n');
    out
}

fn corpus() -> Vec<u8> {
    let one = one_session();
    let mut all = Vec::with_capacity(8 << 20);
    while all.len() < 8 << 20 {
        all.extend_from_slice(&one);
    }
    all
}

fn bench(c: &mut Criterion) {
    let stream = corpus();
    let lines = stream
        .split(|&b| b == b'\n')
        .filter(|l| !l.is_empty())
        .count();
    eprintln!(
        "corpus: {} bytes, {lines} lines ({} bytes a line on average)",
        stream.len(),
        stream.len() / lines
    );
    let mut g = c.benchmark_group("stream_8MiB");
    g.throughput(Throughput::Bytes(stream.len() as u64));
    g.sample_size(20);
    g.bench_function("copy_lines", |b| {
        b.iter(|| {
            let mut out = Vec::with_capacity(stream.len());
            for line in stream.split(|&b| b == b'\n') {
                out.extend_from_slice(line);
                out.push(b'\n');
            }
            out.len()
        })
    });
    g.bench_function("render", |b| {
        b.iter(|| {
            let mut r = Renderer::new();
            let mut out = 0usize;
            for line in stream.split(|&b| b == b'\n').filter(|l| !l.is_empty()) {
                out += r.line(line).text.len();
            }
            out
        })
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
