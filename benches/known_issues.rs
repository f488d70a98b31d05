//! Scanning agent output for known issues: how many bytes a second one core gets through.
//!
//! A deterministic generator writes what agents print: cargo and gcc output (with rustc's
//! warning blocks), test runners (cargo test, pytest, jest, go test), stream-json lines of tool
//! calls and their results, log lines, source code, prose in several scripts, lines that come
//! close to a known issue without being one, and about one real error line in 10,000 events.
//! Some lines are coloured the way the tools colour them on a terminal.
//!
//! With `cargo bench`, before criterion starts, one timed pass each (printed to stderr):
//!
//! - `IssueScanner::advance` over a 1 GiB log file from its start (window `u64::MAX`), with the
//!   file in the page cache: `known_issues: 1 GiB in X s = Y MB/s (one core)`;
//! - `scan_text` on 256 MiB in memory, once without a single escape sequence and once with
//!   every line coloured, and `strip_escapes` alone on the coloured one: what stripping costs.
//!
//! Every pass checks what it found against what the generator put in: each sprinkled error
//! line found by its pattern, and nothing else found anywhere. Then criterion measures the same
//! four operations on 64 MiB (10 samples each). MB = 10^6 bytes.
//!
//! The scanner finds the lines worth asking the regexes about with a SIMD search for the
//! literals they require (`known_issues::literals`). Each scan is measured beside the same
//! built-in set searching with the automaton of all its regexes alone (`_automaton`), in the
//! same run, on that text and on the cockpit benchmark's fast log (`benches/cockpit.py`'s
//! `log_line`: template lines of a cargo run strewn with common words, `error` and `failed`
//! among them, one line in 17 a known issue).
//!
//! For the one-core figure: `taskset -c 0 cargo bench --bench known_issues`.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // tests may panic: that is how they fail

use std::collections::BTreeMap;
use std::fs::File;
use std::io::{self, BufWriter, Read, Write};
use std::path::Path;
use std::time::{Duration, Instant};

use criterion::{Criterion, SamplingMode, Throughput};
use luzia::jobs::insight::known_issues::{
    Findings, IssueScanner, PatternSet, scan_text, strip_escapes,
};

const MIB: u64 = 1 << 20;
const GIB: u64 = 1 << 30;
/// One event in this many is a real error line.
const ERROR_ONE_IN: u64 = 10_000;
/// No event writes more than this.
const MAX_EVENT: usize = 16 * 1024;

/// Real error lines (from the tools' own output, see tests/known_issues.rs): one for each
/// built-in pattern, and each matches only its own.
const ERRORS: &[&str] = &[
    "ModuleNotFoundError: No module named 'yaml'",
    "Error: Cannot find module 'left-pad'",
    "error[E0432]: unresolved import `serde_yml`",
    "PermissionError: [Errno 13] Permission denied: '/srv/app/uploads/logo.png'",
    "cat: /srv/app/config.yaml: No such file or directory",
    "bash: line 1: rg: command not found",
    "error: could not compile `luzia` (lib) due to 2 previous errors",
    "src/api/client.ts(14,7): error TS2322: Type 'string' is not assignable to type 'number'.",
    "FAILED tests/test_api.py::test_post_invoice - assert 500 == 200",
    "[ 8062.368099] Memory cgroup out of memory: Killed process 392 (python3) total-vm:540856kB, anon-rss:65024kB, file-rss:6548kB, shmem-rss:0kB, UID:0 pgtables:188kB oom_score_adj:0",
    "OSError: [Errno 28] No space left on device",
    "curl: (6) Could not resolve host: github.com",
    "Cannot connect to the Docker daemon at unix:///var/run/docker.sock. Is the docker daemon running?",
    r#"API Error: 429 {"type":"error","error":{"type":"rate_limit_error","message":"This request would exceed the rate limit for your organization of 50,000 input tokens per minute."}}"#,
    "Invalid API key · Please run /login",
    "json.decoder.JSONDecodeError: Expecting value: line 2 column 1 (char 6)",
    "CONFLICT (content): Merge conflict in src/jobs/scan.rs",
    "thread 'main' (727) panicked at src/main.rs:1:54:",
    "Traceback (most recent call last):",
];

const CRATES: &[&str] = &[
    "serde",
    "serde_json",
    "tokio",
    "regex",
    "regex-automata",
    "ratatui",
    "crossterm",
    "anyhow",
    "clap",
    "chrono",
    "memchr",
    "notify",
    "tracing",
    "unicode-width",
    "vte",
    "luzia",
];
const MODULES: &[&str] = &[
    "jobs/scan",
    "jobs/tail",
    "jobs/meta",
    "tui/app",
    "tui/output",
    "config",
    "commands/run",
    "dispatcher",
    "watch",
];
const IDENTS: &[&str] = &[
    "count", "offset", "line", "window", "pattern", "finding", "scanner", "meta", "status",
    "queue", "invoice", "customer", "retries", "deadline",
];
const PY_MODULES: &[&str] = &["api", "models", "billing", "auth", "utils", "migrations"];
const JS_TESTS: &[&str] = &[
    "renders the job list",
    "keeps the selection on refresh",
    "parses an empty log",
    "formats durations",
    "debounces the search box",
];
const COMMANDS: &[&str] = &[
    "cargo test --workspace",
    "cargo clippy --all-targets -- -D warnings",
    "pytest -q tests/",
    "npm test",
    "go test ./...",
    "git status --short",
    "rg -n \\\"fn scan\\\" src/",
    "ls -la src/jobs",
];
const PROSE: &[&str] = &[
    "I'll start by reading the configuration, then run the test suite to see what fails.",
    "The migration looks safe: it only adds a nullable column → no downtime expected.",
    "Je vais d'abord lire la configuration, puis lancer la suite de tests… ✓",
    "Überprüfe die Abhängigkeiten — 12 gefunden, alle aktuell.",
    "Проверяю зависимости: найдено 12 пакетов, все актуальны.",
    "依存関係を確認しています（12 個のパッケージ、すべて最新）。",
    "正在运行测试套件，预计需要两分钟。",
    "Listo: los cambios en src/jobs/scan.rs compilan sin avisos. 🎉",
    "Οι δοκιμές πέρασαν· συνεχίζω με την τεκμηρίωση.",
    "Let me check how the retry logic handles a closed connection before changing it.",
];
/// Benign lines that come close to a known issue.
const NEAR_MISSES: &[&str] = &[
    "test result: ok. 142 passed; 0 failed; 3 ignored; 0 measured; 0 filtered out; finished in 2.41s",
    "Connection established to 127.0.0.1:5432",
    "Checking permissions on /srv/app/uploads: ok",
    "rate limit: 100/min configured",
    "retrying in 2s (attempt 1 of 5)",
    "error handling: scan() now returns Result<Findings, ScanError>",
    "No errors found.",
    "0 errors, 0 warnings, 0 informations ",
    "Success: no issues found in 14 source files",
    "Auto-merging src/jobs/scan.rs",
    "Merge made by the 'ort' strategy.",
    "    except FileNotFoundError:",
    "[INFO] BUILD SUCCESS",
    "Tests:       48 passed, 48 total",
];
const CODE: &[&str] = &[
    "    let mut scanner = IssueScanner::new();",
    "    for (i, line) in lines.iter().enumerate() {",
    "        if line.starts_with(b\"exit:\") {",
    "    pub fn advance(&mut self, path: &Path, set: &PatternSet, window: u64) -> io::Result<bool> {",
    "def test_post_invoice(client):",
    "    response = client.post(\"/invoices\", json={\"amount\": 120})",
    "export function formatDuration(ms: number): string {",
    "  return `${Math.floor(ms / 1000)}s`;",
    "}",
];

/// splitmix64: the same bytes on every run and machine.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }

    fn pick<'a>(&mut self, xs: &[&'a str]) -> &'a str {
        xs[self.below(xs.len() as u64) as usize]
    }
}

/// Escape sequences in the generated text.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Colour {
    /// Some lines coloured, as tools colour them on a terminal (about a third of the lines).
    Mixed,
    /// None at all.
    Plain,
    /// Every line coloured, several sequences a line.
    Heavy,
}

struct Gen {
    rng: Rng,
    colour: Colour,
    /// Error lines written, by index into [`ERRORS`].
    errors: Vec<u64>,
    session: String,
    ids: u64,
}

impl Gen {
    fn new(seed: u64, colour: Colour) -> Gen {
        Gen {
            rng: Rng(seed),
            colour,
            errors: vec![0; ERRORS.len()],
            session: "0b7d4c55-9a3e-4f2c-8e1a-6d1f2b8c7e90".into(),
            ids: 0,
        }
    }

    /// Whether a line a tool would colour is coloured.
    fn coloured(&mut self) -> bool {
        match self.colour {
            Colour::Plain => false,
            Colour::Heavy => true,
            Colour::Mixed => self.rng.below(2) == 0,
        }
    }

    /// `text` in SGR `code` when `on`.
    fn paint(out: &mut Vec<u8>, on: bool, code: &str, text: &str) {
        if on {
            out.extend_from_slice(b"\x1b[");
            out.extend_from_slice(code.as_bytes());
            out.push(b'm');
            out.extend_from_slice(text.as_bytes());
            out.extend_from_slice(b"\x1b[0m");
        } else {
            out.extend_from_slice(text.as_bytes());
        }
    }

    /// A whole line, coloured only in the heavy mix (where every line is).
    fn line(&mut self, out: &mut Vec<u8>, text: &str) {
        if self.colour == Colour::Heavy {
            let code = ["2", "36", "1;34", "38;5;245"][self.rng.below(4) as usize];
            Self::paint(out, true, code, text);
        } else {
            out.extend_from_slice(text.as_bytes());
        }
        out.push(b'\n');
    }

    fn version(&mut self) -> String {
        format!(
            "{}.{}.{}",
            self.rng.below(3),
            self.rng.below(40),
            self.rng.below(230)
        )
    }

    fn id(&mut self, prefix: &str) -> String {
        self.ids += 1;
        format!("{prefix}{:016x}{:08x}", self.rng.next(), self.ids)
    }

    /// Appends one event: a line or a few.
    fn event(&mut self, out: &mut Vec<u8>) {
        let start = out.len();
        if self.rng.below(ERROR_ONE_IN) == 0 {
            let i = self.rng.below(ERRORS.len() as u64) as usize;
            self.errors[i] += 1;
            let on = self.coloured();
            Self::paint(out, on, "1;31", ERRORS[i]);
            out.push(b'\n');
            return;
        }
        match self.rng.below(100) {
            0..=9 => self.compiling(out),
            10..=13 => self.rustc_warning(out),
            14..=16 => self.gcc_warning(out),
            17..=30 => self.cargo_test(out),
            31..=35 => self.pytest(out),
            36..=38 => self.jest(out),
            39..=41 => self.go_test(out),
            42..=53 => self.tool_call(out),
            54..=59 => self.tool_result(out),
            60..=67 => {
                let text = self.rng.pick(PROSE);
                self.line(out, text);
            }
            68..=84 => self.log_line(out),
            85..=91 => {
                let text = self.rng.pick(NEAR_MISSES);
                self.line(out, text);
            }
            _ => {
                let text = self.rng.pick(CODE);
                self.line(out, text);
            }
        }
        debug_assert!(out.len() - start <= MAX_EVENT);
    }

    fn compiling(&mut self, out: &mut Vec<u8>) {
        let on = self.coloured();
        Self::paint(out, on, "1;32", "   Compiling");
        let krate = self.rng.pick(CRATES);
        let version = self.version();
        out.extend_from_slice(format!(" {krate} v{version}\n").as_bytes());
    }

    fn rustc_warning(&mut self, out: &mut Vec<u8>) {
        let on = self.coloured();
        let ident = self.rng.pick(IDENTS);
        let module = self.rng.pick(MODULES);
        let (l, c) = (self.rng.below(900) + 1, self.rng.below(40) + 5);
        Self::paint(out, on, "1;33", "warning");
        Self::paint(out, on, "1", &format!(": unused variable: `{ident}`"));
        out.push(b'\n');
        Self::paint(out, on, "1;34", "  --> ");
        out.extend_from_slice(format!("src/{module}.rs:{l}:{c}\n").as_bytes());
        Self::paint(out, on, "1;34", "    |");
        out.push(b'\n');
        Self::paint(out, on, "1;34", &format!("{l:>3} |"));
        out.extend_from_slice(format!("     let {ident} = 0;\n").as_bytes());
        Self::paint(out, on, "1;34", "    |");
        out.extend_from_slice(b"         ");
        Self::paint(
            out,
            on,
            "1;33",
            &format!(
                "{} help: if this is intentional, prefix it with an underscore: `_{ident}`",
                "^".repeat(ident.len())
            ),
        );
        out.extend_from_slice(b"\n\n");
    }

    fn gcc_warning(&mut self, out: &mut Vec<u8>) {
        let on = self.coloured();
        let ident = self.rng.pick(IDENTS);
        let (l, c) = (self.rng.below(400) + 1, self.rng.below(30) + 5);
        Self::paint(out, on, "1", &format!("src/{ident}.c:{l}:{c}:"));
        out.push(b' ');
        Self::paint(out, on, "1;35", "warning:");
        out.extend_from_slice(
            format!(" unused variable ‘{ident}’ [-Wunused-variable]\n").as_bytes(),
        );
    }

    fn cargo_test(&mut self, out: &mut Vec<u8>) {
        let on = self.coloured();
        let module = self.rng.pick(MODULES).replace('/', "::");
        let ident = self.rng.pick(IDENTS);
        out.extend_from_slice(format!("test {module}::tests::{ident}_is_kept ... ").as_bytes());
        Self::paint(out, on, "32", "ok");
        out.push(b'\n');
    }

    fn pytest(&mut self, out: &mut Vec<u8>) {
        let on = self.coloured();
        let module = self.rng.pick(PY_MODULES);
        let ident = self.rng.pick(IDENTS);
        let percent = self.rng.below(101);
        out.extend_from_slice(format!("tests/test_{module}.py::test_{ident} ").as_bytes());
        Self::paint(out, on, "32", "PASSED");
        out.extend_from_slice(b"                              ");
        Self::paint(out, on, "32", &format!("[{percent:>3}%]"));
        out.push(b'\n');
    }

    fn jest(&mut self, out: &mut Vec<u8>) {
        let on = self.coloured();
        let name = self.rng.pick(JS_TESTS);
        let ms = self.rng.below(40) + 1;
        out.extend_from_slice(b"    ");
        Self::paint(out, on, "32", "\u{2713}");
        out.extend_from_slice(format!(" {name} ").as_bytes());
        Self::paint(out, on, "2", &format!("({ms} ms)"));
        out.push(b'\n');
    }

    fn go_test(&mut self, out: &mut Vec<u8>) {
        let ident = self.rng.pick(IDENTS);
        let mut name = ident.to_string();
        name[..1].make_ascii_uppercase();
        let text = format!("--- PASS: Test{name} (0.0{}s)", self.rng.below(10));
        self.line(out, &text);
    }

    fn log_line(&mut self, out: &mut Vec<u8>) {
        let on = self.coloured();
        let n = self.rng.next();
        let time = format!(
            "2026-11-21T{:02}:{:02}:{:02}.{:03}Z",
            n % 24,
            (n >> 8) % 60,
            (n >> 16) % 60,
            (n >> 24) % 1000
        );
        Self::paint(out, on, "2", &time);
        out.push(b' ');
        Self::paint(out, on, "32", " INFO");
        let module = self.rng.pick(MODULES).replace('/', "::");
        let ident = self.rng.pick(IDENTS);
        let bytes = self.rng.below(90_000);
        out.extend_from_slice(
            format!(" luzia::{module}: read {ident} from src/{module}.rs ({bytes} bytes)\n")
                .as_bytes(),
        );
    }

    /// A stream-json line: the agent calls a tool.
    fn tool_call(&mut self, out: &mut Vec<u8>) {
        let command = self.rng.pick(COMMANDS);
        let msg = self.id("msg_01");
        let tool = self.id("toolu_01");
        let (input, created, read, output) = (
            self.rng.below(9) + 1,
            self.rng.below(4000),
            self.rng.below(90_000),
            self.rng.below(400) + 20,
        );
        let text = format!(
            r#"{{"type":"assistant","message":{{"id":"{msg}","type":"message","role":"assistant","model":"claude-sonnet-4-5-20250929","content":[{{"type":"tool_use","id":"{tool}","name":"Bash","input":{{"command":"{command}","description":"Run {command}"}}}}],"stop_reason":null,"stop_sequence":null,"usage":{{"input_tokens":{input},"cache_creation_input_tokens":{created},"cache_read_input_tokens":{read},"output_tokens":{output},"service_tier":"standard"}}}},"parent_tool_use_id":null,"session_id":"{}"}}"#,
            self.session
        );
        self.line(out, &text);
    }

    /// A stream-json line: a tool's output comes back, a few lines escaped into one.
    fn tool_result(&mut self, out: &mut Vec<u8>) {
        let tool = self.id("toolu_01");
        let mut body = Vec::new();
        let colour = self.colour;
        self.colour = Colour::Plain;
        for _ in 0..self.rng.below(12) + 1 {
            match self.rng.below(4) {
                0 => self.compiling(&mut body),
                1 => self.cargo_test(&mut body),
                2 => self.log_line(&mut body),
                _ => {
                    let text = self.rng.pick(CODE);
                    self.line(&mut body, text);
                }
            }
        }
        self.colour = colour;
        let mut content = String::new();
        for c in String::from_utf8(body)
            .expect("generated text is UTF-8")
            .chars()
        {
            match c {
                '"' => content.push_str("\\\""),
                '\\' => content.push_str("\\\\"),
                '\n' => content.push_str("\\n"),
                c => content.push(c),
            }
        }
        let text = format!(
            r#"{{"type":"user","message":{{"role":"user","content":[{{"tool_use_id":"{tool}","type":"tool_result","content":"{content}","is_error":false}}]}},"parent_tool_use_id":null,"session_id":"{}"}}"#,
            self.session
        );
        self.line(out, &text);
    }
}

/// Ends `out` exactly `gap` bytes later with benign filler lines.
fn pad(out: &mut Vec<u8>, mut gap: usize) {
    while gap > 0 {
        let n = gap.min(80);
        out.extend(std::iter::repeat_n(b'-', n - 1));
        out.push(b'\n');
        gap -= n;
    }
}

/// The cockpit benchmark's fast log (`log_line` of `benches/cockpit.py`): template lines of a
/// cargo run, each cut to 100 bytes, sentences of common words; `error[E0308]` one line in 17.
fn words(seed: u64, len: usize) -> Vec<u8> {
    const WORDS: &[&str] = &[
        "the",
        "a",
        "to",
        "of",
        "and",
        "in",
        "is",
        "for",
        "on",
        "with",
        "this",
        "that",
        "test",
        "build",
        "file",
        "module",
        "function",
        "error",
        "warning",
        "passed",
        "failed",
        "check",
        "value",
        "config",
        "index",
        "query",
        "table",
        "user",
        "request",
        "response",
        "cache",
        "server",
        "client",
        "update",
        "schema",
        "migration",
        "step",
        "result",
        "found",
        "line",
        "read",
        "write",
        "import",
        "export",
        "report",
        "summary",
        "crate",
        "package",
        "version",
        "release",
        "commit",
        "branch",
    ];
    let mut rng = Rng(seed);
    let word = |rng: &mut Rng| WORDS[rng.below(WORDS.len() as u64) as usize].to_string();
    let mut out = Vec::with_capacity(len + 128);
    while out.len() < len {
        let path = {
            let n = 1 + rng.below(3);
            let parts: Vec<String> = (0..n).map(|_| word(&mut rng)).collect();
            format!("src/{}.rs", parts.join("/"))
        };
        let sentence = {
            let n = 4 + rng.below(11);
            let parts: Vec<String> = (0..n).map(|_| word(&mut rng)).collect();
            parts.join(" ")
        };
        let (a, b) = (word(&mut rng), word(&mut rng));
        let n = 1 + rng.below(400);
        let m = rng.below(10);
        let line = match rng.below(17) {
            0 => format!("Reading {path}"),
            1 => "Running cargo test --workspace".to_string(),
            2 => format!(
                "   Compiling {a}-{b} v{}.{}.{}",
                rng.below(4),
                rng.below(41),
                rng.below(21)
            ),
            3 => format!("test {a}::tests::{b}_{a} ... ok"),
            4 => format!("test {a}::tests::{b}_{a} ... FAILED"),
            5 => format!("test result: ok. {n} passed; 0 failed; {m} ignored; finished in 0.{m}5s"),
            6 => format!("Editing {path}: replaced {n} lines"),
            7 => format!("warning: unused variable `{a}_{b}` in {path}:{n}"),
            8 => format!("error[E0308]: mismatched types at {path}:{n}:{m}"),
            9 => format!("Searching the repository for callers of `{a}_{b}`"),
            10 => format!("I'll start by {sentence}."),
            11 => format!("Now {sentence}, then {sentence}."),
            12 => format!(
                "[2026-01-{:02} 12:{:02}:{:02}] INFO step {m}/{}: {sentence}",
                1 + rng.below(28),
                rng.below(60),
                rng.below(60),
                5 + rng.below(8)
            ),
            13 => "$ npm run build -- --mode production".to_string(),
            14 => "All checks passed; writing the summary".to_string(),
            15 => format!("  {path} | {n} +++++---"),
            _ => String::new(),
        };
        let cut = line.char_indices().nth(100).map_or(line.len(), |(i, _)| i);
        out.extend_from_slice(&line.as_bytes()[..cut]);
        out.push(b'\n');
    }
    out
}

/// Exactly `len` bytes of whole lines from `generator`.
fn generate(generator: &mut Gen, len: usize) -> Vec<u8> {
    let mut out = Vec::with_capacity(len);
    while out.len() + MAX_EVENT < len {
        generator.event(&mut out);
    }
    let gap = len - out.len();
    pad(&mut out, gap);
    out
}

/// Writes exactly `len` bytes from `generator` to `path`.
fn write_log(path: &Path, generator: &mut Gen, len: u64) -> io::Result<()> {
    let mut w = BufWriter::with_capacity(4 * MIB as usize, File::create(path)?);
    let mut written = 0u64;
    let mut buf = Vec::with_capacity(2 * MIB as usize);
    loop {
        while buf.len() < MIB as usize && written + ((buf.len() + MAX_EVENT) as u64) < len {
            generator.event(&mut buf);
        }
        if written + ((buf.len() + MAX_EVENT) as u64) >= len {
            let gap = (len - written) as usize - buf.len();
            pad(&mut buf, gap);
            w.write_all(&buf)?;
            break;
        }
        w.write_all(&buf)?;
        written += buf.len() as u64;
        buf.clear();
    }
    w.flush()?;
    let file = w.into_inner().map_err(|e| e.into_error())?;
    assert_eq!(file.metadata()?.len(), len);
    Ok(())
}

/// What a scan must find: each error line written, counted under every pattern it matches.
fn expected(set: &PatternSet, generator: &Gen) -> BTreeMap<String, u64> {
    let mut want = BTreeMap::new();
    for (line, &n) in ERRORS.iter().zip(&generator.errors) {
        let found = scan_text(set, line.as_bytes());
        assert!(!found.is_empty(), "no pattern matches {line:?}");
        for f in found.found.iter() {
            *want.entry(set.pattern(f.pattern).name.clone()).or_insert(0) += n;
        }
    }
    want.retain(|_, n| *n > 0);
    want
}

/// Panics unless `findings` are exactly `want`: a benign line matched would add to a count.
fn check(set: &PatternSet, findings: &Findings, want: &BTreeMap<String, u64>, what: &str) {
    let got: BTreeMap<String, u64> = findings
        .found
        .iter()
        .map(|f| (set.pattern(f.pattern).name.clone(), u64::from(f.count)))
        .collect();
    assert_eq!(
        &got, want,
        "{what}: findings differ from the error lines written"
    );
}

fn mb_per_s(bytes: u64, secs: f64) -> f64 {
    bytes as f64 / secs / 1e6
}

/// "one core" when the process may run on one CPU only (as under `taskset -c 0`).
fn cores() -> String {
    match std::thread::available_parallelism().map_or(0, |n| n.get()) {
        1 => "one core".into(),
        n => format!("one thread, {n} cores allowed"),
    }
}

/// The single timed passes over 1 GiB and 256 MiB.
fn one_shot(set: &PatternSet) {
    let cores = cores();
    match set.literal_search() {
        Some((grams, passes)) => eprintln!(
            "known_issues: the prefilter searches for {grams} grams in {passes} SIMD passes"
        ),
        None => eprintln!("known_issues: no prefilter: every byte goes through the automaton"),
    }
    let dir = tempfile::Builder::new()
        .prefix("luzia-bench-known-issues-")
        .tempdir()
        .expect("create a temporary directory");
    let path = dir.path().join("output.log");
    let mut generator = Gen::new(1, Colour::Mixed);
    let t = Instant::now();
    write_log(&path, &mut generator, GIB).expect("write the log");
    let want = expected(set, &generator);
    eprintln!(
        "known_issues: wrote {} ({GIB} bytes, {} error lines) in {:.1} s",
        path.display(),
        generator.errors.iter().sum::<u64>(),
        t.elapsed().as_secs_f64()
    );
    // Read once untimed, so that the timed pass reads from the page cache.
    let mut sink = vec![0u8; 4 * MIB as usize];
    let mut file = File::open(&path).unwrap();
    while file.read(&mut sink).unwrap() > 0 {}

    let mut scanner = IssueScanner::new();
    let t = Instant::now();
    scanner.advance(&path, set, u64::MAX).expect("scan the log");
    let secs = t.elapsed().as_secs_f64();
    assert_eq!(scanner.bytes_scanned, GIB);
    check(set, &scanner.findings, &want, "1 GiB log");
    eprintln!(
        "known_issues: 1 GiB in {secs:.2} s = {:.0} MB/s ({cores})",
        mb_per_s(GIB, secs)
    );
    drop(dir);

    let len = 256 * MIB as usize;
    for (colour, what) in [
        (Colour::Plain, "no escape sequences"),
        (Colour::Heavy, "every line coloured"),
    ] {
        let mut generator = Gen::new(2, colour);
        let text = generate(&mut generator, len);
        let want = expected(set, &generator);
        let t = Instant::now();
        let findings = scan_text(set, &text);
        let secs = t.elapsed().as_secs_f64();
        check(set, &findings, &want, what);
        eprintln!(
            "known_issues: scan_text, 256 MiB in memory, {what}: {secs:.2} s = {:.0} MB/s ({cores})",
            mb_per_s(len as u64, secs)
        );
        if colour == Colour::Heavy {
            let mut plain = Vec::with_capacity(len);
            let t = Instant::now();
            strip_escapes(&text, &mut plain);
            let secs = t.elapsed().as_secs_f64();
            eprintln!(
                "known_issues: strip_escapes alone on it: {secs:.2} s = {:.0} MB/s; escape sequences are {:.0} % of its bytes",
                mb_per_s(len as u64, secs),
                100.0 * (len - plain.len()) as f64 / len as f64
            );
        }
    }
}

fn bench_known_issues(c: &mut Criterion, set: &PatternSet, automaton: &PatternSet) {
    let len = 64 * MIB;
    let dir = tempfile::Builder::new()
        .prefix("luzia-bench-known-issues-")
        .tempdir()
        .expect("create a temporary directory");
    let path = dir.path().join("output.log");
    let mut generator = Gen::new(1, Colour::Mixed);
    write_log(&path, &mut generator, len).expect("write the log");
    let want = expected(set, &generator);
    let mut plain_gen = Gen::new(2, Colour::Plain);
    let plain = generate(&mut plain_gen, len as usize);
    let plain_want = expected(set, &plain_gen);
    let mut heavy_gen = Gen::new(2, Colour::Heavy);
    let heavy = generate(&mut heavy_gen, len as usize);
    let heavy_want = expected(set, &heavy_gen);

    let scan_file = || {
        let mut scanner = IssueScanner::new();
        scanner.advance(&path, set, u64::MAX).unwrap();
        scanner.findings
    };
    check(set, &scan_file(), &want, "64 MiB log");
    check(set, &scan_text(set, &plain), &plain_want, "64 MiB plain");
    check(set, &scan_text(set, &heavy), &heavy_want, "64 MiB coloured");
    let fast_log = words(3, len as usize);
    assert_eq!(
        scan_text(set, &fast_log),
        scan_text(automaton, &fast_log),
        "the prefilter and the automaton find the same in the fast log"
    );
    assert_eq!(scan_text(automaton, &plain), scan_text(set, &plain));

    let mut group = c.benchmark_group("known_issues");
    group
        .sample_size(10)
        .sampling_mode(SamplingMode::Flat)
        .warm_up_time(Duration::from_secs(2))
        .measurement_time(Duration::from_secs(15))
        .throughput(Throughput::Bytes(len));
    group.bench_function("advance_64MiB", |b| b.iter(scan_file));
    group.bench_function("scan_text_plain_64MiB", |b| {
        b.iter(|| scan_text(set, &plain))
    });
    group.bench_function("scan_text_plain_64MiB_automaton", |b| {
        b.iter(|| scan_text(automaton, &plain))
    });
    group.bench_function("scan_text_fast_log_64MiB", |b| {
        b.iter(|| scan_text(set, &fast_log))
    });
    group.bench_function("scan_text_fast_log_64MiB_automaton", |b| {
        b.iter(|| scan_text(automaton, &fast_log))
    });
    group.bench_function("scan_text_coloured_64MiB", |b| {
        b.iter(|| scan_text(set, &heavy))
    });
    let mut out = Vec::with_capacity(len as usize);
    group.bench_function("strip_escapes_coloured_64MiB", |b| {
        b.iter(|| {
            out.clear();
            strip_escapes(&heavy, &mut out);
            out.len()
        })
    });
    group.finish();
}

fn main() {
    let set = PatternSet::builtin();
    // `cargo bench` passes --bench; `cargo test --benches` does not, and gets only the quick
    // criterion run.
    if std::env::args().any(|a| a == "--bench") {
        one_shot(&set);
    }
    // Plots take seconds per benchmark to draw; `--plotting-backend` brings them back.
    let mut c = Criterion::default().without_plots().configure_from_args();
    bench_known_issues(&mut c, &set, &PatternSet::builtin().without_literals());
    c.final_summary();
}
